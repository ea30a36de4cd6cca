"""Operations end to end: worker processes sharing the port, graceful drain on SIGTERM, and a
rolling restart of one of two replicas under load with zero failed requests."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from gateway.enforce.seal import b64u
from gateway.proxy.serve import EXIT_WINDOW, MAX_EXITS, RESTART_DELAY, RESTART_DELAY_MAX
from tests.peers.procs import (
    ROOT,
    ClientWorker,
    Peer,
    free_port,
    peer_env,
    read_log_events,
    start_client_worker,
    start_gateway,
    start_upstream,
    stop,
    wait_for_health,
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


def _answered_table(pid: int) -> str:
    """The inode of the answered-token table a process maps (its memfd)."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    [inode] = {line.split()[4] for line in maps if "gateway-answered" in line}
    return inode


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
        started = {e["pid"] for e in read_log_events(log) if e.get("event") == "gateway.started"}
        # One answered-token table for every worker (enforce/replay.py): the same memory mapped,
        # created before the fork, so a replay sent to the other worker is still recognised.
        assert len({_answered_table(pid) for pid in started}) == 1
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


# -- operator faults: signals, worker restarts, log rotation ------------------------------------


def events_named(log: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in read_log_events(log) if e.get("event") == name]


async def wait_until(what: str, check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def wait_for_events(log: Path, name: str, count: int, timeout: float = 30.0) -> None:
    """Until ``log`` holds ``count`` events named ``name``."""
    await wait_until(f"{count} × {name}", lambda: len(events_named(log, name)) >= count, timeout)


async def spawn_gateway(
    upstream: Peer, log: Path, *args: str
) -> tuple[asyncio.subprocess.Process, int]:
    """``serve`` on a free port, stdout and stderr to ``log``; not waited for (the caller does
    what it needs while the gateway starts)."""
    port = free_port()
    argv = [sys.executable, "-m", "gateway", "serve", "--listen", f"127.0.0.1:{port}"]
    env = {k: v for k, v in peer_env().items() if not k.startswith("GATEWAY_")}
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            *argv,
            "--upstream",
            upstream.url,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            cwd=ROOT,
            env=env,
        )
    return process, port


@pytest.mark.parametrize("trigger", ["sighup", "watch"])
async def test_sighup_reloaded_policy_holds_in_restarted_workers(
    upstream: Peer, clients: ClientWorker, tmp_path: Path, trigger: str
) -> None:
    """A worker the supervisor restarts after a reload (SIGHUP, or --watch-policy noticing the
    change) runs the reloaded policy, not the one loaded at start-up."""
    policy = tmp_path / "policy.yaml"
    shutil.copy(ROOT / "policies" / "default.yaml", policy)
    log = tmp_path / "gateway.log"
    args = ["--workers", "2", "--policy", str(policy)]
    if trigger == "watch":
        args += ["--watch-policy", "0.2"]
    async with gateway(upstream, log, *args) as gw:
        await wait_for_events(log, "gateway.started", 2)
        events = await clients.run(gw.url, LEGACY, tool="demo_password")
        assert "action=decline" in events[-1]["text"]
        # The new policy (audit only: nothing is enforced, the password form goes through).
        staged = tmp_path / "staged.yaml"  # replaced whole: a watch never reads half a file
        staged.write_bytes((ROOT / "policies" / "audit-only.yaml").read_bytes())
        staged.replace(policy)
        revision = hashlib.sha256(policy.read_bytes()).hexdigest()
        if trigger == "sighup":
            os.kill(gw.process.pid, signal.SIGHUP)
        await wait_for_events(log, "policy.reloaded", 3)  # the supervisor and both workers
        # A worker dies; the supervisor starts another one.
        victim = events_named(log, "gateway.started")[0]["pid"]
        os.kill(victim, signal.SIGKILL)
        await wait_for_events(log, "gateway.started", 3)  # the restarted worker
        restarted = events_named(log, "gateway.started")[-1]
        assert restarted["pid"] != victim
        assert restarted["policy_revision"] == revision
        # Every worker now forwards the form, whichever one a client reaches.
        for _ in range(6):
            events = await clients.run(gw.url, LEGACY, tool="demo_password")
            assert "action=accept" in events[-1]["text"], events
    reloads = events_named(log, "policy.reloaded")
    assert {e["revision"] for e in reloads} == {revision}
    assert [e.get("process") for e in reloads].count("supervisor") == 1


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_sighup_during_start_up_does_not_kill_the_gateway(
    upstream: Peer, tmp_path: Path, workers: str
) -> None:
    """SIGHUP every 20 ms from the gateway's first log line (policy loaded, before the warm-up
    and the forks) until every worker has started: it keeps running, then drains and exits 0."""
    log = tmp_path / "gateway.log"
    process, port = await spawn_gateway(upstream, log, "--workers", workers)
    try:
        await wait_until("the first log line", lambda: bool(read_log_events(log)))
        sent = 0
        deadline = time.monotonic() + 60
        while len(events_named(log, "gateway.started")) < int(workers) or sent < 20:
            assert process.returncode is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            os.kill(process.pid, signal.SIGHUP)
            sent += 1
            await asyncio.sleep(0.02)
        await wait_for_health(Peer(process, port, log))
        assert process.returncode is None
        os.kill(process.pid, signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0, log.read_text()[-3000:]
    finally:
        await stop(process)
    assert len({e["pid"] for e in events_named(log, "gateway.started")}) == int(workers)


@pytest.mark.parametrize("workers", [1, 2])
async def test_audit_file_is_reopened_after_rotation(
    upstream: Peer, clients: ClientWorker, tmp_path: Path, workers: int
) -> None:
    """logrotate's way: rename the file, send SIGHUP (or SIGUSR1); new lines go to a new file at
    the original path, from every worker and from a worker restarted afterwards."""
    audit = tmp_path / "audit.jsonl"
    log = tmp_path / "gateway.log"

    def decisions(path: Path) -> list[dict[str, Any]]:
        return events_named(path, "elicitation.decision")

    async def blocked_flows(count: int) -> None:
        for _ in range(count):
            events = await clients.run(gw.url, LEGACY, tool="demo_password")
            assert "action=decline" in events[-1]["text"]

    args = ("--workers", str(workers), "--audit-file", str(audit))
    processes = workers + 1 if workers > 1 else 1  # with workers, the supervisor too
    async with gateway(upstream, log, *args) as gw:
        await blocked_flows(2)
        for rotation, signum in enumerate((signal.SIGHUP, signal.SIGUSR1), start=1):
            before = len(decisions(audit))
            assert before >= 2
            rotated = audit.rename(tmp_path / f"audit.jsonl.{rotation}")
            reopened = len(events_named(log, "audit.reopened"))
            os.kill(gw.process.pid, signum)
            await wait_for_events(log, "audit.reopened", reopened + processes)
            await blocked_flows(4)
            assert len(decisions(rotated)) == before  # nothing more in the renamed file
            assert len(decisions(audit)) == 4  # the new file at the original path
        if workers > 1:  # a worker started after the rotation writes to the new file too
            victim = events_named(log, "gateway.started")[0]["pid"]
            os.kill(victim, signal.SIGKILL)
            await wait_for_events(log, "gateway.started", 3)  # the restarted worker
            newcomer = events_named(log, "gateway.started")[-1]["pid"]
            for _ in range(40):
                await blocked_flows(1)
                if any(e["pid"] == newcomer for e in decisions(audit)):
                    break
            assert any(e["pid"] == newcomer for e in decisions(audit))
    assert len(decisions(tmp_path / "audit.jsonl.1")) == 2
    assert not [e for e in read_log_events(log) if e.get("event") == "audit.reopen_failed"]


async def test_workers_that_keep_dying_back_off_and_give_up(upstream: Peer, tmp_path: Path) -> None:
    """Each worker is killed as soon as it appears: restarts come after growing delays, and after
    MAX_EXITS exits within the window the gateway exits 1 with one clear line (formerly: 80+
    forks in 19 s, for ever)."""
    log = tmp_path / "gateway.log"
    process, _ = await spawn_gateway(upstream, log, "--workers", "2")
    killed: set[int] = set()
    started = time.monotonic()
    try:
        deadline = started + 60
        while process.returncode is None:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            for event in read_log_events(log):
                pid = event.get("pid") if event.get("event") == "gateway.started" else None
                if event.get("event") == "gateway.worker_restarted":
                    pid = event["worker"]
                if pid is not None and pid not in killed:
                    killed.add(pid)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.02)
        elapsed = time.monotonic() - started
    finally:
        await stop(process)
    assert process.returncode == 1
    died = events_named(log, "gateway.worker_died")
    assert [e["restart_in"] for e in died] == [
        min(RESTART_DELAY * 2**i, RESTART_DELAY_MAX) for i in range(MAX_EXITS - 1)
    ]
    assert len(events_named(log, "gateway.worker_restarted")) == MAX_EXITS - 2
    # The first worker's slot waited twice (first and third exit) before the fifth exit.
    assert elapsed > died[0]["restart_in"] + died[2]["restart_in"]
    lines = [line for line in log.read_text().splitlines() if not line.startswith("{")]
    assert lines == [
        f"elicitation-gateway: error: worker processes keep exiting ({MAX_EXITS} within "
        f"{EXIT_WINDOW:g} s, last exit code -9); giving up"
    ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (not yet reaped by init) has finished too.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    return False


async def test_workers_drain_and_exit_when_the_supervisor_dies(
    upstream: Peer, tmp_path: Path
) -> None:
    """A supervisor killed outright leaves no orphan serving (and holding the port): each worker
    drains and exits, and a new gateway can take the port."""
    log = tmp_path / "gateway.log"
    process, port = await spawn_gateway(upstream, log, "--workers", "2", "--drain-seconds", "2")
    workers: list[int] = []
    try:
        await wait_for_events(log, "gateway.started", 2)
        workers = [e["pid"] for e in events_named(log, "gateway.started")]
        process.kill()
        await process.wait()
        await wait_until("the workers to exit", lambda: not any(map(_alive, workers)), 15)
    finally:
        await stop(process)
        for pid in filter(_alive, workers):  # never leave an orphan behind, even on failure
            os.kill(pid, signal.SIGKILL)
    assert len(events_named(log, "gateway.stopped")) == 2
    with socket.socket() as sock:  # the port is free again (bound without SO_REUSEPORT)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
