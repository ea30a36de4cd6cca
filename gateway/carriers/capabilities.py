"""The client's declared elicitation modes (sans-IO).

Rules (spec 2025-11-25 and 2026-07-28, protocol.md §2):
* no ``elicitation`` key → no elicitation at all;
* ``elicitation: {}`` → form only (backwards compatibility);
* otherwise the modes present among ``form`` and ``url``.
A 2025-06-18 client has ``elicitation: {}`` by construction and thus gets form only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gateway.wire.era import META_CLIENT_CAPABILITIES, meta_of

FORM: Final = "form"
URL: Final = "url"
NO_MODES: Final[frozenset[str]] = frozenset()


def modes_from_capabilities(capabilities: Any) -> frozenset[str]:
    """Declared modes from a ``ClientCapabilities`` object (anything malformed → none)."""
    if not isinstance(capabilities, Mapping):
        return NO_MODES
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, Mapping):
        return NO_MODES
    modes = frozenset(m for m in (FORM, URL) if m in elicitation)
    return modes or frozenset({FORM})


def modes_from_initialize(params: Any) -> frozenset[str]:
    """Handshake era: the modes declared once in ``initialize.params.capabilities``."""
    if not isinstance(params, Mapping):
        return NO_MODES
    return modes_from_capabilities(params.get("capabilities"))


def modes_from_meta(params: Any) -> frozenset[str] | None:
    """2026-07-28: the modes declared in this request's ``_meta`` (None when the key is absent)."""
    meta = meta_of(params)
    if META_CLIENT_CAPABILITIES not in meta:
        return None
    return modes_from_capabilities(meta[META_CLIENT_CAPABILITIES])


def client_name(params: Any) -> str | None:
    """Self-reported client name from ``initialize.clientInfo`` or 2026 ``_meta`` clientInfo."""
    if not isinstance(params, Mapping):
        return None
    info = params.get("clientInfo")
    if not isinstance(info, Mapping):
        info = meta_of(params).get("io.modelcontextprotocol/clientInfo")
    if isinstance(info, Mapping):
        name = info.get("name")
        if isinstance(name, str):
            return name[:128]
    return None
