"""Tests for gateway/wire/sse.py: the incremental SSE decoder and the encoder."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors import UpstreamProtocolError
from gateway.wire.sse import SSEBlock, SSEDecoder, SSEError, encode_event
from tests.strategies import (
    BOM,
    Event,
    events,
    newlines,
    split_points,
    sse_noise,
    sse_streams,
)


def decode_all(chunks: list[bytes], max_block_bytes: int = 4 << 20) -> tuple[list[SSEBlock], bytes]:
    decoder = SSEDecoder(max_block_bytes=max_block_bytes)
    blocks = [block for chunk in chunks for block in decoder.feed(chunk)]
    end_blocks, tail = decoder.finish()
    return blocks + end_blocks, tail


def outcome(chunks: list[bytes]) -> tuple[list[SSEBlock], bytes] | str:
    try:
        return decode_all(chunks)
    except SSEError:
        return "SSEError"


# --- the SDK's real byte shapes (protocol.md §3.5, §5.3) ------------------------------------------


def test_sdk_priming_event_then_message() -> None:
    wire = (
        b"id: 2:14\r\ndata: \r\nretry: 300\r\n\r\n"
        b'id: 2:15\r\nevent: message\r\ndata: {"jsonrpc":"2.0","id":2,"result":{}}\r\n\r\n'
    )
    blocks = SSEDecoder().feed(wire)
    assert blocks == [
        SSEBlock(b"id: 2:14\r\ndata: \r\nretry: 300\r\n\r\n", "", "message", "2:14", 300),
        SSEBlock(
            b'id: 2:15\r\nevent: message\r\ndata: {"jsonrpc":"2.0","id":2,"result":{}}\r\n\r\n',
            '{"jsonrpc":"2.0","id":2,"result":{}}',
            "message",
            "2:15",
            None,
        ),
    ]
    assert all(block.is_dispatch for block in blocks)  # a priming event has (empty) data


def test_sdk_ping_comment_is_a_block_without_dispatch() -> None:
    decoder = SSEDecoder()
    [ping] = decoder.feed(b": ping - 2026-11-29 21:00:00.000000+00:00\r\n\r\n")
    assert ping.raw == b": ping - 2026-11-29 21:00:00.000000+00:00\r\n\r\n"
    assert ping.data is None
    assert not ping.is_dispatch
    assert decoder.close() == b""


def test_sdk_message_event() -> None:
    body = '{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"form"}}'
    wire = f"event: message\r\ndata: {body}\r\n\r\n".encode()
    assert SSEDecoder().feed(wire) == [SSEBlock(wire, body, "message", None, None)]


# --- field parsing (WHATWG HTML, "Interpreting an event stream") ----------------------------------


@pytest.mark.parametrize(
    ("line", "data"),
    [
        (b"data:x", "x"),  # no space after the colon
        (b"data: x", "x"),  # one space stripped
        (b"data:  x", " x"),  # only one
        (b"data: x ", "x "),  # trailing space kept
        (b"data", ""),  # no colon: the whole line is the field name, value empty
        (b"data:", ""),
        (b"data: a:b", "a:b"),  # only the first colon separates
    ],
)
def test_data_field_value(line: bytes, data: str) -> None:
    [block] = SSEDecoder().feed(line + b"\n\n")
    assert block.data == data


def test_data_lines_join_with_lf_and_event_defaults() -> None:
    [block] = SSEDecoder().feed(b"data: a\ndata:\ndata: b\nevent:\n\n")
    assert block.data == "a\n\nb"
    assert block.event == "message"  # an empty event type dispatches as "message"


def test_unknown_and_case_mismatched_fields_are_ignored() -> None:
    [block] = SSEDecoder().feed(b"DATA: x\nData: y\nfoo: bar\n\n")
    assert block.data is None
    assert not block.is_dispatch


def test_event_field_last_wins() -> None:
    [block] = SSEDecoder().feed(b"event: a\nevent: b\ndata: x\n\n")
    assert block.event == "b"


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c"])
def test_unicode_line_separators_are_not_sse_newlines(char: str) -> None:
    wire = f"data: a{char}data: b\r\n\r\n".encode()
    [block] = SSEDecoder().feed(wire)
    assert block.data == f"a{char}data: b"
    assert re.split(r"\r\n|\r|\n", f"a{char}b") == [f"a{char}b"]
    assert f"a{char}b".splitlines() == ["a", "b"]  # why str.splitlines must never be used


def test_comments_are_ignored_inside_an_event() -> None:
    [block] = SSEDecoder().feed(b"data: a\n: data: evil\n:\ndata: b\n\n")
    assert block.data == "a\nb"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (b"id: 7\n", "7"),
        (b"id\n", ""),
        (b"id:\n", ""),
        (b"id: a\0b\n", None),  # contains NUL: ignored
        (b"id: 1\nid: a\0b\n", "1"),  # ignored, so the earlier one stands
        (b"id: 1\nid: 2\n", "2"),
    ],
)
def test_id_field(lines: bytes, expected: str | None) -> None:
    [block] = SSEDecoder().feed(lines + b"data: x\n\n")
    assert block.id == expected


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (b"retry: 300\n", 300),
        (b"retry:0\n", 0),
        (b"retry: 12a\n", None),
        (b"retry: -1\n", None),
        (b"retry: 1.5\n", None),
        (b"retry: \n", None),
        (b"retry:  300\n", None),  # the second space is part of the value
        ("retry: \u0663\n".encode(), None),  # ARABIC-INDIC DIGIT THREE: not an ASCII digit
        (b"retry: 300\nretry: x\n", 300),  # ignored, so the earlier one stands
        (b"retry: 1000000000000000000000000000000\n", None),  # absurdly long: ignored
    ],
)
def test_retry_field(lines: bytes, expected: int | None) -> None:
    [block] = SSEDecoder().feed(lines + b"\n")
    assert block.retry == expected


def test_blank_lines_without_fields_are_blocks() -> None:
    assert SSEDecoder().feed(b"\n\r\n\r") == [
        SSEBlock(b"\n", None),
        SSEBlock(b"\r\n", None),
    ]


# --- line endings and chunk boundaries ------------------------------------------------------------


def test_cr_only_stream() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\rdata: b\r\r") == []  # the last "\r" could still be "\r\n"
    assert decoder.feed(b"data: c\r\r") == [SSEBlock(b"data: a\rdata: b\r\r", "a\nb")]
    assert decoder.finish() == ([SSEBlock(b"data: c\r\r", "c")], b"")  # EOF settles the "\r"


def test_cr_at_chunk_end_is_held_until_the_next_byte() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\r") == []
    assert decoder.feed(b"\n") == [SSEBlock(b"data: x\r\r\n", "x")]


def test_crlf_split_across_chunks_is_one_line_ending() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n\r") == []
    [block] = decoder.feed(b"\ndata: y\n")
    assert block == SSEBlock(b"data: x\r\n\r\n", "x")
    assert decoder.close() == b"data: y\n"


def test_bom_is_skipped_for_parsing_and_kept_in_raw() -> None:
    [block] = SSEDecoder().feed(BOM + b"data: x\n\n")
    assert block == SSEBlock(BOM + b"data: x\n\n", "x")


def test_bom_split_byte_by_byte() -> None:
    wire = BOM + b"event: e\ndata: x\n\n"
    blocks, tail = decode_all([wire[i : i + 1] for i in range(len(wire))])
    assert blocks == [SSEBlock(wire, "x", "e")]
    assert tail == b""


def test_only_one_bom_and_only_at_the_start() -> None:
    # A second BOM is part of the first field name, so "\ufeffdata" is an unknown field.
    [first] = SSEDecoder().feed(BOM + BOM + b"data: x\n\n")
    assert first.data is None
    [_, second] = SSEDecoder().feed(b"data: x\n\n" + BOM + b"data: y\n\n")
    assert second.data is None


def test_a_lone_bom_prefix_waits_then_fails_as_invalid_utf8() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef\xbb") == []
    with pytest.raises(SSEError):
        decoder.feed(b"data: x\n\n")


# --- failing closed -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b"data: \xff",
        b"data: \xc0\xaf",  # overlong encoding of "/"
        b"data: \xed\xa0\x80",  # an encoded surrogate
        b"data: \xe2\x80",  # truncated sequence
        b": \xff",  # even in a comment: the stream must be UTF-8
        b"\xffdata: x",
    ],
)
def test_invalid_utf8_raises(line: bytes) -> None:
    decoder = SSEDecoder()
    with pytest.raises(SSEError) as info:
        decoder.feed(line + b"\r\n\r\n")
    assert isinstance(info.value, UpstreamProtocolError)
    assert info.value.http_status == 502
    with pytest.raises(SSEError):  # the decoder stays failed
        decoder.feed(b"data: fine\n\n")


def test_invalid_utf8_in_an_incomplete_line_is_not_judged_yet() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: \xe2\x80") == []
    assert decoder.feed(b"\xa8\n\n") == [SSEBlock(b"data: \xe2\x80\xa8\n\n", "\u2028")]


def test_block_at_the_size_limit_passes_one_byte_more_fails() -> None:
    wire = b"data: " + b"x" * 10 + b"\n\n"  # 18 bytes
    assert SSEDecoder(max_block_bytes=18).feed(wire)[0].raw == wire
    with pytest.raises(SSEError):
        SSEDecoder(max_block_bytes=17).feed(wire)


def test_size_limit_is_checked_as_bytes_arrive() -> None:
    decoder = SSEDecoder(max_block_bytes=100)
    for _ in range(100):
        assert decoder.feed(b"x") == []
    with pytest.raises(SSEError):
        decoder.feed(b"x")


def test_size_limit_applies_per_block_not_per_stream() -> None:
    decoder = SSEDecoder(max_block_bytes=16)
    for _ in range(100):
        assert len(decoder.feed(b"data: 12345\n\n")) == 1


def test_comment_flood_without_blank_line_is_bounded() -> None:
    decoder = SSEDecoder(max_block_bytes=1000)
    for _ in range(1000 // 7):  # 7 bytes each: 994 bytes, still within the limit
        assert decoder.feed(b": ping\n") == []
    with pytest.raises(SSEError):
        decoder.feed(b": ping\n")


def test_long_line_in_small_chunks_is_linear() -> None:
    # Rescanning the buffer per chunk would scan ~256 GB here (measured: 13 s, against 0.12 s for
    # the scan offset); a scan offset scans the 8 MB once.
    size, step = 8 * 1024 * 1024, 128
    decoder = SSEDecoder(max_block_bytes=size + 16)
    chunk = b"y" * step
    start = time.perf_counter()
    assert decoder.feed(b"data: ") == []
    for _ in range(size // step):
        decoder.feed(chunk)
    [block] = decoder.feed(b"\n\n")
    assert block.data is not None
    assert len(block.data) == size
    assert time.perf_counter() - start < 3


def test_close_returns_the_incomplete_tail() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: 1\n\ndata: 2\n") == [SSEBlock(b"data: 1\n\n", "1")]
    assert decoder.close() == b"data: 2\n"


def test_close_refuses_to_hide_a_block_completed_by_the_end_of_stream() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: 1\r\r") == []
    with pytest.raises(SSEError):
        decoder.close()


def test_finish_delivers_a_block_completed_by_the_end_of_stream() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: 1\r\r") == []
    assert decoder.finish() == ([SSEBlock(b"data: 1\r\r", "1")], b"")


def test_feed_after_close_raises() -> None:
    decoder = SSEDecoder()
    assert decoder.close() == b""
    with pytest.raises(SSEError):
        decoder.feed(b"data: x\n\n")


# --- properties -----------------------------------------------------------------------------------


@given(sse_streams() | sse_noise | st.binary(max_size=64), st.data())
def test_any_chunking_yields_the_same_blocks(wire: bytes, data: st.DataObject) -> None:
    whole = outcome([wire])
    assert outcome(data.draw(split_points(wire))) == whole
    assert outcome([wire[i : i + 1] for i in range(len(wire))]) == whole


@given(sse_streams() | sse_noise | st.binary(max_size=200), st.data())
def test_any_bytes_give_blocks_or_sse_error(wire: bytes, data: st.DataObject) -> None:
    decoder = SSEDecoder(max_block_bytes=data.draw(st.integers(min_value=1, max_value=80)))
    raws: list[bytes] = []
    try:
        for chunk in data.draw(split_points(wire)):
            raws.extend(block.raw for block in decoder.feed(chunk))
        end_blocks, tail = decoder.finish()
    except SSEError:
        return
    raws.extend(block.raw for block in end_blocks)
    assert b"".join(raws) + tail == wire


@given(events, newlines)
def test_encode_then_decode_round_trip(event: Event, newline: bytes) -> None:
    wire = encode_event(
        data=event.data, event=event.event, id=event.id, retry=event.retry, newline=newline
    )
    blocks, tail = decode_all([wire])
    assert tail == b""
    assert blocks == [
        SSEBlock(wire, event.expected_data, event.expected_event, event.id, event.retry)
    ]


@given(st.lists(st.tuples(events, newlines), max_size=5), st.data())
def test_encoded_streams_decode_event_by_event(
    items: list[tuple[Event, bytes]], data: st.DataObject
) -> None:
    wires = [
        encode_event(data=e.data, event=e.event, id=e.id, retry=e.retry, newline=nl)
        for e, nl in items
    ]
    blocks, tail = decode_all(data.draw(split_points(b"".join(wires))))
    assert tail == b""
    assert [b.raw for b in blocks] == wires
    assert [b.data for b in blocks] == [e.expected_data for e, _ in items]


# A plain, whole-stream transcription of the WHATWG algorithm, as an oracle for the decoder.
@dataclass
class _Dispatched:
    data: str
    event: str
    id: str | None


def _reference(wire: bytes) -> list[_Dispatched]:
    text = wire.decode("utf-8")
    text = text.removeprefix("\ufeff")
    lines = re.split(r"\r\n|\r|\n", text)[:-1]  # the piece after the last line ending is unended
    out: list[_Dispatched] = []
    data: list[str] | None = None
    event, last_id = "", None
    for line in lines:
        if not line:
            if data is not None:
                out.append(_Dispatched("\n".join(data), event or "message", last_id))
            data, event, last_id = None, "", None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data = [*(data or []), value]
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
    return out


@given(sse_streams())
def test_valid_streams_decode_as_the_reference_algorithm(wire: bytes) -> None:
    blocks, tail = decode_all([wire])  # never SSEError for valid UTF-8 within the size limit
    assert b"".join(block.raw for block in blocks) + tail == wire
    got = [_Dispatched(b.data, b.event, b.id) for b in blocks if b.data is not None]
    assert got == _reference(wire)


# --- encoder --------------------------------------------------------------------------------------


def test_encode_sdk_shape() -> None:
    assert (
        encode_event(data='{"a":1}', event="message") == b'event: message\r\ndata: {"a":1}\r\n\r\n'
    )


def test_encode_all_fields_with_lf() -> None:
    wire = encode_event(data="a\r\nb\rc\nd", event="e", id="1:2", retry=300, newline=b"\n")
    assert wire == b"id: 1:2\nevent: e\nretry: 300\ndata: a\ndata: b\ndata: c\ndata: d\n\n"


def test_encode_keeps_unicode_separators_inside_one_line() -> None:
    wire = encode_event(data="a\u2028b\x85c")
    assert wire == "data: a\u2028b\x85c\r\n\r\n".encode()


def test_encode_empty_data_is_a_dispatchable_event() -> None:
    [block] = SSEDecoder().feed(encode_event(data="", id="5"))
    assert block.is_dispatch
    assert (block.data, block.id) == ("", "5")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"event": "a\nb"},
        {"event": "a\rb"},
        {"id": "1\r\n"},
        {"id": "1\0"},
        {"retry": -1},
        {"newline": "\u2028".encode()},
        {"newline": b""},
    ],
)
def test_encode_rejects_unsafe_fields(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"SSE|newline"):
        encode_event(data="x", **kwargs)  # type: ignore[arg-type]


def test_encode_rejects_unencodable_data() -> None:
    with pytest.raises(ValueError, match="surrogates"):
        encode_event(data="\ud800")


def test_error_keeps_the_blocks_completed_before_it() -> None:
    """A bad block does not take the well-formed blocks of the same chunk down with it."""
    good = b"data: one\r\n\r\n"
    for bad in (b"data: \xff\r\n\r\n", b"data: " + b"x" * 100 + b"\r\n\r\n"):
        decoder = SSEDecoder(max_block_bytes=64)
        with pytest.raises(SSEError) as err:
            decoder.feed(good + bad + good)
        assert [b.raw for b in err.value.completed] == [good]


def test_encode_keeps_a_nul_in_an_event_name_the_way_clients_read_it() -> None:
    # NUL is a legal character in an event name (clients then dispatch no "message" event);
    # a rewritten event keeps its name instead of crashing the relay (issue 9).
    raw = encode_event(data="{}", event="mes\0sage", id="7")
    [block] = SSEDecoder(strict=True).feed(raw)
    assert (block.event, block.data, block.id) == ("mes\0sage", "{}", "7")


@pytest.mark.parametrize(
    "stream",
    [
        BOM + b"data: {}\r\n\r\n",
        # eventsource-parser strips these three characters (a BOM read as Latin-1) from the first
        # chunk, then reads a data field the spec's parser ignores.
        "\u00ef\u00bb\u00bf".encode() + b"data: {}\n\n",
        b"event: message\ndata : {}\n\n",
        b"Data: {}\n\n",
        b"id: 1\nfoo: bar\n\n",
    ],
)
def test_strict_decoder_refuses_what_clients_read_differently(stream: bytes) -> None:
    with pytest.raises(SSEError):
        SSEDecoder(strict=True).feed(stream)
    # The spec's parser (non-strict) takes them without complaint.
    SSEDecoder().feed(stream)


@given(st.data(), st.booleans())
def test_strict_decoder_refuses_a_bom_however_the_stream_is_cut(
    data: st.DataObject, bom: bool
) -> None:
    whole = (BOM if bom else b"") + b"data: {}\n\n"
    chunks = data.draw(split_points(whole))
    decoder = SSEDecoder(strict=True)
    try:
        blocks = [b for c in chunks for b in decoder.feed(c)]
    except SSEError:
        assert whole.startswith(BOM)
    else:
        assert not whole.startswith(BOM)
        assert [b.data for b in blocks] == ["{}"]
