"""Strict JSON and JSON-RPC 2.0 framing for every message the gateway inspects.

``parse_json`` closes the parser differentials a filtering proxy must not leave open (two JSON
parsers that read one byte string differently let a message pass inspection as one thing and reach
the peer as another). It rejects, with a stable kebab-case ``JSONParseError.reason``:

==========================  ==================================================================
``too-large``               more than ``max_bytes`` UTF-8 bytes (checked before parsing)
``invalid-utf8``            bytes that are not UTF-8 (no UTF-16/32 sniffing, no repair)
``invalid-json``            anything RFC 8259 rejects (including a BOM and trailing data)
``duplicate-key``           the same key twice in one object, at any level
``non-finite-number``       ``NaN``, ``Infinity``, ``-Infinity``, or a literal such as ``1e999``
``integer-out-of-range``    an integer with absolute value >= 2**64
``lone-surrogate``          a string holding an unpaired UTF-16 surrogate (``"\\ud800"``)
``too-deep``                arrays/objects nested deeper than ``max_depth``
==========================  ==================================================================

The fast path is one ``json.loads`` with a duplicate-key hook (float literals, rare in MCP, are
always checked); the other checks run only when a cheap byte-level scan says they could matter (a
``\\u`` escape in the surrogate range, a run of 20+ digits, more brackets than ``max_depth``).
Input nested deeper than the interpreter's recursion limit stops ``json.loads`` early with a
RecursionError, reported as ``too-deep``.

``classify`` then checks the JSON-RPC 2.0 envelope and tells requests, notifications, responses
and errors apart. Error messages name the rule that failed, never a value from the message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, NoReturn, TypeAlias

from gateway.errors import INVALID_REQUEST, PARSE_ERROR, ProtocolError

__all__ = [
    "JSONParseError",
    "JSONValue",
    "Message",
    "classify",
    "dumps",
    "error_response",
    "parse_json",
    "parse_message",
]

_INT_LIMIT: Final = 2**64
_MAX_INT_DIGITS: Final = 20  # 2**64 has 20 digits: shorter literals are always in range
# Could an integer literal be out of range? (A run of 20+ digits, found by mapping every digit to
# "0" and searching: memchr speed, unlike a regex character class. Runs inside strings only cost
# a slower second parse.)
_DIGITS_AS_ZERO: Final = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_DIGIT_RUN: Final = b"0" * _MAX_INT_DIGITS
# Could a string hold a surrogate? (A \u escape of D800-DFFF, paired or not.)
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_STRING_BODY: Final = re.compile(rb'"[^"]*"')
_NOT_STRUCTURAL: Final = bytes(b for b in range(256) if b not in b'[]{}"')
_OBJECT_AS_ARRAY: Final = bytes.maketrans(b"{}", b"[]")

Kind = Literal["request", "notification", "response", "error"]
# A parsed JSON document: dict[str, JSONValue] | list[JSONValue] | str | int | float | bool | None.
JSONValue: TypeAlias = Any


class JSONParseError(ProtocolError):
    """The bytes are not strict JSON. ``reason`` is a stable kebab-case code (see module doc)."""

    jsonrpc_code = PARSE_ERROR

    def __init__(self, reason: str, *, position: int | None = None) -> None:
        where = "" if position is None else f" at offset {position}"
        super().__init__(f"JSON parse error: {reason}{where}")
        self.reason = reason
        self.position = position


class _Reject(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Reject("duplicate-key")
    return obj


def _reject_constant(_name: str) -> NoReturn:
    raise _Reject("non-finite-number")


def _checked_int(literal: str) -> int:
    digits = len(literal) - literal.startswith("-")
    if digits > _MAX_INT_DIGITS:
        raise _Reject("integer-out-of-range")
    value = int(literal)
    if not -_INT_LIMIT < value < _INT_LIMIT:
        raise _Reject("integer-out-of-range")
    return value


def _checked_float(literal: str) -> float:
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise _Reject("non-finite-number")
    return value


# Float literals are few in MCP traffic, so every one is checked (1e999 parses as inf); integer
# literals are many, so they are checked only when a long digit run exists.
_FAST: Final = json.JSONDecoder(
    object_pairs_hook=_unique_keys, parse_constant=_reject_constant, parse_float=_checked_float
)
_CHECKED: Final = json.JSONDecoder(
    object_pairs_hook=_unique_keys,
    parse_constant=_reject_constant,
    parse_int=_checked_int,
    parse_float=_checked_float,
)


def parse_json(data: bytes | str, *, max_bytes: int, max_depth: int = 64) -> JSONValue:
    """Parse one strict JSON text (RFC 8259, UTF-8). Raises :class:`JSONParseError`."""
    if isinstance(data, str):
        if len(data) > max_bytes:  # every character is at least one byte
            raise JSONParseError("too-large")
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError:
            raise JSONParseError("lone-surrogate") from None
        if len(raw) > max_bytes:
            raise JSONParseError("too-large")
        text = data
    else:
        raw = bytes(data)
        if len(raw) > max_bytes:
            raise JSONParseError("too-large")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONParseError("invalid-utf8", position=exc.start) from None
    decoder = _CHECKED if _LONG_DIGIT_RUN in raw.translate(_DIGITS_AS_ZERO) else _FAST
    value = _decode(decoder, text)
    if raw.count(b"[") + raw.count(b"{") > max_depth and _too_deep(raw, max_depth):
        raise JSONParseError("too-deep")
    if _SURROGATE_ESCAPE.search(raw) and _has_surrogate(value):
        raise JSONParseError("lone-surrogate")
    return value


def _decode(decoder: json.JSONDecoder, text: str) -> JSONValue:
    try:
        return decoder.decode(text)
    except _Reject as exc:
        raise JSONParseError(exc.reason) from None
    except json.JSONDecodeError as exc:
        raise JSONParseError("invalid-json", position=exc.pos) from None
    except RecursionError:
        raise JSONParseError("too-deep") from None


def _too_deep(raw: bytes, max_depth: int) -> bool:
    """Is a *valid* JSON text nested deeper than ``max_depth``? At C speed, no per-byte Python.

    Escaped backslashes and escaped quotes are removed first (``bytes.replace`` pairs them from the
    left, as a JSON scanner does), so every remaining quote delimits a string. Everything but
    brackets and quotes is dropped, objects become arrays, and string bodies are removed (adjacent
    quotes first: that drops an empty string or merges two strings with nothing structural between
    them). Each ``replace(b"[]", b"")`` pass then removes every leaf container, lowering the depth
    by exactly one.
    """
    skeleton = raw
    if b"\\" in skeleton:
        skeleton = skeleton.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = skeleton.translate(_OBJECT_AS_ARRAY, _NOT_STRUCTURAL).replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = _STRING_BODY.sub(b"", skeleton)
    for _ in range(max_depth):
        if not skeleton:
            return False
        skeleton = skeleton.replace(b"[]", b"")
    return bool(skeleton)


def _has_surrogate(value: JSONValue) -> bool:
    """True if any string (key or value) in the parsed document holds a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


# --- JSON-RPC 2.0 -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Message:
    """One classified JSON-RPC 2.0 message. ``obj`` is the whole parsed object."""

    kind: Kind
    id: str | int | None
    method: str | None
    params: Any
    result: Any
    error: dict[str, Any] | None
    obj: dict[str, Any]


def _invalid(message: str) -> ProtocolError:
    return ProtocolError(message, jsonrpc_code=INVALID_REQUEST)


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(obj: object) -> Message:
    """Check the JSON-RPC 2.0 envelope of ``obj``. Raises ``ProtocolError`` (-32600)."""
    if not isinstance(obj, dict):
        raise _invalid("JSON-RPC message must be an object")
    if obj.get("jsonrpc") != "2.0":
        raise _invalid('JSON-RPC message must have "jsonrpc": "2.0"')
    if "method" in obj:
        return _classify_call(obj)
    return _classify_response(obj)


def _classify_call(obj: dict[str, Any]) -> Message:
    method = obj["method"]
    if not isinstance(method, str):
        raise _invalid("JSON-RPC method must be a string")
    if "result" in obj or "error" in obj:
        raise _invalid("JSON-RPC request must not carry result or error")
    params = obj.get("params")
    if "params" in obj and not isinstance(params, dict | list):
        raise _invalid("JSON-RPC params must be an object or an array")
    if "id" not in obj:
        return Message("notification", None, method, params, None, None, obj)
    msg_id = obj["id"]
    if not _is_id(msg_id):
        raise _invalid("JSON-RPC request id must be a string or an integer")
    return Message("request", msg_id, method, params, None, None, obj)


def _classify_response(obj: dict[str, Any]) -> Message:
    if "id" not in obj:
        raise _invalid("JSON-RPC response must have an id")
    msg_id = obj["id"]
    has_result, has_error = "result" in obj, "error" in obj
    if has_result == has_error:
        raise _invalid("JSON-RPC response must have exactly one of result and error")
    if has_result:
        if not _is_id(msg_id):
            raise _invalid("JSON-RPC response id must be a string or an integer")
        return Message("response", msg_id, None, None, obj["result"], None, obj)
    if msg_id is not None and not _is_id(msg_id):
        raise _invalid("JSON-RPC error id must be a string, an integer or null")
    error = obj["error"]
    if not isinstance(error, dict):
        raise _invalid("JSON-RPC error must be an object")
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        raise _invalid("JSON-RPC error code must be an integer")
    if not isinstance(error.get("message"), str):
        raise _invalid("JSON-RPC error message must be a string")
    return Message("error", msg_id, None, None, None, error, obj)


def parse_message(
    data: bytes | str, *, max_bytes: int, max_depth: int = 64
) -> Message | list[Message]:
    """Parse and classify one message, or a batch (JSON array) as a list.

    Raises :class:`JSONParseError` (-32700) or ``ProtocolError`` (-32600; also for an empty batch).
    """
    value = parse_json(data, max_bytes=max_bytes, max_depth=max_depth)
    if isinstance(value, list):
        if not value:
            raise _invalid("JSON-RPC batch must not be empty")
        return [classify(item) for item in value]
    return classify(value)


_dumps: Final[Callable[[object], str]] = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def dumps(obj: object) -> bytes:
    """Serialise a (rewritten) message: compact, UTF-8, no NaN/Infinity.

    Raises ValueError for non-finite floats or strings that are not valid Unicode.
    """
    return _dumps(obj).encode("utf-8")


def error_response(id: str | int | None, code: int, message: str, data: object = None) -> bytes:
    """A JSON-RPC 2.0 error response (``data`` omitted when None)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return dumps({"jsonrpc": "2.0", "id": id, "error": error})
