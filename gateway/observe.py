"""Observation of elicitations (sans-IO): one structured event per elicitation seen.

The relay calls :meth:`Observer.client_message` / :meth:`Observer.server_message` for every parsed
message; the observer extracts sightings, remembers each handshake session's declared modes and logs
``elicitation.seen``. Only names, modes, ids and domains are logged — never values.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from gateway import elicitation
from gateway.capabilities import (
    client_name,
    modes_from_initialize,
    modes_from_meta,
)
from gateway.elicitation import Sighting
from gateway.era import Era
from gateway.jsonrpc import Message
from gateway.tokens import REQUEST


@dataclass(frozen=True, slots=True)
class SessionInfo:
    modes: frozenset[str]
    client: str | None


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
    pending_initialize: SessionInfo | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def hash_id(value: str | None) -> str | None:
    """A short, non-reversible digest for logging session ids."""
    if value is None:
        return None
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class SessionModes:
    """Bounded map of handshake session id → declared modes (LRU). Observation only: the
    enforcement issue replaces it with a sealed session id that any replica can read."""

    def __init__(self, capacity: int = 100_000) -> None:
        self._data: OrderedDict[str, SessionInfo] = OrderedDict()
        self._capacity = capacity

    def get(self, session_id: str | None) -> SessionInfo | None:
        if session_id is None:
            return None
        info = self._data.get(session_id)
        if info is not None:
            self._data.move_to_end(session_id)
        return info

    def put(self, session_id: str, info: SessionInfo) -> None:
        self._data[session_id] = info
        self._data.move_to_end(session_id)
        while len(self._data) > self._capacity:
            self._data.popitem(last=False)

    def forget(self, session_id: str | None) -> None:
        if session_id is not None:
            self._data.pop(session_id, None)


class Observer:
    def __init__(self, logger: Any, sessions: SessionModes | None = None) -> None:
        self._log = logger
        self.sessions = sessions or SessionModes()

    def client_message(self, x: Exchange, msg: Message) -> list[Sighting]:
        """A client→server message: remember the session facts, log answers."""
        x.method = msg.method
        x.request_id = msg.id
        if msg.kind == "request" and msg.method == "initialize":
            x.pending_initialize = SessionInfo(
                modes_from_initialize(msg.params), client_name(msg.params)
            )
        elif x.era is Era.MODERN:
            x.modes = modes_from_meta(msg.params)
            x.client = client_name(msg.params)
        else:
            info = self.sessions.get(x.session_id)
            if info is not None:
                x.modes, x.client = info.modes, info.client
        found = elicitation.from_client(msg, answer_ids=REQUEST)
        for s in found:
            self._emit(x, s, transport="json")  # answers arrive in the client's POST body
        return found

    def session_started(self, x: Exchange, session_id: str | None) -> None:
        """The upstream answered ``initialize`` (2xx) with a session id."""
        if session_id and x.pending_initialize is not None:
            self.sessions.put(session_id, x.pending_initialize)
            x.session_id = session_id
            x.modes, x.client = x.pending_initialize.modes, x.pending_initialize.client

    def server_message(self, x: Exchange, msg: Message, *, transport: str) -> list[Sighting]:
        """A server→client message (``transport``: json, or the SSE stream kind post/get)."""
        found = elicitation.from_server(msg)
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
            event["fields"] = elicitation.field_names(s.params)
        self._log.info("elicitation.seen", **event)
