"""Named regressions, one per reading gap of issue 9: a concrete hostile response (exact bytes)
from the raw upstream, through the real gateway, to the SDK client (its transport, and where it
completes a call the whole ``mcp.Client``). Each failed on 708c947: the client parsed a password
form or a blocked URL the gateway never decided on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.differential import hostile
from tests.differential.hostile import (
    PHISHING_FORM,
    PHISHING_URL,
    Era,
    Response,
    result_message,
)
from tests.differential.invariant import violations
from tests.differential.rig import REQUEST_ID, Reading, victims


def _sse(messages: list[dict[str, Any]], newline: str = "\r\n") -> str:
    return "".join(
        f"event: message{newline}data: {json.dumps(m)}{newline}{newline}" for m in messages
    )


def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": hostile.SERVER_REQUEST_ID,
        "method": "elicitation/create",
        "params": params,
    }


async def _through_gateway(
    era: Era, *responses: bytes, client: bool = False, get: bool = False
) -> list[str]:
    """Script ``responses`` for the next requests, let the SDK read the gateway's answer, and
    return the violations of the invariant (empty: it held). ``get``: the answer is the
    handshake-era standalone GET stream."""
    problems: list[str] = []
    async with victims(ts=False, full_client=client) as v:
        readers: list[Any] = [v.python.read]
        if get:
            readers = [lambda _: v.python.read_get()]
        elif client and v.client is not None:
            readers.append(v.client.read)
        for read in readers:
            v.gateway.reset()
            v.gateway.upstream.script(*responses, get=get)
            reading: Reading = await read(era)
            problems += violations(
                reading.victim,
                reading.elicitations,
                v.gateway.audits,
                v.gateway.error_lines(),
                v.gateway.policy,
            )
    return problems


async def test_charset_utf7_sse_is_read_as_the_client_reads_it() -> None:
    """Class 1, charsets: httpx2 decodes SSE with ``charset=``; in UTF-7 every letter of the
    method name can be written as "+AGU-" and the like."""
    text = _sse([_elicit(PHISHING_FORM), result_message(REQUEST_ID, era="handshake")])
    raw = Response(
        200,
        (("Content-Type", "text/event-stream; charset=utf-7"),),
        hostile.encode_text(text, "utf-7-forced"),
    ).render()
    assert await _through_gateway("handshake", raw) == []


async def test_charset_utf7_on_the_standalone_get_stream() -> None:
    """The same on the GET stream, where handshake-era servers send unrelated requests."""
    text = _sse([_elicit(PHISHING_FORM)])
    raw = Response(
        200,
        (("Content-Type", "text/event-stream; charset=utf-7"),),
        hostile.encode_text(text, "utf-7-forced"),
    ).render()
    assert await _through_gateway("handshake", raw, get=True) == []


async def test_charset_utf7_full_client() -> None:
    """The same response through the whole ``mcp.Client``: the callback is never called with
    the password form."""

    def raw(request_id: Any) -> bytes:
        body = _sse([_elicit(PHISHING_FORM), result_message(request_id, era="handshake")])
        return Response(
            200,
            (("Content-Type", "text/event-stream; charset=utf-7"),),
            hostile.encode_text(body, "utf-7-forced"),
        ).render()

    problems = await _through_gateway("handshake", raw, client=True)  # type: ignore[arg-type]
    assert problems == []


async def test_repeated_content_encoding_fields_are_all_applied() -> None:
    """Class 2, content codings: ``Content-Encoding: identity`` then ``Content-Encoding:
    deflate``; the body is one stored deflate block whose 5-byte header is valid UTF-8, so a
    reader of the first field only sees UTF-8 text with the header glued to the first line (an
    unknown field), while httpx2 inflates it and reads the password form."""
    text = "data: " + json.dumps(_elicit(PHISHING_FORM)) + "\r\n\r\n"
    text += _sse([result_message(REQUEST_ID, era="handshake")])
    body = hostile.stored_block_utf8(text.encode())
    body.decode("utf-8")  # the whole coded body is valid UTF-8
    raw = Response(
        200,
        (
            ("Content-Type", "text/event-stream"),
            ("Content-Encoding", "identity"),
            ("Content-Encoding", "deflate"),
        ),
        body,
    ).render()
    assert await _through_gateway("handshake", raw) == []


@pytest.mark.parametrize("status", [404, 400, 300])
async def test_error_bodies_the_sdk_parses_as_json_are_inspected(status: int) -> None:
    """Class 3, error responses: the SDK parses the body of a non-2xx answer whose type merely
    *starts with* ``application/json`` (4xx: as a JSON-RPC error; 3xx without Location: as the
    response); a duplicate key made the gateway's strict parser give up and pass it through."""
    message = hostile.messages_for("url-required", "phishing-url", REQUEST_ID, era="handshake")[0]
    body = json.dumps(message)
    body = body.replace(
        '"error": {', '"error": {"code": -32603, "message": "decoy"}, "error": {', 1
    )
    raw = Response(status, (("Content-Type", "application/jsonx"),), body.encode()).render()
    assert PHISHING_URL["url"] in body
    assert await _through_gateway("handshake", raw) == []


async def test_utf16_blank_lines_never_forward_an_sse_block_ahead_of_its_checks() -> None:
    """Class 4, SSE framing: in UTF-16LE, U+0A0A is the bytes ``\\n\\n``. A reader that takes the
    body for UTF-8 sees garbage field names and a blank line, i.e. a block without ``data``,
    and may forward it at once; httpx2 (``charset=utf-16le``) reads the password form."""
    text = _sse([_elicit(PHISHING_FORM)]) + ": \u0a0a"
    body = text.encode("utf-16-le")
    assert b"\n\n" in body
    raw = Response(200, (("Content-Type", "text/event-stream; charset=utf-16le"),), body).render()
    assert await _through_gateway("handshake", raw) == []


async def test_all_blocked_round_retry_answered_with_json_is_inspected() -> None:
    """Section 4: every entry of a 2026 round is blocked, so the gateway retries upstream itself;
    the server answers that retry with ``application/json`` holding a password
    ``elicitation/create``, which must not reach the client's SSE stream unchecked."""
    first = hostile.messages_for("input-required", "phishing-form", REQUEST_ID, era="modern")
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": 0.5},
    }
    raw1 = Response(
        200, (("Content-Type", "text/event-stream"),), _sse([progress, *first]).encode()
    ).render()
    raw2 = hostile.plain_json_response(_elicit(PHISHING_FORM)).render()
    assert await _through_gateway("modern", raw1, raw2) == []


async def test_all_blocked_round_retry_answered_with_json_input_required() -> None:
    """The same, with the retry answered by a JSON ``InputRequiredResult`` holding the form."""
    first = hostile.messages_for("input-required", "phishing-form", REQUEST_ID, era="modern")
    raw1 = Response(200, (("Content-Type", "text/event-stream"),), _sse(first).encode()).render()
    raw2 = hostile.plain_json_response(
        hostile.messages_for(
            "input-required", "phishing-form", REQUEST_ID, era="modern", state=False
        )[0]
    ).render()
    assert await _through_gateway("modern", raw1, raw2) == []
