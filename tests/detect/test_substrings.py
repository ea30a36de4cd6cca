"""gateway/detect/substrings.py against the RE2 alternation it replaced (same answers)."""

from __future__ import annotations

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.detect.substrings import Substrings

ALPHABET = "abcé密码 "
words = st.text(ALPHABET, min_size=1, max_size=5)


def alternation_first(strings: set[str], text: str) -> str | None:
    """What the lexicon's RE2 alternation (longest first) found: the leftmost occurrence, the
    longest at that position."""
    alts = sorted(strings, key=len, reverse=True)
    m = re2.compile("|".join(re2.escape(s) for s in alts)).search(text)
    return None if m is None else str(m.group())


@settings(max_examples=400, deadline=None)
@given(
    entries=st.lists(st.tuples(words, st.integers(0, 3)), max_size=12),
    text=st.text(ALPHABET, max_size=40),
)
def test_same_answers_as_an_re2_alternation_per_owner(
    entries: list[tuple[str, int]], text: str
) -> None:
    subs = Substrings(entries)
    got = subs.first_per_owner(text)
    for owner in {o for _, o in entries}:
        strings = {s for s, o in entries if o == owner}
        assert got.get(owner) == alternation_first(strings, text)
    everything = {s for s, _ in entries}
    assert subs.occurs_in(text) == (
        bool(everything) and alternation_first(everything, text) is not None
    )


def test_leftmost_then_longest() -> None:
    subs = Substrings([("pass", "pw"), ("password", "pw"), ("word", "pw"), ("sword", "other")])
    assert subs.first_per_owner("my password") == {"pw": "password", "other": "sword"}
    assert subs.occurs_in("swordfish")
    assert not subs.occurs_in("passw0rd".replace("pass", "pas"))


def test_an_empty_set_finds_nothing() -> None:
    subs: Substrings[str] = Substrings([("", "x")])
    assert len(subs) == 0
    assert not subs.occurs_in("anything")
    assert subs.first_per_owner("anything") == {}


def test_scripts_without_spaces() -> None:
    subs = Substrings([("密码", "password"), ("验证码", "otp")])
    assert subs.first_per_owner("请输入您的支付密码和验证码") == {
        "password": "密码",
        "otp": "验证码",
    }
