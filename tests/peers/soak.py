"""Flows shared by the soak test and bench/soak.py: both eras, every elicitation carrier."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.peers.procs import Peer, start_gateway


@dataclass(frozen=True)
class Flow:
    mode: str
    tool: str
    expected: str  # substring of the tool's result text
    answers: int  # elicitations the user answers (each is checked once by the gateway)
    blocked: int = 0  # elicitations the gateway must block
    args: dict[str, Any] = field(default_factory=dict)
    prompts: int = 1  # elicitation callbacks the user sees


FLOWS = [
    Flow("legacy", "ask_form", "action=accept", 1, args={"topic": "soak"}),
    Flow("2026-07-28", "ask_form", "action=accept", 1, args={"topic": "soak"}),
    Flow("legacy", "ask_url", "action=accept", 1),
    Flow("2026-07-28", "ask_url", "action=accept", 1),
    Flow("2026-07-28", "ask_two", "action=accept", 2, prompts=2),
    Flow("legacy", "demo_password", "action=decline", 0, blocked=1, prompts=0),
    Flow("2026-07-28", "demo_password", "action=decline", 0, blocked=1, prompts=0),
    Flow("legacy", "demo_lookalike", "action=decline", 0, blocked=1, prompts=0),
]


def check_outcome(flow: Flow, events: list[dict[str, Any]]) -> None:
    errors = [e for e in events if e["event"] in ("error", "exception")]
    assert not errors, (flow, events)
    assert events[-1]["event"] == "result", (flow, events)
    assert flow.expected in events[-1]["text"], (flow, events)
    assert sum(e["event"] == "elicit" for e in events) == flow.prompts, (flow, events)


def start_replica(
    upstream_url: str, log: Path, keys: str
) -> contextlib.AbstractAsyncContextManager[Peer]:
    return start_gateway(upstream_url, "--workers", "1", log_path=log, keys=keys, ready_timeout=60)
