"""Tests mirror the source: every module ``gateway/<package>/<module>.py`` has its own test module
``tests/<package>/test_<module>.py`` (``gateway/<module>.py``: ``tests/test_<module>.py``).

Package ``__init__.py`` files are exempt (they hold no logic). The exceptions are two explicit
lists, each entry with its reason:

* ``TESTED_ELSEWHERE``: modules tested on purpose by other test modules (named in the reason).
* ``PENDING``: modules whose test module belongs to work in flight on another branch or by
  another owner; an entry goes when its test module lands.

Both lists are checked for staleness: an entry for a module that no longer exists, or that now
has its own test module, fails too, so the lists only shrink.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GATEWAY = ROOT / "gateway"
TESTS = ROOT / "tests"

TESTED_ELSEWHERE: dict[str, str] = {
    "__main__.py": "three lines handing over to cli/main.py; `python -m gateway` is what "
    "tests/cli/test_main.py, tests/e2e/* and tests/audit/test_canaries.py run",
    "proxy/relay.py": "split by concern: tests/proxy/test_relay_functional.py (real sockets), "
    "test_relay_enforcement.py (outcomes carried out), test_relay_reading.py (what clients read), "
    "test_relay_upstreams.py (each upstream's TLS, proxy, cap and headers, end to end)",
}

PENDING: dict[str, str] = {}


def mirror(module: str) -> Path:
    """``wire/sse.py`` -> ``tests/wire/test_sse.py``; ``errors.py`` -> ``tests/test_errors.py``."""
    path = Path(module)
    return TESTS / path.parent / f"test_{path.name}"


MODULES = sorted(
    str(p.relative_to(GATEWAY)) for p in GATEWAY.rglob("*.py") if p.name != "__init__.py"
)


def test_the_mirror_rule_sees_the_tree() -> None:
    """Not vacuous: the walk finds the modules, and most of them do have their test module."""
    assert {"wire/sse.py", "enforce/tokens.py", "proxy/relay.py", "__main__.py"} <= set(MODULES)
    assert mirror("wire/sse.py") == TESTS / "wire" / "test_sse.py"
    assert sum(mirror(m).exists() for m in MODULES) > len(MODULES) * 3 // 4


@pytest.mark.parametrize("module", MODULES)
def test_every_module_has_its_own_test_module(module: str) -> None:
    if module in TESTED_ELSEWHERE or module in PENDING:
        return
    expected = mirror(module).relative_to(ROOT)
    assert mirror(module).exists(), (
        f"gateway/{module} has no test module: add {expected} (tests mirror the source), or, "
        "if it is tested elsewhere on purpose, add it with the reason to TESTED_ELSEWHERE"
    )


@pytest.mark.parametrize("module", sorted({**TESTED_ELSEWHERE, **PENDING}))
def test_the_exceptions_are_not_stale(module: str) -> None:
    assert (GATEWAY / module).exists(), f"gateway/{module} is gone: drop its entry"
    assert not mirror(module).exists(), (
        f"{mirror(module).relative_to(ROOT)} exists now: drop gateway/{module}'s entry"
    )


def test_no_module_is_in_both_lists() -> None:
    assert not set(TESTED_ELSEWHERE) & set(PENDING)


# Test modules inside a mirrored package that name no module of it: a property across modules,
# or one module's tests split by concern.
CROSS_MODULE: dict[str, str] = {
    "audit/test_canaries.py": "no secret reaches a log line: relay, enforcer, records, rendering",
    "detect/test_fast_paths.py": "the detectors' fast paths agree with their full paths",
    "detect/test_form_concepts.py": "form concepts across the lexicon and the form detector",
    "policy/test_same_verdict.py": "same input, same verdict: loader, engine and detectors",
    "proxy/test_relay_enforcement.py": "proxy/relay.py, split by concern (see TESTED_ELSEWHERE)",
    "proxy/test_relay_functional.py": "proxy/relay.py, split by concern (see TESTED_ELSEWHERE)",
    "proxy/test_relay_reading.py": "proxy/relay.py, split by concern (see TESTED_ELSEWHERE)",
    "proxy/test_relay_upstreams.py": "proxy/relay.py, split by concern (see TESTED_ELSEWHERE)",
}


def _source_of(test: Path) -> Path:
    relative = test.relative_to(TESTS)
    return GATEWAY / relative.parent / (relative.name.removeprefix("test_"))


def test_every_test_module_in_a_mirrored_package_names_its_module() -> None:
    """The other way round: ``tests/<package>/test_<x>.py`` tests ``gateway/<package>/<x>.py``,
    unless it is listed in CROSS_MODULE (and the listed ones exist)."""
    packages = {p.parent.name for p in GATEWAY.glob("*/__init__.py")}
    strays = {
        str(test.relative_to(TESTS))
        for package in packages
        for test in (TESTS / package).glob("test_*.py")
        if not _source_of(test).exists()
    }
    assert strays == set(CROSS_MODULE)
