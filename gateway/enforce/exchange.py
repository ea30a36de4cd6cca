"""Observation of elicitations (sans-IO): one structured event per elicitation seen.

The relay calls :meth:`Observer.client_message` / :meth:`Observer.server_message` for every parsed
message; the observer extracts sightings and logs ``elicitation.seen``. Only names, modes, ids
and domains are logged — never values.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from gateway.carriers import extract
from gateway.carriers.extract import Sighting
from gateway.enforce.tokens import REQUEST
from gateway.wire.era import Era
from gateway.wire.jsonrpc import Message


@dataclass(slots=True)
class Exchange:
    """Per-request facts the relay collects and the observer reads."""

    upstream: str
    era: Era
    session_id: str | None = None
    method: str | None = None
    request_id: str | int | None = None
    modes: frozenset[str] | None = None  # declared modes, when known
    client: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def hash_id(value: str | None) -> str | None:
    """A short, non-reversible digest for logging session ids."""
    if value is None:
        return None
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class Observer:
    def __init__(self, logger: Any) -> None:
        self._log = logger

    def client_message(self, x: Exchange, msg: Message) -> list[Sighting]:
        """A client→server message: log the answers it carries. The relay has already put the
        session facts (declared modes, client name) on ``x``, from the sealed session id or the
        request's ``_meta``."""
        x.method = msg.method
        x.request_id = msg.id
        found = extract.from_client(msg, answer_ids=REQUEST)
        for s in found:
            self._emit(x, s, transport="json")  # answers arrive in the client's POST body
        return found

    def server_message(self, x: Exchange, msg: Message, *, transport: str) -> list[Sighting]:
        """A server→client message (``transport``: json, or the SSE stream kind post/get)."""
        found = extract.from_server(msg)
        for s in found:
            self._emit(x, s, transport=transport)
        return found

    def _emit(self, x: Exchange, s: Sighting, *, transport: str) -> None:
        event: dict[str, Any] = {
            "upstream": x.upstream,
            "era": x.era.value,
            "carrier": s.carrier.value,
            "mode": s.mode,
            "transport": "sse" if transport in ("post", "get") else transport,
            "location": s.location,
            "declared_modes": sorted(x.modes) if x.modes is not None else None,
            "session": hash_id(x.session_id),
            "client": x.client,
        }
        if transport in ("post", "get"):
            event["stream"] = transport
        if s.request_id is not None:
            sealed = isinstance(s.request_id, str) and s.request_id.startswith(REQUEST)
            event["request_id"] = "sealed" if sealed else s.request_id
        if s.key is not None:
            event["key"] = s.key[:128]
        if s.action is not None:
            event["action"] = s.action[:16]
        if s.params is not None:
            event["fields"] = extract.field_names(s.params)
        self._log.info("elicitation.seen", **event)
