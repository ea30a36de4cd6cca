"""Enforcement end to end: a real SDK client, the gateway (a real `serve` process) and the real
demo upstream (SDK server), both eras, every carrier.

* blocked → the client's callback is never invoked, the server receives a decline and the tool
  call completes normally;
* allowed → the same outcome as direct; warned → forwarded and audited;
* undeclared modes are stripped (handshake: the server gets the client's own -32602 refusal);
  outbound violations become a decline; a replayed answer is forwarded once;
* tampered, expired and foreign-credential tokens are refused;
* two replicas behind an alternating round-robin serve both eras with zero errors;
* the policy reloads repeatedly under concurrent load with zero failed requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from gateway.enforce.seal import b64u
from tests.peers import procs
from tests.peers.modes import ERA, LEGACY, MODERN, MODES
from tests.peers.procs import (
    ClientWorker,
    Peer,
    read_log_events,
    start_client_worker,
    start_upstream,
)
from tests.peers.roundrobin import round_robin

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

KEYS = f"{b64u(b'r' * 32)},{b64u(b's' * 32)}"
CANARY = "AKIAQYLPMN5HFIQR7XQZ"
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=30)


def start_gateway(
    upstream_url: str, log_path: Path, *args: str, keys: str = KEYS
) -> contextlib.AbstractAsyncContextManager[Peer]:
    """A gateway with this module's shared keys (``--config`` replaces ``--upstream``)."""
    upstream = None if "--config" in args else upstream_url
    return procs.start_gateway(upstream, *args, log_path=log_path, keys=keys)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream() -> AsyncIterator[Peer]:
    async with start_upstream(event_store=True, retry_interval=200) as peer:
        yield peer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(upstream: Peer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Peer]:
    log_path = tmp_path_factory.mktemp("enforce") / "gateway.log"
    async with start_gateway(upstream.url, log_path) as peer:
        yield peer
    # Whatever ran through this gateway: no user value, URL query or token ever reached its log.
    text = log_path.read_text()
    for secret in (
        CANARY,
        "ada@example.org",
        "name-value",
        "password-value",
        "gq1.",
        "gr1.",
        "gs1.",
    ):
        assert secret not in text, secret


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def clients() -> AsyncIterator[ClientWorker]:
    async with start_client_worker() as worker:
        yield worker


def described(mode: str, key: str, action: str, content: Any, state: str | None) -> str:
    text = f"{ERA[mode]}: key={key} action={action} content={json.dumps(content, sort_keys=True)}"
    return f"{text} state={state}" if mode == MODERN else text


def decisions(
    peer: Peer, mark: int = 0, event: str = "elicitation.decision"
) -> list[dict[str, Any]]:
    assert peer.stdout_path is not None
    return [e for e in read_log_events(peer.stdout_path)[mark:] if e.get("event") == event]


def mark(peer: Peer) -> int:
    assert peer.stdout_path is not None
    return len(read_log_events(peer.stdout_path))


async def settled(peer: Peer, since: int, event: str, count: int = 1) -> list[dict[str, Any]]:
    """Wait (≤ 5 s) until ``count`` lines of ``event`` were logged after ``since``."""
    for _ in range(100):
        found = decisions(peer, since, event)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    return decisions(peer, since, event)


# -- blocked: the user never sees it, the server gets a decline, the call completes ------------

# The notice the gateway adds to a blocked call's result: category words and reason codes only.
NOTICE = (
    r"The elicitation gateway blocked a request from default"
    r"(?: for [a-z ,-]+)? \(([a-z-]+(?:, [a-z-]+)*)\)\."
)
BLOCKED = [
    ("demo_password", "login", {"secret-field", "otp-field"}),
    ("demo_card", "payment", {"payment-field"}),
    ("demo_hidden_link", "verify", {"clickable-url"}),
    ("demo_lookalike", "signin", {"confusable-host"}),
    ("demo_email_in_url", "connect", {"pii-in-url"}),
]


@pytest.mark.parametrize(("tool", "key", "reasons"), BLOCKED)
async def test_blocked_elicitations_are_declined_on_the_users_behalf(
    gateway: Peer, clients: ClientWorker, tool: str, key: str, reasons: set[str]
) -> None:
    async def check(mode: str) -> None:
        events = await clients.run(gateway.url, mode, tool=tool)
        assert [e for e in events if e["event"] == "elicit"] == []  # callback never invoked
        [outcome] = [e for e in events if e["event"] in ("result", "error", "exception")]
        # The tool's own text, then the gateway's notice (notify_user): the SDK client took the
        # modified result as any other.
        text, notice = outcome.pop("text").split("\n")
        assert outcome == {"event": "result", "isError": False}
        assert text == described(mode, key, "decline", None, tool)
        assert re.fullmatch(NOTICE, notice), notice
        codes = set(re.fullmatch(NOTICE, notice)[1].split(", "))  # type: ignore[index]
        assert reasons <= codes and "mode-not-declared" not in codes
        for leak in ("http", "://", "@", "example", "demo_", CANARY):  # no URL, value, name
            assert leak not in notice, leak

    since = mark(gateway)
    await asyncio.gather(*(check(mode) for mode in MODES))
    found = await settled(gateway, since, "elicitation.decision", 2)
    assert {(d["era"], d["action"]) for d in found} == {("handshake", "block"), ("modern", "block")}
    for d in found:
        assert reasons <= set(d["reasons"]), d
        assert d["carrier"] == ("server-request" if d["era"] == "handshake" else "input-required")


# -- allowed: identical to direct; warned: forwarded and audited -------------------------------


@pytest.mark.parametrize("tool", ["demo_profile", "demo_oauth", "demo_tax_id", "demo_idn"])
async def test_allowed_and_warned_elicitations_match_direct(
    upstream: Peer, gateway: Peer, clients: ClientWorker, tool: str
) -> None:
    async def check(mode: str) -> None:
        direct = await clients.run(upstream.url, mode, tool=tool)
        through = await clients.run(gateway.url, mode, tool=tool)
        assert through == direct
        assert any(e["event"] == "elicit" for e in through)
        assert through[-1]["event"] == "result" and "action=accept" in through[-1]["text"]

    since = mark(gateway)
    await asyncio.gather(*(check(mode) for mode in MODES))
    found = await settled(gateway, since, "elicitation.decision", 2)
    expected = "warn" if tool in ("demo_tax_id", "demo_idn") else "allow"
    assert [d["action"] for d in found] == [expected, expected]
    if expected == "warn":
        assert all(d["reasons"] for d in found)


# -- outbound: the user's answers --------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        {"name": CANARY, "email": "ada@example.org", "start_date": "2027-01-04"},  # a secret
        {"name": "Ada", "email": "not an email", "start_date": "2027-01-04"},  # bad format
        {"name": "Ada", "email": "ada@example.org", "start_date": "2027-01-04", "x": "1"},
    ],
)
async def test_outbound_violations_reach_the_server_as_a_decline(
    upstream: Peer, gateway: Peer, clients: ClientWorker, content: dict[str, Any]
) -> None:
    async def check(mode: str) -> None:
        direct = await clients.run(upstream.url, mode, tool="demo_profile", content=content)
        assert "action=accept" in direct[-1]["text"]  # the server itself would take it
        through = await clients.run(gateway.url, mode, tool="demo_profile", content=content)
        assert any(e["event"] == "elicit" for e in through)  # the user was asked…
        assert through[-1] == {  # …and the call completed normally, with a decline upstream
            "event": "result",
            "isError": False,
            "text": described(mode, "profile", "decline", None, "demo_profile"),
        }

    since = mark(gateway)
    await asyncio.gather(*(check(mode) for mode in MODES))
    answers = await settled(gateway, since, "elicitation.answer", 2)
    assert [a["outcome"] for a in answers] == ["declined-by-gateway"] * 2


# -- mode stripping (raw HTTP: the SDK client always declares both modes) ----------------------


def _json_headers(**extra: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **extra,
    }


def _meta(caps: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": dict(caps),
    }


async def _sse_messages(response: aiohttp.ClientResponse) -> list[dict[str, Any]]:
    """Every JSON message of an SSE response, until the one that carries an id and a result or
    error (the response to the request)."""
    out: list[dict[str, Any]] = []
    data: list[str] = []
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            text = "\n".join(data)
            data = []
            if text:
                message = json.loads(text)
                out.append(message)
                if "id" in message and ("result" in message or "error" in message):
                    return out
    return out


async def _handshake_session(
    http: aiohttp.ClientSession, url: str, caps: Mapping[str, Any], auth: str | None = None
) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": dict(caps),
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    extra = {"Authorization": auth} if auth else {}
    async with http.post(url, json=init, headers=_json_headers(**extra)) as resp:
        assert resp.status == 200
        session = resp.headers["Mcp-Session-Id"]
        if resp.headers["Content-Type"].startswith("text/event-stream"):
            await _sse_messages(resp)
    headers = _json_headers(
        **extra, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    )
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with http.post(url, json=note, headers=headers) as resp:
        assert resp.status == 202
    return headers


def _refusal(modes: set[str]) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """What a client declaring ``modes`` answers to an elicitation in another mode (spec
    2025-11-25, and the TypeScript SDK client's wording): JSON-RPC ``-32602``."""

    def answer(request: dict[str, Any]) -> list[dict[str, Any]]:
        mode = request["params"].get("mode", "form")
        assert mode not in modes, "this client only refuses undeclared modes"
        label = "URL" if mode == "url" else "form"
        message = f"Client does not support {label}-mode elicitation requests"
        error = {"code": -32602, "message": message}
        return [{"jsonrpc": "2.0", "id": request["id"], "error": error}]

    return answer


async def _run_handshake_call(
    http: aiohttp.ClientSession,
    url: str,
    caps: Mapping[str, Any],
    call: Mapping[str, Any],
    answer: Callable[[dict[str, Any]], list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One handshake-era ``tools/call`` by a raw client declaring ``caps``: every elicitation it
    is shown is answered with the messages ``answer`` returns (each POSTed, each must get 202).
    Returns the elicitations shown and the final response."""
    headers = await _handshake_session(http, url, caps)
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": dict(call)}
    shown: list[dict[str, Any]] = []
    async with http.post(url, json=body, headers=headers) as resp:
        data: list[str] = []
        async for raw in resp.content:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            if line or not "".join(data):
                if not line:
                    data = []  # an event without data (priming): nothing to dispatch
                continue
            message = json.loads("\n".join(data))
            data = []
            if message.get("method") == "elicitation/create":
                shown.append(message)
                for reply in answer(message):
                    async with http.post(url, json=reply, headers=headers) as answered:
                        assert answered.status == 202
                        assert await answered.read() == b""
            elif message.get("id") == 2:
                return shown, message
    raise AssertionError("the call ended without a response")


async def test_undeclared_mode_is_refused_for_the_client_as_the_client_would(
    upstream: Peer, gateway: Peer
) -> None:
    """Handshake era: a form-only client is sent a URL elicitation. Through the gateway the
    client never sees it, and the server gets the same -32602 refusal the client itself sends
    when it talks to the server directly: the tool's outcome is identical (the SDK server's
    ``ctx.elicit_url`` raises on the error, as it does without a gateway)."""
    since = mark(gateway)
    caps: dict[str, Any] = {"elicitation": {}}  # form only
    call = {"name": "demo_undeclared", "arguments": {}}
    async with aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http:
        shown_direct, direct = await _run_handshake_call(
            http, upstream.url, caps, call, _refusal({"form"})
        )
        shown_through, through = await _run_handshake_call(
            http, gateway.url, caps, call, _refusal({"form"})
        )
    assert [m["params"]["mode"] for m in shown_direct] == ["url"]
    assert shown_through == []
    assert through == direct
    assert "decline" not in json.dumps(through)  # not the gateway's old stand-in answer
    [found] = await settled(gateway, since, "elicitation.decision", 1)
    assert found["reasons"] == ["mode-not-declared"] and found["action"] == "block"


async def test_a_replayed_answer_reaches_the_server_once(gateway: Peer) -> None:
    """A client (or anyone holding its credential and session) that sends the same answer
    twice: the second gets the SDK server's own reply to a duplicate (202, no body) from the
    gateway, and only one answer reaches the server."""
    since = mark(gateway)
    caps: dict[str, Any] = {"elicitation": {"form": {}}}
    call = {"name": "ask_form", "arguments": {"topic": "t"}}
    content = {"name": "Ada", "age": 36}

    def twice(request: dict[str, Any]) -> list[dict[str, Any]]:
        result = {"action": "accept", "content": content}
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        return [answer, answer]

    async with aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http:
        shown, final = await _run_handshake_call(http, gateway.url, caps, call, twice)
    assert [m["id"][:4] for m in shown] == ["gq1."]
    assert final["result"]["content"][0]["text"] == described(
        LEGACY, "profile", "accept", content, None
    )
    answers = await settled(gateway, since, "elicitation.answer", 2)
    assert [(a["outcome"], a["answer_id"]) for a in answers] == [
        ("forwarded", "sealed"),
        ("replayed", "sealed"),
    ]


async def test_undeclared_mode_is_declined_on_the_modern_retry(gateway: Peer) -> None:
    """2026: an ``inputResponses`` value is a result (ElicitResult, …), never an error, so the
    stripped entry is answered with a decline on the retry and the call completes."""
    since = mark(gateway)
    call = {"name": "demo_undeclared", "arguments": {}}
    async with aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http:
        modern = {**call, "_meta": _meta({"elicitation": {"form": {}}})}
        body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": modern}
        headers = _json_headers(
            **{
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "demo_undeclared",
            }
        )
        async with http.post(gateway.url, json=body, headers=headers) as resp:
            assert resp.status == 200
            reply = await resp.json()
        assert reply["id"] == 3  # the gateway's own retry is invisible to the client
        assert reply["result"]["resultType"] == "complete"
        assert reply["result"]["content"][0]["text"] == described(
            MODERN, "open", "decline", None, "demo_undeclared"
        )
    found = await settled(gateway, since, "elicitation.decision", 1)
    assert [d["reasons"] for d in found] == [["mode-not-declared"]]


# -- tokens: tamper, expiry, another credential ------------------------------------------------


def _modern_call(rid: int, arguments: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    params = {
        "name": "ask_form",
        "arguments": dict(arguments),
        "_meta": _meta({"elicitation": {"form": {}}}),
        **extra,
    }
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


MODERN_HEADERS = _json_headers(
    **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "ask_form"}
)


async def _first_round(http: aiohttp.ClientSession, url: str, auth: str) -> str:
    headers = {**MODERN_HEADERS, "Authorization": auth}
    async with http.post(url, json=_modern_call(1, {"topic": "t"}), headers=headers) as resp:
        assert resp.status == 200
        first = await resp.json()
    token = first["result"]["requestState"]
    assert token.startswith("gr1.")
    return str(token)


async def _retry(
    http: aiohttp.ClientSession, url: str, token: str, auth: str, topic: str = "t"
) -> tuple[int, dict[str, Any]]:
    answer = {"profile": {"action": "accept", "content": {"name": "Ada", "age": 36}}}
    body = _modern_call(2, {"topic": topic}, inputResponses=answer, requestState=token)
    headers = {**MODERN_HEADERS, "Authorization": auth}
    async with http.post(url, json=body, headers=headers) as resp:
        return resp.status, await resp.json()


async def test_request_state_tokens_are_bound_and_authenticated(gateway: Peer) -> None:
    since = mark(gateway)
    async with aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http:
        token = await _first_round(http, gateway.url, "Bearer alice")
        tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        for bad_token, auth, topic in (
            (tampered, "Bearer alice", "t"),
            (token, "Bearer mallory", "t"),  # replay with another credential
            (token, "Bearer alice", "other"),  # replay with other arguments
        ):
            status, reply = await _retry(http, gateway.url, bad_token, auth, topic)
            assert status == 400
            assert reply["error"]["code"] == -32602
            assert "request state" in reply["error"]["message"]
        status, reply = await _retry(http, gateway.url, token, "Bearer alice")
        assert status == 200
        assert reply["result"]["content"][0]["text"] == described(
            MODERN, "profile", "accept", {"age": 36, "name": "Ada"}, "ask_form:round1:t"
        )
    rejected = await settled(gateway, since, "elicitation.answer", 4)
    assert [r["token_error"] for r in rejected if r["outcome"] == "state-rejected"] == [
        "invalid",
        "foreign-credential",
        "other-arguments",
    ]


async def test_handshake_tokens_are_authenticated(gateway: Peer) -> None:
    async with aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http:
        headers = await _handshake_session(http, gateway.url, {"elicitation": {"form": {}}})
        forged = {**headers, "Mcp-Session-Id": headers["Mcp-Session-Id"][:-3] + "abc"}
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        async with http.post(gateway.url, json=ping, headers=forged) as resp:
            assert resp.status == 404
        other = {**headers, "Authorization": "Bearer mallory"}  # a stolen session id
        async with http.post(gateway.url, json=ping, headers=other) as resp:
            assert resp.status == 404
        answer = {"jsonrpc": "2.0", "id": "gq1.forged", "result": {"action": "accept"}}
        async with http.post(gateway.url, json=answer, headers=headers) as resp:
            assert resp.status == 400
            assert (await resp.json())["error"]["code"] == -32602


async def test_expired_request_state_is_refused(upstream: Peer, tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f"upstreams: {{default: {{url: '{upstream.url}'}}}}\ntokens: {{state_ttl: 1}}\n"
    )
    async with (
        start_gateway(upstream.url, tmp_path / "log", "--config", str(config)) as short,
        aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as http,
    ):
        token = await _first_round(http, short.url, "Bearer a")
        await asyncio.sleep(2.1)
        status, reply = await _retry(http, short.url, token, "Bearer a")
        assert status == 400
        assert reply["error"]["code"] == -32602
        assert any(
            e.get("token_error") == "expired" for e in decisions(short, 0, "elicitation.answer")
        )


# -- stateless replicas --------------------------------------------------------------------


async def test_two_replicas_behind_round_robin(
    upstream: Peer, clients: ClientWorker, tmp_path: Path
) -> None:
    async with (
        start_gateway(upstream.url, tmp_path / "a.log") as first,
        start_gateway(upstream.url, tmp_path / "b.log") as second,
        round_robin([first.url, second.url]) as (url, used),
    ):
        flows = [
            ("ask_form", "action=accept"),
            ("ask_two", "action=accept"),
            ("demo_password", "action=decline"),
            ("demo_profile", "action=accept"),
            ("url_required", None),
        ]

        async def check(mode: str, tool: str, expected: str | None) -> None:
            args = {"topic": "t"} if tool == "ask_form" else {}
            direct = await clients.run(upstream.url, mode, tool=tool, args=args)
            through = await clients.run(url, mode, tool=tool, args=args)
            if expected is None:
                assert through == direct
            else:
                assert through[-1]["event"] == "result" and expected in through[-1]["text"]

        await asyncio.gather(*(check(m, t, e) for m in MODES for t, e in flows))
        assert len(used) >= 20 and set(used) == {first.url, second.url}
        for replica in (first, second):
            assert not [
                e
                for e in read_log_events(replica.stdout_path or Path())
                if e.get("level") == "error"
            ]
            assert not decisions(replica, 0, "session.rejected")


# -- policy reload under load ------------------------------------------------------------------


async def test_policy_reloads_under_load_without_failed_requests(
    upstream: Peer, clients: ClientWorker, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    shutil.copy("policies/default.yaml", policy)
    log = tmp_path / "gateway.log"
    async with start_gateway(
        upstream.url, log, "--policy", str(policy), "--watch-policy", "0.1"
    ) as gw:
        stop = asyncio.Event()

        async def churn() -> None:
            texts = [
                Path("policies/strict.yaml").read_text(),
                Path("policies/default.yaml").read_text(),
            ]
            i = 0
            while not stop.is_set():
                policy.write_text(texts[i % 2])
                os.kill(gw.process.pid, signal.SIGHUP)
                i += 1
                await asyncio.sleep(0.05)

        async def load(mode: str) -> list[list[dict[str, Any]]]:
            return [
                await clients.run(gw.url, mode, tool="ask_form", args={"topic": "t"})
                for _ in range(6)
            ]

        churner = asyncio.create_task(churn())
        try:
            runs = await asyncio.gather(load(LEGACY), load(MODERN), load(LEGACY), load(MODERN))
        finally:
            stop.set()
            await churner
        for batch in runs:
            for events in batch:
                assert events[-1]["event"] == "result", events
                assert "action=accept" in events[-1]["text"]
        # A broken policy is refused and the last good one stays in force.
        policy.write_text("version: 1\nactions: {secret-field: maybe}\n")
        os.kill(gw.process.pid, signal.SIGHUP)
        await asyncio.sleep(0.5)
        events = await clients.run(gw.url, LEGACY, tool="demo_password")
        assert "action=decline" in events[-1]["text"]
        lines = read_log_events(log)
        assert sum(e.get("event") == "policy.reloaded" for e in lines) >= 5
        failed = [e for e in lines if e.get("event") == "policy.reload_failed"]
        assert failed and "actions" in failed[-1]["error"]


async def test_audit_trail_can_go_to_its_own_file(
    upstream: Peer, clients: ClientWorker, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    async with start_gateway(upstream.url, tmp_path / "out.log", "--audit-file", str(audit)) as gw:
        events = await clients.run(gw.url, MODERN, tool="demo_password")
        assert "action=decline" in events[-1]["text"]
        await asyncio.sleep(0.2)
        stdout = read_log_events(tmp_path / "out.log")
    lines = read_log_events(audit)
    assert [e["event"] for e in lines] == ["elicitation.decision"]
    assert lines[0]["action"] == "block" and lines[0]["logger"] == "gateway.audit"
    assert not [e for e in stdout if e.get("logger") == "gateway.audit"]
    assert any(e.get("event") == "gateway.started" for e in stdout)
