"""Enforcement through the real relay (issue 9): replayed answers, undeclared modes, answers with
unsealed ids, and the policy snapshot of a stream. Real aiohttp servers on port 0 (a scripted
upstream and the gateway), real sockets, no mocks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.enforce.notice import content_item
from gateway.policy.loader import load_policy, parse_policy
from gateway.proxy.app import make_app
from gateway.proxy.reload import reload_policy
from tests.relay_harness import (
    DEFAULT_POLICY,
    INIT,
    INIT_RESULT,
    JSON_HEADERS,
    TEST_KEYS,
    UPSTREAM_SID,
    one_event_upstream,
    running,
    settings_for,
)
from tests.samples import GOOD_URL, PASSWORD_FORM

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{}}}'
CANARY = "AKIAQYLPMN5HFIQR7XQZ"
NOTICE = "The elicitation gateway blocked a request from default for a password (secret-field)."
PROFILE = {
    "mode": "form",
    "message": "Profile needed",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
PASSWORD = PASSWORD_FORM
URL = GOOD_URL


def _event(rid: int, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": params}
    return b"event: message\r\ndata: " + json.dumps(message).encode() + b"\r\n\r\n"


def _messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


class Upstream:
    """A scripted handshake-era server: a POST of a request answers with ``events`` on SSE; a
    POST of a response (an elicitation answer) is recorded and answered 202."""

    def __init__(self, *events: bytes) -> None:
        self.events = events
        self.answers: list[dict[str, Any]] = []

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        if "method" not in body:
            self.answers.append(body)
            return web.Response(status=202)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for event in self.events:
            await resp.write(event)
        return resp


async def test_replayed_answer_is_forwarded_once_and_the_replay_gets_202() -> None:
    up = Upstream(_event(11, PROFILE))
    async with running(up) as h:
        session = await h.initialize()
        async with h.session.post(h.mcp, data=CALL, headers=session) as resp:
            [request] = _messages(await resp.text())
        token = request["id"]
        assert token.startswith("gq1.")
        answer = {
            "jsonrpc": "2.0",
            "id": token,
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }
        statuses = []
        for _ in range(3):
            async with h.session.post(h.mcp, json=answer, headers=session) as resp:
                statuses.append(resp.status)
                assert await resp.read() == b""
    assert statuses == [202, 202, 202]
    assert up.answers == [
        {"jsonrpc": "2.0", "id": 11, "result": {"action": "accept", "content": {"name": "Ada"}}}
    ]


async def test_undeclared_mode_reaches_the_server_as_the_clients_own_error() -> None:
    """The harness client declares form mode only; a URL elicitation is never shown and the
    server gets the -32602 a form-only client answers, not a decline."""
    up = Upstream(_event(12, URL))
    async with running(up) as h:
        session = await h.initialize()
        async with h.session.post(h.mcp, data=CALL, headers=session) as resp:
            assert _messages(await resp.text()) == []
    assert up.answers == [
        {
            "jsonrpc": "2.0",
            "id": 12,
            "error": {
                "code": -32602,
                "message": "Client does not support URL-mode elicitation requests",
            },
        }
    ]


async def test_answers_with_unsealed_ids_are_checked_and_other_answers_pass() -> None:
    up = Upstream()
    roots = json.dumps(
        {"jsonrpc": "2.0", "id": 5, "result": {"roots": [{"uri": "file:///srv", "name": "x"}]}}
    ).encode()
    async with running(up) as h:
        session = await h.initialize()
        smuggled = {
            "jsonrpc": "2.0",
            "id": 4,
            "result": {"action": "accept", "content": {"note": CANARY}},
        }
        async with h.session.post(h.mcp, json=smuggled, headers=session) as resp:
            assert resp.status == 202
        async with h.session.post(h.mcp, data=roots, headers=session) as resp:
            assert resp.status == 202
        seen = [await r.read() for r in h.seen]
    assert json.loads(seen[0]) == {"jsonrpc": "2.0", "id": 4, "result": {"action": "decline"}}
    assert seen[1] == roots  # a roots/list answer passes byte-exact
    assert CANARY not in json.dumps(up.answers[0])


@contextlib.asynccontextmanager
async def _serve(
    handler: Any, policy_path: Path, audit: list[dict[str, Any]]
) -> AsyncIterator[tuple[str, web.Application]]:
    async def upstream(request: web.Request) -> web.StreamResponse:
        if request.method == "POST" and b'"initialize"' in await request.read():
            return web.Response(
                body=INIT_RESULT,
                content_type="application/json",
                headers={"Mcp-Session-Id": UPSTREAM_SID},
            )
        result: web.StreamResponse = await handler(request)
        return result

    up_app = web.Application()
    up_app.router.add_post("/mcp", upstream)
    async with TestServer(up_app, port=0) as up:
        settings = settings_for(str(up.make_url("/mcp")), policy=str(policy_path))
        app = make_app(settings, load_policy(policy_path), TEST_KEYS, audit.append)
        async with TestServer(app, port=0) as gw:
            yield str(gw.make_url("/mcp")), app


async def test_policy_reload_between_two_events_of_one_stream_does_not_change_its_policy(
    tmp_path: Path,
) -> None:
    """A stream keeps the policy it started with: a reload to shadow mode between two events
    does not let the second (blocked) one through; the next request uses the new policy."""
    policy_path = tmp_path / "policy.yaml"
    shutil.copy(DEFAULT_POLICY, policy_path)
    first_sent, reloaded = asyncio.Event(), asyncio.Event()
    up = Upstream()
    audit: list[dict[str, Any]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        if "method" not in body:
            up.answers.append(body)
            return web.Response(status=202)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(_event(21, PROFILE))
        first_sent.set()
        await asyncio.wait_for(reloaded.wait(), 5)
        await resp.write(_event(22, PASSWORD))
        return resp

    async with aiohttp.ClientSession() as http, _serve(handler, policy_path, audit) as (url, app):
        async with http.post(url, data=INIT, headers=JSON_HEADERS) as resp:
            sid = resp.headers["Mcp-Session-Id"]
        headers = {**JSON_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        async with http.post(url, data=CALL, headers=headers) as resp:
            await asyncio.wait_for(first_sent.wait(), 5)
            shutil.copy("policies/audit-only.yaml", policy_path)
            assert reload_policy(app)
            reloaded.set()
            messages = _messages(await resp.text())
        assert [m["params"]["message"] for m in messages] == ["Profile needed"]
        assert up.answers == [{"jsonrpc": "2.0", "id": 22, "result": {"action": "decline"}}]
        decisions = [r for r in audit if r["event"] == "elicitation.decision"]
        assert [r["action"] for r in decisions] == ["allow", "block"]
        assert len({r["policy_revision"] for r in decisions}) == 1
        # A request that starts after the reload is judged by the new (shadow) policy.
        async with http.post(url, data=CALL, headers=headers) as resp:
            messages = _messages(await resp.text())
        assert [m["params"]["message"] for m in messages] == ["Profile needed", "Sign in again"]


# -- the gateway's own 2026 retry: its answer is carried out like any other ----------------

MODERN = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


@pytest.mark.parametrize("answer_as", ["sse", "json"])
async def test_a_blocked_request_in_the_answer_to_the_gateways_retry_is_declined_upstream(
    answer_as: str,
) -> None:
    """2026 on an SSE stream: every input request is blocked, the gateway retries upstream
    itself, and the server answers that retry with a blocked server request (on a stream, or
    in a JSON body). Whatever the framing, the server gets the decline on the client's behalf
    (on this path the reply used to be dropped), and the client never sees the request."""
    replies: list[dict[str, Any]] = []
    retries: list[dict[str, Any]] = []
    blocked = {"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": PASSWORD}

    async def up(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        if "method" not in body:
            replies.append(body)
            return web.Response(status=202)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        if "inputResponses" in body["params"]:
            retries.append(body)
            if answer_as == "json":
                return web.json_response(blocked)
            await resp.prepare(request)
            await resp.write(b"data: " + json.dumps(blocked).encode() + b"\r\n\r\n")
            done = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}
            await resp.write(b"data: " + json.dumps(done).encode() + b"\r\n\r\n")
            return resp
        await resp.prepare(request)
        result = {
            "jsonrpc": "2.0",
            "id": body["id"],
            "result": {
                "resultType": "input_required",
                "requestState": "s1",
                "inputRequests": {"p": {"method": "elicitation/create", "params": PASSWORD}},
            },
        }
        await resp.write(b"data: " + json.dumps(result).encode() + b"\r\n\r\n")
        return resp

    call = {"jsonrpc": "2.0", "id": 41, "method": "tools/call"}
    call["params"] = {"name": "t", "arguments": {}, "_meta": META}
    async with running(up) as h, h.session.post(h.mcp, json=call, headers=MODERN) as resp:
        text = await asyncio.wait_for(resp.text(), 5)
    assert len(retries) == 1
    assert replies == [{"jsonrpc": "2.0", "id": 5, "result": {"action": "decline"}}]
    assert '"password"' not in text  # the field name: the notice says only "a password"
    [message] = _messages(text)
    assert message["id"] == 41
    if answer_as == "sse":  # the user is told why (notify_user)
        two = NOTICE.replace("a request", "2 requests")  # the first round's and the retry's
        assert message["result"] == {"content": [content_item(two)]}
    else:  # a server request never belongs in the body answering the client's own request
        assert message["error"]["code"] == -31003


# -- telling the user why (notify_user) ------------------------------------------------------


async def test_a_blocked_call_ends_with_the_notice_in_its_result() -> None:
    """Handshake era: the blocked request never reaches the client, the server gets the
    decline, and the call's result (on the same stream) carries one more text item."""
    done = {"jsonrpc": "2.0", "id": 7, "result": {"content": [], "structuredContent": {"n": 1}}}
    tail = b"event: message\r\ndata: " + json.dumps(done).encode() + b"\r\n\r\n"
    up = Upstream(_event(11, PASSWORD), tail)
    async with running(up) as h:
        session = await h.initialize()
        async with h.session.post(h.mcp, data=CALL, headers=session) as resp:
            text = await resp.text()
    assert up.answers == [{"jsonrpc": "2.0", "id": 11, "result": {"action": "decline"}}]
    [message] = _messages(text)
    assert message == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [content_item(NOTICE)], "structuredContent": {"n": 1}},
    }


async def test_an_undeclared_mode_alone_leaves_the_result_byte_exact() -> None:
    done = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
    tail = b"event: message\r\ndata: " + json.dumps(done).encode() + b"\r\n\r\n"
    up = Upstream(_event(12, URL), tail)
    async with running(up) as h:
        session = await h.initialize()
        async with h.session.post(h.mcp, data=CALL, headers=session) as resp:
            assert await resp.read() == tail


async def test_a_block_on_the_get_stream_becomes_a_warning_notification() -> None:
    event = _event(11, PASSWORD).replace(b"event: message", b"id: 9:1\r\nevent: message")

    async with running(one_event_upstream(event)) as h:
        session = await h.initialize()
        get = {**session, "Accept": "text/event-stream"}
        async with h.session.get(h.mcp, headers=get) as resp:
            text = await resp.text()
    assert "elicitation/create" not in text and '"password"' not in text
    assert _messages(text) == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "logger": "elicitation-gateway", "data": NOTICE},
        }
    ]
    assert text.endswith("id: 9:1\r\n\r\n")  # the id still moves past the swallowed event


async def test_notify_user_false_tells_nothing() -> None:
    raw = Path(DEFAULT_POLICY).read_bytes() + b"\nnotify_user: false\n"
    quiet = parse_policy(raw, "quiet.yaml")
    done = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
    tail = b"event: message\r\ndata: " + json.dumps(done).encode() + b"\r\n\r\n"
    up = Upstream(_event(11, PASSWORD), tail)
    async with running(up, policy=quiet) as h:
        session = await h.initialize()
        async with h.session.post(h.mcp, data=CALL, headers=session) as resp:
            assert await resp.read() == tail


async def test_a_partial_2026_round_is_told_in_the_result_of_the_clients_retry() -> None:
    """One input request blocked, one left: the client answers the one left in a call of its
    own, and that call's result tells the user (the ``gr1.`` token carried the block)."""

    async def up(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        if "inputResponses" in body["params"]:
            assert body["params"]["inputResponses"]["bad"] == {"action": "decline"}
            done = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": done})
        requests = {
            "ok": {"method": "elicitation/create", "params": PROFILE},
            "bad": {"method": "elicitation/create", "params": PASSWORD},
        }
        result = {"resultType": "input_required", "requestState": "s1", "inputRequests": requests}
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result})

    call = {"jsonrpc": "2.0", "id": 41, "method": "tools/call"}
    call["params"] = {"name": "t", "arguments": {}, "_meta": META}
    async with running(up) as h:
        async with h.session.post(h.mcp, json=call, headers=MODERN) as resp:
            first = await resp.json()
        assert list(first["result"]["inputRequests"]) == ["ok"]
        assert "gateway" not in json.dumps(first)  # no notice yet: the call goes on
        retry = json.loads(json.dumps(call))
        retry["id"] = 42
        retry["params"]["inputResponses"] = {"ok": {"action": "decline"}}
        retry["params"]["requestState"] = first["result"]["requestState"]
        async with h.session.post(h.mcp, json=retry, headers=MODERN) as resp:
            final = await resp.json()
    assert final == {
        "jsonrpc": "2.0",
        "id": 42,
        "result": {
            "resultType": "complete",
            "content": [{"type": "text", "text": "ok"}, content_item(NOTICE)],
        },
    }
