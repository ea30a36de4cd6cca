"""The stdio relay: one MCP conversation over two line streams, judged by the sans-IO core.

A :class:`StdioRelay` sits between a client and a server that each speak newline-delimited
JSON-RPC (``gateway.wire.ndjson``). It is handed every frame read from either side
(:meth:`from_client`, :meth:`from_server`) and writes through two callables it is given
(``to_client``, ``to_server``: one line each); it knows nothing of processes, pipes or sockets,
so the same class serves ``stdio -- COMMAND`` (client on the gateway's own stdin/stdout, server a
child process, ``gateway.stdio.child``) and is the piece a later transport pairs with another
peer (a remote HTTP upstream, or HTTP clients in front of a child).

Every message goes to :meth:`gateway.enforce.enforcer.Enforcer.process` exactly as the HTTP
relay sends it: one frozen :class:`~gateway.enforce.exchange.Exchange` per message, the policy
snapshot of the client's request, and the :class:`~gateway.enforce.outcome.Outcome` carried out
in one place (:meth:`StdioRelay._carry_out`): forward the original line byte-exact, the rewritten
message or nothing; replies (a blocked elicitation's decline) written to the server; the
gateway's own 2026 retry sent to the server under a new id and its answer returned under the
client's; the client's bad answer refused.

What the relay remembers (there is one client per process, so no session ids to seal):

* the client's declared elicitation modes and its name, from ``initialize`` (handshake era) or
  from each request's ``_meta`` envelope (2026-07-28);
* every client request in flight (:class:`Call`), by id: the server's answer is judged in that
  request's exchange (its era, modes, policy snapshot, the request itself for the 2026 state
  binding, the blocks to tell about), a 2026 retry the gateway makes itself is answered under
  the client's id, and :meth:`upstream_gone` answers whatever is left with a JSON-RPC error.

A server→client request on a pipe does not name the call it belongs to: with exactly one call
in flight, a block is told in that call's result (``notify_user``); otherwise at once, as a
``notifications/message`` warning (the way a block on an HTTP GET stream is told).

Anything that is not one strict JSON-RPC object per line is never forwarded: from the client it
is answered with the parser's JSON-RPC error (``id: null``: the id of an unreadable line is not
known); from the server it is dropped and logged (reason code only) — a client waiting for an
answer that was dropped gets it from :meth:`upstream_gone` when the server goes, or from its own
timeout.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from structlog.typing import FilteringBoundLogger

from gateway import errors
from gateway.audit.events import Event
from gateway.carriers.capabilities import client_name, modes_from_initialize, modes_from_meta
from gateway.enforce.enforcer import Enforcer
from gateway.enforce.exchange import Direction, Exchange
from gateway.enforce.outcome import Outcome
from gateway.errors import ProtocolError
from gateway.policy.loader import Policy
from gateway.wire.era import MODERN_VERSIONS, Era, meta_version
from gateway.wire.jsonrpc import Message, classify, dumps, error_response
from gateway.wire.ndjson import Frame, TooLong, encode_line, read_line

Send = Callable[[bytes], Awaitable[None]]
EventSink = Callable[[list[Event]], None]
DEFAULT_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
DEFAULT_MAX_DEPTH: Final = 64
GONE_MESSAGE: Final = "Upstream MCP server exited"


def _key(request_id: str | int | None) -> tuple[str, str]:
    """A request id as a dict key (1 and "1" are different ids)."""
    return (type(request_id).__name__, str(request_id))


@dataclass(slots=True)
class Call:
    """One client request in flight: the facts its answer is judged in (``x``), replaced, never
    mutated, when they change (a gateway retry, a block to tell), and its policy snapshot."""

    x: Exchange
    policy: Policy


@dataclass(frozen=True, slots=True)
class Counters:
    """What a relay saw go wrong, for the operator (log lines carry the details)."""

    client_refused: int = 0
    server_dropped: int = 0


class StdioRelay:
    def __init__(
        self,
        *,
        upstream: str,
        enforcer: Enforcer,
        policy: Callable[[], Policy],
        events: EventSink,
        to_client: Send,
        to_server: Send,
        logger: FilteringBoundLogger,
        reply_to_server: Send | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        self._upstream = upstream
        self._enforcer = enforcer
        self._policy = policy
        self._emit = events
        self._to_client = to_client
        self._to_server = to_server
        # What the relay writes to the server while relaying the server's own output (replies,
        # its own 2026 retries): a writer that does not wait for a server busy writing to us.
        self._reply = reply_to_server or to_server
        self._log = logger
        self.max_message_bytes = max_message_bytes
        self._max_depth = max_depth
        # The conversation's facts. The session id only keys the enforcer's per-session memory
        # (answered server requests, blocked elicitation ids) and binds its gq1. tokens: random
        # per process, never sent anywhere.
        self._session = secrets.token_hex(16)
        self._era = Era.HANDSHAKE
        self._modes: frozenset[str] | None = None
        self._client: str | None = None
        self._calls: dict[tuple[str, str], Call] = {}
        self._retries: dict[tuple[str, str], tuple[str, str]] = {}  # retry id -> client id key
        self.counters = Counters()
        self.gone = False

    # -- facts ----------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._calls)

    def _base(self, direction: Direction) -> Exchange:
        return Exchange(
            upstream=self._upstream,
            era=self._era,
            direction=direction,
            transport="post",
            pipe=True,
            modes=self._modes,
            session=self._session,
            client=self._client,
        )

    def _client_facts(self, msg: Message) -> Exchange:
        """The exchange of a client message, and what it says about the client."""
        x = self._base(Direction.CLIENT)
        if msg.kind != "request":
            return x
        version = meta_version(msg.params)
        if msg.method == "initialize":
            self._era = Era.HANDSHAKE
            self._modes = modes_from_initialize(msg.params)
            self._client = client_name(msg.params)
            return replace(x, era=Era.HANDSHAKE, modes=self._modes, client=self._client)
        if version is None:
            return x
        era = Era.MODERN if version in MODERN_VERSIONS else Era.UNKNOWN
        if era is Era.MODERN:
            self._era = Era.MODERN  # a 2026 client: server-originated messages are 2026 too
        modes = modes_from_meta(msg.params)
        name = client_name(msg.params)
        if modes is not None:
            self._modes = modes
        if name is not None:
            self._client = name
        return replace(x, era=era, modes=modes, client=name or self._client)

    # -- client → server ------------------------------------------------------------------

    async def from_client(self, frame: Frame) -> None:
        """One frame read from the client."""
        if isinstance(frame, TooLong):
            self._refused("too-large")
            await self._to_client(
                encode_line(
                    error_response(
                        None,
                        errors.INVALID_REQUEST,
                        f"Message too large: the gateway reads at most {self.max_message_bytes} "
                        "bytes per line",
                    )
                )
            )
            return
        try:
            msg = read_line(frame.data, max_bytes=self.max_message_bytes, max_depth=self._max_depth)
        except ProtocolError as exc:
            self._refused(exc.message)
            await self._to_client(encode_line(error_response(None, exc.jsonrpc_code, exc.message)))
            return
        x = self._client_facts(msg)
        if msg.kind == "request":
            x = replace(x, request_id=msg.id)
        policy = self._policy()
        if self.gone:
            if msg.kind == "request":
                await self._answer_gone(msg.id)
            return
        outcome = await self._carry_out(msg, x, policy)
        if outcome.fail is not None:
            self._log.info("request.rejected", reason=outcome.fail.message, upstream=self._upstream)
            if msg.kind == "request":
                await self._to_client(
                    encode_line(
                        error_response(msg.id, outcome.fail.jsonrpc_code, outcome.fail.message)
                    )
                )
            return
        if outcome.absorb:
            return
        out = msg if outcome.message is None else classify(dict(outcome.message))
        if msg.kind == "request":
            x = replace(x, request=out, blocked=x.blocked + outcome.blocked)
            self._calls[_key(msg.id)] = Call(x, policy)
        elif msg.kind == "notification" and msg.method == "notifications/cancelled":
            self._cancelled(msg.params)
        line = frame.data if outcome.message is None else dumps(outcome.message)
        await self._to_server(encode_line(line))

    def _cancelled(self, params: Any) -> None:
        """The client gave up on a request: the server does not answer a cancelled request."""
        if isinstance(params, Mapping):
            call = self._calls.pop(_key(params.get("requestId")), None)
            if call is not None and call.x.retry_id is not None:
                self._retries.pop(_key(call.x.retry_id), None)

    def _refused(self, reason: str) -> None:
        self.counters = replace(self.counters, client_refused=self.counters.client_refused + 1)
        self._log.warning("stdio.client_refused", reason=reason, upstream=self._upstream)

    # -- server → client ------------------------------------------------------------------

    async def from_server(self, frame: Frame) -> None:
        """One frame read from the server."""
        if isinstance(frame, TooLong):
            self._dropped(f"line of {frame.size} bytes over the {self.max_message_bytes} cap")
            return
        try:
            msg = read_line(frame.data, max_bytes=self.max_message_bytes, max_depth=self._max_depth)
        except ProtocolError as exc:
            self._dropped(exc.message)
            return
        key, call = self._call_of(msg)
        if call is not None:
            x, policy = replace(call.x, direction=Direction.SERVER), call.policy
        elif msg.kind == "request" and len(self._calls) == 1:
            # The one call in flight: a block is told in its result.
            key, call = next(iter(self._calls.items()))
            x, policy = replace(call.x, direction=Direction.SERVER), call.policy
        else:
            x = self._base(Direction.SERVER)
            x = replace(x, transport="get" if msg.kind == "request" else "post")
            policy = self._policy()
        outcome = await self._carry_out(msg, x, policy)
        if call is not None and key is not None:
            self._after(key, msg, outcome)
        if outcome.notice is not None:
            await self._to_client(encode_line(dumps(outcome.notice)))
        if outcome.retry is not None:
            await self._reply(encode_line(dumps(outcome.retry.message)))
            return
        if outcome.drop or outcome.fail is not None:
            return
        line = frame.data if outcome.message is None else dumps(outcome.message)
        await self._to_client(encode_line(line))

    def _after(self, key: tuple[str, str], msg: Message, outcome: Outcome) -> None:
        """Bookkeeping for a call once a server message of it was judged: a retry the gateway
        makes becomes the call's exchange; blocks to tell are added; a final answer ends it."""
        call = self._calls.get(key)
        if call is None:
            return
        if msg.kind in ("response", "error"):
            self._retries.pop(_key(msg.id), None)
            if outcome.retry is None:
                del self._calls[key]
                return
        x = call.x
        if outcome.retry is not None:
            self._retries[_key(outcome.retry.exchange.retry_id)] = key
            x = outcome.retry.exchange
        if outcome.blocked:  # the call's final result tells the user (enforce/notice.py)
            x = replace(x, blocked=x.blocked + outcome.blocked)
        self._calls[key] = Call(x, call.policy)

    def _call_of(self, msg: Message) -> tuple[tuple[str, str] | None, Call | None]:
        """The client request a server response answers (through a gateway retry too)."""
        if msg.kind not in ("response", "error"):
            return None, None
        key = _key(msg.id)
        key = self._retries.get(key, key)
        call = self._calls.get(key)
        if call is None:
            return None, None
        if call.x.retry_id is not None and _key(msg.id) != _key(call.x.retry_id):
            return None, None  # a late answer under the client's id after the gateway retried
        return key, call

    def _dropped(self, reason: str) -> None:
        self.counters = replace(self.counters, server_dropped=self.counters.server_dropped + 1)
        self._log.warning("stdio.server_line_dropped", reason=reason, upstream=self._upstream)

    # -- the one place outcomes are carried out -------------------------------------------

    async def _carry_out(self, msg: Message, x: Exchange, policy: Policy) -> Outcome:
        """Process one message in its frozen exchange: emit the events and write the replies to
        the server (a blocked elicitation's decline). What is left for the caller: forward the
        line, the rewritten message or nothing, the retry, the notice, the error."""
        outcome, events = self._enforcer.process(msg, x, policy)
        self._emit(events)
        for reply in outcome.replies:  # only server messages have replies
            if not self.gone:
                await self._reply(encode_line(dumps(reply)))
        return outcome

    # -- the end --------------------------------------------------------------------------

    async def upstream_gone(self, why: str = GONE_MESSAGE) -> None:
        """The server is gone: every client request in flight is answered with a JSON-RPC
        error (the client's id), and so is every request that arrives from now on."""
        self.gone = True
        pending = [call.x.request_id for call in self._calls.values()]
        self._calls.clear()
        self._retries.clear()
        for request_id in pending:
            await self._answer_gone(request_id, why)

    async def _answer_gone(self, request_id: str | int | None, why: str = GONE_MESSAGE) -> None:
        await self._to_client(
            encode_line(error_response(request_id, errors.GATEWAY_UPSTREAM_ERROR, why))
        )


__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Call", "Counters", "StdioRelay"]
