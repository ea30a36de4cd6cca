"""structlog configuration: one JSON object per line, on stdout (default) or a file."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """JSON lines with an ISO UTC timestamp, the level and the event name."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.WriteLoggerFactory(file=stream or sys.stdout),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str, **initial: Any) -> Any:
    """A bound structlog logger; ``name`` becomes the ``logger`` key of every line."""
    return structlog.get_logger(name).bind(logger=name, **initial)
