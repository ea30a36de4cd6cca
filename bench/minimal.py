"""The minimal aiohttp proxy of issue 12: the reference the gateway is measured against.

Exactly the shape the issue names: one ``ClientSession(connector=TCPConnector(limit=0),
timeout=ClientTimeout(total=None, sock_connect=5), auto_decompress=False)``; the client's body
read whole (``await request.read()``) and forwarded; a JSON answer read whole, ``json.loads``-ed
(the least any inspecting proxy does) and returned as the original bytes with ``web.Response``;
an SSE answer streamed chunk by chunk. Hop-by-hop headers are dropped both ways. No policy, no
limits, no error handling beyond what aiohttp does.

Run: ``python bench/minimal.py --listen 127.0.0.1:PORT --upstream http://127.0.0.1:UPORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
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
        body = await request.read()
        async with request.app[_CLIENT].request(
            request.method,
            upstream.with_path(request.path).with_query(request.query_string),
            headers=_forwardable(request.headers.items()),
            data=body or None,
            allow_redirects=False,
        ) as up:
            headers = _forwardable(up.headers.items())
            if up.content_type != "text/event-stream":
                raw = await up.read()
                if raw and up.content_type == "application/json":
                    json.loads(raw)
                return web.Response(status=up.status, headers=headers, body=raw)
            resp = web.StreamResponse(status=up.status, headers=headers)
            with contextlib.suppress(ConnectionResetError):  # the client left mid-stream
                await resp.prepare(request)
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
                await resp.write_eof()
            return resp

    async def client_ctx(app: web.Application) -> AsyncIterator[None]:
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
            auto_decompress=False,
        ) as client:
            app[_CLIENT] = client
            yield

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.cleanup_ctx.append(client_ctx)
    app.router.add_route("*", "/{tail:.*}", relay)
    return app


async def start(host: str, port: int, upstream: str) -> web.AppRunner:
    """Start the proxy on ``host:port`` in the running loop; the caller cleans up."""
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
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
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
