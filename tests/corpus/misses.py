"""List the cases of a dev file on which the engine and the label disagree (rule development).

    .venv/bin/python -m tests.corpus.misses tests/corpus/dev/dev.jsonl [--only block|allow|warn]

Refuses the frozen test split: its cases are never read while rules are developed
(LABELLING.md); only `tests/test_corpus_splits.py`'s aggregate figures are looked at.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from gateway.cli.check import parse_capabilities
from gateway.policy.engine import evaluate
from gateway.policy.loader import load_policy

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "tests" / "corpus" / "frozen"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--only", choices=("block", "allow", "warn"), help="label to show")
    parser.add_argument("--quiet", action="store_true", help="counts only")
    args = parser.parse_args(argv)
    for path in args.files:
        if FROZEN in path.resolve().parents:
            print(f"{path}: the frozen test split is not read case by case", file=sys.stderr)
            return 2
    policy = load_policy(ROOT / "policies" / "default.yaml")
    pairs: Counter[tuple[str, str]] = Counter()
    for path in args.files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            modes = parse_capabilities(case.get("capabilities") or "form,url")
            decision = evaluate(
                case["params"], modes=modes, server=None, policy=policy, era=case.get("era")
            )
            got = decision.action.value
            pairs[(case["label"], got)] += 1
            if got != case["label"] and args.only in (None, case["label"]) and not args.quiet:
                reasons = ",".join(sorted(str(r) for r in decision.reasons))
                print(
                    f"{case['id']} {case['language']} {case['concept']} label={case['label']} "
                    f"got={got} [{reasons}]\n    {json.dumps(case['params'], ensure_ascii=False)[:600]}"
                )
    for (label, got), n in sorted(pairs.items()):
        print(f"label {label:5} -> {got:5}: {n}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
