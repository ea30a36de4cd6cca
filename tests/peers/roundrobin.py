"""A minimal HTTP round-robin load balancer for tests: each request goes to the next backend.

Pass-through only (streaming, hop-by-hop headers dropped); it stands in for the load balancer in
front of stateless gateway replicas. Runs in-process on the test's loop (every peer it fronts is a
subprocess).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "host",
        "content-length",
    }
)


@contextlib.asynccontextmanager
async def round_robin(backends: list[str]) -> AsyncIterator[tuple[str, list[str]]]:
    """Serve ``/mcp`` on a free port; yield (its URL, the list of backends each request went to).

    ``backends`` may be changed while it runs (a rolling restart swaps one entry). A backend that
    refuses the connection is skipped, as load balancers do (nothing was sent, so it is safe)."""
    counter = itertools.count()
    log: list[str] = []
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    # A new connection per request, like nginx's default (no upstream keep-alive).
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(
        timeout=timeout, auto_decompress=False, connector=connector
    ) as client:

        async def connect(request: web.Request) -> aiohttp.ClientResponse:
            headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
            body = await request.read()
            for attempt in range(len(backends)):
                backend = backends[(next(counter) + attempt) % len(backends)]
                try:
                    response = await client.request(
                        request.method,
                        backend,
                        headers=headers,
                        data=body or None,
                        allow_redirects=False,
                    )
                except aiohttp.ClientConnectorError:
                    continue
                log.append(backend)
                return response
            raise web.HTTPBadGateway

        async def forward(request: web.Request) -> web.StreamResponse:
            async with await connect(request) as upstream:
                out = web.StreamResponse(
                    status=upstream.status,
                    headers=[(k, v) for k, v in upstream.headers.items() if k.lower() not in _HOP],
                )
                await out.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await out.write(chunk)
                await out.write_eof()
                return out

        app = web.Application()
        for method in ("GET", "POST", "DELETE"):
            app.router.add_route(method, "/mcp", forward)
        async with TestServer(app, port=0, handler_cancellation=True) as server:
            yield str(server.make_url("/mcp")), log
