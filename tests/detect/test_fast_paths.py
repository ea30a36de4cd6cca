"""Differential tests: the fast paths added for speed give exactly the straightforward results.

Each reference below is the plain implementation the fast path replaced (Python ``re`` over the
whole text); Hypothesis feeds both texts built from the characters that matter to them. Those
references share the normaliser's own patterns, so they prove only that the fast paths change
nothing; what the patterns themselves must produce is pinned by
``test_words_and_squash_by_example`` (hand-written expectations, no private pattern used).
"""

from __future__ import annotations

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gateway.detect import lexicon, normalize, pii
from gateway.detect.normalize import _finish, _prefold, fold, squash, words

# Letters of both cases, digits, every gap character of letter spacing, separators, a few
# look-alikes and non-ASCII letters (which take the general path).
_ALPHABET = "aAbBzZ019 .-_*|/\\~+\n\t:@$·•éеΑ\u200b"
_SHORT = st.text(alphabet=_ALPHABET, max_size=40)
# Long texts take the RE2 paths: random ends around a plain middle, or random throughout.
_LONG = st.tuples(_SHORT, _SHORT).map(lambda ab: ab[0] + " lorem ipsum dolor" * 20 + ab[1]) | (
    st.text(alphabet=_ALPHABET, min_size=300, max_size=600)
)
_TEXT = _SHORT | _LONG


# What a reader of a form expects the normaliser to make of a text: written by hand from the
# documented behaviour (docs/architecture.md, Detection: normalisation), not from the patterns.
_BY_EXAMPLE: list[tuple[str, list[str]]] = [
    ("newPassword", ["new", "password"]),  # camelCase split
    ("API_KEY", ["api", "key"]),  # snake case, folded
    ("ABCWord", ["abc", "word"]),  # an acronym before a word
    ("p a s s w o r d", ["password"]),  # letter spacing joined
    ("s.e.c.r.e.t", ["secret"]),  # dotted letters joined
    ("pass-word", ["pass", "word"]),  # a hyphen separates
    ("pass\tword", ["pass", "word"]),
    ("P\u0430ssword", ["password"]),  # Cyrillic а read as a
    ("\uff30\uff21\uff33\uff33\uff37\uff2f\uff32\uff24", ["password"]),  # fullwidth
    ("x\u200bpass", ["xpass"]),  # an invisible character inside a word is dropped
    ("Passwörter", ["passworter"]),  # marks on Latin letters dropped
    ("CVV2 code", ["cvv", "2", "code"]),  # digits apart from letters
    ("2FA-Code", ["2", "fa", "code"]),
    ("v1.2.3", ["v", "1", "2", "3"]),
    ("mot de passe", ["mot", "de", "passe"]),
]


def test_words_and_squash_by_example() -> None:
    for text, expected in _BY_EXAMPLE:
        assert words(text) == expected, text
        assert squash(text) == "".join(expected), text


def _words_reference(text: str) -> list[str]:
    pre = normalize._SPACED_RUN_RE.sub(normalize._join_run, _prefold(text))
    if normalize._NEEDS_SPLIT_RE.search(pre):
        pre = normalize._SPLIT_RE.sub(" ", pre)
    folded = _finish(pre)
    pattern = normalize._PLAIN_TOKEN_RE if folded.isascii() else normalize._TOKEN_RE
    return pattern.findall(folded)


def _squash_reference(text: str) -> str:
    folded = fold(text)
    pattern = normalize._PLAIN_TOKEN_RE if folded.isascii() else normalize._TOKEN_RE
    return "".join(pattern.findall(folded))


@settings(max_examples=2000, deadline=None)
@given(_TEXT)
@example("p a s s w o r d")
@example("e.g. a b")
@example("newAPIKey2fa ABCWord v1.2.3")
@example("x p.a.s.s y")
@example("a-b-c_d")
@example("p a\ns s")
@example(" lorem ipsum dolor" * 20 + " p a s")
@example("a/b/c " + " lorem ipsum dolor" * 20)
@example(" lorem ipsum dolor" * 20 + " 1 -2 -3 x")
@example(" lorem ipsum dolor" * 20 + " e.g. x")
@example(" lorem ipsum dolor" * 20 + " newAPIKey v2fa")
def test_words_fast_path_equals_reference(text: str) -> None:
    assert words(text) == _words_reference(text)


@settings(max_examples=1000, deadline=None)
@given(_TEXT)
@example("API-Key")
@example("pass\x00word")
def test_squash_fast_path_equals_reference(text: str) -> None:
    assert squash(text) == _squash_reference(text)


def test_long_ascii_text_equals_reference() -> None:
    text = "Please confirm the newAPIKey for v2.4.1 at 10.30, e.g. p a s s w o r d. " * 200
    assert words(text) == _words_reference(text)
    assert squash(text) == _squash_reference(text)


@settings(max_examples=1000, deadline=None)
@given(
    st.text(alphabet="aZ0 4@$_-é.", max_size=30)
    | st.text(alphabet="aZ0 4@$_-é.", min_size=256, max_size=400)
    | st.text(alphabet="aZ0 4_-.", min_size=256, max_size=400)
)
@example("passw0rd s3cr3t pa$$word")
def test_deleet_fast_path_equals_reference(text: str) -> None:
    assert lexicon._deleeted(text) == lexicon.deleet_reference(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=30))
def test_ascii_prefold_equals_reference(text: str) -> None:
    assert _prefold(text) == normalize._ALWAYS_BAD_RE.sub("", text)


def _find_pii_reference(text: str) -> list[str]:
    found: set[str] = set()
    if "@" in text:
        pii._find_emails(text, found)
    if pii._ANY_DIGIT.search(text) is not None:
        pii._find_numbers(text, found)
        pii._find_ibans(text, found)
        pii._find_national_ids(text, found)
    return [kind for kind in pii.PII_KINDS if kind in found]


_PII_PIECES = st.sampled_from(
    [
        " ", "a", "Z", "-", ".", "(", ")", "+", "/", "X", "0", "7", "12", "4111 1111 1111 1111",
        "+1 415 555 2671", "078-05-1120", "12345678Z", "X1234567L", "11010519491231002X",
        "AB 12 34 56 C", "GB82 WEST 1234 5698 7654 32", "DE89370400440532013000", "\u00e9",
        "123.456.789-09", "(415) 555-2671", "jane@example.com",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PII_PIECES, min_size=1, max_size=60), st.integers(min_value=0, max_value=700))
def test_pii_hints_never_change_the_result(pieces: list[str], pad: int) -> None:
    text = "please review the plan " * (pad // 23 + 1) + "".join(pieces)
    assert pii.find_pii(text) == _find_pii_reference(text)


def test_pii_hints_find_what_the_finders_find_in_long_text() -> None:
    filler = " please review the plan for version 2.4.1 at 10.30 today. " * 20
    for value, kind in [
        ("4111 1111 1111 1111", "card"),
        ("+1 415 555 2671", "phone"),
        ("536-22-1234", "ssn"),
        ("12345678Z", "national-id"),
        ("DE89370400440532013000", "iban"),
    ]:
        text = filler + value + filler
        assert kind in pii.find_pii(text), kind
        assert pii.find_pii(text) == _find_pii_reference(text)
    assert pii.find_pii(filler) == [] == _find_pii_reference(filler)


def _hits_reference(index: lexicon._Index, unit: lexicon._Unit) -> set[lexicon._Key]:
    toks = unit.tokens
    joined = {a + b for a, b in itertools.pairwise(toks)}
    joined |= {a + b + c for a, b, c in zip(toks, toks[1:], toks[2:], strict=False)}
    out: set[lexicon._Key] = set()
    for gram in set(toks):
        out |= index.singles.get(gram, set())
    for gram in joined:  # adjacent words joined spell positive terms only ("PIN to" != "pinto")
        out |= {k for k in index.singles.get(gram, set()) if k[1] != lexicon._NEGATIVE}
    for i, pair in enumerate(itertools.pairwise(toks)):
        for phrase, key in index.phrases.get(pair, ()):
            if key not in out and tuple(toks[i : i + len(phrase)]) == phrase:
                out.add(key)
    # stems: plain substring tests, bag by bag (no automaton)
    out.update(k for k, stems in index.stems.items() if any(s in unit.text for s in stems))
    return out


_TERM_PIECES = st.sampled_from(
    ["pass", "word", "passwort", "api", "key", "2", "fa", "one", "time", "code", "credit", "card",
     "number", "pin", "cvv", "s", "e", "c", "r", "t", "the", "please", "ssn", "social", "security",
     "mot", "de", "passe", "tin", "rib", "bank", "account", "iban", "otp", "secret", "token", "x"]
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(_TERM_PIECES, max_size=12), st.sampled_from([" ", "", "_", "-", " p4ss "]))
def test_lexicon_hits_equal_reference(pieces: list[str], sep: str) -> None:
    index = lexicon.base_lexicon()._index
    unit = lexicon._unit(sep.join(pieces))
    found, where = index.hits(unit)
    assert set(found) == _hits_reference(index, unit) == set(where)
    for spots in where.values():  # every hit is placed on a token of the text
        assert spots
        assert all(0 <= i < len(unit.tokens) for i in spots)
    for key, (stem, form) in found.items():  # the form that hit is one of the bag's own
        assert form in (unit.text if stem else unit.text.replace(" ", ""))
        if key[1] != lexicon._NEGATIVE:
            assert index.term(key, (stem, form)) is not None, (key, form)
