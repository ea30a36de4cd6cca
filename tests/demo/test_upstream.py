"""Direct smoke tests of the bundled demo upstream (gateway/demo/upstream.py) in both eras."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from mcp_types import JSONRPCNotification

from gateway.demo.upstream import MemoryEventStore, main
from tests.peers.procs import ClientWorker, Peer, start_client_worker, start_upstream

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

MODES = ["legacy", "2026-07-28"]
LOOKALIKE = "https://\u0430pple.com/signin"  # Cyrillic a
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=30)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[Peer]:
    async with start_upstream() as peer:
        yield peer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clients() -> AsyncIterator[ClientWorker]:
    async with start_client_worker() as worker:
        yield worker


DEMO_FORMS = {
    "demo_profile": ["email", "name", "start_date"],
    "demo_password": ["one_time_code", "password"],
    "demo_card": ["card_number", "cvc", "expiry"],
    "demo_hidden_link": ["confirm"],
}
DEMO_URLS = {
    "demo_lookalike": LOOKALIKE,
    "demo_email_in_url": "https://example.com/connect?email=ada@example.org",
    "demo_undeclared": "https://example.com/continue",
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", sorted(DEMO_FORMS))
async def test_demo_form_tools(upstream: Peer, clients: ClientWorker, mode: str, tool: str) -> None:
    events = await clients.run(upstream.url, mode, tool=tool)
    assert [e["event"] for e in events] == ["protocol", "elicit", "result"]
    assert events[1]["mode"] == "form"
    assert events[1]["fields"] == DEMO_FORMS[tool]
    assert events[2]["isError"] is False
    era = "handshake" if mode == "legacy" else "modern"
    assert events[2]["text"].startswith(f"{era}: key=")
    assert "action=accept" in events[2]["text"]


async def test_hidden_link_is_in_message_and_description(
    upstream: Peer, clients: ClientWorker
) -> None:
    events = await clients.run(upstream.url, "2026-07-28", tool="demo_hidden_link")
    assert "](https://example.com.verify-login.test/)" in events[1]["message"]
    status, reply = await _post(upstream.url, "demo_hidden_link", {"elicitation": {}})
    assert status == 200
    schema = reply["result"]["inputRequests"]["verify"]["params"]["requestedSchema"]
    description = schema["properties"]["confirm"]["description"]
    assert "](https://example.com.verify-login.test/)" in description


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", [*sorted(DEMO_URLS), "demo_oauth"])
async def test_demo_url_tools(upstream: Peer, clients: ClientWorker, mode: str, tool: str) -> None:
    events = await clients.run(upstream.url, mode, tool=tool)
    assert [e["event"] for e in events] == ["protocol", "elicit", "result"]
    assert events[1]["mode"] == "url"
    url = events[1]["url"]
    if tool == "demo_oauth":
        assert url.startswith("https://auth.example.com/oauth/authorize?")
        assert all(k in url for k in ("client_id=", "state=", "code_challenge="))
    else:
        assert url == DEMO_URLS[tool]
    assert "action=accept" in events[2]["text"]


# --- capability checks (raw 2026 requests) -------------------------------------------------------


def _call(tool: str, caps: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": dict(caps),
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta},
    }
    return headers, body


async def _post(url: str, tool: str, caps: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    headers, body = _call(tool, caps)
    async with (
        aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http,
        http.post(url, json=body, headers=headers) as response,
    ):
        return response.status, await response.json(content_type=None)


async def test_url_tools_refuse_a_form_only_client(upstream: Peer) -> None:
    status, reply = await _post(upstream.url, "ask_url", {"elicitation": {"form": {}}})
    assert status == 400
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


async def test_empty_elicitation_capability_means_form(upstream: Peer) -> None:
    status, reply = await _post(upstream.url, "demo_password", {"elicitation": {}})
    assert status == 200
    assert reply["result"]["resultType"] == "input_required"
    (request,) = reply["result"]["inputRequests"].values()
    assert request["params"]["mode"] == "form"
    status, reply = await _post(upstream.url, "demo_password", {})
    assert status == 400
    assert reply["error"]["code"] == -32021


async def test_undeclared_tool_asks_url_mode_anyway(upstream: Peer) -> None:
    status, reply = await _post(upstream.url, "demo_undeclared", {"elicitation": {"form": {}}})
    assert status == 200
    (request,) = reply["result"]["inputRequests"].values()
    assert request["params"] == {
        "message": "Open this page to continue",
        "mode": "url",
        "url": "https://example.com/continue",
    }


# --- shared requestState key across processes ---------------------------------------------------


async def test_state_key_lets_another_process_accept_the_retry() -> None:
    key = base64.b64encode(b"k" * 32).decode()
    caps: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
    async with start_upstream(state_key=key) as first, start_upstream(state_key=key) as second:
        status, asked = await _post(first.url, "demo_profile", caps)
        assert status == 200
        headers, body = _call("demo_profile", caps)
        body["id"] = 2
        body["params"]["requestState"] = asked["result"]["requestState"]
        body["params"]["inputResponses"] = {"profile": {"action": "decline"}}
        async with (
            aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http,
            http.post(second.url, json=body, headers=headers) as response,
        ):
            reply = await response.json(content_type=None)
    assert response.status == 200
    assert reply["result"]["content"][0]["text"] == (
        "modern: key=profile action=decline content=null state=demo_profile"
    )


# --- the event store -------------------------------------------------------------------------------


async def test_event_store_replays_only_later_events_of_the_same_stream() -> None:
    store = MemoryEventStore()
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": 1})
    priming = await store.store_event("a", None)
    first = await store.store_event("a", note)
    await store.store_event("b", note)
    second = await store.store_event("a", note)
    replayed: list[str | None] = []

    async def send(event: Any) -> None:
        replayed.append(event.event_id)

    assert await store.replay_events_after(priming, send) == "a"
    assert replayed == [first, second]
    replayed.clear()
    assert await store.replay_events_after(second, send) == "a"
    assert replayed == []
    assert await store.replay_events_after("unknown:1", send) is None
    assert len({priming, first, second}) == 3


async def test_cli_rejects_a_non_base64_state_key() -> None:
    with pytest.raises(SystemExit, match="--state-key must be base64"):
        main(["--port", "1", "--state-key", "!!"])


async def test_json_response_and_dns_rebinding_flags(clients: ClientWorker) -> None:
    async with start_upstream(json_response=True, dns_rebinding_protection=True) as peer:
        modern = await clients.run(peer.url, "2026-07-28", tool="ask_form", args={"topic": "x"})
        legacy = await clients.run(peer.url, "legacy", tool="ask_form", args={"topic": "x"})
        headers, body = _call("echo", {})
        body["params"]["arguments"] = {"text": "hi"}
        async with (
            aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http,
            http.post(peer.url, json=body, headers={**headers, "Host": "evil.example.com"}) as bad,
            http.post(peer.url, json=body, headers=headers) as good,
        ):
            assert bad.status == 421
            assert good.status == 200
            assert good.headers["Content-Type"].startswith("application/json")
    assert modern[-1]["event"] == "result"
    assert "action=accept" in modern[-1]["text"]
    # JSON-response mode has no back-channel for handshake-era elicitation (protocol.md §3.6).
    assert legacy[-1]["event"] == "error"
    assert legacy[-1]["code"] == -32600
