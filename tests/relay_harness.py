"""In-process harness for relay functional tests: a scripted upstream and the gateway, both
real aiohttp servers on port 0, and an aiohttp client talking to the gateway."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.audit.records import AuditSink
from gateway.enforce.seal import KeyRing
from gateway.policy.loader import Policy, load_policy
from gateway.proxy.app import make_app
from gateway.proxy.config import Settings

DEFAULT_POLICY = "policies/default.yaml"
TEST_KEYS = KeyRing([b"k" * 32])

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


UPSTREAM_SID = "upstream-session-1"
INIT_RESULT = (
    b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}'
)
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}'
)


@dataclass
class Harness:
    gateway_url: str
    upstream_url: str
    session: aiohttp.ClientSession
    seen: list[web.Request]  # requests the upstream received

    @property
    def mcp(self) -> str:
        return self.gateway_url + "/mcp"

    async def initialize(
        self, init: bytes = INIT, extra: dict[str, str] | None = None
    ) -> dict[str, str]:
        """Open a handshake session through the gateway; return the headers for later calls
        (with the sealed session id the gateway handed out)."""
        headers = {**JSON_HEADERS, **(extra or {})}
        async with self.session.post(self.mcp, data=init, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            sealed = resp.headers["Mcp-Session-Id"]
        assert sealed.startswith("gs1.")
        return {**headers, "Mcp-Session-Id": sealed, "MCP-Protocol-Version": "2025-11-25"}


def settings_for(upstream_url: str, **overrides: Any) -> Settings:
    data: dict[str, Any] = {"upstreams": {"default": {"url": upstream_url}}}
    data.update(overrides)
    return Settings.model_validate(data)


@contextlib.asynccontextmanager
async def running(
    handler: Handler,
    *,
    methods: tuple[str, ...] = ("POST", "GET", "DELETE"),
    policy: Policy | None = None,
    audit: AuditSink | None = None,
    **overrides: Any,
) -> AsyncIterator[Harness]:
    seen: list[web.Request] = []

    async def recording(request: web.Request) -> web.StreamResponse:
        if request.method == "POST" and b'"initialize"' in await request.read():
            return web.Response(
                body=INIT_RESULT,
                content_type="application/json",
                headers={"Mcp-Session-Id": UPSTREAM_SID},
            )
        seen.append(request)
        return await handler(request)

    up_app = web.Application()
    for method in methods:
        up_app.router.add_route(method, "/mcp", recording)
    async with TestServer(up_app, port=0, handler_cancellation=True) as up:
        upstream_url = str(up.make_url("/mcp"))
        app = make_app(
            settings_for(upstream_url, **overrides),
            policy or load_policy(DEFAULT_POLICY),
            TEST_KEYS,
            audit,
        )
        async with (
            TestServer(app, port=0, handler_cancellation=True) as gw,
            aiohttp.ClientSession() as session,
        ):
            yield Harness(str(gw.make_url("")).rstrip("/"), upstream_url, session, seen)


JSON_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


def input_required(request_id: Any, params: dict[str, Any], state: str = "s1") -> dict[str, Any]:
    """A 2026 InputRequiredResult whose one input request (key ``p``) is a form with ``params``."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "resultType": "input_required",
            "requestState": state,
            "inputRequests": {"p": {"method": "elicitation/create", "params": params}},
        },
    }


def one_event_upstream(event: bytes, answers: list[dict[str, Any]] | None = None) -> Handler:
    """An upstream that accepts every client answer (202, kept in ``answers`` when given) and
    answers every other request with an SSE stream holding ``event``."""

    async def up(request: web.Request) -> web.StreamResponse:
        if request.method == "POST":
            body = json.loads(await request.read())
            if "method" not in body:
                if answers is not None:
                    answers.append(body)
                return web.Response(status=202)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(event)
        return resp

    return up
