"""A sound pre-check: can these JSON bytes carry an elicitation at all? (sans-IO)

Every carrier needs one of two words spelled out in the JSON text: ``elicitation`` (the method
``elicitation/create``, the ``-32042`` error's ``data.elicitations``, the notification
``notifications/elicitation/complete``) or ``inputRequests`` (a 2026 ``InputRequiredResult``).
JSON can only write a letter literally or as a ``\\u`` escape — no other escape yields a letter —
so bytes with neither word and no ``\\u`` escape cannot carry an elicitation under any JSON parser.
Such bytes need no parsing to be forwarded unchanged; everything else is parsed strictly.

A NUL byte also forces parsing: JSON sent as UTF-16 or UTF-32 (which some clients' parsers
detect and decode, Python's ``json.loads`` on bytes among them) spells every ASCII character with
NUL bytes, so the words above would not appear in its bytes; such bodies are parsed, and refused.

Only large bodies take this path (``FAST_PATH_MIN_BYTES``): small messages are cheap to parse and
keep the full strictness (a malformed small body is refused, whatever it says).
"""

from __future__ import annotations

from typing import Final

FAST_PATH_MIN_BYTES: Final = 64 * 1024
_MARKERS: Final = (b"elicitation", b"inputRequests", b"\\u", b"\x00")


def may_carry_elicitation(raw: bytes) -> bool:
    """False only when ``raw`` cannot hold an elicitation in any carrier (see module doc)."""
    return any(marker in raw for marker in _MARKERS)


def needs_inspection(raw: bytes) -> bool:
    """Whether the relay must parse ``raw`` before forwarding it."""
    return len(raw) < FAST_PATH_MIN_BYTES or may_carry_elicitation(raw)
