"""One exchange's facts, frozen per message (sans-IO), and the ``elicitation.seen`` event.

The relay builds an :class:`Exchange` for every message it hands to
:meth:`gateway.enforce.enforcer.Enforcer.process` (``dataclasses.replace`` on the request's
current facts) and never mutates it; facts that change during a request (the session id an
``initialize`` minted, the stream kind, the gateway's own 2026 retry) make a new one. Nothing
flows back through an exchange: what the enforcer learns is returned in its
:class:`gateway.enforce.outcome.Outcome`.

:func:`seen_events` turns the sightings of one message (scanned once, by ``process``) into
``elicitation.seen`` events: names, modes, ids and domains only, never values.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from gateway.carriers import extract
from gateway.carriers.extract import Sighting
from gateway.enforce.notice import Blocked
from gateway.enforce.seal import digest
from gateway.enforce.tokens import REQUEST
from gateway.wire.era import Era
from gateway.wire.jsonrpc import Message

Event = dict[str, Any]
"""An audit or observation event: ``event`` names it (``elicitation.seen`` goes to the logger
``gateway.observe``, every other event to the audit trail, ``gateway.audit``)."""

SEEN: Final = "elicitation.seen"


class Direction(StrEnum):
    CLIENT = "client"  # client → server: the client's POST body
    SERVER = "server"  # server → client: a response body or an SSE event


@dataclass(frozen=True, slots=True)
class Exchange:
    """What is known about one message's exchange when it is processed."""

    upstream: str
    era: Era
    credential: str = ""  # digest of the client's Authorization header
    direction: Direction = Direction.SERVER
    transport: str = "json"  # json | post | get (the SSE stream kind)
    modes: frozenset[str] | None = None  # declared elicitation modes; None = unknown
    session: str | None = None  # the upstream Mcp-Session-Id (restored from the sealed one)
    client: str | None = None  # the client's name (from initialize or the request's _meta)
    request_id: str | int | None = None  # the id of the client's request (errors answer it)
    request: Message | None = None  # the upstream-facing request a response answers
    retry_id: str | None = None  # the id of the gateway's own 2026 retry in flight
    rounds: int = 0  # rounds the gateway retried itself
    blocked: tuple[Blocked, ...] = ()  # notice-worthy blocks so far in this call (notice.py)

    @property
    def session_digest(self) -> str:
        return digest(self.session or "")


def hash_id(value: str | None) -> str | None:
    """A short, non-reversible digest for logging session ids."""
    if value is None:
        return None
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def seen_events(x: Exchange, sightings: list[Sighting]) -> list[Event]:
    """One ``elicitation.seen`` event per sighting (answers arrive in the client's POST body)."""
    transport = "json" if x.direction is Direction.CLIENT else x.transport
    return [_seen(x, s, transport) for s in sightings]


def _seen(x: Exchange, s: Sighting, transport: str) -> Event:
    event: Event = {
        "event": SEEN,
        "upstream": x.upstream,
        "era": x.era.value,
        "carrier": s.carrier.value,
        "mode": s.mode,
        "transport": "sse" if transport in ("post", "get") else transport,
        "location": s.location,
        "declared_modes": sorted(x.modes) if x.modes is not None else None,
        "session": hash_id(x.session),
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
    return event
