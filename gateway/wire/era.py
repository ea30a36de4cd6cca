"""Protocol-version registry and era detection (sans-IO).

Versions are an enumerated set, not strings to compare. An unknown version is never guessed:
callers treat ``Era.UNKNOWN`` conservatively (look for elicitations in every carrier).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

HANDSHAKE_VERSIONS: Final = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
MODERN_VERSIONS: Final = frozenset({"2026-07-28"})

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"


class Era(StrEnum):
    HANDSHAKE = "handshake"  # initialize + sessions + server→client requests on SSE
    MODERN = "modern"  # 2026-07-28: stateless, InputRequiredResult
    UNKNOWN = "unknown"


def era_of_version(version: str | None) -> Era:
    """Era of an ``MCP-Protocol-Version`` header value. Absent means handshake (the header is only
    sent after ``initialize``; the spec says a server assumes 2025-03-26 without it)."""
    if version is None:
        return Era.HANDSHAKE
    if version in MODERN_VERSIONS:
        return Era.MODERN
    if version in HANDSHAKE_VERSIONS:
        return Era.HANDSHAKE
    return Era.UNKNOWN


def meta_of(params: Any) -> Mapping[str, Any]:
    """``params._meta`` as a mapping ({} when absent or not an object)."""
    if isinstance(params, Mapping):
        meta = params.get("_meta")
        if isinstance(meta, Mapping):
            return meta
    return {}


def meta_version(params: Any) -> str | None:
    """The 2026-07-28 per-request ``_meta`` protocol version, if any."""
    value = meta_of(params).get(META_PROTOCOL_VERSION)
    return value if isinstance(value, str) else None


def header_mismatch(header_version: str | None, params: Any) -> bool:
    """True when a modern-era request's ``_meta`` version disagrees with its header (-32020)."""
    if header_version is None or header_version not in MODERN_VERSIONS:
        return False
    body_version = meta_version(params)
    return body_version is not None and body_version != header_version
