"""Canary values pushed through every carrier, in both directions, never reach a log line.

Real sockets (a scripted upstream and the gateway on port 0); every structlog event of the run is
captured and searched for the canaries. Values, URLs' queries and tokens must never be logged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web
from structlog.testing import capture_logs

from gateway.audit.records import decision_record
from gateway.carriers.extract import Carrier, Sighting
from gateway.enforce.enforcer import Context
from gateway.policy.engine import evaluate
from gateway.policy.loader import load_policy
from gateway.proxy.metrics import Metrics
from gateway.wire.era import Era
from tests.relay_harness import JSON_HEADERS, running

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


async def test_no_canary_reaches_any_log_line() -> None:
    modern = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
    init = json.dumps(
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
    with capture_logs() as logs:
        async with running(upstream) as h:
            session = await h.initialize(init)
            async with h.session.post(h.mcp, json=call(2, "handshake"), headers=session) as resp:
                stream = await resp.text()
            # The allowed form came through with a sealed id; answer it with canaries.
            forwarded = [
                json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ")
            ]
            token = next(m["id"] for m in forwarded if m.get("method") == "elicitation/create")
            for content in ({"name": PLAIN}, {"name": SECRET}):
                answer = {
                    "jsonrpc": "2.0",
                    "id": token,
                    "result": {"action": "accept", "content": content},
                }
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
                state = json.loads(text.split("data: ")[-1] if "data: " in text else text)[
                    "result"
                ]["requestState"]
                responses = {"a": {"action": "accept", "content": {"name": SECRET}}}
                retry = call(5, name, inputResponses=responses, requestState=state)
                async with h.session.post(h.mcp, json=retry, headers=modern) as resp:
                    assert resp.status == 200
    carriers = {
        e.get("carrier") for e in logs if e["event"] in ("elicitation.seen", "elicitation.decision")
    }
    assert carriers >= {
        "server-request",
        "url-required-error",
        "input-required",
        "answer",
        "input-response",
        "complete-notification",
    }
    outcomes = {e.get("outcome") for e in logs if e["event"] == "elicitation.answer"}
    assert {"forwarded", "declined-by-gateway", "replayed"} <= outcomes
    assert {e.get("answer_id") for e in logs if e["event"] == "elicitation.answer"} >= {
        "sealed",
        "raw",
    }
    text = json.dumps(logs, default=str)
    assert '"url_domain": "example.com"' in text  # what may be logged is there…
    for canary in CANARIES:  # …what may not, is not
        assert canary not in text, canary
    for prefix in ("gq1.", "gr1.", "gs1.", "server-state"):
        assert prefix not in text, prefix


# -- evidence stays out of the audit trail ---------------------------------------------------------

TERM = "mot de passe"  # a term of gateway/data/concepts.yaml (password, fr)
MESSAGE = "Veuillez confirmer Canary-Message-4q2"


def test_evidence_never_reaches_the_audit_line_or_the_metrics() -> None:
    """A field titled exactly with a lexicon term: the decision explains itself (concept, term,
    language), but the rendered audit JSON and the metrics keep only codes, paths and the
    value-free detail — neither the term, nor the evidence, nor the input's text."""
    policy = load_policy(Path(__file__).resolve().parents[2] / "policies" / "default.yaml")
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

    ctx = Context(upstream="default", era=Era.HANDSHAKE, modes=frozenset({"form"}), credential="c")
    sighting = Sighting(Carrier.SERVER_REQUEST, "$.params", params=params, mode="form")
    record = decision_record(ctx, sighting, decision, policy, 0.5)
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
