"""Benchmark of the decision engine (not a test): decisions/s and p50/p99 latency.

Run: ``.venv/bin/python bench/bench_engine.py [--rounds N]``. Prints a table and writes it to
bench/results/engine.md. Cases: typical requests (≤ 5 KB: forms and URLs from the corpus, allow
and block) and worst cases (≤ 64 KB: the largest forms and URLs the default limits accept, full
of text that exercises every detector), measured twice: repeated as they are, and with every text
made unique per request (nothing the detectors cache can help). Startup = a fresh interpreter
that imports the engine, loads policies/default.yaml and makes its first decision. Targets:
p99 ≤ 2 ms typical, ≤ 20 ms worst case, startup ≤ 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.cli.check import parse_capabilities  # noqa: E402
from gateway.policy.engine import evaluate  # noqa: E402
from gateway.policy.envelope import serialized_size  # noqa: E402
from gateway.policy.loader import load_policy  # noqa: E402

POLICY = ROOT / "policies" / "default.yaml"
CORPUS = ROOT / "tests" / "corpus" / "elicitations.jsonl"
RESULTS = ROOT / "bench" / "results" / "engine.md"
BOTH = frozenset({"form", "url"})

Case = tuple[Any, frozenset[str]]


def typical_cases() -> list[Case]:
    out: list[Case] = []
    with CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            case = json.loads(line)
            params = case["params"]
            if serialized_size(params) <= 5_000:
                out.append((params, parse_capabilities(case.get("capabilities", "form,url"))))
    return out


def _filler(n: int) -> str:
    words = (
        "please review the deployment plan for the staging cluster and confirm the release "
        "notes version 2.4.1 at 10.30 e.g. CONTRIBUTING.md before we continue "
    )
    return (words * (n // len(words) + 1))[:n]


def worst_cases() -> list[Case]:
    """The largest requests the default limits accept (just under 64 KB), text everywhere."""
    props = {
        f"field_{i}": {
            "type": "string",
            "title": f"Project setting number {i}",
            "description": _filler(1_000),
            "default": _filler(60),
        }
        for i in range(49)
    }
    big_form = {
        "message": _filler(7_000),
        "requestedSchema": {"type": "object", "properties": props},
    }
    enum_form = {
        "message": _filler(8_000),
        "requestedSchema": {
            "type": "object",
            "properties": {
                f"e{i}": {
                    "type": "string",
                    "enum": [f"option {j} {_filler(20)}" for j in range(300)],
                }
                for i in range(5)
            },
        },
    }
    query = "&".join(f"p{i}={'v' * 40}" for i in range(60))
    big_url = {
        "mode": "url",
        "message": _filler(8_000),
        "url": "https://example.com/" + "docs/" * 20 + "?" + query,
        "elicitationId": "x",
    }
    phishy = {
        "message": ("Verify at https://раураl.com/login now; " * 180)[:8_000],
        "requestedSchema": {
            "type": "object",
            "properties": {
                f"p{i}": {
                    "type": "string",
                    "title": "ｐａｓｓ\u200bword",
                    "description": _filler(1_000),
                }
                for i in range(40)
            },
        },
    }
    cases: list[Case] = [(big_form, BOTH), (enum_form, BOTH), (big_url, BOTH), (phishy, BOTH)]
    for params, _ in cases:
        size = serialized_size(params)
        assert size <= 65_536, size
    return cases


_TEXT_KEYS = frozenset({"message", "title", "description", "default", "enum"})


def _salted(node: Any, salt: str, text: bool = False) -> Any:
    """A copy of ``node`` with `` salt`` appended to every user-visible text (not the URL)."""
    if isinstance(node, dict):
        return {k: _salted(v, salt, k in _TEXT_KEYS) for k, v in node.items()}
    if isinstance(node, list):
        return [_salted(v, salt, text) for v in node]
    if isinstance(node, str) and text:
        return node[: -len(salt) - 1] + " " + salt
    return node


def fresh_worst_cases(rounds: int) -> list[list[Case]]:
    """Per round, the worst cases with every text made unique (same size): nothing cached helps."""
    base = worst_cases()
    return [[(_salted(p, f"r{n}x"), m) for p, m in base] for n in range(rounds)]


def measure_fresh(rounds: list[list[Case]]) -> tuple[list[float], float]:
    """Like ``measure``, but every decision sees texts no earlier decision saw."""
    policy = load_policy(POLICY)
    for params, modes in worst_cases():
        evaluate(params, modes=modes, server=None, policy=policy)
    samples: list[float] = []
    per_case: list[list[float]] = [[] for _ in rounds[0]]
    for cases in rounds:
        for i, (params, modes) in enumerate(cases):
            start = time.perf_counter()
            evaluate(params, modes=modes, server=None, policy=policy)
            elapsed = (time.perf_counter() - start) * 1000.0
            samples.append(elapsed)
            per_case[i].append(elapsed)
    return samples, max(statistics.median(c) for c in per_case)


def measure(cases: list[Case], rounds: int) -> tuple[list[float], float]:
    """All samples, and the slowest per-case median (robust to scheduling noise)."""
    policy = load_policy(POLICY)
    for params, modes in cases:  # warm-up: lazy imports, caches
        evaluate(params, modes=modes, server=None, policy=policy)
    samples: list[float] = []
    per_case: list[list[float]] = [[] for _ in cases]
    for _ in range(rounds):
        for i, (params, modes) in enumerate(cases):
            start = time.perf_counter()
            evaluate(params, modes=modes, server=None, policy=policy)
            elapsed = (time.perf_counter() - start) * 1000.0
            samples.append(elapsed)
            per_case[i].append(elapsed)
    return samples, max(statistics.median(c) for c in per_case)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


STARTUP = """
import time; t0 = time.perf_counter()
from gateway.policy.engine import evaluate
from gateway.policy.loader import load_policy
p = load_policy({policy!r})
evaluate({{"message": "Your name?", "requestedSchema": {{"type": "object",
          "properties": {{"name": {{"type": "string"}}}}}}}},
         modes=frozenset({{"form", "url"}}), server=None, policy=p)
evaluate({{"mode": "url", "message": "Connect", "url": "https://example.com/connect"}},
         modes=frozenset({{"form", "url"}}), server=None, policy=p)
print((time.perf_counter() - t0) * 1000, flush=True)
"""


def startup_ms(runs: int = 3) -> tuple[float, float, float]:
    """Best of ``runs`` fresh processes: (import + load + first decisions measured inside the
    process, wall time from spawning the interpreter until it has decided — ready to serve —,
    wall time until the process has also exited). The last one adds the interpreter's teardown
    (freeing the lexicon's objects), which a serving process never pays; reported, not judged."""
    inner, ready, whole = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        with subprocess.Popen(
            [sys.executable, "-c", STARTUP.format(policy=str(POLICY))],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        ) as proc:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            ready.append((time.perf_counter() - start) * 1000.0)
            proc.stdout.read()
            if proc.wait() != 0 or not line.strip():
                raise RuntimeError("the start-up probe failed")
        whole.append((time.perf_counter() - start) * 1000.0)
        inner.append(float(line.strip()))
    return min(inner), min(ready), min(whole)


def row(name: str, measured: tuple[list[float], float], target: float, size: str) -> str:
    samples, slowest = measured
    p99 = pct(samples, 0.99)
    rate = 1000.0 / statistics.mean(samples)
    ok = "yes" if p99 <= target else "**no**"
    return (
        f"| {name} | {size} | {len(samples)} | {rate:,.0f} | {pct(samples, 0.5):.3f} | "
        f"{p99:.3f} | {max(samples):.3f} | {slowest:.3f} | ≤ {target:g} | {ok} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    typical, worst = typical_cases(), worst_cases()
    t = measure(typical, args.rounds)
    w = measure(worst, max(5, args.rounds * 2))
    fresh = measure_fresh(fresh_worst_cases(max(5, args.rounds * 2)))
    inner, ready, whole = startup_ms()
    head = [
        "| Cases | Size | Decisions | Decisions/s | p50 ms | p99 ms | max ms "
        "| slowest case (median) ms | Target p99 ms | Met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines = [
        "# Engine benchmark",
        "",
        f"`bench/bench_engine.py --rounds {args.rounds}` on {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} when started, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Policy: policies/default.yaml. "
        "Decisions/s is single-threaded (1 / mean latency). With other processes competing for "
        "the CPUs, p99/max mostly measure scheduling noise; the per-case median is the "
        "detectors' own cost. The worst cases repeat the same requests (as a server resending "
        "its forms does: short texts hit the detectors' caches); the 'never seen' row makes "
        "every text of every request unique, so no cache helps.",
        "",
        *head,
        row(f"typical ({len(typical)} corpus requests)", t, 2.0, "≤ 5 KB"),
        row(f"worst case ({len(worst)} requests)", w, 20.0, "≤ 64 KB"),
        row(f"worst case, texts never seen before ({len(worst)} requests)", fresh, 20.0, "≤ 64 KB"),
        "",
        f"Startup (fresh process: import engine + detectors, load default policy, first two "
        f"decisions): {inner:.0f} ms inside the process; {ready:.0f} ms wall time from spawning "
        f"the interpreter until it has decided (target ≤ 1000 ms): "
        f"{'met' if ready <= 1000 else '**not met**'}. With the interpreter's exit (freeing "
        f"every object; a serving process never pays it): {whole:.0f} ms.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
