"""Newline-delimited JSON-RPC framing for the stdio transport (sans-IO).

MCP over stdio is one JSON-RPC message per line, UTF-8, lines ended by ``\\n``; a message holds
no raw newline (JSON escapes it inside strings). :class:`LineSplitter` cuts a byte stream into
lines as chunks arrive and never holds more than ``max_bytes`` of one line: a longer line is
reported once as :class:`TooLong` (with its size) and its bytes are discarded up to the next
newline, so a peer cannot make the gateway buffer without bound, and nothing after the bad line
is lost. Blank lines (only JSON whitespace) are skipped. A last line without its newline at the
end of the stream is still a line (a peer that exits right after writing loses nothing).

:func:`read_line` then reads one line strictly, exactly as an HTTP body is read
(:func:`gateway.wire.jsonrpc.parse_message`: the same parser-differential checks): one JSON-RPC
object, or a :class:`~gateway.errors.ProtocolError` — a batch is refused as well, since no MCP
version after 2025-03-26 sends one and the gateway inspects messages one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gateway.errors import INVALID_REQUEST, ProtocolError
from gateway.wire.jsonrpc import Message, parse_message

NEWLINE: Final = b"\n"
_BLANK: Final = b" \t\r\n"


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line, without its newline."""

    data: bytes


@dataclass(frozen=True, slots=True)
class TooLong:
    """A line longer than the cap was discarded; ``size`` is its length in bytes (a lower bound
    when the stream ended inside it)."""

    size: int


Frame = Line | TooLong


class LineSplitter:
    """Cuts a byte stream into lines (see the module docstring)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self._parts: list[bytes] = []
        self._held = 0  # bytes in _parts
        self._skipping = 0  # > 0: inside an overlong line, this many bytes seen so far

    def feed(self, chunk: bytes) -> list[Frame]:
        """The frames completed by ``chunk``."""
        frames: list[Frame] = []
        start = 0
        while start < len(chunk):
            end = chunk.find(NEWLINE, start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self._skipping:
                self._skipping += len(piece)
            elif self._held + len(piece) > self.max_bytes:
                self._skipping = self._held + len(piece)
                self._parts.clear()
                self._held = 0
            else:
                self._parts.append(piece)
                self._held += len(piece)
            if end < 0:
                break
            frames.extend(self._end_line())
            start = end + 1
        return frames

    def finish(self) -> list[Frame]:
        """The end of the stream: a last line without a newline is still a line."""
        return self._end_line()

    def _end_line(self) -> list[Frame]:
        if self._skipping:
            size, self._skipping = self._skipping, 0
            return [TooLong(size)]
        data = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        self._parts.clear()
        self._held = 0
        if not data.strip(_BLANK):
            return []
        return [Line(data)]


def read_line(data: bytes, *, max_bytes: int, max_depth: int = 64) -> Message:
    """One line as one JSON-RPC message, strictly (see the module docstring)."""
    parsed = parse_message(data, max_bytes=max_bytes, max_depth=max_depth)
    if isinstance(parsed, list):
        raise ProtocolError(
            "JSON-RPC batches are not supported: send one message per line",
            jsonrpc_code=INVALID_REQUEST,
        )
    return parsed


def encode_line(message: bytes) -> bytes:
    """A serialised message as one line (``dumps`` never writes a raw newline)."""
    if NEWLINE in message:
        raise ValueError("a message on a line must not contain a raw newline")
    return message + NEWLINE


__all__ = ["Frame", "Line", "LineSplitter", "TooLong", "encode_line", "read_line"]
