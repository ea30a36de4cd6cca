"""The sound pre-check for large bodies: no false "cannot carry" for any carrier spelling."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.carriers.extract import from_server
from gateway.wire.jsonrpc import classify, parse_json
from gateway.wire.markers import (
    FAST_PATH_MIN_BYTES,
    MarkerScan,
    may_carry_elicitation,
    needs_inspection,
)

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


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=80)
    | st.lists(
        st.sampled_from([b"elicitation", b"inputRequests", b"\\u", b"\\", b"\x00", b"ab", b"n"])
    ).map(b"".join),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
)
def test_scanning_chunk_by_chunk_agrees_with_scanning_the_whole(
    body: bytes, cuts: list[int]
) -> None:
    scan = MarkerScan()
    start = 0
    for cut in [*sorted({min(c, len(body)) for c in cuts}), len(body)]:
        scan.feed(body[start:cut])
        start = cut
    assert scan.found == may_carry_elicitation(body)


@pytest.mark.parametrize("word", [b"elicitation", b"inputRequests", b"\\u"])
def test_a_word_split_across_chunks_is_found(word: bytes) -> None:
    body = b"x" * 100 + word + b"y" * 100
    for at in range(100, 100 + len(word) + 1):
        for chunk in (1, 3, 7, 50):
            scan = MarkerScan()
            scan.feed(body[: at - chunk])
            scan.feed(body[at - chunk : at])
            scan.feed(body[at:])
            assert scan.found, (word, at, chunk)
