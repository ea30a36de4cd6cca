"""The audit trail: one canonical JSON line per decision (logger ``gateway.audit``).

Records name fields, reasons, paths, modes, schemes and registrable domains — never values: no
form content, no full URLs, no query strings, no tokens. Every event and field is documented in
docs/audit.md. Building a record is sans-IO; the sink (structlog) is wired by the app.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from gateway.carriers.extract import Sighting, field_names
from gateway.detect.findings import Decision, Finding
from gateway.enforce.exchange import Exchange, hash_id

if TYPE_CHECKING:
    from gateway.policy.loader import Policy

SCHEMA_VERSION: Final = 1
AuditSink = Callable[[dict[str, Any]], None]


def _url_parts(params: Any) -> tuple[str | None, str | None]:
    if not isinstance(params, Mapping) or not isinstance(params.get("url"), str):
        return None, None
    from gateway.detect.urls import url_facts  # noqa: PLC0415 - detection import is heavy

    facts = url_facts(params["url"])
    if facts is None:
        return None, None
    domain = facts.registrable_domain or (facts.host if facts.is_ip else None)
    return facts.scheme, domain


def _findings(findings: tuple[Finding, ...] | list[Finding]) -> list[dict[str, str]]:
    out = []
    for f in findings:
        item = {"reason": f.reason.value, "path": f.path}
        if f.detail:
            item["detail"] = f.detail
        out.append(item)
    return out


def decision_record(
    ctx: Exchange, s: Sighting, decision: Decision, policy: Policy, latency_ms: float
) -> dict[str, Any]:
    scheme, domain = _url_parts(s.params)
    action = decision.effective_action.value
    return {
        "event": "elicitation.decision",
        "schema_version": SCHEMA_VERSION,
        "decision_id": uuid.uuid4().hex,
        "upstream": ctx.upstream,
        "era": ctx.era.value,
        "carrier": s.carrier.value,
        "transport": "sse" if ctx.transport in ("post", "get") else "json",
        "stream": ctx.transport if ctx.transport in ("post", "get") else None,
        "mode": s.mode,
        "declared_modes": sorted(ctx.modes) if ctx.modes is not None else None,
        "action": action,
        "decided": decision.action.value,
        "enforced": decision.enforced,
        "reasons": decision.reasons,
        "findings": _findings(decision.findings),
        "policy_revision": policy.revision,
        "fields": field_names(s.params),
        "url_scheme": scheme,
        "url_domain": domain,
        "key": s.key[:128] if s.key else None,
        "session": hash_id(ctx.session),
        "client": ctx.client,
        "latency_ms": round(latency_ms, 3),
        # Slower than the policy's limits.slow_decision_ms (marked, never failed).
        "slow": latency_ms > policy.detect_config(ctx.upstream).limits.slow_decision_ms,
    }


def detector_failed_record(
    ctx: Exchange, s: Sighting, error: str | None, policy: Policy
) -> dict[str, Any]:
    """A detector raised while deciding (the decision is a fail-closed block). ``error`` is the
    exception's class name; its message is never logged (it may quote the input)."""
    return {
        "event": "policy.detector_failed",
        "schema_version": SCHEMA_VERSION,
        "upstream": ctx.upstream,
        "era": ctx.era.value,
        "carrier": s.carrier.value,
        "mode": s.mode,
        "error": error,
        "policy_revision": policy.revision,
    }


def answer_record(
    ctx: Exchange,
    outcome: str,
    findings: list[Finding],
    *,
    reason: str | None = None,
    key: str | None = None,
    answer_id: str | None = None,
) -> dict[str, Any]:
    """``answer_id``: handshake answers, ``sealed`` (a ``gq1.`` id) or ``raw`` (any other id);
    ``None`` for 2026 input responses."""
    return {
        "event": "elicitation.answer",
        "schema_version": SCHEMA_VERSION,
        "decision_id": uuid.uuid4().hex,
        "upstream": ctx.upstream,
        "era": ctx.era.value,
        "outcome": outcome,
        "reasons": list(dict.fromkeys(f.reason.value for f in findings)),
        "findings": _findings(findings),
        "token_error": reason,
        "key": key[:128] if key else None,
        "answer_id": answer_id,
        "session": hash_id(ctx.session),
        "client": ctx.client,
    }
