"""The sound pre-check for large bodies: no false "cannot carry" for any carrier spelling."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.elicitation import from_server
from gateway.jsonrpc import classify, parse_json
from gateway.markers import FAST_PATH_MIN_BYTES, may_carry_elicitation, needs_inspection

FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
CARRIERS: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": FORM},
    {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32042, "message": "x", "data": {"elicitations": [FORM]}},
    },
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"inputRequests": {"k": {"method": "elicitation/create", "params": FORM}}},
    },
    {
        "jsonrpc": "2.0",
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": "e"},
    },
]


@pytest.mark.parametrize("message", CARRIERS)
@pytest.mark.parametrize("ascii_only", [True, False])
def test_every_carrier_is_caught_however_it_is_spelled(
    message: dict[str, object], ascii_only: bool
) -> None:
    raw = json.dumps(message, ensure_ascii=ascii_only).encode()
    assert from_server(classify(parse_json(raw, max_bytes=10**6)))
    assert may_carry_elicitation(raw)
    # Escaping every letter of the text still trips the check (through "\\u").
    escaped = "".join(f"\\u{ord(c):04x}" if c.isalpha() else c for c in raw.decode()).encode()
    assert from_server(classify(parse_json(escaped, max_bytes=10**6)))
    assert may_carry_elicitation(escaped)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_bytes_without_markers_never_hold_an_elicitation(value: object) -> None:
    for wrapper in (
        {"jsonrpc": "2.0", "id": 1, "result": value},
        {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"v": value}},
    ):
        raw = json.dumps(wrapper, ensure_ascii=False).encode()
        if not may_carry_elicitation(raw):
            assert from_server(classify(parse_json(raw, max_bytes=10**7, max_depth=1000))) == []


def test_only_large_clean_bodies_skip_parsing() -> None:
    tools = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"tools": [{"name": f"t{i}", "description": "d" * 100} for i in range(1000)]},
    }
    big = json.dumps(tools).encode()
    assert len(big) >= FAST_PATH_MIN_BYTES
    assert not needs_inspection(big)
    assert needs_inspection(big.replace(b'"t1"', b'"elicitation"'))
    assert needs_inspection(b'{"jsonrpc":"2.0","id":1,"result":{}}')  # small: always parsed


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_json_in_utf16_or_utf32_is_always_inspected(encoding: str) -> None:
    """Python's json.loads (and so SDK clients) decodes UTF-16/32 JSON bytes: the ASCII words
    are not in those bytes, so the NUL bytes must force a parse."""
    padding = {"pad": "p" * FAST_PATH_MIN_BYTES}
    raw = json.dumps({**CARRIERS[0], **padding}).encode(encoding)
    assert json.loads(raw)["method"] == "elicitation/create"  # a client could read it …
    assert needs_inspection(raw)  # … so the gateway never forwards it unparsed
