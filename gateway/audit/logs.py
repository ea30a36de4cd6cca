"""structlog configuration: one JSON object per line.

Everything goes to stdout by default. The audit trail (logger ``gateway.audit``) can be sent to
its own file instead (``--audit-file`` / ``audit_file:``), opened in append mode and flushed
after every line (:class:`AuditFile`), and reopened at the same path on SIGHUP or SIGUSR1 the way
logrotate expects: rename the file, send the signal, new lines go to a new file at the path.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping
from typing import Final, TextIO, cast

import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict, FilteringBoundLogger, Processor

AUDIT_LOGGER = "gateway.audit"


class AuditFile:
    """The audit file: appended to, line-buffered, and reopened on request (log rotation).

    structlog writes through this object's ``write``/``flush``, so a reopen swaps the file
    underneath every logger at once; the old file is closed after the new one is open (a failed
    reopen keeps writing to the old one)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = self._open()

    def _open(self) -> TextIO:
        # Line-buffered: every audit line reaches the file when it is written.
        return open(self.path, "a", encoding="utf-8", buffering=1)

    def write(self, text: str) -> int:
        return self._file.write(text)

    def flush(self) -> None:
        self._file.flush()

    def reopen(self) -> None:
        """Open the path again (a new file if the old one was renamed). Raises OSError."""
        new = self._open()
        old, self._file = self._file, new
        old.close()

    def close(self) -> None:
        self._file.close()


class _RoutingFactory:
    """structlog logger factory: the audit logger writes to its own stream when one is set."""

    def __init__(self, default: TextIO, audit: TextIO | AuditFile | None) -> None:
        self._default = structlog.WriteLogger(default)
        # An AuditFile is written to like a text file (write + flush).
        self._audit = (
            structlog.WriteLogger(cast(TextIO, audit)) if audit is not None else self._default
        )

    def __call__(self, *args: object) -> structlog.WriteLogger:
        return self._audit if args and args[0] == AUDIT_LOGGER else self._default


def _add_pid(_: object, __: str, event: EventDict) -> EventDict:
    """Every line names its process (several workers may share one output)."""
    event["pid"] = os.getpid()
    return event


# -- redaction: the last processor before rendering -------------------------------------------

REDACTED: Final = "[redacted]"
# Keys whose values must never be rendered, compared case-insensitively with "-" read as "_".
FORBIDDEN_KEYS: Final = frozenset(
    {
        "value",
        "values",
        "content",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "api_key",
        "apikey",
        "x_api_key",
        "authorization",
        "proxy_authorization",
        "cookie",
        "set_cookie",
        "mcp_session_id",
        "request_state",
        "requeststate",
        "query",
        "query_string",
    }
)
FORBIDDEN_SUFFIXES: Final = ("_password", "_secret", "_token", "_cookie")
MAX_STRING: Final = 4096
# A query string or fragment after a URL (scheme://…) or a path at a word boundary (a request
# line "GET /mcp?x=1 HTTP/1.1").
_QUERY: Final = re.compile(
    r"((?:\b[A-Za-z][A-Za-z0-9+.\-]*://|(?<![^\s\"'(\[])/)[^\s?#\"'<>]*)[?#][^\s\"'<>]*"
)


def _forbidden(key: object) -> bool:
    if not isinstance(key, str):
        return False
    k = key.casefold().replace("-", "_")
    return k in FORBIDDEN_KEYS or k.endswith(FORBIDDEN_SUFFIXES)


def _scrub(value: object, depth: int = 0) -> object:
    if isinstance(value, str):
        text = _QUERY.sub(r"\1?" + REDACTED, value) if ("?" in value or "#" in value) else value
        return text if len(text) <= MAX_STRING else text[:MAX_STRING] + "…"
    if depth > 8:
        return REDACTED
    if isinstance(value, Mapping):
        return {k: REDACTED if _forbidden(k) else _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, depth + 1) for v in value]
    return value


def redact(_: object, __: str, event: EventDict) -> EventDict:
    """The last line of defence before rendering (docs/audit.md, "Redaction"): the value of a
    forbidden key (:data:`FORBIDDEN_KEYS`, or ending in :data:`FORBIDDEN_SUFFIXES`) is replaced
    by ``[redacted]``, at any depth; a URL's query string and fragment are cut from every string
    (``https://h/p?[redacted]``); strings are capped at :data:`MAX_STRING` characters. Audit
    records never carry such keys or strings in the first place: this catches a mistake, it is
    not the design."""
    for key in list(event):
        event[key] = REDACTED if _forbidden(key) else _scrub(event[key])
    return event


def _stdlib_name(_: object, __: str, event: EventDict) -> EventDict:
    """stdlib records (aiohttp, asyncio, warnings): the ``logger`` key names their logger."""
    record = event.get("_record")
    if isinstance(record, logging.LogRecord) and "logger" not in event:
        event["logger"] = record.name
    return event


_TRACEBACKS: Final = structlog.processors.ExceptionRenderer(
    # No local variables in tracebacks: they may hold the values this log must never show.
    ExceptionDictTransformer(show_locals=False)
)


def _shared() -> list[Processor]:
    """What every line gets, structlog's own or stdlib's: level, pid, time."""
    return [
        structlog.processors.add_log_level,
        _add_pid,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


class _JsonHandler(logging.StreamHandler[TextIO]):
    """The root handler that renders stdlib records as our JSON lines (one per process)."""

    def __init__(self, stream: TextIO, root_level: int) -> None:
        super().__init__(stream)
        self.root_level = root_level  # the root logger's level before this handler


def _route_stdlib(stream: TextIO, level: int) -> None:
    """Send every stdlib record (aiohttp's loggers, asyncio, ``warnings``) through the same
    processors and JSON renderer as structlog's own lines: one JSON object per line."""
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[_stdlib_name, *_shared(), structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _TRACEBACKS,
            redact,
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
    )
    unroute_stdlib()
    root = logging.getLogger()
    handler = _JsonHandler(stream, root.level)
    handler.setFormatter(formatter)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)  # warnings.warn -> logger "py.warnings" -> a JSON line


def unroute_stdlib() -> None:
    """Undo :func:`_route_stdlib` (tests: the next test's streams are not this one's)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _JsonHandler)]:
        root.removeHandler(old)
        root.setLevel(old.root_level)
    logging.captureWarnings(False)


def configure_logging(
    level: str = "info",
    stream: TextIO | None = None,
    audit_stream: TextIO | AuditFile | None = None,
) -> None:
    """JSON lines with an ISO UTC timestamp, the level and the event name; stdlib records too."""
    threshold = logging.getLevelNamesMapping()[level.upper()]
    out = stream or sys.stdout
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *_shared(),
            _TRACEBACKS,
            redact,
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=_RoutingFactory(out, audit_stream),
        cache_logger_on_first_use=False,
    )
    _route_stdlib(out, threshold)


def get_logger(name: str, **initial: object) -> FilteringBoundLogger:
    """A bound structlog logger; ``name`` becomes the ``logger`` key of every line."""
    logger: FilteringBoundLogger = structlog.get_logger(name).bind(logger=name, **initial)
    return logger
