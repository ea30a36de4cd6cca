"""Canary values pushed through every carrier, in both directions, never reach a log line.

Twice over the same scripted exchanges: in process (every structlog event captured before
rendering) and through a real ``python -m gateway serve`` process, whose rendered output (stdout,
stderr, the audit file) is searched as bytes. Values, URLs' queries and tokens must never be
logged; the documented fields must be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import structlog
from aiohttp import web
from aiohttp.test_utils import TestServer
from structlog.testing import capture_logs

from gateway.audit.events import EVENT_MODELS, SCHEMA_VERSION
from gateway.audit.records import decision_record
from gateway.carriers.extract import Carrier, Sighting
from gateway.enforce.exchange import Exchange
from gateway.policy.engine import evaluate
from gateway.policy.loader import load_policy
from gateway.proxy.metrics import Metrics
from gateway.wire.era import Era
from tests.peers.procs import start_gateway, stop
from tests.relay_harness import INIT_RESULT, JSON_HEADERS, UPSTREAM_SID, Harness, running

ROOT = Path(__file__).resolve().parents[2]

SECRET = "AKIAQYLPMN5HFIQR7XQZ"  # AWS-shaped access key id
PLAIN = "Canary-Value-7f3k"  # an ordinary user value
EMAIL = "canary.person@example.org"
CANARIES = (SECRET, PLAIN, EMAIL, "canary-token-9zz")

FORM = {
    "mode": "form",
    "message": f"Please confirm {PLAIN}",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
LEAKY_FORM = {
    "mode": "form",
    "message": f"Your key is {SECRET}",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
URL = {
    "mode": "url",
    "message": "Connect",
    "url": f"https://example.com/connect?email={EMAIL}&t=canary-token-9zz",
    "elicitationId": "e-1",
}


def sse(*messages: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: message\r\ndata: " + json.dumps(m).encode() + b"\r\n\r\n" for m in messages
    )


async def upstream(request: web.Request) -> web.StreamResponse:
    if request.method == "GET":
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(
            sse({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": LEAKY_FORM})
        )
        return resp
    body = json.loads(await request.read())
    if "method" not in body:  # a client answer
        return web.Response(status=202)
    name = body["params"].get("name")
    rid = body["id"]
    if name == "handshake":
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(
            sse(
                {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": FORM},
                {"jsonrpc": "2.0", "id": 2, "method": "elicitation/create", "params": LEAKY_FORM},
                {"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": URL},
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/elicitation/complete",
                    "params": {"elicitationId": "e-1"},
                },
                {"jsonrpc": "2.0", "id": rid, "result": {"content": []}},
            )
        )
        return resp
    if name == "url_required":
        error = {"code": -32042, "message": "x", "data": {"elicitations": [URL]}}
        return web.json_response({"jsonrpc": "2.0", "id": rid, "error": error})
    result = {
        "resultType": "input_required",
        "requestState": "server-state",
        "inputRequests": {
            "a": {"method": "elicitation/create", "params": FORM},
            "b": {
                "method": "elicitation/create",
                "params": {k: v for k, v in URL.items() if k != "elicitationId"},
            },
        },
    }
    if "inputResponses" in body["params"]:
        result = {"resultType": "complete", "content": []}
    message = {"jsonrpc": "2.0", "id": rid, "result": result}
    if name == "modern_sse":
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(message))
        return resp
    return web.json_response(message)


def call(rid: int, name: str, **params: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
    }
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "_meta": meta, **params},
    }


INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}, "url": {}}},
        },
    }
).encode()


async def drive(h: Harness) -> None:
    """Every carrier, both directions, both eras, canaries in every value."""
    modern = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
    session = await h.initialize(INIT)
    async with h.session.post(h.mcp, json=call(2, "handshake"), headers=session) as resp:
        stream = await resp.text()
    # The allowed form came through with a sealed id; answer it with canaries.
    forwarded = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ")]
    token = next(m["id"] for m in forwarded if m.get("method") == "elicitation/create")
    for content in ({"name": PLAIN}, {"name": SECRET}):
        answer = {"jsonrpc": "2.0", "id": token, "result": {"action": "accept", "content": content}}
        async with h.session.post(h.mcp, json=answer, headers=session) as resp:
            assert resp.status == 202  # the second is a replay: absorbed, also 202
    # Answers with ids the gateway never sealed are checked (and logged) too.
    raw: list[tuple[int | str, dict[str, Any]]] = [
        (77, {"name": PLAIN}),
        ("raw-78", {"note": [SECRET, EMAIL]}),
    ]
    for rid, content in raw:
        result = {"action": "accept", "content": content}
        answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        async with h.session.post(h.mcp, json=answer, headers=session) as resp:
            assert resp.status == 202
    async with h.session.get(h.mcp, headers=session) as resp:
        await resp.read()
    async with h.session.post(h.mcp, json=call(3, "url_required"), headers=session) as resp:
        assert (await resp.json())["error"]["code"] == -31010
    for name in ("modern_json", "modern_sse"):
        async with h.session.post(h.mcp, json=call(4, name), headers=modern) as resp:
            text = await resp.text()
        state = json.loads(text.split("data: ")[-1] if "data: " in text else text)["result"][
            "requestState"
        ]
        responses = {"a": {"action": "accept", "content": {"name": SECRET}}}
        retry = call(5, name, inputResponses=responses, requestState=state)
        async with h.session.post(h.mcp, json=retry, headers=modern) as resp:
            assert resp.status == 200


def check_events(events: Sequence[Mapping[str, Any]]) -> None:
    """What the run must have logged: one decision line per elicitation on every carrier, one
    answer line per answer (both carriers, every outcome, both answer ids), the completion."""
    assert not [e for e in events if e["event"] == "elicitation.seen"]  # one line, not two
    decisions = [e for e in events if e["event"] == "elicitation.decision"]
    assert {e["carrier"] for e in decisions} == {
        "server-request",
        "url-required-error",
        "input-required",
    }
    assert len({e["decision_id"] for e in decisions}) == len(decisions)
    answers = {e["carrier"] for e in events if e["event"] == "elicitation.answer"}
    assert answers == {"answer", "input-response"}
    assert [e for e in events if e["event"] == "elicitation.complete"]
    outcomes = {e.get("outcome") for e in events if e["event"] == "elicitation.answer"}
    assert {"forwarded", "declined-by-gateway", "replayed"} <= outcomes
    assert {e.get("answer_id") for e in events if e["event"] == "elicitation.answer"} >= {
        "sealed",
        "raw",
    }


def check_text(text: str) -> None:
    """What may be logged is there; what may not, is not."""
    assert '"url_domain": "example.com"' in text
    for canary in CANARIES:
        assert canary not in text, canary
    for prefix in ("gq1.", "gr1.", "gs1.", "server-state"):
        assert prefix not in text, prefix


async def test_no_canary_reaches_any_log_event() -> None:
    """In process: every structlog event of the run, before rendering."""
    with capture_logs() as logs:
        async with running(upstream) as h:
            await drive(h)
    check_events(logs)
    check_text(json.dumps(logs, default=str))


def _upstream_app() -> web.Application:
    """The scripted upstream of ``running``: it answers ``initialize`` with a session id."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.method == "POST" and b'"initialize"' in await request.read():
            return web.Response(
                body=INIT_RESULT,
                content_type="application/json",
                headers={"Mcp-Session-Id": UPSTREAM_SID},
            )
        return await upstream(request)

    app = web.Application()
    for method in ("POST", "GET"):
        app.router.add_route(method, "/mcp", handle)
    return app


COMMON_KEYS = frozenset({"event", "logger", "level", "timestamp", "pid"})


def _documented_keys(event: str) -> set[str]:
    text = (ROOT / "docs" / "audit.md").read_text()
    section = text.split(f"## `{event}`", 1)[1].split("\n## ", 1)[0]
    keys: set[str] = set()
    for row in re.findall(r"^\| (.+?) \|", section, re.MULTILINE):
        keys.update(re.findall(r"`([a-z_]+)`", row))
    return keys


def _json_lines(text: str) -> list[dict[str, Any]]:
    """Every line must be one JSON object (the README's promise), not only the audit ones."""
    events = []
    for line in text.splitlines():
        value = json.loads(line)
        assert isinstance(value, dict), line
        events.append(value)
    return events


async def test_no_canary_reaches_the_rendered_output_of_a_real_gateway(tmp_path: Path) -> None:
    """The rendered lines of a real ``python -m gateway serve`` process (what the README and
    docs/audit.md promise): stdout, stderr and the ``--audit-file``, read as bytes; a real local
    upstream on port 0 behind it."""
    stdout_path, audit_path = tmp_path / "stdout.log", tmp_path / "audit.log"
    policy = str(ROOT / "policies" / "default.yaml")
    async with (
        TestServer(_upstream_app(), port=0, handler_cancellation=True) as up,
        aiohttp.ClientSession() as client,
    ):
        upstream_url = str(up.make_url("/mcp"))
        async with start_gateway(
            upstream_url, "--policy", policy, "--audit-file", str(audit_path), log_path=stdout_path
        ) as gw:
            await drive(Harness(gw.base_url, upstream_url, client, []))
            await stop(gw.process)  # every line written, shutdown included
            stderr = gw.stderr_path.read_bytes().decode()
    stdout = stdout_path.read_bytes().decode()
    audit = audit_path.read_bytes().decode()

    for text in (stdout, stderr, audit):
        for canary in CANARIES:
            assert canary not in text, canary
        for prefix in ("gq1.", "gr1.", "gs1.", "server-state"):
            assert prefix not in text, prefix
    assert "Traceback" not in stderr
    operational, trail = _json_lines(stdout), _json_lines(audit)
    check_events(operational + trail)
    check_text(audit)
    # The audit trail is its own file: only gateway.audit lines there, none on stdout.
    assert {e["logger"] for e in trail} == {"gateway.audit"}
    assert not [e for e in operational if e.get("logger") == "gateway.audit"]
    assert {e["event"] for e in operational} >= {"gateway.started"}
    # Every audit line is one of the event models, holds the documented keys and nothing else.
    models = {m.model_fields["event"].default: m for m in EVENT_MODELS}
    for event in ("elicitation.decision", "elicitation.answer", "elicitation.complete"):
        lines = [e for e in trail if e["event"] == event]
        assert lines, event
        for line in lines:
            assert set(line) - COMMON_KEYS == _documented_keys(event) - {"event"}, line
            assert line["level"] == "info"
            assert line["schema_version"] == SCHEMA_VERSION
    for line in trail:
        fields = {k: v for k, v in line.items() if k not in COMMON_KEYS - {"event"}}
        models[line["event"]].model_validate(fields)


# -- evidence stays out of the audit trail ---------------------------------------------------------

TERM = "mot de passe"  # a term of gateway/data/concepts.yaml (password, fr)
MESSAGE = "Veuillez confirmer Canary-Message-4q2"


def test_evidence_never_reaches_the_audit_line_or_the_metrics() -> None:
    """A field titled exactly with a lexicon term: the decision explains itself (concept, term,
    language), but the rendered audit JSON and the metrics keep only codes, paths and the
    value-free detail — neither the term, nor the evidence, nor the input's text."""
    policy = load_policy(ROOT / "policies" / "default.yaml")
    title = TERM.capitalize()  # "Mot de passe", as a server would write it
    params = {
        "mode": "form",
        "message": MESSAGE,
        "requestedSchema": {
            "type": "object",
            "properties": {"x1": {"type": "string", "title": title}},
        },
    }
    decision = evaluate(params, modes=frozenset({"form"}), server=None, policy=policy)
    assert decision.reasons == ["secret-field"]
    evidence = decision.findings[0].evidence
    assert evidence is not None
    assert (evidence.concept, evidence.term, evidence.lang) == ("password", TERM, "fr")

    ctx = Exchange(upstream="default", era=Era.HANDSHAKE, modes=frozenset({"form"}), credential="c")
    sighting = Sighting(Carrier.SERVER_REQUEST, "$.params", params=params, mode="form")
    record = decision_record(ctx, sighting, decision, policy, 0.5).record()
    rendered = structlog.processors.JSONRenderer()(None, "info", dict(record))
    assert isinstance(rendered, str)
    metrics = Metrics()
    metrics.record_audit(record)
    exported = metrics.render().decode()

    assert json.loads(rendered)["findings"] == [
        {"reason": "secret-field", "path": "$.requestedSchema.properties.x1", "detail": "secret"}
    ]
    for text in (rendered, exported):
        lowered = text.casefold()
        for forbidden in (TERM, title, MESSAGE, "canary-message", evidence.describe()):
            assert forbidden.casefold() not in lowered, forbidden
        for key in ("evidence", "concept", "signal", "message-ask", '"lang"', "lang="):
            assert key not in lowered, key
