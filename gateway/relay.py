"""The relay: the only module that touches sockets.

Client ⇄ gateway ⇄ upstream for POST, GET and DELETE. JSON bodies are parsed (size-capped) and
forwarded byte-exact; SSE bodies are decoded block by block as they arrive and each untouched block
is forwarded as its original bytes. Every parsed message goes through the observer. Anything the
gateway cannot inspect is not forwarded (fail closed).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
from aiohttp import web
from yarl import URL

from gateway import errors
from gateway.config import Settings
from gateway.era import Era, era_of_version, header_mismatch
from gateway.errors import ProtocolError, UpstreamUnavailable
from gateway.headers import HostGuard, downstream_response_headers, upstream_request_headers
from gateway.jsonrpc import (
    JSONParseError,
    Message,
    classify,
    error_response,
    parse_json,
    parse_message,
)
from gateway.observe import Exchange, Observer
from gateway.sse import SSEBlock, SSEDecoder, SSEError

JSON_CT: Final = "application/json"
SSE_CT: Final = "text/event-stream"
_SKIP_AUTO: Final = frozenset({"User-Agent", "Content-Type", "Accept"})


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    url: URL


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def jsonrpc_error(
    status: int, request_id: str | int | None, code: int, message: str, data: Any = None
) -> web.Response:
    return web.Response(
        status=status,
        body=error_response(request_id, code, message, data),
        content_type=JSON_CT,
    )


class Relay:
    def __init__(
        self,
        settings: Settings,
        client: aiohttp.ClientSession,
        observer: Observer,
        guard: HostGuard,
        logger: Any,
    ) -> None:
        self._settings = settings
        self._client = client
        self._observer = observer
        self._guard = guard
        self._log = logger
        limits = settings.limits
        self._max_request = limits.max_request_bytes
        self._max_response = limits.max_response_bytes
        self._max_event = limits.max_event_bytes
        self._max_depth = limits.max_json_depth
        t = settings.timeouts
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=t.connect, sock_read=t.idle)
        self._response_timeout = t.response

    # -- entry point ------------------------------------------------------------------------

    async def handle(self, request: web.Request, target: Target) -> web.StreamResponse:
        if not self._guard.host_ok(request.headers.get("Host")):
            self._log.warning("request.rejected", reason="host-not-allowed", upstream=target.name)
            return jsonrpc_error(421, None, errors.INVALID_REQUEST, "Invalid Host header")
        if not self._guard.origin_ok(request.headers.get("Origin")):
            self._log.warning("request.rejected", reason="origin-not-allowed", upstream=target.name)
            return jsonrpc_error(403, None, errors.INVALID_REQUEST, "Invalid Origin header")
        version = request.headers.get("MCP-Protocol-Version")
        x = Exchange(
            upstream=target.name,
            era=era_of_version(version),
            session_id=request.headers.get("Mcp-Session-Id"),
        )
        body: bytes | None = None
        if request.method == "POST":
            try:
                body, msg = await self._read_client_message(request, version)
            except ProtocolError as exc:
                self._log.info("request.rejected", reason=exc.message, upstream=target.name)
                return jsonrpc_error(exc.http_status, None, exc.jsonrpc_code, exc.message)
            self._observer.client_message(x, msg)
        elif x.era is not Era.MODERN:
            info = self._observer.sessions.get(x.session_id)
            if info is not None:
                x.modes, x.client = info.modes, info.client
        try:
            upstream = await self._open(request, target, body)
        except UpstreamUnavailable as exc:
            return self._unavailable(target, x, exc)
        try:
            return await self._respond(request, upstream, x)
        finally:
            upstream.close()

    # -- client side ------------------------------------------------------------------------

    async def _read_client_message(
        self, request: web.Request, version: str | None
    ) -> tuple[bytes, Message]:
        if request.content_length is not None and request.content_length > self._max_request:
            raise ProtocolError(
                "Request body too large", jsonrpc_code=errors.INVALID_REQUEST, http_status=413
            )
        body = bytearray()
        async for chunk in request.content.iter_any():
            body.extend(chunk)
            if len(body) > self._max_request:
                raise ProtocolError(
                    "Request body too large", jsonrpc_code=errors.INVALID_REQUEST, http_status=413
                )
        parsed = parse_message(bytes(body), max_bytes=self._max_request, max_depth=self._max_depth)
        if isinstance(parsed, list):
            raise ProtocolError(
                "JSON-RPC batches are not supported: send one message per request",
                jsonrpc_code=errors.INVALID_REQUEST,
            )
        if parsed.kind in ("request", "notification") and header_mismatch(version, parsed.params):
            raise ProtocolError(
                "MCP-Protocol-Version header does not match the request body's protocol version",
                jsonrpc_code=errors.HEADER_MISMATCH,
            )
        return bytes(body), parsed

    # -- upstream side ----------------------------------------------------------------------

    async def _open(
        self, request: web.Request, target: Target, body: bytes | None
    ) -> aiohttp.ClientResponse:
        url = target.url
        if request.query_string:
            url = url.with_query(request.query_string)
        headers = upstream_request_headers(request.headers.items())
        try:
            async with asyncio.timeout(self._response_timeout):
                return await self._client.request(
                    request.method,
                    url,
                    headers=headers,
                    data=body,
                    allow_redirects=False,
                    timeout=self._timeout,
                    skip_auto_headers=_SKIP_AUTO,
                    auto_decompress=False,
                )
        except TimeoutError as exc:
            raise UpstreamUnavailable("upstream did not answer in time", timeout=True) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamUnavailable(f"upstream unreachable: {type(exc).__name__}") from exc

    def _unavailable(self, target: Target, x: Exchange, exc: UpstreamUnavailable) -> web.Response:
        self._log.warning(
            "upstream.error", upstream=target.name, error=exc.message, timeout=exc.timeout
        )
        if exc.timeout:
            return jsonrpc_error(
                504, x.request_id, errors.GATEWAY_UPSTREAM_TIMEOUT, "Upstream MCP server timed out"
            )
        return jsonrpc_error(
            502, x.request_id, errors.GATEWAY_UPSTREAM_ERROR, "Upstream MCP server unavailable"
        )

    async def _respond(
        self, request: web.Request, upstream: aiohttp.ClientResponse, x: Exchange
    ) -> web.StreamResponse:
        media = _media_type(upstream.headers.get("Content-Type"))
        encoding = upstream.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            return self._fail_closed(x, "compressed upstream body", 502)
        session_id = upstream.headers.get("Mcp-Session-Id")
        if 200 <= upstream.status < 300 and x.method == "initialize":
            self._observer.session_started(x, session_id)
        if request.method == "DELETE" and 200 <= upstream.status < 300:
            self._observer.sessions.forget(x.session_id)
        if media == SSE_CT:
            stream = "get" if request.method == "GET" else "post"
            return await self._relay_sse(request, upstream, x, stream)
        return await self._relay_body(upstream, x, media)

    async def _relay_body(
        self, upstream: aiohttp.ClientResponse, x: Exchange, media: str
    ) -> web.StreamResponse:
        try:
            body = await self._read_capped(upstream)
        except UpstreamUnavailable as exc:
            return self._unavailable(Target(x.upstream, URL()), x, exc)
        except ProtocolError as exc:
            return self._fail_closed(x, exc.message, 502)
        if body:
            failure = self._inspect_body(x, body, ok=200 <= upstream.status < 300, media=media)
            if failure is not None:
                return self._fail_closed(x, failure, 502)
        headers = downstream_response_headers(upstream.headers.items())
        return web.Response(status=upstream.status, headers=headers, body=body)

    def _inspect_body(self, x: Exchange, body: bytes, *, ok: bool, media: str) -> str | None:
        """Observe every message in a non-SSE body; return why it cannot be forwarded, or None.

        A 2xx body must be a JSON-RPC message (or nothing is forwarded). A non-2xx body is only
        inspected when it parses as JSON: valid JSON that is not JSON-RPC (e.g. ``{"detail": …}``)
        and non-JSON error pages cannot be acted on by a client and pass unchanged; JSON that only
        a lenient parser would read (duplicate keys, NaN, …) is refused.
        """
        try:
            value = parse_json(body, max_bytes=self._max_response, max_depth=self._max_depth)
        except JSONParseError as exc:
            if ok or media == JSON_CT:
                return f"unparseable upstream body: {exc.reason}"
            return None
        items = value if isinstance(value, list) else [value]
        for item in items:
            try:
                msg = classify(item)
            except ProtocolError as exc:
                if ok:
                    return f"upstream body is not JSON-RPC: {exc.message}"
                continue
            self._observer.server_message(x, msg, transport="json")
        return None

    async def _read_capped(self, upstream: aiohttp.ClientResponse) -> bytes:
        declared = upstream.content_length
        if declared is not None and declared > self._max_response:
            raise ProtocolError("upstream body too large")
        body = bytearray()
        try:
            async for chunk in upstream.content.iter_any():
                body.extend(chunk)
                if len(body) > self._max_response:
                    raise ProtocolError("upstream body too large")
        except TimeoutError as exc:
            raise UpstreamUnavailable("upstream body stalled", timeout=True) from exc
        except aiohttp.ClientError as exc:
            raise UpstreamUnavailable(f"upstream body broken: {type(exc).__name__}") from exc
        return bytes(body)

    def _fail_closed(self, x: Exchange, why: str, status: int) -> web.Response:
        self._log.warning("upstream.protocol_error", upstream=x.upstream, error=why)
        return jsonrpc_error(
            status,
            x.request_id,
            errors.GATEWAY_UPSTREAM_PROTOCOL,
            "Upstream MCP server sent a response the gateway cannot inspect",
        )

    async def _relay_sse(
        self, request: web.Request, upstream: aiohttp.ClientResponse, x: Exchange, stream: str
    ) -> web.StreamResponse:
        out = web.StreamResponse(
            status=upstream.status, headers=downstream_response_headers(upstream.headers.items())
        )
        await out.prepare(request)
        decoder = SSEDecoder(max_block_bytes=self._max_event)
        try:
            async for chunk in upstream.content.iter_any():
                await self._forward_blocks(out, x, stream, decoder.feed(chunk))
            # The end of the stream settles a held "\r"; an incomplete last block is never
            # dispatched by a client (it lacks its empty line), so it is dropped.
            blocks, _tail = decoder.finish()
            await self._forward_blocks(out, x, stream, blocks)
        except (SSEError, ProtocolError) as exc:
            self._log.warning(
                "upstream.protocol_error", upstream=x.upstream, error=exc.message, stream=stream
            )
        except (TimeoutError, aiohttp.ClientError) as exc:
            self._log.warning(
                "upstream.stream_broken", upstream=x.upstream, error=type(exc).__name__
            )
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            return out  # the client went away; the finally in handle() releases the upstream
        with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
            await out.write_eof()
        return out

    async def _forward_blocks(
        self, out: web.StreamResponse, x: Exchange, stream: str, blocks: list[SSEBlock]
    ) -> None:
        """Inspect each block's message (raises ProtocolError if it cannot be parsed) and
        forward the block's original bytes."""
        for block in blocks:
            if block.data:
                parsed = parse_message(
                    block.data, max_bytes=self._max_event, max_depth=self._max_depth
                )
                for msg in parsed if isinstance(parsed, list) else [parsed]:
                    self._observer.server_message(x, msg, transport=stream)
            await out.write(block.raw)


__all__ = ["Relay", "Target", "jsonrpc_error"]
