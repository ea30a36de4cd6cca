"""The independent corpus splits (tests/corpus/frozen/ and tests/corpus/dev/, LABELLING.md)
through the real engine and the default policy: detection measured like an outsider.

Both splits were written by helpers who never saw the detectors, the lexicon, the older corpus or
the engine's verdicts. The **test split is frozen**: only its aggregate figures are looked at
(never its cases while developing rules), and its labels are never edited to fit the engine.
Rules are developed against the dev split.

Prints, whatever pytest's capture setting, block recall, false blocks (allow-labelled cases
decided block; ~40 % of each split are hard benign cases), warn agreement, per split, per
language and per concept. The test asserts the figures achieved when they were last recorded
(``FLOORS``): a regression fails; an improvement is recorded by raising the floors. Issue 10's
targets (recall ≥ 98 %, false blocks ≤ 1 %, warn agreement ≥ 90 %, every language ≥ 95 %) are
printed next to them.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.check import parse_capabilities
from gateway.policy.engine import evaluate
from gateway.policy.loader import Policy, load_policy

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
SPLITS = {
    "test": sorted((CORPUS / "frozen").glob("*.jsonl")),
    "dev": sorted((CORPUS / "dev").glob("*.jsonl")),
}
# (recall floor, false-block ceiling, warn-agreement floor): the figures last achieved, so that a
# regression fails. History on the test split: 47.7 % / 18.6 % / 35.9 % before issue 10's
# detector work (2026-12-01), 85.9 % / 6.0 % / 90.6 % after its first round the same day (rules
# developed on the dev split only, which reached 98.6 % / 0.0 % / 99.6 %), 90.4 % / 3.8 % /
# 94.8 % after the second round (session 4: three new dev files written without sight of the
# rules, dev2-forms, dev2-urls and dev3-about; the dev split with them: 97.8 % / 1.3 % / 97.4 %),
# 94.2 % / 2.3 % / 95.1 % after the third round (session 5: six more dev files written without
# sight of the rules, dev4-* and dev5-*, first measured before any rule was fitted to them, then
# used for rule development; the dev split with all eleven files: 96.5 % / 2.0 % / 94.9 %),
# 95.6 % / 2.3 % / 95.1 % after the fourth round (session 6: four more dev files written without
# sight of the rules, dev6-* and dev7-honest-urls, first measured before any fitting; the dev
# split with all fifteen files: 96.1 % / 1.4 % / 93.5 %).
FLOORS = {"test": (0.955, 0.024, 0.95), "dev": (0.955, 0.016, 0.93)}
TARGETS = (0.98, 0.01, 0.90)
# Writers used different tags for one language; figures are per language.
_SAME_LANGUAGE = {"zh-Hans": "zh", "zh-Hant": "zh", "fil": "tl", "nb": "no", "nn": "no"}


def _language(tag: str) -> str:
    if tag in _SAME_LANGUAGE:
        return _SAME_LANGUAGE[tag]
    primary, _, rest = tag.partition("-")
    # Romanised text (hi-Latn, ru-Latn, ...) is its own reading problem: kept apart.
    return tag if rest.endswith("Latn") else primary


def _cases(split: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in SPLITS[split]:
        with path.open(encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


@pytest.fixture(scope="module")
def policy() -> Policy:
    """The default policy as shipped (no clock takes part in a decision)."""
    return load_policy(ROOT / "policies" / "default.yaml")


@dataclass
class Tally:
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)

    def total(self, label: str) -> int:
        return sum(n for (lab, _), n in self.pairs.items() if lab == label)

    @property
    def recall(self) -> float:
        return self.pairs[("block", "block")] / max(self.total("block"), 1)

    @property
    def false_block(self) -> float:
        return self.pairs[("allow", "block")] / max(self.total("allow"), 1)

    @property
    def warn_agreement(self) -> float:
        return self.pairs[("warn", "warn")] / max(self.total("warn"), 1)

    def line(self, name: str) -> str:
        return (
            f"{name:26s} recall {self.recall:6.1%} ({self.pairs[('block', 'block')]:4d}/"
            f"{self.total('block'):<4d})  false-block {self.false_block:6.1%} "
            f"({self.pairs[('allow', 'block')]:3d}/{self.total('allow'):<4d})  warn "
            f"{self.warn_agreement:6.1%} ({self.pairs[('warn', 'warn')]}/{self.total('warn')})"
        )


def _measure(split: str, policy: Policy) -> tuple[Tally, dict[str, Tally], dict[str, Tally]]:
    overall = Tally()
    by_language: dict[str, Tally] = defaultdict(Tally)
    by_concept: dict[str, Tally] = defaultdict(Tally)
    for case in _cases(split):
        modes = parse_capabilities(case.get("capabilities") or "form,url")
        decision = evaluate(
            case["params"], modes=modes, server=None, policy=policy, era=case.get("era")
        )
        got = decision.action.value
        pair = (case["label"], got)
        overall.pairs[pair] += 1
        by_language[_language(case["language"])].pairs[pair] += 1
        by_concept[case["concept"]].pairs[pair] += 1
    return overall, by_language, by_concept


def test_splits_are_well_formed() -> None:
    for split, paths in SPLITS.items():
        assert paths, split
        cases = _cases(split)
        assert len({c["id"] for c in cases}) == len(cases), split
        assert {c["label"] for c in cases} == {"allow", "warn", "block"}, split
        assert len({_language(c["language"]) for c in cases}) >= 40, split
        assert all(isinstance(c["params"], dict | list | str | int | float) for c in cases)
    assert len(_cases("test")) >= 2000


@pytest.mark.parametrize("split", ["test", "dev"])
def test_split_figures(split: str, policy: Policy, capsys: pytest.CaptureFixture[str]) -> None:
    overall, by_language, by_concept = _measure(split, policy)
    recall_floor, false_block_ceiling, warn_floor = FLOORS[split]
    lines = [
        "",
        f"corpus split {split!r}: " + overall.line("all").strip(),
        f"  targets (issue 10): recall >= {TARGETS[0]:.0%}, false-block <= {TARGETS[1]:.0%}, "
        f"warn >= {TARGETS[2]:.0%}; recorded floors: {recall_floor:.0%} / "
        f"{false_block_ceiling:.0%} / {warn_floor:.0%}",
        "  per language:",
        *("    " + by_language[k].line(k) for k in sorted(by_language)),
        "  per concept:",
        *("    " + by_concept[k].line(k) for k in sorted(by_concept)),
    ]
    with capsys.disabled():
        print("\n".join(lines))
    summary = lines[1]
    assert overall.recall >= recall_floor, summary
    assert overall.false_block <= false_block_ceiling, summary
    assert overall.warn_agreement >= warn_floor, summary
