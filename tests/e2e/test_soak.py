"""A short multi-replica soak: three gateway processes behind nginx (round robin), many
concurrent SDK sessions mixing both eras and every elicitation carrier, for a bounded time.

Checks: zero protocol errors, every flow's outcome as expected (so no answer lost), exactly one
checked answer per answered elicitation across the replicas (none duplicated), every blocked
request blocked and never shown.

Short form (CI): 200 concurrent sessions, one wave. Long form:
``SOAK_SESSIONS=200 SOAK_ROUNDS=20 .venv/bin/pytest tests/e2e/test_soak.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import pytest

from gateway.enforce.seal import b64u
from tests.peers.nginx import round_robin_nginx
from tests.peers.procs import (
    ClientWorker,
    Peer,
    read_log_events,
    start_client_worker,
    start_upstream,
)
from tests.peers.soak import FLOWS, check_outcome, start_replica

pytestmark = [pytest.mark.e2e]

SESSIONS = int(os.environ.get("SOAK_SESSIONS", "200"))  # concurrent sessions
ROUNDS = int(os.environ.get("SOAK_ROUNDS", "1"))  # waves of SESSIONS sessions
KEYS = b64u(b"k" * 32)


async def test_three_replicas_behind_nginx_many_sessions(tmp_path: Path) -> None:
    async with contextlib.AsyncExitStack() as stack:
        upstream: Peer = await stack.enter_async_context(
            start_upstream(event_store=True, retry_interval=200)
        )
        logs = [tmp_path / f"gw{i}.log" for i in range(3)]
        replicas = [
            await stack.enter_async_context(start_replica(upstream.url, log, KEYS)) for log in logs
        ]
        lb = await stack.enter_async_context(round_robin_nginx([r.port for r in replicas]))
        workers: list[ClientWorker] = [
            await stack.enter_async_context(start_client_worker()) for _ in range(2)
        ]
        semaphore = asyncio.Semaphore(SESSIONS)

        async def session(i: int) -> tuple[int, int]:
            flow = FLOWS[i % len(FLOWS)]
            async with semaphore:
                events = await workers[i % 2].run(
                    lb.url, flow.mode, tool=flow.tool, args=flow.args, timeout=120
                )
            check_outcome(flow, events)
            return flow.answers, flow.blocked

        outcomes = await asyncio.gather(*(session(i) for i in range(SESSIONS * ROUNDS)))
    answers = sum(a for a, _ in outcomes)
    blocked = sum(b for _, b in outcomes)
    lines = [e for log in logs for e in read_log_events(log)]
    assert not [e for e in lines if e.get("level") == "error"]
    checked = [e for e in lines if e.get("event") == "elicitation.answer"]
    assert (
        len(checked) == answers
    )  # one checked answer per answered elicitation: none lost or doubled
    assert all(e["outcome"] == "forwarded" for e in checked)
    decisions = [e for e in lines if e.get("event") == "elicitation.decision"]
    assert sum(d["action"] == "block" for d in decisions) == blocked
    # Every replica took part.
    assert all(
        any(e.get("event") == "elicitation.decision" for e in read_log_events(log)) for log in logs
    )
