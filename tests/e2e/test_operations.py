"""Operations end to end: worker processes sharing the port, graceful drain on SIGTERM, and a
rolling restart of one of two replicas under load with zero failed requests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from gateway.seal import b64u
from tests.peers.procs import (
    ClientWorker,
    Peer,
    read_log_events,
    start_client_worker,
    start_gateway,
    start_upstream,
)
from tests.peers.roundrobin import round_robin

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

KEYS = b64u(b"o" * 32)
LEGACY, MODERN = "legacy", "2026-07-28"
TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=30)
FLOWS: list[tuple[str, str, dict[str, Any], str]] = [
    (LEGACY, "ask_form", {"topic": "t"}, "action=accept"),
    (MODERN, "ask_form", {"topic": "t"}, "action=accept"),
    (LEGACY, "demo_password", {}, "action=decline"),
    (MODERN, "demo_password", {}, "action=decline"),
    (MODERN, "ask_two", {}, "action=accept"),
]


def gateway(upstream: Peer, log: Path, *args: str) -> contextlib.AbstractAsyncContextManager[Peer]:
    return start_gateway(upstream.url, *args, log_path=log, keys=KEYS, ready_timeout=60)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[Peer]:
    async with start_upstream(event_store=True, retry_interval=200) as peer:
        yield peer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clients() -> AsyncIterator[ClientWorker]:
    async with start_client_worker() as worker:
        yield worker


async def run_flow(
    clients: ClientWorker, url: str, flow: tuple[str, str, dict[str, Any], str]
) -> None:
    mode, tool, args, expected = flow
    events = await clients.run(url, mode, tool=tool, args=args)
    assert events[-1]["event"] == "result", (flow, events)
    assert expected in events[-1]["text"], (flow, events)


async def test_workers_share_the_port_and_interoperate(
    upstream: Peer, clients: ClientWorker, tmp_path: Path
) -> None:
    log = tmp_path / "gateway.log"
    async with gateway(upstream, log, "--workers", "2") as gw:
        await asyncio.gather(*(run_flow(clients, gw.url, f) for f in FLOWS * 4))
        async with (
            aiohttp.ClientSession(timeout=TIMEOUT) as http,
            http.get(gw.base_url + "/metrics") as resp,
        ):
            metrics = await resp.text()
    lines = read_log_events(log)
    workers = {e["pid"] for e in lines if e.get("event") == "gateway.started"}
    assert len(workers) == 2
    deciding = {e["pid"] for e in lines if e.get("event") == "elicitation.decision"}
    assert deciding == workers  # both workers decided, on sessions the other may have opened
    # One metrics view over both workers: every decision of the run is counted.
    blocked = [
        line
        for line in metrics.splitlines()
        if line.startswith("gateway_elicitations_total") and 'action="block"' in line
    ]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in blocked) == 8.0
    assert not [e for e in lines if e.get("level") == "error"]


async def _sse_until_eof(response: aiohttp.ClientResponse) -> bytes:
    return await response.content.read()


async def test_sigterm_drains_streams_cleanly_and_exits_zero(
    upstream: Peer, tmp_path: Path
) -> None:
    log = tmp_path / "gateway.log"
    async with (
        gateway(upstream, log, "--workers", "1", "--drain-seconds", "3") as gw,
        aiohttp.ClientSession(timeout=TIMEOUT) as http,
    ):
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "drain-test", "version": "0"},
            },
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        async with http.post(gw.url, json=init, headers=headers) as resp:
            session = resp.headers["Mcp-Session-Id"]
            await resp.read()
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with http.post(gw.url, json=note, headers=headers) as resp:
            assert resp.status == 202
        get = await http.get(gw.url, headers=headers)
        assert get.status == 200
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "ask_form", "arguments": {"topic": "t"}},
        }
        post = await http.post(gw.url, json=call, headers=headers)
        first = b""
        while b"elicitation/create" not in first:  # the call is in flight, waiting for the user
            chunk = await asyncio.wait_for(post.content.readany(), 10)
            assert chunk, f"the stream ended before the elicitation: {first!r}"
            first += chunk
        started = time.monotonic()
        os.kill(gw.process.pid, signal.SIGTERM)
        await asyncio.wait_for(_sse_until_eof(get), 2)  # the GET stream ends at once, cleanly
        get_closed = time.monotonic() - started
        rest = await asyncio.wait_for(_sse_until_eof(post), 10)  # the POST stream at grace end
        post_closed = time.monotonic() - started
        assert b"elicitation/create" not in rest
        code = await asyncio.wait_for(gw.process.wait(), 10)
    assert code == 0
    assert get_closed < 1.5
    assert 1.5 < post_closed < 6
    events = [e["event"] for e in read_log_events(log)]
    assert "gateway.draining" in events and "gateway.stopped" in events
    assert not [e for e in read_log_events(log) if e.get("level") == "error"]


async def test_rolling_restart_of_one_of_two_replicas_under_load(
    upstream: Peer, clients: ClientWorker, tmp_path: Path
) -> None:
    results: list[str] = []
    async with (
        gateway(upstream, tmp_path / "a.log", "--workers", "1", "--drain-seconds", "5") as first,
        gateway(upstream, tmp_path / "b.log", "--workers", "1", "--drain-seconds", "5") as second,
    ):
        backends = [first.url, second.url]
        async with round_robin(backends) as (url, used):
            stop = asyncio.Event()

            async def load(offset: int) -> None:
                i = offset
                while not stop.is_set():
                    await run_flow(clients, url, FLOWS[i % len(FLOWS)])
                    results.append("ok")
                    i += 1

            loaders = [asyncio.create_task(load(i)) for i in range(3)]
            await asyncio.sleep(2)
            # Roll replica A the way an orchestrator does: out of rotation first (its requests
            # in flight continue), then SIGTERM, …
            backends[0] = second.url
            os.kill(first.process.pid, signal.SIGTERM)
            assert await asyncio.wait_for(first.process.wait(), 15) == 0
            async with gateway(upstream, tmp_path / "a2.log", "--workers", "1") as replacement:
                backends[0] = replacement.url  # … then its successor into rotation
                await asyncio.sleep(3)
                stop.set()
                await asyncio.gather(*loaders)  # any failed flow raises here
            assert replacement.url in used and first.url in used
    assert len(results) >= 10
