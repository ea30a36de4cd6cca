"""Text normalisation for detection: one folded view of hostile text.

Hostile servers hide keywords from naive matching with look-alike letters from other scripts
(Cyrillic ``раssword``), fullwidth or mathematical letters (NFKC undoes those), invisible characters
(``pass\\u200bword``), letter spacing (``p a s s w o r d``), case tricks and encodings. Everything
here is linear in the input size and never raises on any ``str``.

* :func:`fold` — NFKC, invisible characters removed, Latin look-alikes mapped to ASCII, casefold,
  combining marks on Latin letters dropped (``contraseña`` → ``contrasena``). Lexicon terms go
  through the same function, so matching is consistent whatever the language.
* :func:`has_invisible` — zero-width, bidi-control, tag and other invisible characters *used to
  hide text*; legitimate uses (emoji ZWJ sequences, ZWNJ in Persian/Indic words, one variation
  selector after a symbol, marks inside right-to-left text, flag tag sequences) are not reported.
* :func:`words` — folded word tokens after camelCase, snake_case, kebab-case and letter-spacing
  splits.
* :func:`decode_layers` — the text plus bounded percent / base64 / base64url / hex decodings.

The look-alike table is written for keyword matching (it is deliberately generous: lower- and
upper-case Cyrillic, Greek, Armenian, Cherokee and Latin small capitals that *render* like an ASCII
letter). It is not a UTS #39 skeleton; host names are compared with the Unicode data elsewhere.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import string
import unicodedata
from urllib.parse import unquote

import re2

__all__ = [
    "decode_layers",
    "fold",
    "has_invisible",
    "has_lookalikes",
    "squash",
    "strip_invisible",
    "words",
]

# --- invisible characters --------------------------------------------------------------------

_BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"  # embeddings, overrides, isolates: always hostile
_BIDI_MARKS = "\u200e\u200f\u061c"  # LRM, RLM, ALM: normal inside right-to-left text
_JOINERS = "\u200c\u200d"  # ZWNJ, ZWJ: normal in emoji sequences and some scripts
_VARIATION = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_TAGS = "\U000e0000-\U000e007f"
_OTHER_INVISIBLE = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0/C1 controls except tab, LF, CR
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u2060-\u2064\u206a-\u206f"
    "\u2800\u3164\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
)
_ALL_INVISIBLE = _BIDI_CONTROLS + _BIDI_MARKS + _JOINERS + _VARIATION + _TAGS + _OTHER_INVISIBLE
_INVISIBLE_RE = re.compile(f"[{_ALL_INVISIBLE}]")
_ALWAYS_BAD_RE = re.compile(f"[{_BIDI_CONTROLS}{_OTHER_INVISIBLE}]")
_CONTEXT_RE = re.compile(f"[{_BIDI_MARKS}{_JOINERS}{_VARIATION}{_TAGS}]+")
# The ASCII characters of _ALWAYS_BAD_RE (C0 controls except tab, LF, CR; DEL), for bytes.translate.
_ASCII_INVISIBLE = bytes(b for b in range(128) if _ALWAYS_BAD_RE.match(chr(b)))
_RTL_RE = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe\U00010800-\U00010fff]")
_FLAG_TAGS_RE = re.compile("\U0001f3f4[\U000e0020-\U000e007e]{1,16}\U000e007f")


def _is_emoji(ch: str) -> bool:
    cp = ord(ch)
    return (
        cp >= 0x1F000
        or 0x2190 <= cp <= 0x2BFF
        or 0x2600 <= cp <= 0x27BF
        or cp in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D, 0x3297, 0x3299)
    )


def _is_joining_script(ch: str) -> bool:
    """A letter or mark of a script where ZWJ/ZWNJ shape words (Arabic, Indic, …), not Latin."""
    cp = ord(ch)
    if cp < 0x0590 or 0x1D00 <= cp <= 0x1FFF or 0x2C00 <= cp <= 0x2E7F or 0xA640 <= cp <= 0xA7FF:
        return False
    return unicodedata.category(ch)[0] in "LM"


def _context_run_ok(text: str, start: int, run: str, rtl: bool) -> bool:
    """Is this run of context-dependent invisible characters a legitimate use?"""
    prev = text[start - 1] if start > 0 else ""
    nxt = text[start + len(run)] if start + len(run) < len(text) else ""
    if all(c in _BIDI_MARKS for c in run):
        return rtl
    if run in _JOINERS:
        if run == "\u200d" and prev and nxt and (_is_emoji(prev) or prev == "\ufe0f"):
            return _is_emoji(nxt)
        return bool(prev and nxt and _is_joining_script(prev) and _is_joining_script(nxt))
    if len(run) == 1 and ("\ufe00" <= run <= "\ufe0f" or run >= "\U000e0100"):
        # One variation selector after a symbol, emoji, digit (keycaps) or ideograph.
        if not prev:
            return False
        return not prev.isascii() or prev.isdigit() or prev in "#*"
    if run == "\ufe0f\u200d" and prev and nxt:  # emoji presentation inside a ZWJ sequence
        return _is_emoji(prev) and _is_emoji(nxt)
    return False


def has_invisible(text: str) -> bool:
    """True when ``text`` holds invisible characters that can hide or reorder what a user reads."""
    if text.isascii():
        return _ALWAYS_BAD_RE.search(text) is not None
    if _ALWAYS_BAD_RE.search(text) is not None:
        return True
    if _CONTEXT_RE.search(text) is None:
        return False
    if "\U0001f3f4" in text:
        text = _FLAG_TAGS_RE.sub("\U0001f3f4", text)
    rtl = _RTL_RE.search(text) is not None
    return any(
        not _context_run_ok(text, m.start(), m.group(), rtl) for m in _CONTEXT_RE.finditer(text)
    )


def strip_invisible(text: str) -> str:
    """Remove every invisible character (legitimate or not) listed above."""
    return _INVISIBLE_RE.sub("", text)


# --- digits read as letters -------------------------------------------------------------------

# The one table of digits that stand for letters ("passw0rd", "paypa1", "s3cret"). Where "1"
# stands for "i" (a word: "p1n", leetspeak) or for "l" (a host name: "paypa1") depends on the
# context, so each user adds its reading of "1" (and of "|", "@", "$") to this table.
DIGIT_LETTERS: dict[str, str] = {"0": "o", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b"}


# --- look-alike letters ------------------------------------------------------------------------

# Pairs of (look-alike characters, ASCII letter). Upper-case look-alikes map to upper-case ASCII
# before casefolding, so Cyrillic "Н" (looks like H) and "н" (small-capital H) both become "h",
# while Greek "Ν" (N) and "ν" (v) keep their distinct shapes.
_LOOKALIKES: dict[str, str] = {
    # Cyrillic
    "АА": "A", "а": "a", "Вв": "B", "Сс": "C", "Ее": "E", "е": "e", "Нн": "H", "һ": "h",
    "ІӀ": "I", "іӏ": "i", "Јј": "J", "Кк": "K", "Мм": "M", "Оо": "O", "Рр": "P", "Ѕѕ": "S",
    "Тт": "T", "Хх": "X", "УҮ": "Y", "уү": "y", "ԁ": "d", "Ԛԛ": "Q", "Ԝԝ": "W", "п": "n",
    "г": "r", "ԍ": "G", "Ԁ": "D", "ѵ": "v", "Ѵ": "V", "ɡ": "g", "ԛ": "q", "ѡ": "w",
    # Greek
    "Α": "A", "α": "a", "Β": "B", "Ε": "E", "ε": "e", "Ζ": "Z", "Η": "H", "η": "n",
    "Ι": "I", "ι": "i", "Κ": "K", "κ": "k", "Μ": "M", "Ν": "N", "ν": "v", "Ο": "O",
    "ο": "o", "Ρ": "P", "ρ": "p", "Τ": "T", "τ": "t", "Υ": "Y", "υ": "u", "Χ": "X",
    "χ": "x", "ϲ": "c", "Ϲ": "C", "ϳ": "j", "Ϳ": "J",
    # Armenian
    "օ": "o", "Օ": "O", "ս": "u", "Ս": "U", "ց": "g", "հ": "h", "ո": "n", "զ": "q",
    "ա": "w", "Տ": "S", "Լ": "L", "ւ": "l",
    # Cherokee (upper-case letters; casefolding would turn them into other Cherokee letters)
    "Ꭺ": "A", "Ᏼ": "B", "Ꮯ": "C", "Ꭰ": "D", "Ꭼ": "E", "Ꮐ": "G", "Ꮋ": "H", "Ꭻ": "J",
    "Ꮶ": "K", "Ꮮ": "L", "Ꮇ": "M", "Ꮲ": "P", "Ꮢ": "R", "Ꮪ": "S", "Ꭲ": "T", "Ꮩ": "V",
    "Ꮃ": "W", "Ꮓ": "Z",
    # Latin letters and small capitals that look like plain ASCII letters
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɩ": "i", "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d",
    "ᴇ": "e", "ɢ": "g", "ʜ": "h", "ɪ": "i", "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m",
    "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v",
    "ᴡ": "w", "ʏ": "y", "ᴢ": "z", "ɒ": "a", "ℓ": "l", "ǀ": "l", "ꓲ": "I",
}  # fmt: skip


def _lookalike_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for chars, ascii_ in _LOOKALIKES.items():
        for ch in chars:
            # A pair ("Оо") maps each case to the same case, so camelCase survives the mapping.
            paired = len(chars) > 1
            table[ord(ch)] = (
                (ascii_.lower() if ch.islower() else ascii_.upper()) if paired else ascii_
            )
    return table


_LOOKALIKE_TABLE = _lookalike_table()


def has_lookalikes(text: str) -> bool:
    """True when ``text`` holds a letter of another script that renders like an ASCII letter
    (Cyrillic ``а``, Greek ``ο``, …): a sign of a disguised name."""
    return not text.isascii() and any(ord(c) in _LOOKALIKE_TABLE for c in text)


# Dots that browsers and IDNA treat as label separators.
_DOTS = {ord("\u3002"): ".", ord("\uff61"): ".", ord("\uff0e"): "."}
_TABLE = {**_LOOKALIKE_TABLE, **_DOTS}
_LATIN_MARKS_RE = re.compile(
    r"(?<=[A-Za-z])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff]+"
)


def _prefold(text: str) -> str:
    """Invisible characters removed, NFKC, look-alikes mapped; case kept (for camelCase)."""
    if text.isascii():
        return text.encode().translate(None, _ASCII_INVISIBLE).decode()
    if _PREFOLD_CACHE_MIN <= len(text) <= _PREFOLD_CACHE_MAX:
        return _prefold_long(text)
    return _prefold_unicode(text)


# Long texts only (short ones are cheap), and never huge ones (the cache keeps them alive):
# at most 8 x 64 Ki characters, twice.
_PREFOLD_CACHE_MIN, _PREFOLD_CACHE_MAX = 512, 65_536


@functools.lru_cache(maxsize=8)
def _prefold_long(text: str) -> str:
    """The lexicon folds a long message twice (pre-check, then words): do the Unicode work once."""
    return _prefold_unicode(text)


def _prefold_unicode(text: str) -> str:
    text = unicodedata.normalize("NFKC", strip_invisible(text)).translate(_TABLE)
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", _LATIN_MARKS_RE.sub("", decomposed))


def _finish(text: str) -> str:
    folded = text.casefold()
    return folded if folded.isascii() else folded.translate(_TABLE)


def fold(text: str) -> str:
    """The matching view of ``text``: NFKC, casefolded, invisibles removed, look-alikes to ASCII."""
    return _finish(_prefold(text))


# --- word tokens ---------------------------------------------------------------------------------

# camelCase, ABCWord and letter/digit boundaries (ASCII case only: other scripts never split).
_SPLIT_RE = re.compile(
    r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])"
)
_NEEDS_SPLIT_RE = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]|[A-Za-z][0-9]|[0-9][A-Za-z]")


def _mark_class() -> str:
    """Combining marks (Mn, Mc): vowel signs of Indic scripts, Arabic harakat, kana voicing marks.
    ``\\w`` leaves them out, which would cut "पासवर्ड" into pieces."""
    blocks = ((0x0300, 0x3100), (0xA800, 0xAC00), (0xFB1E, 0xFE30), (0x10000, 0x11FFF))
    marks = [
        chr(cp)
        for lo, hi in blocks
        for cp in range(lo, hi)
        if unicodedata.category(chr(cp)) in ("Mn", "Mc")
    ]
    return "".join(marks)


# Chunks of word characters or of marks; the plain pattern is several times faster and enough
# when no combining mark is left (ASCII text, or marks composed/stripped by _prefold).
_TOKEN_RE = re.compile(f"(?:[^\\W_]+|[{_mark_class()}]+)+")
_PLAIN_TOKEN_RE = re.compile(r"[^\W_]+")
# Three or more single letters/digits separated by the same short gap: "p a s s", "p.a.s.s".
# Linear: a run can only start after a non-alphanumeric character, every element checks that it
# is a single character, and the possessive repetition never backtracks.
# An element is one letter or digit, or one combining mark standing alone: Thai, Indic and other
# scripts spelled out letter by letter ("ร ห ั ส ผ ่ า น") space their vowel signs too.
_MARKS = _mark_class()
_SPACED_EL = f"(?:[^\\W_]|[{_MARKS}])"
_SPACED_NOT_EL = f"(?![^\\W_]|[{_MARKS}])"
_SPACED_RUN_RE = re.compile(
    f"(?<![^\\W_]){_SPACED_EL}(?P<gap>[ .\\-_*·•|/\\\\~+]{{1,3}}){_SPACED_EL}{_SPACED_NOT_EL}"
    f"(?:(?P=gap){_SPACED_EL}{_SPACED_NOT_EL})++"
)


def _join_run(m: re.Match[str]) -> str:
    return "".join(ch for ch in m.group() if ch.isalnum() or ch in _MARKS).lower()


# ASCII fast paths (RE2 scans in linear time without Python's per-position overhead: ~40x faster
# on long texts). Only used on ASCII text: the RE2 binding cannot encode lone surrogates. Below
# _RE2_MIN_LEN characters the binding's fixed cost per call outweighs the gain.
_RE2_MIN_LEN = 256
_NEEDS_SPLIT_RE2 = re2.compile(_NEEDS_SPLIT_RE.pattern)
# A maximal run of ASCII letters/digits holding a split point: every _SPLIT_RE boundary lies
# inside one (all its look-arounds are ASCII letters/digits), so splitting the runs is the same.
_SPLIT_RUN_RE2 = re2.compile(r"[A-Za-z0-9]*(?:" + _NEEDS_SPLIT_RE.pattern + r")[A-Za-z0-9]*")
# Necessary for a _SPACED_RUN_RE match in ASCII text: three single letters/digits, each two
# separated by one to three gap characters (the pattern also needs the gaps to be equal).
_ASCII_GAP = r"[ .\-_*|/\\~+]{1,3}"
_SPACED_HINT_RE2 = re2.compile(
    rf"(?:^|[^A-Za-z0-9])[A-Za-z0-9]{_ASCII_GAP}[A-Za-z0-9]{_ASCII_GAP}[A-Za-z0-9](?:$|[^A-Za-z0-9])"
)
_ASCII_ALNUM = (string.ascii_letters + string.digits).encode()
_NOT_ALNUM = bytes(b for b in range(128) if b not in _ASCII_ALNUM)
_NOT_ALNUM_TO_SPACE = bytes.maketrans(_NOT_ALNUM, b" " * len(_NOT_ALNUM))


def _split_ascii(text: str) -> str:
    """``_SPLIT_RE.sub(" ", text)`` for ASCII text, touching only the runs that need a split."""
    if _NEEDS_SPLIT_RE2.search(text) is None:
        return text
    out: list[str] = []
    last = 0
    for m in _SPLIT_RUN_RE2.finditer(text):
        out.append(text[last : m.start()])
        out.append(_SPLIT_RE.sub(" ", m.group()))
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def words(text: str) -> list[str]:
    """Folded word tokens: ``"newAPIKey"`` → ``["new", "api", "key"]``, ``"p a s s"`` → ``[pass]``.

    Words split at camelCase, snake_case, kebab-case and at letter/digit boundaries
    (``"password2"`` → ``["password", "2"]``); matchers also try adjacent tokens joined, so
    ``"2fa"`` and ``"pass_word"`` still match their terms. A run of three or more single
    characters separated by the same gap of up to three spacing characters (no newline) is merged
    into one word. Terms and text go through this same function, so splits are consistent.
    """
    pre = _prefold(text)
    if pre.isascii():
        if len(pre) < _RE2_MIN_LEN:
            pre = _SPACED_RUN_RE.sub(_join_run, pre)
            if _NEEDS_SPLIT_RE.search(pre):
                pre = _SPLIT_RE.sub(" ", pre)
        else:
            if _SPACED_HINT_RE2.search(pre) is not None:
                pre = _SPACED_RUN_RE.sub(_join_run, pre)
            pre = _split_ascii(pre)
        # Still ASCII (a merged letter-spaced run is lower-cased ASCII): tokens are the runs of
        # ASCII letters and digits, as _PLAIN_TOKEN_RE finds them.
        return pre.casefold().encode().translate(_NOT_ALNUM_TO_SPACE).decode().split()
    pre = _SPACED_RUN_RE.sub(_join_run, pre)
    if _NEEDS_SPLIT_RE.search(pre):
        pre = _SPLIT_RE.sub(" ", pre)
    folded = _finish(pre)
    return (_PLAIN_TOKEN_RE if folded.isascii() else _TOKEN_RE).findall(folded)


def squash(text: str) -> str:
    """The folded words of ``text`` with nothing between them: ``"API-Key"`` → ``"apikey"``.

    Every word, phrase, joined pair and stem that :func:`words`-based matching can find is a
    substring of this view (splitting and letter-spacing merges only move separators), so it is
    a sound, cheap pre-check for long texts.
    """
    folded = fold(text)
    if folded.isascii():
        return folded.encode().translate(None, _NOT_ALNUM).decode()
    return "".join((_PLAIN_TOKEN_RE if folded.isascii() else _TOKEN_RE).findall(folded))


# --- bounded decoding --------------------------------------------------------------------------

# Linear with Python ``re``: one character class, greedy, nothing to backtrack into.
_PERCENT_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_B64_RE = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_HEX_RE = re.compile(r"[0-9A-Fa-f]+")
_MAX_CANDIDATES = 64  # encoded substrings tried per layer


def _printable(text: str) -> bool:
    return len(text) >= 4 and all(c.isprintable() or c in "\t\r\n" for c in text)


def _utf8(raw: bytes) -> str | None:
    try:
        out = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return out if _printable(out) else None


def _b64(token: str) -> str | None:
    core = token.rstrip("=")
    if len(core) % 4 == 1:
        return None
    padded = core + "=" * (-len(core) % 4)
    alt = "-_" if ("-" in core or "_" in core) else "+/"
    if alt == "-_" and ("+" in core or "/" in core):
        return None
    try:
        raw = base64.b64decode(padded, altchars=alt.encode(), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _utf8(raw)


def _decodings(text: str, budget: int) -> list[str]:
    """One round of decodings of ``text`` (percent of the whole, base64/hex of substrings)."""
    out: list[str] = []
    if len(text) > budget:
        return out
    if "%" in text and _PERCENT_RE.search(text):
        decoded = _unquote(text)
        if decoded is not None and decoded != text and _printable(decoded):
            out.append(decoded)
    for n, m in enumerate(_B64_RE.finditer(text)):
        if n >= _MAX_CANDIDATES:
            break
        token = m.group()
        decoded = _b64(token)
        if decoded is not None:
            out.append(decoded)
        if len(token) >= 32 and len(token) % 2 == 0 and _HEX_RE.fullmatch(token):
            decoded = _utf8(bytes.fromhex(token))
            if decoded is not None:
                out.append(decoded)
    return out


def _unquote(text: str) -> str | None:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        return None


def decode_layers(text: str, depth: int, max_len: int = 65536) -> list[str]:
    """``text`` first, then its percent/base64/base64url/hex decodings that are printable UTF-8,
    nested up to ``depth`` rounds. Decoding stops once ``max_len`` characters were produced."""
    layers = [text]
    frontier = [text]
    budget = max_len
    for _ in range(max(0, depth)):
        nxt: list[str] = []
        for item in frontier:
            for decoded in _decodings(item, budget):
                if decoded in layers or len(decoded) > budget:
                    continue
                budget -= len(decoded)
                layers.append(decoded)
                nxt.append(decoded)
        if not nxt:
            break
        frontier = nxt
    return layers
