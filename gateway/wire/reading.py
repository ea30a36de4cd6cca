"""How MCP clients will read an upstream response: decided from its head, before any of its body
is forwarded (sans-IO). The one rule of the gateway's reading:

    A response body reaches a client only if the gateway decodes it exactly as every MCP client
    we know would, or if no reading of it by any of them can carry an elicitation. Everything
    else fails closed.

The clients whose readings this module accounts for (their code was read, and their behaviour is
pinned by ``tests/differential/``):

* the Python SDK (``mcp`` 2.3, httpx2): ``Content-Type`` lower-cased and tested with
  ``startswith("application/json")`` / ``startswith("text/event-stream")`` for any status but
  202 and redirects (4xx/5xx bodies of a JSON type are parsed as JSON-RPC errors); JSON bytes go
  to pydantic as they are (no charset), SSE text is decoded with the ``charset`` parameter (any
  codec Python knows: UTF-16, UTF-7, ``unicode_escape``, ...); every listed content coding it
  knows is applied, unknown ones are skipped; a leading BOM is *not* stripped from an event
  stream;
* the TypeScript SDK (fetch + ``TextDecoderStream`` + eventsource-parser): the parsed media type
  decides; bodies are always UTF-8 (a BOM is stripped, the ``charset`` parameter is ignored);
  fetch applies the content codings it knows and none when it meets one it does not; a modern-era
  HTTP 400 body is parsed as JSON whatever its type; eventsource-parser also strips the three
  characters ``ï»¿`` (a BOM decoded as Latin-1) from the first chunk;
* fastmcp and other Python clients ride the Python SDK's transport.

Their readings differ on anything but the plainest response, so the gateway accepts only the
plainest response and refuses the rest (:class:`Unreadable`, answered like any uninspectable
upstream message):

* at most one ``Content-Type``, ``Content-Encoding`` and ``Transfer-Encoding`` field, each of
  visible ASCII (a repeated field is joined or picked differently by different stacks);
* no content coding but ``identity`` (the gateway asks for ``identity`` and decodes nothing
  itself);
* a type any client may read as JSON or as an event stream (its value mentions
  ``application/json`` or ``text/event-stream`` in any case) must be exactly one of the two,
  with no parameter but ``charset=utf-8``. Such bodies are inspected whatever their status;
* any other type (or none) is :attr:`Reading.OPAQUE`: no client we know takes a message from it
  except the TypeScript SDK's modern HTTP 400 path, so the relay forwards it only when it cannot
  carry an elicitation at all (:func:`gateway.wire.markers.may_carry_elicitation`) or when it is one
  strictly parsed, inspected JSON-RPC message.

The event-stream side of the rule (no BOM at the start, no field the gateway does not know) is
enforced by :class:`gateway.wire.sse.SSEDecoder` in its ``strict`` mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Final

from gateway.errors import UpstreamProtocolError

__all__ = ["JSON_TYPE", "SSE_TYPE", "Reading", "Unreadable", "plan_response"]

JSON_TYPE: Final = "application/json"
SSE_TYPE: Final = "text/event-stream"
_SINGLE: Final = ("content-type", "content-encoding", "transfer-encoding")
_VISIBLE: Final = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"\t"}


class Reading(StrEnum):
    JSON = "json"  # one JSON text, strictly parsed and inspected
    SSE = "sse"  # an event stream, decoded strictly and inspected block by block
    OPAQUE = "opaque"  # a type no client reads as JSON-RPC (error pages, empty answers)


class Unreadable(UpstreamProtocolError):
    """Clients could read this response differently from the gateway: it is not forwarded.
    ``reason`` is a stable kebab-case code for logs and metrics."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _content_type(value: str) -> Reading | None:
    """The reading of a canonical JSON / event-stream type, None for a non-canonical one."""
    media, *params = value.split(";")
    media = media.strip().lower()
    if media not in (JSON_TYPE, SSE_TYPE) or len(params) > 1:
        return None
    for param in params:
        name, eq, charset = param.strip().partition("=")
        if not eq or name.lower() != "charset":
            return None
        if charset.lower() not in ("utf-8", '"utf-8"'):
            return None
    return Reading.JSON if media == JSON_TYPE else Reading.SSE


def plan_response(headers: Iterable[tuple[str, str]]) -> Reading:
    """How the relay must read a response with these header fields (any status).

    Raises :class:`Unreadable` when clients could read the body differently from the gateway.
    """
    seen: dict[str, list[str]] = {}
    for name, value in headers:
        key = name.lower()
        if key in _SINGLE:
            seen.setdefault(key, []).append(value)
    for key, values in seen.items():
        if len(values) > 1:
            raise Unreadable(f"repeated-{key}", f"upstream repeated the {key} header field")
        if not set(values[0]) <= _VISIBLE:
            raise Unreadable(f"invalid-{key}", f"upstream {key} holds non-ASCII or control bytes")
    coding = seen.get("content-encoding", [""])[0]
    if any(token.strip().lower() not in ("", "identity") for token in coding.split(",")):
        raise Unreadable("content-coding", "compressed upstream body (content coding)")
    if "content-type" not in seen:
        return Reading.OPAQUE
    value = seen["content-type"][0]
    reading = _content_type(value)
    if reading is not None:
        return reading
    lower = value.lower()
    if JSON_TYPE in lower or SSE_TYPE in lower:
        raise Unreadable(
            "ambiguous-content-type",
            "upstream content type is not exactly application/json or text/event-stream "
            "(with no parameter but charset=utf-8)",
        )
    return Reading.OPAQUE
