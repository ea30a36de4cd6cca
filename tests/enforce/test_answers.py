"""Outbound validation of accepted form answers."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.detect.findings import Finding, Reason
from gateway.enforce.answers import check_answer

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number"},
        "ok": {"type": "boolean"},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "S"}]},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
    },
    "required": ["name"],
}
GOOD = {
    "name": "Ada",
    "email": "ada@example.org",
    "site": "https://example.org/",
    "born": "1815-12-10",
    "at": "2026-01-01T10:00:00Z",
    "age": 36,
    "score": 1.5,
    "ok": True,
    "color": "red",
    "size": "s",
    "tags": ["a", "b"],
}


def test_valid_answer_has_no_findings() -> None:
    assert check_answer(SCHEMA, GOOD) == []
    assert check_answer(SCHEMA, {"name": "A", "age": 36.0}) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", ""),
        ("name", "x" * 21),
        ("name", 3),
        ("email", "not-an-email"),
        ("site", "no scheme"),
        ("born", "10/12/1815"),
        ("at", "yesterday"),
        ("age", 200),
        ("age", 1.5),
        ("age", True),
        ("score", "1"),
        ("ok", "true"),
        ("color", "green"),
        ("size", "m"),
        ("tags", ["c"]),
        ("tags", ["a", "b", "a"]),
        ("tags", "a"),
    ],
)
def test_invalid_values(field: str, value: Any) -> None:
    findings = check_answer(SCHEMA, {**GOOD, field: value})
    assert [(f.reason, f.path, f.detail) for f in findings] == [
        (Reason.SCHEMA_VIOLATION, f"$.content.{field}", "invalid-value")
    ]


def test_missing_required_and_unexpected_fields() -> None:
    findings = check_answer(SCHEMA, {"extra": "x"})
    assert {(f.path, f.detail) for f in findings} == {
        ("$.content.name", "missing"),
        ("$.content.extra", "unexpected-field"),
    }


def test_non_object_content_and_schema() -> None:
    assert check_answer(SCHEMA, ["x"])[0].detail == "not-an-object"
    assert check_answer(None, {})[0].detail == "no-schema"


def test_secret_scanner_runs_on_every_string() -> None:
    def scan(text: str, path: str) -> list[Finding]:
        return [Finding(Reason.SECRET_VALUE, path)] if "AKIA" in text else []

    findings = check_answer(SCHEMA, {**GOOD, "name": "AKIA1234"}, scan)
    assert [(f.reason, f.path) for f in findings] == [(Reason.SECRET_VALUE, "$.content.name")]
    # values never appear in findings
    assert "AKIA" not in repr(findings)
