"""Sans-IO Server-Sent Events framing: an incremental decoder (bytes -> blocks) and an encoder.

The decoder follows the WHATWG HTML "event stream interpretation" algorithm exactly where it
matters for a filtering proxy:

* only ``\\r\\n``, ``\\r`` and ``\\n`` end a line (never U+2028, U+0085, ... -- ``str.splitlines``
  would split on those, and that difference is how a filtering proxy gets bypassed);
* a ``\\r`` at the very end of the received bytes may be the first half of ``\\r\\n``: a block is
  only cut once the byte after it is known, so any chunking of a stream yields the same blocks;
* one UTF-8 BOM at the very start of the stream is ignored for parsing (it stays in ``raw``);
* ``field: value`` with one leading space stripped; a line without a colon is a field with an
  empty value; lines starting with ``:`` are comments; an empty line ends a block.

Unlike a browser, the decoder fails closed: a line that is not valid UTF-8, or a block larger than
``max_block_bytes``, raises :class:`SSEError` (an ``UpstreamProtocolError``) instead of being
repaired or buffered without bound. Any input yields blocks or ``SSEError``, never another
exception.

``strict=True`` (what the relay uses) also refuses what MCP clients read differently from each
other and from the spec (``gateway/wire/reading.py``): a BOM at the start of the stream (the Python
SDK does not strip it, so its first field name differs; fetch does) and any field other than
``data``, ``event``, ``id`` and ``retry`` (no server needs one, and a field name the gateway
ignores is one some client may read as ``data`` -- eventsource-parser strips ``ï»¿`` from the
start of its first chunk). Either ends the stream before the block is forwarded.

Every block (including comment-only pings and priming events) keeps its exact ``raw`` bytes, so
the relay can forward untouched events byte-for-byte and only re-encode the ones it rewrites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from gateway.errors import UpstreamProtocolError

__all__ = ["SSEBlock", "SSEDecoder", "SSEError", "encode_event"]

_BOM: Final = b"\xef\xbb\xbf"
_EOL_TEXT: Final = re.compile(r"\r\n|\r|\n")
_COLON: Final = 0x3A
# Longer ``retry`` values are ignored like non-numeric ones: int() of a megabyte of digits is slow
# (and above 4300 digits raises); no reconnection delay needs more than 18 digits.
_MAX_RETRY_DIGITS: Final = 18
_NEWLINES: Final = (b"\r\n", b"\n", b"\r")


class SSEError(UpstreamProtocolError):
    """The upstream event stream cannot be framed safely (oversized block, invalid UTF-8).

    ``completed`` holds the blocks that the failing :meth:`SSEDecoder.feed` call had completed
    before the error: they are well-formed and may be forwarded before the stream is ended.
    """

    completed: list[SSEBlock]

    def __init__(self, message: str, completed: list[SSEBlock] | None = None) -> None:
        super().__init__(message)
        self.completed = completed or []


@dataclass(frozen=True, slots=True)
class SSEBlock:
    """One block of an event stream: the bytes up to and including the empty line that ended it.

    ``b"".join(b.raw for b in blocks)`` equals the input minus the incomplete tail. ``data`` is
    the ``"\n"``-joined data lines (None without a data field), ``event`` is ``"message"`` when
    absent or empty, ``id`` the last ``id`` field without NUL (``""`` for an empty one), and
    ``retry`` the last all-ASCII-digit ``retry`` value (others are ignored, as in the spec).
    """

    raw: bytes
    data: str | None
    event: str = "message"
    id: str | None = None
    retry: int | None = None

    @property
    def is_dispatch(self) -> bool:
        """True iff a spec-conforming client would dispatch an event for this block."""
        return self.data is not None


class SSEDecoder:
    """Incremental event-stream decoder. Work per ``feed`` is proportional to the chunk size."""

    __slots__ = (
        "_buf",
        "_data",
        "_event",
        "_failed",
        "_id",
        "_line_start",
        "_max",
        "_retry",
        "_search_from",
        "_started",
        "_strict",
    )

    def __init__(self, *, max_block_bytes: int = 4 * 1024 * 1024, strict: bool = False) -> None:
        if max_block_bytes < 1:
            raise ValueError("max_block_bytes must be positive")
        self._max = max_block_bytes
        self._buf = bytearray()  # the bytes of the current (incomplete) block
        self._line_start = 0  # offset in _buf of the first unparsed line
        self._search_from = 0  # offset in _buf from which no line ending has been searched yet
        self._started = False  # BOM handled
        self._strict = strict
        self._failed = False
        # Fields of the block being decoded (reset after every block).
        self._data: list[str] | None = None
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEBlock]:
        """Decode ``chunk``; return the blocks it completed. Raises :class:`SSEError`."""
        if self._failed:
            raise SSEError("event stream decoder already failed or finished")
        if not chunk:
            return []
        buf = self._buf
        buf += chunk
        if not self._started:
            if len(buf) < len(_BOM) and _BOM.startswith(buf):
                return []  # maybe a BOM: wait for its remaining bytes
            self._started = True
            if buf.startswith(_BOM):
                if self._strict:
                    self._failed = True
                    raise SSEError("event stream starts with a byte order mark")
                self._line_start = self._search_from = len(_BOM)
        try:
            blocks = self._scan(buf)
        except SSEError:
            self._failed = True
            raise
        if len(buf) > self._max:
            self._failed = True
            raise SSEError("event stream block exceeds the size limit", blocks)
        return blocks

    def close(self) -> bytes:
        """End of stream: return the bytes of the incomplete last block (possibly ``b""``).

        Raises :class:`SSEError` if those bytes hold a complete block, which happens only when the
        stream's last line ending is a bare ``\\r`` that was still waiting for a possible ``\\n``;
        use :meth:`finish` to receive that block instead.
        """
        blocks, tail = self.finish()
        if blocks:
            raise SSEError("event stream ended inside a line ending")
        return tail

    def finish(self) -> tuple[list[SSEBlock], bytes]:
        """End of stream: return the blocks completed by the end of input, and the incomplete tail.

        Per the SSE spec the tail is never dispatched by a client (an event needs its empty line).
        """
        if self._failed:
            raise SSEError("event stream decoder already failed or finished")
        self._failed = True  # the decoder cannot be fed after the end of the stream
        buf = self._buf
        blocks: list[SSEBlock] = []
        if buf.endswith(b"\r"):
            # EOF settles the held "\r": it ended a line. Parse that line now.
            blocks = self._scan(buf, at_eof=True)
        tail = bytes(buf)
        buf.clear()
        return blocks, tail

    def _scan(self, buf: bytearray, *, at_eof: bool = False) -> list[SSEBlock]:
        """Parse every complete line of ``buf``; cut the blocks they complete off its front."""
        blocks: list[SSEBlock] = []
        # Next "\r" and "\n" at or after pos (-1: none left), each found with one memchr-speed
        # find() and searched again only once pos has passed it: linear in the chunk size.
        cr = buf.find(b"\r", self._search_from)
        lf = buf.find(b"\n", self._search_from)
        try:
            self._lines(buf, blocks, at_eof=at_eof, cr=cr, lf=lf)
        except SSEError as exc:
            exc.completed = blocks
            raise
        return blocks

    def _lines(
        self, buf: bytearray, blocks: list[SSEBlock], *, at_eof: bool, cr: int, lf: int
    ) -> None:
        end = len(buf)
        line_start = self._line_start
        pos = self._search_from
        block_end = 0
        while True:
            if 0 <= cr < pos:
                cr = buf.find(b"\r", pos)
            if 0 <= lf < pos:
                lf = buf.find(b"\n", pos)
            if cr < 0 and lf < 0:
                pos = end
                break
            if cr < 0 or 0 <= lf < cr:
                eol = lf
                nxt = lf + 1
            else:
                eol = cr
                if cr + 1 == end and not at_eof:
                    pos = cr  # "\r" or "\r\n"? decided by the next byte
                    break
                nxt = cr + 2 if lf == cr + 1 else cr + 1
            if eol == line_start:  # empty line: the block ends here
                if nxt - block_end > self._max:
                    raise SSEError("event stream block exceeds the size limit")
                blocks.append(self._block(bytes(buf[block_end:nxt])))
                block_end = nxt
            else:
                self._line(buf, line_start, eol)
            line_start = pos = nxt
        if block_end:
            del buf[:block_end]
            line_start -= block_end
            pos -= block_end
        self._line_start = line_start
        self._search_from = pos

    def _block(self, raw: bytes) -> SSEBlock:
        data = None if self._data is None else "\n".join(self._data)
        block = SSEBlock(raw, data, self._event or "message", self._id, self._retry)
        self._data = self._id = self._retry = None
        self._event = ""
        return block

    def _line(self, buf: bytearray, start: int, end: int) -> None:
        """Apply one non-empty line to the current block's fields."""
        try:
            line = buf[start:end].decode("utf-8")
        except UnicodeDecodeError:
            raise SSEError("event stream line is not valid UTF-8") from None
        if buf[start] == _COLON:
            return  # comment
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            if self._data is None:
                self._data = [value]
            else:
                self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isascii() and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
                # Anything but ASCII digits is ignored (the previous value stands), as in the spec.
                self._retry = int(value)
        elif self._strict:
            raise SSEError("event stream line with a field the gateway does not know")


def encode_event(
    *,
    data: str,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
    newline: bytes = b"\r\n",
) -> bytes:
    """Encode one event. ``data`` may span lines (any of ``\\r\\n``, ``\\r``, ``\\n``).

    Raises ValueError if ``event`` or ``id`` contain a line ending, ``id`` a NUL (clients would
    ignore the id; NUL is allowed in an event name), ``retry`` is negative,
    ``newline`` is not an SSE line ending, or ``data`` is not encodable as UTF-8.
    """
    if newline not in _NEWLINES:
        raise ValueError("newline must be one of \\r\\n, \\n, \\r")
    lines: list[str] = []
    for name, value in (("id", id), ("event", event)):
        if value is None:
            continue
        if "\r" in value or "\n" in value:
            raise ValueError(f"SSE {name} must not contain a line ending")
        if name == "id" and "\0" in value:
            raise ValueError("SSE id must not contain NUL")
        lines.append(f"{name}: {value}")
    if retry is not None:
        if isinstance(retry, bool) or retry < 0:
            raise ValueError("SSE retry must be a non-negative integer")
        lines.append(f"retry: {retry}")
    lines.extend("data: " + part for part in _EOL_TEXT.split(data))
    lines.append("")
    lines.append("")
    nl = newline.decode("ascii")
    return nl.join(lines).encode("utf-8")
