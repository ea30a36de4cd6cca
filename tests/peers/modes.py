"""The two client modes every end-to-end flow runs in, as the client worker names them."""

from __future__ import annotations

LEGACY = "legacy"  # the handshake era (initialize, sessions, server requests on SSE)
MODERN = "2026-07-28"  # the stateless era (InputRequiredResult)
MODES = [LEGACY, MODERN]
VERSION = {LEGACY: "2025-11-25", MODERN: "2026-07-28"}
ERA = {LEGACY: "handshake", MODERN: "modern"}
