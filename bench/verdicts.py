"""Verdicts of the default policy on every corpus case, to compare two versions of the engine.

Not a test: a check for changes that must not change any decision (e.g. how the detectors build
their indexes). ``write OUT`` records, per case (file and line number, never the case's text),
the action, the reason codes and every finding's reason, path, severity, detail and evidence;
``compare OUT`` evaluates again and reports every case whose record differs.

Run: ``.venv/bin/python bench/verdicts.py write /tmp/before.jsonl`` on one version, then
``.venv/bin/python bench/verdicts.py compare /tmp/before.jsonl`` on the other. Parameters,
capabilities and era as ``tests/test_corpus_splits.py`` passes them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.cli.check import parse_capabilities  # noqa: E402
from gateway.policy.engine import evaluate  # noqa: E402
from gateway.policy.loader import load_policy  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
POLICY = ROOT / "policies" / "default.yaml"


def records() -> Iterator[dict[str, Any]]:
    """One record per case of every ``tests/corpus/**/*.jsonl`` file, in a stable order."""
    policy = load_policy(POLICY)
    for path in sorted(CORPUS.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                case = json.loads(line)
                modes = parse_capabilities(case.get("capabilities") or "form,url")
                decision = evaluate(
                    case["params"], modes=modes, server=None, policy=policy, era=case.get("era")
                )
                yield {
                    "case": f"{path.relative_to(CORPUS)}:{number}",
                    "action": decision.action.value,
                    "reasons": decision.reasons,
                    "findings": [
                        [
                            f.reason.value,
                            f.path,
                            f.severity.value,
                            f.detail,
                            None if f.evidence is None else f.evidence.describe(),
                        ]
                        for f in decision.findings
                    ],
                }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("write", "compare"))
    parser.add_argument("file", type=Path)
    args = parser.parse_args()
    if args.command == "write":
        with args.file.open("w", encoding="utf-8") as out:
            count = 0
            for record in records():
                out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
                count += 1
        print(f"{count} verdicts written to {args.file}")
        return 0
    before = {
        r["case"]: r
        for r in (json.loads(ln) for ln in args.file.read_text(encoding="utf-8").splitlines())
    }
    compared, differ = 0, []
    seen = set()
    for record in records():
        seen.add(record["case"])
        compared += 1
        if before.get(record["case"]) != record:
            differ.append(record["case"])
    missing = sorted(set(before) - seen)
    print(f"{compared} verdicts compared: {len(differ)} differ, {len(missing)} missing")
    for case in differ[:50] + missing[:50]:
        print(f"  {case}")  # where, never what: the case's text stays in its file
    return 1 if differ or missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
