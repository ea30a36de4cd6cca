"""The relay's upstream client built on aiohttp's ``ClientSession`` (variant (b) of issue 12's A/B).

The same interface as :mod:`gateway.proxy.upstream` (``request`` → an answer whose ``read`` yields
body bytes as they arrive, ``close`` releases or drops the connection), so the relay runs on
either. One ``ClientSession`` per upstream origin, configured once: ``TCPConnector`` with a
per-host cap, a DNS cache, an idle-connection lifetime (``keepalive_timeout``), no cookies,
``auto_decompress=False``, ``trust_env=True`` (``HTTP(S)_PROXY`` / ``NO_PROXY``), and one
``ClientTimeout`` object for every request (connect; the response timeout as the socket-read
timeout until the head arrives, then the idle timeout, set on the connection).

aiohttp's response parser is llhttp in lenient mode (optional CR before LF, lenient header
values), so the strictness of the hand-written client is kept as a small validation step on the
head (:func:`check_head`): conflicting or duplicate lengths, transfer codings other than
``chunked``, control characters in names or values, ``101``. Header names and values holding CR,
LF or NUL are refused before anything is sent, like the other client.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Sequence
from typing import Final

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from multidict import CIMultiDictProxy
from yarl import URL

from gateway.proxy.upstream import (
    HIGH_WATER,
    KEEPALIVE_SECONDS,
    MAX_HEAD_BYTES,
    MAX_HEADERS,
    UpstreamError,
    UpstreamTimeout,
    _origin_of,
)

DNS_TTL_SECONDS: Final = 10
# aiohttp adds these unless told not to; the relay sends exactly the headers it built.
_SKIP_AUTO: Final = frozenset({"Accept", "Accept-Encoding", "User-Agent", "Content-Type"})
_CTL: Final = frozenset(range(0x20)) - {0x09}  # control characters but HTAB
_Origin = tuple[str, str, int]


def _has_bad_char(text: str) -> bool:
    return "\r" in text or "\n" in text or "\x00" in text


def check_head(resp: aiohttp.ClientResponse) -> None:
    """The strictness aiohttp's lenient parser leaves out, on the parsed head (raises
    :class:`UpstreamError`)."""
    raw = resp.raw_headers
    if len(raw) > MAX_HEADERS:
        raise UpstreamError("upstream sent too many header fields")
    size = 0
    lengths = 0
    coding = False
    for name, value in raw:
        size += len(name) + len(value)
        if _CTL.intersection(value) or _CTL.intersection(name) or b" " in name:
            raise UpstreamError("invalid HTTP response from upstream: control character in head")
        lower = name.lower()
        if lower == b"content-length":
            lengths += 1
        elif lower == b"transfer-encoding":
            if value.strip().lower() != b"chunked":
                raise UpstreamError("upstream used a transfer coding other than chunked")
            coding = True
    if size > MAX_HEAD_BYTES:
        raise UpstreamError("upstream response head too large")
    if lengths > 1 or (lengths and coding):
        raise UpstreamError("invalid HTTP response from upstream: conflicting lengths")
    if resp.status == 101:
        raise UpstreamError("upstream switched protocols")


def _env_proxy(origin: _Origin) -> URL | None:
    """The proxy ``HTTP(S)_PROXY`` / ``NO_PROXY`` name for this origin, if any."""
    scheme, host, port = origin
    try:
        proxy, _auth = get_env_proxy_for_url(URL(f"{scheme}://{host}:{port}/"))
    except LookupError:
        return None
    return proxy


class AiohttpUpstreamResponse:
    """An answer being received: status and head now, the body as it arrives."""

    __slots__ = ("_resp", "closed", "headers", "status")

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.headers: CIMultiDictProxy[str] = resp.headers
        self.closed = False

    @property
    def content_length(self) -> int | None:
        value = self.headers.get("Content-Length")
        return int(value) if value is not None and value.isdigit() else None

    async def read(self) -> bytes:
        """The next body bytes as they arrive; ``b""`` at the end. Raises :class:`UpstreamError`."""
        if self.closed:
            return b""
        try:
            return await self._resp.content.readany()
        except aiohttp.ServerTimeoutError as exc:
            raise UpstreamTimeout("upstream body stalled") from exc
        except (aiohttp.ClientError, OSError) as exc:
            if self.closed:
                raise UpstreamError("closed by the gateway") from exc
            raise UpstreamError(f"upstream closed the connection ({type(exc).__name__})") from exc

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        while chunk := await self.read():
            yield chunk

    def close(self) -> None:
        """Done with this answer: the connection goes back to the pool when the answer was read
        to its end, and is closed otherwise (which ends a read waiting in another task)."""
        if self.closed:
            return
        self.closed = True
        if self._resp.content.at_eof():
            self._resp.release()
        else:
            self._resp.close()


class AiohttpUpstreamClient:
    """Requests to upstream MCP servers through one aiohttp ``ClientSession`` per origin."""

    def __init__(
        self,
        *,
        connect_timeout: float,
        response_timeout: float,
        idle_timeout: float,
        ssl_context: ssl.SSLContext | None = None,
        limit_per_host: int = 0,
        trust_env: bool = True,
        keepalive_timeout: float = KEEPALIVE_SECONDS,
        dns_ttl: int = DNS_TTL_SECONDS,
    ) -> None:
        self._response_timeout = response_timeout
        self._idle_timeout = idle_timeout
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._limit_per_host = limit_per_host
        self._keepalive = keepalive_timeout
        self._dns_ttl = dns_ttl
        # One timeout object for every request: the response timeout is the socket-read timeout
        # until the head arrives; the idle timeout replaces it on the connection afterwards.
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=connect_timeout, sock_read=response_timeout
        )
        self._sessions: dict[_Origin, aiohttp.ClientSession] = {}
        # trust_env=False: HTTP(S)_PROXY / NO_PROXY are read once per origin here instead of on
        # every request (aiohttp's trust_env reads them, and ~/.netrc, in a thread per request).
        self._trust_env = trust_env
        self._proxies: dict[_Origin, URL | None] = {}
        self._closed = False

    def _session(self, origin: _Origin) -> aiohttp.ClientSession:
        session = self._sessions.get(origin)
        if session is None:
            if not self._trust_env:
                self._proxies[origin] = _env_proxy(origin)
            connector = aiohttp.TCPConnector(
                limit=0,
                limit_per_host=self._limit_per_host,
                ttl_dns_cache=self._dns_ttl,
                keepalive_timeout=self._keepalive,
                ssl=self._ssl,
            )
            session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                auto_decompress=False,
                trust_env=self._trust_env,
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=_SKIP_AUTO,
                max_line_size=MAX_HEAD_BYTES,
                max_field_size=MAX_HEAD_BYTES,
                max_headers=MAX_HEADERS,
                read_bufsize=HIGH_WATER // 2,
            )
            self._sessions[origin] = session
        return session

    async def request(
        self,
        method: str,
        url: URL,
        headers: Sequence[tuple[str, str]],
        body: bytes | None,
        *,
        query: str = "",
    ) -> AiohttpUpstreamResponse:
        """Send one request and wait for the response head. ``query`` (already encoded)
        replaces the URL's own query when given. Raises :class:`UpstreamError`."""
        if self._closed:
            raise UpstreamError("upstream client closed")
        origin = _origin_of(url)
        for name, value in headers:
            if _has_bad_char(name) or _has_bad_char(value):
                raise UpstreamError("refusing a header or target with CR, LF or NUL")
        if query:
            if _has_bad_char(query):
                raise UpstreamError("refusing a header or target with CR, LF or NUL")
            url = URL(f"{url.with_query(None)}?{query}", encoded=True)
        try:
            resp = await self._session(origin).request(
                method,
                url,
                headers=headers,
                data=body,
                allow_redirects=False,
                proxy=self._proxies.get(origin),
            )
        except aiohttp.ServerTimeoutError as exc:
            raise UpstreamTimeout("upstream did not answer in time") from exc
        except aiohttp.ConnectionTimeoutError as exc:
            raise UpstreamTimeout("upstream connect timed out") from exc
        except (aiohttp.ClientConnectorError, aiohttp.ClientSSLError) as exc:
            raise UpstreamError(f"upstream unreachable: {type(exc).__name__}") from exc
        except aiohttp.ClientResponseError as exc:
            raise UpstreamError(f"invalid HTTP response from upstream: {exc.message}") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamError(f"upstream closed the connection ({type(exc).__name__})") from exc
        except TimeoutError as exc:
            raise UpstreamTimeout("upstream did not answer in time") from exc
        try:
            check_head(resp)
        except UpstreamError:
            resp.close()
            raise
        conn = resp.connection
        if conn is not None and conn.protocol is not None:
            conn.protocol.read_timeout = self._idle_timeout
            conn.protocol.start_timeout()
        return AiohttpUpstreamResponse(resp)

    async def close(self) -> None:
        self._closed = True
        sessions, self._sessions = list(self._sessions.values()), {}
        await asyncio.gather(*(s.close() for s in sessions))


__all__ = ["AiohttpUpstreamClient", "AiohttpUpstreamResponse", "check_head"]
