"""Tests for gateway/wire/jsonrpc.py: strict JSON parsing and JSON-RPC 2.0 classification."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors import INVALID_REQUEST, PARSE_ERROR, ProtocolError
from gateway.wire.jsonrpc import (
    JSONParseError,
    Message,
    classify,
    dumps,
    error_response,
    parse_json,
    parse_message,
)
from tests.strategies import json_noise, json_values, jsonrpc_messages

MB = 1024 * 1024
REASONS = {
    "invalid-utf8",
    "invalid-json",
    "duplicate-key",
    "non-finite-number",
    "too-deep",
    "too-large",
    "lone-surrogate",
    "integer-out-of-range",
}


def reason_of(data: bytes | str, *, max_bytes: int = MB, max_depth: int = 64) -> str:
    with pytest.raises(JSONParseError) as info:
        parse_json(data, max_bytes=max_bytes, max_depth=max_depth)
    assert info.value.jsonrpc_code == PARSE_ERROR
    assert isinstance(info.value, ProtocolError)
    assert info.value.reason in REASONS
    return info.value.reason


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


# --- parse_json: one test group per reason code ---------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"\xff",
        b'"\xc3"',  # truncated sequence
        b'"\xc0\xaf"',  # overlong "/"
        b'"\xed\xa0\x80"',  # UTF-8-encoded surrogate (CESU / WTF-8)
        b'"\xf4\x90\x80\x80"',  # above U+10FFFF
        '"\u00e9"'.encode("latin-1"),
        '{"a":1}'.encode("utf-16"),  # no UTF-16/32 sniffing
    ],
)
def test_invalid_utf8(data: bytes) -> None:
    assert reason_of(data) == "invalid-utf8"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b" ",
        b'{"a":1}x',
        b'{"a":1}{"a":1}',
        b"\xef\xbb\xbf{}",  # a BOM is not JSON whitespace
        b"{'a':1}",
        b"[1,]",
        b'{"a":1,}',
        b"01",
        b"+1",
        b".5",
        b"1.",
        b'"\x01"',  # raw control character in a string
        b'"\\x41"',
        b"\x0c1",  # form feed is not JSON whitespace
        "\u00a01".encode(),
        "\u0661".encode(),  # ARABIC-INDIC DIGIT ONE: JSON digits are ASCII only
        "[1\u0661]".encode(),
        b"nan",
        b"undefined",
        b"[1 2]",
    ],
)
def test_invalid_json(data: bytes) -> None:
    assert reason_of(data) == "invalid-json"


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1,"a":2}',
        b'{"a":1,"a":1}',
        b'{"a":1,"\\u0061":2}',  # the same key, escaped differently
        b'{"x":{"b":[{"c":1,"c":2}]}}',
        b'[{"method":"tools/list","method":"elicitation/create"}]',
    ],
)
def test_duplicate_key(data: bytes) -> None:
    assert reason_of(data) == "duplicate-key"


def test_duplicate_key_error_names_no_value() -> None:
    with pytest.raises(JSONParseError) as info:
        parse_json(b'{"password":"hunter2","password":"x"}', max_bytes=MB)
    assert "hunter2" not in str(info.value)
    assert "password" not in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        b"NaN",
        b"[Infinity]",
        b'{"a":-Infinity}',
        b"1e400",
        b"-1e400",
        b"[1E+999999]",
        b"1" * 400 + b".0",
    ],
)
def test_non_finite_number(data: bytes) -> None:
    assert reason_of(data) == "non-finite-number"


def test_finite_extremes_are_accepted() -> None:
    assert parse_json(b"[1e308, -1e308, 1e-400, 5e-324]", max_bytes=MB) == [
        1e308,
        -1e308,
        0.0,
        5e-324,
    ]


@pytest.mark.parametrize(
    "data",
    [
        str(2**64).encode(),
        str(-(2**64)).encode(),
        str(10**30).encode(),
        b'{"id":' + b"9" * 5000 + b"}",  # beyond int()'s 4300-digit limit: no ValueError
        b'{"id":-' + b"9" * 5000 + b"}",
    ],
)
def test_integer_out_of_range(data: bytes) -> None:
    assert reason_of(data) == "integer-out-of-range"


def test_integers_just_inside_the_range() -> None:
    data = f"[{2**64 - 1},{-(2**64 - 1)},0,-0]".encode()
    assert parse_json(data, max_bytes=MB) == [2**64 - 1, -(2**64 - 1), 0, 0]


def test_long_digit_runs_inside_strings_are_fine() -> None:
    data = b'{"token":"123456789012345678901234567890","e":"e+999"}'
    assert parse_json(data, max_bytes=MB) == json.loads(data)


@pytest.mark.parametrize(
    "data",
    [
        b'"\\ud800"',
        b'"\\uDFFF"',
        b'"a\\udc00\\ud800b"',  # reversed pair
        b'"\\ud800\\u0041"',
        b'{"\\ud83d":1}',  # in a key
        b'[1,{"a":["\\udbff"]}]',
    ],
)
def test_lone_surrogate(data: bytes) -> None:
    assert reason_of(data) == "lone-surrogate"


def test_lone_surrogate_in_str_input() -> None:
    assert reason_of('"\ud800"') == "lone-surrogate"


def test_escaped_surrogate_pair_is_one_character() -> None:
    assert parse_json(b'["\\ud83d\\ude00", "\\\\ud800"]', max_bytes=MB) == ["😀", "\\ud800"]


def test_too_large_is_checked_before_parsing() -> None:
    assert reason_of(b"[" * 101, max_bytes=100) == "too-large"
    assert parse_json(b" " * 99 + b"1", max_bytes=100) == 1


def test_too_large_counts_utf8_bytes_of_str_input() -> None:
    text = '"' + "é" * 49 + '"'  # 51 characters, 100 bytes
    assert parse_json(text, max_bytes=100) == "é" * 49
    assert reason_of(text, max_bytes=99) == "too-large"


@pytest.mark.parametrize(
    ("data", "max_depth", "ok"),
    [
        (b"[" * 64 + b"]" * 64, 64, True),
        (b"[" * 65 + b"]" * 65, 64, False),
        (b'{"a":' * 64 + b"1" + b"}" * 64, 64, True),
        (b'{"a":' * 65 + b"1" + b"}" * 65, 64, False),
        (b'[{"a":[{"b":[]}]}]', 5, True),
        (b'[{"a":[{"b":[]}]}]', 4, False),
        (b"[[],[[]],[[[]]]]", 4, True),
        (b"[[],[[]],[[[]]]]", 3, False),
        (b"1", 0, True),
        (b"[]", 0, False),
        (b'["[[[[[[", "{{{{", "]]]"]', 1, True),  # brackets in strings do not nest
        (b'["\\"[[[[", "\\\\", "[[[[\\\\\\"[[["]', 1, True),  # escaped quotes and backslashes
        (b'[["\\\\"], [["\\""]]]', 3, True),
        (b'[["\\\\"], [["\\""]]]', 2, False),
    ],
)
def test_depth_limit(data: bytes, max_depth: int, ok: bool) -> None:
    if ok:
        assert parse_json(data, max_bytes=MB, max_depth=max_depth) == json.loads(data)
    else:
        assert reason_of(data, max_depth=max_depth) == "too-deep"


def test_very_deep_input_is_a_fast_clean_error() -> None:
    start = time.perf_counter()
    assert reason_of(b"[" * 1_000_000, max_bytes=2 * MB) == "too-deep"
    assert reason_of(b'{"a":' * 200_000, max_bytes=2 * MB) == "too-deep"
    assert reason_of(b"[" * 50_000 + b"]" * 50_000, max_bytes=2 * MB) == "too-deep"
    assert time.perf_counter() - start < 2


def test_valid_but_deeper_than_the_limit_is_too_deep() -> None:
    data = b"[" * 500 + b"]" * 500
    assert reason_of(data) == "too-deep"
    assert parse_json(data, max_bytes=MB, max_depth=500) == json.loads(data)


# --- parse_json: properties -----------------------------------------------------------------------


@given(json_values, st.booleans())
def test_valid_json_parses_like_json_loads(value: Any, ensure_ascii: bool) -> None:
    data = json.dumps(value, ensure_ascii=ensure_ascii).encode()
    assert parse_json(data, max_bytes=MB, max_depth=100) == json.loads(data)
    assert parse_json(data.decode(), max_bytes=MB, max_depth=100) == json.loads(data)


_tricky_text = st.text(alphabet='[]{}"\\ :,a', max_size=8)
_tricky_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.integers(min_value=-9, max_value=9) | _tricky_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_tricky_text, children),
    max_leaves=30,
)


@given(_tricky_values, st.integers(min_value=0, max_value=8), st.booleans())
def test_depth_limit_matches_the_real_depth(value: Any, max_depth: int, spaced: bool) -> None:
    data = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":")).encode()
    if depth_of(value) > max_depth:
        assert reason_of(data, max_depth=max_depth) == "too-deep"
    else:
        assert parse_json(data, max_bytes=MB, max_depth=max_depth) == value


@given(json_noise | st.binary(max_size=40) | st.text(max_size=20).map(str.encode))
def test_any_bytes_give_a_value_or_json_parse_error(data: bytes) -> None:
    try:
        value = parse_json(data, max_bytes=MB, max_depth=8)
    except JSONParseError as exc:
        reason = exc.reason
    else:
        assert value == json.loads(data.decode("utf-8"))
        return
    assert reason in REASONS


# --- classify -------------------------------------------------------------------------------------


def test_classify_request_from_the_wire() -> None:
    obj = json.loads(
        '{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"form",'
        '"message":"Profile needed for billing","requestedSchema":{"type":"object"}}}'
    )
    assert classify(obj) == Message(
        "request", 1, "elicitation/create", obj["params"], None, None, obj
    )


def test_classify_notification() -> None:
    obj = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert classify(obj) == Message(
        "notification", None, "notifications/initialized", None, None, None, obj
    )


def test_classify_response_and_error() -> None:
    ok = {"jsonrpc": "2.0", "id": "a", "result": {"action": "accept"}}
    assert classify(ok) == Message("response", "a", None, None, {"action": "accept"}, None, ok)
    err: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Session not found"},
    }
    assert classify(err) == Message("error", None, None, None, None, err["error"], err)


def test_classify_null_result_is_a_response() -> None:
    assert classify({"jsonrpc": "2.0", "id": 3, "result": None}).kind == "response"


@pytest.mark.parametrize(
    "obj",
    [
        [],
        "x",
        None,
        {},
        {"id": 1, "method": "m"},  # no jsonrpc
        {"jsonrpc": "1.0", "id": 1, "method": "m"},
        {"jsonrpc": 2.0, "id": 1, "method": "m"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": True, "method": "m"},
        {"jsonrpc": "2.0", "id": 1.0, "method": "m"},
        {"jsonrpc": "2.0", "id": None, "method": "m"},
        {"jsonrpc": "2.0", "id": [1], "method": "m"},
        {"jsonrpc": "2.0", "id": 1, "method": "m", "params": "x"},
        {"jsonrpc": "2.0", "id": 1, "method": "m", "params": None},
        {"jsonrpc": "2.0", "id": 1, "method": "m", "result": {}},  # request or response?
        {"jsonrpc": "2.0", "method": "m", "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1},  # neither result nor error
        {"jsonrpc": "2.0", "result": {}},  # no id
        {"jsonrpc": "2.0", "id": None, "result": {}},
        {"jsonrpc": "2.0", "id": False, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1, "error": "boom"},
        {"jsonrpc": "2.0", "id": 1, "error": {"message": "x"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600.0, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": None}},
        {"jsonrpc": "2.0", "id": 1.5, "error": {"code": 1, "message": "x"}},
    ],
)
def test_classify_rejects_non_jsonrpc(obj: Any) -> None:
    with pytest.raises(ProtocolError) as info:
        classify(obj)
    assert not isinstance(info.value, JSONParseError)
    assert info.value.jsonrpc_code == INVALID_REQUEST


@given(jsonrpc_messages())
def test_valid_messages_round_trip(msg: dict[str, Any]) -> None:
    parsed = parse_message(dumps(msg), max_bytes=MB, max_depth=100)
    assert isinstance(parsed, Message)
    assert parsed.obj == msg
    assert parsed.id == msg.get("id")
    if "method" in msg:
        assert parsed.kind == ("request" if "id" in msg else "notification")
        assert (parsed.method, parsed.params) == (msg["method"], msg.get("params"))
    else:
        assert parsed.kind == ("response" if "result" in msg else "error")
        assert (parsed.result, parsed.error) == (msg.get("result"), msg.get("error"))


# --- parse_message --------------------------------------------------------------------------------


def test_parse_message_batch() -> None:
    data = b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]'
    batch = parse_message(data, max_bytes=MB)
    assert isinstance(batch, list)
    assert [m.kind for m in batch] == ["request", "notification"]


@pytest.mark.parametrize("data", [b"[]", b"1", b'"x"', b"null", b'[{"jsonrpc":"2.0"}]'])
def test_parse_message_rejects_non_messages(data: bytes) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_message(data, max_bytes=MB)
    assert info.value.jsonrpc_code == INVALID_REQUEST


def test_parse_message_parse_error_is_minus_32700() -> None:
    with pytest.raises(JSONParseError) as info:
        parse_message(b'{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}', max_bytes=MB)
    assert info.value.reason == "duplicate-key"
    assert info.value.jsonrpc_code == PARSE_ERROR


# --- dumps / error_response -----------------------------------------------------------------------


def test_dumps_is_compact_utf8() -> None:
    assert dumps({"a": [1, "é\u2028"], "b": None}) == '{"a":[1,"é\u2028"],"b":null}'.encode()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "\ud800"])
def test_dumps_refuses_what_parse_json_would_reject(value: object) -> None:
    with pytest.raises(ValueError, match=r"."):
        dumps({"v": value})


def test_error_response() -> None:
    assert error_response(7, -32600, "Invalid request") == (
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request"}}'
    )
    data = error_response(None, -31010, "Blocked", {"reasons": ["secret-field"]})
    msg = parse_message(data, max_bytes=MB)
    assert isinstance(msg, Message)
    assert msg.kind == "error"
    assert msg.error == {
        "code": -31010,
        "message": "Blocked",
        "data": {"reasons": ["secret-field"]},
    }
