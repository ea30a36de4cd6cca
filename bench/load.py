"""Load generator for the proxy benchmark: an asyncio aiohttp client driven by JSON commands.

Runs as a long-lived process (pinned to a core by bench/run.py): one JSON command per line on
stdin, one JSON answer per line on stdout. Latencies are measured per request with
``time.perf_counter_ns``; SSE event delays with ``time.monotonic_ns`` against the send time the
fake upstream stamps into each event (CLOCK_MONOTONIC is shared by every process on Linux).

Commands (``op``): ``seq`` (one client, N requests in a row), ``closed`` (C concurrent clients
for D seconds), ``rate`` (open loop at R requests/s for D seconds; latency counted from the
scheduled send time, so queueing is not hidden), ``sse`` (N streams in a row, per-event delay),
``elicit`` (C clients doing 2026 call → InputRequiredResult → retry with answers), ``open_idle`` /
``close_idle`` (hold N idle GET SSE streams), ``quit``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

_STAMP = re.compile(rb'"message":"t=(\d+)"')


def percentiles_us(samples_ns: list[int]) -> dict[str, float]:
    """p50 / p99 / mean of nanosecond samples, in microseconds (NaN when empty)."""
    if not samples_ns:
        return {"p50": float("nan"), "p99": float("nan"), "mean": float("nan"), "n": 0}
    s = sorted(samples_ns)
    n = len(s)

    def pick(q: float) -> float:
        return s[min(n - 1, int(q * n))] / 1000

    return {"p50": pick(0.50), "p99": pick(0.99), "mean": sum(s) / n / 1000, "n": n}


@dataclass
class Spec:
    """One HTTP request to repeat."""

    url: str
    body: bytes
    headers: dict[str, str]

    @classmethod
    def of(cls, cmd: Mapping[str, Any]) -> Spec:
        return cls(cmd["url"], str(cmd["body"]).encode(), dict(cmd["headers"]))


@dataclass
class Loader:
    idle: list[aiohttp.ClientResponse] = field(default_factory=list)
    idle_session: aiohttp.ClientSession | None = None

    async def run(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        op = cmd["op"]
        if op == "seq":
            return await self.seq(Spec.of(cmd), int(cmd["n"]))
        if op == "closed":
            return await self.closed(Spec.of(cmd), int(cmd["conns"]), float(cmd["duration"]))
        if op == "rate":
            return await self.rate(Spec.of(cmd), float(cmd["rate"]), float(cmd["duration"]))
        if op == "sse":
            return await self.sse(Spec.of(cmd), int(cmd["n"]))
        if op == "elicit":
            return await self.elicit(Spec.of(cmd), int(cmd["conns"]), float(cmd["duration"]))
        if op == "open_idle":
            return await self.open_idle(cmd, int(cmd["n"]))
        if op == "close_idle":
            return await self.close_idle()
        raise ValueError(f"unknown op {op!r}")

    @staticmethod
    def _session(limit: int = 0) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit),
            timeout=aiohttp.ClientTimeout(total=60),
            auto_decompress=False,
        )

    @staticmethod
    async def _one(session: aiohttp.ClientSession, spec: Spec) -> bool:
        async with session.post(spec.url, data=spec.body, headers=spec.headers) as resp:
            await resp.read()
            return resp.status == 200

    async def seq(self, spec: Spec, n: int) -> dict[str, Any]:
        lat: list[int] = []
        errors = 0
        async with self._session(1) as session:
            for _ in range(min(20, max(2, n // 10))):  # warm the connection and caches
                await self._one(session, spec)
            for _ in range(n):
                t0 = time.perf_counter_ns()
                ok = await self._one(session, spec)
                lat.append(time.perf_counter_ns() - t0)
                errors += not ok
        return {"lat": percentiles_us(lat), "errors": errors}

    async def closed(self, spec: Spec, conns: int, duration: float) -> dict[str, Any]:
        lat: list[int] = []
        errors = 0
        async with self._session(conns) as session:
            await asyncio.gather(*(self._one(session, spec) for _ in range(conns)))
            deadline = time.perf_counter() + duration

            async def worker() -> None:
                nonlocal errors
                while time.perf_counter() < deadline:
                    t0 = time.perf_counter_ns()
                    ok = await self._one(session, spec)
                    lat.append(time.perf_counter_ns() - t0)
                    errors += not ok

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(conns)))
            elapsed = time.perf_counter() - start
        return {
            "count": len(lat),
            "rps": len(lat) / elapsed,
            "lat": percentiles_us(lat),
            "errors": errors,
        }

    async def rate(self, spec: Spec, rate: float, duration: float) -> dict[str, Any]:
        lat: list[int] = []
        errors = 0
        async with self._session(0) as session:
            await asyncio.gather(*(self._one(session, spec) for _ in range(8)))

            async def send(scheduled: int) -> None:
                nonlocal errors
                try:
                    ok = await self._one(session, spec)
                except aiohttp.ClientError:
                    ok = False
                lat.append(time.perf_counter_ns() - scheduled)
                errors += not ok

            total = int(rate * duration)
            step = int(1e9 / rate)
            start = time.perf_counter_ns()
            tasks: list[asyncio.Task[None]] = []
            for k in range(total):
                scheduled = start + k * step
                delay = scheduled - time.perf_counter_ns()
                if delay > 0:
                    await asyncio.sleep(delay / 1e9)
                tasks.append(asyncio.create_task(send(scheduled)))
            await asyncio.gather(*tasks)
        return {"count": len(lat), "rate": rate, "lat": percentiles_us(lat), "errors": errors}

    async def sse(self, spec: Spec, n: int) -> dict[str, Any]:
        delays: list[int] = []
        errors = 0
        async with self._session(1) as session:
            for _ in range(n):
                async with session.post(spec.url, data=spec.body, headers=spec.headers) as resp:
                    errors += resp.status != 200
                    async for line in resp.content:
                        now = time.monotonic_ns()
                        m = _STAMP.search(line)
                        if m:
                            delays.append(now - int(m.group(1)))
        return {"delay": percentiles_us(delays), "errors": errors}

    async def elicit(self, spec: Spec, conns: int, duration: float) -> dict[str, Any]:
        """2026 elicitation round trips: each one is a gateway decision plus a sealed retry."""
        call = json.loads(spec.body)
        rounds = 0
        errors = 0
        failures: dict[str, int] = {}
        lat: list[int] = []
        async with self._session(conns) as session:
            deadline = time.perf_counter() + duration

            async def post(body: bytes) -> tuple[int, dict[str, Any]]:
                async with session.post(spec.url, data=body, headers=spec.headers) as resp:
                    return resp.status, json.loads(await resp.read())

            async def one_round() -> str | None:
                """None when the round completed, else why not (status and error code only)."""
                status, first = await post(spec.body)
                result = first.get("result") or {}
                if result.get("resultType") != "input_required":
                    return _why("call", status, first)
                retry = json.loads(json.dumps(call))
                retry["id"] = call["id"] + 1
                keys = result.get("inputRequests") or {}
                retry["params"]["inputResponses"] = {
                    k: {"action": "accept", "content": {"name": "Ada", "team": "core"}}
                    for k in keys
                }
                if "requestState" in result:
                    retry["params"]["requestState"] = result["requestState"]
                status, final = await post(json.dumps(retry).encode())
                if (final.get("result") or {}).get("resultType") == "complete":
                    return None
                return _why("retry", status, final)

            async def worker() -> None:
                nonlocal rounds, errors
                while time.perf_counter() < deadline:
                    t0 = time.perf_counter_ns()
                    why = await one_round()
                    lat.append(time.perf_counter_ns() - t0)
                    if why is None:
                        rounds += 1
                    else:
                        errors += 1
                        failures[why] = failures.get(why, 0) + 1

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(conns)))
            elapsed = time.perf_counter() - start
        return {
            "rounds": rounds,
            "per_s": rounds / elapsed,
            "lat": percentiles_us(lat),
            "errors": errors,
            "failures": failures,
        }

    async def open_idle(self, cmd: Mapping[str, Any], n: int) -> dict[str, Any]:
        """initialize once (2025-11-25), then hold ``n`` GET SSE streams in that session."""
        await self.close_idle()
        session = self._session(0)
        self.idle_session = session
        init = Spec.of(cmd)
        async with session.post(init.url, data=init.body, headers=init.headers) as resp:
            await resp.read()
            sid = resp.headers.get("Mcp-Session-Id")
        if sid is None:
            return {"opened": 0, "errors": 1, "why": f"initialize answered {resp.status}"}
        headers = {
            "Accept": "text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            "Mcp-Session-Id": sid,
        }
        gate = asyncio.Semaphore(500)
        errors = 0

        async def open_one() -> None:
            nonlocal errors
            async with gate:
                try:
                    resp = await session.get(init.url, headers=headers)
                except (aiohttp.ClientError, OSError):
                    errors += 1
                    return
                if resp.status == 200:
                    self.idle.append(resp)
                else:
                    errors += 1
                    resp.release()

        await asyncio.gather(*(open_one() for _ in range(n)))
        await asyncio.sleep(0.5)  # let the proxy settle its buffers
        return {"opened": len(self.idle), "errors": errors}

    async def close_idle(self) -> dict[str, Any]:
        closed = len(self.idle)
        for resp in self.idle:
            resp.close()
        self.idle.clear()
        if self.idle_session is not None:
            await self.idle_session.close()
            self.idle_session = None
        return {"closed": closed}


def _why(step: str, status: int, msg: Mapping[str, Any]) -> str:
    error = msg.get("error") or {}
    code = error.get("code") if isinstance(error, dict) else None
    return f"{step}: HTTP {status}, JSON-RPC error {code}"


async def serve() -> None:
    loader = Loader()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        cmd = json.loads(line)
        if cmd.get("op") == "quit":
            break
        try:
            answer = await loader.run(cmd)
        except Exception as exc:  # report, keep serving: one failed measurement is not fatal
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    await loader.close_idle()


if __name__ == "__main__":
    asyncio.run(serve())
