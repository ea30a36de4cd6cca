"""gateway.detect.normalize: folding, invisible characters, word splitting, bounded decoding."""

from __future__ import annotations

import base64
import time
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.detect.normalize import decode_layers, fold, has_invisible, strip_invisible, words

# ---------------------------------------------------------------- fold


@pytest.mark.parametrize(
    "text",
    [
        "password",
        "PASSWORD",
        "раssword",  # Cyrillic р, а
        "РАSSWОRD",  # Cyrillic upper-case Р, А, О
        "pαsswοrd",  # Greek α, ο
        "ΡΑSSWΟRD",  # Greek upper-case Ρ, Α, Ο
        "ｐａｓｓｗｏｒｄ",  # fullwidth
        "𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝",  # mathematical bold
        "pass\u200bword",  # zero-width space
        "pa\u00adss\u2060word",  # soft hyphen, word joiner
        "pässwörd",  # accents on Latin letters
        "ᴘᴀssᴡᴏʀᴅ",  # Latin small capitals
        "p\u0430ss\ufeffw\u043erd",  # BOM and Cyrillic mixed in
    ],
)
def test_fold_recovers_the_ascii_keyword(text: str) -> None:
    assert fold(text) == "password"


def test_fold_is_idempotent_and_casefolds() -> None:
    for text in ("Straße", "ΣΊΣΥΦΟΣ", "İstanbul", "パスワード", "Пароль"):
        assert fold(fold(text)) == fold(text)
    assert fold("STRASSE") == fold("straße")


def test_fold_keeps_scripts_without_latin_lookalikes() -> None:
    assert fold("パスワード") == "パスワード"
    assert fold("密码") == "密码"
    assert fold("비밀번호") == "비밀번호"


def test_fold_drops_accents_consistently() -> None:
    assert fold("Contraseña") == "contrasena"
    assert fold("Prüfnummer") == "prufnummer"
    assert fold("Numéro de carte") == "numero de carte"


# ---------------------------------------------------------------- invisible characters


@pytest.mark.parametrize(
    "text",
    [
        "pass\u200bword",  # zero-width space
        "pass\u200cword",  # ZWNJ between Latin letters
        "pass\u200dword",  # ZWJ between Latin letters
        "abc\u202edcba",  # right-to-left override
        "a\u2066b\u2069c",  # isolates
        "soft\u00adhyphen",
        "\ufeffbom",
        "smuggled\U000e0041\U000e0042",  # tag characters (ASCII smuggling)
        "\u3164",  # Hangul filler
        "blank\u2800braille",
        "ctrl\x07char",
        "ltr text with a mark\u200e",  # LRM outside right-to-left text
        "😀\ufe00\ufe01\ufe02",  # a run of variation selectors hides data
        "\ufe0fleading selector",
    ],
)
def test_has_invisible_flags_hiding_characters(text: str) -> None:
    assert has_invisible(text)


@pytest.mark.parametrize(
    "text",
    [
        "plain text\twith tab\nand newline\r\n",
        "👨\u200d👩\u200d👧 family",  # emoji ZWJ sequence
        "❤\ufe0f love",  # one emoji presentation selector
        "1\ufe0f\u20e3 keycap",
        "می\u200cخواهم",  # ZWNJ inside a Persian word
        "क्\u200dष",  # ZWJ in Devanagari
        "שלום\u200e 123",  # LRM inside right-to-left text
        "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",  # England flag
        "葛\U000e0100",  # ideographic variation selector
        "",
    ],
)
def test_has_invisible_allows_legitimate_uses(text: str) -> None:
    assert not has_invisible(text)


def test_strip_invisible_removes_all_of_them() -> None:
    assert strip_invisible("a\u200bb\u202ec\U000e0041d") == "abcd"


# ---------------------------------------------------------------- words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("newPassword", ["new", "password"]),
        ("NewAPIKey", ["new", "api", "key"]),
        ("api_key", ["api", "key"]),
        ("api-key", ["api", "key"]),
        ("API.KEY", ["api", "key"]),
        ("p a s s w o r d", ["password"]),
        ("p.a.s.s.w.o.r.d", ["password"]),
        ("P-I-N code", ["pin", "code"]),
        ("p_a_s_s", ["pass"]),
        ("ｐａｓｓＷｏｒｄ", ["pass", "word"]),
        ("раss wоrd", ["pass", "word"]),  # Cyrillic letters in both words
        ("pass\u200bword", ["password"]),
        ("password2", ["password", "2"]),
        ("2FA code", ["2", "fa", "code"]),
        ("Mot de passe", ["mot", "de", "passe"]),
        ("パスワード", ["パスワード"]),
    ],
)
def test_words_split_and_fold(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_words_do_not_merge_ordinary_single_letters() -> None:
    assert words("e.g. a b") == ["e", "g", "a", "b"]  # mixed gaps: not letter spacing
    assert words("I am a cat") == ["i", "am", "a", "cat"]
    assert words("") == []
    assert words("---") == []


def test_words_do_not_join_across_lines() -> None:
    assert words("p\na\ns\ns") == ["p", "a", "s", "s"]


# ---------------------------------------------------------------- decode_layers


def test_decode_layers_text_first() -> None:
    assert decode_layers("hello", 2) == ["hello"]
    assert decode_layers("hello", 0) == ["hello"]


def test_decode_layers_base64_and_base64url() -> None:
    secret = "token=AKIAIOSFODNN7EXAMPLE"
    b64 = base64.b64encode(secret.encode()).decode()
    b64url = base64.urlsafe_b64encode(b"\xfb\xff" + secret.encode()[2:]).decode()
    assert decode_layers(f"x {b64} y", 1)[1] == secret
    url_variant = base64.urlsafe_b64encode(("~~~" + secret).encode()).decode().rstrip("=")
    assert "~~~" + secret in decode_layers(url_variant, 1)
    assert len(decode_layers(b64url, 1)) == 1  # not valid UTF-8: dropped


def test_decode_layers_percent_and_hex() -> None:
    assert decode_layers(quote("AKIA IOSF/x"), 1)[1] == "AKIA IOSF/x"
    hexed = b"a hidden secret value".hex()
    assert decode_layers(hexed, 1)[1] == "a hidden secret value"


def test_decode_layers_nesting_is_bounded_by_depth() -> None:
    inner = "AKIAIOSFODNN7EXAMPLE plus words"
    twice = base64.b64encode(base64.b64encode(inner.encode())).decode()
    assert inner not in decode_layers(twice, 1)
    assert inner in decode_layers(twice, 2)


def test_decode_layers_drops_binary_garbage() -> None:
    assert decode_layers("abcdefghijklmnopqrstuvwx", 2) == ["abcdefghijklmnopqrstuvwx"]


def test_decode_layers_output_is_size_bounded() -> None:
    chunk = base64.b64encode(b"x" * 3000).decode()
    text = " ".join([chunk + "A" * i for i in range(40)])
    layers = decode_layers(text, 2, max_len=10_000)
    assert sum(len(layer) for layer in layers[1:]) <= 10_000


# ---------------------------------------------------------------- robustness


@settings(deadline=None, max_examples=200)
@given(st.text())
def test_never_raises(text: str) -> None:
    assert isinstance(fold(text), str)
    assert isinstance(has_invisible(text), bool)
    assert all(isinstance(w, str) and w for w in words(text))
    assert decode_layers(text, 2)[0] == text


_ADVERSARIAL = [
    "а" * 1_000_000,  # a million Cyrillic look-alikes
    "\u200b" * 1_000_000,
    "p a " * 250_000,
    "a\u0301" * 500_000,  # combining marks on Latin letters
    ("QUtJQUlPU0ZPRE5ON0VYQU1QTEU= " * 40_000),  # many base64 candidates
    "%41" * 330_000,
    base64.b64encode(base64.b64encode(b"x" * 600_000)).decode()[:1_000_000],
]


@pytest.mark.parametrize("text", _ADVERSARIAL, ids=range(len(_ADVERSARIAL)))
def test_bounded_on_adversarial_input(text: str) -> None:
    """All four functions together on 1 MB. The worst case (500k tokens for ``words``) is linear
    but token-bound; the engine never gets there (params are capped at 64 KiB, the lexicon scans
    at most 64 Ki characters)."""
    start = time.perf_counter()
    fold(text)
    has_invisible(text)
    words(text)
    decode_layers(text, 2)
    assert time.perf_counter() - start < 3.0
