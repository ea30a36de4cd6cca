"""structlog configuration: one JSON object per line.

Everything goes to stdout by default. The audit trail (logger ``gateway.audit``) can be sent to
its own file instead (``--audit-file`` / ``audit_file:``), opened once in append mode and flushed
after every line.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

AUDIT_LOGGER = "gateway.audit"


class _RoutingFactory:
    """structlog logger factory: the audit logger writes to its own stream when one is set."""

    def __init__(self, default: TextIO, audit: TextIO | None) -> None:
        self._default = structlog.WriteLogger(default)
        self._audit = structlog.WriteLogger(audit) if audit is not None else self._default

    def __call__(self, *args: Any) -> structlog.WriteLogger:
        return self._audit if args and args[0] == AUDIT_LOGGER else self._default


def _add_pid(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Every line names its process (several workers may share one output)."""
    event["pid"] = os.getpid()
    return event


def configure_logging(
    level: str = "info", stream: TextIO | None = None, audit_stream: TextIO | None = None
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
