"""Prometheus metrics, one registry per application (served at ``/metrics``).

Label values are bounded sets (eras, carriers, modes, actions, reason codes, HTTP methods and
status classes, upstream names from the config): never anything a client or server chooses.
"""

from __future__ import annotations

import os
from typing import Any, Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from gateway.detect.findings import Reason

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
_REASONS: Final = frozenset(r.value for r in Reason)
_CARRIERS: Final = frozenset(
    {
        "server-request",
        "url-required-error",
        "input-required",
        "complete-notification",
        "answer",
        "input-response",
    }
)


def _bounded(value: Any, allowed: frozenset[str]) -> str:
    return value if isinstance(value, str) and value in allowed else "other"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "gateway_requests",
            "Client requests handled, by era, HTTP method and status class.",
            ["era", "method", "status"],
            registry=r,
        )
        self.elicitations = Counter(
            "gateway_elicitations",
            "Elicitations decided, by carrier, mode and action.",
            ["carrier", "mode", "action"],
            registry=r,
        )
        self.reasons = Counter(
            "gateway_elicitation_reasons",
            "Findings behind decisions, by reason code.",
            ["reason"],
            registry=r,
        )
        self.answers = Counter(
            "gateway_answers",
            "User answers checked on the way out, by outcome.",
            ["outcome"],
            registry=r,
        )
        self.decision_seconds = Histogram(
            "gateway_decision_seconds",
            "Time to decide on one elicitation.",
            buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1),
            registry=r,
        )
        self.upstream_errors = Counter(
            "gateway_upstream_errors",
            "Upstream failures, by upstream and kind.",
            ["upstream", "kind"],
            registry=r,
        )
        self.open_streams = Gauge(
            "gateway_open_streams",
            "SSE streams currently relayed.",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.connections_open = Gauge(
            "gateway_connections_open",
            "Client connections currently open (accepted and not refused).",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.connections_closed = Counter(
            "gateway_connections_closed",
            "Client connections the gateway closed or refused itself, by reason "
            "(header-timeout, body-timeout, idle-timeout, unread-body, over-capacity).",
            ["reason"],
            registry=r,
        )
        self.memory_trims = Counter(
            "gateway_memory_trims",
            "Times freed memory was handed back to the system after open connections fell "
            "(gateway/proxy/allocator.py).",
            registry=r,
        )
        self.detector_errors = Counter(
            "gateway_detector_errors",
            "Detectors that raised while deciding (each decision failed closed: a block).",
            registry=r,
        )
        self.slow_decisions = Counter(
            "gateway_slow_decisions",
            "Decisions slower than the policy's limits.slow_decision_ms (decided normally: no "
            "clock takes part in a decision).",
            registry=r,
        )
        self.policy_reloads = Counter(
            "gateway_policy_reloads",
            "Policy reload attempts, by result.",
            ["result"],
            registry=r,
        )

    def record_audit(self, record: dict[str, Any]) -> None:
        """Derive counters from an audit record (one hook for both)."""
        if record.get("event") == "elicitation.decision":
            mode = record.get("mode")
            self.elicitations.labels(
                _bounded(record.get("carrier"), _CARRIERS),
                mode if mode in ("form", "url") else "other",
                _bounded(record.get("action"), frozenset({"allow", "warn", "block"})),
            ).inc()
            for reason in record.get("reasons") or []:
                self.reasons.labels(_bounded(reason, _REASONS)).inc()
            latency = record.get("latency_ms")
            if isinstance(latency, int | float):
                self.decision_seconds.observe(latency / 1000.0)
            if record.get("slow") is True:
                self.slow_decisions.inc()
        elif record.get("event") == "policy.detector_failed":
            self.detector_errors.inc()
        elif record.get("event") == "elicitation.answer":
            outcome = record.get("outcome")
            allowed = frozenset(
                {"forwarded", "declined-by-gateway", "rejected", "state-rejected", "replayed"}
            )
            self.answers.labels(_bounded(outcome, allowed)).inc()

    def request(self, era: str, method: str, status: int) -> None:
        method = method if method in ("GET", "POST", "DELETE") else "other"
        self.requests.labels(era, method, f"{status // 100}xx").inc()

    def render(self) -> bytes:
        """The exposition text; with several workers, the sum over all of them."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)
