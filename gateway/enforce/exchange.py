"""One exchange's facts, frozen per message (sans-IO).

The relay builds an :class:`Exchange` for every message it hands to
:meth:`gateway.enforce.enforcer.Enforcer.process` (``dataclasses.replace`` on the request's
current facts) and never mutates it; facts that change during a request (the session id an
``initialize`` minted, the stream kind, the gateway's own 2026 retry) make a new one. Nothing
flows back through an exchange: what the enforcer learns is returned in its
:class:`gateway.enforce.outcome.Outcome`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from gateway.enforce.notice import Blocked
from gateway.enforce.seal import digest
from gateway.wire.era import Era
from gateway.wire.jsonrpc import Message


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
    pipe: bool = False  # the messages travel as lines on a stdio pipe (gateway/stdio/)
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
