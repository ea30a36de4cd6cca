"""structlog wiring: one JSON object per line with the documented keys, level filtering, the audit
logger routed to its own stream, and the audit file's append / line-buffer / reopen behaviour."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.audit.logs import (
    AUDIT_LOGGER,
    MAX_STRING,
    REDACTED,
    AuditFile,
    configure_logging,
    get_logger,
    redact,
)
from gateway.audit.records import answer_record, complete_record, decision_record
from gateway.carriers.extract import Carrier, Sighting
from gateway.enforce.exchange import Exchange
from gateway.policy.engine import evaluate
from gateway.policy.loader import load_policy
from gateway.wire.era import Era

ROOT = Path(__file__).resolve().parents[2]

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$")


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_one_json_object_per_line_with_the_documented_keys() -> None:
    out = io.StringIO()
    configure_logging(stream=out)
    log = get_logger("gateway.relay", upstream="docs")
    log.info("request.done", status=200)
    log.warning("upstream.slow", text="two\nlines")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # a newline inside a value stays escaped
    first, second = (json.loads(line) for line in lines)
    assert first["event"] == "request.done"
    assert first["level"] == "info"
    assert first["logger"] == "gateway.relay"
    assert first["upstream"] == "docs"
    assert first["status"] == 200
    assert first["pid"] == os.getpid()
    assert ISO_UTC.match(first["timestamp"]), first["timestamp"]
    assert second["level"] == "warning"
    assert second["text"] == "two\nlines"


@pytest.mark.parametrize(
    ("level", "written"),
    [
        ("debug", ["d", "i", "w", "e"]),
        ("info", ["i", "w", "e"]),
        ("WARNING", ["w", "e"]),
        ("error", ["e"]),
    ],
)
def test_level_filters_lower_levels(level: str, written: list[str]) -> None:
    out = io.StringIO()
    configure_logging(level, stream=out)
    log = get_logger("gateway.test")
    log.debug("d")
    log.info("i")
    log.warning("w")
    log.error("e")
    assert [e["event"] for e in _lines(out)] == written


def test_exceptions_are_rendered_as_structured_tracebacks() -> None:
    out = io.StringIO()
    configure_logging(stream=out)
    try:
        raise ValueError("boom")
    except ValueError:
        get_logger("gateway.test").exception("failed")
    (line,) = _lines(out)
    assert line["level"] == "error"
    frames = line["exception"]
    assert isinstance(frames, list)
    assert frames[0]["exc_type"] == "ValueError"
    assert frames[0]["exc_value"] == "boom"


def test_audit_logger_goes_to_its_own_stream_and_nothing_else_does() -> None:
    out, audit = io.StringIO(), io.StringIO()
    configure_logging(stream=out, audit_stream=audit)
    get_logger(AUDIT_LOGGER).info("elicitation.decision", action="block")
    get_logger("gateway.relay").info("request.done")
    get_logger("gateway.audit.child").info("not-the-audit-logger")
    assert [e["event"] for e in _lines(audit)] == ["elicitation.decision"]
    assert [e["event"] for e in _lines(out)] == ["request.done", "not-the-audit-logger"]
    assert _lines(audit)[0]["logger"] == AUDIT_LOGGER


def test_without_an_audit_stream_audit_lines_go_to_the_main_stream() -> None:
    out = io.StringIO()
    configure_logging(stream=out)
    get_logger(AUDIT_LOGGER).info("elicitation.decision")
    assert [e["event"] for e in _lines(out)] == ["elicitation.decision"]


def test_audit_file_appends_and_every_line_is_on_disk_at_once(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text('{"event": "earlier"}\n')
    audit = AuditFile(str(path))
    try:
        configure_logging(stream=io.StringIO(), audit_stream=audit)
        get_logger(AUDIT_LOGGER).info("elicitation.decision")
        # Read through another handle, without flushing or closing ours: line-buffered.
        events = [json.loads(line)["event"] for line in path.read_text().splitlines()]
        assert events == ["earlier", "elicitation.decision"]
    finally:
        audit.close()


def test_audit_file_reopen_follows_a_rename(tmp_path: Path) -> None:
    """logrotate's way: rename the file, signal, new lines go to a new file at the path."""
    path = tmp_path / "audit.log"
    audit = AuditFile(str(path))
    try:
        configure_logging(stream=io.StringIO(), audit_stream=audit)
        log = get_logger(AUDIT_LOGGER)
        log.info("before")
        rotated = tmp_path / "audit.log.1"
        path.rename(rotated)
        log.info("still-old")  # not reopened yet: the renamed file gets it
        audit.reopen()
        log.info("after")
        assert [json.loads(x)["event"] for x in rotated.read_text().splitlines()] == [
            "before",
            "still-old",
        ]
        assert [json.loads(x)["event"] for x in path.read_text().splitlines()] == ["after"]
    finally:
        audit.close()


def test_a_failed_reopen_keeps_writing_to_the_old_file(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "audit.log"
    audit = AuditFile(str(path))
    try:
        moved = tmp_path / "moved"
        folder.rename(moved)  # the path's directory is gone: reopening fails
        with pytest.raises(FileNotFoundError):
            audit.reopen()
        audit.write('{"event": "kept"}\n')
        assert (moved / "audit.log").read_text() == '{"event": "kept"}\n'
    finally:
        audit.close()


# -- stdlib records through the same JSON renderer ------------------------------------------------

LOCAL_CANARY = "Canary-Local-5d1"
QUERY_CANARY = "Canary-Query-8e2"


async def test_a_real_aiohttp_log_line_comes_out_as_one_json_object() -> None:
    """aiohttp's own ``aiohttp.server`` logger (a handler that raised, with its traceback) and
    its access logger: rendered by structlog, query strings cut, no local variables."""
    out = io.StringIO()
    configure_logging(stream=out)

    async def boom(_: web.Request) -> web.Response:
        password = LOCAL_CANARY  # a local variable a traceback with locals would show
        raise RuntimeError(password[:0] + "handler failed")

    app = web.Application()
    app.router.add_get("/x", boom)
    async with (
        TestServer(app, port=0) as server,
        aiohttp.ClientSession() as session,
        session.get(server.make_url(f"/x?token={QUERY_CANARY}")) as resp,
    ):
        assert resp.status == 500
    text = out.getvalue()
    lines = _lines(out)  # every line is one JSON object
    [error] = [e for e in lines if e["logger"] == "aiohttp.server"]
    assert error["level"] == "error"
    assert error["event"].startswith("Error handling request")
    assert error["pid"] == os.getpid() and ISO_UTC.match(error["timestamp"])
    assert error["exception"][0]["exc_type"] == "RuntimeError"
    assert "locals" not in error["exception"][0]["frames"][-1]
    [access] = [e for e in lines if e["logger"] == "aiohttp.access"]
    assert "GET /x?[redacted] HTTP/1.1" in access["event"]
    assert LOCAL_CANARY not in text and QUERY_CANARY not in text
    assert "Traceback (most recent call last)" not in text


def test_stdlib_loggers_and_warnings_are_rendered_as_json() -> None:
    out = io.StringIO()
    configure_logging(level="warning", stream=out)
    logging.getLogger("asyncio").info("filtered: below the level")
    logging.getLogger("asyncio").warning("slow callback %s", "cb", extra={"cookie": "c=1"})
    logging.captureWarnings(True)
    warnings.showwarning(
        "deprecated, see https://x.test/p?sig=" + QUERY_CANARY, UserWarning, "f", 1
    )
    first, second = _lines(out)
    assert (first["logger"], first["level"], first["event"]) == (
        "asyncio",
        "warning",
        "slow callback cb",
    )
    assert first["cookie"] == REDACTED
    assert second["logger"] == "py.warnings" and second["level"] == "warning"
    assert "https://x.test/p?[redacted]" in second["event"]
    assert QUERY_CANARY not in out.getvalue()


# -- redaction: the last processor before rendering ------------------------------------------------

CANARY = "Canary-Redact-3c9"


@pytest.mark.parametrize(
    "key",
    [
        "value",
        "content",
        "password",
        "Password",
        "client_secret",
        "token",
        "access_token",
        "Authorization",
        "proxy-authorization",
        "Cookie",
        "set-cookie",
        "Mcp-Session-Id",
        "requestState",
        "query_string",
    ],
)
def test_a_canary_in_a_forbidden_key_never_reaches_the_rendered_output(key: str) -> None:
    out = io.StringIO()
    configure_logging(stream=out)
    log = get_logger("gateway.relay")
    log.info("top", **{key: CANARY})
    log.info(
        "nested", headers={key: CANARY}, items=[{key: CANARY}], deep={"a": {"b": {key: CANARY}}}
    )
    logging.getLogger("aiohttp.client").warning("stdlib", extra={key: CANARY})
    assert CANARY not in out.getvalue()
    top, nested, stdlib = _lines(out)
    assert top[key] == REDACTED and stdlib[key] == REDACTED
    assert nested["headers"] == {key: REDACTED} and nested["items"] == [{key: REDACTED}]


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        (f"https://h.test/p?email={CANARY}", "https://h.test/p?[redacted]"),
        (f"see https://h.test/#{CANARY} now", "see https://h.test/?[redacted] now"),
        (f'"GET /mcp?t={CANARY} HTTP/1.1"', '"GET /mcp?[redacted] HTTP/1.1"'),
        ("is this a question? yes", "is this a question? yes"),
        ("$.requestedSchema.properties.password", "$.requestedSchema.properties.password"),
    ],
)
def test_query_strings_are_cut_from_every_string(text: str, rendered: str) -> None:
    assert redact(None, "info", {"event": "e", "url": text, "list": [text]}) == {
        "event": "e",
        "url": rendered,
        "list": [rendered],
    }


def test_long_strings_are_capped() -> None:
    event = redact(None, "info", {"event": "e", "text": "x" * 10_000})
    assert len(event["text"]) == MAX_STRING + 1


def test_redaction_leaves_every_audit_record_as_it_is() -> None:
    """The audit records carry no forbidden key and no query string by construction: the last
    line of defence changes nothing in them (else it would hide a bug, or mangle the trail)."""
    policy = load_policy(ROOT / "policies" / "default.yaml")
    x = Exchange(upstream="docs", era=Era.HANDSHAKE, modes=frozenset({"url"}), session="s")
    params = {
        "mode": "url",
        "message": "m",
        "url": "https://a.example.com/x?y=1",
        "elicitationId": "e",
    }
    s = Sighting(
        Carrier.SERVER_REQUEST, "$.params", params, "url", request_id=1, elicitation_id="e"
    )
    decision = evaluate(params, modes=frozenset({"url"}), server="docs", policy=policy)
    for event in (
        decision_record(x, s, decision, policy, 0.3),
        answer_record(x, "forwarded", []),
        complete_record(x, s, dropped=True),
    ):
        record = event.record()
        assert redact(None, "info", dict(record)) == record
