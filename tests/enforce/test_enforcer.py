"""The enforcement core (sans-IO): every carrier × action, tokens, outbound checks."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.detect.findings import Finding, Reason
from gateway.enforce.enforcer import WARNING_META_KEY, Enforcer
from gateway.enforce.exchange import Direction, Exchange
from gateway.enforce.outcome import Outcome
from gateway.enforce.seal import KeyRing
from gateway.enforce.tokens import credential_digest
from gateway.policy.loader import Policy, load_policy, parse_policy
from gateway.wire.era import Era
from gateway.wire.jsonrpc import Message, classify
from tests.samples import GOOD_URL, PASSWORD_FORM

KEYS = KeyRing([b"e" * 32])
DEFAULT = Path("policies/default.yaml")
CANARY = "AKIAQYLPMN5HFIQR7XQZ"  # an AWS-shaped access key id used as a canary

PROFILE = {
    "mode": "form",
    "message": "Profile needed",
    "requestedSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name"],
    },
}
PASSWORD = PASSWORD_FORM
SSN = {
    "mode": "form",
    "message": "Tax form",
    "requestedSchema": {"type": "object", "properties": {"ssn": {"type": "string"}}},
}
BAD_URL = {
    "mode": "url",
    "message": "Connect",
    "url": "https://example.com/connect?email=ada@example.org",
    "elicitationId": "e2",
}


def policy_with(**enforcement: Any) -> Policy:
    raw = DEFAULT.read_text()
    text = raw.split("enforcement:")[0] + "enforcement:\n"
    base = {
        "block_response": "decline",
        "all_blocked_round": "retry",
        "max_gateway_rounds": 3,
        "mark_warnings": True,
    }
    base.update(enforcement)
    text += "".join(f"  {k}: {json.dumps(v)}\n" for k, v in base.items())
    return parse_policy(text.encode(), "test-policy.yaml")


class Recorder:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def __call__(self, record: dict[str, Any]) -> None:
        self.records.append(record)


class Run:
    """The enforcer as the relay drives it: ``process`` with the exchange and policy given, the
    audit events recorded as the JSON objects the audit line renders."""

    def __init__(self, enforcer: Enforcer, policy: Policy, audit: Recorder) -> None:
        self.enforcer, self.policy, self.audit = enforcer, policy, audit

    def _process(self, msg: Message, x: Exchange, policy: Policy | None) -> Outcome:
        outcome, events = self.enforcer.process(msg, x, policy or self.policy)
        for event in events:
            self.audit(event.record())
        return outcome

    def server_message(self, x: Exchange, msg: Message, policy: Policy | None = None) -> Outcome:
        return self._process(msg, replace(x, direction=Direction.SERVER), policy)

    def client_message(self, x: Exchange, msg: Message, policy: Policy | None = None) -> Outcome:
        return self._process(msg, replace(x, direction=Direction.CLIENT), policy)


def make(policy: Policy | None = None) -> tuple[Run, Recorder]:
    audit = Recorder()
    return Run(Enforcer(KEYS), policy or load_policy(DEFAULT), audit), audit


def rejected(outcome: Outcome) -> bool:
    """The client gets 400 ``-32602`` and nothing is forwarded."""
    fail = outcome.fail
    return fail is not None and (fail.http_status, fail.jsonrpc_code) == (400, -32602)


def handshake(modes: frozenset[str] = frozenset({"form", "url"})) -> Exchange:
    return Exchange(
        upstream="acme",
        era=Era.HANDSHAKE,
        modes=modes,
        credential=credential_digest("Bearer a"),
        session="upstream-sid",
        transport="post",
    )


def m(obj: dict[str, Any]) -> Message:
    return classify({"jsonrpc": "2.0", **obj})


def sent(outcome: Outcome) -> dict[str, Any]:
    """The rewritten message of an outcome (fails the test when there is none)."""
    assert outcome.message is not None
    return dict(outcome.message)


def elicit(params: dict[str, Any], rid: int = 3) -> Message:
    return m({"id": rid, "method": "elicitation/create", "params": params})


# -- handshake server requests ----------------------------------------------------------------


def test_allowed_request_is_forwarded_with_a_sealed_id_and_the_answer_is_restored() -> None:
    enforcer, audit = make()
    ctx = handshake()
    out = enforcer.server_message(ctx, elicit(PROFILE))
    assert out.message is not None and not out.drop and out.replies == ()
    token = out.message["id"]
    assert isinstance(token, str) and token.startswith("gq1.")
    assert out.message["params"] == PROFILE
    assert audit.records[0]["action"] == "allow"
    answer = m({"id": token, "result": {"action": "accept", "content": {"name": "Ada", "age": 3}}})
    back = enforcer.client_message(handshake(), answer)
    assert back.fail is None and back.message is not None
    assert back.message["id"] == 3
    assert back.message["result"]["content"] == {"name": "Ada", "age": 3}


def test_blocked_request_is_dropped_and_declined_once() -> None:
    enforcer, audit = make()
    out = enforcer.server_message(handshake(), elicit(PASSWORD))
    assert out.drop
    assert out.replies == ({"jsonrpc": "2.0", "id": 3, "result": {"action": "decline"}},)
    record = audit.records[0]
    assert record["action"] == "block"
    assert "secret-field" in record["reasons"]
    assert record["fields"] == ["password"]
    # A replay (Last-Event-ID resumption) is suppressed again but never answered twice.
    again = enforcer.server_message(handshake(), elicit(PASSWORD))
    assert again.drop and again.replies == ()


@pytest.mark.parametrize(("answer", "expected"), [("cancel", "cancel"), ("error", None)])
def test_block_response_is_configurable(answer: str, expected: str | None) -> None:
    enforcer, _ = make(policy_with(block_response=answer))
    out = enforcer.server_message(handshake(), elicit(PASSWORD))
    [reply] = out.replies
    if expected is None:
        assert reply["error"]["code"] == -31010
        assert "secret-field" in reply["error"]["data"]["reasons"]
    else:
        assert reply["result"] == {"action": expected}


def test_warned_request_is_forwarded_and_marked() -> None:
    enforcer, audit = make()
    out = enforcer.server_message(handshake(), elicit(SSN))
    assert out.message is not None and not out.drop
    mark = out.message["params"]["_meta"][WARNING_META_KEY]
    assert mark["action"] == "warn" and "sensitive-pii-field" in mark["reasons"]
    assert audit.records[0]["action"] == "warn"


def test_undeclared_mode_is_stripped() -> None:
    enforcer, audit = make()
    out = enforcer.server_message(handshake(frozenset({"form"})), elicit(GOOD_URL))
    assert out.drop and out.replies
    assert audit.records[0]["reasons"] == ["mode-not-declared"]
    unknown = enforcer.server_message(handshake(frozenset()), elicit(PROFILE, rid=4))
    assert unknown.drop


def test_completion_of_a_blocked_url_elicitation_is_dropped() -> None:
    enforcer, _ = make()
    ctx = handshake()
    assert enforcer.server_message(ctx, elicit(BAD_URL)).drop
    done = m({"method": "notifications/elicitation/complete", "params": {"elicitationId": "e2"}})
    assert enforcer.server_message(ctx, done).drop
    other = m({"method": "notifications/elicitation/complete", "params": {"elicitationId": "e1"}})
    assert enforcer.server_message(ctx, other).unchanged


def test_answer_with_a_tampered_or_foreign_id_is_rejected() -> None:
    enforcer, audit = make()
    token = enforcer.server_message(handshake(), elicit(PROFILE)).message["id"]  # type: ignore[index]
    tampered = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    out = enforcer.client_message(handshake(), m({"id": tampered, "result": {"action": "decline"}}))
    assert rejected(out)
    other_session = replace(handshake(), session="another-session")
    out = enforcer.client_message(other_session, m({"id": token, "result": {"action": "decline"}}))
    assert rejected(out)
    assert audit.records[-1]["outcome"] == "rejected"


@pytest.mark.parametrize(
    "content",
    [
        {"name": CANARY},  # a secret pasted by mistake
        {"name": "Ada", "age": "old"},  # wrong type
        {"age": 3},  # missing required
        {"name": "Ada", "extra": "x"},  # not asked for
    ],
)
def test_outbound_violations_become_a_decline(content: dict[str, Any]) -> None:
    enforcer, audit = make()
    token = enforcer.server_message(handshake(), elicit(PROFILE)).message["id"]  # type: ignore[index]
    answer = m({"id": token, "result": {"action": "accept", "content": content}})
    out = enforcer.client_message(handshake(), answer)
    assert out.message == {"jsonrpc": "2.0", "id": 3, "result": {"action": "decline"}}
    assert audit.records[-1]["outcome"] == "declined-by-gateway"
    assert CANARY not in json.dumps(audit.records)


def test_unsealed_answers_and_other_messages_pass() -> None:
    enforcer, _ = make()
    assert (
        enforcer.client_message(handshake(), m({"id": 9, "result": {"roots": []}})).message is None
    )
    ping = m({"id": 1, "method": "ping"})
    assert enforcer.client_message(handshake(), ping).message is None
    assert enforcer.server_message(handshake(), m({"id": 1, "result": {}})).unchanged


# -- -32042 ------------------------------------------------------------------------------------


def url_required(*entries: dict[str, Any]) -> Message:
    return m(
        {
            "id": 5,
            "error": {
                "code": -32042,
                "message": "URL required",
                "data": {"elicitations": list(entries)},
            },
        }
    )


def test_url_required_keeps_allowed_entries() -> None:
    enforcer, _ = make()
    out = enforcer.server_message(handshake(), url_required(GOOD_URL, BAD_URL))
    assert out.message is not None
    assert out.message["error"]["code"] == -32042
    assert out.message["error"]["data"]["elicitations"] == [GOOD_URL]
    assert enforcer.server_message(handshake(), url_required(GOOD_URL)).unchanged


def test_url_required_with_nothing_left_becomes_a_policy_error_without_the_url() -> None:
    enforcer, _ = make()
    out = enforcer.server_message(handshake(), url_required(BAD_URL))
    assert out.message is not None
    error = out.message["error"]
    assert error["code"] == -31010
    assert "blocked by gateway policy" in error["message"]
    assert "pii-in-url" in error["data"]["reasons"]
    assert "example.org" not in json.dumps(out.message)


# -- 2026-07-28 InputRequiredResult --------------------------------------------------------------


def modern(credential: str = "Bearer a") -> Exchange:
    return Exchange(
        upstream="acme",
        era=Era.MODERN,
        modes=frozenset({"form", "url"}),
        credential=credential_digest(credential),
    )


def call(arguments: dict[str, Any] | None = None, **extra: Any) -> Message:
    params: dict[str, Any] = {"name": "ask", "arguments": arguments or {"topic": "x"}, **extra}
    return m({"id": 1, "method": "tools/call", "params": params})


def input_required(state: str | None, **requests: dict[str, Any]) -> Message:
    result: dict[str, Any] = {
        "resultType": "input_required",
        "inputRequests": {
            k: {"method": "elicitation/create", "params": v} for k, v in requests.items()
        },
    }
    if state is not None:
        result["requestState"] = state
    return m({"id": 1, "result": result})


def test_partial_round_strips_blocked_keys_and_the_retry_restores_state_and_declines() -> None:
    enforcer, _ = make()
    ctx = modern()
    ctx = replace(ctx, request=call())
    out = enforcer.server_message(ctx, input_required("server-state", ok=PROFILE, bad=PASSWORD))
    assert out.message is not None
    result = out.message["result"]
    assert list(result["inputRequests"]) == ["ok"]
    token = result["requestState"]
    assert token.startswith("gr1.") and "server-state" not in token
    retry = call(
        inputResponses={"ok": {"action": "accept", "content": {"name": "Ada"}}},
        requestState=token,
    )
    back = enforcer.client_message(modern(), retry)
    assert back.message is not None
    params = back.message["params"]
    assert params["requestState"] == "server-state"
    assert params["inputResponses"] == {
        "ok": {"action": "accept", "content": {"name": "Ada"}},
        "bad": {"action": "decline"},
    }


def test_retry_without_server_state_removes_the_field() -> None:
    enforcer, _ = make()
    ctx = modern()
    ctx = replace(ctx, request=call())
    out = enforcer.server_message(ctx, input_required(None, ok=PROFILE, bad=PASSWORD))
    token = out.message["result"]["requestState"]  # type: ignore[index]
    back = enforcer.client_message(modern(), call(inputResponses={}, requestState=token))
    assert back.message is not None
    assert "requestState" not in back.message["params"]


@pytest.mark.parametrize(
    ("retry", "ctx"),
    [
        (lambda t: call({"topic": "other"}, requestState=t), modern()),  # other arguments
        (lambda t: call(requestState=t), modern("Bearer someone-else")),  # other credential
        (lambda t: call(requestState=t[:-3] + "abc"), modern()),  # tampered
        (
            lambda t: m(
                {"id": 2, "method": "prompts/get", "params": {"name": "ask", "requestState": t}}
            ),
            modern(),
        ),
    ],
)
def test_bad_tokens_are_rejected(retry: Any, ctx: Exchange) -> None:
    enforcer, audit = make()
    first = modern()
    first = replace(first, request=call())
    token = sent(enforcer.server_message(first, input_required("s", ok=PROFILE)))["result"][
        "requestState"
    ]
    out = enforcer.client_message(ctx, retry(token))
    assert rejected(out)
    assert audit.records[-1]["outcome"] == "state-rejected"


def test_every_entry_blocked_makes_the_gateway_retry_itself() -> None:
    enforcer, _ = make()
    ctx = modern()
    ctx = replace(ctx, request=call())
    out = enforcer.server_message(ctx, input_required("s", bad=PASSWORD))
    assert out.retry is not None
    retry = out.retry.message
    assert retry["id"] != 1 and retry["method"] == "tools/call"
    assert retry["params"]["inputResponses"] == {"bad": {"action": "decline"}}
    assert retry["params"]["requestState"] == "s"
    assert retry["params"]["arguments"] == {"topic": "x"}
    # What the relay must remember comes back in the outcome; the exchange given is untouched.
    assert (out.retry.exchange.retry_id, out.retry.exchange.rounds) == (retry["id"], 1)
    assert (ctx.retry_id, ctx.rounds) == (None, 0)
    # The server completes: the answer goes back under the client's id.
    done = m({"id": retry["id"], "result": {"content": [], "resultType": "complete"}})
    final = enforcer.server_message(out.retry.exchange, done)
    assert final.message is not None and final.message["id"] == 1


def test_gateway_rounds_are_bounded() -> None:
    enforcer, _ = make(policy_with(max_gateway_rounds=2))
    ctx = modern()
    ctx = replace(ctx, request=call())
    out = enforcer.server_message(ctx, input_required("s", bad=PASSWORD))
    for _ in range(2):
        assert out.retry is not None
        again = m({**input_required("s", bad=PASSWORD).obj, "id": out.retry.message["id"]})
        out = enforcer.server_message(out.retry.exchange, again)
    assert out.retry is None and out.message is not None
    assert out.message["id"] == 1
    assert out.message["error"]["code"] == -31010


def test_all_blocked_round_can_fail_the_call() -> None:
    enforcer, _ = make(policy_with(all_blocked_round="fail"))
    ctx = modern()
    ctx = replace(ctx, request=call())
    out = enforcer.server_message(ctx, input_required(None, bad=PASSWORD))
    assert out.message is not None and out.message["error"]["code"] == -31010
    assert "secret-field" in out.message["error"]["data"]["reasons"]


def test_modern_outbound_violation_becomes_a_decline() -> None:
    enforcer, audit = make()
    ctx = modern()
    ctx = replace(ctx, request=call())
    token = sent(enforcer.server_message(ctx, input_required("s", ok=PROFILE)))["result"][
        "requestState"
    ]
    retry = call(
        inputResponses={"ok": {"action": "accept", "content": {"name": CANARY}}}, requestState=token
    )
    back = enforcer.client_message(modern(), retry)
    assert back.message is not None
    assert back.message["params"]["inputResponses"]["ok"] == {"action": "decline"}
    assert CANARY not in json.dumps(audit.records)


def test_sampling_requests_are_left_alone() -> None:
    enforcer, _ = make()
    ctx = modern()
    ctx = replace(ctx, request=call())
    msg = m(
        {
            "id": 1,
            "result": {
                "resultType": "input_required",
                "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}},
            },
        }
    )
    assert enforcer.server_message(ctx, msg).unchanged


def test_audit_records_carry_no_values() -> None:
    enforcer, audit = make()
    leaky = {
        "mode": "url",
        "message": f"use {CANARY}",
        "url": f"https://example.com/x?token={CANARY}",
        "elicitationId": "e9",
    }
    enforcer.server_message(handshake(), elicit(leaky))
    text = json.dumps(audit.records)
    assert CANARY not in text
    assert "token=" not in text
    assert audit.records[0]["url_domain"] == "example.com"
    assert audit.records[0]["url_scheme"] == "https"


def test_findings_in_outbound_audit_name_paths() -> None:
    from gateway.audit.records import answer_record

    record = answer_record(
        modern(), "declined-by-gateway", [Finding(Reason.SECRET_VALUE, "$.content.x")]
    ).record()
    assert record["findings"] == [{"reason": "secret-value", "path": "$.content.x"}]


def test_url_required_warned_entries_are_kept_and_marked() -> None:
    enforcer, audit = make()
    idn = {"mode": "url", "message": "Shop", "url": "https://bücher.de/", "elicitationId": "e5"}
    out = enforcer.server_message(handshake(), url_required(idn, GOOD_URL))
    [first, second] = sent(out)["error"]["data"]["elicitations"]
    assert first["_meta"][WARNING_META_KEY]["reasons"] == ["idn-host"]
    assert second == GOOD_URL
    assert [r["action"] for r in audit.records] == ["warn", "allow"]


# -- issue 9: replayed answers, undeclared modes, unsealed answers, policy snapshots ----------


def _forwarded_token(enforcer: Run, params: dict[str, Any] = PROFILE) -> str:
    token = sent(enforcer.server_message(handshake(), elicit(params)))["id"]
    assert isinstance(token, str) and token.startswith("gq1.")
    return token


def test_replayed_answer_to_a_forwarded_request_is_absorbed_not_forwarded() -> None:
    enforcer, audit = make()
    token = _forwarded_token(enforcer)
    answer = m({"id": token, "result": {"action": "accept", "content": {"name": "Ada"}}})
    first = enforcer.client_message(handshake(), answer)
    assert first.message is not None and first.message["id"] == 3 and not first.absorb
    # The same answer again, or another answer to the same token: nothing goes upstream.
    for again in (answer, m({"id": token, "result": {"action": "decline"}})):
        out = enforcer.client_message(handshake(), again)
        assert out.absorb and out.message is None and out.fail is None
        assert audit.records[-1]["outcome"] == "replayed"
        assert audit.records[-1]["answer_id"] == "sealed"
    # Another forwarded request still takes its (single) answer.
    other = _forwarded_token(enforcer)
    assert enforcer.client_message(handshake(), m({"id": other, "result": {}})).message


def test_answer_id_is_bound_to_the_credential_and_the_upstream() -> None:
    enforcer, audit = make()
    token = _forwarded_token(enforcer)
    answer = m({"id": token, "result": {"action": "decline"}})
    stolen = replace(handshake(), credential=credential_digest("Bearer mallory"))
    out = enforcer.client_message(stolen, answer)
    assert rejected(out)
    assert audit.records[-1]["token_error"] == "foreign-credential"
    elsewhere = replace(handshake(), upstream="other-upstream")
    assert rejected(enforcer.client_message(elsewhere, answer))
    assert audit.records[-1]["token_error"] == "foreign-upstream"
    # Refused answers do not use the token up: its owner still answers it.
    assert enforcer.client_message(handshake(), answer).message is not None


@pytest.mark.parametrize(
    ("modes", "params", "message"),
    [
        ({"form"}, GOOD_URL, "Client does not support URL-mode elicitation requests"),
        ({"url"}, PROFILE, "Client does not support form-mode elicitation requests"),
        (set(), PROFILE, "Client does not support form-mode elicitation requests"),
    ],
)
@pytest.mark.parametrize("block_response", ["decline", "error"])
def test_undeclared_mode_is_answered_with_the_error_a_client_would_send(
    modes: set[str], params: dict[str, Any], message: str, block_response: str
) -> None:
    enforcer, audit = make(policy_with(block_response=block_response))
    out = enforcer.server_message(handshake(frozenset(modes)), elicit(params))
    assert out.drop
    assert out.replies == (
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": message}},
    )
    assert audit.records[-1]["reasons"] == ["mode-not-declared"]


def test_undeclared_mode_with_another_blocking_reason_gets_the_policy_answer() -> None:
    enforcer, audit = make()
    out = enforcer.server_message(handshake(frozenset({"form"})), elicit(BAD_URL))
    assert out.replies == ({"jsonrpc": "2.0", "id": 3, "result": {"action": "decline"}},)
    assert set(audit.records[-1]["reasons"]) == {"mode-not-declared", "pii-in-url"}
    # Unknown modes (no session to read them from): the gateway cannot speak for the client.
    unknown = replace(handshake(), modes=None)
    out = enforcer.server_message(unknown, elicit(PROFILE, rid=4))
    assert out.replies == ({"jsonrpc": "2.0", "id": 4, "result": {"action": "decline"}},)


def test_modern_undeclared_mode_is_declined_on_the_retry() -> None:
    """2026 has no error inside ``inputResponses`` (an InputResponse is a result): the
    stripped key is answered with a decline, as documented."""
    enforcer, _ = make()
    ctx = replace(modern(), modes=frozenset({"form"}), request=call())
    out = enforcer.server_message(ctx, input_required("s", ok=PROFILE, link=GOOD_URL))
    token = sent(out)["result"]["requestState"]
    assert list(sent(out)["result"]["inputRequests"]) == ["ok"]
    retry = call(inputResponses={"ok": {"action": "decline"}}, requestState=token)
    back = enforcer.client_message(modern(), retry)
    assert back.message is not None
    assert back.message["params"]["inputResponses"]["link"] == {"action": "decline"}


def test_unsealed_answer_carrying_a_secret_is_declined() -> None:
    enforcer, audit = make()
    answer = m({"id": 9, "result": {"action": "accept", "content": {"name": CANARY}}})
    out = enforcer.client_message(handshake(), answer)
    assert out.message == {"jsonrpc": "2.0", "id": 9, "result": {"action": "decline"}}
    record = audit.records[-1]
    assert record["outcome"] == "declined-by-gateway" and record["answer_id"] == "raw"
    assert {"secret-value", "schema-violation"} <= set(record["reasons"])
    assert CANARY not in json.dumps(audit.records)


def test_unsealed_answer_is_scanned_even_when_content_validation_is_off() -> None:
    enforcer, audit = make(policy_with(outbound={"validate_content": False}))
    secret = m({"id": "s-1", "result": {"action": "accept", "content": {"x": [CANARY]}}})
    out = enforcer.client_message(handshake(), secret)
    assert out.message is not None and out.message["result"] == {"action": "decline"}
    assert audit.records[-1]["reasons"] == ["secret-value"]
    benign = m({"id": "s-2", "result": {"action": "accept", "content": {"x": "blue"}}})
    assert enforcer.client_message(handshake(), benign).message is None
    assert audit.records[-1]["outcome"] == "forwarded"


@pytest.mark.parametrize(
    "result",
    [
        {"action": "accept"},  # URL consent: no content
        {"action": "decline"},
    ],
)
def test_unsealed_answer_without_content_is_forwarded_and_audited(result: dict[str, Any]) -> None:
    enforcer, audit = make()
    assert enforcer.client_message(handshake(), m({"id": 9, "result": result})).message is None
    assert audit.records[-1]["outcome"] == "forwarded"
    assert audit.records[-1]["answer_id"] == "raw"


@pytest.mark.parametrize(
    "message",
    [
        {"id": 9, "result": {"roots": [{"uri": "file:///home/ada", "name": CANARY}]}},
        {"id": 9, "result": {"role": "assistant", "content": {"type": "text", "text": CANARY}}},
        {"id": 9, "result": {}},  # ping
        {"id": 9, "error": {"code": -1, "message": "User rejected sampling request"}},
    ],
)
def test_answers_to_other_server_requests_pass_unchanged(message: dict[str, Any]) -> None:
    enforcer, audit = make()
    out = enforcer.client_message(handshake(), m(message))
    assert out.message is None and out.fail is None and not out.absorb
    assert audit.records == []


def test_sealed_url_answer_with_content_is_declined() -> None:
    enforcer, audit = make()
    token = _forwarded_token(enforcer, GOOD_URL)
    answer = m({"id": token, "result": {"action": "accept", "content": {"code": "123456"}}})
    out = enforcer.client_message(handshake(), answer)
    assert out.message == {"jsonrpc": "2.0", "id": 3, "result": {"action": "decline"}}
    assert audit.records[-1]["reasons"] == ["schema-violation"]


def test_modern_answers_without_a_gateway_token_are_checked() -> None:
    enforcer, audit = make()
    responses = {
        "raw": {"action": "accept", "content": {"name": CANARY}},
        "consent": {"action": "accept"},
        "llm": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
    }
    back = enforcer.client_message(
        modern(), call(inputResponses=responses, requestState="server-state")
    )
    assert back.message is not None
    assert back.message["params"]["inputResponses"] == {
        **responses,
        "raw": {"action": "decline"},
    }
    assert back.message["params"]["requestState"] == "server-state"
    assert [r["outcome"] for r in audit.records] == ["declined-by-gateway", "forwarded"]
    assert CANARY not in json.dumps(audit.records)


def test_modern_retry_key_the_gateway_never_forwarded_is_checked() -> None:
    enforcer, _ = make()
    ctx = modern()
    ctx = replace(ctx, request=call())
    token = sent(enforcer.server_message(ctx, input_required("s", ok=PROFILE)))["result"][
        "requestState"
    ]
    responses = {
        "ok": {"action": "accept", "content": {"name": "Ada"}},
        "extra": {"action": "accept", "content": {"note": "anything"}},
    }
    back = enforcer.client_message(modern(), call(inputResponses=responses, requestState=token))
    assert back.message is not None
    assert back.message["params"]["inputResponses"] == {
        "ok": {"action": "accept", "content": {"name": "Ada"}},
        "extra": {"action": "decline"},
    }


def test_process_judges_by_the_policy_it_is_given() -> None:
    """The policy snapshot is the caller's (the relay captures one per request): two events of
    one stream judged under the policy given, whatever else is in force."""
    start, reloaded = load_policy(DEFAULT), load_policy(Path("policies/audit-only.yaml"))
    enforcer, audit = make(reloaded)
    stream = handshake()
    assert enforcer.server_message(stream, elicit(PROFILE, rid=1), start).message is not None
    later = enforcer.server_message(stream, elicit(PASSWORD, rid=2), start)
    assert later.drop and later.replies
    assert [r["policy_revision"] for r in audit.records] == [start.revision] * 2
    fresh = enforcer.server_message(handshake(), elicit(PASSWORD, rid=3), reloaded)
    assert not fresh.drop and audit.records[-1]["policy_revision"] == reloaded.revision


def test_gateway_retries_are_judged_by_the_policy_given() -> None:
    enforcer, _ = make(policy_with(all_blocked_round="fail"))
    start = policy_with(max_gateway_rounds=3)
    ctx = replace(modern(), request=call())
    out = enforcer.server_message(ctx, input_required("s", bad=PASSWORD), start)
    assert out.retry is not None
    again = m({**input_required("s", bad=PASSWORD).obj, "id": out.retry.message["id"]})
    assert enforcer.server_message(out.retry.exchange, again, start).retry is not None


def test_process_does_not_mutate_its_inputs_and_scans_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``process`` is pure in its inputs: the frozen exchange and the message are unchanged,
    and the message is scanned for elicitations once; one audit line per elicitation."""
    from gateway.carriers.extract import from_server as real

    calls: list[Message] = []

    def counting(msg: Message) -> Any:
        calls.append(msg)
        return real(msg)

    monkeypatch.setattr("gateway.enforce.enforcer.from_server", counting)
    run, audit = make()
    msg = elicit(PASSWORD)
    before = json.dumps(msg.obj)
    x = handshake()
    out = run.server_message(x, msg)
    assert out.drop and calls == [msg]
    assert json.dumps(msg.obj) == before and x == handshake()
    assert [(r["event"], r["carrier"]) for r in audit.records] == [
        ("elicitation.decision", "server-request")
    ]


def test_a_detector_exception_is_reported_not_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine fails closed and returns; the enforcer turns that into an event (class name,
    no values) that the app's sink counts in ``gateway_detector_errors_total``."""
    from gateway.policy import engine
    from gateway.proxy.metrics import Metrics

    def boom(params: dict[str, Any], cfg: Any) -> list[Finding]:
        raise ValueError(CANARY)

    monkeypatch.setattr(engine, "_form", boom)
    run, audit = make()
    assert run.server_message(handshake(), elicit(PROFILE)).drop
    decision, failed = audit.records
    assert decision["reasons"] == ["internal-error"]
    assert failed["event"] == "policy.detector_failed"
    assert failed["error"] == "ValueError"
    assert CANARY not in json.dumps(audit.records)
    metrics = Metrics()
    for record in audit.records:
        metrics.record_audit(record)
    assert metrics.detector_errors._value.get() == 1.0


def test_outbound_secret_scanning_cannot_be_switched_off_by_construction() -> None:
    """``Enforcer(keys)`` scans outbound answers with the detectors' scanner: only the policy
    (``outbound.scan_secrets``) turns scanning off."""
    run = Run(Enforcer(KEYS), policy_with(outbound={"validate_content": False}), Recorder())
    answer = m({"id": 5, "result": {"action": "accept", "content": {"note": CANARY}}})
    assert sent(run.client_message(handshake(), answer))["result"] == {"action": "decline"}
    assert run.audit.records[-1]["reasons"] == ["secret-value"]


# -- slow decisions are marked, never failed ---------------------------------------------------


def test_a_slow_decision_is_marked_and_counted_but_decided_normally() -> None:
    from gateway.proxy.metrics import Metrics

    fast_policy = parse_policy(b"version: 1\nlimits: {slow_decision_ms: 10000}\n", "fast.yaml")
    slow_policy = parse_policy(b"version: 1\nlimits: {slow_decision_ms: 0.000001}\n", "slow.yaml")
    form = {
        "mode": "form",
        "message": "Sign in again",
        "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
    }
    outcomes = []
    for policy in (fast_policy, slow_policy):
        enforcer, audit = make(policy)
        outcome = enforcer.server_message(handshake(), elicit(form))
        [record] = [r for r in audit.records if r["event"] == "elicitation.decision"]
        outcomes.append((outcome.drop, record["action"], record["reasons"], record["slow"]))
        metrics = Metrics()
        metrics.record_audit(record)
        slow_count = metrics.slow_decisions._value.get()
        assert slow_count == (1.0 if record["slow"] else 0.0)
    assert outcomes == [
        (True, "block", ["secret-field"], False),
        (True, "block", ["secret-field"], True),
    ]
