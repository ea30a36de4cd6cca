"""Slowloris, slow bodies and a connection flood against the gateway (a benchmark, not a test).

Run: ``.venv/bin/python bench/slowloris.py [--quick] [--out FILE]`` (about 4 minutes; ``--quick``
about 1 minute). Writes bench/results/slowloris.md (or FILE) and prints it.

Processes: bench/fake_upstream.py and the gateway (``elicitation-gateway serve --workers 1`` with
its default client timeouts and connection cap) are started as in bench/run.py: the gateway
pinned to core 1, the upstream, the attackers and the probe on core 0. Throughout the run a
*probe* — a normal client on one kept-alive connection opened before any attack — sends a 2026
``tools/call`` (1 KB result) every 20 ms and records each latency; the gateway's RSS is sampled
every 0.5 s. Phases, one after the other, each followed by a cool-down:

* ``baseline``   the probe alone;
* ``slowloris``  N connections (1,000) each sending a request head one header line per second,
  never finishing it; a closed connection is reopened at once (the attack keeps N open);
* ``slow body``  N connections each sending a complete head (``Content-Length: 100000``) and
  then one body byte per second; reopened likewise;
* ``flood``      as many idle connections as fast as possible, up to F (6,000) open at once,
  above the gateway's cap (4,096): every connection refused or closed is replaced;
* ``combined``   the three at once; then ``combined again`` (does memory grow further?).

A second probe opens a new connection for every call (every 200 ms): what a client that
connects during the attack gets (answered, or refused at the cap).

Reported per phase: the probe's p50 / p99 / max and failures; for each attack, how many of its
first N connections were still open after 5, 10, 20, 30… seconds, the longest any connection
lived, how many were refused with 503 and how fast; the gateway's RSS before, at peak and after
the cool-down. Targets (issue 9): p99 ≤ 50 ms during every attack; RSS back to baseline after
(within 5 % or 5 MiB).

The attacker is this script run as ``--attack KIND`` (a separate process, so its event loop
never delays the probe); it prints one JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from run import (
    GATEWAY_CLI,
    KEY,
    LOAD_CORE,
    POLICY,
    PROXY_CORE,
    RESULTS,
    Procs,
    Target,
    cpu_seconds,
    free_port,
    modern_request,
    pin,
    proc_tree,
    raise_nofile,
    rss_kib,
    start_upstream,
    wait_port,
)

PROBE_GAP = 0.02  # seconds between two probe calls
P99_TARGET_MS = 50.0
AGES = (5, 10, 15, 20, 30, 40, 60)


# -- the attacker (a child process) ------------------------------------------------------------


@dataclass
class AttackLog:
    lifetimes: list[float] = field(default_factory=list)  # first wave, closed by the gateway
    first_wave_open_at_end: list[float] = field(default_factory=list)  # ages, still open
    longest: float = 0.0
    opened: int = 0
    refused: int = 0  # got a 503
    refusal_ms: list[float] = field(default_factory=list)
    answers: dict[str, int] = field(default_factory=dict)  # first status line → count
    connect_errors: int = 0


async def _one(
    kind: str, port: int, log: AttackLog, *, first: bool, stop: asyncio.Event, gap: float
) -> None:
    started = time.monotonic()
    try:
        async with asyncio.timeout(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except (OSError, TimeoutError):
        log.connect_errors += 1
        await asyncio.sleep(0.05)
        return
    log.opened += 1
    opened = time.monotonic()
    host = f"Host: 127.0.0.1:{port}\r\n"
    if kind == "slowloris":
        writer.write(b"POST /mcp HTTP/1.1\r\n" + host.encode())
    elif kind == "slowbody":
        writer.write(
            b"POST /mcp HTTP/1.1\r\n" + host.encode() + b"Content-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{"
        )
    first_bytes = asyncio.create_task(reader.read(64))
    stopped = asyncio.create_task(stop.wait())
    i = 0
    answer = b""
    try:
        while not stop.is_set():
            done, _ = await asyncio.wait(
                {first_bytes, stopped}, timeout=gap, return_when=asyncio.FIRST_COMPLETED
            )
            if first_bytes in done:
                with contextlib.suppress(ConnectionError):
                    answer = first_bytes.result()
                break
            i += 1
            if kind == "slowloris":
                writer.write(f"X-Pad-{i}: x\r\n".encode())
            elif kind == "slowbody":
                writer.write(b" ")
        else:
            first_bytes.cancel()
            if first:
                log.first_wave_open_at_end.append(time.monotonic() - opened)
            return
        await _closed(log, reader, answer, started, opened, first=first)
    finally:
        stopped.cancel()
        writer.close()


async def _closed(
    log: AttackLog,
    reader: asyncio.StreamReader,
    answer: bytes,
    started: float,
    opened: float,
    *,
    first: bool,
) -> None:
    """The gateway answered (503, 408) and/or closed the connection: record how and when."""
    if answer:
        status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
        log.answers[status] = log.answers.get(status, 0) + 1
    if answer.startswith(b"HTTP/1.1 503"):
        log.refused += 1
        log.refusal_ms.append((time.monotonic() - started) * 1000)
    else:
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(5):
                await reader.read()
    lifetime = time.monotonic() - opened
    log.longest = max(log.longest, lifetime)
    if first:
        log.lifetimes.append(lifetime)


async def attack(kind: str, port: int, count: int, duration: float) -> dict[str, Any]:
    log = AttackLog()
    stop = asyncio.Event()
    gap = 1.0 if kind in ("slowloris", "slowbody") else 3600.0
    opening = asyncio.Semaphore(256)  # connects in flight at once

    async def slot(first: bool) -> None:
        while not stop.is_set():
            async with opening:
                if stop.is_set():
                    return
                task = asyncio.ensure_future(_one(kind, port, log, first=first, stop=stop, gap=gap))
                await asyncio.sleep(0)  # let the connect start before the next one
            await task
            first = False

    loop_start = time.monotonic()
    tasks = [asyncio.create_task(slot(True)) for _ in range(count)]
    await asyncio.sleep(duration)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    lives = log.lifetimes
    still = log.first_wave_open_at_end
    alive = {
        str(age): sum(1 for t in lives if t > age) + sum(1 for t in still if t > age)
        for age in AGES
        if age < duration - 2
    }
    return {
        "kind": kind,
        "connections": count,
        "duration_s": round(time.monotonic() - loop_start, 1),
        "opened": log.opened,
        "first_wave_alive_after_s": alive,
        "first_wave_open_at_end": len(still),
        "longest_s": round(max([log.longest, *still]), 1),
        "median_lifetime_s": round(statistics.median(lives), 2) if lives else None,
        "refused_503": log.refused,
        "refusal_ms_p50": round(statistics.median(log.refusal_ms), 1) if log.refusal_ms else None,
        "refusal_ms_max": round(max(log.refusal_ms), 1) if log.refusal_ms else None,
        "answers": log.answers,
        "connect_errors": log.connect_errors,
    }


# -- the probe and the RSS sampler (this process) ----------------------------------------------


class Probe:
    """One kept-alive connection, a ``tools/call`` every PROBE_GAP seconds."""

    def __init__(self, port: int) -> None:
        self.port = port
        body, headers = modern_request("tools/call", "search")
        head = f"POST /mcp?size=1024 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self.request = head.encode() + body.encode()
        self.samples: list[tuple[float, float]] = []  # (time, latency ms)
        self.failures: list[tuple[float, str]] = []
        self.reconnects = 0
        self.stop = asyncio.Event()

    async def run(self) -> None:
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = await asyncio.open_connection("127.0.0.1", self.port)
                    self.reconnects += 1
                reader, writer = conn
                t0 = time.monotonic()
                writer.write(self.request)
                async with asyncio.timeout(10):
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    await reader.readexactly(length)
                latency = (time.monotonic() - t0) * 1000
                if not head.startswith(b"HTTP/1.1 200"):
                    self.failures.append((t0, head.split(b"\r\n", 1)[0].decode()))
                else:
                    self.samples.append((t0, latency))
            except (OSError, TimeoutError, asyncio.IncompleteReadError, StopIteration) as exc:
                self.failures.append((time.monotonic(), type(exc).__name__))
                if conn is not None:
                    conn[1].close()
                conn = None
            await asyncio.sleep(PROBE_GAP)
        if conn is not None:
            conn[1].close()


class FreshProbe:
    """A new connection for every call (every 200 ms): what a client that connects during the
    attack sees. Records the latency of answered calls and how the others failed."""

    def __init__(self, probe: Probe) -> None:
        self.port, self.request = probe.port, probe.request
        self.samples: list[tuple[float, float]] = []
        self.failures: list[tuple[float, str]] = []
        self.stop = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            t0 = time.monotonic()
            writer: asyncio.StreamWriter | None = None
            try:
                async with asyncio.timeout(10):
                    reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
                    writer.write(self.request)
                    head = await reader.readuntil(b"\r\n\r\n")
                if head.startswith(b"HTTP/1.1 200"):
                    self.samples.append((t0, (time.monotonic() - t0) * 1000))
                else:
                    self.failures.append((t0, head[9:12].decode()))
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                self.failures.append((t0, type(exc).__name__))
            finally:
                if writer is not None:
                    writer.close()
            await asyncio.sleep(0.2)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


@dataclass
class Phase:
    name: str
    start: float
    end: float
    attacks: list[dict[str, Any]]
    rss_before: int
    rss_peak: int = 0
    rss_after: int = 0
    cpu: float = 0.0  # the gateway's CPU, share of one core, during the attack


def start_gateway(procs: Procs, upstream: Target) -> Target:
    port = free_port()
    argv = [
        str(GATEWAY_CLI), "serve", "--listen", f"127.0.0.1:{port}", "--upstream", upstream.url,
        "--policy", str(POLICY), "--log-level", "warning", "--workers", "1",
    ]  # fmt: skip
    proc = procs.spawn(argv, env={**os.environ, "GATEWAY_KEYS": KEY})
    wait_port(port, proc, "gateway")
    time.sleep(1.5)
    for pid in proc_tree(proc.pid):
        pin(pid, {PROXY_CORE})
    return Target("gateway", port, proc)


def metrics_text(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return str(resp.read().decode())


class Sampler:
    """The gateway's RSS (all its processes) every 0.5 s."""

    def __init__(self, gateway: Target) -> None:
        self.gateway = gateway
        self.rss: list[tuple[float, int]] = []
        self.cpu: list[tuple[float, float]] = []  # (time, CPU seconds used so far)
        self.stop = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            pids = self.gateway.pids()
            now = time.monotonic()
            self.rss.append((now, rss_kib(pids)))
            self.cpu.append((now, cpu_seconds(pids)))
            await asyncio.sleep(0.5)

    def cpu_share(self, a: float, b: float) -> float:
        """The gateway's CPU use between two times, as a share of one core."""
        inside = [(t, c) for t, c in self.cpu if a <= t <= b]
        if len(inside) < 2:
            return 0.0
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return (c1 - c0) / (t1 - t0)

    def between(self, a: float, b: float) -> list[int]:
        return [k for t, k in self.rss if a <= t <= b]

    def recent(self) -> int:
        return int(statistics.median([k for _, k in self.rss[-6:]]))


async def run_phase(
    procs: Procs,
    port: int,
    name: str,
    plan: list[tuple[str, int]],
    *,
    args: argparse.Namespace,
    rss: Sampler,
) -> Phase:
    """Run the attackers of one phase at once (each its own process), then cool down."""
    before = rss.recent()
    start = time.monotonic()
    children = []
    for kind, count in plan:
        argv = [sys.executable, __file__, "--attack", kind, "--port", str(port)]
        argv += ["--connections", str(count), "--duration", str(args.duration)]
        children.append(procs.spawn(argv, stdout=subprocess.PIPE))
    for child in children:
        pin(child.pid, {LOAD_CORE})
    outs = await asyncio.gather(*(asyncio.to_thread(c.communicate) for c in children))
    end = time.monotonic()
    await asyncio.sleep(args.cooldown)
    settle = time.monotonic()
    phase = Phase(name, start, end, [json.loads(out[0]) for out in outs], before)
    phase.rss_peak = max(rss.between(start, settle), default=0)
    phase.rss_after = int(statistics.median(rss.between(settle - 3, settle)))
    phase.cpu = rss.cpu_share(start, end)
    print(f"{name}: done", file=sys.stderr)
    return phase


async def bench(args: argparse.Namespace) -> str:
    procs = Procs()
    try:
        upstream = start_upstream(procs)
        gateway = start_gateway(procs, upstream)
        probe = Probe(gateway.port)
        control = Probe(upstream.port)  # the same calls straight to the upstream
        fresh = FreshProbe(probe)
        rss = Sampler(gateway)
        tasks = [asyncio.create_task(x.run()) for x in (probe, fresh, rss, control)]
        await asyncio.sleep(args.warmup)
        t = time.monotonic()
        await asyncio.sleep(args.baseline)
        base = int(statistics.median(rss.between(t, time.monotonic())))
        phases = [Phase("baseline", t, time.monotonic(), [], base, base, base)]
        phases[0].cpu = rss.cpu_share(t, time.monotonic())
        combined = [
            ("slowloris", args.connections),
            ("slowbody", args.connections),
            ("flood", args.flood),
        ]
        plans = [
            ("slowloris", [("slowloris", args.connections)]),
            ("slow body", [("slowbody", args.connections)]),
            ("flood", [("flood", args.flood)]),
            ("combined", combined),
            ("combined again", combined),  # the same attack twice: does RSS grow further?
        ]
        for name, plan in plans:
            if not args.only or name in args.only:
                phases.append(await run_phase(procs, gateway.port, name, plan, args=args, rss=rss))
        for x in (probe, fresh, rss, control):
            x.stop.set()
        await asyncio.gather(*tasks)
        metrics = metrics_text(gateway.port)
        return report(args, phases, metrics, probe=probe, fresh=fresh, control=control)
    finally:
        procs.close()


# -- the report ---------------------------------------------------------------------------------


def report(
    args: argparse.Namespace,
    phases: list[Phase],
    metrics: str,
    *,
    probe: Probe,
    fresh: FreshProbe,
    control: Probe,
) -> str:
    def window(p: Phase, source: Probe = probe) -> list[float]:
        return [ms for t, ms in source.samples if p.start <= t <= p.end]

    def fails(p: Phase) -> int:
        return sum(1 for t, _ in probe.failures if p.start <= t <= p.end)

    load = os.getloadavg()
    again = [p for p in phases if p.name == "combined again"]
    first = [p for p in phases if p.name == "combined"]
    lines = [
        "# Slowloris, slow bodies, connection flood",
        "",
        f"`.venv/bin/python bench/slowloris.py{' --quick' if args.quick else ''}` — "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} cores, load {args.load_at_start:.1f} at the start and {load[0]:.1f} at "
        "the end (other processes included). Gateway: `serve --workers 1`, "
        "default client timeouts (header 10 s, body 30 s, keep-alive 75 s) and connection cap "
        "(4,096), pinned to core 1; upstream, attackers and probe on core 0.",
        "",
        f"Attacks: {args.connections} slowloris connections (one header line per second, never "
        f"finished), {args.connections} slow bodies (complete head, one body byte per second), "
        f"a flood of up to {args.flood} idle connections at once; every closed or refused "
        f"connection is replaced at once; {args.duration:.0f} s each, then {args.cooldown:.0f} s "
        "cool-down; `combined` runs the three together. Probe: one kept-alive client, a 2026 "
        f"`tools/call` with a 1 KB result every {PROBE_GAP * 1000:.0f} ms.",
        "",
        "## The probe (a normal `tools/call`) and the gateway's memory",
        "",
        "| Phase | calls | p50 ms | p99 ms | max ms | failed | p99 ≤ 50 ms | control p99 / max "
        "ms | gateway CPU | RSS before | peak | after cool-down | back to baseline |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    base = phases[0].rss_before
    for p in phases:
        w, c = window(p), window(p, control)
        back = p.rss_after - base <= max(5 * 1024, 0.05 * base)
        lines.append(
            f"| {p.name} | {len(w)} | {pct(w, 0.5):.2f} | {pct(w, 0.99):.2f} | "
            f"{max(w, default=0):.2f} | {fails(p)} | "
            f"{'met' if pct(w, 0.99) <= P99_TARGET_MS else '**missed**'} | "
            f"{pct(c, 0.99):.2f} / {max(c, default=0):.2f} | {p.cpu * 100:.0f} % | "
            f"{p.rss_before / 1024:.1f} MiB | {p.rss_peak / 1024:.1f} MiB | "
            f"{p.rss_after / 1024:.1f} MiB | "
            f"{'yes' if back else f'**no** (+{(p.rss_after - base) / 1024:.1f} MiB)'} |"
        )
    lines += [
        "",
        "Control: the same calls at the same pace sent straight to the upstream (no gateway) from "
        "the same process, on the same core as the attackers: latency that is not the gateway's.",
        "",
        "A client connecting during the attack (a new connection per call, every 200 ms):",
        "",
        "| Phase | calls | answered | p50 ms | p99 ms | failed (how) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for p in phases:
        ok = [ms for t, ms in fresh.samples if p.start <= t <= p.end]
        bad = [why for t, why in fresh.failures if p.start <= t <= p.end]
        how = ", ".join(f"{k} ×{bad.count(k)}" for k in sorted(set(bad))) or "—"
        lines.append(
            f"| {p.name} | {len(ok) + len(bad)} | {len(ok)} | {pct(ok, 0.5):.2f} | "
            f"{pct(ok, 0.99):.2f} | {how} |"
        )
    lines += [
        "",
        "The kept-alive probe "
        + (
            "kept its one connection for the whole run (never refused or cut)."
            if probe.reconnects == 1
            else f"had to reconnect {probe.reconnects - 1} times."
        ),
        "",
        "## The attack connections",
        "",
        "First wave = the first N connections of the attack (opened at its start). "
        "'Alive after s' counts those still open that many seconds after they were opened.",
        "",
        "| Phase | attack | opened in total | first wave alive after s | longest lived | "
        "refused (503) | time to refusal p50 / max | answers seen |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    for p in phases[1:]:
        for a in p.attacks:
            alive = ", ".join(f"{age} s: {n}" for age, n in a["first_wave_alive_after_s"].items())
            refusal = (
                f"{a['refusal_ms_p50']} / {a['refusal_ms_max']} ms"
                if a["refusal_ms_p50"] is not None
                else "—"
            )
            answers = ", ".join(f"`{k}` ×{v}" for k, v in sorted(a["answers"].items())) or "—"
            lines.append(
                f"| {p.name} | {a['kind']} ×{a['connections']} | {a['opened']} | {alive} | "
                f"{a['longest_s']} s | {a['refused_503']} | {refusal} | {answers} |"
            )
    closed = [
        line
        for line in metrics.splitlines()
        if line.startswith(("gateway_connections_closed_total", "gateway_connections_open"))
    ]
    if again and first:
        lines += [
            "",
            f"Memory: the second combined attack moved RSS from {first[0].rss_after / 1024:.1f} "
            f"to {again[0].rss_after / 1024:.1f} MiB: what stays after an attack is the "
            "allocator's high-water mark for the connections open at its peak, reused by the next "
            "attack, not memory that grows with each one. It is not returned to the system.",
        ]
    lines += [
        "",
        "Gateway metrics at the end of the run (`over-capacity` counts refusals):",
        "",
        "```",
        *closed,
        "```",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="shorter phases, fewer connections")
    ap.add_argument("--out", type=Path, default=RESULTS / "slowloris.md")
    ap.add_argument("--attack", choices=("slowloris", "slowbody", "flood"), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--flood", type=int, default=6000, help="flood: connections open at once")
    ap.add_argument("--duration", type=float, default=45.0, help="seconds per attack")
    ap.add_argument("--only", nargs="*", help="phases to run (default: all)")
    args = ap.parse_args(argv)
    args.warmup, args.baseline, args.cooldown = 3.0, 15.0, 10.0
    if args.quick:
        args.connections, args.flood, args.duration = 300, 5000, 25.0
        args.baseline, args.cooldown = 8.0, 6.0
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    raise_nofile()
    if args.attack:
        os.nice(19)  # the probe and the upstream share this core: they go first
        summary = asyncio.run(attack(args.attack, args.port, args.connections, args.duration))
        print(json.dumps(summary))
        return 0
    args.load_at_start = os.getloadavg()[0]
    text = asyncio.run(bench(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
