"""Shared Hypothesis strategies for the framing layer (SSE and JSON / JSON-RPC) and its users."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

SSE_NEWLINES = (b"\r\n", b"\n", b"\r")
BOM = b"\xef\xbb\xbf"

newlines = st.sampled_from(SSE_NEWLINES)

# Text that may appear in an SSE field value: anything valid in UTF-8 except the SSE line endings.
# Includes U+2028, U+2029, U+0085, U+000B, U+000C and NUL, which are *not* SSE line endings.
_tricky = st.sampled_from(["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x00", "\ufeff", ":", " "])
field_text = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12),
        _tricky,
    ),
    max_size=6,
).map("".join)


@dataclass(frozen=True)
class Event:
    """An event as the encoder takes it, and what the decoder must report for it."""

    data: str
    event: str | None
    id: str | None
    retry: int | None

    @property
    def expected_data(self) -> str:
        """``data`` as decoded: every line ending becomes ``\\n``."""
        return self.data.replace("\r\n", "\n").replace("\r", "\n")

    @property
    def expected_event(self) -> str:
        return self.event or "message"


@st.composite
def multiline_text(draw: st.DrawFn) -> str:
    """Text whose lines are joined by any mix of ``\r\n``, ``\r`` and ``\n``."""
    parts = draw(st.lists(field_text, min_size=1, max_size=4))
    return parts[0] + "".join(draw(st.sampled_from(["\r\n", "\n", "\r"])) + p for p in parts[1:])


events = st.builds(
    Event,
    data=multiline_text(),
    event=st.none() | field_text.filter(lambda s: "\0" not in s),
    id=st.none() | field_text.filter(lambda s: "\0" not in s),
    retry=st.none() | st.integers(min_value=0, max_value=10**12),
)


@st.composite
def sse_line(draw: st.DrawFn) -> bytes:
    """One non-empty SSE line (without its ending): a field, a comment or a bare field name."""
    name = draw(st.sampled_from(["data", "event", "id", "retry", "x-unknown", "", "DATA"]))
    value = draw(
        field_text
        | st.integers(min_value=0, max_value=99999).map(str)
        | st.sampled_from(["", " ", "  padded", "12a", "\u0663", "a\0b"])
    )
    shape = draw(st.sampled_from(["field: value", "field:value", "comment", "bare"]))
    if shape == "comment":
        text = ":" + value
    elif shape == "bare":
        text = name or "data"
    elif shape == "field:value":
        text = f"{name}:{value}"
    else:
        text = f"{name}: {value}"
    return text.encode("utf-8")


@st.composite
def sse_streams(draw: st.DrawFn) -> bytes:
    """A valid UTF-8 event stream mixing fields, comments, all three line endings and empty
    blocks; may start with a BOM and may end with an incomplete block."""
    out = [BOM] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        out.extend(line + draw(newlines) for line in draw(st.lists(sse_line(), max_size=5)))
        out.append(draw(newlines))  # the empty line that ends the block
    if draw(st.booleans()):
        out.extend(line + draw(newlines) for line in draw(st.lists(sse_line(), max_size=2)))
        out.append(draw(sse_line()))
    return b"".join(out)


# Byte soup biased towards SSE syntax: line endings, colons, field names, BOM and invalid UTF-8.
sse_noise = st.lists(
    st.sampled_from(
        [
            b"\r",
            b"\n",
            b"\r\n",
            b":",
            b" ",
            b"data",
            b"id",
            b"event",
            b"retry",
            b"1",
            b"\0",
            BOM,
            b"\xef",
            b"\xff",
            b"\xe2\x80\xa8",
            b"x",
        ]
    )
    | st.binary(max_size=4),
    max_size=40,
).map(b"".join)


@st.composite
def split_points(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut into chunks at arbitrary points (including inside ``\\r\\n`` and the BOM)."""
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


# --- JSON ------------------------------------------------------------------------------------------

# Strings without surrogates (which strict parsing rejects) and integers inside +-2**64.
json_text = st.text(st.characters(codec="utf-8"), max_size=20)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64) + 1, max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | json_text
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(json_text, children, max_size=4)
    ),
    max_leaves=25,
)

# Bytes that look like JSON: structural characters, literals, escapes, numbers, invalid UTF-8.
json_noise = st.lists(
    st.sampled_from(
        [
            b"{",
            b"}",
            b"[",
            b"]",
            b'"',
            b":",
            b",",
            b" ",
            b"\\",
            b"\\u",
            b"d800",
            b"dc00",
            b"0",
            b"1",
            b"-",
            b"e",
            b"E",
            b"+",
            b".",
            b"99999999999",
            b"true",
            b"null",
            b"NaN",
            b"Infinity",
            b'"a"',
            b"\xff",
            b"\xed\xa0\x80",
            b"\xef\xbb\xbf",
            b"\t",
        ]
    )
    | st.binary(max_size=3),
    max_size=40,
).map(b"".join)

request_ids = st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1), json_text)
methods = (
    st.sampled_from(
        ["elicitation/create", "tools/call", "notifications/elicitation/complete", "initialize"]
    )
    | json_text
)
params = (
    st.none()
    | st.dictionaries(json_text, json_values, max_size=3)
    | st.lists(json_values, max_size=3)
)


@st.composite
def jsonrpc_messages(draw: st.DrawFn) -> dict[str, Any]:
    """A valid JSON-RPC 2.0 message object of any of the four kinds."""
    kind = draw(st.sampled_from(["request", "notification", "response", "error"]))
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in ("request", "notification"):
        msg["method"] = draw(methods)
        p = draw(params)
        if p is not None:
            msg["params"] = p
        if kind == "request":
            msg["id"] = draw(request_ids)
    elif kind == "response":
        msg["id"] = draw(request_ids)
        msg["result"] = draw(json_values)
    else:
        msg["id"] = draw(st.none() | request_ids)
        msg["error"] = {"code": draw(st.integers(-32768, 32767)), "message": draw(json_text)}
        if draw(st.booleans()):
            msg["error"]["data"] = draw(json_values)
    return msg
