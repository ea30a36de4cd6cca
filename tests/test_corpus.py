"""The labelled corpus (tests/corpus/) through the real engine and the default policy.

Prints, whatever pytest's capture setting:
``corpus: recall 97.3% (146/150), false-block 0.7% (1/150), warn agreement …`` and fails when
recall < 95 % or false-block > 2 %. Misses are listed so detectors can be fixed (never the labels).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.check import parse_capabilities
from gateway.detect.findings import Action, Decision
from gateway.policy.engine import evaluate
from gateway.policy.loader import Policy, load_policy

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "elicitations.jsonl"
MIN_RECALL = 0.95
MAX_FALSE_BLOCK = 0.02


def _cases() -> list[dict[str, Any]]:
    with CORPUS.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def policy() -> Policy:
    """The default policy as shipped (no clock takes part in a decision)."""
    return load_policy(ROOT / "policies" / "default.yaml")


def _decide(case: dict[str, Any], policy: Policy) -> Decision:
    modes = parse_capabilities(case.get("capabilities", "form,url"))
    return evaluate(case["params"], modes=modes, server=None, policy=policy)


def test_corpus_shape() -> None:
    cases = _cases()
    labels = Counter(c["label"] for c in cases)
    assert set(labels) <= {"allow", "warn", "block"}
    assert len(cases) >= 400
    assert labels["block"] >= 150
    assert labels["allow"] >= 150
    assert len({c["id"] for c in cases}) == len(cases)
    langs = {c["source"].rsplit("language ", 1)[1] for c in cases if "language " in c["source"]}
    assert len(langs) >= 10
    assert all(c["source"] and c["category"] for c in cases)


def test_corpus_file_is_up_to_date() -> None:
    """elicitations.jsonl is exactly what build.py generates (edit build.py, then run it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("corpus_build", CORPUS.with_name("build.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == CORPUS.read_text(encoding="utf-8")


def _pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.1f}% ({n}/{d})" if d else "n/a (0/0)"


def test_corpus_recall_and_false_blocks(policy: Policy, capsys: pytest.CaptureFixture[str]) -> None:
    tally: Counter[tuple[str, str]] = Counter()
    misses: list[str] = []
    for case in _cases():
        decision = _decide(case, policy)
        got = decision.action.value
        tally[(case["label"], got)] += 1
        if got != case["label"]:
            where = case["source"].rsplit("; ", 1)[-1][:40]
            misses.append(
                f"  {case['id']} ({where}): expected {case['label']}, got {got} {decision.reasons}"
            )
    blocks = sum(n for (lab, _), n in tally.items() if lab == "block")
    allows = sum(n for (lab, _), n in tally.items() if lab == "allow")
    warns = sum(n for (lab, _), n in tally.items() if lab == "warn")
    caught = tally[("block", "block")]
    false_blocks = tally[("allow", "block")]
    recall = caught / blocks
    false_block = false_blocks / allows
    summary = (
        f"corpus: recall {_pct(caught, blocks)}, false-block {_pct(false_blocks, allows)}, "
        f"warn agreement {_pct(tally[('warn', 'warn')], warns)}, "
        f"allow agreement {_pct(tally[('allow', 'allow')], allows)}"
    )
    with capsys.disabled():
        print("\n" + summary)
        if misses:
            print(f"corpus disagreements ({len(misses)}):")
            print("\n".join(misses))
    assert recall >= MIN_RECALL, summary
    assert false_block <= MAX_FALSE_BLOCK, summary


def test_corpus_decisions_never_internal_errors(policy: Policy) -> None:
    errors = [
        c["id"]
        for c in _cases()
        if any(f.reason.value == "internal-error" for f in _decide(c, policy).findings)
    ]
    assert errors == []


def test_corpus_findings_carry_no_values(policy: Policy) -> None:
    for case in _cases():
        decision = _decide(case, policy)
        if decision.action is Action.ALLOW:
            continue
        text = json.dumps([(f.path, f.detail) for f in decision.findings], ensure_ascii=False)
        params = case["params"]
        if isinstance(params, dict):
            for key in ("url", "message"):
                value = params.get(key)
                if isinstance(value, str) and len(value) > 20:
                    assert value not in text, case["id"]
