"""Prometheus metrics: counters derived from audit records, labels bounded to known sets (never a
value a client or server chooses), request status classes, and every metric documented."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.proxy.metrics import CONTENT_TYPE, Metrics

ROOT = Path(__file__).resolve().parents[2]


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every exported sample: (name, sorted labels) -> value."""
    out = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def decision(**overrides: Any) -> dict[str, Any]:
    return {
        "event": "elicitation.decision",
        "carrier": "server-request",
        "mode": "form",
        "action": "block",
        "reasons": ["secret-field", "otp-field"],
        "latency_ms": 0.4,
        "slow": False,
        **overrides,
    }


def test_a_decision_counts_its_carrier_mode_action_and_each_reason() -> None:
    m = Metrics()
    m.record_audit(decision())
    m.record_audit(decision(reasons=["secret-field"]))
    got = samples(m)
    key = (("action", "block"), ("carrier", "server-request"), ("mode", "form"))
    assert got[("gateway_elicitations_total", key)] == 2
    assert got[("gateway_elicitation_reasons_total", (("reason", "secret-field"),))] == 2
    assert got[("gateway_elicitation_reasons_total", (("reason", "otp-field"),))] == 1
    assert got[("gateway_decision_seconds_count", ())] == 2
    assert got[("gateway_decision_seconds_sum", ())] == pytest.approx(0.0008)
    assert got[("gateway_slow_decisions_total", ())] == 0


def test_a_slow_decision_is_counted() -> None:
    m = Metrics()
    m.record_audit(decision(slow=True, latency_ms=80))
    m.record_audit(decision(slow="yes"))  # only True counts
    assert samples(m)[("gateway_slow_decisions_total", ())] == 1


def test_labels_a_peer_chooses_are_bounded_to_other() -> None:
    """Carrier, mode, action, reason and outcome come from fixed sets: a hostile value (or an
    unhashable one) becomes ``other`` and never appears in the exposition."""
    m = Metrics()
    m.record_audit(
        decision(
            carrier="evil-carrier-canary",
            mode="mode-canary",
            action=["block"],
            reasons=["reason-canary", {"x": 1}],
            latency_ms="slow",
        )
    )
    m.record_audit({"event": "elicitation.answer", "outcome": "outcome-canary"})
    text = m.render().decode()
    assert "canary" not in text
    got = samples(m)
    key = (("action", "other"), ("carrier", "other"), ("mode", "other"))
    assert got[("gateway_elicitations_total", key)] == 1
    assert got[("gateway_elicitation_reasons_total", (("reason", "other"),))] == 2
    assert got[("gateway_answers_total", (("outcome", "other"),))] == 1
    assert got[("gateway_decision_seconds_count", ())] == 0  # no number, no observation


@pytest.mark.parametrize(
    "outcome", ["forwarded", "declined-by-gateway", "rejected", "state-rejected", "replayed"]
)
def test_each_answer_outcome_has_its_own_label(outcome: str) -> None:
    m = Metrics()
    m.record_audit({"event": "elicitation.answer", "outcome": outcome})
    assert samples(m)[("gateway_answers_total", (("outcome", outcome),))] == 1


def test_other_events_count_nothing() -> None:
    m = Metrics()
    before = samples(m)
    m.record_audit({"event": "elicitation.complete", "carrier": "server-request", "mode": "form"})
    m.record_audit({})
    assert samples(m) == before


@pytest.mark.parametrize(
    ("method", "status", "labels"),
    [
        ("POST", 200, ("POST", "2xx")),
        ("GET", 404, ("GET", "4xx")),
        ("DELETE", 502, ("DELETE", "5xx")),
        ("PATCH", 405, ("other", "4xx")),
        ("post", 202, ("other", "2xx")),
    ],
)
def test_requests_by_era_method_and_status_class(
    method: str, status: int, labels: tuple[str, str]
) -> None:
    m = Metrics()
    m.request("modern", method, status)
    key = (("era", "modern"), ("method", labels[0]), ("status", labels[1]))
    assert samples(m)[("gateway_requests_total", key)] == 1


def test_every_application_has_its_own_registry() -> None:
    a, b = Metrics(), Metrics()
    a.request("handshake", "POST", 200)
    assert (
        "gateway_requests_total",
        (("era", "handshake"), ("method", "POST"), ("status", "2xx")),
    ) not in samples(b)


def test_exposition_format() -> None:
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")
    text = Metrics().render().decode()
    assert "# TYPE gateway_open_streams gauge" in text
    assert "# TYPE gateway_decision_seconds histogram" in text


def test_every_metric_is_documented() -> None:
    """docs/audit.md's metrics table names every metric the gateway exports."""
    docs = (ROOT / "docs" / "audit.md").read_text()
    documented = set(re.findall(r"`(gateway_[a-z_]+)`", docs))
    exported = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in text_string_to_metric_families(Metrics().render().decode())
        if not family.name.endswith("_created")  # the parser's view of a counter's timestamp
    }
    assert len(exported) == 13  # gateway_detector_errors_total: issue 11
    assert exported - documented == set()
