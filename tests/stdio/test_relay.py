"""The stdio relay on the real enforcer and the shipped default policy, both eras: what each
side receives, line by line (the two pipes are lists here; the processes around the relay are
tested in test_run.py and tests/e2e/test_stdio.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from gateway import errors
from gateway.audit.events import Event
from gateway.enforce.enforcer import Enforcer
from gateway.enforce.replay import AnsweredTable
from gateway.enforce.seal import KeyRing
from gateway.policy.loader import Policy, load_policy
from gateway.stdio.relay import StdioRelay
from gateway.wire.era import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from gateway.wire.ndjson import Line, TooLong
from tests.samples import GOOD_URL, PASSWORD_FORM

DEFAULT = load_policy(Path("policies/default.yaml"))
PROFILE = {
    "mode": "form",
    "message": "Profile needed",
    "requestedSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    },
}
MODERN = "2026-07-28"


@dataclass
class Pipes:
    """What the relay wrote to each side, as parsed lines, and the audit records."""

    client: list[dict[str, Any]] = field(default_factory=list)
    server: list[dict[str, Any]] = field(default_factory=list)
    raw_client: list[bytes] = field(default_factory=list)
    replies: list[dict[str, Any]] = field(default_factory=list)  # written without waiting
    audit: list[dict[str, Any]] = field(default_factory=list)

    async def to_client(self, line: bytes) -> None:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        self.raw_client.append(line)
        self.client.append(json.loads(line))

    async def to_server(self, line: bytes) -> None:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        self.server.append(json.loads(line))

    async def reply(self, line: bytes) -> None:
        await self.to_server(line)
        self.replies.append(self.server[-1])

    def events(self, events: list[Event]) -> None:
        self.audit.extend(e.record() for e in events)


def relay(policy: Policy = DEFAULT, max_bytes: int = 1 << 20) -> tuple[StdioRelay, Pipes]:
    pipes = Pipes()
    r = StdioRelay(
        upstream="acme",
        enforcer=Enforcer(KeyRing.random(), answered=AnsweredTable(slots=1024)),
        policy=lambda: policy,
        events=pipes.events,
        to_client=pipes.to_client,
        to_server=pipes.to_server,
        reply_to_server=pipes.reply,
        logger=structlog.get_logger("test"),
        max_message_bytes=max_bytes,
    )
    return r, pipes


def line(obj: Any) -> Line:
    return Line(json.dumps(obj).encode())


def initialize(modes: dict[str, Any] | None = None) -> Line:
    caps = {"elicitation": modes if modes is not None else {"form": {}, "url": {}}}
    return line(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": caps,
                "clientInfo": {"name": "desk", "version": "1"},
            },
        }
    )


async def handshake(r: StdioRelay, p: Pipes, modes: dict[str, Any] | None = None) -> None:
    """initialize, answered (the client's side of it checked and cleared)."""
    await r.from_client(initialize(modes))
    await r.from_server(line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "x"}}))
    assert p.client.pop()["id"] == 0 and r.in_flight == 0
    p.raw_client.clear()


def call(rid: Any, name: str = "t", meta: bool = False, **params: Any) -> Line:
    p: dict[str, Any] = {"name": name, "arguments": {}, **params}
    if meta:
        p["_meta"] = {
            META_PROTOCOL_VERSION: MODERN,
            META_CLIENT_CAPABILITIES: {"elicitation": {"form": {}, "url": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "desk", "version": "1"},
        }
    return line({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": p})


def elicit(rid: Any, params: dict[str, Any]) -> Line:
    return line({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": params})


def result(rid: Any, text: str = "done") -> Line:
    return line(
        {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}
    )


def input_required(rid: Any, requests: dict[str, Any], state: str | None = "s1") -> Line:
    res: dict[str, Any] = {
        "resultType": "input_required",
        "inputRequests": {
            k: {"method": "elicitation/create", "params": v} for k, v in requests.items()
        },
    }
    if state is not None:
        res["requestState"] = state
    return line({"jsonrpc": "2.0", "id": rid, "result": res})


# -- handshake era ------------------------------------------------------------------------


async def test_benign_traffic_passes_byte_exact_both_ways() -> None:
    r, p = relay()
    await handshake(r, p)
    await r.from_client(call(1))
    reply = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]} }'
    await r.from_server(Line(reply))
    assert p.server[0]["method"] == "initialize" and p.server[-1]["id"] == 1
    assert p.raw_client == [reply + b"\n"]
    assert r.in_flight == 0


async def test_a_blocked_elicitation_never_reaches_the_client_and_the_server_gets_a_decline() -> (
    None
):
    r, p = relay()
    await handshake(r, p)
    await r.from_client(call(1))
    await r.from_server(elicit(7, PASSWORD_FORM))
    assert p.client == []
    assert p.server[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"action": "decline"}}
    assert p.replies == [p.server[-1]]  # written by the reply writer (no wait on the server)
    decision = [a for a in p.audit if a["event"] == "elicitation.decision"]
    assert decision[0]["action"] == "block" and decision[0]["transport"] == "stdio"
    assert decision[0]["upstream"] == "acme" and decision[0]["client"] == "desk"
    # The call's result tells the user (the one call in flight).
    await r.from_server(result(1))
    texts = [c["text"] for c in p.client[-1]["result"]["content"]]
    assert texts[0] == "done" and "blocked a request from acme for a password" in texts[1]
    assert r.in_flight == 0


async def test_with_several_calls_in_flight_a_block_is_told_at_once() -> None:
    r, p = relay()
    await handshake(r, p)
    await r.from_client(call(1))
    await r.from_client(call(2))
    await r.from_server(elicit(7, PASSWORD_FORM))
    assert [c["method"] for c in p.client] == ["notifications/message"]
    assert p.client[0]["params"]["level"] == "warning"


async def test_a_forwarded_elicitation_gets_a_sealed_id_and_the_answer_is_restored() -> None:
    r, p = relay()
    await handshake(r, p)
    await r.from_client(call(1))
    await r.from_server(elicit(7, PROFILE))
    forwarded = p.client[-1]
    assert forwarded["method"] == "elicitation/create" and forwarded["id"] != 7
    assert forwarded["params"] == PROFILE
    answer = {"action": "accept", "content": {"name": "Ada"}}
    await r.from_client(line({"jsonrpc": "2.0", "id": forwarded["id"], "result": answer}))
    assert p.server[-1] == {"jsonrpc": "2.0", "id": 7, "result": answer}
    # A second answer to the same id is not forwarded.
    await r.from_client(line({"jsonrpc": "2.0", "id": forwarded["id"], "result": answer}))
    assert len([m for m in p.server if m.get("id") == 7]) == 1


async def test_an_answer_violating_the_schema_reaches_the_server_as_a_decline() -> None:
    r, p = relay()
    await handshake(r, p)
    await r.from_client(call(1))
    await r.from_server(elicit(7, PROFILE))
    token = p.client[-1]["id"]
    bad = {"action": "accept", "content": {"name": "Ada", "extra": "x"}}
    await r.from_client(line({"jsonrpc": "2.0", "id": token, "result": bad}))
    assert p.server[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"action": "decline"}}


async def test_an_undeclared_mode_gets_the_error_a_client_would_send() -> None:
    r, p = relay()
    await handshake(r, p, {"form": {}})  # no URL mode
    await r.from_client(call(1))
    await r.from_server(elicit(7, GOOD_URL))
    assert p.client == []
    assert p.server[-1]["id"] == 7 and p.server[-1]["error"]["code"] == errors.INVALID_PARAMS


async def test_a_forged_answer_id_is_dropped() -> None:
    r, p = relay()
    await handshake(r, p)
    before = len(p.server)
    forged = {"jsonrpc": "2.0", "id": "gq1.forged", "result": {"action": "accept"}}
    await r.from_client(line(forged))
    assert len(p.server) == before and p.client == []


async def test_progress_notifications_and_cancellations_pass() -> None:
    r, p = relay()
    await handshake(r, p)
    await r.from_client(call(1))
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": 0.5},
    }
    await r.from_server(line(progress))
    assert p.client[-1] == progress
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "user"},
    }
    await r.from_client(line(cancel))
    assert p.server[-1] == cancel
    assert r.in_flight == 0  # the cancelled call is forgotten


# -- 2026-07-28 -----------------------------------------------------------------------------


async def test_modern_round_blocked_entry_removed_state_sealed_and_restored_on_retry() -> None:
    r, p = relay()
    await r.from_client(call(1, meta=True))
    await r.from_server(input_required(1, {"login": PASSWORD_FORM, "profile": PROFILE}))
    res = p.client[-1]["result"]
    assert list(res["inputRequests"]) == ["profile"]
    token = res["requestState"]
    assert token.startswith("gr1.") and token != "s1"
    answers = {"profile": {"action": "accept", "content": {"name": "Ada"}}}
    await r.from_client(call(2, meta=True, inputResponses=answers, requestState=token))
    retried = p.server[-1]["params"]
    assert retried["requestState"] == "s1"
    assert retried["inputResponses"] == {
        "profile": {"action": "accept", "content": {"name": "Ada"}},
        "login": {"action": "decline"},
    }
    await r.from_server(result(2))
    assert "blocked a request from acme" in p.client[-1]["result"]["content"][-1]["text"]


async def test_modern_round_all_blocked_the_gateway_retries_itself() -> None:
    r, p = relay()
    await r.from_client(call(1, meta=True))
    await r.from_server(input_required(1, {"login": PASSWORD_FORM}))
    assert p.client == []
    retry = p.server[-1]
    assert p.replies == [retry]
    assert retry["id"].startswith("gateway-retry-")
    assert retry["params"]["inputResponses"] == {"login": {"action": "decline"}}
    assert retry["params"]["requestState"] == "s1"
    await r.from_server(result(retry["id"], "declined"))
    final = p.client[-1]
    assert final["id"] == 1 and final["result"]["content"][0]["text"] == "declined"
    assert r.in_flight == 0


async def test_a_retry_with_a_forged_state_is_refused_with_the_clients_id() -> None:
    r, p = relay()
    await r.from_client(call(5, meta=True, inputResponses={}, requestState="gr1.forged"))
    assert p.server == []
    assert p.client[-1]["id"] == 5 and p.client[-1]["error"]["code"] == errors.INVALID_PARAMS


# -- what is not one JSON-RPC object per line -----------------------------------------------


async def test_garbage_from_the_server_is_never_forwarded() -> None:
    r, p = relay()
    await r.from_client(call(1))
    for bad in (b"Server listening on stdio", b'{"jsonrpc":"2.0","id":1,"result":{},"result":1}'):
        await r.from_server(Line(bad))
    await r.from_server(Line(b'[{"jsonrpc":"2.0","id":1,"result":{}}]'))
    await r.from_server(TooLong(99))
    assert p.client == []
    assert r.counters.server_dropped == 4
    assert r.in_flight == 1


async def test_garbage_from_the_client_gets_a_parse_error_and_is_not_forwarded() -> None:
    r, p = relay()
    await r.from_client(Line(b"hello"))
    await r.from_client(Line(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'))
    await r.from_client(TooLong(5000))
    assert p.server == []
    codes = [c["error"]["code"] for c in p.client]
    assert codes == [errors.PARSE_ERROR, errors.INVALID_REQUEST, errors.INVALID_REQUEST]
    assert all(c["id"] is None for c in p.client)
    assert "at most" in p.client[-1]["error"]["message"]
    assert r.counters.client_refused == 3


# -- the end --------------------------------------------------------------------------------


async def test_when_the_server_is_gone_every_request_in_flight_gets_an_error() -> None:
    r, p = relay()
    await r.from_client(call(1))
    await r.from_client(call("two"))
    await r.upstream_gone()
    assert sorted(str(c["id"]) for c in p.client) == ["1", "two"]
    assert {c["error"]["code"] for c in p.client} == {errors.GATEWAY_UPSTREAM_ERROR}
    await r.from_client(call(3))
    assert p.client[-1]["id"] == 3 and "error" in p.client[-1]
    assert len(p.server) == 2  # nothing more was written to the server


async def test_ids_of_different_types_are_different_calls() -> None:
    r, p = relay()
    await r.from_client(call(1))
    await r.from_client(call("1"))
    await r.from_server(result(1))
    assert r.in_flight == 1
    await r.upstream_gone()
    assert p.client[-1]["id"] == "1"
