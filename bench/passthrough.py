"""The minimal aiohttp pass-through: the ceiling for any Python hop (benchmark reference).

Streams every response body as it arrives (JSON and SSE alike), parses nothing, keeps one shared
client session with unlimited keep-alive connections to the upstream, drops hop-by-hop headers.
Same aiohttp server/client stack as the gateway, none of its work.

Run: ``python bench/passthrough.py --listen 127.0.0.1:PORT --upstream http://127.0.0.1:UPORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_SKIP_AUTO = frozenset({"Accept-Encoding", "User-Agent", "Content-Type"})
_CLIENT = web.AppKey("client", aiohttp.ClientSession)


def _forwardable(items: Iterable[tuple[str, str]]) -> CIMultiDict[str]:
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in items:
        if name.lower() not in HOP_BY_HOP:
            out.add(name, value)
    return out


def make_app(upstream: URL) -> web.Application:
    """An app that relays every request to ``upstream`` (scheme://host:port) + the same path."""

    async def relay(request: web.Request) -> web.StreamResponse:
        client = request.app[_CLIENT]
        body = await request.read() if request.body_exists else None
        async with client.request(
            request.method,
            upstream.with_path(request.path).with_query(request.query_string),
            headers=_forwardable(request.headers.items()),
            data=body,
            allow_redirects=False,
            skip_auto_headers=_SKIP_AUTO,
            auto_decompress=False,
        ) as up:
            resp = web.StreamResponse(status=up.status, headers=_forwardable(up.headers.items()))
            if up.content_length is not None:
                resp.content_length = up.content_length
            with contextlib.suppress(ConnectionResetError):  # the client left mid-response
                await resp.prepare(request)
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
                await resp.write_eof()
            return resp

    async def client_ctx(app: web.Application) -> AsyncIterator[None]:
        connector = aiohttp.TCPConnector(limit=0, force_close=False)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=5)
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, auto_decompress=False
        ) as client:
            app[_CLIENT] = client
            yield

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.cleanup_ctx.append(client_ctx)
    app.router.add_route("*", "/{tail:.*}", relay)
    return app


async def start(host: str, port: int, upstream: str) -> web.AppRunner:
    """Start the pass-through on ``host:port`` in the running loop; the caller cleans up."""
    runner = web.AppRunner(
        make_app(URL(upstream).with_path("/")),
        handler_cancellation=True,
        access_log=None,
        shutdown_timeout=0.5,
    )
    await runner.setup()
    await web.TCPSite(runner, host, port, backlog=4096).start()
    return runner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT")
    parser.add_argument("--upstream", required=True, help="http://HOST:PORT[/path]")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")

    async def serve() -> None:
        runner = await start(host, int(port), args.upstream)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
