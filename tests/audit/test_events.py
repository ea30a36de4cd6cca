"""The audit event models (gateway/audit/events.py) and docs/audit.md, checked against each other.

Every model field is documented in its event's section, and every key documented there is a
field: the doc cannot drift from what the gateway writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gateway.audit.events import (
    EVENT_MODELS,
    SCHEMA_VERSION,
    AuditEvent,
    DetectorFailed,
    ElicitationAnswer,
    ElicitationComplete,
    ElicitationDecision,
    FindingRecord,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
WHERE = {"upstream": "default", "era": "handshake", "session": "0123456789abcdef", "client": "c"}
DECISION: dict[str, Any] = {
    **WHERE,
    "decision_id": "0" * 32,
    "carrier": "server-request",
    "transport": "sse",
    "stream": "post",
    "location": "$.params",
    "request_id": "fedcba9876543210",
    "elicitation_id": None,
    "mode": "form",
    "declared_modes": ["form"],
    "action": "block",
    "decided": "block",
    "enforced": True,
    "reasons": ["secret-field"],
    "findings": [{"reason": "secret-field", "path": "$.x"}],
    "policy_revision": "r",
    "fields": ["password"],
    "url_scheme": None,
    "url_domain": None,
    "key": None,
    "latency_ms": 0.5,
    "slow": False,
}


def event_name(model: type[AuditEvent]) -> str:
    default = model.model_fields["event"].default
    assert isinstance(default, str)
    return default


def documented_keys(event: str) -> set[str]:
    """The keys named in the first column of the table of ``event``'s section."""
    assert f"## `{event}`" in DOC, f"docs/audit.md has no section for {event}"
    section = DOC.split(f"## `{event}`", 1)[1].split("\n## ", 1)[0]
    keys: set[str] = set()
    for row in re.findall(r"^\| (.+?) \|", section, re.MULTILINE):
        keys.update(re.findall(r"`([a-z_]+)`", row))
    return keys


@pytest.mark.parametrize("model", EVENT_MODELS, ids=event_name)
def test_every_field_is_documented_and_every_documented_key_is_a_field(
    model: type[AuditEvent],
) -> None:
    fields = set(model.model_fields) - {"event"}
    documented = documented_keys(event_name(model))
    assert fields - documented == set(), "fields missing from docs/audit.md"
    assert documented - fields == set(), "documented keys the model does not have"


def test_every_event_section_of_the_doc_has_a_model() -> None:
    """No section documents an audit event the gateway does not model."""
    sections = set(re.findall(r"^## `([a-z_.]+)` \(logger `gateway\.audit`\)", DOC, re.M))
    assert sections == {event_name(m) for m in EVENT_MODELS}


@pytest.mark.parametrize("model", EVENT_MODELS, ids=event_name)
def test_models_are_frozen_versioned_and_closed(model: type[AuditEvent]) -> None:
    assert model.model_config.get("frozen") is True
    assert model.model_config.get("extra") == "forbid"
    assert model.model_fields["schema_version"].default == SCHEMA_VERSION


def test_a_decision_renders_event_first_and_findings_without_empty_detail() -> None:
    decision = ElicitationDecision.model_validate(DECISION)
    record = decision.record()
    assert next(iter(record)) == "event"
    assert record["event"] == "elicitation.decision"
    assert record["schema_version"] == SCHEMA_VERSION
    assert record["findings"] == [{"reason": "secret-field", "path": "$.x"}]
    assert record["declared_modes"] == ["form"]
    with pytest.raises(ValidationError):
        decision.action = "allow"


def test_a_finding_with_detail_renders_it() -> None:
    f = FindingRecord(reason="schema-violation", path="$.content", detail="no-schema")
    assert f.model_dump() == {
        "reason": "schema-violation",
        "path": "$.content",
        "detail": "no-schema",
    }


@pytest.mark.parametrize(
    "change",
    [
        {"surprise": "value"},  # no field can be added without a model (and doc) change
        {"action": "maybe"},
        {"mode": "password=hunter2"},  # a server-chosen mode is never rendered
        {"session": "upstream-session-id-in-clear"},  # ids only as 16-hex-digit digests
        {"request_id": "42"},
        {"decision_id": "not-hex"},
        {"client": "c" * 129},
        {"key": "k" * 129},
        {"location": "$" * 257},
        {"schema_version": 1},
    ],
)
def test_a_decision_refuses_what_the_doc_does_not_allow(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ElicitationDecision.model_validate({**DECISION, **change})


def test_answer_complete_and_detector_failed_models() -> None:
    answer = ElicitationAnswer.model_validate(
        {
            **WHERE,
            "decision_id": "1" * 32,
            "carrier": "answer",
            "answer_action": "accept",
            "outcome": "forwarded",
            "reasons": [],
            "findings": [],
            "token_error": None,
            "key": None,
            "answer_id": "sealed",
        }
    )
    assert answer.record()["event"] == "elicitation.answer"
    complete = ElicitationComplete.model_validate(
        {**WHERE, "transport": "json", "stream": None, "elicitation_id": None, "outcome": "dropped"}
    )
    assert complete.record()["outcome"] == "dropped"
    failed = DetectorFailed.model_validate(
        {
            **WHERE,
            "decision_id": "2" * 32,
            "carrier": "input-required",
            "mode": None,
            "error": "ValueError",
            "policy_revision": "r",
        }
    )
    assert failed.record()["event"] == "policy.detector_failed"
    with pytest.raises(ValidationError):
        ElicitationAnswer.model_validate({**answer.model_dump(), "outcome": "maybe"})
    with pytest.raises(ValidationError):
        ElicitationAnswer.model_validate({**answer.model_dump(), "token_error": "a message"})
