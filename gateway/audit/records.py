"""Building the audit events (sans-IO): the models of :mod:`gateway.audit.events` from what the
enforcer knows.

Records name fields, reasons, paths, modes, schemes and registrable domains — never values: no
form content, no full URLs, no query strings, no tokens; ids only hashed. Every event and field
is documented in docs/audit.md. The sink (structlog) is wired by the app.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, get_args

from gateway.audit.events import (
    SCHEMA_VERSION,
    AnswerAction,
    AnswerOutcome,
    DetectorFailed,
    ElicitationAnswer,
    ElicitationComplete,
    ElicitationDecision,
    FindingRecord,
    Mode,
    TokenError,
)
from gateway.carriers.extract import Carrier, Sighting, field_names
from gateway.detect.findings import Decision, Finding
from gateway.enforce.exchange import Direction, Exchange, hash_id

if TYPE_CHECKING:
    from gateway.policy.loader import Policy

__all__ = [
    "SCHEMA_VERSION",
    "AuditSink",
    "answer_record",
    "complete_record",
    "decision_record",
    "detector_failed_record",
]

AuditSink = Callable[[dict[str, Any]], None]
"""Receives every audit record as its JSON object (tests, and the metrics)."""

_MODES: Final = frozenset(get_args(Mode))
_ANSWER_ACTIONS: Final = frozenset(get_args(AnswerAction))
_TOKEN_ERRORS: Final = frozenset(get_args(TokenError))


def _url_parts(params: Any) -> tuple[str | None, str | None]:
    if not isinstance(params, Mapping) or not isinstance(params.get("url"), str):
        return None, None
    from gateway.detect.urls import url_facts  # noqa: PLC0415 - detection import is heavy

    facts = url_facts(params["url"])
    if facts is None:
        return None, None
    domain = facts.registrable_domain or (facts.host if facts.is_ip else None)
    return facts.scheme, domain


def _findings(findings: tuple[Finding, ...] | list[Finding]) -> tuple[FindingRecord, ...]:
    return tuple(
        FindingRecord(reason=f.reason.value, path=f.path, detail=f.detail or None) for f in findings
    )


def _mode(mode: str | None) -> str | None:
    """The mode when it is a valid one (a server may send any string: never logged)."""
    return mode if mode in _MODES else None


def _bounded(value: str | None, allowed: frozenset[str], other: str) -> str | None:
    return None if value is None else value if value in allowed else other


def _id_hash(value: str | int | None) -> str | None:
    """A JSON-RPC id (any type the server chose), hashed."""
    return None if value is None else hash_id(json.dumps(value))


def _stream(x: Exchange) -> tuple[str, str | None]:
    """(transport, stream): answers always arrive in the client's JSON body; on a stdio pipe
    every message is a line."""
    if x.pipe:
        return "stdio", None
    if x.direction is Direction.CLIENT or x.transport not in ("post", "get"):
        return "json", None
    return "sse", x.transport


def _where(x: Exchange) -> dict[str, Any]:
    return {
        "upstream": x.upstream,
        "era": x.era.value,
        "session": hash_id(x.session),
        "client": x.client[:128] if x.client is not None else None,
    }


def new_decision_id() -> str:
    return uuid.uuid4().hex


def decision_record(
    ctx: Exchange,
    s: Sighting,
    decision: Decision,
    policy: Policy,
    latency_ms: float,
    *,
    decision_id: str | None = None,
) -> ElicitationDecision:
    """The canonical line of one elicitation: where it came from, what was asked, what the
    policy decided and why."""
    scheme, domain = _url_parts(s.params)
    transport, stream = _stream(ctx)
    return ElicitationDecision.model_validate(
        {
            **_where(ctx),
            "decision_id": decision_id or new_decision_id(),
            "carrier": s.carrier.value,
            "transport": transport,
            "stream": stream,
            "location": s.location[:256],
            "request_id": _id_hash(s.request_id),
            "elicitation_id": hash_id(s.elicitation_id),
            "mode": _mode(s.mode),
            "declared_modes": tuple(sorted(ctx.modes)) if ctx.modes is not None else None,
            "action": decision.effective_action.value,
            "decided": decision.action.value,
            "enforced": decision.enforced,
            "reasons": tuple(decision.reasons),
            "findings": _findings(decision.findings),
            "policy_revision": policy.revision,
            "fields": tuple(field_names(s.params)),
            "url_scheme": scheme,
            "url_domain": domain,
            "key": s.key[:128] if s.key else None,
            "latency_ms": round(latency_ms, 3),
            # Slower than the policy's limits.slow_decision_ms (marked, never failed).
            "slow": latency_ms > policy.detect_config(ctx.upstream).limits.slow_decision_ms,
        }
    )


def detector_failed_record(
    ctx: Exchange, s: Sighting, error: str | None, policy: Policy, *, decision_id: str
) -> DetectorFailed:
    """A detector raised while deciding (the decision ``decision_id`` is a fail-closed block).
    ``error`` is the exception's class name; its message is never logged (it may quote the
    input)."""
    return DetectorFailed.model_validate(
        {
            **_where(ctx),
            "decision_id": decision_id,
            "carrier": s.carrier.value,
            "mode": _mode(s.mode),
            "error": error[:128] if error else None,
            "policy_revision": policy.revision,
        }
    )


def answer_record(
    ctx: Exchange,
    outcome: AnswerOutcome,
    findings: list[Finding],
    s: Sighting | None = None,
    *,
    reason: str | None = None,
    answer_id: str | None = None,
) -> ElicitationAnswer:
    """One user answer checked. ``s``: the answer's sighting (``None`` for a 2026 retry whose
    state token was rejected: no single answer). ``answer_id``: handshake answers, ``sealed``
    (a ``gq1.`` id) or ``raw`` (any other id); ``None`` for 2026 input responses."""
    if s is not None:
        carrier = s.carrier
    else:  # a handshake answer has an answer_id; a rejected 2026 retry has none
        carrier = Carrier.ANSWER if answer_id is not None else Carrier.INPUT_RESPONSE
    action = s.action if s is not None else None
    return ElicitationAnswer.model_validate(
        {
            **_where(ctx),
            "decision_id": new_decision_id(),
            "carrier": carrier.value,
            "answer_action": None
            if action is None
            else (action if action in _ANSWER_ACTIONS else "other"),
            "outcome": outcome,
            "reasons": tuple(dict.fromkeys(f.reason.value for f in findings)),
            "findings": _findings(findings),
            "token_error": None
            if reason is None
            else (reason if reason in _TOKEN_ERRORS else "invalid"),
            "key": s.key[:128] if s is not None and s.key else None,
            "answer_id": answer_id,
        }
    )


def complete_record(ctx: Exchange, s: Sighting, *, dropped: bool) -> ElicitationComplete:
    """A ``notifications/elicitation/complete``: forwarded, or dropped (it completes an
    elicitation this process blocked)."""
    transport, stream = _stream(ctx)
    return ElicitationComplete.model_validate(
        {
            **_where(ctx),
            "transport": transport,
            "stream": stream,
            "elicitation_id": hash_id(s.elicitation_id),
            "outcome": "dropped" if dropped else "forwarded",
        }
    )
