"""Sealed tokens: state the gateway hands to the client so that any replica can read it back.

Authenticated encryption (AES-256-GCM) with a key ring: the newest key seals, every key opens
(rotation). Each *purpose* (session ids, 2026 request state, server-request ids) derives its own
key with HKDF, so a token minted for one purpose never opens as another.

Token: ``<prefix>`` + base64url(kid[4] ‖ nonce[12] ‖ ciphertext‖tag). The prefix and kid are
associated data. The payload is compact JSON with an ``exp`` (unix seconds) checked on open.

Keys come from ``--key-file`` (one base64url key per line, newest first), or ``GATEWAY_KEYS``
(comma-separated base64url keys, newest first). With neither, a random per-process key is
generated (replicas then cannot read each other's tokens; the caller logs a warning).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from gateway.errors import ConfigError, SealError

_KID_LEN: Final = 4
_NONCE_LEN: Final = 12
MIN_KEY_BYTES: Final = 32
ENV_KEYS: Final = "GATEWAY_KEYS"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str) -> bytes:
    pad = "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(text + pad)


def digest(value: str | bytes, length: int = 16) -> str:
    """Short base64url SHA-256 digest for bindings (credentials, arguments)."""
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    return b64u(hashlib.sha256(raw).digest())[:length]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class _Key:
    kid: bytes
    secret: bytes


class KeyRing:
    """Sealing keys, newest first. ``generated`` is True for a random per-process key."""

    def __init__(self, keys: Sequence[bytes], *, generated: bool = False) -> None:
        if not keys:
            raise ConfigError("the sealing key ring is empty")
        for key in keys:
            if len(key) < MIN_KEY_BYTES:
                raise ConfigError(f"sealing keys must be at least {MIN_KEY_BYTES} bytes")
        self._keys = [_Key(hashlib.sha256(k).digest()[:_KID_LEN], k) for k in keys]
        self.generated = generated
        self._derived: dict[tuple[bytes, str], AESGCM] = {}

    @classmethod
    def random(cls) -> KeyRing:
        return cls([secrets.token_bytes(MIN_KEY_BYTES)], generated=True)

    @classmethod
    def parse(cls, text: str, source: str) -> KeyRing:
        """Keys as base64url strings separated by commas or newlines (blank lines and ``#``
        comments ignored)."""
        keys = []
        for number, raw in enumerate(text.replace(",", "\n").splitlines(), start=1):
            item = raw.strip()
            if not item or item.startswith("#"):
                continue
            try:
                keys.append(b64u_decode(item))
            except (binascii.Error, ValueError) as exc:
                raise ConfigError(f"{source}: key {number} is not valid base64url") from exc
        if not keys:
            raise ConfigError(f"{source}: no key found")
        try:
            return cls(keys)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from exc

    @classmethod
    def from_sources(
        cls, key_file: str | None, environ: Mapping[str, str] | None = None
    ) -> KeyRing:
        """``--key-file`` first, then ``GATEWAY_KEYS``, else a random per-process key."""
        env = os.environ if environ is None else environ
        if key_file:
            try:
                with open(key_file, encoding="utf-8") as handle:
                    return cls.parse(handle.read(), key_file)
            except OSError as exc:
                raise ConfigError(f"{key_file}: cannot read: {exc.strerror}") from exc
        if env.get(ENV_KEYS):
            return cls.parse(env[ENV_KEYS], ENV_KEYS)
        return cls.random()

    def _aead(self, key: _Key, purpose: str) -> AESGCM:
        cached = self._derived.get((key.kid, purpose))
        if cached is None:
            material = HKDF(
                algorithm=hashes.SHA256(),
                length=32,
                salt=None,
                info=b"elicitation-gateway/seal/v1/" + purpose.encode("ascii"),
            ).derive(key.secret)
            cached = AESGCM(material)
            self._derived[(key.kid, purpose)] = cached
        return cached

    def seal(self, prefix: str, payload: Mapping[str, Any], *, ttl: float | None = None) -> str:
        """Encrypt ``payload`` (JSON-serialisable) under the newest key. ``prefix`` names the
        purpose and starts the token (e.g. ``"gs1."``)."""
        body = dict(payload)
        if ttl is not None:
            body["exp"] = int(time.time() + ttl)
        key = self._keys[0]
        nonce = secrets.token_bytes(_NONCE_LEN)
        plain = canonical_json(body).encode("utf-8")
        aad = prefix.encode("ascii") + key.kid
        sealed = self._aead(key, prefix).encrypt(nonce, plain, aad)
        return prefix + b64u(key.kid + nonce + sealed)

    def open(self, prefix: str, token: str, *, now: float | None = None) -> dict[str, Any]:
        """Decrypt and check a token; raise :class:`SealError` on any failure."""
        if not token.startswith(prefix):
            raise SealError("invalid")
        body = token[len(prefix) :]
        try:
            raw = b64u_decode(body)
        except (binascii.Error, ValueError) as exc:
            raise SealError("invalid") from exc
        if b64u(raw) != body:  # one spelling per token: no non-canonical base64 variants
            raise SealError("invalid")
        if len(raw) < _KID_LEN + _NONCE_LEN + 16:
            raise SealError("invalid")
        kid, nonce, sealed = raw[:_KID_LEN], raw[_KID_LEN : _KID_LEN + _NONCE_LEN], raw[16:]
        for key in self._keys:
            if key.kid != kid:
                continue
            try:
                plain = self._aead(key, prefix).decrypt(nonce, sealed, prefix.encode() + kid)
            except InvalidTag:
                continue
            payload = json.loads(plain)
            if not isinstance(payload, dict):
                raise SealError("invalid")
            exp = payload.get("exp")
            if isinstance(exp, int) and (now if now is not None else time.time()) > exp:
                raise SealError("expired")
            return payload
        raise SealError("invalid")
