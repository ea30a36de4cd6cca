"""Audit records: the documented keys, names and never values, URL reduced to scheme and
registrable domain, session ids hashed, shadow mode, the slow mark, answer records."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.audit import records
from gateway.audit.events import SCHEMA_VERSION, ElicitationAnswer, ElicitationDecision
from gateway.carriers.extract import Carrier, Sighting
from gateway.detect.findings import Action, Decision, Finding, Reason
from gateway.enforce.exchange import Exchange, hash_id
from gateway.policy.loader import Policy, load_policy
from gateway.wire.era import Era

ROOT = Path(__file__).resolve().parents[2]
SESSION_ID = "upstream-session-id-secret-1"
CTX = Exchange(
    upstream="docs",
    era=Era.HANDSHAKE,
    modes=frozenset({"url", "form"}),
    credential="c",
    session=SESSION_ID,
    client="claude",
    transport="post",
)
FORM = {
    "mode": "form",
    "message": "Please type Canary-Message-1",
    "requestedSchema": {
        "type": "object",
        "properties": {"password": {"type": "string", "default": "Canary-Default-2"}},
    },
}
URL = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://login.accounts.example.co.uk:8443/path/x?email=canary@example.org#frag-canary",
    "elicitationId": "e-1",
}
SECRET = Finding(Reason.SECRET_FIELD, "$.requestedSchema.properties.password", detail="secret")
BLOCK = Decision(Action.BLOCK, (SECRET, SECRET))


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(ROOT / "policies" / "default.yaml")


def decision_record(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The rendered JSON object of a decision record (what the audit line holds)."""
    return records.decision_record(*args, **kwargs).record()


def answer_record(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return records.answer_record(*args, **kwargs).record()


def test_decision_record_holds_exactly_the_model_fields(policy: Policy) -> None:
    record = decision_record(
        CTX, Sighting(Carrier.SERVER_REQUEST, "$", FORM, "form"), BLOCK, policy, 1
    )
    assert next(iter(record)) == "event"
    assert set(record) == set(ElicitationDecision.model_fields)
    assert record["event"] == "elicitation.decision"
    assert record["schema_version"] == SCHEMA_VERSION


def test_answer_record_holds_exactly_the_model_fields() -> None:
    record = answer_record(CTX, "forwarded", [])
    assert set(record) == set(ElicitationAnswer.model_fields)


def test_decision_record_of_a_form_names_fields_never_values(policy: Policy) -> None:
    s = Sighting(Carrier.SERVER_REQUEST, "$.params", FORM, "form", request_id=3)
    record = decision_record(CTX, s, BLOCK, policy, 0.12345)
    assert record["fields"] == ["password"]
    assert record["action"] == record["decided"] == "block"
    assert record["enforced"] is True
    assert record["reasons"] == ["secret-field"]  # unique
    assert (
        record["findings"]
        == [
            {
                "reason": "secret-field",
                "path": "$.requestedSchema.properties.password",
                "detail": "secret",
            }
        ]
        * 2
    )
    assert record["declared_modes"] == ["form", "url"]
    assert (record["transport"], record["stream"]) == ("sse", "post")
    assert record["session"] == hash_id(SESSION_ID)
    assert record["latency_ms"] == 0.123
    assert record["policy_revision"] == policy.revision
    assert (record["url_scheme"], record["url_domain"]) == (None, None)
    rendered = json.dumps(record)
    for secret in ("Canary-Message-1", "Canary-Default-2", SESSION_ID):
        assert secret not in rendered


def test_decision_record_of_a_url_keeps_scheme_and_registrable_domain_only(policy: Policy) -> None:
    s = Sighting(Carrier.URL_REQUIRED_ERROR, "$.error.data.elicitations[0]", URL, "url")
    record = decision_record(CTX, s, Decision(Action.ALLOW), policy, 0)
    assert (record["url_scheme"], record["url_domain"]) == ("https", "example.co.uk")
    rendered = json.dumps(record)
    for part in ("login.accounts", "8443", "/path", "canary@example.org", "frag-canary", "email"):
        assert part not in rendered, part


def test_decision_record_of_an_ip_url_keeps_the_ip(policy: Policy) -> None:
    params = {**URL, "url": "http://192.0.2.7/login?x=1"}
    s = Sighting(Carrier.SERVER_REQUEST, "$", params, "url")
    record = decision_record(CTX, s, Decision(Action.ALLOW), policy, 0)
    assert (record["url_scheme"], record["url_domain"]) == ("http", "192.0.2.7")


@pytest.mark.parametrize("params", [None, {"url": 5}, {"url": "not a url at all"}, "x"])
def test_decision_record_without_a_usable_url(params: Any, policy: Policy) -> None:
    s = Sighting(Carrier.SERVER_REQUEST, "$", params, None)
    record = decision_record(CTX, s, Decision(Action.BLOCK), policy, 0)
    assert (record["url_scheme"], record["url_domain"]) == (None, None)
    assert record["fields"] == []
    assert record["mode"] is None


def test_shadow_mode_records_what_was_done_and_what_was_decided(policy: Policy) -> None:
    s = Sighting(Carrier.SERVER_REQUEST, "$", FORM, "form")
    record = decision_record(CTX, s, Decision(Action.BLOCK, (SECRET,), enforced=False), policy, 0)
    assert (record["action"], record["decided"], record["enforced"]) == ("warn", "block", False)


@pytest.mark.parametrize(
    ("transport", "expected"),
    [("json", ("json", None)), ("post", ("sse", "post")), ("get", ("sse", "get"))],
)
def test_transport_and_stream(
    transport: str, expected: tuple[str, str | None], policy: Policy
) -> None:
    s = Sighting(Carrier.SERVER_REQUEST, "$", FORM, "form")
    record = decision_record(replace(CTX, transport=transport), s, BLOCK, policy, 0)
    assert (record["transport"], record["stream"]) == expected


def test_unknown_modes_and_no_session_are_null(policy: Policy) -> None:
    ctx = replace(CTX, modes=None, session=None, era=Era.MODERN)
    s = Sighting(Carrier.INPUT_REQUIRED, "$", FORM, "form", key="k" * 300)
    record = decision_record(ctx, s, BLOCK, policy, 0)
    assert record["declared_modes"] is None
    assert record["session"] is None
    assert record["era"] == "modern"
    assert record["key"] == "k" * 128  # cut


def test_slow_marks_decisions_over_the_policy_limit(policy: Policy) -> None:
    limit = policy.detect_config("docs").limits.slow_decision_ms
    s = Sighting(Carrier.SERVER_REQUEST, "$", FORM, "form")
    assert decision_record(CTX, s, BLOCK, policy, limit)["slow"] is False
    assert decision_record(CTX, s, BLOCK, policy, limit + 0.01)["slow"] is True


def test_every_record_has_its_own_decision_id(policy: Policy) -> None:
    s = Sighting(Carrier.SERVER_REQUEST, "$", FORM, "form")
    ids = {decision_record(CTX, s, BLOCK, policy, 0)["decision_id"] for _ in range(50)}
    ids |= {answer_record(CTX, "forwarded", [])["decision_id"] for _ in range(50)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


def test_answer_record() -> None:
    findings = [
        Finding(Reason.SECRET_VALUE, "$.content.note"),
        Finding(Reason.SECRET_VALUE, "$.content.other"),
        Finding(Reason.SCHEMA_VIOLATION, "$.content", detail="no-schema"),
    ]
    s = Sighting(Carrier.INPUT_RESPONSE, "$.params.inputResponses.q", key="q" * 200, action="x")
    record = answer_record(
        CTX, "declined-by-gateway", findings, s, reason="expired", answer_id="sealed"
    )
    assert record["event"] == "elicitation.answer"
    assert (record["carrier"], record["answer_action"]) == ("input-response", "other")
    assert record["outcome"] == "declined-by-gateway"
    assert record["reasons"] == ["secret-value", "schema-violation"]
    assert record["findings"][2] == {
        "reason": "schema-violation",
        "path": "$.content",
        "detail": "no-schema",
    }
    assert record["token_error"] == "expired"
    assert record["key"] == "q" * 128
    assert record["answer_id"] == "sealed"
    assert record["session"] == hash_id(SESSION_ID)
    assert SESSION_ID not in json.dumps(record)


def test_answer_record_defaults() -> None:
    record = answer_record(replace(CTX, session=None), "forwarded", [])
    assert (record["token_error"], record["key"], record["answer_id"], record["session"]) == (
        None,
        None,
        None,
        None,
    )
    assert record["reasons"] == [] and record["findings"] == []
