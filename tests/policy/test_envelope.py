"""Layer 0: shape and size of elicitation params against the MCP schema and the limits."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.detect.config import Limits
from gateway.detect.findings import Reason
from gateway.policy.envelope import check_envelope, serialized_size

LIMITS = Limits()


def _form(**props: Any) -> dict[str, Any]:
    return {
        "message": "Tell us about you",
        "requestedSchema": {"type": "object", "properties": props},
    }


def _reasons(params: Any, limits: Limits = LIMITS) -> list[tuple[str, str]]:
    return [(f.reason.value, f.path) for f in check_envelope(params, limits).findings]


# Every primitive schema of the 2025-11-25 / 2026-07-28 spec, as the spec's own examples use them.
SPEC_PROPERTIES: list[dict[str, Any]] = [
    {"type": "string", "title": "Name", "minLength": 1, "maxLength": 100, "default": "x"},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "uri"},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "date-time"},
    {"type": "number", "minimum": 0, "maximum": 1.5, "default": 1},
    {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
    {"type": "boolean", "default": False, "description": "Subscribe?"},
    {"type": "string", "enum": ["red", "green"], "default": "red"},
    {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
    {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
    {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1},
    {
        "type": "array",
        "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
        "default": ["a"],
        "maxItems": 2,
    },
]


@pytest.mark.parametrize("prop", SPEC_PROPERTIES)
def test_spec_primitives_are_valid(prop: dict[str, Any]) -> None:
    env = check_envelope(_form(field=prop), LIMITS)
    assert env.findings == ()
    assert env.mode == "form"
    assert env.inspectable


def test_required_and_schema_keyword() -> None:
    params = _form(name={"type": "string"})
    params["requestedSchema"]["required"] = ["name"]
    params["requestedSchema"]["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    assert _reasons(params) == []


def test_mode_absent_is_form_and_unknown_annotations_are_tolerated() -> None:
    params = _form(code={"type": "string", "pattern": "^[0-9]{6}$", "x-ui": "otp"})
    params["_meta"] = {"k": "v"}
    assert _reasons(params) == []


@pytest.mark.parametrize(
    ("prop", "path"),
    [
        ({"type": "object", "properties": {}}, "$.requestedSchema.properties.f.type"),
        ({"$ref": "#/defs/x", "type": "string"}, '$.requestedSchema.properties.f["$ref"]'),
        ({"type": "string", "format": "password"}, "$.requestedSchema.properties.f.format"),
        ({"type": "strng"}, "$.requestedSchema.properties.f.type"),
        ({"title": "no type"}, "$.requestedSchema.properties.f.type"),
        ({"type": "string", "default": 5}, "$.requestedSchema.properties.f.default"),
        ({"type": "string", "minLength": -1}, "$.requestedSchema.properties.f.minLength"),
        ({"type": "string", "maxLength": True}, "$.requestedSchema.properties.f.maxLength"),
        ({"type": "integer", "default": 1.5}, "$.requestedSchema.properties.f.default"),
        ({"type": "number", "minimum": "0"}, "$.requestedSchema.properties.f.minimum"),
        ({"type": "number", "maximum": True}, "$.requestedSchema.properties.f.maximum"),
        ({"type": "boolean", "default": "yes"}, "$.requestedSchema.properties.f.default"),
        ({"type": "string", "enum": ["a", 1]}, "$.requestedSchema.properties.f.enum[1]"),
        ({"type": "string", "enum": "a"}, "$.requestedSchema.properties.f.enum"),
        (
            {"type": "string", "enum": ["a"], "enumNames": ["A", "B"]},
            "$.requestedSchema.properties.f.enumNames",
        ),
        ({"type": "string", "oneOf": [{"const": "a"}]}, "$.requestedSchema.properties.f.oneOf[0]"),
        ({"type": "array", "items": {"type": "object"}}, "$.requestedSchema.properties.f.items"),
        ({"type": "array"}, "$.requestedSchema.properties.f.items"),
        ({"type": "string", "allOf": [{"type": "string"}]}, "$.requestedSchema.properties.f.allOf"),
        ({"type": "string", "title": 3}, "$.requestedSchema.properties.f.title"),
        ("string", "$.requestedSchema.properties.f"),
    ],
)
def test_schema_violations(prop: Any, path: str) -> None:
    assert ("schema-violation", path) in _reasons(_form(f=prop))


def test_requested_schema_shape() -> None:
    base = {"message": "m"}
    assert _reasons({**base}) == [("schema-violation", "$.requestedSchema")]
    assert _reasons({**base, "requestedSchema": []}) == [("schema-violation", "$.requestedSchema")]
    bad_type = {**base, "requestedSchema": {"type": "array", "properties": {}}}
    assert _reasons(bad_type) == [("schema-violation", "$.requestedSchema.type")]
    no_props = {**base, "requestedSchema": {"type": "object"}}
    assert _reasons(no_props) == [("schema-violation", "$.requestedSchema.properties")]
    ref = {**base, "requestedSchema": {"type": "object", "properties": {}, "$defs": {}}}
    assert _reasons(ref) == [("schema-violation", '$.requestedSchema["$defs"]')]


def test_required_entries_must_be_strings() -> None:
    """Issue 10: a ``required`` name without a property is sloppy but harmless (the client cannot
    collect an undefined field), so it is no longer a schema violation; a non-string still is."""
    params = _form(a={"type": "string"})
    params["requestedSchema"]["required"] = ["a", "b", 3]
    assert _reasons(params) == [("schema-violation", "$.requestedSchema.required[2]")]
    params["requestedSchema"]["required"] = "a"
    assert _reasons(params) == [("schema-violation", "$.requestedSchema.required")]


def test_form_message_must_be_string() -> None:
    params = _form(a={"type": "string"})
    params["message"] = ["hi"]
    env = check_envelope(params, LIMITS)
    assert [(f.reason, f.path) for f in env.findings] == [(Reason.MALFORMED, "$.message")]
    assert not env.inspectable


@pytest.mark.parametrize("params", [[], "x", 1, None, True])
def test_params_must_be_object(params: Any) -> None:
    assert _reasons(params) == [("malformed", "$")]


@pytest.mark.parametrize("mode", ["sms", "", None, 1, "FORM"])
def test_unknown_mode_is_malformed(mode: Any) -> None:
    env = check_envelope({"mode": mode, "message": "m", "url": "https://example.com"}, LIMITS)
    assert [(f.reason.value, f.path) for f in env.findings] == [("malformed", "$.mode")]
    assert env.mode is None


def test_url_mode() -> None:
    ok = {"mode": "url", "message": "Connect", "url": "https://example.com", "elicitationId": "1"}
    assert check_envelope(ok, LIMITS).findings == ()
    no_id = {"mode": "url", "message": "Connect", "url": "https://example.com"}
    assert check_envelope(no_id, LIMITS).findings == ()  # 2026-07-28 has no elicitationId
    bad = {"mode": "url", "message": 1, "url": ["x"], "elicitationId": 7}
    assert _reasons(bad) == [
        ("malformed", "$.message"),
        ("malformed", "$.url"),
        ("malformed", "$.elicitationId"),
    ]
    assert not check_envelope({"mode": "url"}, LIMITS).inspectable


def test_oversize_bytes_stops_everything() -> None:
    params = _form(**{f"f{i}": {"type": "object"} for i in range(10)})
    params["message"] = "x" * 2000
    env = check_envelope(params, Limits(max_bytes=1000))
    assert [(f.reason.value, f.path, f.detail) for f in env.findings] == [
        ("oversize", "$", "bytes")
    ]
    assert env.mode is None
    assert not env.inspectable


def test_serialized_size_counts_utf8_bytes() -> None:
    assert serialized_size({"a": "é"}) == len('{"a":"é"}'.encode())


def test_too_many_properties() -> None:
    params = _form(**{f"f{i}": {"type": "string"} for i in range(4)})
    env = check_envelope(params, Limits(max_properties=3))
    assert [(f.reason.value, f.path) for f in env.findings] == [
        ("oversize", "$.requestedSchema.properties")
    ]
    assert not env.inspectable


def test_long_string_and_enum() -> None:
    limits = Limits(max_string=100, max_enum=3)
    params = _form(
        d={"type": "string", "description": "y" * 101},
        e={"type": "string", "enum": ["a", "b", "c", "d"]},
    )
    assert _reasons(params, limits) == [
        ("oversize", "$.requestedSchema.properties.d.description"),
        ("oversize", "$.requestedSchema.properties.e.enum"),
    ]


def test_depth_limit() -> None:
    deep: Any = "x"
    for _ in range(20):
        deep = {"k": deep}
    params = _form(a={"type": "string"})
    params["_meta"] = deep
    assert ("oversize", "$") in _reasons(params)


def test_extreme_nesting_does_not_raise() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert _reasons({"message": "m", "requestedSchema": deep}) == [("oversize", "$")]


def test_not_json_serialisable() -> None:
    assert _reasons({"message": {1, 2}}) == [("malformed", "$")]


def test_members_of_the_other_mode_are_malformed() -> None:
    form = _form(a={"type": "string"})
    form["url"] = "https://example.com/continue"
    assert _reasons(form) == [("malformed", "$.url")]
    url: dict[str, Any] = {"mode": "url", "message": "Open", "url": "https://x.example/"}
    url["requestedSchema"] = {"type": "object", "properties": {}}
    assert _reasons(url) == [("malformed", "$.requestedSchema")]


def test_huge_property_names_are_malformed() -> None:
    assert _reasons(_form(**{"a" * 5000: {"type": "string"}})) == [
        ("malformed", "$.requestedSchema.properties")
    ]
    assert _reasons(_form(**{"a" * 200: {"type": "string"}})) == []


def test_nested_additional_properties() -> None:
    params = _form(a={"type": "string"})
    params["requestedSchema"]["additionalProperties"] = {"type": "object", "properties": {}}
    assert _reasons(params) == [("schema-violation", "$.requestedSchema.additionalProperties")]
    params["requestedSchema"]["additionalProperties"] = False
    assert _reasons(params) == []


def test_elicitation_id_only_required_in_the_handshake_era() -> None:
    url = {"mode": "url", "message": "Open", "url": "https://example.com/"}
    assert [
        (f.reason.value, f.path) for f in check_envelope(url, LIMITS, "handshake").findings
    ] == [("malformed", "$.elicitationId")]
    assert check_envelope(url, LIMITS, "modern").findings == ()
    assert check_envelope(url, LIMITS).findings == ()  # era unknown: the rule is off
    assert check_envelope({**url, "elicitationId": "e1"}, LIMITS, "handshake").findings == ()


def test_national_ids_in_a_message_warn() -> None:
    """Checksum-valid national IDs beyond the generic finder's (PESEL, TC Kimlik) in a message."""
    from gateway.detect.url_pii import national_ids_in_text

    assert national_ids_in_text("Dane zamawiającego: PESEL 68050493720.")
    assert national_ids_in_text("T.C. kimlik no 71203208340 ile başvurunuz alındı.")
    assert not national_ids_in_text("Order 12345678901 shipped, call +48 600 123 456")
