"""The relay's HTTP/1.1 client for upstream MCP servers (with ``relay.py``, the socket layer).

Why not aiohttp's ``ClientSession``: decided by issue 12's interleaved A/B (docs/architecture.md,
"Upstream client: A/B"; bench/results/upstream-client-ab-run*.md). Configured as well as it can
be (one session per upstream, one timeout object, no cookies, the proxy environment read once),
the gateway on it cost 1.4× this client's CPU per request (2.3× with ``trust_env=True``, which
reads ``~/.netrc`` and the proxy environment in a thread on every request) in every round, and
its lenient parser and pool accept a bare-LF head and reuse a connection the upstream wrote an
unasked answer on. This client does one thing: send a request the relay already built and stream
the answer back, on kept-alive connections, with the same C parser family aiohttp uses (llhttp,
through ``httptools``) in its strict mode. How the per-upstream settings
(``gateway/proxy/upstream_settings.py``: TLS, proxy, caps, headers, failure classes) wire into
it: the end of that section.

* **Per-upstream settings** (``UpstreamClient(upstreams=…)``, ``request(…, upstream=name)``):
  each named upstream connects through ``open_socket`` (its DNS cache, happy eyeballs over every
  address, its egress proxy's ``CONNECT`` tunnel) and its own TLS context and SNI name; its
  static headers replace the client's of the same name; its pooled connections idle at most
  ``idle_seconds``; a request holds one of its ``ConnectionSlots`` from before the connection is
  taken until the answer is closed (an SSE stream holds its slot), and a full queue raises
  ``UpstreamBusy``. What a connection attempt raised (including a TLS 1.3 server refusing the
  client certificate on the first read) is classified (``UpstreamConnectError`` family). A
  request without ``upstream`` (the hostile-bytes tests, callers that predate the settings)
  connects directly with ``ssl_context`` and ``KEEPALIVE_SECONDS``.

* **Parsing** is llhttp's strict mode: conflicting ``Content-Length`` / ``Transfer-Encoding``,
  duplicate lengths, bare LF, NUL or other invalid bytes in headers are errors, never guesses
  (an upstream must not be able to desynchronise a kept-alive connection). A transfer coding
  other than ``chunked`` is refused (the body could not be inspected). Heads are capped at
  ``MAX_HEAD_BYTES`` and ``MAX_HEADERS``; informational ``1xx`` answers are skipped; ``101``
  is refused (the relay never asks to upgrade).
* **Connections** are pooled per origin and reused last-in-first-out, only when the previous
  answer was read to its end, the upstream allowed keep-alive and sent nothing after it. An
  idle pooled connection is dropped after ``KEEPALIVE_SECONDS`` (below the 5 s idle limit of
  uvicorn and Node, the usual MCP server stacks, so the gateway does not reuse a connection the
  server is closing). Requests are never retried: a tool call is not idempotent.
* **Timeouts**: ``connect`` (TCP and TLS), ``response`` (request written → response head) and
  ``idle`` (the longest silence inside a body; not counted while the relay holds reading back
  because its own client is slow). One timer per connection, re-armed lazily.
* **Flow control**: at most ``HIGH_WATER`` bytes are buffered per response before the socket
  stops being read; reading resumes once the relay has taken the buffered bytes.
* **Nothing is added** to the relay's headers but ``Host`` and ``Content-Length``; header names
  and values holding CR, LF or NUL are refused before anything is written.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import httptools
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from gateway.errors import UpstreamConnectTimeout, UpstreamUnavailable
from gateway.proxy.upstream_settings import (
    ConnectionSlots,
    DNSCache,
    UpstreamSettings,
    open_socket,
)

KEEPALIVE_SECONDS: Final = 3.0
HIGH_WATER: Final = 256 * 1024
MAX_HEAD_BYTES: Final = 64 * 1024
MAX_HEADERS: Final = 200

_Origin = tuple[str, str, int]
# A pool key: the upstream's name ("" for requests without per-upstream settings) and the origin.
_Key = tuple[str, str, str, int]


class UpstreamError(UpstreamUnavailable):
    """The upstream could not be reached, broke the connection or sent invalid HTTP (an upstream
    fault: 502 ``-31001``, see gateway/errors.py)."""


class UpstreamTimeout(UpstreamError, TimeoutError):
    """A connect, response or idle timeout expired (504 ``-31002``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, timeout=True)


class _Connection(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection; serves one request at a time."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pool: _Pool,
        classify: Callable[[BaseException], UpstreamUnavailable] | None = None,
    ) -> None:
        self._loop = loop
        self._pool = pool
        # Until the first answer's head: what breaks the connection is still a failure to
        # connect (a TLS 1.3 server refuses a client certificate after the handshake).
        self._classify = classify
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._active = False  # a request is in flight on this connection
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._deadline: float | None = None
        self._timeout_what = ""
        self._idle = 0.0
        self._paused = False
        self._head_bytes = 0
        self._informational = False
        self._head_size = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.status = 0
        self.head_done = False
        self.keep_alive = False
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.complete = False
        self.lost = False
        self.error: UpstreamUnavailable | None = None
        self.idle_until = 0.0

    # -- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a TCP (or TLS) transport

    def data_received(self, data: bytes) -> None:
        if not self._active or self.complete:
            # Bytes nobody asked for (after a complete answer or between requests): the
            # connection is out of step with the upstream and is never reused.
            self.keep_alive = False
            self._close_transport()
            return
        in_head = not self.head_done
        if in_head:
            self._head_bytes += len(data)
        elif self._deadline is not None:
            self._deadline = self._loop.time() + self._idle
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(UpstreamError("upstream switched protocols"))
            return
        except httptools.HttpParserError as exc:
            cause = exc.__context__ if isinstance(exc.__context__, UpstreamError) else None
            self._fail(cause or UpstreamError(f"invalid HTTP response from upstream: {exc}"))
            return
        # A head still incomplete after this many bytes is refused (the parser would keep
        # buffering a never-ending header line).
        if in_head and not self.head_done and self._head_bytes > MAX_HEAD_BYTES:
            self._fail(UpstreamError("upstream response head too large"))

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost settles the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.transport = None
        self._pool.forget(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._active or self.complete or self.error is not None:
            self._wake()
            return
        if self.head_done and self._until_eof():
            self.complete = True  # a body delimited by the end of the connection
            self.keep_alive = False
            self._wake()
        elif self._classify is not None and isinstance(exc, OSError):
            self._fail(self._classify(exc))
        else:
            self._fail(UpstreamError("upstream closed the connection"))

    # -- httptools callbacks --------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.complete:
            # A second answer to one request: the first stands, the connection is dropped.
            raise UpstreamError("upstream sent more than one answer")

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head_done:
            return  # a trailer field: ignored, as HTTP allows
        self.raw_headers.append((name, value))
        self._head_size += len(name) + len(value)
        if len(self.raw_headers) > MAX_HEADERS:
            raise UpstreamError("upstream sent too many header fields")
        if self._head_size > MAX_HEAD_BYTES:
            raise UpstreamError("upstream response head too large")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status == 101:
            raise UpstreamError("upstream switched protocols")
        if 100 <= status < 200:
            self._informational = True  # 100 Continue, 103 Early Hints: the real head follows
            self.raw_headers = []
            self._head_size = 0
            return
        self.status = status
        self._classify = None
        self.keep_alive = self._parser.should_keep_alive()
        for name, value in self.raw_headers:
            if name.lower() == b"transfer-encoding" and value.strip().lower() != b"chunked":
                raise UpstreamError("upstream used a transfer coding other than chunked")
        self.head_done = True
        self._arm(self._loop.time() + self._idle)
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        self.complete = True
        self._deadline = None
        self._wake()

    # -- the request ----------------------------------------------------------------------

    def start(self, payload: bytes, *, response: float, idle: float) -> None:
        if self.transport is None:
            raise UpstreamError("upstream closed the connection")
        self._active = True
        self._idle = idle
        self._timeout_what = "upstream did not answer in time"
        self._arm(self._loop.time() + response)
        self.transport.write(payload)

    async def wait(self) -> None:
        """Until something changes: head, body bytes, the end, or an error (an error after
        a complete answer only spoils the connection, not the answer)."""
        if self.error is not None and not self.complete:
            raise self.error
        waiter = self._loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None
        if self.error is not None and not self.complete:
            raise self.error

    def take(self) -> bytes:
        """Every buffered body byte (resumes a paused socket: the buffer is now empty)."""
        if len(self.chunks) == 1:
            chunk = self.chunks.popleft()
        else:
            chunk = b"".join(self.chunks)
            self.chunks.clear()
        self.buffered = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return chunk

    def reusable(self) -> bool:
        return (
            self.complete
            and self.keep_alive
            and self.error is None
            and not self.lost
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def reset(self) -> None:
        """Ready for the next request on this connection."""
        self._parser = httptools.HttpResponseParser(self)
        self._active = False
        self._classify = None
        self._deadline = None
        self._head_bytes = 0
        self._head_size = 0
        self.raw_headers = []
        self.status = 0
        self.head_done = False
        self.keep_alive = False
        self.complete = False
        self.chunks.clear()
        self.buffered = 0

    def abort(self, reason: str = "closed by the gateway") -> None:
        if self.error is None and not self.complete:
            self.error = UpstreamError(reason)
        self.keep_alive = False
        self._close_transport()
        self._wake()

    # -- internals ------------------------------------------------------------------------

    def _until_eof(self) -> bool:
        """Is the body delimited by the end of the connection (no length, not chunked)?"""
        names = {name.lower() for name, _ in self.raw_headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def _fail(self, error: UpstreamUnavailable) -> None:
        if self.error is None:
            self.error = error
        self.keep_alive = False
        self._close_transport()
        self._wake()

    def _close_transport(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _arm(self, deadline: float) -> None:
        """Time out at ``deadline``. A timer already due sooner is left to re-arm itself when it
        fires; one due later is replaced."""
        self._deadline = deadline
        timer = self._timer
        if timer is not None:
            if timer.when() <= deadline:
                return
            timer.cancel()
        self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None or self.lost:
            return
        now = self._loop.time()
        if self._paused:
            deadline = self._deadline = now + self._idle  # our reader is slow, not the upstream
        if now < deadline:
            self._timer = self._loop.call_at(deadline, self._on_timer)
            return
        what = self._timeout_what if not self.head_done else "upstream body stalled"
        self._fail(UpstreamTimeout(what))


class _Pool:
    """Idle connections per origin, most recently used first out."""

    def __init__(self) -> None:
        self._idle: dict[_Key, dict[_Connection, None]] = {}

    def get(self, origin: _Key, now: float) -> _Connection | None:
        conns = self._idle.get(origin)
        while conns:
            conn, _ = conns.popitem()
            if conn.idle_until > now and conn.transport is not None:
                return conn
            conn.abort()
        return None

    def put(self, origin: _Key, conn: _Connection, now: float, idle: float) -> None:
        conn.idle_until = now + idle
        self._idle.setdefault(origin, {})[conn] = None

    def forget(self, conn: _Connection) -> None:
        for conns in self._idle.values():
            conns.pop(conn, None)

    def close(self, name: str | None = None) -> None:
        """Close the idle connections (of the upstream ``name`` only, when given)."""
        for key, conns in self._idle.items():
            if name is not None and key[0] != name:
                continue
            for conn in list(conns):
                conn.abort()
            conns.clear()


class UpstreamResponse:
    """An answer being received: status and head now, the body as it arrives."""

    __slots__ = ("_client", "_conn", "_origin", "_route", "_slots", "closed", "headers", "status")

    def __init__(
        self,
        client: UpstreamClient,
        origin: _Key,
        conn: _Connection,
        route: _Route | None = None,
        slots: ConnectionSlots | None = None,
    ) -> None:
        self._client = client
        self._origin = origin
        self._conn = conn
        self._route = route
        self._slots = slots  # held until close()
        self.status = conn.status
        self.headers: CIMultiDictProxy[str] = CIMultiDictProxy(
            CIMultiDict(
                (name.decode("ascii"), value.decode("utf-8", "surrogateescape"))
                for name, value in conn.raw_headers
            )
        )
        self.closed = False

    @property
    def content_length(self) -> int | None:
        value = self.headers.get("Content-Length")
        return int(value) if value is not None and value.isdigit() else None

    async def read(self) -> bytes:
        """The next body bytes as they arrive; ``b""`` at the end. Raises :class:`UpstreamError`."""
        conn = self._conn
        while True:
            if conn.chunks:
                return conn.take()
            if conn.complete or self.closed:
                return b""
            await conn.wait()

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        while chunk := await self.read():
            yield chunk

    def close(self) -> None:
        """Done with this answer: the connection goes back to the pool when the answer was read
        to its end, and is closed otherwise (which ends a read waiting in another task)."""
        if self.closed:
            return
        self.closed = True
        conn = self._conn
        try:
            if conn.reusable() and not conn.chunks:
                self._client.release(self._origin, conn, self._route)
            else:
                conn.abort()
        finally:
            if self._slots is not None:
                self._slots.release()


@dataclass(frozen=True, slots=True)
class _Route:
    """One named upstream: its settings and the state built from them (cap, name cache)."""

    settings: UpstreamSettings
    slots: ConnectionSlots
    dns: DNSCache


class UpstreamClient:
    """Requests to upstream MCP servers over pooled HTTP/1.1 connections (see module doc)."""

    def __init__(
        self,
        *,
        connect_timeout: float,
        response_timeout: float,
        idle_timeout: float,
        ssl_context: ssl.SSLContext | None = None,
        upstreams: Mapping[str, UpstreamSettings] | None = None,
    ) -> None:
        self._connect_timeout = connect_timeout
        self._response_timeout = response_timeout
        self._idle_timeout = idle_timeout
        self._ssl = ssl_context
        self._pool = _Pool()
        self._closed = False
        self._routes: dict[str, _Route] = {}
        if upstreams:
            self.configure(upstreams)

    def configure(self, upstreams: Mapping[str, UpstreamSettings]) -> None:
        """Use these per-upstream settings from now on (at start, and on reload). An upstream
        whose settings changed gets a new connection cap and name cache, and its idle pooled
        connections are closed (they were opened with the old TLS context or proxy); requests
        in flight finish on what they started with and give their slot back to the old cap."""
        routes: dict[str, _Route] = {}
        for name, settings in upstreams.items():
            old = self._routes.get(name)
            if old is not None and old.settings is settings:
                routes[name] = old
                continue
            routes[name] = _Route(settings, settings.new_slots(), settings.new_dns_cache())
            if old is not None:
                self._pool.close(name)
        for name in self._routes.keys() - routes.keys():
            self._pool.close(name)
        self._routes = routes

    def settings(self, upstream: str) -> UpstreamSettings | None:
        """The settings in force for the named upstream (None: not configured)."""
        route = self._routes.get(upstream)
        return route.settings if route is not None else None

    def dns(self, upstream: str) -> DNSCache | None:
        """The named upstream's name cache in force (``/readyz`` probes through it)."""
        route = self._routes.get(upstream)
        return route.dns if route is not None else None

    def slots(self, upstream: str) -> ConnectionSlots | None:
        """The named upstream's connection cap in force (for metrics and tests)."""
        route = self._routes.get(upstream)
        return route.slots if route is not None else None

    async def request(
        self,
        method: str,
        url: URL,
        headers: Sequence[tuple[str, str]],
        body: bytes | None,
        *,
        query: str = "",
        upstream: str | None = None,
        capped: bool = True,
    ) -> UpstreamResponse:
        """Send one request and wait for the response head. ``query`` (already encoded)
        replaces the URL's own query when given. ``upstream``: the name of configured
        settings to use (see module doc); ``capped=False`` skips its connection cap (the
        gateway's own declines, sent while the client's stream holds a slot). Raises
        :class:`UpstreamError`, or an ``UpstreamConnectError`` / ``UpstreamBusy``
        (``UpstreamUnavailable``) for a named upstream."""
        if self._closed:
            raise UpstreamError("upstream client closed")
        route: _Route | None = None
        if upstream is not None:
            route = self._routes.get(upstream)
            if route is None:
                raise UpstreamError(f"no settings for the upstream {upstream!r}")
            headers = route.settings.apply_headers(headers)
        origin = _origin_of(url)
        key: _Key = (upstream or "", *origin)
        payload = _request_bytes(method, url, origin, headers, body=body, query=query)
        slots = route.slots if route is not None and capped else None
        if slots is not None:
            await slots.acquire()  # UpstreamBusy when the queue is full or waited too long
        try:
            loop = asyncio.get_running_loop()
            conn = self._pool.get(key, loop.time())
            if conn is None:
                conn = await (
                    self._connect(loop, origin)
                    if route is None
                    else self._connect_route(loop, route.settings, route.dns)
                )
            try:
                conn.start(payload, response=self._response_timeout, idle=self._idle_timeout)
                while not conn.head_done:
                    await conn.wait()
            except BaseException:
                conn.abort()
                raise
        except BaseException:
            if slots is not None:
                slots.release()
            raise
        return UpstreamResponse(self, key, conn, route, slots)

    def release(self, origin: _Key, conn: _Connection, route: _Route | None = None) -> None:
        if self._closed or (
            route is not None and self._routes.get(route.settings.name) is not route
        ):
            conn.abort()  # closed, or its upstream's settings were replaced meanwhile
            return
        conn.reset()
        idle = route.settings.idle_seconds if route is not None else KEEPALIVE_SECONDS
        self._pool.put(origin, conn, asyncio.get_running_loop().time(), idle)

    async def close(self) -> None:
        self._closed = True
        self._pool.close()

    async def _connect(self, loop: asyncio.AbstractEventLoop, origin: _Origin) -> _Connection:
        scheme, host, port = origin
        tls: ssl.SSLContext | None = None
        if scheme == "https":
            tls = self._ssl or ssl.create_default_context()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop, self._pool),
                    host.strip("[]"),
                    port,
                    ssl=tls,
                    server_hostname=host.strip("[]") if tls is not None else None,
                )
        except TimeoutError as exc:
            raise UpstreamTimeout("upstream connect timed out") from exc
        except OSError as exc:
            raise UpstreamError(f"upstream unreachable: {type(exc).__name__}") from exc
        return conn

    async def _connect_route(
        self, loop: asyncio.AbstractEventLoop, up: UpstreamSettings, dns: DNSCache
    ) -> _Connection:
        """A connection with the upstream's settings: ``open_socket`` (name cache, happy
        eyeballs, proxy tunnel), then TLS with its context and SNI name, all within the connect
        timeout. Raises the classified ``UpstreamConnectError``."""
        deadline = loop.time() + self._connect_timeout
        sock = await open_socket(up, dns, timeout=self._connect_timeout)
        remaining = max(deadline - loop.time(), 0.001)
        try:
            async with asyncio.timeout_at(deadline):
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop, self._pool, up.classify),
                    sock=sock,
                    ssl=up.ssl,
                    server_hostname=up.server_name if up.ssl is not None else None,
                    ssl_handshake_timeout=remaining if up.ssl is not None else None,
                )
        except TimeoutError:
            sock.close()
            raise UpstreamConnectTimeout(
                f"no TLS handshake with {up.address} within the connect timeout",
                upstream=up.name,
                address=up.address,
            ) from None
        except OSError as exc:
            sock.close()
            raise up.classify(exc) from None
        return conn


def _origin_of(url: URL) -> _Origin:
    scheme = url.scheme
    if scheme not in ("http", "https") or not url.raw_host or url.port is None:
        raise UpstreamError("upstream URL must be http(s)://host[:port]/…")
    host = url.raw_host
    if ":" in host:
        host = f"[{host}]"
    return scheme, host, url.port


def _request_bytes(
    method: str,
    url: URL,
    origin: _Origin,
    headers: Sequence[tuple[str, str]],
    *,
    body: bytes | None,
    query: str,
) -> bytes:
    scheme, host, port = origin
    default = 443 if scheme == "https" else 80
    host_value = host if port == default else f"{host}:{port}"
    target = url.raw_path or "/"
    if query:
        target = f"{target}?{query}"
    elif url.raw_query_string:
        target = f"{target}?{url.raw_query_string}"
    lines = [f"{method} {target} HTTP/1.1\r\nHost: {host_value}\r\n"]
    lines.extend(f"{name}: {value}\r\n" for name, value in headers)
    if body is not None:
        lines.append(f"Content-Length: {len(body)}\r\n")
    lines.append("\r\n")
    head = "".join(lines)
    # Every line break must be one we wrote: a CR, LF or NUL inside a name, a value or the
    # target would split the request (header injection / request smuggling).
    breaks = len(lines) + 1  # two in the first element, one in each other
    if head.count("\n") != breaks or head.count("\r") != breaks or "\x00" in head:
        raise UpstreamError("refusing a header or target with CR, LF or NUL")
    raw = head.encode("utf-8", "surrogateescape")
    return raw + body if body else raw


__all__ = ["UpstreamClient", "UpstreamError", "UpstreamResponse", "UpstreamTimeout"]
