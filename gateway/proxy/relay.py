"""The relay: the only module that touches sockets.

Client ⇄ gateway ⇄ upstream for POST, GET and DELETE. JSON bodies are parsed (size-capped);
SSE bodies are decoded block by block as they arrive. Every parsed message, whichever path it
came by, goes to :meth:`Relay._carry_out`: one frozen :class:`Exchange` per message,
``Enforcer.process`` (sans-IO) decides, and the outcome is carried out there — events emitted,
replies POSTed to the server on the client's behalf, a gateway retry taken over as the call's
exchange — leaving the caller to forward the original bytes (the common case, byte-exact), a
rewritten message, nothing, the retry, or the error, in its own framing. Anything the gateway
cannot inspect is not forwarded (fail closed).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import aiohttp
from aiohttp import web
from structlog.typing import FilteringBoundLogger
from yarl import URL

from gateway import errors
from gateway.audit.events import Event
from gateway.carriers.capabilities import client_name, modes_from_initialize, modes_from_meta
from gateway.enforce.enforcer import Enforcer
from gateway.enforce.exchange import Direction, Exchange
from gateway.enforce.outcome import Outcome
from gateway.enforce.seal import KeyRing
from gateway.enforce.tokens import SessionClaims, credential_digest, open_session, seal_session
from gateway.errors import (
    ClientProtocolError,
    ProtocolError,
    SealError,
    UpstreamBusy,
    UpstreamConnectError,
    UpstreamProtocolError,
    UpstreamUnavailable,
)
from gateway.policy.loader import Policy
from gateway.proxy.config import Settings
from gateway.proxy.headers import HostGuard, downstream_response_headers, upstream_request_headers
from gateway.proxy.metrics import Metrics
from gateway.proxy.upstream import UpstreamClient, UpstreamError, UpstreamResponse, UpstreamTimeout
from gateway.wire.era import Era, era_of_version, header_mismatch
from gateway.wire.jsonrpc import (
    JSONParseError,
    Message,
    classify,
    dumps,
    error_response,
    parse_json,
    parse_message,
)
from gateway.wire.markers import (
    FAST_PATH_MIN_BYTES,
    MarkerScan,
    may_carry_elicitation,
    needs_inspection,
)
from gateway.wire.reading import JSON_TYPE as JSON_CT
from gateway.wire.reading import SSE_TYPE as SSE_CT
from gateway.wire.reading import Reading, Unreadable, plan_response
from gateway.wire.sse import SSEBlock, SSEDecoder, SSEError, encode_event

SESSION_HEADER: Final = "Mcp-Session-Id"
_REPLY_HEADERS: Final = ("mcp-session-id", "mcp-protocol-version", "authorization")
EventSink = Callable[[list[Event]], None]


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    url: URL


def jsonrpc_error(
    status: int, request_id: str | int | None, code: int, message: str, data: Any = None
) -> web.Response:
    return web.Response(
        status=status,
        body=error_response(request_id, code, message, data),
        content_type=JSON_CT,
    )


@dataclass(slots=True)
class _BodyRead:
    """An upstream body as read so far: its chunks, their size and their marker scan."""

    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    scan: MarkerScan = field(default_factory=MarkerScan)

    def body(self) -> bytes:
        return self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)


@dataclass(slots=True)
class _Call:
    """One client request in flight: what the relay needs to answer and to retry.

    ``x`` holds the exchange's facts so far; each message is processed in a frozen copy, and a
    fact that changes (the session an initialize minted, the stream kind, a gateway retry)
    replaces ``x`` here, in the relay, never inside the enforcer."""

    target: Target
    x: Exchange
    policy: Policy  # this request's snapshot: every decision of the request, even if reloaded
    up_headers: list[tuple[str, str]]
    client_session: str | None  # the sealed session id the client sent
    pending: SessionClaims | None = None  # an initialize whose session id is to be sealed


class Relay:
    def __init__(
        self,
        *,
        settings: Settings,
        client: UpstreamClient,
        guard: HostGuard,
        logger: FilteringBoundLogger,
        enforcer: Enforcer,
        policy: Callable[[], Policy],
        events: EventSink,
        keys: KeyRing,
        metrics: Metrics,
    ) -> None:
        self._metrics = metrics
        self._client = client
        self._guard = guard
        self._log = logger
        self._enforcer = enforcer
        self._policy = policy
        self._emit = events
        self._keys = keys
        limits = settings.limits
        self._max_request = limits.max_request_bytes
        self._max_response = limits.max_response_bytes
        self._max_event = limits.max_event_bytes
        self._max_depth = limits.max_json_depth
        # Drain bookkeeping: requests in flight and the SSE streams being relayed.
        self.draining = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._streams: dict[UpstreamResponse, str] = {}

    # -- drain --------------------------------------------------------------------------------

    def begin_drain(self) -> None:
        """Stop being ready; end the standalone GET streams now (clients reconnect elsewhere,
        resuming with Last-Event-ID); requests in flight, POST streams included, go on."""
        self.draining = True
        for upstream, kind in list(self._streams.items()):
            if kind == "get":
                upstream.close()

    def end_streams(self) -> None:
        """End every stream still open (the grace period is over), cleanly for the client."""
        for upstream in list(self._streams):
            upstream.close()

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is in flight; False on timeout."""
        try:
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    # -- entry point ------------------------------------------------------------------------

    async def handle(self, request: web.Request, target: Target) -> web.StreamResponse:
        self._in_flight += 1
        self._idle.clear()
        try:
            return await self._handle(request, target)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def _handle(self, request: web.Request, target: Target) -> web.StreamResponse:
        if not self._guard.host_ok(request.headers.get("Host")):
            self._log.warning("request.rejected", reason="host-not-allowed", upstream=target.name)
            return jsonrpc_error(421, None, errors.INVALID_REQUEST, "Invalid Host header")
        if not self._guard.origin_ok(request.headers.get("Origin")):
            self._log.warning("request.rejected", reason="origin-not-allowed", upstream=target.name)
            return jsonrpc_error(403, None, errors.INVALID_REQUEST, "Invalid Origin header")
        version = request.headers.get("MCP-Protocol-Version")
        era = era_of_version(version)
        credential = credential_digest(request.headers.get("Authorization"))
        call = _Call(
            target,
            Exchange(upstream=target.name, era=era, credential=credential),
            self._policy(),
            upstream_request_headers(request.headers.items()),
            request.headers.get(SESSION_HEADER),
        )
        body: bytes | None = None
        msg: Message | None = None
        try:
            if request.method == "POST":
                body, msg = await self._read_client_message(request, version)
                call.x = replace(call.x, request_id=msg.id)
            if call.client_session is not None:
                if era is Era.MODERN:
                    # 2026 servers ignore Mcp-Session-Id; what a client sends there is (at best)
                    # a gateway token, and no gateway token is ever handed to an upstream.
                    call.up_headers = [
                        (n, v) for n, v in call.up_headers if n.lower() != "mcp-session-id"
                    ]
                else:
                    self._open_session(call)
            if msg is not None:
                outcome = await self._carry_out(call, msg, Direction.CLIENT)
                if outcome.fail is not None:
                    raise outcome.fail
                if outcome.absorb:  # what the MCP SDK server answers for a duplicate response
                    return web.Response(status=202)
                if outcome.message is not None:
                    body, msg = dumps(outcome.message), classify(dict(outcome.message))
                if msg.kind == "request":
                    call.x = replace(call.x, request=msg)
        except ClientProtocolError as exc:
            self._log.info("request.rejected", reason=exc.message, upstream=target.name)
            return jsonrpc_error(
                exc.http_status, msg.id if msg else None, exc.jsonrpc_code, exc.message
            )
        query = request.rel_url.raw_query_string
        return await self._exchange(request, request.method, query, call, body)

    async def _exchange(
        self, request: web.Request, method: str, query: str, call: _Call, body: bytes | None
    ) -> web.StreamResponse:
        """One upstream request and the relayed response (the connection is released after)."""
        try:
            upstream = await self._open(method, query, call, body)
        except UpstreamUnavailable as exc:
            return self._unavailable(call, exc)
        try:
            return await self._respond(request, upstream, call)
        finally:
            upstream.close()

    # -- client side ------------------------------------------------------------------------

    async def _read_client_message(
        self, request: web.Request, version: str | None
    ) -> tuple[bytes, Message]:
        too_large = ClientProtocolError("Request body too large", http_status=413)
        if request.content_length is not None and request.content_length > self._max_request:
            raise too_large
        body = bytearray()
        try:
            async for chunk in request.content.iter_any():
                body.extend(chunk)
                if len(body) > self._max_request:
                    raise too_large
        except TimeoutError as exc:
            # timeouts.body ran out while the body was arriving (gateway/proxy/listener.py raises
            # BodyTimeout into the body stream): 408, and the listener closes the connection.
            raise ClientProtocolError("Request body timeout", http_status=408) from exc
        try:
            parsed = parse_message(
                bytes(body), max_bytes=self._max_request, max_depth=self._max_depth
            )
        except ProtocolError as exc:  # the parser's error, attributed to the client
            raise ClientProtocolError(
                exc.message, jsonrpc_code=exc.jsonrpc_code, http_status=exc.http_status
            ) from exc
        if isinstance(parsed, list):
            raise ClientProtocolError(
                "JSON-RPC batches are not supported: send one message per request"
            )
        if parsed.kind in ("request", "notification") and header_mismatch(version, parsed.params):
            raise ClientProtocolError(
                "MCP-Protocol-Version header does not match the request body's protocol version",
                jsonrpc_code=errors.HEADER_MISMATCH,
            )
        return bytes(body), parsed

    def _open_session(self, call: _Call) -> None:
        """Restore the upstream session id and the declared modes from the sealed session id."""
        try:
            claims = open_session(
                self._keys,
                call.client_session or "",
                upstream=call.target.name,
                credential=call.x.credential,
            )
        except SealError as exc:
            self._log.info("session.rejected", reason=exc.reason, upstream=call.target.name)
            raise ClientProtocolError("Session not found", http_status=404) from exc
        call.up_headers = [
            (n, claims.upstream_session if n.lower() == "mcp-session-id" else v)
            for n, v in call.up_headers
        ]
        call.x = replace(
            call.x, session=claims.upstream_session, modes=claims.modes, client=claims.client
        )

    def _client_facts(self, call: _Call, msg: Message) -> None:
        """What the client's message says about it: the modes it declares and its name."""
        if msg.kind == "request" and msg.method == "initialize":
            modes = modes_from_initialize(msg.params)
            call.pending = SessionClaims("", call.target.name, modes, client_name(msg.params), "")
            call.x = replace(call.x, modes=modes, client=call.pending.client)
        elif call.x.era is Era.MODERN:
            call.x = replace(
                call.x, modes=modes_from_meta(msg.params), client=client_name(msg.params)
            )

    # -- the one place outcomes are carried out --------------------------------------------

    async def _carry_out(
        self, call: _Call, msg: Message, direction: Direction, *, in_body: bool = False
    ) -> Outcome:
        """Process one message in a frozen exchange and carry out its outcome: emit its events,
        POST its replies to the server, take a gateway retry over as the call's exchange, add
        its ``blocked`` to the call's (the call's result tells the user). What is left for the
        caller is the framing: forward the original bytes (``unchanged``), the rewritten
        ``message`` or nothing (``drop``), make the ``retry``, answer 202 (``absorb``) or the
        ``fail`` error, the ``notice`` event written first on a stream. Every path comes here:
        the client's POST body, JSON response bodies (``in_body``: a server request dropped
        there fails the response, as a server request never belongs inside the body answering
        the client's own request), SSE events on POST and GET streams, and the answers to the
        gateway's own retries."""
        if direction is Direction.CLIENT:
            self._client_facts(call, msg)
        x = replace(call.x, direction=direction)
        outcome, events = self._enforcer.process(msg, x, call.policy)
        self._emit(events)
        for reply in outcome.replies:
            await self._reply_upstream(call, reply)
        if outcome.retry is not None:
            call.x = outcome.retry.exchange
        if outcome.blocked:  # the call's final result tells the user (enforce/notice.py)
            call.x = replace(call.x, blocked=call.x.blocked + outcome.blocked)
        if in_body and outcome.drop:
            why = "server request inside a JSON body"
            return replace(outcome, fail=UpstreamProtocolError(why))
        return outcome

    # -- upstream side ----------------------------------------------------------------------

    async def _open(
        self, method: str, query: str, call: _Call, body: bytes | None
    ) -> UpstreamResponse:
        # Raises UpstreamError / UpstreamTimeout / UpstreamConnectError / UpstreamBusy: all
        # UpstreamUnavailable, the upstream's fault (or its cap's).
        return await self._client.request(
            method,
            call.target.url,
            call.up_headers,
            body,
            query=query,
            upstream=self._settings_name(call),
        )

    def _settings_name(self, call: _Call) -> str | None:
        """The target's name when the client holds settings for it (the app always gives it
        every upstream's); a client built without them connects directly."""
        name = call.target.name
        return name if self._client.settings(name) is not None else None

    async def _reply_upstream(self, call: _Call, reply: Mapping[str, Any]) -> None:
        """POST a JSON-RPC response to the server on the client's behalf (a blocked
        elicitation's decline), in the client's session and with its credentials."""
        headers = [(n, v) for n, v in call.up_headers if n.lower() in _REPLY_HEADERS]
        headers += [
            ("Content-Type", JSON_CT),
            ("Accept", f"{JSON_CT}, {SSE_CT}"),
            ("Accept-Encoding", "identity"),
        ]
        try:
            # Outside the connection cap: the client's stream that asked holds a slot, and
            # with max_connections 1 the decline would wait for itself.
            resp = await self._client.request(
                "POST",
                call.target.url,
                headers,
                dumps(reply),
                upstream=self._settings_name(call),
                capped=False,
            )
            try:
                # Read the (usually empty) answer so the connection can be reused; its
                # content does not matter to anyone.
                read = 0
                while read <= self._max_response and (chunk := await resp.read()):
                    read += len(chunk)
            finally:
                resp.close()
        except UpstreamUnavailable as exc:
            self._log.warning(
                "upstream.reply_failed", upstream=call.target.name, error=type(exc).__name__
            )
            return
        if resp.status >= 300:
            self._log.warning(
                "upstream.reply_failed", upstream=call.target.name, status=resp.status
            )

    def _unavailable(self, call: _Call, exc: UpstreamUnavailable) -> web.Response:
        name = call.target.name
        if isinstance(exc, UpstreamBusy):
            self._metrics.upstream_errors.labels(name, "busy").inc()
            slots = self._client.slots(name)
            self._log.warning(
                "upstream.busy",
                upstream=name,
                max_connections=slots.limit if slots is not None else None,
                retry_after=exc.retry_after,
            )
            response = jsonrpc_error(
                exc.http_status,
                call.x.request_id,
                exc.jsonrpc_code,
                "Upstream MCP server busy: too many connections, retry later",
            )
            response.headers["Retry-After"] = str(exc.retry_after)
            return response
        kind = "timeout" if exc.timeout else "unavailable"
        self._metrics.upstream_errors.labels(name, kind).inc()
        message = (
            "Upstream MCP server timed out" if exc.timeout else "Upstream MCP server unavailable"
        )
        if isinstance(exc, UpstreamConnectError):
            # Which host, address, CA file or proxy (never a credential) for the operator; a
            # fixed sentence per failure class for the client.
            self._log.warning("upstream.connect_failed", **exc.log_fields())
            message = f"{message}: {exc.summary}"
        else:
            self._log.warning(
                "upstream.error", upstream=name, error=exc.message, timeout=exc.timeout
            )
        return jsonrpc_error(exc.http_status, call.x.request_id, exc.jsonrpc_code, message)

    def _fail_closed(self, call: _Call, why: str) -> web.Response:
        self._metrics.upstream_errors.labels(call.target.name, "protocol").inc()
        self._log.warning("upstream.protocol_error", upstream=call.target.name, error=why)
        return jsonrpc_error(
            UpstreamProtocolError.http_status,
            call.x.request_id,
            UpstreamProtocolError.jsonrpc_code,
            "Upstream MCP server sent a response the gateway cannot inspect",
        )

    def _response_headers(self, upstream: UpstreamResponse, call: _Call) -> list[tuple[str, str]]:
        """Downstream headers, with the upstream session id replaced by the sealed one."""
        headers = downstream_response_headers(upstream.headers.items())
        upstream_sid = upstream.headers.get(SESSION_HEADER)
        out = [(n, v) for n, v in headers if n.lower() != "mcp-session-id"]
        if upstream_sid is None:
            return out
        if call.client_session is not None and call.x.session is not None:
            out.append((SESSION_HEADER, call.client_session))
        elif call.pending is not None and 200 <= upstream.status < 300:
            claims = SessionClaims(
                upstream_sid,
                call.target.name,
                call.pending.modes,
                call.pending.client,
                call.x.credential,
            )
            call.x = replace(call.x, session=upstream_sid)
            out.append((SESSION_HEADER, seal_session(self._keys, claims)))
        # Otherwise (an error answer that minted a throw-away id) no session id is passed on.
        return out

    async def _respond(
        self, request: web.Request, upstream: UpstreamResponse, call: _Call
    ) -> web.StreamResponse:
        try:
            reading = plan_response(upstream.headers.items())
        except Unreadable as exc:
            return self._fail_closed(call, exc.message)
        headers = self._response_headers(upstream, call)
        if reading is Reading.SSE:
            call.x = replace(call.x, transport="get" if request.method == "GET" else "post")
            out = web.StreamResponse(status=upstream.status, headers=headers)
            if self.draining:
                out.force_close()
            await out.prepare(request)
            self._metrics.open_streams.inc()
            self._streams[upstream] = call.x.transport
            try:
                if not (self.draining and call.x.transport == "get"):
                    await self._relay_sse(out, upstream, call)
            except ConnectionResetError:
                return out  # the client went away; handle() releases the upstream
            finally:
                self._streams.pop(upstream, None)
                self._metrics.open_streams.dec()
            with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
                await out.write_eof()
            return out
        return await self._relay_body(request, upstream, call, reading, headers)

    # -- JSON and other bodies -------------------------------------------------------------

    async def _relay_body(
        self,
        request: web.Request,
        upstream: UpstreamResponse,
        call: _Call,
        reading: Reading,
        headers: list[tuple[str, str]],
    ) -> web.StreamResponse:
        streamable = call.x.retry_id is None and not call.x.blocked
        read = _BodyRead()
        try:
            done = await self._read_capped(
                upstream, read, stop_at=FAST_PATH_MIN_BYTES if streamable else None
            )
        except UpstreamUnavailable as exc:
            return self._unavailable(call, exc)
        except ProtocolError as exc:
            return self._fail_closed(call, exc.message)
        if not done:  # a large head without markers: stream it (see _stream_body)
            return await self._stream_body(
                request, upstream, call, reading=reading, headers=headers, read=read
            )
        body = read.body()
        if not body:
            return web.Response(status=upstream.status, headers=headers, body=body)
        ok = 200 <= upstream.status < 300
        if streamable and not read.scan.found and len(body) >= FAST_PATH_MIN_BYTES:
            return web.Response(status=upstream.status, headers=headers, body=body)
        try:
            msg = self._inspectable(body, ok=ok, reading=reading)
        except ProtocolError as exc:
            return self._fail_closed(call, exc.message)
        if msg is None:
            return web.Response(status=upstream.status, headers=headers, body=body)
        outcome = await self._carry_out(call, msg, Direction.SERVER, in_body=True)
        if outcome.retry is not None:
            return await self._retry(request, call, outcome.retry.message)
        if outcome.fail is not None:
            return self._fail_closed(call, str(outcome.fail))
        if outcome.message is not None:
            body = dumps(outcome.message)
        return web.Response(status=upstream.status, headers=headers, body=body)

    def _inspectable(self, body: bytes, *, ok: bool, reading: Reading) -> Message | None:
        """The message in a non-SSE body, or None when no client can read one from it that
        could carry an elicitation (``gateway/wire/reading.py``).

        A body of a type no client reads as JSON-RPC passes unchanged when it cannot carry an
        elicitation under any parser (most error pages); otherwise it must be one strictly
        parsed JSON-RPC message, whatever its type and status (the TypeScript SDK parses a
        modern-era HTTP 400 body as JSON whatever its type; the Python SDK parses every non-2xx
        body of a JSON type). A 2xx JSON body must be one JSON-RPC message; a non-2xx JSON body
        that is valid JSON but not JSON-RPC (``{"detail": …}``) passes only when it cannot carry
        an elicitation. Anything only a lenient parser would read (duplicate keys, NaN, a BOM,
        invalid UTF-8, …) is refused.
        """
        if reading is Reading.OPAQUE and not may_carry_elicitation(body):
            return None
        try:
            value = parse_json(body, max_bytes=self._max_response, max_depth=self._max_depth)
        except JSONParseError as exc:
            raise UpstreamProtocolError(f"unparseable upstream body: {exc.reason}") from exc
        if isinstance(value, list):
            raise UpstreamProtocolError("upstream sent a JSON-RPC batch")
        try:
            return classify(value)
        except ProtocolError as exc:
            if ok or may_carry_elicitation(body):
                raise UpstreamProtocolError(
                    f"upstream body is not JSON-RPC: {exc.message}"
                ) from exc
            return None

    async def _read_capped(
        self, upstream: UpstreamResponse, read: _BodyRead, *, stop_at: int | None = None
    ) -> bool:
        """Read the body into ``read`` (at most ``max_response_bytes``, markers scanned chunk by
        chunk while the rest is still arriving); True once complete. Reading stops early, with
        False, once ``stop_at`` bytes arrived and none of them was marked."""
        declared = upstream.content_length
        if declared is not None and declared > self._max_response:
            raise UpstreamProtocolError("upstream body too large")
        while chunk := await self._next_chunk(upstream, read):
            read.scan.feed(chunk)
            if stop_at is not None and read.size >= stop_at and not read.scan.found:
                return False
        return True

    async def _next_chunk(self, upstream: UpstreamResponse, read: _BodyRead) -> bytes:
        """The next body bytes (``b""`` at the end), kept in ``read``, counted against the cap."""
        try:
            chunk = await upstream.read()
        except UpstreamTimeout as exc:
            raise UpstreamUnavailable("upstream body stalled", timeout=True) from exc
        except UpstreamError as exc:
            raise UpstreamUnavailable(f"upstream body broken: {exc}") from exc
        if chunk:
            read.size += len(chunk)
            if read.size > self._max_response:
                raise UpstreamProtocolError("upstream body too large")
            read.chunks.append(chunk)
        return chunk

    async def _stream_body(
        self,
        request: web.Request,
        upstream: UpstreamResponse,
        call: _Call,
        *,
        reading: Reading,
        headers: list[tuple[str, str]],
        read: _BodyRead,
    ) -> web.StreamResponse:
        """Forward a large body as it arrives while its bytes cannot carry an elicitation.

        The first ``FAST_PATH_MIN_BYTES`` held no marker, so they go out at once, and so does
        every following chunk that holds none. Once a chunk holds one, the rest is held back
        until the body is complete and inspected: when the message needs no change the held
        bytes follow; otherwise (a rewrite, a block, anything unparseable) the client connection
        is aborted mid-body, so the client never receives a complete, parseable message — a
        proper prefix of a JSON text is never valid JSON.
        """
        out = web.StreamResponse(status=upstream.status, headers=headers)
        if upstream.content_length is not None:
            out.content_length = upstream.content_length
        await out.prepare(request)
        sent = len(read.chunks)
        try:
            for chunk in read.chunks:
                await out.write(chunk)
            while chunk := await self._next_chunk(upstream, read):
                if sent == len(read.chunks) - 1:  # nothing held back yet
                    read.scan.feed(chunk)
                    if not read.scan.found:
                        await out.write(chunk)
                        sent += 1
            ok = 200 <= upstream.status < 300
            if sent < len(read.chunks) and not await self._late_message_unchanged(
                call, read.body(), ok, reading
            ):
                return self._abort(request, out, call, "body changed after streaming began")
            for chunk in read.chunks[sent:]:
                await out.write(chunk)
            await out.write_eof()
        except (UpstreamUnavailable, ProtocolError) as exc:
            return self._abort(request, out, call, exc.message)
        except ConnectionResetError:
            pass  # the client went away; handle() releases the upstream
        return out

    async def _late_message_unchanged(
        self, call: _Call, body: bytes, ok: bool, reading: Reading
    ) -> bool:
        """Inspect a body whose marker came after streaming began: may the rest follow?"""
        try:
            msg = self._inspectable(body, ok=ok, reading=reading)
        except ProtocolError:
            return False
        if msg is None:
            return True
        return (await self._carry_out(call, msg, Direction.SERVER, in_body=True)).unchanged

    def _abort(
        self, request: web.Request, out: web.StreamResponse, call: _Call, why: str
    ) -> web.StreamResponse:
        """End a response mid-body: the client sees a broken transfer, never a complete one."""
        self._metrics.upstream_errors.labels(call.target.name, "protocol").inc()
        self._log.warning("upstream.protocol_error", upstream=call.target.name, error=why)
        out.force_close()
        if request.transport is not None:
            request.transport.abort()
        return out

    async def _retry(
        self, request: web.Request, call: _Call, retry: Mapping[str, Any]
    ) -> web.StreamResponse:
        """Every input request of a 2026 round was blocked: retry upstream with declines."""
        return await self._exchange(request, "POST", "", call, dumps(retry))

    # -- SSE --------------------------------------------------------------------------------

    async def _relay_sse(
        self, out: web.StreamResponse, upstream: UpstreamResponse, call: _Call
    ) -> None:
        """Forward one upstream event stream into ``out``, block by block as it arrives."""
        decoder = SSEDecoder(max_block_bytes=self._max_event, strict=True)
        try:
            async for chunk in upstream.iter_chunks():
                try:
                    blocks = decoder.feed(chunk)
                except SSEError as exc:
                    # The well-formed blocks before the bad one still go out; then the end.
                    await self._forward_blocks(out, call, exc.completed)
                    raise
                if await self._forward_blocks(out, call, blocks):
                    return
            # The end of the stream settles a held "\r"; an incomplete last block is never
            # dispatched by a client (it lacks its empty line), so it is dropped.
            blocks, _tail = decoder.finish()
            await self._forward_blocks(out, call, blocks)
        except (SSEError, ProtocolError) as exc:
            self._metrics.upstream_errors.labels(call.target.name, "protocol").inc()
            self._log.warning(
                "upstream.protocol_error", upstream=call.target.name, error=exc.message
            )
        except ConnectionResetError:
            raise  # the client went away (handled by the caller)
        except UpstreamError as exc:
            if self.draining and upstream.closed:
                return  # ended by the gateway itself (drain): a clean end, not an error
            self._metrics.upstream_errors.labels(call.target.name, "stream-broken").inc()
            self._log.warning(
                "upstream.stream_broken", upstream=call.target.name, error=type(exc).__name__
            )

    async def _forward_blocks(
        self, out: web.StreamResponse, call: _Call, blocks: list[SSEBlock]
    ) -> bool:
        """Inspect and forward blocks; True when the stream was handed over to a retry."""
        for block in blocks:
            # Once something was blocked, every message is inspected: the result gets the notice.
            fast = call.x.retry_id is None and not call.x.blocked
            if not block.data or (fast and not needs_inspection(block.raw)):
                await out.write(block.raw)
                continue
            try:
                msg = parse_message(
                    block.data, max_bytes=self._max_event, max_depth=self._max_depth
                )
            except ProtocolError as exc:  # the parser's error, attributed to the upstream
                raise UpstreamProtocolError(exc.message) from exc
            if isinstance(msg, list):
                raise UpstreamProtocolError("upstream sent a JSON-RPC batch in an event")
            outcome = await self._carry_out(call, msg, Direction.SERVER)
            if outcome.retry is not None:
                await self._retry_into_stream(out, call, outcome.retry.message)
                return True
            if outcome.notice is not None:  # the user is told why, before what follows
                await out.write(encode_event(data=dumps(outcome.notice).decode(), event="message"))
            if outcome.drop:
                if block.id is not None:
                    # Keep Last-Event-ID moving past the swallowed event, so a resumption does
                    # not replay it: an id-only block dispatches nothing.
                    await out.write(encode_event_id(block.id))
                continue
            if outcome.message is None:
                await out.write(block.raw)
            else:
                await out.write(
                    encode_event(
                        data=dumps(outcome.message).decode("utf-8"),
                        event=block.event,
                        id=block.id,
                        retry=block.retry,
                    )
                )
        return False

    async def _retry_into_stream(
        self, out: web.StreamResponse, call: _Call, retry: Mapping[str, Any]
    ) -> None:
        """Make the gateway's own 2026 retry and relay its answer into the client's open event
        stream. The answer is read and inspected exactly like a first answer (the same reading
        rule, the same :meth:`_carry_out`): no path writes an uninspected message."""
        try:
            upstream = await self._open("POST", "", call, dumps(retry))
        except UpstreamUnavailable as exc:
            self._log.warning("upstream.error", upstream=call.target.name, error=exc.message)
            await self._write_error_event(out, call, errors.GATEWAY_UPSTREAM_ERROR, exc.message)
            return
        try:
            reading = plan_response(upstream.headers.items())
            if reading is Reading.SSE:
                await self._relay_sse(out, upstream, call)
                return
            read = _BodyRead()
            await self._read_capped(upstream, read)
            msg = self._inspectable(read.body(), ok=200 <= upstream.status < 300, reading=reading)
            if msg is None:
                raise UpstreamProtocolError("upstream retry answer holds no JSON-RPC message")
            outcome = await self._carry_out(call, msg, Direction.SERVER, in_body=True)
            if outcome.retry is not None:
                await self._retry_into_stream(out, call, outcome.retry.message)
                return
            if outcome.fail is not None:
                raise outcome.fail
            if outcome.notice is not None:
                await out.write(encode_event(data=dumps(outcome.notice).decode(), event="message"))
            data = dumps(outcome.message) if outcome.message is not None else read.body()
            await out.write(encode_event(data=data.decode("utf-8"), event="message"))
        except (ProtocolError, UpstreamUnavailable) as exc:
            self._metrics.upstream_errors.labels(call.target.name, "protocol").inc()
            self._log.warning(
                "upstream.protocol_error", upstream=call.target.name, error=exc.message
            )
            await self._write_error_event(
                out, call, errors.GATEWAY_UPSTREAM_PROTOCOL, "upstream retry failed"
            )
        finally:
            upstream.close()

    async def _write_error_event(
        self, out: web.StreamResponse, call: _Call, code: int, message: str
    ) -> None:
        rid = call.x.request_id
        body = error_response(rid, code, message).decode("utf-8")
        await out.write(encode_event(data=body, event="message"))


def encode_event_id(event_id: str) -> bytes:
    """A block carrying only an id: it moves the client's last event id and dispatches nothing."""
    return f"id: {event_id}\r\n\r\n".encode()


__all__ = ["Relay", "Target", "jsonrpc_error"]
