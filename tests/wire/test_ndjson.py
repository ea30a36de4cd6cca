"""Newline-delimited JSON-RPC framing: lines cut as chunks arrive, a size cap that never
buffers more than the cap, strict reading of each line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway import errors
from gateway.errors import ProtocolError
from gateway.wire.jsonrpc import JSONParseError
from gateway.wire.ndjson import Line, LineSplitter, TooLong, encode_line, read_line


def test_lines_split_across_chunks_come_out_whole() -> None:
    s = LineSplitter(100)
    assert s.feed(b'{"a"') == []
    assert s.feed(b':1}\n{"b":2}\n{"c"') == [Line(b'{"a":1}'), Line(b'{"b":2}')]
    assert s.feed(b":3}\n") == [Line(b'{"c":3}')]
    assert s.finish() == []


def test_blank_lines_are_skipped_and_crlf_kept_for_the_parser() -> None:
    s = LineSplitter(100)
    assert s.feed(b"\n  \r\n{}\r\n") == [Line(b"{}\r")]
    assert read_line(b'{"jsonrpc":"2.0","method":"x"}\r', max_bytes=100).method == "x"


def test_a_last_line_without_newline_is_still_a_line() -> None:
    s = LineSplitter(100)
    assert s.feed(b'{"a":1}') == []
    assert s.finish() == [Line(b'{"a":1}')]


def test_an_overlong_line_is_reported_once_and_skipped_without_losing_the_next() -> None:
    s = LineSplitter(10)
    frames = s.feed(b"0123456789AB")  # over the cap, no newline yet
    assert frames == []
    assert s.feed(b"CDEF\nok-line\n") == [TooLong(16), Line(b"ok-line")]


def test_a_line_of_exactly_the_cap_passes() -> None:
    s = LineSplitter(4)
    assert s.feed(b"abcd\nabcde\n") == [Line(b"abcd"), TooLong(5)]


def test_the_splitter_holds_no_more_than_the_cap() -> None:
    s = LineSplitter(1000)
    for _ in range(100):
        s.feed(b"x" * 999)
    assert s._held == 0  # skipping: the bytes were dropped, not kept
    assert s.finish() == [TooLong(99_900)]


def test_an_overlong_last_line_at_the_end_of_the_stream_is_reported() -> None:
    s = LineSplitter(3)
    s.feed(b"abcdef")
    assert s.finish() == [TooLong(6)]


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        LineSplitter(0)


@given(
    st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b), max_size=8),
    st.integers(min_value=1, max_value=17),
)
def test_any_chunking_gives_the_same_lines(lines: list[bytes], size: int) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    s = LineSplitter(1 << 20)
    got = []
    for i in range(0, len(stream), size):
        got += s.feed(stream[i : i + size])
    got += s.finish()
    expected = [Line(line) for line in lines if line.strip(b" \t\r\n")]
    assert got == expected


def test_read_line_is_the_strict_parser() -> None:
    msg = read_line(b'{"jsonrpc":"2.0","id":1,"result":{}}', max_bytes=100)
    assert (msg.kind, msg.id) == ("response", 1)
    with pytest.raises(JSONParseError, match="duplicate-key"):
        read_line(b'{"jsonrpc":"2.0","id":1,"result":{},"result":{}}', max_bytes=100)
    with pytest.raises(JSONParseError, match="invalid-json"):
        read_line(b"Server started on stdio", max_bytes=100)
    with pytest.raises(JSONParseError, match="too-large"):
        read_line(b'{"jsonrpc":"2.0","method":"x"}', max_bytes=10)


def test_read_line_refuses_a_batch_and_non_objects() -> None:
    with pytest.raises(ProtocolError, match="batches") as batch:
        read_line(b'[{"jsonrpc":"2.0","method":"x"}]', max_bytes=100)
    assert batch.value.jsonrpc_code == errors.INVALID_REQUEST
    with pytest.raises(ProtocolError, match="must be an object"):
        read_line(b"42", max_bytes=100)


def test_encode_line_refuses_a_raw_newline() -> None:
    assert encode_line(b"{}") == b"{}\n"
    with pytest.raises(ValueError, match="newline"):
        encode_line(b'{"a":\n1}')
