"""In-process harness for relay functional tests: a scripted upstream and the gateway, both
real aiohttp servers on port 0, and an aiohttp client talking to the gateway."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.app import make_app
from gateway.config import Settings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Harness:
    gateway_url: str
    upstream_url: str
    session: aiohttp.ClientSession
    seen: list[web.Request]  # requests the upstream received

    @property
    def mcp(self) -> str:
        return self.gateway_url + "/mcp"


def settings_for(upstream_url: str, **overrides: Any) -> Settings:
    data: dict[str, Any] = {"upstreams": {"default": {"url": upstream_url}}}
    data.update(overrides)
    return Settings.model_validate(data)


@contextlib.asynccontextmanager
async def running(
    handler: Handler, *, methods: tuple[str, ...] = ("POST", "GET", "DELETE"), **overrides: Any
) -> AsyncIterator[Harness]:
    seen: list[web.Request] = []

    async def recording(request: web.Request) -> web.StreamResponse:
        seen.append(request)
        return await handler(request)

    up_app = web.Application()
    for method in methods:
        up_app.router.add_route(method, "/mcp", recording)
    async with TestServer(up_app, port=0, handler_cancellation=True) as up:
        upstream_url = str(up.make_url("/mcp"))
        app = make_app(settings_for(upstream_url, **overrides))
        async with (
            TestServer(app, port=0, handler_cancellation=True) as gw,
            aiohttp.ClientSession() as session,
        ):
            yield Harness(str(gw.make_url("")).rstrip("/"), upstream_url, session, seen)


JSON_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
