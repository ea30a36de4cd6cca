"""Same input, same verdict (issue 10): no clock takes part in a decision, so a replica with its
CPU saturated decides exactly like an idle one. Runs the labelled corpora once idle and once with
every core busy in other processes, and compares every verdict and finding."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gateway.cli.check import parse_capabilities
from gateway.detect.findings import Reason
from gateway.policy.engine import evaluate
from gateway.policy.loader import Policy, load_policy

ROOT = Path(__file__).resolve().parents[2]
CORPORA = [
    ROOT / "tests" / "corpus" / "elicitations.jsonl",
    *sorted((ROOT / "tests" / "corpus" / "dev").glob("*.jsonl")),
]


def _spin(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


@contextmanager
def _cpu_saturated() -> Iterator[None]:
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    workers = [ctx.Process(target=_spin, args=(stop,)) for _ in range(2 * (os.cpu_count() or 2))]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join(10)
            if worker.is_alive():
                worker.kill()


def _verdicts(policy: Policy) -> list[tuple[str, str, tuple[Any, ...]]]:
    out = []
    for path in CORPORA:
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            modes = parse_capabilities(case.get("capabilities") or "form,url")
            d = evaluate(case["params"], modes=modes, server=None, policy=policy)
            out.append((case["id"], d.action.value, d.findings))
    return out


def test_verdicts_are_identical_with_the_cpu_saturated() -> None:
    policy = load_policy(ROOT / "policies" / "default.yaml")
    idle = _verdicts(policy)
    with _cpu_saturated():
        busy = _verdicts(policy)
    assert len(idle) > 3000
    assert busy == idle
    internal = [
        i for i, _, findings in idle if any(f.reason is Reason.INTERNAL_ERROR for f in findings)
    ]
    assert internal == []
