"""The multilingual form-field lexicon (``gateway/data/lexicon.yaml``), compiled for matching.

A :class:`Lexicon` answers one question about one piece of text (a property key, a title, a
description, the message): which field categories does it name? Terms and text are normalised with
the same functions (:func:`gateway.detect.normalize.words`), so homoglyphs, fullwidth letters,
letter spacing and camelCase all meet the same vocabulary.

Matching per text (a "unit"):

* whole-word terms and phrases on the word tokens; a phrase also matches written as one word
  (``api key`` ~ ``apikey``) and adjacent tokens are tried joined (``pass word`` ~ ``password``);
* stems as substrings of the space-joined tokens (compounds, inflections, CJK without spaces);
* a category is cancelled in that unit when one of its negative terms is present there;
* gated terms (generic card words) are reported separately: the caller decides on card context.

The base lexicon is loaded once (lazily); per-:class:`FormConfig` variants (operator extra and
allow terms) are cached.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import functools
import gc
import hashlib
import itertools
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import re2
import yaml

from gateway.detect.config import FormConfig
from gateway.detect.findings import Reason, Severity
from gateway.detect.normalize import DIGIT_LETTERS, squash, words
from gateway.detect.substrings import AnyOf, Substrings

__all__ = ["Category", "Hits", "Lexicon", "Term", "base_lexicon", "lexicon_for"]

_MAX_PHRASE = 8
_CACHE_TEXT_MAX = 1024
_MAX_SCAN_CHARS = 65_536
_PREFILTER_MIN = 64


@dataclass(frozen=True, slots=True)
class Category:
    """One field category, in priority order (``Lexicon.categories``)."""

    name: str
    reason: Reason
    detail: str
    severity: Severity
    parent: str | None = None  # a concept's category (concepts.yaml), for explanations


@dataclass(frozen=True, slots=True)
class Term:
    """A lexicon entry as written in the data files (never the input's text), for explanations.

    ``lang``: the language key(s) it is listed under in concepts.yaml or data/concepts/*.yaml
    (``"fr"``; ``"cs,sk"`` when several list it), None for lexicon.yaml's untagged lists and a
    policy's extra terms. ``stem``: matched as a substring (a stem, or a term of a script written
    without spaces) rather than as whole words."""

    text: str
    lang: str | None
    stem: bool = False


@dataclass(frozen=True, slots=True)
class Hits:
    """What one text names. ``strong``/``gated`` hold category names with no negative present."""

    strong: frozenset[str] = frozenset()
    gated: frozenset[str] = frozenset()
    card_context: bool = False
    generic: bool = False
    code_word: bool = False
    allowed: bool = False
    negated: frozenset[str] = frozenset()  # categories with a negative term in this text
    postal: bool = False  # names a postal address / delivery (an Indian "PIN code" is postal)
    setting: bool = False  # names a setting of a secret (length, count, days, attempts ...)
    channel: bool = False  # names how a code is delivered (SMS, "we sent", authenticator)
    benign: bool = False  # gives a secret word its everyday sense (slogan, dictionary entry ...)
    payment_words: bool = False  # card-context words, whatever negatives sit next to them
    phone: bool = False  # names a phone number
    ask: bool = False  # holds a request verb ("enter", "введите", "masukkan", "please")
    question: bool = False  # names a question as a thing ("security question", "Sicherheitsfrage")
    secret_word: bool = False  # "secret", "geheim", "тайный", "秘密" (an adjective, not a concept)
    login_word: bool = False  # "log in", "Anmeldung", "вход", "ログイン"
    word_word: bool = False  # "word", "Wort", "słowo", "単語" (a phrase asked word by word)
    when: bool = False  # "when", "wann", "когда", "いつ" (a question about a date)
    denial: bool = False  # "not the password itself", "ikke selve adgangskoden"
    username: bool = False  # "user name", "Benutzername", "Όνομα χρήστη", "نام کاربری"
    digit_word: bool = False  # "digits", "Ziffern", "цифры", "haneli" (a count of digits)
    count_word: bool = False  # "three", "four", "six", "drei", "шесть" (small counts in words)
    last_word: bool = False  # "last", "letzten", "últimos", "последние" (the last digits of)
    everyday: bool = False  # an everyday field's name: "Country", "Company", "Firma", "Город"
    wallet: bool = False  # a crypto wallet or where its words are kept ("MetaMask", "backup plate")
    named: bool = False  # some category's term is present, negated or not
    # The lexicon entry that made each category of ``strong``/``gated`` fire (for explanations).
    terms: tuple[tuple[str, Term], ...] = ()

    def term(self, category: str) -> Term | None:
        """The lexicon entry behind ``category`` in this text, if a term or stem named it."""
        return next((t for name, t in self.terms if name == category), None)


# Scripts written without spaces (Han, kana, Thai, Lao, Myanmar, Khmer): terms in them can only
# be matched as substrings.
_NO_SPACE_RE = re.compile(
    "[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]"
)


def _no_space_script(term: str) -> bool:
    return _NO_SPACE_RE.search(term) is not None


# Scripts whose languages glue case endings, postpositions or prefixes to words (Armenian,
# Hebrew, Arabic, the Indic scripts and Sinhala, Georgian, Ethiopic): "প্রশ্নের" is "প্রশ্ন" + "-er".
# Terms in them also match inside longer words.
_AFFIXING_RE = re.compile("[\u0530-\u06ff\u0900-\u0dff\u10a0-\u10ff\u1200-\u139f]")


def _affixing_script(term: str) -> bool:
    return _AFFIXING_RE.search(term) is not None


_AFFIX_STEM_MIN = 4  # shorter terms only as whole words: too many words contain them


@functools.lru_cache(maxsize=1 << 16)
def _prepared(term: str) -> tuple[tuple[str, ...], str, str, bool, bool]:
    """A data term's words, joined and spaced, whether its script is written without spaces,
    and whether it is also a stem (an affixing script). Cached like ``_norm``."""
    toks = _norm(term)
    joined = "".join(toks)
    if term.isascii():  # Latin letters: neither a script without spaces nor an affixing one
        return toks, joined, " ".join(toks), False, False
    no_space = bool(toks) and _no_space_script(term)
    affix = len(joined) >= _AFFIX_STEM_MIN and _affixing_script(term)
    return toks, joined, " ".join(toks), no_space, affix


@functools.lru_cache(maxsize=1 << 16)
def _norm(term: str) -> tuple[str, ...]:
    """A data term's words. Cached: the same term is listed under several bags and languages
    (80,000 additions of 23,500 distinct terms when the lexicon is built); read from the
    compiled data when that was made by this very normaliser (start-up time)."""
    known = _compiled_words() if _RECORDING is None else {}  # compiling: every term afresh
    toks = known.get(term)
    if toks is not None:
        return tuple(toks)
    out = tuple(words(term))
    if _RECORDING is not None:
        _RECORDING[term] = list(out)
    return out


_RECORDING: dict[str, list[str]] | None = None  # compile_data() collects every term's words


def _normaliser_fingerprint() -> str:
    """What a term's words depend on: normalize.py itself, Unicode's data and Python's version."""
    source = resources.files("gateway").joinpath("detect/normalize.py").read_bytes()
    tag = f"{unicodedata.unidata_version}|{sys.version_info[0]}.{sys.version_info[1]}".encode()
    return hashlib.sha256(source + b"\0" + tag).hexdigest()


@functools.cache
def _compiled_words() -> Mapping[str, list[str]]:
    entry = _compiled().get(_WORDS_ENTRY)
    if not isinstance(entry, dict) or entry.get("sha256") != _normaliser_fingerprint():
        return {}
    data = entry.get("data")
    return data if isinstance(data, dict) else {}


# A key names one bag of terms: (category or pseudo-category name, kind).
_STRONG, _GATED, _NEGATIVE = 0, 1, 2
_Key = tuple[str, int]
# How a bag was hit: (by a stem, the folded form that matched: joined words or the stem).
_Match = tuple[bool, str]
# A term as the data gives it: plain text (lexicon.yaml) or (text, language) (concepts.yaml).
_Entry = str | tuple[str, str | None]
_CARD_CONTEXT: _Key = ("@card_context", _STRONG)
_ALLOW: _Key = ("@allow", _STRONG)
_CODE_WORD: _Key = ("@code_word", _STRONG)
# lexicon.yaml's signal bags and the Hits flag each one sets (its key: "@" + the bag's name).
_SIGNALS: tuple[tuple[str, str], ...] = (
    ("postal_context", "postal"),
    ("setting_context", "setting"),
    ("channel_context", "channel"),
    ("benign_sense", "benign"),
    ("phone_context", "phone"),
    ("ask_context", "ask"),
    ("question_words", "question"),
    ("secret_words", "secret_word"),
    ("login_words", "login_word"),
    ("word_words", "word_word"),
    ("when_words", "when"),
    ("denial_words", "denial"),
    ("username_words", "username"),
    ("digit_words", "digit_word"),
    ("count_words", "count_word"),
    ("last_words", "last_word"),
    ("everyday_fields", "everyday"),
    ("wallet_words", "wallet"),
)


@dataclass(frozen=True, slots=True)
class _Unit:
    words: list[str]  # the text's own words
    tokens: list[str]  # its words, then those of its de-leeted variant (if any)
    text: str  # tokens joined by single spaces


# Digits and symbols inside a word read as letters: "passw0rd", "s3cr3t", "pa$$word".
_LEET_RE = re.compile(r"(?<=[^\W\d_])[0-9@$]+(?=[^\W\d_])")
_LEET = str.maketrans({**DIGIT_LETTERS, "1": "i", "@": "a", "$": "s"})  # in words, 1 is i


# Necessary for a _LEET_RE match in ASCII text; RE2 rules it out in linear time, ~30x faster.
_LEET_HINT_RE2 = re2.compile(r"[A-Za-z][0-9@$]|[0-9@$][A-Za-z]")
_RE2_MIN_LEN = 256  # shorter texts: the RE2 binding's cost per call outweighs the gain


def _deleet(m: re.Match[str]) -> str:
    return m.group().translate(_LEET)


# A whole word of letters mixed with leet digits/symbols, at its edges too ("0tp", "phr4s3",
# "pa$$"): at least two letters, so version strings ("v2") and sizes ("4k") stay as they are.
_LEET_WORD_RE = re.compile(r"[A-Za-z\u00c0-\u024f0-9@$]+")  # Latin letters with accents too


def _deleet_word(m: re.Match[str]) -> str:
    return _deleet_word_text(m.group())


def _deleet_word_text(word: str) -> str:
    letters = sum(c.isalpha() for c in word)
    if letters == len(word) or word.isdigit():
        return word
    if letters != 1 and letters < 2:
        return word
    if letters == 1 and not (len(word) >= 4 and all(c.isalpha() or c in _LEET_CHARS for c in word)):
        return word  # "v2", "4k"; but "p4553" is "passe"
    return word.translate(_LEET)


_LEET_CHARS = frozenset("0134578@$")


def _deleeted(text: str) -> str:
    if len(text) < _RE2_MIN_LEN:
        return deleet_reference(text)
    if text.isascii() and _LEET_HINT_RE2.search(text) is None:
        return text
    if len(text) > _MAX_SCAN_CHARS:  # never keep huge strings alive in the cache
        return _deleet_long(text)
    return _deleeted_long(text)


def deleet_reference(text: str) -> str:
    """Leet digits and symbols read as letters: inside words, then in whole mixed words."""
    return _LEET_WORD_RE.sub(_deleet_word, _LEET_RE.sub(_deleet, text))


# A word holding a letter next to a leet digit or symbol: the only words _deleet_word changes.
# RE2 finds them in one linear pass (no Python callback per word of a long text).
_LEET_WORD_RE2 = re2.compile(
    r"[A-Za-z\x{c0}-\x{24f}0-9@$]*"
    r"(?:[A-Za-z\x{c0}-\x{24f}][0-9@$]|[0-9@$][A-Za-z\x{c0}-\x{24f}])"
    r"[A-Za-z\x{c0}-\x{24f}0-9@$]*"
)


def _deleet_long(text: str) -> str:
    """``deleet_reference`` for long texts."""
    text = _LEET_RE.sub(_deleet, text)
    try:
        found = list(_LEET_WORD_RE2.finditer(text))
    except UnicodeEncodeError:  # lone surrogates: RE2 cannot read them
        return _LEET_WORD_RE.sub(_deleet_word, text)
    if not found:
        return text
    out: list[str] = []
    last = 0
    for m in found:
        out.append(text[last : m.start()])
        out.append(_deleet_word_text(m.group()))
        last = m.end()
    out.append(text[last:])
    return "".join(out)


@functools.lru_cache(maxsize=8)
def _deleeted_long(text: str) -> str:
    """A long text is de-leeted twice per scan (pre-check, then words): once is enough."""
    return _deleet_long(text)


def _unit(text: str) -> _Unit:
    # Field names, titles and messages are short; the envelope caps params at Limits.max_bytes
    # (64 KiB by default). Past that, a keyword can only hide in text that is rejected anyway.
    text = text[:_MAX_SCAN_CHARS]
    own = words(text)
    toks = own
    deleeted = _deleeted(text)
    if deleeted != text:
        toks = own + words(deleeted)
    if len(text) <= _MIXED_CASE_MAX and _SPELLED_OUT.fullmatch(text):
        # "m o t  d e  p a s s e": letters one space apart, words two spaces apart
        toks = toks + words(text.replace("  ", "\x00").replace(" ", "").replace("\x00", " "))
    if _mixed_case(text):
        # "lÖsEnOrD", "NeNoSiRi": case flipped inside a word is obfuscation, not camelCase
        lowered = text.lower()
        toks = toks + words(lowered) + (words(_deleeted(lowered)) if deleeted != text else [])
    return _Unit(own, toks, " ".join(toks))


_MIXED_CASE_MAX = 64  # keys and titles: where a name is obfuscated
_SPELLED_OUT = re.compile(r"(?:[^\W_](?: {1,2}|$)){4,}")


def _mixed_case(text: str) -> bool:
    """Case flipping three times in a row inside one word ("pAsSw", "lÖsE"), or an ASCII word
    cut by its case into short pieces ("ApI_kEy"): camelCase ("newPassword", "APIKey") never
    alternates like that. Short texts only."""
    if len(text) > _MIXED_CASE_MAX or text.islower() or text.isupper():
        return False
    flips, prev = 0, None
    for ch in text:
        upper = ch.isupper()
        if not (upper or ch.islower()):
            flips, prev = 0, None
            continue
        flips = flips + 1 if prev is not None and upper != prev else 0
        if flips >= 3:
            return True
        prev = upper
    return any(_noise_cased(run) for run in _LETTER_RUN.findall(text))


_LETTER_RUN = re.compile(r"[A-Za-z]{3,32}")
_CASE_SPLIT = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _noise_cased(run: str) -> bool:
    """A run of letters that its case changes would cut into two or more pieces of one or two
    letters ("Ap|I", "k|Ey", "a|Pi"): camelCase leaves at most one ("i|Phone", "O|Auth|Token")."""
    return sum(len(piece) <= 2 for piece in _CASE_SPLIT.split(run)) >= 2


def _words_not_a_split(first: str, second: str, pair: str) -> bool:
    """Two words of two letters or more that join into a short term ("it" + "in" = "itin"):
    ordinary words side by side, not one word cut in two."""
    return (
        len(pair) <= 4
        and len(first) >= 2
        and len(second) >= 2
        and first.isalpha()
        and second.isalpha()
    )


@dataclass(slots=True)
class _Index:
    """Every term of every bag in one index: one pass over a text finds all bags it hits."""

    singles: dict[str, set[_Key]] = field(default_factory=dict)
    # Phrases by their first two words: common first words ("the", "code") start many phrases.
    phrases: dict[tuple[str, str], list[tuple[tuple[str, ...], _Key]]] = field(default_factory=dict)
    stems: dict[_Key, set[str]] = field(default_factory=dict)
    # Filled by compile(): every stem with its bags, and every term and stem squashed (spaces
    # removed) for the pre-check; Aho-Corasick sets (see gateway/detect/substrings.py).
    stem_set: Substrings[_Key] = field(default_factory=lambda: Substrings(()))
    any_term: AnyOf = field(default_factory=lambda: AnyOf(()))
    # Where each folded form of a bag came from (the data's own text and language), built with
    # the index so that explaining a hit is one look-up.
    # (text, language); a Term is made only when a hit is explained.
    origins: dict[tuple[_Key, bool, str], tuple[str, str | None]] = field(default_factory=dict)
    # Every proper prefix of a single term: two or three adjacent tokens can only join into a
    # term when the first one (two) already spell the start of one. (A sorted search instead
    # saves ~50 ms at start-up but costs ~2 µs a token: 4 ms on a 64 KB form.)
    prefixes: frozenset[str] = frozenset()

    def add_term(self, key: _Key, term: str, lang: str | None = None) -> None:
        toks, joined, spaced, no_space, affix_stem = _prepared(term)
        if not toks:
            return
        if no_space:
            self.stems.setdefault(key, set()).add(spaced)
            self._origin(key, True, spaced, term, lang)
            return
        self.singles.setdefault(joined, set()).add(key)
        self._origin(key, False, joined, term, lang)
        if 1 < len(toks) <= _MAX_PHRASE:
            self.phrases.setdefault((toks[0], toks[1]), []).append((toks, key))
        if affix_stem:
            # "নিরাপত্তা প্রশ্ন" matches "নিরাপত্তা প্রশ্নের"; each word may carry an ending,
            # so a phrase matches with the last word's ending (the stem is the phrase itself)
            self.stems.setdefault(key, set()).add(spaced)
            self._origin(key, True, spaced, term, lang)

    def add_stem(self, key: _Key, stem: str, lang: str | None = None) -> None:
        toks = _norm(stem)
        if toks:
            self.stems.setdefault(key, set()).add(" ".join(toks))
            self._origin(key, True, " ".join(toks), stem, lang)

    def _origin(self, key: _Key, stem: bool, form: str, text: str, lang: str | None) -> None:
        if key[1] == _NEGATIVE:
            return
        slot = (key, stem, form)
        have = self.origins.get(slot)
        if have is None:
            self.origins[slot] = (text, lang)
            return
        first, langs = have
        if lang is not None and (langs is None or lang not in langs.split(",")):
            # the same folded form listed under several languages ("heslo": cs, sk)
            self.origins[slot] = (first, lang if langs is None else f"{langs},{lang}")

    def fill(self, key: _Key, terms: Iterable[_Entry], stems: Iterable[_Entry]) -> None:
        for term in terms:
            text, lang = term if isinstance(term, tuple) else (str(term), None)
            self.add_term(key, str(text), lang)
        for stem in stems:
            text, lang = stem if isinstance(stem, tuple) else (str(stem), None)
            self.add_stem(key, str(text), lang)

    def compile(self) -> None:
        self._automata(self.any_term_strings())
        self.prefixes = frozenset({t[:i] for t in self.singles for i in range(1, len(t))})

    def _automata(self, squashed: Iterable[str]) -> None:
        """The Aho-Corasick sets, from the tables (never stored: built at every start)."""
        self.stem_set = Substrings(
            (stem, key) for key, stems in self.stems.items() for stem in stems
        )
        self.any_term = AnyOf(squashed)

    def tables(self, extra_keys: Iterable[_Key] = ()) -> dict[str, Any]:
        """The index as plain JSON data (the compiled snapshot of the base lexicon): each bag's
        key once in ``keys`` (sorted, with ``extra_keys``), referred to by its position; lists
        where order matters (the bags' fill order, each phrase bucket's order), sorted lists for
        sets: the same bytes whatever the hash seed."""
        keys = sorted(
            {
                *(k for bag in self.singles.values() for k in bag),
                *(k for bucket in self.phrases.values() for _, k in bucket),
                *self.stems,
                *(k for k, _, _ in self.origins),
                *extra_keys,
            }
        )
        ids = {key: i for i, key in enumerate(keys)}
        return {
            "singles": {t: sorted(ids[k] for k in bag) for t, bag in self.singles.items()},
            "phrases": [
                [first, second, [[list(toks), ids[k]] for toks, k in bucket]]
                for (first, second), bucket in self.phrases.items()
            ],
            "stems": [[ids[k], sorted(forms)] for k, forms in self.stems.items()],
            "origins": [
                [ids[k], stem, form, text, lang]
                for (k, stem, form), (text, lang) in self.origins.items()
            ],
            "squashed": sorted(self.any_term_strings()),
            "prefixes": sorted(self.prefixes),
            "keys": [[name, kind] for name, kind in keys],
        }

    def any_term_strings(self) -> set[str]:
        """Every term with its spaces removed, for the pre-check: if none occurs in the squashed
        text, no bag can hit."""
        squashed = {t for t, keys in self.singles.items() if any(k[1] != _NEGATIVE for k in keys)}
        return squashed | {
            s.replace(" ", "")
            for key, stems in self.stems.items()
            if key[1] != _NEGATIVE
            for s in stems
        }

    @classmethod
    def from_tables(cls, tables: Mapping[str, Any], keys: list[_Key]) -> _Index:
        """The index ``tables()`` wrote (``keys``: its ``keys`` as tuples), automata built."""
        index = cls()
        index.singles = {t: {keys[i] for i in ids} for t, ids in tables["singles"].items()}
        phrases: dict[tuple[str, str], list[tuple[tuple[str, ...], _Key]]] = {}
        for first, second, bucket in tables["phrases"]:
            phrases[first, second] = [(tuple(toks), keys[i]) for toks, i in bucket]
        index.phrases = phrases
        index.stems = {keys[i]: set(forms) for i, forms in tables["stems"]}
        index.origins = {
            (keys[i], stem, form): (text, lang) for i, stem, form, text, lang in tables["origins"]
        }
        index.prefixes = frozenset(tables["prefixes"])
        index._automata(tables["squashed"])
        return index

    def might_hit(self, text: str) -> bool:
        """Cheap, conservative pre-check for long texts (no false negatives): every way a term can
        match (a word, a phrase, adjacent words joined, a stem, letter spacing, camelCase) leaves
        it as a substring of the folded text with all separators removed."""
        view = squash(text)
        deleeted = _deleeted(text)
        if deleeted != text:
            view += "|" + squash(deleeted)
        return self.any_term.occurs_in(view)

    def hits(self, unit: _Unit) -> tuple[dict[_Key, _Match], dict[_Key, list[int]]]:
        """Every bag ``unit`` hits, with the first folded form that hit it, and the token
        positions of all its hits (to tell whether a negative stands next to a positive)."""
        out: dict[_Key, _Match] = {}
        where: dict[_Key, list[int]] = {}

        def note(keys: Iterable[_Key], match: _Match, at: int, *, joined: bool = False) -> None:
            for key in keys:
                if joined and key[1] == _NEGATIVE:
                    continue  # "PIN to" joined is not the negative "pinto"
                if key not in out:
                    out[key] = match
                where.setdefault(key, []).append(at)

        singles, prefixes = self.singles, self.prefixes
        toks = unit.tokens
        # Each token, and adjacent pairs and triples joined ("pass word", "2 f a"), looked up as
        # terms; a join is only built when its start is a prefix of some term.
        n = len(toks)
        for i, tok in enumerate(toks):
            keys = singles.get(tok)
            if keys:
                note(keys, (False, tok), i)
            if i + 1 < n and tok in prefixes:
                pair = tok + toks[i + 1]
                keys = singles.get(pair)
                # ("describe it in": "it" + "in" is no "ITIN")
                if keys and not _words_not_a_split(tok, toks[i + 1], pair):
                    note(keys, (False, pair), i, joined=True)
                if i + 2 < n and pair in prefixes:
                    triple = pair + toks[i + 2]
                    keys = singles.get(triple)
                    if keys:
                        note(keys, (False, triple), i, joined=True)
        phrases = self.phrases
        for i in range(n - 1):
            candidates = phrases.get((toks[i], toks[i + 1]))
            if candidates:
                for phrase, key in candidates:
                    if tuple(toks[i : i + len(phrase)]) == phrase:
                        note((key,), (False, "".join(phrase)), i)
        found = self.stem_set.occurrences(unit.text)
        if found:
            # a stem's character offset in the spaced text -> the token it starts in
            offsets = list(itertools.accumulate((len(t) + 1 for t in toks[:-1]), initial=0))
            for key in self.stems:  # in the order the bags were filled
                hit = found.get(key)
                if hit is not None:
                    stem, at = hit
                    if key not in out:
                        out[key] = (True, stem)
                    where.setdefault(key, []).extend(
                        bisect.bisect_right(offsets, a) - 1 for a in at
                    )
        return out, where

    def term(self, key: _Key, match: _Match | None) -> Term | None:
        origin = None if match is None else self.origins.get((key, *match))
        return None if origin is None or match is None else Term(*origin, stem=match[0])


# A negative word cancels a category's term only next to it: within this many words ("password
# settings", "length of the password", "number of backup codes"). Farther away it qualifies
# something else ("Enter your router password so we can change the DNS settings").
_NEGATION_REACH = 4


def _negates(where: Mapping[_Key, list[int]], category: str, negatives: list[_Key]) -> bool:
    """Whether the negatives present cancel ``category``: it has no term here (a negative then
    qualifies what another text asks), or each of its terms has a negative within reach."""
    for kind in (_STRONG, _GATED):
        spots = where.get((category, kind))
        if spots:
            near = sorted({q for k in negatives for q in where.get(k, ())})
            for p in spots:  # each term needs a negative within reach (a sorted search)
                i = bisect.bisect_left(near, p - _NEGATION_REACH)
                if i == len(near) or near[i] > p + _NEGATION_REACH:
                    return False
            return True
    return True


class Lexicon:
    """Compiled lexicon; build with :func:`base_lexicon` or :func:`lexicon_for`."""

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        extra: Mapping[str, Iterable[str]] | None = None,
        allow: Iterable[str] = (),
    ) -> None:
        shared = {
            name: (list(spec.get("terms", ())), list(spec.get("stems", ())))
            for name, spec in data.get("negative_sets", {}).items()
        }
        index = _Index()
        categories: list[Category] = []
        negated_by: dict[str, tuple[_Key, ...]] = {}
        # A shared negative set ("about": thousands of words) is indexed once, under its own
        # key; a hit on it negates every category that lists it.
        for set_name, (terms, stems) in shared.items():
            index.fill((f"@negative:{set_name}", _NEGATIVE), terms, stems)
        for name, spec in _with_concepts(data).items():
            categories.append(_category(name, spec))
            index.fill((name, _STRONG), spec.get("terms", ()), spec.get("stems", ()))
            index.fill((name, _GATED), spec.get("gated_terms", ()), spec.get("gated_stems", ()))
            neg = spec.get("negative") or {}
            index.fill((name, _NEGATIVE), neg.get("terms", ()), neg.get("stems", ()))
            negated_by[name] = (
                (name, _NEGATIVE),
                *((f"@negative:{n}", _NEGATIVE) for n in spec.get("negative_sets") or ()),
            )
            index.fill((name, _STRONG), (extra or {}).get(name, ()), ())
        ctx = data["card_context"]
        index.fill(_CARD_CONTEXT, ctx.get("terms", ()), ctx.get("stems", ()))
        # "numéro de carte", "nomor kartu", "カード番号": naming a card's number in any language
        # is card context (a bare "number" is not).
        card = (data.get("concepts") or {}).get("card_number") or {}
        index.fill(
            _CARD_CONTEXT,
            (t for t in _flat(card.get("gated_terms")) if len(_norm(t)) > 1 or len(t) >= 8),
            _flat(card.get("gated_stems")),
        )
        index.fill(_ALLOW, allow, ())
        index.fill(_CODE_WORD, data["code_words"], ())
        for bag, _ in _SIGNALS:
            ctx_spec = data.get(bag) or {}
            index.fill((f"@{bag}", _STRONG), ctx_spec.get("terms", ()), ctx_spec.get("stems", ()))
        index.compile()
        by_name = {c.name for c in categories}
        self._finish(
            index,
            tuple(categories),
            negated_by,
            frozenset(t for term in data["generic_fields"] for t in _norm(str(term))),
            # Exact, case-sensitive titles or keys ("PAT", "SK") and the category they name.
            {
                str(k): str(v)
                for k, v in (data.get("abbreviations") or {}).items()
                if str(v) in by_name
            },
        )

    def _finish(
        self,
        index: _Index,
        categories: tuple[Category, ...],
        negated_by: dict[str, tuple[_Key, ...]],
        generic: frozenset[str],
        abbreviations: dict[str, str],
    ) -> None:
        """Set the compiled parts, built from the data or restored from the snapshot."""
        self._index = index
        self.categories = categories
        self._negated_by = negated_by
        self._by_name = {c.name: c for c in categories}
        # A category's concepts (password, pin … of secret), most specific first in explanations.
        self._explained: dict[str, tuple[Category, ...]] = {
            c.name: (*(k for k in categories if k.parent == c.name), c) for c in categories
        }
        self._payment = frozenset(c.name for c in categories if c.reason is Reason.PAYMENT_FIELD)
        self._generic = generic
        self.abbreviations = abbreviations
        # Servers send the same schemas again and again: short texts (keys, titles) are cached.
        self._cached_scan = functools.lru_cache(maxsize=4096)(self._scan)

    def snapshot(self) -> dict[str, Any]:
        """Everything this lexicon compiled, as plain JSON data (see :meth:`restored`)."""
        # (with the keys of negative sets no term was listed under)
        tables = self._index.tables(k for keys in self._negated_by.values() for k in keys)
        ids = {(name, kind): i for i, (name, kind) in enumerate(tables["keys"])}
        return {
            **tables,
            "categories": [
                [c.name, c.reason.value, c.detail, c.severity.value, c.parent]
                for c in self.categories
            ],
            "negated_by": [
                [name, [ids[k] for k in keys]] for name, keys in self._negated_by.items()
            ],
            "generic": sorted(self._generic),
            "abbreviations": [[k, v] for k, v in self.abbreviations.items()],
        }

    @classmethod
    def restored(cls, snapshot: Mapping[str, Any]) -> Lexicon:
        """The lexicon :meth:`snapshot` described, without compiling anything but the automata."""
        keys: list[_Key] = [(str(name), int(kind)) for name, kind in snapshot["keys"]]
        lexicon = cls.__new__(cls)
        lexicon._finish(
            _Index.from_tables(snapshot, keys),
            tuple(
                Category(name, Reason(reason), detail, Severity(severity), parent)
                for name, reason, detail, severity, parent in snapshot["categories"]
            ),
            {name: tuple(keys[i] for i in ids) for name, ids in snapshot["negated_by"]},
            frozenset(snapshot["generic"]),
            {str(k): str(v) for k, v in snapshot["abbreviations"]},
        )
        return lexicon

    def category(self, name: str) -> Category:
        return self._by_name[name]

    def explain(self, hits: Hits, category: Category) -> tuple[Category, Term] | None:
        """The lexicon entry in ``hits`` behind ``category``: a term of one of its concepts
        (``mot de passe`` of *password*, fr) before one of its own untagged list, if any."""
        for candidate in self._explained.get(category.name, (category,)):
            term = hits.term(candidate.name)
            if term is not None:
                return candidate, term
        return None

    def scan(self, text: str) -> Hits:
        """Categories named by ``text`` (negatives applied), card context and genericity."""
        if len(text) <= _CACHE_TEXT_MAX:
            return self._cached_scan(text)
        return self._scan(text)

    def _scan(self, text: str) -> Hits:
        # Descriptions and messages are long and usually name nothing: skip tokenising them when
        # no term can occur. (Short texts are keys and titles, whose genericity matters.)
        if len(text) > _PREFILTER_MIN and not self._index.might_hit(text[:_MAX_SCAN_CHARS]):
            return Hits()
        unit = _unit(text)
        if not unit.words:
            return Hits(generic=True)
        index = self._index
        found, where = index.hits(unit)
        if _ALLOW in found:
            return Hits(allowed=True)
        strong: set[str] = set()
        gated: set[str] = set()
        negated: set[str] = set()
        terms: list[tuple[str, Term]] = []
        named = False  # some category's own term is present (negated or not)
        negated_by = self._negated_by
        for cat in self.categories:
            negatives = [k for k in negated_by[cat.name] if k in found]
            if negatives and _negates(where, cat.name, negatives):
                negated.add(cat.name)
                named = named or (cat.name, _STRONG) in found or (cat.name, _GATED) in found
                continue
            key = (cat.name, _STRONG)
            if key in found:
                strong.add(cat.name)
            else:
                key = (cat.name, _GATED)
                if key not in found:
                    continue
                gated.add(cat.name)
            term = index.term(key, found[key])
            if term is not None:
                terms.append((cat.name, term))
        return Hits(
            named=named or bool(strong or gated),
            strong=frozenset(strong),
            gated=frozenset(gated),
            card_context=(_CARD_CONTEXT in found and "card_number" not in negated)
            or not self._payment.isdisjoint(strong),
            generic=all(t in self._generic or t.isdigit() for t in unit.words),
            code_word=_CODE_WORD in found,
            negated=frozenset(negated),
            payment_words=_CARD_CONTEXT in found,
            terms=tuple(terms),
            **{flag: (f"@{bag}", _STRONG) in found for bag, flag in _SIGNALS},
        )


def _category(name: str, spec: Mapping[str, Any]) -> Category:
    parent = spec.get("parent")
    return Category(
        name=name,
        reason=Reason(spec["reason"]),
        detail=str(spec.get("detail", name)),
        severity=Severity.LOW if spec.get("severity") == "low" else Severity.HIGH,
        parent=None if parent is None else str(parent),
    )


_YAML_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)


def _flat(terms: object) -> list[str]:
    """Terms of a concept: a list, or per-language lists (``{de: [...], fr: [...]}``)."""
    return [text for text, _ in _tagged(terms)]


_ANY_LANGUAGE = "*"  # _merge_terms' key for a concept's untagged list


def _tagged(terms: object) -> list[tuple[str, str | None]]:
    """``_flat`` with each term's language key (None when the data gives none)."""
    if isinstance(terms, Mapping):
        return [
            (str(t), None if str(lang) == _ANY_LANGUAGE else str(lang))
            for lang, lang_terms in terms.items()
            for t in (lang_terms or ())
        ]
    if isinstance(terms, list):
        return [(str(t), None) for t in terms]
    return []


def _with_concepts(data: Mapping[str, Any]) -> dict[str, Any]:
    """lexicon.yaml's categories with concepts.yaml merged in, in priority order.

    A concept named like its category adds terms to it; any other concept becomes a category of
    its own right after its parent (same reason, severity and negatives unless it names its own;
    ``detail`` is the concept's name), so a finding says which concept it saw.
    """
    cats: dict[str, Any] = {name: dict(spec) for name, spec in data["categories"].items()}
    children: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for name, spec in (data.get("concepts") or {}).items():
        parent = str(spec["category"])
        # terms keep their language (explanations say which language's term matched)
        kinds = {k: _tagged(spec.get(k)) for k in ("terms", "stems", "gated_terms", "gated_stems")}
        if name == parent:
            merged = cats[parent]
            for kind, terms in kinds.items():
                merged[kind] = [*merged.get(kind, ()), *terms]
            extra = spec.get("negative_extra") or {}
            if extra:
                neg = dict(merged.get("negative") or {})
                for kind in ("terms", "stems"):
                    neg[kind] = [*(neg.get(kind) or ()), *_flat(extra.get(kind))]
                merged["negative"] = neg
            continue
        base = cats[parent]
        child: dict[str, Any] = {
            "reason": base["reason"],
            "severity": base.get("severity", "high"),
            "detail": name.replace("_", "-"),
            **kinds,
            "negative": _negative(spec, base),
            "negative_sets": spec.get("negative_sets", base.get("negative_sets")),
            "parent": parent,
        }
        children.setdefault(parent, []).append((name, child))
    return dict(
        pair for name, spec in cats.items() for pair in ((name, spec), *children.get(name, ()))
    )


def _negative(spec: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, list[str]]:
    """A concept's negatives: its own (``negative``) or its category's, plus ``negative_extra``."""
    own = spec["negative"] if "negative" in spec else (base.get("negative") or {})
    extra = spec.get("negative_extra") or {}
    return {
        kind: [*(own or {}).get(kind, ()), *_flat(extra.get(kind))] for kind in ("terms", "stems")
    }


def _load_yaml(name: str) -> Any:
    """A data file: its compiled JSON twin (``data/compiled/``) when that was made from exactly
    these bytes (JSON loads ~30x faster than YAML: start-up), else the YAML itself."""
    raw = resources.files("gateway").joinpath(f"data/{name}").read_bytes()
    compiled = _compiled().get(name)
    if compiled is not None and compiled["sha256"] == hashlib.sha256(raw).hexdigest():
        return compiled["data"]
    return _parse_yaml(raw.decode("utf-8"))


def _parse_yaml(text: str) -> Any:
    loader = _YAML_LOADER(text)  # a safe loader; libyaml's is ~6x faster than pure Python
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


COMPILED = "compiled/lexicon-data.json"  # under gateway/data; `make lexicon` writes it


@functools.cache
def _compiled() -> Mapping[str, Any]:
    return read_twin(Path(str(resources.files("gateway").joinpath(f"data/{COMPILED}"))))


def read_twin(path: Path) -> Mapping[str, Any]:
    """The compiled twin at ``path``; empty when missing or damaged (a lost shortcut only: the
    YAML files are the data, and each entry is used only when its YAML's hash matches)."""
    if not path.is_file():
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def data_files() -> list[str]:
    """The YAML data files of the lexicon, as names under gateway/data."""
    folder = resources.files("gateway").joinpath("data/concepts")
    more = sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml"))
    return ["lexicon.yaml", "concepts.yaml", *(f"concepts/{n}" for n in more)]


_WORDS_ENTRY = "(words of every term)"


def write_compiled() -> None:
    """Write the compiled twin (``make lexicon``): the data and the base lexicon's index, each
    file atomically: a process starting meanwhile reads the old file or the new one, never half
    of one (and an index whose sources differ from the files it finds is not used)."""
    twin = compile_data()
    for name, text in ((COMPILED, twin), (INDEX, compile_index(twin))):
        target = Path(str(resources.files("gateway").joinpath(f"data/{name}")))
        temporary = target.with_suffix(".tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(target)


def _parsed_files() -> dict[str, Any]:
    """Every data file parsed from its YAML, with the hash of its bytes, by name."""
    out: dict[str, Any] = {}
    for name in data_files():
        raw = resources.files("gateway").joinpath(f"data/{name}").read_bytes()
        out[name] = {
            "sha256": hashlib.sha256(raw).hexdigest(),
            "data": _parse_yaml(raw.decode("utf-8")),
        }
    return out


def compile_data() -> str:
    """The compiled twin of every data file (JSON text), and the words of every term as this
    normaliser makes them: ``make lexicon`` writes it to gateway/data/compiled/lexicon-data.json;
    a test checks it is current."""
    global _RECORDING  # noqa: PLW0603 - only while compiling
    out = _parsed_files()
    recorded: dict[str, list[str]] = {}
    _RECORDING = recorded
    _norm.cache_clear()
    _prepared.cache_clear()
    try:
        Lexicon(_build_data(out))
    finally:
        _RECORDING = None
        _norm.cache_clear()
        _prepared.cache_clear()
    out[_WORDS_ENTRY] = {"sha256": _normaliser_fingerprint(), "data": recorded}
    return json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


INDEX = "compiled/lexicon-index.json"  # under gateway/data; `make lexicon` writes it too


def _sources_fingerprint() -> str:
    """What the base lexicon's index is made from: every data file's bytes, this module (how
    the index is built) and the normaliser (how terms are read)."""
    digest = hashlib.sha256()
    for name in data_files():
        raw = resources.files("gateway").joinpath(f"data/{name}").read_bytes()
        digest.update(f"{name}\0{hashlib.sha256(raw).hexdigest()}\0".encode())
    digest.update(resources.files("gateway").joinpath("detect/lexicon.py").read_bytes())
    digest.update(b"\0" + _normaliser_fingerprint().encode())
    return digest.hexdigest()


def compile_index(twin: str | None = None) -> str:
    """The base lexicon's index, compiled from the YAML files, as JSON text (``make lexicon``
    writes it to gateway/data/compiled/lexicon-index.json; a test checks it is current). At
    start-up :func:`base_lexicon` loads these tables instead of indexing every term again.
    ``twin``: :func:`compile_data`'s text, when the caller has it already."""
    # Built from the data exactly as the gateway reads it: the compiled twin's JSON, whose keys
    # are sorted (the order in which terms are indexed shows, e.g. in an explanation's languages).
    files = json.loads(compile_data() if twin is None else twin)
    lexicon = Lexicon(_build_data(files))
    out = {"sha256": _sources_fingerprint(), "lexicon": lexicon.snapshot()}
    return json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def _index_snapshot() -> Mapping[str, Any] | None:
    """The compiled index when it was made from exactly these sources, else None."""
    loaded = read_twin(Path(str(resources.files("gateway").joinpath(f"data/{INDEX}"))))
    if loaded.get("sha256") != _sources_fingerprint():
        return None
    snapshot = loaded.get("lexicon")
    return snapshot if isinstance(snapshot, dict) else None


@functools.cache
def _data() -> Mapping[str, Any]:
    return _build_data({name: {"data": _load_yaml(name)} for name in data_files()})


def _build_data(files: Mapping[str, Any]) -> dict[str, Any]:
    """lexicon.yaml with concepts.yaml and the language-group files merged in (``files``: the
    loaded data of each, by name, as ``{"data": …}``)."""
    data = copy.deepcopy(files["lexicon.yaml"]["data"])
    if not isinstance(data, dict) or "categories" not in data:
        raise ValueError("lexicon.yaml: missing 'categories'")
    concepts = copy.deepcopy(files["concepts.yaml"]["data"])
    if isinstance(concepts, dict):
        data["concepts"] = concepts.get("concepts") or {}
        data["abbreviations"] = concepts.get("abbreviations") or {}
        for name in data_files()[2:]:
            more = files[name]["data"]  # only read
            _merge_terms(data["concepts"], more, name)
            _merge_contexts(data, more, name)
    return data


_TERM_KINDS = ("terms", "stems", "gated_terms", "gated_stems", "negative_terms", "negative_stems")


def _more_concepts() -> list[tuple[str, Any]]:
    """``data/concepts/*.yaml``, by name: more terms per language for concepts.yaml's concepts
    (one file per language group, so that each can be reviewed on its own)."""
    folder = resources.files("gateway").joinpath("data/concepts")
    if not folder.is_dir():
        return []
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml"))
    return [(f"concepts/{n}", _load_yaml(f"concepts/{n}")) for n in names]


def _merge_terms(concepts: dict[str, Any], more: Any, name: str) -> None:
    """Add a file's per-language term lists to the concepts it names; a concept or a key that
    concepts.yaml does not define is an error naming the file."""
    if not isinstance(more, dict) or not isinstance(more.get("concepts", {}), dict):
        raise ValueError(f"{name}: expected a mapping 'concepts'")  # noqa: TRY004
    if not {"concepts", "contexts", "negative_sets"} & set(more):
        raise ValueError(f"{name}: expected a mapping 'concepts', 'contexts' or 'negative_sets'")
    for concept, spec in (more.get("concepts") or {}).items():
        if concept not in concepts:
            raise ValueError(f"{name}: concepts.{concept}: unknown concept")
        if not isinstance(spec, dict):
            raise ValueError(f"{name}: concepts.{concept}: expected a mapping")  # noqa: TRY004
        target = concepts[concept]
        for kind, per_language in spec.items():
            if kind not in _TERM_KINDS or not isinstance(per_language, dict):
                raise ValueError(
                    f"{name}: concepts.{concept}.{kind}: expected one of {_TERM_KINDS}"
                    " with terms per language"
                )
            home, slot = target, kind
            if kind.startswith("negative_"):
                # words that cancel this concept's terms next to them ("numéro de suivi")
                home, slot = target.setdefault("negative_extra", {}), kind.removeprefix("negative_")
            have = home.get(slot)
            if have is None:
                have = home[slot] = {}
            elif isinstance(have, list):
                have = home[slot] = {"*": have}
            for language, terms in per_language.items():
                if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
                    raise ValueError(
                        f"{name}: concepts.{concept}.{kind}.{language}: expected a list of text"
                    )
                key = str(language)
                have[key] = [*(have.get(key) or ()), *terms]


# lexicon.yaml's signal bags that language-group files may add to (terms and stems per
# language); code_words and generic_fields are plain lists there.
CONTEXT_BAGS = ("card_context", *(bag for bag, _ in _SIGNALS))
WORD_LISTS = ("code_words", "generic_fields")


def _merge_contexts(data: dict[str, Any], more: Any, name: str) -> None:
    """Add a file's ``contexts`` (more words per language for lexicon.yaml's signal bags) and
    ``negative_sets`` (more words per language for lexicon.yaml's shared negatives, e.g.
    ``about``: "name", "symbol", "hint" in every language)."""
    negative_sets = more.get("negative_sets") or {}
    if not isinstance(negative_sets, dict):
        raise ValueError(f"{name}: negative_sets: expected a mapping")  # noqa: TRY004
    for set_name, spec in negative_sets.items():
        where = f"{name}: negative_sets.{set_name}"
        known = data.get("negative_sets") or {}
        if set_name not in known or not isinstance(spec, dict):
            raise ValueError(f"{where}: expected one of {sorted(known)} (terms/stems per language)")
        for kind, per_language in spec.items():
            if kind not in ("terms", "stems"):
                raise ValueError(f"{where}.{kind}: expected terms or stems")
            added = _per_language(per_language, f"{where}.{kind}")
            known[set_name][kind] = [*(known[set_name].get(kind) or ()), *added]
    contexts = more.get("contexts") or {}
    if not isinstance(contexts, dict):
        raise ValueError(f"{name}: contexts: expected a mapping")  # noqa: TRY004
    for bag, spec in contexts.items():
        where = f"{name}: contexts.{bag}"
        if bag in WORD_LISTS:
            data[bag] = [*(data.get(bag) or ()), *_per_language(spec, where)]
            continue
        if bag not in CONTEXT_BAGS or not isinstance(spec, dict):
            raise ValueError(
                f"{where}: expected one of {CONTEXT_BAGS + WORD_LISTS} (terms/stems per language)"
            )
        target = data.setdefault(bag, {})
        for kind, per_language in spec.items():
            if kind not in ("terms", "stems"):
                raise ValueError(f"{where}.{kind}: expected terms or stems")
            added = _per_language(per_language, f"{where}.{kind}")
            target[kind] = [*(target.get(kind) or ()), *added]


def _per_language(spec: Any, where: str) -> list[str]:
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: expected lists per language")  # noqa: TRY004
    out: list[str] = []
    for language, listed in spec.items():
        if not isinstance(listed, list) or not all(isinstance(w, str) for w in listed):
            raise ValueError(f"{where}.{language}: expected a list of text")
        out += listed
    return out


@functools.cache
def base_lexicon() -> Lexicon:
    """The bundled lexicon, compiled once: restored from its compiled index when that is
    current (start-up time), else compiled from the data."""
    with _collector_paused():
        snapshot = _index_snapshot()
        if snapshot is not None:
            try:
                return Lexicon.restored(snapshot)
            except (KeyError, IndexError, TypeError, ValueError):
                pass  # a damaged snapshot is only a lost shortcut
        return Lexicon(_data())


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while the lexicon is built: hundreds of
    thousands of new containers (plain tables, no cycles to find) would make it walk the
    growing heap again and again (a third of the build, measured at start-up). Re-enabled
    after, if it was on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@functools.lru_cache(maxsize=32)
def lexicon_for(cfg: FormConfig) -> Lexicon:
    """The bundled lexicon plus the operator's extra terms and allow terms from ``cfg``."""
    if not (
        cfg.extra_secret_terms
        or cfg.extra_payment_terms
        or cfg.extra_sensitive_pii_terms
        or cfg.allow_terms
    ):
        return base_lexicon()
    extra = {
        "secret": sorted(cfg.extra_secret_terms),
        "card_number": sorted(cfg.extra_payment_terms),
        "sensitive_pii": sorted(cfg.extra_sensitive_pii_terms),
    }
    return Lexicon(_data(), extra=extra, allow=sorted(cfg.allow_terms))
