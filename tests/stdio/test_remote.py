"""The upstream half of ``stdio --upstream URL`` against real local HTTP servers (aiohttp on
port 0, answers scripted per test): what it sends (methods, routing headers, session id, static
headers, DELETE), what it feeds back (each JSON body or SSE event as one line), and every way an
upstream fails becoming a JSON-RPC error for the request concerned. The relay and the enforcer
around it are tested in test_relay.py; the whole process with SDK peers in
tests/e2e/test_stdio_remote.py."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import structlog
from aiohttp import web
from yarl import URL

from gateway import errors
from gateway.cli.main import _build_parser
from gateway.errors import ConfigError
from gateway.proxy.upstream import UpstreamClient
from gateway.stdio.remote import (
    MAX_RECONNECTS,
    HttpUpstream,
    default_name,
    header_value,
    one_line,
    public_url,
    upstream_settings,
)
from gateway.stdio.run import options_from_args
from gateway.wire.era import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from gateway.wire.ndjson import Frame, Line
from tests.peers.procs import free_port

WAIT = 10.0
MODERN = "2026-07-28"
SSE = "text/event-stream"
Script = Callable[["Seen", web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Seen:
    """One request the server got."""

    method: str
    headers: dict[str, str]
    body: Any


@dataclass
class Server:
    url: URL
    seen: list[Seen] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def wait_for(self, count: int) -> list[Seen]:
        async with asyncio.timeout(WAIT):
            while len(self.seen) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.seen


@dataclass
class Fed:
    """What the upstream fed back to the relay (one parsed line each)."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, frame: Frame) -> None:
        assert isinstance(frame, Line)
        assert b"\n" not in frame.data and b"\r" not in frame.data
        self.raw.append(frame.data)
        self.lines.append(json.loads(frame.data))
        self.changed.set()

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(WAIT):
            while len(self.lines) < count:
                self.changed.clear()
                await self.changed.wait()
        return self.lines


@contextlib.asynccontextmanager
async def serving(script: Script) -> AsyncIterator[Server]:
    """A real HTTP server on a free port; every request recorded, then answered by ``script``."""
    server = Server(URL("http://127.0.0.1/mcp"))

    async def handle(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        seen = Seen(request.method, dict(request.headers), json.loads(raw) if raw else None)
        server.seen.append(seen)
        server.arrived.set()
        return await script(seen, request)

    app = web.Application()
    app.router.add_route("*", "/mcp", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server_obj = site._server
    assert isinstance(server_obj, asyncio.base_events.Server)
    port = server_obj.sockets[0].getsockname()[1]
    server.url = URL(f"http://127.0.0.1:{port}/mcp")
    try:
        yield server
    finally:
        await runner.cleanup()


def client(*, response: float = WAIT) -> UpstreamClient:
    return UpstreamClient(connect_timeout=WAIT, response_timeout=response, idle_timeout=WAIT)


@contextlib.asynccontextmanager
async def upstream(
    url: URL,
    static: Callable[[list[tuple[str, str]]], list[tuple[str, str]]] | None = None,
    *,
    response: float = WAIT,
) -> AsyncIterator[tuple[HttpUpstream, Fed]]:
    fed = Fed()
    up = HttpUpstream(
        url=url,
        client=client(response=response),
        logger=structlog.get_logger("test"),
        name="remote",
        static_headers=static,
        max_message_bytes=1 << 20,
    )
    up.attach(fed)
    try:
        yield up, fed
    finally:
        await up.close(1.0)


def encode(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def modern_call(rid: Any, name: str) -> bytes:
    meta = {META_PROTOCOL_VERSION: MODERN, META_CLIENT_CAPABILITIES: {"elicitation": {}}}
    params = {"name": name, "arguments": {}, "_meta": meta}
    return encode({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def legacy_call(rid: Any, name: str = "t") -> bytes:
    params = {"name": name, "arguments": {}}
    return encode({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


INITIALIZE = encode(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
)
INITIALIZED = encode({"jsonrpc": "2.0", "method": "notifications/initialized"})


def result(rid: Any, text: str = "ok") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


def event(obj: Any, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\r\n" if event_id is not None else ""
    return f"{head}event: message\r\ndata: {json.dumps(obj)}\r\n\r\n".encode()


async def sse(
    request: web.Request, *chunks: bytes, headers: dict[str, str] | None = None
) -> web.StreamResponse:
    out = web.StreamResponse(headers={"Content-Type": SSE, **(headers or {})})
    await out.prepare(request)
    for chunk in chunks:
        await out.write(chunk)
    await out.write_eof()
    return out


# -- what is sent -----------------------------------------------------------------------------


async def test_a_2026_request_carries_routing_headers_that_match_its_body() -> None:
    async def script(seen: Seen, _: web.Request) -> web.StreamResponse:
        return web.json_response(result(seen.body["id"]))

    async with serving(script) as server, upstream(server.url) as (up, fed):
        await up.send(modern_call(1, "ask_form"))
        await up.send(modern_call(2, "résumé tool"))
        await fed.wait_for(2)
    by_id = {s.body["id"]: s.headers for s in server.seen}
    assert by_id[1]["MCP-Protocol-Version"] == MODERN
    assert by_id[1]["Mcp-Method"] == "tools/call"
    assert by_id[1]["Mcp-Name"] == "ask_form"
    encoded = base64.b64encode("résumé tool".encode()).decode()
    assert by_id[2]["Mcp-Name"] == f"=?base64?{encoded}?="
    assert "Mcp-Session-Id" not in by_id[1]
    assert by_id[1]["Accept"] == "application/json, text/event-stream"
    assert sorted(line["id"] for line in fed.lines) == [1, 2]


async def test_the_handshake_session_id_and_version_go_on_every_later_request_then_delete() -> None:
    async def script(seen: Seen, _: web.Request) -> web.StreamResponse:
        if seen.method == "DELETE":
            return web.Response(status=200)
        if seen.method == "GET":
            return web.Response(status=405)  # no standalone stream here
        body = seen.body
        if body.get("method") == "initialize":
            answer = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18"}}
            return web.json_response(answer, headers={"Mcp-Session-Id": "sess-1"})
        if "id" not in body:
            return web.Response(status=202)
        return web.json_response(result(body["id"]))

    async with serving(script) as server:
        async with upstream(server.url) as (up, fed):
            await up.send(INITIALIZE)
            await fed.wait_for(1)
            await up.send(INITIALIZED)
            await up.send(legacy_call(7))
            await fed.wait_for(2)
        seen = [s for s in await server.wait_for(5) if s.method != "GET"]
    first, notified, called, deleted = seen
    assert "Mcp-Session-Id" not in first.headers and "MCP-Protocol-Version" not in first.headers
    for later in (notified, called, deleted):
        assert later.headers["Mcp-Session-Id"] == "sess-1"
        assert later.headers["MCP-Protocol-Version"] == "2025-06-18"
    assert notified.body["method"] == "notifications/initialized"
    assert deleted.method == "DELETE"
    assert [line["id"] for line in fed.lines] == [0, 7]


async def test_static_headers_replace_and_join_the_gateways() -> None:
    async def script(seen: Seen, _: web.Request) -> web.StreamResponse:
        return web.json_response(result(seen.body["id"]))

    def static(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [*headers, ("Authorization", "Bearer s3cret")]

    async with serving(script) as server, upstream(server.url, static) as (up, fed):
        await up.send(legacy_call(1))
        await fed.wait_for(1)
    assert server.seen[0].headers["Authorization"] == "Bearer s3cret"


# -- what is fed back -------------------------------------------------------------------------


async def test_sse_events_are_fed_one_by_one_each_as_one_line() -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    multi = b'data: {"jsonrpc": "2.0",\r\ndata:  "id": 3, "result": {}}\r\n\r\n'

    async def script(_: Seen, request: web.Request) -> web.StreamResponse:
        return await sse(request, b": ping\r\n\r\n", event(progress, "e1"), multi)

    async with serving(script) as server, upstream(server.url) as (up, fed):
        await up.send(legacy_call(3))
        lines = await fed.wait_for(2)
    assert lines == [progress, {"jsonrpc": "2.0", "id": 3, "result": {}}]
    assert fed.raw[1] == b'{"jsonrpc": "2.0",  "id": 3, "result": {}}'  # newline → space


async def test_the_standalone_get_stream_is_opened_after_initialized_and_its_events_fed() -> None:
    server_request = {"jsonrpc": "2.0", "id": 5, "method": "ping"}

    async def script(seen: Seen, request: web.Request) -> web.StreamResponse:
        if seen.method == "GET":
            assert request.headers["Mcp-Session-Id"] == "s"
            return await sse(request, event(server_request))
        if seen.method == "DELETE" or "id" not in seen.body:
            return web.Response(status=202)
        answer = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}}
        return web.json_response(answer, headers={"Mcp-Session-Id": "s"})

    async with serving(script) as server, upstream(server.url) as (up, fed):
        await up.send(INITIALIZE)
        await fed.wait_for(1)
        await up.send(INITIALIZED)
        lines = await fed.wait_for(2)
    assert lines[1] == server_request
    assert [s.method for s in server.seen[:3]] == ["POST", "POST", "GET"]
    assert server.seen[2].headers["Accept"] == SSE


async def test_no_get_stream_without_a_session_and_none_when_the_server_says_405() -> None:
    async def script(seen: Seen, _: web.Request) -> web.StreamResponse:
        if seen.method == "GET":
            return web.Response(status=405)
        if seen.method == "DELETE" or "id" not in seen.body:
            return web.Response(status=202)
        return web.json_response(
            {"jsonrpc": "2.0", "id": 0, "result": {}}, headers={"Mcp-Session-Id": "s"}
        )

    async with serving(script) as server:
        async with upstream(server.url) as (up, fed):
            await up.send(INITIALIZE)
            await fed.wait_for(1)
            await up.send(INITIALIZED)
            await server.wait_for(3)  # initialize, initialized, the GET answered 405
            await up.send(legacy_call(1))
            await fed.wait_for(2)
        methods = [s.method for s in server.seen]
    assert methods.count("GET") == 1  # 405: never asked again


async def test_a_stream_that_ends_early_is_resumed_with_last_event_id() -> None:
    """2025-11-25 polling: the server closes the request's stream after a priming event and
    sends the answer on the resumed GET."""

    async def script(seen: Seen, request: web.Request) -> web.StreamResponse:
        if seen.method == "GET":
            assert request.headers["Last-Event-ID"] == "p1"
            return await sse(request, event(result(9), "p2"))
        return await sse(request, b"id: p1\r\nretry: 10\r\ndata: \r\n\r\n")

    async with serving(script) as server, upstream(server.url) as (up, fed):
        await up.send(legacy_call(9))
        lines = await fed.wait_for(1)
    assert lines == [result(9)]
    assert [s.method for s in server.seen] == ["POST", "GET"]


# -- failures become the request's JSON-RPC error ------------------------------------------


async def error_for(
    script: Script, line: bytes = legacy_call(1), *, response: float = WAIT
) -> dict[str, Any]:
    async with serving(script) as server, upstream(server.url, response=response) as (up, fed):
        await up.send(line)
        [answer] = await fed.wait_for(1)
    assert answer["id"] == json.loads(line)["id"]
    error: dict[str, Any] = answer["error"]
    return error


async def test_a_jsonrpc_error_in_a_non_2xx_body_reaches_the_client_under_its_request_id() -> None:
    async def script(_: Seen, __: web.Request) -> web.StreamResponse:
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Bad"}}
        return web.json_response(body, status=400)

    assert await error_for(script) == {"code": -32600, "message": "Bad"}


@pytest.mark.parametrize(
    ("status", "content_type", "body", "code"),
    [
        (202, None, b"", errors.GATEWAY_UPSTREAM_PROTOCOL),  # no answer to a request
        (500, "text/plain", b"oops", errors.GATEWAY_UPSTREAM_ERROR),
        (404, "text/html", b"<h1>gone</h1>", errors.GATEWAY_UPSTREAM_ERROR),
        (200, "application/json; charset=latin-1", b"{}", errors.GATEWAY_UPSTREAM_PROTOCOL),
        (200, "application/json", b'{"a": 1, "a": 2}', errors.GATEWAY_UPSTREAM_PROTOCOL),
        (200, "text/event-stream", b"\xef\xbb\xbfdata: {}\n\n", errors.GATEWAY_UPSTREAM_PROTOCOL),
        (200, "text/event-stream", b": only a ping\n\n", errors.GATEWAY_UPSTREAM_ERROR),
    ],
)
async def test_an_answer_the_gateway_cannot_use_is_a_clean_error(
    status: int, content_type: str | None, body: bytes, code: int
) -> None:
    async def script(_: Seen, __: web.Request) -> web.StreamResponse:
        headers = {"Content-Type": content_type} if content_type else {}
        return web.Response(status=status, body=body, headers=headers)

    error = await error_for(script)
    assert error["code"] == code


async def test_an_unreachable_upstream_is_an_error_for_the_request() -> None:
    url = URL(f"http://127.0.0.1:{free_port()}/mcp")
    async with upstream(url) as (up, fed):
        await up.send(legacy_call("a"))
        [answer] = await fed.wait_for(1)
    assert answer["id"] == "a"
    assert answer["error"]["code"] == errors.GATEWAY_UPSTREAM_ERROR
    assert up.failed and not up.reached


async def test_a_silent_upstream_times_out_with_its_own_error() -> None:
    never = asyncio.Event()

    async def script(_: Seen, __: web.Request) -> web.StreamResponse:
        await never.wait()
        return web.Response()

    error = await error_for(script, response=0.3)
    assert error["code"] == errors.GATEWAY_UPSTREAM_TIMEOUT


async def test_a_2026_cancellation_closes_the_stream_and_is_not_posted() -> None:
    closed = asyncio.Event()

    async def script(seen: Seen, request: web.Request) -> web.StreamResponse:
        out = web.StreamResponse(headers={"Content-Type": SSE})
        await out.prepare(request)
        await out.write(b": started\r\n\r\n")
        with contextlib.suppress(ConnectionResetError):
            while True:  # until the gateway goes away
                await asyncio.sleep(0.05)
                await out.write(b": ping\r\n\r\n")
        closed.set()
        return out

    async with serving(script) as server, upstream(server.url) as (up, fed):
        await up.send(modern_call(4, "slow"))
        await server.wait_for(1)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}
        await up.send(encode(cancel))
        async with asyncio.timeout(WAIT):
            await closed.wait()
    assert len(server.seen) == 1 and fed.lines == []


# -- settings -----------------------------------------------------------------------------


def test_static_headers_resolve_from_the_environment_and_errors_never_show_values() -> None:
    environ = {"TOKEN": "tok-123"}
    up = upstream_settings(
        "https://mcp.example/mcp", ["Authorization: Bearer ${TOKEN}"], environ, name="x"
    )
    assert up.headers == (("Authorization", "Bearer tok-123"),)
    assert "tok-123" not in repr(up)
    with pytest.raises(ConfigError, match="--header Authorization: environment variable NOPE"):
        upstream_settings("http://h/mcp", ["Authorization: ${NOPE}"], {}, name="x")
    with pytest.raises(ConfigError, match="--header: header 'Mcp-Session-Id' is set by"):
        upstream_settings("http://h/mcp", ["Mcp-Session-Id: v"], {}, name="x")
    with pytest.raises(ConfigError, match="--header: expected 'NAME: VALUE'"):
        upstream_settings("http://h/mcp", ["no colon"], {}, name="x")
    with pytest.raises(ConfigError, match=r"--upstream: .*http:// or https://"):
        upstream_settings("ftp://h/mcp", [], {}, name="x")


def test_names_values_and_urls_for_logs() -> None:
    assert header_value("ask_form") == "ask_form"
    assert header_value(" x") == "=?base64?IHg=?="
    assert one_line(b'{"a":\r\n1}') == b'{"a":  1}'
    assert default_name("https://mcp.example.com:8443/mcp") == "mcp.example.com"
    url = URL("https://user:pw@mcp.example.com/mcp?token=t#f")
    assert public_url(url) == "https://mcp.example.com/mcp"


def test_the_readmes_desktop_snippets_for_a_remote_server_are_valid_command_lines() -> None:
    """Each JSON snippet of README "Protect a remote server" parses, and its args are a valid
    ``stdio --upstream`` command line whose headers resolve from the snippet's own ``env``."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Protect a remote server", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```json\n")[1:]]
    assert len(blocks) == 3
    for block in blocks:
        config = json.loads(block)
        [server] = (config.get("mcpServers") or config["servers"]).values()
        assert server["command"].endswith("/elicitation-gateway")
        options = options_from_args(_build_parser().parse_args(server["args"]))
        assert options.upstream is not None and options.upstream.startswith("https://")
        env = dict.fromkeys(server.get("env", {}), "value-from-env")
        up = upstream_settings(options.upstream, options.headers, env, name=options.name)
        assert all(value.endswith("value-from-env") for _, value in up.headers)


async def test_a_get_stream_that_keeps_ending_empty_is_given_up() -> None:
    async def script(seen: Seen, request: web.Request) -> web.StreamResponse:
        if seen.method == "GET":
            return await sse(request, headers={})  # 200, then at once the end
        if seen.method == "DELETE" or "id" not in seen.body:
            return web.Response(status=202)
        answer = {"jsonrpc": "2.0", "id": 0, "result": {}}
        return web.json_response(answer, headers={"Mcp-Session-Id": "s"})

    async with serving(script) as server:
        async with upstream(server.url) as (up, fed):
            await up.send(INITIALIZE)
            await fed.wait_for(1)
            await up.send(INITIALIZED)
            await server.wait_for(3)
            assert up.listener is not None
            await asyncio.wait_for(up.listener, WAIT)  # it ends: given up
            gets = [s for s in server.seen if s.method == "GET"]
        assert len(gets) == MAX_RECONNECTS
