"""The upstream half of ``elicitation-gateway stdio --upstream URL``: one MCP session with a
remote Streamable HTTP server, seen by :class:`gateway.stdio.relay.StdioRelay` as a line peer.

The relay keeps the client half (framing, the calls in flight, the declared modes, every
message through ``Enforcer.process``); :class:`HttpUpstream` replaces the child process. The
relay writes each server-bound line through :meth:`HttpUpstream.send` (client messages) or
:meth:`HttpUpstream.send_detached` (what the relay writes while handling a server message: a
blocked elicitation's decline, its own 2026 retry), and every message the server sends comes
back through the relay's ``from_server``, one frame at a time (a JSON body, or each SSE event
as it arrives), one at a time (the way a pipe delivers lines).

What it does for the client, as the official SDK's HTTP transport does
(``mcp/client/streamable_http.py``):

* **POSTs** every message, with ``Accept: application/json, text/event-stream``. A request's
  answer is read in its own task (a ``tools/call`` stream stays open while the client answers
  the elicitation it carries); notifications and answers are POSTed in order, each before the
  next client message is read (``notifications/initialized`` before the first request).
* **Headers mirror the body.** A request carrying the 2026 ``_meta`` envelope gets
  ``MCP-Protocol-Version`` (its ``_meta`` version), ``Mcp-Method`` and, for ``tools/call``,
  ``prompts/get`` and ``resources/read``, ``Mcp-Name`` (the name or URI; base64-wrapped when it
  is not plain printable ASCII, as the SDK does) — a server answers ``-32020`` otherwise. In the
  handshake era the ``Mcp-Session-Id`` the server gave on ``initialize`` and the negotiated
  ``MCP-Protocol-Version`` go on every later request; ``DELETE`` ends the session
  (:meth:`HttpUpstream.close`).
* **The standalone GET stream** (handshake era) is opened once ``notifications/initialized``
  was accepted, when the server offers one (405: none); it is resumed with ``Last-Event-ID``
  after the server's ``retry`` delay (else 1 s), and given up after ``MAX_RECONNECTS`` failed
  attempts in a row (a stream that ends without a single block counts as one).
* **Resumption**: a POST's event stream that ends before the request's answer, after events
  with ids, is resumed by ``GET`` with ``Last-Event-ID`` (bounded the same way).
* **Cancellation**: in 2026 a ``notifications/cancelled`` closes the request's response stream
  (the 2026 HTTP wire has no client notifications); in the handshake era it is POSTed.
* **Failures become JSON-RPC errors** for the request they concern, fed through the relay like
  any server message (so the call ends in the relay too): unreachable or broken upstream
  ``-31001``, timed out ``-31002``, a response the gateway cannot inspect (the reading rule of
  ``gateway/wire/reading.py``, a strict event stream) or no answer at all ``-31003``; a JSON-RPC
  error in a non-2xx body is passed on under the request's id. Every wait is bounded by the
  HTTP client's connect, response and idle timeouts.

Only the configured URL is ever contacted; redirects are not followed (the HTTP client never
does). Header values (static ones included) are never logged.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError
from structlog.typing import FilteringBoundLogger
from yarl import URL

from gateway import errors
from gateway.errors import ConfigError, ProtocolError
from gateway.proxy.config import Timeouts, Upstream
from gateway.proxy.upstream import UpstreamClient, UpstreamError, UpstreamResponse, UpstreamTimeout
from gateway.proxy.upstream_settings import UpstreamSettings, build_upstream
from gateway.wire.era import HANDSHAKE_VERSIONS, MODERN_VERSIONS, meta_version
from gateway.wire.jsonrpc import Message, dumps, error_response
from gateway.wire.ndjson import Frame, Line, read_line
from gateway.wire.reading import JSON_TYPE, SSE_TYPE, Reading, Unreadable, plan_response
from gateway.wire.sse import SSEBlock, SSEDecoder, SSEError

Feed = Callable[[Frame], Awaitable[None]]
ACCEPT: Final = f"{JSON_TYPE}, {SSE_TYPE}"
MAX_RECONNECTS: Final = 3  # failed attempts in a row before a stream is given up
DEFAULT_RETRY_SECONDS: Final = 1.0  # the SDK's default reconnection delay
MAX_RETRY_SECONDS: Final = 30.0  # a server's `retry:` beyond this is capped
CLOSE_SECONDS: Final = 2.0  # DELETE at the end: bounded
# Method -> the params key mirrored in Mcp-Name (SEP-2243; mcp.shared.inbound).
NAME_BEARING: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_HEADER_SAFE: Final = re.compile(r"^[\x20-\x7e]*$")
_SENTINEL: Final = re.compile(r"^=\?base64\?.*\?=$")

UNAVAILABLE: Final = "Upstream MCP server unavailable"
TIMED_OUT: Final = "Upstream MCP server timed out"
UNREADABLE: Final = "Upstream MCP server sent a response the gateway cannot inspect"


def header_value(value: str) -> str:
    """A value for ``Mcp-Name``: as is when it survives an HTTP field (printable ASCII, no edge
    whitespace), else wrapped as ``=?base64?…?=`` (what the SDK client sends and its server
    decodes)."""
    if _HEADER_SAFE.match(value) and value == value.strip() and not _SENTINEL.match(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def one_line(data: bytes) -> bytes:
    """A JSON text as one line. Raw CR and LF can only be whitespace between JSON tokens (inside
    a string they must be escaped), so replacing them with spaces changes no value; a text that
    is not valid JSON stays invalid either way (the relay's strict parser refuses it)."""
    if b"\n" in data or b"\r" in data:
        return data.replace(b"\r", b" ").replace(b"\n", b" ")
    return data


def _key(request_id: str | int | None) -> tuple[str, str]:
    return (type(request_id).__name__, str(request_id))


@dataclass(slots=True)
class _Post:
    """A request's POST in flight: whether it was a 2026 request, its answer being read (to
    close on a 2026 cancellation) and whether it was cancelled (then nothing more is fed)."""

    modern: bool
    resp: UpstreamResponse | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.resp is not None:
            self.resp.close()  # a read waiting on it ends with UpstreamError


@dataclass(slots=True)
class _Resume:
    """Where an event stream stands, to resume it: the last event id and the server's delay."""

    last_id: str | None = None
    retry: float | None = None
    blocks: int = 0  # blocks seen so far (pings included)

    def saw(self, block: SSEBlock) -> None:
        self.blocks += 1
        if block.id:
            self.last_id = block.id
        if block.retry is not None:
            self.retry = min(block.retry / 1000, MAX_RETRY_SECONDS)

    @property
    def delay(self) -> float:
        return DEFAULT_RETRY_SECONDS if self.retry is None else self.retry


class HttpUpstream:
    """One session with a remote Streamable HTTP MCP server (see the module docstring)."""

    def __init__(
        self,
        *,
        url: URL,
        client: UpstreamClient,
        logger: FilteringBoundLogger,
        name: str,
        static_headers: Callable[[list[tuple[str, str]]], list[tuple[str, str]]] | None = None,
        max_message_bytes: int,
        max_depth: int = 64,
    ) -> None:
        self._url = url
        self._client = client
        self._log = logger
        self._name = name
        self._static = static_headers or (lambda headers: headers)
        self._max = max_message_bytes
        self._max_depth = max_depth
        self._feed: Feed | None = None
        self._feed_lock = asyncio.Lock()  # one server message at a time, like a pipe
        self._session: str | None = None  # Mcp-Session-Id from initialize
        self._version: str | None = None  # negotiated handshake version
        self._modern = False  # the conversation is in the 2026 era
        self._posts: dict[tuple[str, str], _Post] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.listener: asyncio.Task[None] | None = None  # the standalone GET stream's task
        self._closed = False
        self.reached = False  # an HTTP answer ever arrived
        self.failed = False  # a request could not reach the upstream

    def attach(self, feed: Feed) -> None:
        """Where server messages go (the relay's ``from_server``)."""
        self._feed = feed

    # -- client → server ------------------------------------------------------------------

    async def send(self, line: bytes) -> None:
        """A client message (one line): a request is POSTed in its own task; a notification
        or an answer is POSTed before this returns (the next client message waits for it)."""
        line = line.removesuffix(b"\n")
        msg = self._parse(line)
        if msg is None:
            return
        if msg.kind == "request":
            self._start_request(msg, line)
        elif not self._cancel_modern(msg):
            await self._post_once(msg, line)

    async def send_detached(self, line: bytes) -> None:
        """A line the relay writes while it handles a server message (a decline, a 2026 retry):
        never waited for here, since its answer comes back through the same relay."""
        line = line.removesuffix(b"\n")
        msg = self._parse(line)
        if msg is None:
            return
        if msg.kind == "request":
            self._start_request(msg, line)
        else:
            self._spawn(self._post_once(msg, line))

    def _parse(self, line: bytes) -> Message | None:
        if self._closed:
            return None
        try:
            return read_line(line, max_bytes=self._max, max_depth=self._max_depth)
        except ProtocolError:  # the relay wrote it: it was read strictly before
            self._log.error("stdio.unreadable_line", upstream=self._name)
            return None

    def _start_request(self, msg: Message, line: bytes) -> None:
        modern = meta_version(msg.params) in MODERN_VERSIONS
        if modern:
            self._modern = True
        elif msg.method == "initialize":
            self._modern = False
        previous = self._posts.get(_key(msg.id))
        if previous is not None:  # a reused id: the newer request owns the answer
            previous.cancel()
        post = _Post(modern)
        self._posts[_key(msg.id)] = post
        self._spawn(self._request(msg, line, post))

    def _cancel_modern(self, msg: Message) -> bool:
        """A 2026 cancellation closes the request's response stream instead of being POSTed
        (True: nothing to POST)."""
        if msg.method != "notifications/cancelled" or not isinstance(msg.params, Mapping):
            return False
        post = self._posts.get(_key(msg.params.get("requestId")))
        if post is None:
            return self._modern
        if not post.modern:
            return False
        post.cancel()
        return True

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _headers(self, msg: Message) -> list[tuple[str, str]]:
        headers = [("Content-Type", JSON_TYPE), ("Accept", ACCEPT), ("Accept-Encoding", "identity")]
        version = meta_version(msg.params) if msg.method is not None else None
        if version is not None:  # 2026 envelope: the headers say what the body says
            headers.append(("MCP-Protocol-Version", version))
            headers.append(("Mcp-Method", msg.method or ""))
            key = NAME_BEARING.get(msg.method or "")
            value = msg.params.get(key) if key and isinstance(msg.params, Mapping) else None
            if isinstance(value, str):
                headers.append(("Mcp-Name", header_value(value)))
            return self._static(headers)
        if msg.method != "initialize":
            headers += self._session_headers()
        return self._static(headers)

    def _session_headers(self) -> list[tuple[str, str]]:
        headers = []
        if self._session is not None:
            headers.append(("Mcp-Session-Id", self._session))
        if self._version is not None:
            headers.append(("MCP-Protocol-Version", self._version))
        return headers

    # -- one POST ---------------------------------------------------------------------------

    async def _request(self, msg: Message, line: bytes, post: _Post) -> None:
        """A request's POST and its answer, to the end; a failure answers the request (unless
        the client cancelled it: then nothing more is said about it)."""
        try:
            post.resp = await self._open("POST", self._headers(msg), line)
            if post.cancelled:
                return
            await self._answer(msg, post)
        except UpstreamError as exc:
            if not post.cancelled:
                await self._fail(msg.id, exc)
        except ProtocolError as exc:  # a resumed stream the reading rule refuses
            self._protocol_error(exc.message)
            if not post.cancelled:
                await self._error(msg.id, errors.GATEWAY_UPSTREAM_PROTOCOL, UNREADABLE)
        finally:
            if post.resp is not None:
                post.resp.close()
            if self._posts.get(_key(msg.id)) is post:
                del self._posts[_key(msg.id)]

    async def _post_once(self, msg: Message, line: bytes) -> None:
        """A notification or an answer: POSTed, its (empty) answer read, a refusal logged."""
        try:
            resp = await self._open("POST", self._headers(msg), line)
        except UpstreamError as exc:
            self._log.warning(
                "upstream.error", upstream=self._name, error=str(exc), method=msg.method
            )
            return
        try:
            with contextlib.suppress(UpstreamError):
                await self._drain(resp)
            if resp.status >= 300:
                self._log.warning(
                    "upstream.rejected", upstream=self._name, status=resp.status, method=msg.method
                )
            elif msg.method == "notifications/initialized":
                self._listen()
        finally:
            resp.close()

    async def _open(
        self, method: str, headers: Sequence[tuple[str, str]], body: bytes | None
    ) -> UpstreamResponse:
        try:
            resp = await self._client.request(method, self._url, headers, one_line(body or b""))
        except UpstreamError:
            self.failed = True
            raise
        self.reached = True
        return resp

    async def _drain(self, resp: UpstreamResponse) -> None:
        read = 0
        while read <= self._max and (chunk := await resp.read()):
            read += len(chunk)

    async def _answer(self, msg: Message, post: _Post) -> None:
        """Relay the answer to a request: JSON, an event stream, or an error for it."""
        resp = post.resp
        if resp is None:
            return
        if msg.method == "initialize" and 200 <= resp.status < 300:
            self._session = resp.headers.get("Mcp-Session-Id") or self._session
        if resp.status == 202:
            await self._error(msg.id, errors.GATEWAY_UPSTREAM_PROTOCOL, "Upstream sent no answer")
            return
        try:
            reading = plan_response(resp.headers.items())
        except Unreadable as exc:
            self._protocol_error(exc.message)
            await self._error(msg.id, errors.GATEWAY_UPSTREAM_PROTOCOL, UNREADABLE)
            return
        if reading is Reading.SSE and resp.status < 300:
            await self._post_stream(msg, post)
            return
        body = await self._body(resp)
        if body is None:
            await self._error(msg.id, errors.GATEWAY_UPSTREAM_PROTOCOL, UNREADABLE)
            return
        answer = self._message(body) if body else None
        if answer is not None and answer.kind in ("response", "error"):
            if msg.method == "initialize" and answer.kind == "response":
                self._negotiated(answer)
            if _key(answer.id) == _key(msg.id):
                await self._deliver(body)
                return
            if answer.kind == "error" and answer.error is not None:
                # A JSON-RPC error the server answered under another id (or none): the
                # request's own error, as the SDK client surfaces it.
                out = {"jsonrpc": "2.0", "id": msg.id, "error": answer.error}
                await self._deliver(dumps(out))
                return
        if reading is not Reading.OPAQUE and resp.status < 300:
            self._protocol_error("answer is not the request's JSON-RPC response")
            await self._error(msg.id, errors.GATEWAY_UPSTREAM_PROTOCOL, UNREADABLE)
            return
        self._log.warning("upstream.rejected", upstream=self._name, status=resp.status)
        await self._error(
            msg.id,
            errors.GATEWAY_UPSTREAM_ERROR,
            f"Upstream MCP server answered HTTP {resp.status}",
        )

    def _negotiated(self, answer: Message) -> None:
        result = answer.result
        version = result.get("protocolVersion") if isinstance(result, Mapping) else None
        if isinstance(version, str) and version in HANDSHAKE_VERSIONS:
            self._version = version

    async def _body(self, resp: UpstreamResponse) -> bytes | None:
        """The whole body, at most ``max_message_bytes`` (None above)."""
        declared = resp.content_length
        if declared is not None and declared > self._max:
            self._protocol_error("body too large")
            return None
        chunks: list[bytes] = []
        size = 0
        while chunk := await resp.read():
            size += len(chunk)
            if size > self._max:
                self._protocol_error("body too large")
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    def _message(self, body: bytes) -> Message | None:
        try:
            return read_line(one_line(body), max_bytes=self._max, max_depth=self._max_depth)
        except ProtocolError:
            return None

    # -- event streams ----------------------------------------------------------------------

    async def _post_stream(self, msg: Message, post: _Post) -> None:
        """A request's event stream, event by event, until its answer; resumed with GET and
        ``Last-Event-ID`` when it ends early after events with ids."""
        resume = _Resume()
        attempts = 0
        while (resp := post.resp) is not None:
            try:
                if await self._events(resp, resume, answers=msg.id):
                    return
            except (SSEError, ProtocolError) as exc:
                self._protocol_error(exc.message)
                await self._error(msg.id, errors.GATEWAY_UPSTREAM_PROTOCOL, UNREADABLE)
                return
            except UpstreamError as exc:
                self._log.info("upstream.stream_broken", upstream=self._name, error=str(exc))
            finally:
                resp.close()
            if post.cancelled:
                return
            if resume.last_id is None or attempts >= MAX_RECONNECTS:
                await self._error(
                    msg.id, errors.GATEWAY_UPSTREAM_ERROR, "Upstream stream ended without an answer"
                )
                return
            attempts += 1
            await asyncio.sleep(resume.delay)
            post.resp = resp = await self._get(resume)
            if resp.status != 200 or plan_response(resp.headers.items()) is not Reading.SSE:
                self._log.warning(
                    "upstream.resume_refused", upstream=self._name, status=resp.status
                )
                await self._error(
                    msg.id, errors.GATEWAY_UPSTREAM_ERROR, "Upstream stream could not be resumed"
                )
                return

    async def _events(
        self, resp: UpstreamResponse, resume: _Resume, *, answers: str | int | None = None
    ) -> bool:
        """Feed every event of ``resp``; True once the answer to ``answers`` was fed."""
        decoder = SSEDecoder(max_block_bytes=self._max, strict=True)
        while chunk := await resp.read():
            try:
                blocks = decoder.feed(chunk)
            except SSEError as exc:
                if await self._blocks(exc.completed, resume, answers):
                    return True
                raise
            if await self._blocks(blocks, resume, answers):
                return True
        blocks, _tail = decoder.finish()
        return await self._blocks(blocks, resume, answers)

    async def _blocks(
        self, blocks: list[SSEBlock], resume: _Resume, answers: str | int | None
    ) -> bool:
        done = False
        for block in blocks:
            resume.saw(block)
            if not block.data:
                continue  # a ping, a priming event: nothing for the client
            data = block.data.encode("utf-8")
            await self._deliver(data)
            if answers is not None and not done:
                msg = self._message(data)
                done = msg is not None and msg.kind in ("response", "error")
                done = done and msg is not None and _key(msg.id) == _key(answers)
        return done

    async def _get(self, resume: _Resume) -> UpstreamResponse:
        headers = [("Accept", SSE_TYPE), ("Accept-Encoding", "identity")]
        headers += self._session_headers()
        if resume.last_id is not None:
            headers.append(("Last-Event-ID", resume.last_id))
        return await self._open("GET", self._static(headers), None)

    def _listen(self) -> None:
        if self.listener is None and self._session is not None and not self._closed:
            self.listener = asyncio.ensure_future(self._standalone())
            self._tasks.add(self.listener)
            self.listener.add_done_callback(self._tasks.discard)

    async def _standalone(self) -> None:
        """The standalone GET stream: server requests and notifications of no request."""
        resume = _Resume()
        failures = 0
        while failures < MAX_RECONNECTS:
            try:
                resp = await self._get(resume)
            except UpstreamError as exc:
                self._log.info("upstream.listen_failed", upstream=self._name, error=str(exc))
                failures += 1
                await asyncio.sleep(resume.delay)
                continue
            try:
                if resp.status == 405:
                    return  # the server offers no standalone stream
                if resp.status != 200 or plan_response(resp.headers.items()) is not Reading.SSE:
                    self._log.info(
                        "upstream.listen_refused", upstream=self._name, status=resp.status
                    )
                    return
                before = resume.blocks
                await self._events(resp, resume)
                # A stream that carried something resets the count; one that ended empty
                # counts as a failure (a server closing it at once is not reconnected forever).
                failures = 0 if resume.blocks > before else failures + 1
            except (SSEError, ProtocolError) as exc:
                self._protocol_error(exc.message)
                failures += 1
            except UpstreamError as exc:
                self._log.info("upstream.stream_broken", upstream=self._name, error=str(exc))
                failures += 1
            finally:
                resp.close()
            if failures < MAX_RECONNECTS:
                await asyncio.sleep(resume.delay)
        self._log.warning("upstream.listen_given_up", upstream=self._name, attempts=failures)

    # -- server → client ----------------------------------------------------------------------

    async def _deliver(self, data: bytes) -> None:
        if self._feed is None or self._closed:
            return
        async with self._feed_lock:
            await self._feed(Line(one_line(data)))

    async def _fail(self, request_id: str | int | None, exc: UpstreamError) -> None:
        timeout = isinstance(exc, UpstreamTimeout)
        self._log.warning("upstream.error", upstream=self._name, error=str(exc), timeout=timeout)
        code = errors.GATEWAY_UPSTREAM_TIMEOUT if timeout else errors.GATEWAY_UPSTREAM_ERROR
        await self._error(request_id, code, TIMED_OUT if timeout else UNAVAILABLE)

    async def _error(self, request_id: str | int | None, code: int, message: str) -> None:
        """The request's answer is this error (fed through the relay: the call ends there)."""
        await self._deliver(error_response(request_id, code, message))

    def _protocol_error(self, why: str) -> None:
        self._log.warning("upstream.protocol_error", upstream=self._name, error=why)

    # -- the end ----------------------------------------------------------------------------

    async def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop every stream and request, then end the session with DELETE (bounded)."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._session is not None:
            with contextlib.suppress(UpstreamError, TimeoutError):
                async with asyncio.timeout(timeout):
                    base = [("Accept", ACCEPT), ("Accept-Encoding", "identity")]
                    headers = self._static([*base, *self._session_headers()])
                    resp = await self._client.request("DELETE", self._url, headers, None)
                    try:
                        await self._drain(resp)
                    finally:
                        resp.close()
        await self._client.close()


def default_name(url: str) -> str:
    """The server's name when ``--name`` is not given: the URL's host."""
    return URL(url).host or "upstream"


def upstream_settings(
    url: str, headers: Sequence[str], environ: Mapping[str, str], *, name: str
) -> UpstreamSettings:
    """``--upstream URL`` and its ``--header 'NAME: VALUE'`` flags as the per-upstream settings
    ``serve`` builds (``gateway/proxy/upstream_settings.py``): the URL checked, ``${NAME}`` and
    ``${file:/path}`` resolved, names the gateway manages refused, the TLS context built.
    Raises ConfigError naming the flag (never a header value)."""
    parsed: dict[str, str] = {}
    for value in headers:
        header, sep, rest = value.partition(":")
        if not sep or not header.strip():
            raise ConfigError("--header: expected 'NAME: VALUE'")
        parsed[header.strip()] = rest.strip()
    try:
        model = Upstream(url=url, proxy="none", headers=parsed)
    except ValidationError as exc:
        first = exc.errors()[0]
        flag = "--header" if first["loc"] and first["loc"][0] == "headers" else "--upstream"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{flag}: {message}") from None
    if not URL(url).host:
        raise ConfigError("--upstream: the URL has no host")

    def where(key: str) -> str:
        return (
            f"--header {key.removeprefix('headers.')}"
            if key.startswith("headers")
            else "--upstream"
        )

    return build_upstream(
        name, model, connect_timeout=Timeouts().connect, environ=environ, where=where
    )


def public_url(url: URL) -> str:
    """The URL as logs may show it: no user information, no query, no fragment."""
    return str(url.with_user(None).with_query(None).with_fragment(None))


__all__ = [
    "HttpUpstream",
    "default_name",
    "header_value",
    "one_line",
    "public_url",
    "upstream_settings",
]
