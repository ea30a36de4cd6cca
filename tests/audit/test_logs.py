"""structlog wiring: one JSON object per line with the documented keys, level filtering, the audit
logger routed to its own stream, and the audit file's append / line-buffer / reopen behaviour."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from gateway.audit.logs import AUDIT_LOGGER, AuditFile, configure_logging, get_logger

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
