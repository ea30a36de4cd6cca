"""Client connections: header, body and keep-alive timeouts, and a cap on open connections.

aiohttp's server reads request heads and bodies without any deadline of its own (its keep-alive
timer only starts after a request and defaults to an hour), so a client that sends a request
head one byte at a time — or a body that never ends — holds a connection, a parser and a task
for as long as it likes (slowloris). This module puts a deadline on every phase of a client
connection and a cap on how many are open at once, per listener (one per worker process):

* **header** (``timeouts.header``): from the moment a connection is accepted — or, on a
  kept-alive connection, from the first byte of its next request (or from the end of the previous
  request, when that byte arrived while it was still being served; bytes that arrive in the same
  read as the end of the previous request's body count against the keep-alive limit instead) —
  to a complete request head. Expired: ``408`` (when part of a head arrived) and the connection
  is closed.
* **keep-alive** (``timeouts.keepalive``): the silence allowed between two requests on one
  connection. Expired: closed.
* **body** (``timeouts.body``): from the complete head to the complete body. Expired: reading
  the body raises :class:`BodyTimeout` (a ``TimeoutError``) in the handler; the relay answers
  ``408`` with a JSON-RPC error, and the connection is closed once that answer is written.
* **cap** (``limits.max_connections``): a connection accepted while the cap is reached gets a
  ``503`` JSON-RPC error and is closed at once, before anything is read from it; it is never
  queued. Connections below the cap are untouched.

While a request is being served (its handler runs: a call in flight, an SSE stream) none of the
client-side timers run; the upstream timeouts and the relay's own limits apply then.

How: :class:`GuardedSite` accepts connections itself (refusing above the cap on the raw socket,
at most ``ACCEPT_BATCH`` per turn of the loop) and gives each connection a :class:`_Connection`
protocol, which sees every byte and the end of the connection, owns the connection's timer, and
makes aiohttp's ``RequestHandler`` (passing everything through to it) at the first byte;
:meth:`ConnectionGuard.middleware` tells the connection when a request head is complete (the
handler starts) and when its response is done, and puts the body deadline on the request body.
Closes and refusals are counted in ``gateway_connections_closed{reason}``;
``gateway_connections_open`` is the number open.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gc
import resource
import socket
from collections import deque
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, Final, cast

from aiohttp import web
from aiohttp.streams import StreamReader

from gateway import errors
from gateway.audit.logs import get_logger
from gateway.proxy.allocator import TRIM_INTERVAL, Trimmer, malloc_trim
from gateway.proxy.config import Settings
from gateway.proxy.metrics import Metrics
from gateway.wire.jsonrpc import error_response

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ProtocolFactory = Callable[[], asyncio.Protocol]

HEADER_TIMEOUT: Final = "header-timeout"
BODY_TIMEOUT: Final = "body-timeout"
IDLE_TIMEOUT: Final = "idle-timeout"
UNREAD_BODY: Final = "unread-body"
OVER_CAPACITY: Final = "over-capacity"
CLOSE_REASONS: Final = (HEADER_TIMEOUT, BODY_TIMEOUT, IDLE_TIMEOUT, UNREAD_BODY, OVER_CAPACITY)

_OVER_CAPACITY_BODY: Final = error_response(
    None, errors.INVALID_REQUEST, "Gateway at its connection limit: try again later"
)
_OVER_CAPACITY_RESPONSE: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: application/json\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n"
    b"Content-Length: " + str(len(_OVER_CAPACITY_BODY)).encode() + b"\r\n\r\n" + _OVER_CAPACITY_BODY
)
_HEADER_TIMEOUT_RESPONSE: Final = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
)
# Listen backlog: during a flood, connections wait a few turns of the loop in the kernel's queue
# to be accepted (and refused above the cap) rather than have their SYNs dropped and retried.
BACKLOG: Final = 1024
ACCEPT_BATCH: Final = 8  # connections accepted per turn of the event loop, at most
EXPIRY_BATCH: Final = 8  # connections closed on a timeout per turn of the event loop, at most


class BodyTimeout(TimeoutError):
    """The request body did not arrive in full within ``timeouts.body``."""


class _State(Enum):
    HEAD = "head"  # waiting for a complete request head (header timer)
    BUSY = "busy"  # a request is being served (no timer)
    IDLE = "idle"  # kept alive between requests (keep-alive timer)


class ConnectionGuard:
    """Timeouts and the connection cap of one listener (see the module docstring)."""

    def __init__(
        self,
        *,
        header_timeout: float,
        body_timeout: float,
        keepalive_timeout: float,
        max_connections: int,
        metrics: Metrics,
    ) -> None:
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.keepalive_timeout = keepalive_timeout
        self.max_connections = max_connections
        self.open = 0  # connections accepted and not refused, not yet lost
        self.trimmer = Trimmer()
        self._metrics = metrics
        self._closed = {r: metrics.connections_closed.labels(r) for r in CLOSE_REASONS}
        self._connections: dict[asyncio.BaseTransport, _Connection] = {}
        self._due: deque[Callable[[], None]] = deque()
        self._reaping = False
        self._log = get_logger("gateway.listener")

    @classmethod
    def from_settings(cls, settings: Settings, metrics: Metrics) -> ConnectionGuard:
        t = settings.timeouts
        return cls(
            header_timeout=t.header,
            body_timeout=t.body,
            keepalive_timeout=t.keepalive,
            max_connections=settings.limits.max_connections,
            metrics=metrics,
        )

    # -- the listener side --------------------------------------------------------------------

    def closed(self, reason: str) -> None:
        """Count a close or refusal (no log line: under attack that would be one per connection;
        ``gateway_connections_closed_total`` has them)."""
        self._closed[reason].inc()

    def _reserve(self) -> bool:
        """A connection was accepted: count it, unless the cap is reached."""
        if self.open >= self.max_connections:
            return False
        self.open += 1
        self.trimmer.observe(self.open)
        self._metrics.connections_open.inc()
        return True

    def _release(self) -> None:
        self.open -= 1
        self._metrics.connections_open.dec()

    def _opened(self, conn: _Connection, transport: asyncio.BaseTransport) -> None:
        self._connections[transport] = conn

    def defer(self, work: Callable[[], None]) -> None:
        """Run ``work`` (an expiry) soon, at most ``EXPIRY_BATCH`` per turn of the loop: a
        thousand connections whose timers ran out together are closed over a few turns, with
        the requests in flight served in between, instead of in one long stall."""
        self._due.append(work)
        if not self._reaping:
            self._reaping = True
            asyncio.get_running_loop().call_soon(self._reap)

    def _reap(self) -> None:
        due = self._due
        for _ in range(min(EXPIRY_BATCH, len(due))):
            try:
                due.popleft()()
            except Exception:  # one bad expiry must not stop the others
                self._log.exception("connection.expiry_failed")
        if due:
            asyncio.get_running_loop().call_soon(self._reap)
        else:
            self._reaping = False

    async def give_back_memory(self, interval: float = TRIM_INTERVAL) -> None:
        """Forever: every ``interval`` s, when connections fell well below their peak, hand the
        memory they held back to the system (``gateway/proxy/allocator.py``).

        A closed connection's objects sit in reference cycles (protocol, transport, tasks), so
        they are freed only by a full collection; it runs on the loop (a few milliseconds, as
        the start-up objects are frozen out of it, see ``serve``), the trim in a thread."""
        trim = malloc_trim()
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            if self.trimmer.due(self.open) and trim is not None:
                gc.collect()
                await loop.run_in_executor(None, trim, 0)
                self._metrics.memory_trims.inc()

    def close_unstarted(self) -> None:
        for conn in list(self._connections.values()):
            conn.close_if_unstarted()

    def _lost(self, transport: asyncio.BaseTransport) -> None:
        self._connections.pop(transport, None)
        self._release()

    # -- the request side ---------------------------------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The head is complete when this runs; the response is done when it returns."""
        transport = request.transport
        conn = self._connections.get(transport) if transport is not None else None
        content = request.content
        if conn is not None:
            conn.request_started(content)
        timer: asyncio.TimerHandle | None = None
        expired: list[bool] = []
        if not content.is_eof():
            timer = asyncio.get_running_loop().call_later(
                self.body_timeout, self.defer, functools.partial(_expire_body, content, expired)
            )
        try:
            response = await handler(request)
            if not content.is_eof():
                # The client has not sent its whole body (it stalled, or the answer came before
                # it was needed): answer, then close rather than wait for the rest.
                await self._answer_and_close(request, response, BODY_TIMEOUT if expired else None)
            return response
        finally:
            if timer is not None:
                timer.cancel()
            if conn is not None:
                conn.request_finished()

    async def _answer_and_close(
        self, request: web.Request, response: web.StreamResponse, reason: str | None
    ) -> None:
        response.force_close()
        with contextlib.suppress(ConnectionError):
            await response.prepare(request)
            await response.write_eof()
        self.closed(reason or UNREAD_BODY)
        # No lingering read of a body that is not coming: the answer is written, close now.
        request.protocol.force_close()

    def site(
        self, runner: web.BaseRunner, host: str, port: int, *, reuse_port: bool = False
    ) -> GuardedSite:
        return GuardedSite(runner, self, host, port, reuse_port=reuse_port)


def _expire_body(content: StreamReader, expired: list[bool]) -> None:
    if not content.is_eof():
        expired.append(True)
        content.set_exception(BodyTimeout("request body timeout"))


class _Connection(asyncio.Protocol):
    """One client connection: aiohttp's protocol inside, this one's timer around it.

    aiohttp's protocol (its parser, its request task) is only made when the first byte arrives:
    a connection that sends nothing (a flood) costs a transport, this object and a timer."""

    __slots__ = (
        "_content",
        "_generation",
        "_guard",
        "_head_bytes",
        "_inner",
        "_lost",
        "_next_head",
        "_server",
        "_state",
        "_timer",
        "_transport",
    )

    def __init__(self, guard: ConnectionGuard, server: ProtocolFactory) -> None:
        self._guard = guard
        self._server = server
        self._inner: asyncio.Protocol | None = None  # aiohttp's, from the first byte on
        self._transport: asyncio.Transport | None = None  # None: not made yet, or lost
        self._state = _State.HEAD
        self._timer: asyncio.TimerHandle | None = None
        self._head_bytes = False  # part of a request head arrived in this HEAD phase
        self._content: StreamReader | None = None  # the body of the request being served
        self._next_head = False  # bytes of the next request arrived while one was served
        self._lost = False
        self._generation = 0  # which arming of the timer is current

    # -- asyncio.Protocol -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Counted by the acceptor already (below the cap).
        transport = cast(asyncio.Transport, transport)  # a stream server's transport
        self._transport = transport
        self._guard._opened(self, transport)
        self._arm(self._guard.header_timeout)

    @property
    def made(self) -> bool:
        return self._transport is not None or self._lost

    def data_received(self, data: bytes) -> None:
        inner = self._inner
        if inner is None:
            if self._transport is None:
                return
            inner = self._inner = self._server()
            inner.connection_made(self._transport)
        state = self._state
        if state is _State.IDLE:
            self._state = _State.HEAD
            self._head_bytes = True
            self._arm(self._guard.header_timeout)
        elif state is _State.HEAD:
            self._head_bytes = True
        elif self._content is not None and self._content.is_eof():
            self._next_head = True  # pipelined: the body being served is complete already
        inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        transport, self._transport = self._transport, None
        if transport is None:
            return
        self._lost = True
        self._cancel()
        self._guard._lost(transport)
        self._content = None
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.connection_lost(exc)

    def close_if_unstarted(self) -> None:
        """Close the connection if no byte ever arrived on it (the listener is stopping)."""
        if self._inner is None and self._transport is not None:
            self._transport.close()

    # -- from the middleware -----------------------------------------------------------------

    def request_started(self, content: StreamReader) -> None:
        self._cancel()
        self._state = _State.BUSY
        self._content = content
        self._next_head = False

    def request_finished(self) -> None:
        if self._transport is None:
            return
        self._content = None
        if self._next_head:
            self._state, self._head_bytes = _State.HEAD, True
            self._arm(self._guard.header_timeout)
        else:
            self._state, self._head_bytes = _State.IDLE, False
            self._arm(self._guard.keepalive_timeout)

    # -- the timer ----------------------------------------------------------------------------

    def _arm(self, delay: float) -> None:
        self._cancel()
        transport = self._transport
        if transport is not None and not transport.is_closing():
            self._timer = asyncio.get_running_loop().call_later(
                delay, self._guard.defer, functools.partial(self._expire, self._generation)
            )

    def _cancel(self) -> None:
        self._generation += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, generation: int) -> None:
        if generation != self._generation:
            return  # re-armed (or cancelled) after this expiry was queued
        self._timer = None
        transport, inner = self._transport, self._inner
        if transport is None or self._state is _State.BUSY:
            return
        if transport.get_write_buffer_size():
            # The last response is still being written to a slow reader: the idle / head clock
            # starts once it is out.
            self._arm(self._guard.keepalive_timeout)
            return
        if self._state is _State.HEAD:
            if self._head_bytes:
                transport.write(_HEADER_TIMEOUT_RESPONSE)
            self._guard.closed(HEADER_TIMEOUT)
        else:
            self._guard.closed(IDLE_TIMEOUT)
        close: Any = getattr(inner, "force_close", None)  # aiohttp's RequestHandler
        if callable(close):
            close()  # cancels its wait for a request, closes the transport
        else:
            transport.close()  # no byte ever arrived: no aiohttp protocol to stop


class GuardedSite(web.TCPSite):
    """``web.TCPSite`` whose connections go through a :class:`ConnectionGuard`.

    It accepts connections itself (not through ``loop.create_server``): a connection above the
    cap is answered and closed right on the accepted socket — no transport, no task — so a flood
    costs the event loop a few microseconds per connection; at most ``ACCEPT_BATCH`` connections
    are accepted per turn of the loop, so requests in flight keep being served during a flood.
    Below the cap, ``loop.connect_accepted_socket`` makes the usual transport."""

    def __init__(
        self,
        runner: web.BaseRunner,
        guard: ConnectionGuard,
        host: str,
        port: int,
        *,
        reuse_port: bool = False,
    ) -> None:
        super().__init__(
            runner,
            host,
            port,
            backlog=BACKLOG,
            reuse_address=True,
            reuse_port=reuse_port or None,
        )
        self._guard = guard
        self._sockets: list[socket.socket] = []
        self._starting: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._runner._reg_site(self)
        raise_fd_limit(self._guard.max_connections)
        server = self._runner.server
        if server is None:
            raise RuntimeError("call runner.setup() before starting the site")
        loop = asyncio.get_running_loop()
        self._sockets = await loop.run_in_executor(None, self._listen)
        self._bound_port = self._sockets[0].getsockname()[1]
        for sock in self._sockets:
            loop.add_reader(sock.fileno(), self._accept, loop, sock, server)

    def _listen(self) -> list[socket.socket]:
        """Bind and listen on every address of the host, as ``loop.create_server`` does."""
        infos = socket.getaddrinfo(
            self._host, self._port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        sockets: list[socket.socket] = []
        port = self._port
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                sock = socket.socket(family, kind, proto)
                sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if self._reuse_port:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                # Port 0: every address gets the port the first one was given.
                sock.bind((address[0], port, *address[2:]))
                port = sock.getsockname()[1]
                sock.listen(self._backlog)
                sock.setblocking(False)
        except OSError:
            for sock in sockets:
                sock.close()
            raise
        if not sockets:
            raise OSError(f"no address to listen on for {self._host!r}")
        return sockets

    def _accept(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, server: ProtocolFactory
    ) -> None:
        guard = self._guard
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # Out of descriptors or memory: pause accepting for a second, as asyncio does.
                    guard._log.warning("gateway.accept_paused", error=str(exc))
                    loop.remove_reader(sock.fileno())
                    loop.call_later(1.0, self._resume, loop, sock, server)
                    return
                continue  # the client gave up (ECONNABORTED, …)
            if not guard._reserve():
                _refuse(conn)
                guard.closed(OVER_CAPACITY)
                continue
            conn.setblocking(False)
            task = loop.create_task(self._connect(loop, conn, server))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    def _resume(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, server: ProtocolFactory
    ) -> None:
        if sock in self._sockets:
            loop.add_reader(sock.fileno(), self._accept, loop, sock, server)

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, conn: socket.socket, server: ProtocolFactory
    ) -> None:
        protocol = _Connection(self._guard, server)
        try:
            await loop.connect_accepted_socket(lambda: protocol, conn)
        except BaseException:
            if not protocol.made:
                self._guard._release()
            conn.close()
            raise

    async def stop(self) -> None:
        """Stop listening; close the connections that never sent a byte (aiohttp does not know
        them, so its shutdown would not)."""
        self._runner._check_site(self)
        loop = asyncio.get_running_loop()
        for sock in self._sockets:
            loop.remove_reader(sock.fileno())
            sock.close()
        self._sockets = []
        self._runner._unreg_site(self)
        self._guard.close_unstarted()


def _refuse(conn: socket.socket) -> None:
    """503 on a connection above the cap, without reading it; then close it."""
    with contextlib.suppress(OSError):
        conn.setblocking(False)
        conn.send(_OVER_CAPACITY_RESPONSE)  # fits in any fresh socket's send buffer
    conn.close()


def raise_fd_limit(max_connections: int) -> None:
    """Each client connection may hold an upstream connection too: make room for both (raise
    the soft ``RLIMIT_NOFILE`` up to the hard one), or warn that the cap cannot be reached."""
    needed = 2 * max_connections + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    if soft != resource.RLIM_INFINITY and soft < needed:
        get_logger("gateway.listener").warning(
            "gateway.fd_limit",
            message="the open-file limit is below what limits.max_connections needs",
            nofile=soft,
            needed=needed,
        )
