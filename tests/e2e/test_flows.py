"""End-to-end elicitation flows between a real SDK client and the real demo upstream (SDK server),
each run directly and through the gateway with identical expected outcomes.

One upstream and one gateway per module; every client is its own subprocess
(tests/peers/client.py). Through the gateway, each flow also checks that the gateway wrote the
audit lines the flow must produce: one ``elicitation.decision`` per elicitation, one
``elicitation.answer`` per answer, ``elicitation.complete`` per completion notification.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.peers.modes import ERA, LEGACY, MODERN, MODES, VERSION
from tests.peers.procs import (
    ClientWorker,
    Peer,
    read_log_events,
    run_client,
    start_client_worker,
    start_gateway,
    start_upstream,
)

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

LOG_WAIT = 5.0
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=20)
# Extra `gateway serve` arguments (e.g. ("--policy", path)); the default policy must let every
# clean flow below through unchanged.
GATEWAY_ARGS: tuple[str, ...] = ()

Event = dict[str, Any]
AUDIT_EVENTS = ("elicitation.decision", "elicitation.answer", "elicitation.complete")


# --- peers ----------------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[Peer]:
    """The demo upstream with an event store (resumption) and a short SSE retry."""
    async with start_upstream(event_store=True, retry_interval=200) as peer:
        yield peer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(upstream: Peer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Peer]:
    log_path = tmp_path_factory.mktemp("gateway") / "gateway.log"
    async with start_gateway(upstream.url, *GATEWAY_ARGS, log_path=log_path) as peer:
        yield peer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clients() -> AsyncIterator[ClientWorker]:
    """One SDK client process running a fresh ``Client`` per flow (import once, not per flow)."""
    async with start_client_worker() as worker:
        yield worker


@dataclass(frozen=True)
class Target:
    """Where the client connects: the upstream itself or the gateway in front of it."""

    name: str
    url: str
    log_path: Path | None
    clients: ClientWorker

    def log_mark(self) -> int:
        return len(read_log_events(self.log_path)) if self.log_path is not None else 0

    async def expect_seen(self, mark: int, expected: Sequence[Mapping[str, Any]]) -> None:
        """Through the gateway: every ``expected`` dict is a subset of some audit line
        (``AUDIT_EVENTS``) logged after ``mark`` (no expectation means: no such line)."""
        if self.log_path is None:
            return
        deadline = time.monotonic() + LOG_WAIT
        while True:
            seen = [
                e for e in read_log_events(self.log_path)[mark:] if e.get("event") in AUDIT_EVENTS
            ]
            missing = [x for x in expected if not any(_subset(x, e) for e in seen)]
            if not expected:
                assert seen == [], f"unexpected elicitations: {seen}"
                return
            if not missing:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"gateway log lacks {missing}; audit lines: {seen}")
            await asyncio.sleep(0.05)

    async def count_seen(self, mark: int, pattern: Mapping[str, Any]) -> int:
        assert self.log_path is not None
        await asyncio.sleep(0.2)
        return sum(
            1
            for e in read_log_events(self.log_path)[mark:]
            if e.get("event") in AUDIT_EVENTS and _subset(pattern, e)
        )


def _subset(expected: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    return all(event.get(k) == v for k, v in expected.items())


@pytest.fixture(params=["direct", "gateway"])
def target(request: pytest.FixtureRequest, upstream: Peer, clients: ClientWorker) -> Target:
    if request.param == "direct":
        return Target("direct", upstream.url, None, clients)
    gateway: Peer = request.getfixturevalue("gateway")
    return Target("gateway", gateway.url, gateway.stdout_path, clients)


def normalise(events: list[Event]) -> list[Event]:
    """Sort runs of consecutive ``elicit`` events (2026 callbacks of one round run concurrently)."""
    out: list[Event] = []
    run: list[Event] = []
    for event in [*events, {"event": "end"}]:
        if event["event"] == "elicit":
            run.append(event)
            continue
        out += sorted(run, key=lambda e: json.dumps(e, sort_keys=True))
        run = []
        if event["event"] != "end":
            out.append(event)
    return out


async def flow(
    target: Target, mode: str, expected_seen: Sequence[Mapping[str, Any]], **client: Any
) -> list[Event]:
    """Run the SDK client once against ``target`` and return its normalised event lines."""
    mark = target.log_mark()
    events = normalise(await target.clients.run(target.url, mode, **client))
    await target.expect_seen(mark, expected_seen)
    return events


def protocol(mode: str) -> Event:
    return {"event": "protocol", "version": VERSION[mode]}


def form(message: str, fields: list[str]) -> Event:
    return {"event": "elicit", "mode": "form", "message": message, "fields": fields, "url": None}


def url_elicit(message: str, url: str) -> Event:
    return {"event": "elicit", "mode": "url", "message": message, "fields": [], "url": url}


def result(text: str, *, is_error: bool = False) -> Event:
    return {"event": "result", "isError": is_error, "text": text}


def described(mode: str, key: str, action: str, content: Any, state: str | None) -> str:
    text = f"{ERA[mode]}: key={key} action={action} content={json.dumps(content, sort_keys=True)}"
    return f"{text} state={state}" if mode == MODERN and state is not None else text


PROFILE = {"age": 36, "name": "name-value"}


def asked(mode: str, *, mode_: str, transport: str = "json", stream: str = "post") -> Event:
    """The gateway's ``elicitation.decision`` for the server's question in ``mode``'s era."""
    decision = "elicitation.decision"
    if mode == LEGACY:
        return {
            "event": decision,
            "carrier": "server-request",
            "era": "handshake",
            "mode": mode_,
            "stream": stream,
        }
    return {
        "event": decision,
        "carrier": "input-required",
        "era": "modern",
        "mode": mode_,
        "transport": transport,
    }


def answered(mode: str) -> Event:
    if mode == LEGACY:
        return {"event": "elicitation.answer", "carrier": "answer", "era": "handshake"}
    return {"event": "elicitation.answer", "carrier": "input-response", "era": "modern"}


# --- flows in both eras (the two modes run concurrently: client start-up dominates the time) ---


async def both_modes(check: Callable[[str], Awaitable[None]]) -> None:
    await asyncio.gather(*(check(mode) for mode in MODES))


async def test_no_elicitation_passes_untouched(target: Target) -> None:
    async def check(mode: str) -> None:
        mark = target.log_mark()
        if mode == LEGACY:  # once per target, the one-shot client process (its command line)
            events = await run_client(target.url, mode, tool="echo", args={"text": "hello"})
        else:
            events = await target.clients.run(target.url, mode, tool="echo", args={"text": "hello"})
        await target.expect_seen(mark, [])
        assert events == [protocol(mode), result("echo: hello")]

    await both_modes(check)


async def test_form_elicitation_accept(target: Target) -> None:
    async def check(mode: str) -> None:
        events = await flow(
            target,
            mode,
            [asked(mode, mode_="form"), answered(mode)],
            tool="ask_form",
            args={"topic": "billing"},
        )
        assert events == [
            protocol(mode),
            form("Profile needed for billing", ["age", "name"]),
            result(described(mode, "profile", "accept", PROFILE, "ask_form:round1:billing")),
        ]

    await both_modes(check)


@pytest.mark.parametrize("answer", ["decline", "cancel"])
async def test_form_elicitation_decline_and_cancel(target: Target, answer: str) -> None:
    async def check(mode: str) -> None:
        events = await flow(
            target,
            mode,
            [asked(mode, mode_="form"), answered(mode)],
            tool="ask_form",
            args={"topic": "travel"},
            answer=answer,
        )
        assert events == [
            protocol(mode),
            form("Profile needed for travel", ["age", "name"]),
            result(described(mode, "profile", answer, None, "ask_form:round1:travel")),
        ]

    await both_modes(check)


async def test_form_elicitation_client_error(target: Target) -> None:
    """The client's callback fails: handshake POSTs a JSON-RPC error that the tool re-raises;
    2026 aborts the call locally (no retry, so no input-response)."""

    async def check(mode: str) -> None:
        seen = [asked(mode, mode_="form")]
        events = await flow(
            target, mode, seen, tool="ask_form", args={"topic": "tax"}, answer="error"
        )
        assert events == [
            protocol(mode),
            form("Profile needed for tax", ["age", "name"]),
            {"event": "error", "code": -32600, "message": "Client refused the elicitation"},
        ]

    await both_modes(check)


async def test_url_elicitation(target: Target) -> None:
    async def check(mode: str) -> None:
        expected_seen = [asked(mode, mode_="url"), answered(mode)]
        if mode == LEGACY:
            expected_seen.append({"event": "elicitation.complete", "era": "handshake"})
        events = await flow(target, mode, expected_seen, tool="ask_url")
        assert events == [
            protocol(mode),
            url_elicit("Connect your Example account", "https://example.com/connect?x=1"),
            result(described(mode, "connect", "accept", None, "ask_url:round1")),
        ]

    await both_modes(check)


async def test_url_elicitation_required_error(target: Target) -> None:
    # -32042 is handshake-era, but SDK 2.3.0 also emits it in 2026 requests (protocol.md §3.4).
    async def check(mode: str) -> None:
        seen = {
            "event": "elicitation.decision",
            "carrier": "url-required-error",
            "era": ERA[mode],
            "mode": "url",
        }
        events = await flow(target, mode, [seen], tool="url_required")
        assert events == [
            protocol(mode),
            {"event": "error", "code": -32042, "message": "URL elicitation required"},
        ]

    await both_modes(check)


async def test_progress_then_form_over_sse(target: Target) -> None:
    progress = {"event": "progress", "progress": 0.5, "total": 1.0, "message": "thinking"}
    question = form("Profile needed", ["age", "name"])

    async def check(mode: str) -> None:
        events = await flow(
            target,
            mode,
            [asked(mode, mode_="form", transport="sse"), answered(mode)],
            tool="progress_form",
            progress=True,
        )
        final = result(described(mode, "profile", "accept", PROFILE, "progress:round1"))
        if mode == LEGACY:
            assert events == [protocol(mode), progress, question, final]
        else:  # one progress notification per round (initial request and retry)
            assert events == [protocol(mode), progress, question, progress, final]

    await both_modes(check)


async def test_two_questions(target: Target) -> None:
    mark = target.log_mark()

    async def check(mode: str) -> None:
        events = await flow(
            target, mode, [asked(mode, mode_="form"), answered(mode)], tool="ask_two"
        )
        first = described(mode, "first", "accept", {"color": "color-value"}, None)
        second = described(mode, "second", "accept", {"size": 36}, None)
        text = f"{first} | {second}"
        if mode == MODERN:  # both answered in one round, one state for the round
            text += " state=ask_two:round1"
        assert events == [
            protocol(mode),
            form("Your favourite colour?", ["color"]),
            form("Your shoe size?", ["size"]),
            result(text),
        ]

    await both_modes(check)
    if target.log_path is not None:
        for mode in MODES:
            assert await target.count_seen(mark, asked(mode, mode_="form")) == 2


async def test_resolver_style_elicitation(target: Target) -> None:
    async def check(mode: str) -> None:
        events = await flow(target, mode, [asked(mode, mode_="form")], tool="ask_resolved")
        assert events == [
            protocol(mode),
            form("Profile needed (resolver)", ["age", "name"]),
            result(f"resolved: {json.dumps(PROFILE, sort_keys=True)}"),
        ]

    await both_modes(check)


async def test_list_prompt_and_resource(target: Target) -> None:
    async def check(mode: str) -> None:
        listed, read = await asyncio.gather(
            flow(target, mode, [], list_all=True, prompt="greeting", args={"name": "Ada"}),
            flow(target, mode, [], read="demo://items/7"),
        )
        assert listed[0] == protocol(mode)
        assert listed[1]["event"] == "list"
        assert {"ask_form", "ask_url", "demo_password", "echo"} <= set(listed[1]["tools"])
        assert listed[1]["prompts"] == ["greeting", "summary"]
        assert listed[1]["resources"] == ["demo://readme"]
        assert listed[2:] == [result("Say hello to Ada.")]
        assert read == [protocol(mode), result(json.dumps({"id": "7", "name": "Item 7"}))]

    await both_modes(check)


# --- handshake era only ----------------------------------------------------------------------------


async def test_resumption_over_get_with_last_event_id(target: Target) -> None:
    """polling_form closes the POST stream; the question arrives on the resumed GET stream."""
    events = await flow(
        target,
        LEGACY,
        [asked(LEGACY, mode_="form", stream="get"), answered(LEGACY)],
        tool="polling_form",
    )
    assert events == [
        protocol(LEGACY),
        form("Profile needed", ["age", "name"]),
        result(described(LEGACY, "profile", "accept", PROFILE, None)),
    ]


# --- 2026-07-28 raw HTTP ----------------------------------------------------------------------------


def _modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def _meta(caps: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "e2e-raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": dict(
            caps if caps is not None else {"elicitation": {"form": {}, "url": {}}}
        ),
    }


async def _post(
    http: aiohttp.ClientSession, url: str, body: Mapping[str, Any], headers: Mapping[str, str]
) -> tuple[int, Event]:
    async with http.post(url, json=body, headers=dict(headers)) as response:
        return response.status, await response.json(content_type=None)


async def test_server_discover(target: Target) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": _meta()}}
    async with aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http:
        status, reply = await _post(http, target.url, body, _modern_headers("server/discover"))
    assert status == 200
    assert reply["id"] == 1
    assert reply["result"]["resultType"] == "complete"
    assert reply["result"]["supportedVersions"] == [MODERN]
    assert reply["result"]["capabilities"]["tools"] == {"listChanged": True}


async def test_request_state_round_trip(target: Target) -> None:
    """The server's sealed requestState comes back to it intact; a tampered one is refused."""
    mark = target.log_mark()
    call = {"name": "ask_form", "arguments": {"topic": "billing"}}
    headers = _modern_headers("tools/call", "ask_form")
    async with aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http:
        first_body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        status, first = await _post(
            http, target.url, {**first_body, "params": {**call, "_meta": _meta()}}, headers
        )
        assert status == 200
        assert first["result"]["resultType"] == "input_required"
        request = first["result"]["inputRequests"]["profile"]
        assert request["method"] == "elicitation/create"
        assert request["params"]["mode"] == "form"
        token = first["result"]["requestState"]
        assert isinstance(token, str)
        assert "ask_form:round1" not in token  # sealed, not plaintext

        def retry(state: str, rid: int) -> dict[str, Any]:
            params = {
                **call,
                "inputResponses": {"profile": {"action": "accept", "content": PROFILE}},
                "requestState": state,
                "_meta": _meta(),
            }
            return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

        status, done = await _post(http, target.url, retry(token, 2), headers)
        assert status == 200
        assert done["result"]["resultType"] == "complete"
        text = done["result"]["content"][0]["text"]
        assert text == described(MODERN, "profile", "accept", PROFILE, "ask_form:round1:billing")

        tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        status, refused = await _post(http, target.url, retry(tampered, 3), headers)
        assert status == 400
        assert refused["error"]["code"] == -32602
    await target.expect_seen(mark, [asked(MODERN, mode_="form"), answered(MODERN)])


async def test_subscriptions_listen_acknowledged(target: Target) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": _meta()},
    }
    headers = _modern_headers("subscriptions/listen")
    async with (
        aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http,
        http.post(target.url, json=body, headers=headers) as response,
    ):
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        data = await asyncio.wait_for(_first_sse_data(response), 10)
    message = json.loads(data)
    assert message["method"] == "notifications/subscriptions/acknowledged"
    assert message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    assert message["params"]["notifications"]["toolsListChanged"] is True


async def _first_sse_data(response: aiohttp.ClientResponse) -> str:
    """The data of the first non-empty SSE event (pings and priming events are skipped)."""
    data: list[str] = []
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data and any(data):
            return "\n".join(data)
        elif line == "":
            data = []
    raise AssertionError("SSE stream ended without an event")
