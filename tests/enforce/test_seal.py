"""Sealed tokens: AEAD round trip, tamper, purpose separation, expiry and key rotation."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.enforce.seal import KeyRing, b64u
from gateway.errors import ConfigError, SealError

K1 = b"1" * 32
K2 = b"2" * 32


def test_round_trip() -> None:
    ring = KeyRing([K1])
    token = ring.seal("gs1.", {"u": "abc", "m": ["form"]})
    assert token.startswith("gs1.")
    assert "abc" not in token
    assert ring.open("gs1.", token) == {"u": "abc", "m": ["form"]}


def test_every_tampered_byte_is_rejected() -> None:
    ring = KeyRing([K1])
    token = ring.seal("gs1.", {"u": "abc"})
    body = token[4:]
    for i in range(len(body)):
        flipped = body[:i] + ("A" if body[i] != "A" else "B") + body[i + 1 :]
        with pytest.raises(SealError):
            ring.open("gs1.", "gs1." + flipped)


def test_purposes_do_not_mix() -> None:
    ring = KeyRing([K1])
    token = ring.seal("gs1.", {"u": "abc"})
    with pytest.raises(SealError):
        ring.open("gr1.", "gr1." + token[4:])


def test_expiry() -> None:
    ring = KeyRing([K1])
    token = ring.seal("gr1.", {"s": None}, ttl=10)
    assert ring.open("gr1.", token)["s"] is None
    with pytest.raises(SealError) as err:
        ring.open("gr1.", token, now=10**12)
    assert err.value.reason == "expired"


def test_rotation_newest_seals_all_open() -> None:
    old = KeyRing([K1])
    rotated = KeyRing([K2, K1])
    legacy = old.seal("gs1.", {"u": "1"})
    assert rotated.open("gs1.", legacy) == {"u": "1"}
    fresh = rotated.seal("gs1.", {"u": "2"})
    with pytest.raises(SealError):
        old.open("gs1.", fresh)


def test_foreign_and_malformed_tokens() -> None:
    ring = KeyRing([K1])
    foreign = KeyRing([K2]).seal("gs1.", {"u": "x"})
    for token in (foreign, "gs1.", "gs1.!!!", "gs1." + b64u(b"x" * 40), "other"):
        with pytest.raises(SealError):
            ring.open("gs1.", token)


def test_key_sources(tmp_path: Path) -> None:
    key_file = tmp_path / "keys"
    key_file.write_text(f"# newest first\n{b64u(K2)}\n\n{b64u(K1)}\n")
    ring = KeyRing.from_sources(str(key_file), {})
    assert not ring.generated
    assert ring.open("gs1.", KeyRing([K1]).seal("gs1.", {"a": 1})) == {"a": 1}
    env_ring = KeyRing.from_sources(None, {"GATEWAY_KEYS": f"{b64u(K1)},{b64u(K2)}"})
    assert env_ring.open("gs1.", ring.seal("gs1.", {"a": 2})) == {"a": 2}
    assert KeyRing.from_sources(None, {}).generated


@pytest.mark.parametrize(
    ("text", "needle"),
    [("", "no key"), ("!!notbase64!!", "not valid base64url"), (b64u(b"short"), "at least 32")],
)
def test_bad_keys_are_clear_errors(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        KeyRing.parse(text, "GATEWAY_KEYS")


def test_missing_key_file() -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        KeyRing.from_sources("/nonexistent/keys", {})
