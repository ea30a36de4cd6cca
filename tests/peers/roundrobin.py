"""A minimal HTTP round-robin load balancer for tests: each request goes to the next backend.

Pass-through only (streaming, hop-by-hop headers dropped); it stands in for the load balancer in
front of stateless gateway replicas. Runs in-process on the test's loop (every peer it fronts is a
subprocess).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence

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
async def round_robin(backends: Sequence[str]) -> AsyncIterator[tuple[str, list[str]]]:
    """Serve ``/mcp`` on a free port; yield (its URL, the list of backends each request went to)."""
    order = itertools.cycle(backends)
    log: list[str] = []
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as client:

        async def forward(request: web.Request) -> web.StreamResponse:
            backend = next(order)
            log.append(backend)
            headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
            body = await request.read()
            async with client.request(
                request.method,
                backend,
                headers=headers,
                data=body or None,
                allow_redirects=False,
            ) as upstream:
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
