"""``elicitation-gateway stdio --upstream URL`` end to end, as a desktop client runs it: the
official SDK's stdio client starts the gateway as its server command, and the gateway speaks
Streamable HTTP to the bundled demo upstream (a real SDK ``MCPServer`` over HTTP, both eras).

Each SDK case runs the same client directly against the demo over HTTP and through the gateway
over stdio, and compares what the user saw and what the server got:

* benign form and URL elicitations: identical;
* a password form and a look-alike URL: never shown, the server gets a decline, the user is
  told why;
* tools/list, progress and ping pass; ``auto`` lands on 2026-07-28 as directly;
* resumption: a tool that closes its stream (2025-11-25 polling, event store) still completes.

And with the gateway as a raw process (the test writes its stdin): an upstream that is down
gets a clean JSON-RPC error and an exit (status 1), never a hang; a static header built from the
environment reaches the upstream and appears in no log or audit line.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from gateway import errors
from tests.peers.modes import ERA, LEGACY, MODERN, MODES, VERSION
from tests.peers.procs import (
    ROOT,
    ClientWorker,
    decisions,
    free_port,
    outcome,
    peer_env,
    read_log_events,
    shown,
    start_client_worker,
    start_upstream,
)
from tests.upstream_servers import mcp_upstream

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

WAIT = 30.0
CANARY = "tok-9f1c2b7e5d"  # the static header's secret value


def through(url: str, audit: Path, *options: str) -> list[str]:
    """The gateway as the client's server command, in front of the remote ``url``."""
    gateway = [sys.executable, "-m", "gateway", "stdio", "--audit-file", str(audit)]
    return [*gateway, "--name", "demo", *options, "--upstream", url]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def worker() -> AsyncIterator[ClientWorker]:
    async with start_client_worker() as w:
        yield w


@dataclass(frozen=True)
class Peers:
    """The SDK client worker and the demo upstream's URL."""

    worker: ClientWorker
    url: str

    async def run(self, target: str | list[str], mode: str, **options: Any) -> list[Any]:
        return await self.worker.run(target, mode, **options)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def peers(worker: ClientWorker) -> AsyncIterator[Peers]:
    async with start_upstream() as demo:
        yield Peers(worker, demo.url)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "args"),
    [("ask_form", {"topic": "billing"}), ("demo_profile", {}), ("demo_oauth", {})],
)
async def test_benign_elicitations_are_identical_direct_and_through(
    peers: Peers, tmp_path: Path, mode: str, tool: str, args: dict[str, Any]
) -> None:
    audit = tmp_path / "audit.log"
    direct = await peers.run(peers.url, mode, tool=tool, args=args)
    gated = await peers.run(through(peers.url, audit), mode, tool=tool, args=args)
    assert direct == gated
    assert direct[0] == {"event": "protocol", "version": VERSION[mode]}
    assert len(shown(direct)) == 1 and "action=accept" in outcome(direct)["text"]
    [decision] = decisions(audit)
    assert decision["action"] == "allow" and decision["era"] == ERA[mode]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "reason"), [("demo_password", "secret-field"), ("demo_lookalike", "confusable-host")]
)
async def test_phishing_never_reaches_the_user_and_the_server_gets_a_decline(
    peers: Peers, tmp_path: Path, mode: str, tool: str, reason: str
) -> None:
    audit = tmp_path / "audit.log"
    direct = await peers.run(peers.url, mode, tool=tool)
    gated = await peers.run(through(peers.url, audit), mode, tool=tool)
    assert len(shown(direct)) == 1  # the server does ask
    assert shown(gated) == []
    assert gated[0] == {"event": "protocol", "version": VERSION[mode]}
    result = outcome(gated)
    assert result["event"] == "result" and not result["isError"]
    assert "action=decline" in result["text"]
    assert "The elicitation gateway blocked a request from demo" in result["text"]
    [decision] = decisions(audit)
    assert decision["action"] == "block" and reason in decision["reasons"]


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_progress_and_ping_pass(peers: Peers, tmp_path: Path, mode: str) -> None:
    """(2026-07-28 has no ``ping``.)"""
    options: dict[str, Any] = {"tool": "progress_form", "progress": True, "list_all": True}
    options["ping"] = mode == LEGACY
    direct = await peers.run(peers.url, mode, **options)
    gated = await peers.run(through(peers.url, tmp_path / "a.log"), mode, **options)
    assert direct == gated
    listed = next(e for e in gated if e["event"] == "list")
    assert "ask_form" in listed["tools"] and "demo_password" in listed["tools"]
    assert "progress" in [e["event"] for e in gated]
    assert "action=accept" in outcome(gated)["text"]


async def test_auto_negotiates_2026_through_the_gateway_as_directly(
    peers: Peers, tmp_path: Path
) -> None:
    direct = await peers.run(peers.url, "auto", tool="echo", args={"text": "hi"})
    gated = await peers.run(
        through(peers.url, tmp_path / "a.log"), "auto", tool="echo", args={"text": "hi"}
    )
    assert direct[0] == gated[0] == {"event": "protocol", "version": VERSION[MODERN]}
    assert outcome(gated) == outcome(direct)


async def test_a_closed_stream_is_resumed_and_the_call_completes(
    worker: ClientWorker, tmp_path: Path
) -> None:
    """polling_form closes its POST stream (2025-11-25, event store); its question and answer
    arrive on the stream resumed with Last-Event-ID."""
    audit = tmp_path / "audit.log"
    async with start_upstream(event_store=True, retry_interval=200) as polling:
        direct = await worker.run(polling.url, LEGACY, tool="polling_form")
        gated = await worker.run(through(polling.url, audit), LEGACY, tool="polling_form")
    assert direct == gated
    assert len(shown(gated)) == 1 and "action=accept" in outcome(gated)["text"]
    assert [d["action"] for d in decisions(audit)] == ["allow"]


# -- the gateway as a raw process -----------------------------------------------------------


async def start_gateway(
    url: str, tmp: Path, *options: str, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    argv = [sys.executable, "-m", "gateway", "stdio", "--audit-file", str(tmp / "audit.log")]
    argv += [*options, "--upstream", url]
    with (tmp / "stderr.log").open("wb") as err:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            cwd=ROOT,
            env=peer_env(env),
        )


async def ask(process: asyncio.subprocess.Process, message: dict[str, Any]) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    await process.stdin.drain()
    line = await asyncio.wait_for(process.stdout.readline(), WAIT)
    answer: dict[str, Any] = json.loads(line)
    return answer


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "desk", "version": "1"},
    },
}


async def finish(process: asyncio.subprocess.Process) -> tuple[int, bytes]:
    """Close the gateway's stdin (the client is done); its exit status and remaining stdout."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    rest = await asyncio.wait_for(process.stdout.read(), WAIT)
    return await asyncio.wait_for(process.wait(), WAIT), rest


async def test_an_upstream_that_is_down_gets_a_clean_error_and_the_gateway_exits(
    worker: ClientWorker, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}/mcp"
    events = await worker.run(through(down, tmp_path / "sdk.log"), LEGACY, tool="echo")
    assert events == [
        {"event": "error", "code": errors.GATEWAY_UPSTREAM_ERROR,
         "message": "Upstream MCP server unavailable"}
    ]  # fmt: skip
    process = await start_gateway(down, tmp_path)
    try:
        answer = await ask(process, INITIALIZE)
        assert answer["id"] == 1 and answer["error"]["code"] == errors.GATEWAY_UPSTREAM_ERROR
        status, rest = await finish(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert status == 1 and rest == b""  # nothing but MCP lines on stdout
    stopped = [
        e for e in read_log_events(tmp_path / "stderr.log") if e.get("event") == "stdio.stopped"
    ]
    assert stopped and stopped[0]["upstream_reached"] is False


async def test_a_static_header_from_the_environment_reaches_the_upstream_and_no_log(
    tmp_path: Path,
) -> None:
    header = "Authorization: Bearer ${REMOTE_TOKEN}"
    async with mcp_upstream(None) as up:
        process = await start_gateway(
            up.url("http"), tmp_path, "--header", header, env={"REMOTE_TOKEN": CANARY}
        )
        try:
            answer = await ask(process, INITIALIZE)
            status, _ = await finish(process)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert answer["id"] == 1 and "result" in answer
    assert status == 0
    assert up.seen_headers[0]["Authorization"] == f"Bearer {CANARY}"
    assert "${REMOTE_TOKEN}" not in json.dumps(up.seen_headers)
    logs = (tmp_path / "stderr.log").read_text() + (tmp_path / "audit.log").read_text()
    assert "stdio.started" in logs and "Authorization" in logs  # its name is logged
    assert CANARY not in logs


async def test_an_unset_header_variable_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    process = await start_gateway(
        "http://127.0.0.1:1/mcp", tmp_path, "--header", "X-Key: ${UNSET_REMOTE_KEY}"
    )
    status, out = await finish(process)
    assert status == 2 and out == b""
    err = (tmp_path / "stderr.log").read_text()
    assert "--header X-Key: environment variable UNSET_REMOTE_KEY is not set" in err


async def test_sigterm_answers_the_calls_in_flight_and_ends_the_session(tmp_path: Path) -> None:
    """A call the upstream never answers does not hold the gateway: SIGTERM answers it with a
    JSON-RPC error, and the gateway exits at once."""
    async with mcp_upstream(None) as up:
        up.hold = asyncio.Event()  # every request waits for it
        up.busy_at = 1  # up.busy is set once a request waits
        process = await start_gateway(up.url("http"), tmp_path)
        try:
            assert process.stdin is not None and process.stdout is not None
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
            process.stdin.write(json.dumps(call).encode() + b"\n")
            await process.stdin.drain()
            await asyncio.wait_for(up.busy.wait(), WAIT)
            process.send_signal(signal.SIGTERM)
            line = await asyncio.wait_for(process.stdout.readline(), WAIT)
            status = await asyncio.wait_for(process.wait(), WAIT)
        finally:
            up.hold.set()
            if process.returncode is None:
                process.kill()
                await process.wait()
    answer = json.loads(line)
    assert answer["id"] == 7 and answer["error"]["message"] == "The elicitation gateway is stopping"
    assert status == 0
