"""structlog configuration: one JSON object per line.

Everything goes to stdout by default. The audit trail (logger ``gateway.audit``) can be sent to
its own file instead (``--audit-file`` / ``audit_file:``), opened in append mode and flushed
after every line (:class:`AuditFile`), and reopened at the same path on SIGHUP or SIGUSR1 the way
logrotate expects: rename the file, send the signal, new lines go to a new file at the path.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO, cast

import structlog

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

    def __call__(self, *args: Any) -> structlog.WriteLogger:
        return self._audit if args and args[0] == AUDIT_LOGGER else self._default


def _add_pid(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Every line names its process (several workers may share one output)."""
    event["pid"] = os.getpid()
    return event


def configure_logging(
    level: str = "info",
    stream: TextIO | None = None,
    audit_stream: TextIO | AuditFile | None = None,
) -> None:
    """JSON lines with an ISO UTC timestamp, the level and the event name."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            _add_pid,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=_RoutingFactory(stream or sys.stdout, audit_stream),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str, **initial: Any) -> Any:
    """A bound structlog logger; ``name`` becomes the ``logger`` key of every line."""
    return structlog.get_logger(name).bind(logger=name, **initial)
