"""The reading rule (gateway/wire/reading.py): unit cases, and a property test against the Python
SDK's own response handling (httpx2's charset and content-coding logic, the transport's
content-type dispatch). The TypeScript client is checked end to end in tests/differential/."""

from __future__ import annotations

import codecs

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.wire.reading import Reading, Unreadable, plan_response


@pytest.mark.parametrize(
    ("headers", "reading"),
    [
        ([("Content-Type", "application/json")], Reading.JSON),
        ([("content-type", "Application/JSON")], Reading.JSON),
        ([("Content-Type", "application/json; charset=utf-8")], Reading.JSON),
        ([("Content-Type", 'application/json;charset="UTF-8"')], Reading.JSON),
        ([("Content-Type", "text/event-stream")], Reading.SSE),
        ([("Content-Type", "text/event-stream; charset=utf-8")], Reading.SSE),
        ([("Content-Type", "text/event-stream"), ("Content-Encoding", "identity")], Reading.SSE),
        ([("Content-Type", "text/html")], Reading.OPAQUE),
        ([("Content-Type", "application/problem+json")], Reading.OPAQUE),
        ([], Reading.OPAQUE),
    ],
)
def test_plain_responses_are_read(headers: list[tuple[str, str]], reading: Reading) -> None:
    assert plan_response(headers) is reading


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        # Charsets under which the same bytes spell another message for the Python SDK.
        ([("Content-Type", "text/event-stream; charset=utf-16")], "ambiguous-content-type"),
        ([("Content-Type", "text/event-stream; charset=utf-7")], "ambiguous-content-type"),
        ([("Content-Type", "text/event-stream;charset=unicode_escape")], "ambiguous-content-type"),
        ([("Content-Type", "application/json; charset=latin-1")], "ambiguous-content-type"),
        ([("Content-Type", "text/event-stream; charset*=utf-16''")], "ambiguous-content-type"),
        (
            [("Content-Type", "text/event-stream; charset=utf-8; charset=utf-16")],
            "ambiguous-content-type",
        ),
        # Types one client reads as JSON or SSE and another does not.
        ([("Content-Type", "application/json-rpc")], "ambiguous-content-type"),
        ([("Content-Type", "text/event-streamx")], "ambiguous-content-type"),
        ([("Content-Type", "text/plain; a=application/json")], "ambiguous-content-type"),
        ([("Content-Type", "application/json; profile=x")], "ambiguous-content-type"),
        # Repeated fields are joined or picked differently by different HTTP stacks.
        (
            [("Content-Type", "text/html"), ("Content-Type", "application/json")],
            "repeated-content-type",
        ),
        (
            [
                ("Content-Type", "application/json"),
                ("Content-Encoding", "identity"),
                ("Content-Encoding", "deflate"),
            ],
            "repeated-content-encoding",
        ),
        (
            [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")],
            "repeated-transfer-encoding",
        ),
        # Content codings the gateway does not decode (but clients do, or skip).
        ([("Content-Type", "application/json"), ("Content-Encoding", "gzip")], "content-coding"),
        (
            [("Content-Type", "application/json"), ("Content-Encoding", "identity, deflate")],
            "content-coding",
        ),
        ([("Content-Type", "text/html"), ("Content-Encoding", "x-unknown")], "content-coding"),
        # Non-ASCII in a field the decision is made on.
        ([("Content-Type", "application/json\udcc2\udca0")], "invalid-content-type"),
    ],
)
def test_responses_clients_could_read_differently_are_refused(
    headers: list[tuple[str, str]], reason: str
) -> None:
    with pytest.raises(Unreadable) as caught:
        plan_response(headers)
    assert caught.value.reason == reason
    assert caught.value.http_status == 502


# -- property: never a reading the Python SDK does not share --------------------------------

_media = st.sampled_from(
    [
        "application/json",
        "APPLICATION/JSON",
        "text/event-stream",
        "Text/Event-Stream",
        "application/json-rpc",
        "application/jsonx",
        "text/event-streamx",
        "text/html",
        "text/plain",
        "application/problem+json",
        "",
    ]
)
_param = st.sampled_from(
    [
        "charset=utf-8",
        "charset=UTF-8",
        'charset="utf-8"',
        "charset=utf-16",
        "charset=utf-16le",
        "charset=utf-7",
        "charset=unicode_escape",
        "charset=latin-1",
        "charset=utf8",
        "charset*=utf-16''",
        "charset = utf-8",
        "a=application/json",
        "a=text/event-stream",
        "boundary=x",
        "",
    ]
)
_coding = st.sampled_from(
    ["identity", "IDENTITY", "", "gzip", "deflate", "br", "zstd", "identity, deflate", "foo"]
)


@st.composite
def _heads(draw: st.DrawFn) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 2))):
        params = draw(st.lists(_param, max_size=3))
        sep = draw(st.sampled_from([";", "; ", " ;"]))
        headers.append(("Content-Type", sep.join([draw(_media), *params])))
    codings = draw(st.lists(_coding, max_size=2))
    headers += [("Content-Encoding", coding) for coding in codings]
    return draw(st.permutations(headers))


def _python_sdk_reading(content_type: str) -> Reading:
    """The dispatch of mcp.client.streamable_http (any status but 202 and redirects)."""
    lower = content_type.lower()
    if lower.startswith("application/json"):
        return Reading.JSON
    if lower.startswith("text/event-stream"):
        return Reading.SSE
    return Reading.OPAQUE


@given(_heads())
def test_an_accepted_head_is_read_the_same_way_by_the_python_sdk(
    headers: list[tuple[str, str]],
) -> None:
    try:
        reading = plan_response(headers)
    except Unreadable:
        return  # refusing is always safe
    response = httpx2.Response(200, headers=headers, content=b"")
    assert _python_sdk_reading(response.headers.get("content-type", "")) is reading
    if reading is Reading.OPAQUE:
        return
    # The text decoding the SDK's event-stream reader uses (the charset parameter), and the
    # bytes pydantic gets (the content codings httpx2 applies) are exactly the gateway's.
    assert codecs.lookup(response.encoding or "utf-8").name == "utf-8"
    assert type(response._get_content_decoder()).__name__ == "IdentityDecoder"
