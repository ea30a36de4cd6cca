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
_WORDS: Final = (b"elicitation", b"inputRequests")
_OVERLAP: Final = max(len(word) for word in _WORDS) - 1


def may_carry_elicitation(raw: bytes) -> bool:
    """False only when ``raw`` cannot hold an elicitation in any carrier (see module doc)."""
    return (
        b"elicitation" in raw
        or b"inputRequests" in raw
        or b"\x00" in raw
        # A backslash is found at memchr speed; the two-byte search is slow on large bodies.
        or (b"\\" in raw and b"\\u" in raw)
    )


class MarkerScan:
    """:func:`may_carry_elicitation` over a body that arrives in chunks, one chunk at a time
    (so the scan runs while the rest of the body is still on its way). A word split across
    chunks is found: each chunk is scanned together with the end of the one before."""

    __slots__ = ("_tail", "found")

    def __init__(self) -> None:
        self.found = False
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        if self.found or not chunk:
            return
        if self._tail:
            # Only the seam needs the old tail: the chunk itself is scanned on its own.
            seam = self._tail + chunk[:_OVERLAP]
            self.found = may_carry_elicitation(seam)
        self.found = self.found or may_carry_elicitation(chunk)
        short = len(chunk) < _OVERLAP
        self._tail = (self._tail + chunk)[-_OVERLAP:] if short else chunk[-_OVERLAP:]


def needs_inspection(raw: bytes) -> bool:
    """Whether the relay must parse ``raw`` before forwarding it."""
    return len(raw) < FAST_PATH_MIN_BYTES or may_carry_elicitation(raw)
