"""The long differential run (``make fuzz``): many hostile responses through the real gateway to
the SDK readers, in parallel worker processes, counting inputs tried and violations.

    python -m tests.differential.fuzz --examples 1000000 --workers 2 --out fuzz-out

Each worker runs Hypothesis (generation only, no shrinking, its own seed) in batches over one
gateway + victims; a violation does not stop the run: its report, with the exact raw response
bytes, is appended to ``<out>/violations-<worker>.txt`` and the raw bytes are written to
``<out>/violation-<worker>-<n>.bin`` (replay one with ``--replay FILE``). Progress lines go to
stderr; the summary line is the last line on stdout. Exit status 1 if any violation was found.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.differential.rig import Outcome, Victims, victims
from tests.differential.strategies import Plan, plans

BATCH = 2000


@dataclass(frozen=True)
class Job:
    index: int
    examples: int
    out: str
    ts_every: int
    client_every: int
    base_seed: int
    max_seconds: float


def _worker(job: Job) -> dict[str, float]:
    index, examples, out = job.index, job.examples, job.out
    ts_every, client_every, base_seed, max_seconds = (
        job.ts_every,
        job.client_every,
        job.base_seed,
        job.max_seconds,
    )
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the SDK's own complaints are outcomes
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / f"violations-{index}.txt"
    counts: dict[str, float] = {"tried": 0, "violations": 0, "timeouts": 0, "worker": index}
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    started = time.monotonic()
    try:
        v: Victims = loop.run_until_complete(
            stack.enter_async_context(victims(ts=ts_every > 0, full_client=client_every > 0))
        )
        node = v.ts
        batch_no = 0
        while counts["tried"] < examples and time.monotonic() - started < max_seconds:
            size = int(min(BATCH, examples - counts["tried"]))

            @seed(base_seed * 1_000_003 + index * 10_007 + batch_no)
            @settings(
                max_examples=size,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(plan=plans(), pick=st.integers(0, 1_000_000))
            def one(plan: Plan, pick: int) -> None:
                v.ts = node if ts_every > 0 and pick % ts_every == 0 else None
                # a server request in a JSON body never completes a whole client's call
                never_completes = (plan.carrier, plan.body_kind) == ("server-request", "json")
                full = client_every > 0 and pick % client_every == 0 and not never_completes
                get = plan.carrier == "server-request" and pick % 3 == 1
                outcome: Outcome = loop.run_until_complete(
                    v.run(plan, full_client=full and not get, get=get)
                )
                counts["tried"] += 1
                slow = [r.victim for r in outcome.readings if r.timed_out]
                if slow and counts["timeouts"] < 20:
                    with (out_dir / f"timeouts-{index}.txt").open("a") as fh:
                        fh.write(f"{slow} plan={plan!r}\n")
                counts["timeouts"] += len(slow)
                if outcome.problems:
                    n = int(counts["violations"])
                    counts["violations"] += 1
                    (out_dir / f"violation-{index}-{n}.bin").write_bytes(outcome.raw)
                    with report.open("a") as fh:
                        fh.write(f"=== violation {index}-{n} plan={plan!r}\n{outcome.report()}\n\n")

            one()
            v.ts = node
            batch_no += 1
            rate = counts["tried"] / max(time.monotonic() - started, 1e-9)
            print(
                f"worker {index}: tried {counts['tried']}/{examples}, "
                f"violations {counts['violations']}, {rate:.0f}/s",
                file=sys.stderr,
                flush=True,
            )
    finally:
        loop.run_until_complete(stack.aclose())
        loop.close()
    counts["seconds"] = round(time.monotonic() - started, 1)
    return counts


def _replay(path: str) -> int:
    """Send one saved raw response (and the answers to the next requests saved with it) through
    the gateway to the transport victims, in both eras; print what each parsed and whether the
    invariant held. Exit status 1 if it did not."""
    from tests.differential.invariant import violations
    from tests.differential.rig import NEXT_RESPONSE, REQUEST_ID

    responses = Path(path).read_bytes().split(NEXT_RESPONSE)

    async def run() -> tuple[list[str], int]:
        lines: list[str] = []
        broken = 0
        async with victims() as v:
            for era in ("handshake", "modern"):
                for reader in (v.python.read, v.ts.read if v.ts else None):
                    if reader is None:
                        continue
                    v.gateway.reset()
                    v.gateway.upstream.script(*responses)
                    got = await reader(era, REQUEST_ID)
                    for r in got if isinstance(got, list) else [got]:
                        problems = violations(
                            r.victim,
                            r.elicitations,
                            v.gateway.audits,
                            v.gateway.error_lines(),
                            v.gateway.policy,
                        )
                        broken += bool(problems)
                        lines.append(
                            f"{era} {r.victim}: {len(r.elicitations)} elicitation(s) parsed; "
                            + ("; ".join(problems) if problems else "invariant holds")
                        )
        return lines, broken

    lines, broken = asyncio.run(run())
    print("\n".join(lines))
    return 1 if broken else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1_000_000, help="inputs in total")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="fuzz-out")
    parser.add_argument("--ts-every", type=int, default=1, help="TS victim on 1 in N (0: never)")
    parser.add_argument("--client-every", type=int, default=50, help="whole mcp.Client on 1 in N")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--max-seconds", type=float, default=float("inf"), help="stop after this")
    parser.add_argument("--replay", default=None, help="replay one saved raw response")
    args = parser.parse_args(argv)
    if args.replay:
        return _replay(args.replay)
    share = [
        args.examples // args.workers + (i < args.examples % args.workers)
        for i in range(args.workers)
    ]
    started = time.monotonic()
    jobs = [
        Job(i, n, args.out, args.ts_every, args.client_every, args.seed, args.max_seconds)
        for i, n in enumerate(share)
    ]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        results = pool.map(_worker, jobs)
    summary = {
        "tried": sum(r["tried"] for r in results),
        "violations": sum(r["violations"] for r in results),
        "victim_timeouts": sum(r["timeouts"] for r in results),
        "workers": args.workers,
        "seed": args.seed,
        "seconds": round(time.monotonic() - started, 1),
        "out": args.out,
    }
    print(json.dumps(summary), flush=True)
    return 1 if summary["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
