"""Side-by-side proxy benchmark (not a test): direct vs nginx vs minimal aiohttp vs the gateway.

Run: ``.venv/bin/python bench/run.py [--quick] [--rounds N] [--workers 1,2] [--out DIR]``.
Writes bench/results/proxy.md and bench/results/proxy.png (or DIR/…) and prints the Markdown.
About 6 minutes by default on 2 cores, about 70 s with ``--quick``. Needs nginx (Debian:
``apt-get install -y nginx``; the run stops with that hint otherwise); uses ``wrk`` when installed.

One interleaved run: every round measures each scenario on each target in turn (the order
rotates per round), so drift hits all of them alike; the tables report medians over rounds. The
fake upstream (bench/fake_upstream.py) and the load generator (bench/load.py, plus ``wrk`` for
raw throughput when installed) are pinned to core 0, the proxy under test to core 1. Targets:

* ``direct``       the fake upstream itself;
* ``nginx``        ``proxy_pass`` with buffering off (bench/nginx.conf.template), one process;
* ``minimal``      bench/minimal.py, the minimal aiohttp proxy of issue 12 (JSON read whole and
  ``json.loads``-ed, SSE streamed): the reference the gateway's targets are measured against;
* ``gateway``      ``elicitation-gateway serve --workers 1 --policy policies/default.yaml
  --log-level warning`` with ``GATEWAY_KEYS`` set to a fixed test key;
* ``gateway+audit`` the same at ``--log-level info`` (audit lines on stdout to /dev/null),
  measured on throughput and elicitation traffic only;
* ``gateway (pymalloc)`` the gateway with ``PYTHONMALLOC=pymalloc`` (CPython's own allocator;
  ``serve`` otherwise runs on the system allocator, gateway/proxy/allocator.py), measured likewise.

Scenarios: throughput (``tools/call`` with a 1 KB result, C connections) with the proxy's CPU
µs per request (utime+stime from /proc/<pid>/stat); latency with one client; p99 at 50 % of the
gateway's measured capacity (open loop, same offered rate for every target); a body-size sweep
(``tools/call`` text and ``tools/list``-shaped JSON at 1 KB / 64 KB / 1 MB); SSE per-event delay;
RSS per idle GET SSE stream (once per run); 2026 elicitation rounds per second (call →
InputRequiredResult, decided and sealed by the gateway → retry with answers → result). Last, a
``--workers`` sweep of the gateway's throughput (unpinned), when the CLI has ``--workers``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
PY = sys.executable
GATEWAY_CLI = ROOT / ".venv" / "bin" / "elicitation-gateway"
POLICY = ROOT / "policies" / "default.yaml"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
KEY = base64.urlsafe_b64encode(bytes(range(32))).rstrip(b"=").decode()  # fixed test key
LOAD_CORE, PROXY_CORE = 0, 1
NGINX_HELP = "nginx is not installed: run `apt-get update && apt-get install -y nginx` (Debian)"

DIRECT, NGINX, MINIMAL, GATEWAY, AUDIT = "direct", "nginx", "minimal", "gateway", "gateway+audit"
# The gateway on CPython's own small-object allocator: `serve` runs on the system allocator (it
# re-executes itself with PYTHONMALLOC=malloc, gateway/proxy/allocator.py); this target is its A/B.
PYMALLOC = "gateway (pymalloc)"
EXTRAS = (AUDIT, PYMALLOC)  # measured on throughput and elicitation rounds only
PROXIES = (NGINX, MINIMAL, GATEWAY)
ALL = (DIRECT, *PROXIES)
SIZES = (("1 KB", 1024), ("64 KB", 65536), ("1 MB", 1048576))

TARGETS_MET = {
    "tput_vs_minimal": 0.85,
    "cpu_vs_minimal": 1.2,
    "added_p50_vs_minimal_ms": 0.1,
    "added_p50_ms": 0.35,
    "added_p99_ms": 1.0,
    "added_1mb_ms": 2.0,
    "sse_p99_ms": 1.0,
    "kib_per_stream": 32.0,
}


@dataclass
class Profile:
    rounds: int
    tput_s: float
    conns: int
    seq_n: int
    rate_s: float
    sweep_n: dict[int, int]
    sse_streams: int
    sse_events: int
    elicit_s: float
    idle_streams: int


DEFAULT = Profile(
    rounds=5, tput_s=3.0, conns=32, seq_n=600, rate_s=2.0,
    sweep_n={1024: 300, 65536: 150, 1048576: 30},
    sse_streams=6, sse_events=50, elicit_s=2.0, idle_streams=5000,
)  # fmt: skip
QUICK = Profile(
    rounds=2, tput_s=1.0, conns=32, seq_n=200, rate_s=1.0,
    sweep_n={1024: 60, 65536: 40, 1048576: 8},
    sse_streams=2, sse_events=40, elicit_s=1.0, idle_streams=1000,
)  # fmt: skip


# -- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise SystemExit(f"{what} did not listen on {port} within {timeout}s")


def pin(pid: int, cores: set[int]) -> None:
    """Pin ``pid`` (and its threads) to ``cores`` (ignored where the cores do not exist)."""
    usable = cores & os.sched_getaffinity(0)
    if not usable:
        return
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(tid), usable)


def proc_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (gateway workers, if any)."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children[ppid].append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of ``pids`` in seconds (fields 14 and 15 of /proc/<pid>/stat)."""
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


@dataclass
class Target:
    name: str
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def pids(self) -> list[int]:
        return proc_tree(self.proc.pid)


class Procs:
    """Every process this run starts, stopped (by pid, process group) on exit."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[bytes]] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="gw-bench-"))

    def spawn(
        self, argv: list[str], *, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.Popen[bytes]:
        kw.setdefault("stdout", subprocess.DEVNULL)
        proc: subprocess.Popen[bytes] = subprocess.Popen(
            argv, cwd=ROOT, env=env, start_new_session=True, **kw
        )
        self.started.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)

    def close(self) -> None:
        for proc in reversed(self.started):
            self.stop(proc)
        shutil.rmtree(self.tmp, ignore_errors=True)


def nginx_binary() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found is None:
        raise SystemExit(NGINX_HELP)
    return found


def start_upstream(procs: Procs) -> Target:
    port = free_port()
    proc = procs.spawn([PY, str(BENCH / "fake_upstream.py"), "--port", str(port)])
    wait_port(port, proc, "fake upstream")
    pin(proc.pid, {LOAD_CORE})
    return Target(DIRECT, port, proc)


def start_nginx(procs: Procs, upstream: Target) -> Target:
    binary = nginx_binary()
    prefix = procs.tmp / "nginx"
    prefix.mkdir()
    port = free_port()
    conf = string.Template((BENCH / "nginx.conf.template").read_text()).substitute(
        prefix=prefix, port=port, upstream_port=upstream.port
    )
    (prefix / "nginx.conf").write_text(conf)
    argv = [
        binary,
        "-p",
        str(prefix),
        "-e",
        str(prefix / "error.log"),
        "-c",
        str(prefix / "nginx.conf"),
    ]
    proc = procs.spawn(argv, stderr=subprocess.DEVNULL)
    wait_port(port, proc, "nginx")
    pin(proc.pid, {PROXY_CORE})
    return Target(NGINX, port, proc)


def start_minimal(procs: Procs, upstream: Target) -> Target:
    port = free_port()
    argv = [PY, str(BENCH / "minimal.py"), "--listen", f"127.0.0.1:{port}"]
    proc = procs.spawn([*argv, "--upstream", upstream.url])
    wait_port(port, proc, "minimal proxy")
    pin(proc.pid, {PROXY_CORE})
    return Target(MINIMAL, port, proc)


def gateway_workers_supported() -> bool:
    out = subprocess.run(
        [str(GATEWAY_CLI), "serve", "--help"], capture_output=True, text=True, check=False
    ).stdout
    return "--workers" in out


def start_gateway(
    procs: Procs,
    upstream: Target,
    *,
    name: str = GATEWAY,
    log_level: str = "warning",
    workers: int | None = None,
    cores: set[int] | None = None,
    env: dict[str, str] | None = None,
) -> Target:
    port = free_port()
    argv = [
        str(GATEWAY_CLI), "serve", "--listen", f"127.0.0.1:{port}", "--upstream", upstream.url,
        "--policy", str(POLICY), "--log-level", log_level,
    ]  # fmt: skip
    if workers is not None or gateway_workers_supported():
        argv += ["--workers", str(workers or 1)]  # one process pinned to one core by default
    proc = procs.spawn(argv, env={**os.environ, "GATEWAY_KEYS": KEY, **(env or {})})
    wait_port(port, proc, name)
    time.sleep(0.3 if workers is None else 1.5)  # workers fork after the listener is up
    for pid in proc_tree(proc.pid):
        pin(pid, cores or {PROXY_CORE})
    return Target(name, port, proc)


class LoadClient:
    """bench/load.py as a long-lived process on the load core: JSON command in, JSON out."""

    def __init__(self, procs: Procs) -> None:
        self.proc = procs.spawn(
            [PY, str(BENCH / "load.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        pin(self.proc.pid, {LOAD_CORE})
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._out: IO[bytes] = self.proc.stdout

    def ask(self, **cmd: Any) -> dict[str, Any]:
        self._in.write(json.dumps(cmd).encode() + b"\n")
        self._in.flush()
        line = self._out.readline()
        if not line:
            raise SystemExit("the load generator exited")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"load generator failed on {cmd['op']}: {answer['error']}")
        return answer


# -- requests ---------------------------------------------------------------------------------


def modern_request(
    method: str, name: str | None = None, msg_id: int = 1
) -> tuple[str, dict[str, str]]:
    """A 2026-07-28 request body and headers (no session needed)."""
    params: dict[str, Any] = {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
        }
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if name is not None:
        params = {"name": name, "arguments": {"topic": "bench"}, **params}
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
    return json.dumps(body, separators=(",", ":")), headers


def initialize_request() -> tuple[str, dict[str, str]]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE,
            "capabilities": {"elicitation": {"form": {}, "url": {}}},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    return json.dumps(body), headers


CALL = modern_request("tools/call", "blob")
LIST = modern_request("tools/list")
ELICIT = modern_request("tools/call", "file_report")
INITIALIZE = initialize_request()
KINDS = ("tools/call", "tools/list")
SWEEP_KEYS = [f"{kind} {label}" for kind in KINDS for label, _ in SIZES]


def wrk_lua(path: Path, body: str, headers: dict[str, str]) -> Path:
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(body)}"]
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_wrk(url: str, lua: Path, conns: int, seconds: float) -> tuple[float, int, int]:
    """(requests/s, requests, failed) from wrk pinned to the load core."""
    argv = ["taskset", "-c", str(LOAD_CORE), "wrk", "-t1", f"-c{conns}"]
    argv += [f"-d{max(1, round(seconds))}s", "-s", str(lua), url]
    out = subprocess.run(
        argv, capture_output=True, text=True, check=True, timeout=seconds + 30
    ).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    if rate is None or count is None:
        raise SystemExit(f"could not read wrk output:\n{out}")
    failed = sum(int(x) for x in re.findall(r"Non-2xx or 3xx responses:\s*(\d+)", out))
    socket_errors = re.search(r"Socket errors:(.*)", out)
    if socket_errors:
        failed += sum(int(x) for x in re.findall(r"\d+", socket_errors.group(1)))
    return float(rate.group(1)), int(count.group(1)), failed


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Results:
    """values[metric][target] = one value per round."""

    values: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    notes: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, metric: str, target: str, value: float) -> None:
        self.values[metric][target].append(value)

    def has(self, metric: str, target: str) -> bool:
        return bool(self.values.get(metric, {}).get(target))

    def med(self, metric: str, target: str) -> float:
        vals = self.values.get(metric, {}).get(target, [])
        return statistics.median(vals) if vals else float("nan")


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    start = time.monotonic()
    yield
    print(f"  {name}: {time.monotonic() - start:.1f}s", file=sys.stderr)


@dataclass
class Bench:
    """One run: the processes, the load generator, the profile and what was measured."""

    procs: Procs
    load: LoadClient
    targets: dict[str, Target]
    p: Profile
    lua: Path | None
    r: Results = field(default_factory=Results)

    def order(self, k: int, *, audit: bool = False) -> list[str]:
        """Every target, the starting one rotating with the round ``k``."""
        names = list(ALL[k % len(ALL) :] + ALL[: k % len(ALL)])
        return [*names, *(e for e in EXTRAS if e in self.targets)] if audit else names

    def ask(
        self, op: str, t: Target, query: str, req: tuple[str, dict[str, str]], **kw: Any
    ) -> Any:
        body, headers = req
        return self.load.ask(op=op, url=t.url + query, body=body, headers=headers, **kw)

    def throughput(self, t: Target, metric: str = "tput") -> None:
        r, p = self.r, self.p
        pids = t.pids()  # direct: the fake upstream's own cost, for scale
        cpu0 = cpu_seconds(pids)
        start = time.perf_counter()
        if self.lua is not None:
            rps, requests, errors = run_wrk(t.url + "?size=1024", self.lua, p.conns, p.tput_s)
        else:
            ans = self.ask("closed", t, "?size=1024", CALL, conns=p.conns, duration=p.tput_s)
            rps, requests, errors = ans["rps"], ans["count"], ans["errors"]
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds(pids) - cpu0
        r.add(metric, t.name, rps)
        r.errors[f"{metric}/{t.name}"] += errors
        if pids and requests:
            r.add(f"{metric}_cpu_us", t.name, cpu / requests * 1e6)
            r.add(f"{metric}_busy", t.name, cpu / elapsed)

    def round(self, k: int) -> None:
        with phase("throughput"):
            for name in self.order(k, audit=True):
                self.throughput(self.targets[name])
        with phase("latency"):
            self.latency(k)
        with phase("body sweep"):
            self.sweep(k)
        with phase("sse + elicitation"):
            self.sse_and_elicitation(k)

    def latency(self, k: int) -> None:
        r, p = self.r, self.p
        for name in self.order(k):
            ans = self.ask("seq", self.targets[name], "?size=1024", CALL, n=p.seq_n)
            r.add("seq_p50", name, ans["lat"]["p50"])
            r.add("seq_p99", name, ans["lat"]["p99"])
            r.errors[f"seq/{name}"] += ans["errors"]
        rate = 0.5 * r.values["tput"][GATEWAY][-1]
        r.add("half_rate", GATEWAY, rate)
        for name in self.order(k):
            t = self.targets[name]
            ans = self.ask("rate", t, "?size=1024", CALL, rate=rate, duration=p.rate_s)
            r.add("half_p50", name, ans["lat"]["p50"])
            r.add("half_p99", name, ans["lat"]["p99"])
            r.errors[f"half/{name}"] += ans["errors"]

    def sweep(self, k: int) -> None:
        r, p = self.r, self.p
        for kind, req in (("tools/call", CALL), ("tools/list", LIST)):
            for label, size in SIZES:
                for name in self.order(k):
                    n = p.sweep_n[size]
                    ans = self.ask("seq", self.targets[name], f"?size={size}", req, n=n)
                    r.add(f"sweep_p50 {kind} {label}", name, ans["lat"]["p50"])
                    r.add(f"sweep_p99 {kind} {label}", name, ans["lat"]["p99"])
                    r.errors[f"sweep {kind} {label}/{name}"] += ans["errors"]

    def sse_and_elicitation(self, k: int) -> None:
        r, p = self.r, self.p
        query = f"?sse={p.sse_events}&interval_ms=2"
        for name in self.order(k):
            ans = self.ask("sse", self.targets[name], query, CALL, n=p.sse_streams)
            r.add("sse_p50", name, ans["delay"]["p50"])
            r.add("sse_p99", name, ans["delay"]["p99"])
            r.errors[f"sse/{name}"] += ans["errors"]
        for name in self.order(k, audit=True):
            t = self.targets[name]
            ans = self.ask("elicit", t, "?elicit=1", ELICIT, conns=8, duration=p.elicit_s)
            r.add("elicit_per_s", name, ans["per_s"])
            r.add("elicit_p50", name, ans["lat"]["p50"])
            r.errors[f"elicit/{name}"] += ans["errors"]
            for why, count in ans["failures"].items():
                r.failures[f"elicit/{name}: {why}"] += count

    def idle_streams(self) -> None:
        r = self.r
        for name in PROXIES:
            t = self.targets[name]
            before = rss_kib(t.pids())
            ans = self.ask("open_idle", t, "", INITIALIZE, n=self.p.idle_streams)
            after = rss_kib(t.pids())
            self.load.ask(op="close_idle")
            opened = ans["opened"]
            r.add("idle_opened", name, opened)
            r.add("idle_rss_before", name, before)
            r.add("idle_rss_after", name, after)
            if opened:
                r.add("idle_kib", name, (after - before) / opened)
            r.errors[f"idle/{name}"] += ans["errors"]
            time.sleep(1)

    def workers_sweep(self, counts: list[int]) -> None:
        r = self.r
        if not gateway_workers_supported():
            r.notes.append(
                "Workers sweep not run: `elicitation-gateway serve --help` does not list "
                f"`--workers` (re-run with `--workers {','.join(map(str, counts))}` once it does)."
            )
            return
        cores = set(os.sched_getaffinity(0))
        r.notes.append(
            f"Workers sweep: the gateway runs unpinned on cores {sorted(cores)}, shared with the "
            "load generator and the upstream, so growth is bounded by the machine."
        )
        upstream = self.targets[DIRECT]
        for _ in range(max(1, self.p.rounds // 2)):
            for w in counts:
                name = f"workers={w}"
                t = start_gateway(self.procs, upstream, name=name, workers=w, cores=cores)
                self.throughput(t, metric="workers")
                self.procs.stop(t.proc)


def derive(r: Results) -> None:
    """Per-round differences against direct (``added_<metric>``)."""
    bases = ["seq_p50", "seq_p99", "half_p99", "sse_p50", "sse_p99"]
    bases += [f"sweep_{q} {key}" for q in ("p50", "p99") for key in SWEEP_KEYS]
    for base in bases:
        direct = r.values[base].get(DIRECT, [])
        for name in PROXIES:
            for i, v in enumerate(r.values[base].get(name, [])):
                if i < len(direct):
                    r.add(f"added_{base}", name, v - direct[i])


# -- report -------------------------------------------------------------------------------------


def fmt(x: float, nd: int = 0) -> str:
    if math.isnan(x):
        return "—"
    text = f"{x:,.{nd}f}"
    return text.removeprefix("-") if float(text.replace(",", "")) == 0 else text


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: list[str], align: str = "---:") -> list[str]:
    return [row(*header), row("---", *([align] * (len(header) - 1)))]


@dataclass
class RunInfo:
    command: str
    started: str
    load_before: str
    load_after: str
    tools: dict[str, str]


def report(r: Results, p: Profile, info: RunInfo) -> str:
    sections = [
        _header(p, info),
        _targets(r),
        _throughput(r, p, info),
        _latency(r, p),
        _sweep(r),
        _sse(r, p),
        _idle(r),
        _elicitation(r, p),
        _workers(r),
        _notes(r),
    ]
    return "\n".join(line for section in sections for line in section) + "\n"


def _header(p: Profile, info: RunInfo) -> list[str]:
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        m = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        cpu = m.group(1).strip() if m else cpu
    return [
        "# Proxy overhead: direct vs nginx vs minimal aiohttp vs the gateway\n",
        f"- Date: {info.started} (UTC)",
        f"- Command: `{info.command}`",
        f"- Machine: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}; load average "
        f"{info.load_before} before, {info.load_after} after (shared with other work)",
        f"- Tools: {', '.join(f'{k} {v}' for k, v in info.tools.items())}",
        f"- Pinning: load generator, wrk and fake upstream on core {LOAD_CORE}; "
        f"proxy under test on core {PROXY_CORE}",
        f"- Medians over {p.rounds} interleaved rounds (every target in turn, order rotating)",
        "- Gateway: `elicitation-gateway serve --workers 1 --policy policies/default.yaml "
        "--log-level warning`; `gateway+audit`: `--log-level info` (audit lines on stdout to "
        "/dev/null); `GATEWAY_KEYS` = a fixed test key\n",
    ]


def _targets(r: Results) -> list[str]:
    med = r.med
    g = med("tput", GATEWAY)
    ratio_min = per_round(r, "tput", GATEWAY, MINIMAL)
    cpu_min = per_round(r, "tput_cpu_us", GATEWAY, MINIMAL)
    gap_min = per_round(r, "seq_p50", GATEWAY, MINIMAL, diff=True) / 1000
    ratio_nginx = g / med("tput", NGINX)
    a50 = med("added_seq_p50", GATEWAY) / 1000
    a99 = med("added_seq_p99", GATEWAY) / 1000
    a1mb = max(med(f"added_sweep_p50 {k} 1 MB", GATEWAY) for k in KINDS) / 1000
    sse = med("added_sse_p99", GATEWAY) / 1000
    kib = med("idle_kib", GATEWAY)
    growth = r.values.get("workers", {})
    workers = ", ".join(f"{k}: {fmt(statistics.median(v))}/s" for k, v in growth.items())
    return [
        "## Targets (gateway, same run)\n",
        *table(["Target", "Measured", "Limit", ""], "---"),
        row("throughput gateway / minimal aiohttp proxy", f"{ratio_min:.2f}×", "≥ 0.85×",
            verdict(ratio_min >= 0.85)),
        row("CPU µs per request gateway / minimal", f"{cpu_min:.2f}×", "≤ 1.2×",
            verdict(cpu_min <= 1.2)),
        row("added p50 at one client, gateway − minimal", f"{gap_min:+.3f} ms", "≤ +0.1 ms",
            verdict(gap_min <= 0.1)),
        row("throughput gateway / nginx", f"{ratio_nginx:.2f}×", "(reported)", ""),
        row("added p50, one client, 1 KB", f"{a50:+.3f} ms", "≤ +0.35 ms", verdict(a50 <= 0.35)),
        row("added p99, one client, 1 KB", f"{a99:+.3f} ms", "≤ +1 ms", verdict(a99 <= 1.0)),
        row("added p50, 1 MB body (worse of call/list)", f"{a1mb:+.3f} ms", "≤ +2 ms",
            verdict(a1mb <= 2.0)),
        row("added p99 per SSE event", f"{sse:+.3f} ms", "≤ +1 ms", verdict(sse <= 1.0)),
        row("RSS per idle SSE stream", f"{fmt(kib, 1)} KiB", "≤ 32 KiB", verdict(kib <= 32)),
        row("throughput grows with `--workers`", workers or "not run", "grows", ""),
        *([row("throughput system allocator / pymalloc (gateway)",
               f"{g / med('tput', PYMALLOC):.2f}×", "(reported)", "")]
          if r.has("tput", PYMALLOC) else []),
        "",
    ]  # fmt: skip


def per_round(r: Results, metric: str, a: str, b: str, *, diff: bool = False) -> float:
    """Median over rounds of a / b (or a − b) taken round by round (drift cancels)."""
    pairs = zip(r.values[metric].get(a, []), r.values[metric].get(b, []), strict=False)
    vals = [x - y if diff else x / y for x, y in pairs]
    return statistics.median(vals) if vals else float("nan")


def _throughput(r: Results, p: Profile, info: RunInfo) -> list[str]:
    tool = "wrk" if "wrk" in info.tools else "bench/load.py"
    g = r.med("tput", GATEWAY)
    out = [
        f"## Throughput (`tools/call`, 1 KB result, {p.conns} connections, {tool}, "
        f"{p.tput_s:g} s per round)\n",
        *table(["Target", "req/s", "gateway / target", "proxy CPU µs/req", "proxy core busy"]),
    ]
    for name in (*ALL, *EXTRAS):
        if r.has("tput", name):
            t = r.med("tput", name)
            cpu, busy = r.med("tput_cpu_us", name), 100 * r.med("tput_busy", name)
            out.append(row(name, fmt(t), f"{g / t:.2f}×", fmt(cpu, 1), f"{fmt(busy)} %"))
    out.append(
        "\nFor `direct` the CPU columns are the fake upstream's (an aiohttp server doing almost "
        "nothing: the scale of one aiohttp hop on this machine). `proxy core busy` well under "
        "100 % while throughput is capped means the core was shared with other work."
    )
    return [*out, ""]


def _latency(r: Results, p: Profile) -> list[str]:
    med = r.med
    out = [
        "## Latency, 1 KB `tools/call` (µs)\n",
        f"One client: {p.seq_n} requests in a row per round. At 50 %: open loop at "
        f"{fmt(med('half_rate', GATEWAY))} req/s (half the gateway's throughput in that round, "
        f"the same offered rate for every target; latency from the scheduled send), "
        f"{p.rate_s:g} s.\n",
        *table(["Target", "p50", "p99", "added p50", "added p99", "p99 at 50 %", "added"]),
    ]
    metrics = ("seq_p50", "seq_p99", "added_seq_p50", "added_seq_p99", "half_p99", "added_half_p99")
    out += [row(n, *(fmt(med(m, n)) for m in metrics)) for n in ALL]
    return [*out, ""]


def _sweep(r: Results) -> list[str]:
    out = [
        "## Body-size sweep, one client (added p50 / p99 over direct, µs)\n",
        *table(["Body", "direct p50", *PROXIES]),
    ]
    for key in SWEEP_KEYS:
        cells = [
            f"{fmt(r.med(f'added_sweep_p50 {key}', n))} / {fmt(r.med(f'added_sweep_p99 {key}', n))}"
            for n in PROXIES
        ]
        out.append(row(f"`{key}`", fmt(r.med(f"sweep_p50 {key}", DIRECT)), *cells))
    return [*out, ""]


def _sse(r: Results, p: Profile) -> list[str]:
    out = [
        f"## SSE: delay per event ({p.sse_streams} streams × {p.sse_events} progress events "
        "2 ms apart per round, µs)\n",
        *table(["Target", "p50", "p99", "added p50", "added p99"]),
    ]
    for n in ALL:
        cells = [fmt(r.med(m, n)) for m in ("sse_p50", "sse_p99", "added_sse_p50", "added_sse_p99")]
        out.append(row(n, *cells))
    return [*out, ""]


def _idle(r: Results) -> list[str]:
    out = [
        "## Memory per idle GET SSE stream (RSS of the proxy process, once per run)\n",
        *table(["Target", "streams open", "RSS before (KiB)", "RSS after (KiB)", "KiB / stream"]),
    ]
    for n in PROXIES:
        cells = [fmt(r.med(m, n)) for m in ("idle_opened", "idle_rss_before", "idle_rss_after")]
        out.append(row(n, *cells, fmt(r.med("idle_kib", n), 1)))
    return [*out, ""]


def _elicitation(r: Results, p: Profile) -> list[str]:
    out = [
        f"## Elicitation-heavy traffic (2026 rounds, 8 clients, {p.elicit_s:g} s)\n",
        "Each round: `tools/call` → `InputRequiredResult` with one clean form (the gateway "
        "decides, allows and seals `requestState`) → retry with `inputResponses` (the gateway "
        "opens the seal) → result. One decision per round.\n",
        *table(["Target", "decisions (rounds) / s", "round p50 (µs)"]),
    ]
    out += [
        row(n, fmt(r.med("elicit_per_s", n)), fmt(r.med("elicit_p50", n)))
        for n in (*ALL, *EXTRAS)
        if r.has("elicit_per_s", n)
    ]
    return [*out, ""]


def _workers(r: Results) -> list[str]:
    growth = r.values.get("workers", {})
    if not growth:
        return []
    out = ["## Workers sweep (gateway throughput, unpinned)\n"]
    out += table(["Workers", "req/s", "CPU µs/req"])
    for k, v in growth.items():
        out.append(row(k, fmt(statistics.median(v)), fmt(r.med("workers_cpu_us", k), 1)))
    return [*out, ""]


def _notes(r: Results) -> list[str]:
    bad = {k: v for k, v in r.errors.items() if v}
    return [
        "## Notes\n",
        *(f"- {note}" for note in r.notes),
        f"- Failed requests: {json.dumps(bad) if bad else 'none'}",
        *(f"- Failed elicitation rounds, {why}: {n}" for why, n in r.failures.items()),
        "- Added latency = the target's percentile minus direct's in the same round; median "
        "over rounds.",
        "- SSE delay per event = receive time minus the send time stamped into the event by the "
        "upstream (CLOCK_MONOTONIC, shared by all processes).",
    ]


def chart(r: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    med = r.med
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    names = [n for n in (*ALL, *EXTRAS) if r.has("tput", n)]
    ax = axes[0][0]
    ax.bar(names, [med("tput", n) for n in names], color="#4c72b0")
    ax.set_title("Throughput, 1 KB tools/call (req/s)")
    ax.tick_params(axis="x", labelrotation=20)
    ax = axes[0][1]
    x = list(range(len(PROXIES)))
    for off, q in ((-0.2, "p50"), (0.2, "p99")):
        vals = [med(f"added_seq_{q}", n) / 1000 for n in PROXIES]
        ax.bar([i + off for i in x], vals, 0.4, label=f"added {q}")
    ax.axhline(0.35, color="grey", linestyle=":", linewidth=1)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xticks(x, PROXIES)
    ax.set_title("Added latency over direct, one client, 1 KB (ms)")
    ax.legend()
    ax = axes[1][0]
    for j, n in enumerate(PROXIES):
        vals = [med(f"added_sweep_p50 {k}", n) / 1000 for k in SWEEP_KEYS]
        ax.bar([i + (j - 1) * 0.27 for i in range(len(SWEEP_KEYS))], vals, 0.27, label=n)
    ax.set_xticks(list(range(len(SWEEP_KEYS))), SWEEP_KEYS, rotation=20)
    ax.axhline(2.0, color="grey", linestyle="--", linewidth=1)
    ax.set_title("Body-size sweep: added p50 over direct (ms)")
    ax.legend()
    ax = axes[1][1]
    ax.bar(PROXIES, [med("idle_kib", n) for n in PROXIES], color="#55a868")
    ax.axhline(32, color="grey", linestyle="--", linewidth=1)
    ax.set_title("RSS per idle SSE stream (KiB)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def tool_versions(use_wrk: bool) -> dict[str, str]:
    import aiohttp

    out = {"Python": platform.python_version(), "aiohttp": aiohttp.__version__}
    nginx = subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True, check=False)
    out["nginx"] = nginx.stderr.strip().split("/")[-1]
    if use_wrk:
        wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
        m = re.search(r"wrk (?:debian/)?([\w.+-]+)", wrk.stdout + wrk.stderr)
        out["wrk"] = m.group(1) if m else "?"
    return out


# -- the upstream-client A/B (issue 12) -------------------------------------------------------

AB_MIN = MINIMAL
AB_UV, AB_STOCK = "gateway (uvloop)", "gateway (stock loop)"
AB_ALL = (AB_MIN, AB_UV, AB_STOCK)
AB_PAIRS = ((AB_UV, AB_STOCK),)
# Variant (b) of issue 12's A/B, the relay on aiohttp's ClientSession, was measured here and
# removed with its switch once decided (docs/architecture.md, "Upstream client: A/B";
# bench/results/client-ab.md). What is left: the gateway against the minimal proxy, on uvloop
# and on the stock loop (uvloop hidden from it, as on an install without it).
AB_UPSTREAM = "nginx upstream"

NGINX_UPSTREAM = """daemon off;
master_process off;
worker_processes 1;
pid $prefix/nginx.pid;
error_log $prefix/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $prefix/client_body;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    server {
        listen 127.0.0.1:$port backlog=4096;
        location / {
            default_type application/json;
            return 200 '$body';
        }
    }
}
"""


def start_nginx_upstream(procs: Procs, body: str) -> Target:
    """nginx answering every request with ``body`` (``return 200``), as in issue 12."""
    if "$" in body or "'" in body or "\\" in body:
        raise SystemExit("the upstream answer cannot be written into an nginx `return`")
    prefix = procs.tmp / "nginx-upstream"
    prefix.mkdir()
    port = free_port()
    conf = string.Template(NGINX_UPSTREAM).substitute(prefix=prefix, port=port, body=body)
    (prefix / "nginx.conf").write_text(conf)
    argv = [nginx_binary(), "-p", str(prefix), "-e", str(prefix / "error.log")]
    proc = procs.spawn([*argv, "-c", str(prefix / "nginx.conf")], stderr=subprocess.DEVNULL)
    wait_port(port, proc, "nginx upstream")
    pin(proc.pid, {LOAD_CORE})
    return Target(AB_UPSTREAM, port, proc)


def fetch_body(url: str, req: tuple[str, dict[str, str]]) -> str:
    """One answer of the fake upstream, to be served verbatim by nginx."""
    import urllib.request

    body, headers = req
    ask = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")  # noqa: S310
    with urllib.request.urlopen(ask, timeout=10) as answer:  # noqa: S310  # loopback only
        return str(answer.read().decode("utf-8"))


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def spread(values: list[float]) -> float:
    """Run-to-run noise of one contender: (max − min) / median over rounds."""
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


@dataclass
class ABRun:
    """One client A/B run: its settings and what the machine looked like around it."""

    rounds: int
    seconds: float
    seq_n: int
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
    uptime: list[str] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)


def client_ab(args: argparse.Namespace) -> int:
    """Interleaved A/B of the gateway (on uvloop and on the stock loop) against the minimal
    aiohttp proxy, in front of nginx ``return 200``. Writes ``client-ab.md`` in ``args.out``."""
    if shutil.which("wrk") is None:
        raise SystemExit("the client A/B needs wrk: `apt-get install -y wrk`")
    raise_nofile()
    run = ABRun(args.rounds or 10, 1.0 if args.quick else 3.0, 150 if args.quick else 600)
    run.uptime.append(uptime())
    procs = Procs()
    r = Results()
    try:
        fake = start_upstream(procs)
        body = fetch_body(fake.url + "?size=1024", CALL)
        procs.stop(fake.proc)
        upstream = start_nginx_upstream(procs, body)
        targets = {AB_MIN: start_minimal(procs, upstream)}
        targets[AB_UV] = start_gateway(procs, upstream, name=AB_UV)
        shim = procs.tmp / "no-uvloop"
        shim.mkdir()
        (shim / "uvloop.py").write_text('raise ImportError("hidden by bench/run.py")\n')
        env = {"PYTHONPATH": str(shim)}
        targets[AB_STOCK] = start_gateway(procs, upstream, name=AB_STOCK, env=env)
        load = LoadClient(procs)
        lua = wrk_lua(procs.tmp / "call.lua", *CALL)
        for k in range(run.rounds):
            ab_round(r, run, k, targets=targets, upstream=upstream, load=load, lua=lua)
    finally:
        procs.close()
    run.uptime.append(uptime())
    md = ab_report(r, run)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "client-ab.md").write_text(md, encoding="utf-8")
    (args.out / "client-ab.json").write_text(
        json.dumps({m: dict(v) for m, v in r.values.items()}, indent=1) + "\n", encoding="utf-8"
    )
    print(md)
    return 0


def ab_round(
    r: Results,
    run: ABRun,
    k: int,
    *,
    targets: dict[str, Target],
    upstream: Target,
    load: LoadClient,
    lua: Path,
) -> None:
    """Round ``k``: throughput and CPU of each contender in turn, then one-client latency."""
    order = list(AB_ALL[k % len(AB_ALL) :] + AB_ALL[: k % len(AB_ALL)])
    for name in order:
        pids = targets[name].pids()
        cpu0, w0 = cpu_seconds(pids), time.perf_counter()
        rps, requests, errors = run_wrk(targets[name].url, lua, 32, run.seconds)
        cpu, wall = cpu_seconds(pids) - cpu0, time.perf_counter() - w0
        r.add("tput", name, rps)
        r.add("cpu_us", name, cpu / max(requests, 1) * 1e6)
        r.add("busy", name, cpu / wall)
        r.errors[f"tput/{name}"] += errors
    body, headers = CALL
    for name in [AB_UPSTREAM, *order]:
        t = upstream if name == AB_UPSTREAM else targets[name]
        ans = load.ask(op="seq", url=t.url, body=body, headers=headers, n=run.seq_n)
        r.add("p50", name, ans["lat"]["p50"])
        r.errors[f"seq/{name}"] += ans["errors"]
    base = r.values["p50"][AB_UPSTREAM][-1]
    for name in AB_ALL:
        r.add("added_p50", name, r.values["p50"][name][-1] - base)
    print(f"round {k + 1}/{run.rounds} at {time.monotonic() - run.t0:.0f}s", file=sys.stderr)


def _ratio(r: Results, metric: str, a: str, b: str) -> list[float]:
    """Per-round ratios a / b (same round, so drift cancels)."""
    return [x / y for x, y in zip(r.values[metric][a], r.values[metric][b], strict=True)]


def cv(values: list[float]) -> float:
    """Relative standard deviation (stdev / mean) of per-round values."""
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0


def beyond_noise(ratios: list[float]) -> bool:
    """A per-round ratio on the same side of 1 in every round: the difference is larger than
    the round-to-round noise of the comparison itself."""
    return min(ratios) > 1 or max(ratios) < 1


def ab_report(r: Results, run: ABRun) -> str:
    med = r.med
    lines = [
        "# Gateway vs the minimal aiohttp proxy (issue 12), on uvloop and on the stock loop\n",
        f"- Date: {run.started} (UTC); command `.venv/bin/python bench/run.py --client-ab`",
        f"- `uptime` before: `{run.uptime[0]}`",
        f"- `uptime` after: `{run.uptime[-1]}`",
        "- Upstream: nginx `return 200` with the fake upstream's 1 KB `tools/call` answer, "
        f"pinned to core {LOAD_CORE} with wrk and the latency client; contenders on core "
        f"{PROXY_CORE}, one process each, all running for the whole run",
        f"- {run.rounds} interleaved rounds; per round each contender in turn (order rotating): "
        f"wrk -t1 -c32 for {run.seconds:g} s (throughput, CPU µs per request from /proc), then "
        f"{run.seq_n} requests in a row from one client (p50); medians over rounds",
        f"- Wall time {time.monotonic() - run.t0:.0f} s\n",
        "| Contender | req/s | noise (CV) | CPU µs/req | noise (CV) | p50 µs | added p50 µs "
        "| req/s ÷ minimal | CPU ÷ minimal | added p50 − minimal's (ms) | core busy |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in AB_ALL:
        gap = statistics.median(
            [
                x - y
                for x, y in zip(
                    r.values["added_p50"][n], r.values["added_p50"][AB_MIN], strict=True
                )
            ]
        )
        lines.append(
            row(
                n,
                fmt(med("tput", n)),
                f"{100 * cv(r.values['tput'][n]):.0f} %",
                fmt(med("cpu_us", n), 1),
                f"{100 * cv(r.values['cpu_us'][n]):.0f} %",
                fmt(med("p50", n)),
                fmt(med("added_p50", n)),
                f"{statistics.median(_ratio(r, 'tput', n, AB_MIN)):.3f}×",
                f"{statistics.median(_ratio(r, 'cpu_us', n, AB_MIN)):.3f}×",
                f"{gap / 1000:+.3f}",
                f"{100 * med('busy', n):.0f} %",
            )
        )
    lines += [
        "",
        "Pairwise, per-round ratios (median and range over rounds; req/s > 1 = the first is "
        "faster, CPU < 1 = the first is cheaper). *Beyond noise* = the ratio is on the same "
        "side of 1 in every round.\n",
        "| Pair | req/s ratio | range | CPU µs/req ratio | range | beyond noise |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for a, b in AB_PAIRS:
        t, c = _ratio(r, "tput", a, b), _ratio(r, "cpu_us", a, b)
        verdicts = [f"{what}: {'yes' if beyond_noise(x) else 'no'}" for what, x in
                    (("req/s", t), ("CPU", c))]  # fmt: skip
        lines.append(
            row(
                f"{a} ÷ {b}",
                f"{statistics.median(t):.3f}",
                f"{min(t):.3f}–{max(t):.3f}",
                f"{statistics.median(c):.3f}",
                f"{min(c):.3f}–{max(c):.3f}",
                ", ".join(verdicts),
            )
        )
    bad = {k: v for k, v in r.errors.items() if v}
    lines += [
        "",
        "- noise (CV) = standard deviation / mean of a contender's per-round values (the "
        "machine is shared: other work moves every contender; interleaving moves them alike, "
        "which is why the decision reads the per-round ratios). core busy = the contender's "
        "CPU time / wall time during its wrk run (well under 100 % = the core was shared).",
        f"- Failed requests: {json.dumps(bad) if bad else 'none'}",
        "- Raw per-round values: client-ab.json beside this file.",
    ]
    return "\n".join(lines) + "\n"


def raise_nofile() -> None:
    """Raise the soft open-files limit to the hard one (inherited by every child)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Side-by-side proxy benchmark (writes bench/results/proxy.md and .png)"
    )
    parser.add_argument("--quick", action="store_true", help="short run (≤ 2 min), smoke tests")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--workers", default="1,2", help="gateway --workers sweep (default 1,2)")
    parser.add_argument("--no-wrk", action="store_true", help="throughput with bench/load.py")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument(
        "--client-ab",
        action="store_true",
        help="only the gateway vs minimal proxy A/B of issue 12, uvloop and stock loop "
        "(writes client-ab.md)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.client_ab:
        return client_ab(args)
    p = QUICK if args.quick else DEFAULT
    if args.rounds:
        p = dataclasses.replace(p, rounds=args.rounds)
    nginx_binary()  # fail early with the install hint
    if len(os.sched_getaffinity(0)) < 2:
        print("warning: fewer than 2 usable cores; load and proxy share one", file=sys.stderr)
    raise_nofile()
    use_wrk = not args.no_wrk and shutil.which("wrk") is not None
    shown = argv if argv is not None else sys.argv[1:]
    command = " ".join([".venv/bin/python", "bench/run.py", *shown])
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    procs = Procs()
    t0 = time.monotonic()
    try:
        upstream = start_upstream(procs)
        targets = {DIRECT: upstream}
        targets[NGINX] = start_nginx(procs, upstream)
        targets[MINIMAL] = start_minimal(procs, upstream)
        targets[GATEWAY] = start_gateway(procs, upstream)
        targets[AUDIT] = start_gateway(procs, upstream, name=AUDIT, log_level="info")
        targets[PYMALLOC] = start_gateway(
            procs, upstream, name=PYMALLOC, env={"PYTHONMALLOC": "pymalloc"}
        )
        lua = wrk_lua(procs.tmp / "call.lua", *CALL) if use_wrk else None
        bench = Bench(procs, LoadClient(procs), targets, p, lua)
        if not use_wrk:
            bench.r.notes.append("Throughput measured with bench/load.py (wrk not installed).")
        for k in range(p.rounds):
            bench.round(k)
            print(f"round {k + 1}/{p.rounds} at {time.monotonic() - t0:.0f}s", file=sys.stderr)
        with phase("idle streams"):
            bench.idle_streams()
        for name in (GATEWAY, *EXTRAS):
            procs.stop(targets[name].proc)
        with phase("workers sweep"):
            bench.workers_sweep([int(x) for x in args.workers.split(",") if x])
    finally:
        procs.close()
    r = bench.r
    r.notes.append(f"Wall time {time.monotonic() - t0:.0f} s.")
    derive(r)
    load_after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    info = RunInfo(command, started, load_before, load_after, tool_versions(use_wrk))
    md = report(r, p, info)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "proxy.md").write_text(md, encoding="utf-8")
    chart(r, args.out / "proxy.png")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
