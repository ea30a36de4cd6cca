"""Functional tests of the relay: real aiohttp servers on port 0 (a scripted upstream and the
gateway), real sockets, no mocks."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from gateway.enforce.notice import content_item
from tests.relay_harness import (
    JSON_HEADERS,
    UPSTREAM_SID,
    input_required,
    one_event_upstream,
    running,
)
from tests.samples import PASSWORD_FORM

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{}}}'


async def test_json_response_is_forwarded_byte_exact() -> None:
    body = b'{ "jsonrpc" : "2.0", "id":7,\n "result": {"content": [], "z": 1.50} }'

    async def up(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.status == 200
        assert await resp.read() == body
        assert resp.headers["Content-Type"].startswith("application/json")


async def test_request_body_and_end_to_end_headers_reach_upstream() -> None:
    async def up(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=202, headers={"Mcp-Session-Id": UPSTREAM_SID})

    headers = {
        **JSON_HEADERS,
        "MCP-Protocol-Version": "2025-11-25",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "x",
        "Mcp-Param-Region": "eu",
        "Authorization": "Bearer t0k",
        "Last-Event-ID": "4:8",
        "Origin": "http://localhost:1234",
        "Keep-Alive": "timeout=5",
        "X-Custom": "kept",
        "Connection": "keep-alive, X-Custom-Hop",
        "X-Custom-Hop": "dropped",
        "Accept-Encoding": "gzip, br",
    }
    async with running(up) as h:
        sealed = (await h.initialize(extra={"Authorization": "Bearer t0k"}))["Mcp-Session-Id"]
        headers["Mcp-Session-Id"] = sealed
        resp = await h.session.post(h.mcp, data=CALL, headers=headers)
        assert resp.status == 202
        assert resp.headers["Mcp-Session-Id"] == sealed  # the client only ever sees the sealed id
        seen = h.seen[0]
        assert await seen.read() == CALL
        assert seen.headers["Mcp-Session-Id"] == UPSTREAM_SID  # the server only its own
        for name in (
            "MCP-Protocol-Version",
            "Mcp-Method",
            "Mcp-Name",
            "Mcp-Param-Region",
            "Authorization",
            "Last-Event-ID",
            "X-Custom",
            "Content-Type",
            "Accept",
        ):
            assert seen.headers[name] == headers[name], name
        assert "Origin" not in seen.headers
        assert "Keep-Alive" not in seen.headers
        assert "X-Custom-Hop" not in seen.headers
        assert seen.headers["Accept-Encoding"] == "identity"
        assert seen.headers["Host"] == h.upstream_url.split("/")[2]


async def test_sse_events_are_forwarded_as_they_arrive_and_byte_exact() -> None:
    first = b"id: 2:14\r\ndata: \r\nretry: 300\r\n\r\n"
    second = b': ping - 2026\r\n\r\nid: 2:15\r\nevent: message\r\ndata: {"jsonrpc":"2.0",'
    second += b'"method":"notifications/progress","params":{"progress":1}}\r\n\r\n'
    release = asyncio.Event()

    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(first)
        await asyncio.wait_for(release.wait(), 5)  # the client must see `first` before this
        await resp.write(second)
        return resp

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.headers["Content-Type"] == "text/event-stream"
        got = b""
        while len(got) < len(first):
            got += await asyncio.wait_for(resp.content.readany(), 5)
        assert got == first
        release.set()
        got += await asyncio.wait_for(resp.content.read(), 5)
        assert got == first + second


async def test_lf_and_cr_framed_streams_pass_unchanged() -> None:
    body = b'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n: c\r\r'

    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(len(body)):  # one byte at a time
            await resp.write(body[i : i + 1])
        return resp

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert await resp.read() == body


async def test_get_and_delete_are_forwarded() -> None:
    async def up(request: web.Request) -> web.StreamResponse:
        if request.method == "DELETE":
            return web.Response(status=200)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b": ping\r\n\r\n")
        return resp

    async with running(up) as h:
        session = await h.initialize()
        hdrs = {"Accept": "text/event-stream", "Mcp-Session-Id": session["Mcp-Session-Id"]}
        async with h.session.get(h.mcp, headers=hdrs) as resp:
            assert resp.status == 200
            assert await resp.read() == b": ping\r\n\r\n"
        async with h.session.delete(h.mcp, headers=hdrs) as resp:
            assert resp.status == 200
        assert [r.method for r in h.seen] == ["GET", "DELETE"]
        async with h.session.put(h.mcp, data=b"{}") as resp:
            assert resp.status == 405


async def test_upstream_status_and_error_bodies_pass_through() -> None:
    async def up(_: web.Request) -> web.Response:
        return web.Response(
            status=404,
            body=b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}',
            content_type="application/json",
        )

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.status == 404
        assert (await resp.json())["error"]["message"] == "Session not found"


async def test_non_json_error_pages_pass_through() -> None:
    async def up(_: web.Request) -> web.Response:
        return web.Response(status=400, text="Invalid Content-Type header")

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.status == 400
        assert await resp.text() == "Invalid Content-Type header"


# -- failures: the client always gets a well-formed answer -----------------------------------


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_upstream_down_gives_502_with_request_id() -> None:
    from aiohttp.test_utils import TestServer

    from gateway.policy.loader import load_policy
    from gateway.proxy.app import make_app
    from tests.relay_harness import DEFAULT_POLICY, TEST_KEYS, settings_for

    app = make_app(
        settings_for(f"http://127.0.0.1:{_dead_port()}/mcp"),
        load_policy(DEFAULT_POLICY),
        TEST_KEYS,
    )
    async with (
        TestServer(app, port=0) as gw,
        aiohttp.ClientSession() as session,
        session.post(gw.make_url("/mcp"), data=CALL, headers=JSON_HEADERS) as resp,
    ):
        assert resp.status == 502
        body = await resp.json()
        assert body["id"] == 7
        assert body["error"]["code"] == -31001


async def test_slow_upstream_gives_504_within_the_timeout() -> None:
    async def up(_: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response()

    async with running(up, timeouts={"response": 0.3}) as h:
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
            assert resp.status == 504
            body = await resp.json()
            assert body["id"] == 7
            assert body["error"]["code"] == -31002
        assert loop.time() - started < 2


async def test_stream_that_breaks_midway_ends_cleanly() -> None:
    event = b'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\r\n\r\n'

    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(event)
        await resp.write(b'data: {"trunc')
        assert request.transport is not None
        request.transport.abort()  # reset mid-event
        return resp

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.status == 200
        assert await asyncio.wait_for(resp.read(), 5) == event


async def test_stalled_stream_ends_after_idle_timeout() -> None:
    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b": hello\r\n\r\n")
        await asyncio.sleep(30)
        return resp

    async with (
        running(up, timeouts={"idle": 0.3}) as h,
        h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp,
    ):
        assert await asyncio.wait_for(resp.read(), 5) == b": hello\r\n\r\n"


async def test_client_disconnect_releases_the_upstream_within_one_second() -> None:
    ended = asyncio.Event()
    started = asyncio.Event()

    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b": open\r\n\r\n")
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            ended.set()  # cancelled when the gateway closes the upstream connection
        return resp

    async with running(up) as h:
        resp = await h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS)
        await asyncio.wait_for(started.wait(), 5)
        await resp.content.readany()
        resp.close()  # the client goes away
        await asyncio.wait_for(ended.wait(), 1.0)


# -- bad input from the client -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, -32700),
        (b"\xff\xfe{}", 400, -32700),
        (b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', 400, -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', 400, -32700),
        (b"[" * 5000 + b"]" * 5000, 400, -32700),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600),
        (b'{"hello":"world"}', 400, -32600),
    ],
)
async def test_bad_client_bodies_get_spec_shaped_errors(
    body: bytes, status: int, code: int
) -> None:
    async def up(_: web.Request) -> web.Response:
        raise AssertionError("must not reach the upstream")

    async with running(up) as h, h.session.post(h.mcp, data=body, headers=JSON_HEADERS) as resp:
        assert resp.status == status
        answer = await resp.json()
        assert answer["jsonrpc"] == "2.0"
        assert answer["id"] is None
        assert answer["error"]["code"] == code
        assert h.seen == []


async def test_oversized_client_body_gets_413() -> None:
    async def up(_: web.Request) -> web.Response:
        raise AssertionError("must not reach the upstream")

    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 5000 + b'"}}'
    async with (
        running(up, limits={"max_request_bytes": 4096}) as h,
        h.session.post(h.mcp, data=big, headers=JSON_HEADERS) as resp,
    ):
        assert resp.status == 413
        assert (await resp.json())["error"]["code"] == -32600


async def test_header_body_version_mismatch_is_rejected() -> None:
    async def up(_: web.Request) -> web.Response:
        raise AssertionError("must not reach the upstream")

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}},
        }
    )
    headers = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
    async with running(up) as h, h.session.post(h.mcp, data=body, headers=headers) as resp:
        assert resp.status == 400
        assert (await resp.json())["error"]["code"] == -32020


# -- bad input from the upstream: fail closed ---------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"{broken",
        b'{"jsonrpc":"2.0","id":7,"result":{},"result":{"inputRequests":{}}}',
        b'{"unexpected":"shape"}',
    ],
)
async def test_uninspectable_upstream_json_is_not_forwarded(body: bytes) -> None:
    async def up(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.status == 502
        answer = await resp.json()
        assert answer["id"] == 7
        assert answer["error"]["code"] == -31003


async def test_compressed_upstream_body_is_not_forwarded() -> None:
    async def up(_: web.Request) -> web.Response:
        return web.Response(
            body=b"\x1f\x8b...",
            headers={"Content-Encoding": "gzip"},
            content_type="application/json",
        )

    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.status == 502


@pytest.mark.parametrize(
    "bad",
    [
        b"data: {not json\r\n\r\n",
        b'data: {"jsonrpc":"2.0","id":1,"id":2,"method":"elicitation/create"}\r\n\r\n',
        b"data: \xff\xfe\r\n\r\n",
        b"data: " + b"x" * 5000 + b"\r\n\r\n",
    ],
)
async def test_uninspectable_sse_event_ends_the_stream_without_forwarding_it(bad: bytes) -> None:
    good = b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\r\n\r\n'
    after = b'data: {"jsonrpc":"2.0","id":7,"result":{}}\r\n\r\n'

    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(good + bad + after)
        return resp

    async with (
        running(up, limits={"max_event_bytes": 4096}) as h,
        h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp,
    ):
        assert await asyncio.wait_for(resp.read(), 5) == good


# -- DNS-rebinding protection of the gateway itself ------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example.com"}, 421),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Host": "localhost:9"}, 200),
        ({"Origin": "http://127.0.0.1:5173"}, 200),
    ],
)
async def test_loopback_listener_validates_host_and_origin(
    headers: dict[str, str], status: int
) -> None:
    async def up(_: web.Request) -> web.Response:
        return web.Response(
            body=b'{"jsonrpc":"2.0","id":7,"result":{}}', content_type="application/json"
        )

    async with (
        running(up) as h,
        h.session.post(h.mcp, data=CALL, headers={**JSON_HEADERS, **headers}) as resp,
    ):
        assert resp.status == status


async def test_health_and_readiness() -> None:
    async def up(_: web.Request) -> web.Response:
        return web.Response()

    async with running(up) as h:
        async with h.session.get(h.gateway_url + "/healthz") as resp:
            assert resp.status == 200
        async with h.session.get(h.gateway_url + "/readyz") as resp:
            assert resp.status == 200
            assert (await resp.json())["upstreams"]["default"]["reachable"] is True


# -- observation: every elicitation produces one elicitation.decision line -------------------------

FORM = {
    "message": "m",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


async def test_handshake_server_request_on_sse_is_observed() -> None:
    elicit = {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": FORM}

    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b"event: message\r\ndata: " + json.dumps(elicit).encode() + b"\r\n\r\n")
        return resp

    with capture_logs() as logs:
        async with running(up) as h:
            hdrs = await h.initialize()
            async with h.session.post(h.mcp, data=CALL, headers=hdrs) as resp:
                await resp.read()
    seen = [e for e in logs if e["event"] == "elicitation.decision"]
    assert len(seen) == 1
    assert seen[0]["carrier"] == "server-request"
    assert seen[0]["stream"] == "post"
    assert seen[0]["mode"] == "form"
    assert seen[0]["declared_modes"] == ["form"]
    assert seen[0]["fields"] == ["name"]
    assert seen[0]["client"] == "t"
    assert UPSTREAM_SID not in json.dumps(seen[0])


async def test_modern_input_required_json_is_observed() -> None:
    result = {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "resultType": "input_required",
            "inputRequests": {
                "a": {"method": "elicitation/create", "params": FORM},
                "b": {
                    "method": "elicitation/create",
                    "params": {"mode": "url", "message": "m", "url": "https://x.test/"},
                },
                "c": {"method": "sampling/createMessage", "params": {}},
            },
        },
    }

    async def up(_: web.Request) -> web.Response:
        return web.json_response(result)

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "x",
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
                },
            },
        }
    )
    headers = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
    with capture_logs() as logs:
        async with running(up) as h, h.session.post(h.mcp, data=body, headers=headers) as resp:
            assert resp.status == 200
    seen = [e for e in logs if e["event"] == "elicitation.decision"]
    assert [(e["carrier"], e["key"], e["mode"]) for e in seen] == [
        ("input-required", "a", "form"),
        ("input-required", "b", "url"),
    ]
    assert all(e["era"] == "modern" and e["transport"] == "json" for e in seen)
    assert seen[0]["declared_modes"] == ["url"]


# -- enforcement on the wire: replays, metrics ------------------------------------------------


async def test_blocked_request_is_answered_once_even_when_replayed_after_resumption() -> None:
    """The swallowed event's id still reaches the client (an id-only block), the server gets one
    decline, and a replay of the same event on a resumed GET stream is swallowed again without a
    second answer."""
    event = (
        b"id: 5:1\r\nevent: message\r\ndata: "
        + json.dumps(
            {"jsonrpc": "2.0", "id": 11, "method": "elicitation/create", "params": PASSWORD_FORM}
        ).encode()
        + b"\r\n\r\n"
    )
    answers: list[dict[str, Any]] = []

    async with running(one_event_upstream(event, answers)) as h:
        session = await h.initialize()
        async with h.session.post(h.mcp, data=CALL, headers=session) as resp:
            first = await resp.read()
        replay = {**session, "Accept": "text/event-stream", "Last-Event-ID": "5:0"}
        async with h.session.get(h.mcp, headers=replay) as resp:
            second = await resp.read()
    assert first == second == b"id: 5:1\r\n\r\n"  # the id moves on, nothing is dispatched
    assert answers == [{"jsonrpc": "2.0", "id": 11, "result": {"action": "decline"}}]


async def test_metrics_count_requests_decisions_and_reasons() -> None:
    event = (
        b"data: "
        + json.dumps(
            {"jsonrpc": "2.0", "id": 11, "method": "elicitation/create", "params": PASSWORD_FORM}
        ).encode()
        + b"\r\n\r\n"
    )

    async with running(one_event_upstream(event)) as h:
        session = await h.initialize()
        async with h.session.post(h.mcp, data=CALL, headers=session) as resp:
            await resp.read()
        async with h.session.get(h.gateway_url + "/metrics") as resp:
            text = await resp.text()
    assert (
        'gateway_elicitations_total{action="block",carrier="server-request",mode="form"} 1.0'
        in text
    )
    assert 'gateway_elicitation_reasons_total{reason="secret-field"} 1.0' in text
    assert 'gateway_requests_total{era="handshake",method="POST",status="2xx"} 2.0' in text
    assert "gateway_decision_seconds_count 1.0" in text
    assert "gateway_open_streams 0.0" in text


async def test_redirects_are_passed_to_the_client_not_followed() -> None:
    async def up(_: web.Request) -> web.Response:
        return web.Response(status=307, headers={"Location": "http://169.254.169.254/latest"})

    async with (
        running(up) as h,
        h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS, allow_redirects=False) as resp,
    ):
        assert resp.status == 307
        assert resp.headers["Location"] == "http://169.254.169.254/latest"
        assert len(h.seen) == 1  # the gateway did not follow it


async def test_several_upstreams_are_served_under_their_names() -> None:
    from aiohttp.test_utils import TestServer

    from gateway.policy.loader import load_policy
    from gateway.proxy.app import make_app
    from gateway.proxy.config import Settings
    from tests.relay_harness import DEFAULT_POLICY, TEST_KEYS

    def upstream_app(name: str) -> web.Application:
        async def answer(_: web.Request) -> web.Response:
            body = {"jsonrpc": "2.0", "id": 7, "result": {"server": name}}
            return web.json_response(body)

        app = web.Application()
        app.router.add_post("/mcp", answer)
        return app

    async with (
        TestServer(upstream_app("a"), port=0) as a,
        TestServer(upstream_app("b"), port=0) as b,
    ):
        settings = Settings.model_validate(
            {
                "upstreams": {
                    "alpha": {"url": str(a.make_url("/mcp"))},
                    "beta": {"url": str(b.make_url("/mcp"))},
                }
            }
        )
        app = make_app(settings, load_policy(DEFAULT_POLICY), TEST_KEYS)
        async with TestServer(app, port=0) as gw, aiohttp.ClientSession() as http:
            for name, expected in (("alpha", "a"), ("beta", "b")):
                async with http.post(
                    gw.make_url(f"/servers/{name}/mcp"), data=CALL, headers=JSON_HEADERS
                ) as resp:
                    assert (await resp.json())["result"] == {"server": expected}
            async with http.post(gw.make_url("/mcp"), data=CALL, headers=JSON_HEADERS) as resp:
                assert resp.status == 404  # no single upstream configured
            async with http.get(gw.make_url("/readyz")) as resp:
                report = await resp.json()
            assert report["upstreams"] == {
                "alpha": {"reachable": True},
                "beta": {"reachable": True},
            }


def test_aiohttp_uses_its_c_http_parser() -> None:
    """The pure-Python parser is slower and has had request-smuggling differences."""
    from aiohttp import http_parser

    assert http_parser.HttpRequestParser is http_parser.HttpRequestParserC


async def test_large_bodies_that_cannot_carry_an_elicitation_are_not_parsed() -> None:
    """Above 64 KiB, bytes without any elicitation marker pass unparsed (and byte-exact);
    with a marker they are parsed strictly as always."""
    tools = [{"name": f"t{i}", "description": "d" * 200} for i in range(400)]
    clean = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"tools": tools}}).encode()
    clean = clean[:-1] + b', "x": 1, "x": 2}'  # even a duplicate key: it cannot matter here
    risky = clean.replace(b'"t1"', b'"elicitation"')
    bodies = iter([clean, risky])

    async def up(_: web.Request) -> web.Response:
        return web.Response(body=next(bodies), content_type="application/json")

    async with running(up) as h:
        async with h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
            assert resp.status == 200
            assert await resp.read() == clean
        async with h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
            assert resp.status == 502  # the duplicate key is refused once it could matter


async def test_all_blocked_round_inside_an_sse_response_is_retried_into_the_same_stream() -> None:
    """2026, SSE: a progress notification, then a round whose only request is blocked. The
    gateway retries upstream itself (with a decline) and the client gets the final result on
    the same stream, under its own id, without ever seeing the blocked request."""
    retries: list[dict[str, Any]] = []

    async def up(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        if "inputResponses" in body["params"]:
            retries.append(body)
            return web.json_response(
                {
                    "jsonrpc": "2.0",
                    "id": body["id"],
                    "result": {"resultType": "complete", "content": []},
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
        result = input_required(body["id"], PASSWORD_FORM)
        for message in (progress, result):
            await resp.write(b"data: " + json.dumps(message).encode() + b"\r\n\r\n")
        return resp

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 41,
        "method": "tools/call",
        "params": {"name": "t", "arguments": {}, "_meta": meta},
    }
    headers = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
    async with running(up) as h, h.session.post(h.mcp, json=call, headers=headers) as resp:
        text = await resp.text()
    messages = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    assert [m.get("method") for m in messages] == ["notifications/progress", None]
    notice = "The elicitation gateway blocked a request from default for a password (secret-field)."
    assert messages[-1] == {  # the final result tells the user why (notify_user)
        "jsonrpc": "2.0",
        "id": 41,
        "result": {"resultType": "complete", "content": [content_item(notice)]},
    }
    [retry] = retries
    assert retry["id"] != 41
    assert retry["params"]["inputResponses"] == {"p": {"action": "decline"}}
    assert retry["params"]["requestState"] == "s1"


# -- large bodies: streamed while they cannot carry an elicitation ---------------------------

PAD = "x" * (96 * 1024)


def _large_result(tail: str) -> bytes:
    text = PAD + tail
    return json.dumps(
        {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}]}}
    ).encode()


async def _upstream_in_two_parts(
    body: bytes, first: int, client_has_bytes: asyncio.Event | None = None
) -> Any:
    async def up(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.content_length = len(body)
        await resp.prepare(request)
        await resp.write(body[:first])
        if client_has_bytes is not None:
            await asyncio.wait_for(client_has_bytes.wait(), 5)
        else:
            await asyncio.sleep(0.2)  # the gateway has forwarded the first part by now
        await resp.write(body[first:])
        await resp.write_eof()
        return resp

    return up


async def test_large_clean_body_is_streamed_before_the_upstream_finished() -> None:
    body = _large_result("the end") + b" " * 70_000
    got_bytes = asyncio.Event()
    up = await _upstream_in_two_parts(body, 80 * 1024, got_bytes)
    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert resp.status == 200
        assert resp.content_length == len(body)
        first = await asyncio.wait_for(resp.content.readexactly(64 * 1024), 5)
        got_bytes.set()  # only now does the upstream send the rest
        rest = await asyncio.wait_for(resp.read(), 5)
    assert first + rest == body


async def test_large_body_with_a_late_harmless_marker_arrives_byte_exact() -> None:
    body = _large_result("see the elicitation chapter of the MCP spec")
    up = await _upstream_in_two_parts(body, 80 * 1024)
    async with running(up) as h, h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp:
        assert await asyncio.wait_for(resp.read(), 5) == body


@pytest.mark.parametrize(
    "late",
    [
        # a -32042 error whose blocked URL comes after 96 KiB of message: must not be delivered
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "error": {
                    "code": -32042,
                    "message": PAD,
                    "data": {
                        "elicitations": [
                            {
                                "mode": "url",
                                "elicitationId": "e1",
                                "url": "http://paypa1-login.example/verify",
                                "message": "Verify your account",
                            }
                        ]
                    },
                },
            }
        ).encode(),
        # unparseable once the marker shows up
        _large_result("").replace(b'"}]}}', b'"}]}, "elicitation": NaN}'),
    ],
    ids=["blocked-url-elicitation", "unparseable"],
)
async def test_large_body_that_turns_out_to_need_a_change_is_cut_off(late: bytes) -> None:
    up = await _upstream_in_two_parts(late, 80 * 1024)
    with capture_logs() as logs:
        async with (
            running(up) as h,
            h.session.post(h.mcp, data=CALL, headers=JSON_HEADERS) as resp,
        ):
            assert resp.status == 200  # the head and the clean first part went out at once
            with pytest.raises(aiohttp.ClientPayloadError):
                await asyncio.wait_for(resp.read(), 5)
    assert any(
        e["event"] == "upstream.protocol_error" and "after streaming" in e["error"] for e in logs
    )
