"""The decision engine: one ``elicitation/create`` ``params`` object in, one ``Decision`` out.

Layers, cheap first; every applicable check runs so the audit shows every reason:

0. envelope and limits (``gateway.policy.envelope``) — oversize stops everything else;
1. mode declared by the client (``modes``, already resolved from its capabilities);
2. detectors — form: ``check_form``; URL: ``analyze_url`` on ``url`` and ``check_text`` on
   ``message``; any message: ``find_pii`` → ``pii-in-message``;
3. decision — each finding's action is the policy's action for (reason, severity, server);
   the strictest wins; ``enforce: false`` marks the decision as not enforced (shadow mode);
4. fail closed — an exception anywhere is a block with ``internal-error`` at ``$``, its
   ``detail`` the exception's class name (never its message: it may quote the input).
   ``evaluate`` never raises; being sans-IO it does not log either: the caller sees the
   finding and reports it (the enforcer emits ``policy.detector_failed``, counted in
   ``gateway_detector_errors_total``).

Same input, same verdict: no clock takes part in a decision. The work per decision is bounded by
the input limits (``Limits``) and linear-time matching (RE2, no backtracking patterns), not by a
deadline, so a busy replica and an idle one decide alike. How long decisions take is measured by
the caller (``Limits.slow_decision_ms`` marks slow ones in the audit line and a metric).
"""

from __future__ import annotations

from typing import Any

from gateway.detect.config import DetectConfig
from gateway.detect.findings import Action, Decision, Evidence, Finding, Reason, Severity
from gateway.policy.envelope import check_envelope
from gateway.policy.loader import Policy

_MODE_NOT_DECLARED = Evidence("mode-not-declared", "client-capabilities")

_WARM_UP: tuple[dict[str, Any], ...] = (
    {
        "message": "Sign in at https://example.com, we texted +1 415 555 2671 to jane@example.com",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "password": {"type": "string", "title": "Passwort", "default": "AKIA0000"},
                "card": {"type": "string", "title": "Card number", "description": "e.g. v1.2"},
                "pick": {"type": "string", "enum": ["alpha", "beta", "gamma", "delta"]},
            },
        },
    },
    {
        "mode": "url",
        "message": "Connect",
        "url": "https://bücher.example.co.uk/a?token=x&e=a%40b.c",
    },
)
_warmed: set[DetectConfig] = set()


def warm_up(policy: Policy) -> None:
    """Load every detector's data (lexicon, rules, PSL, confusables, phone metadata) and build
    the indexes of every detection configuration of ``policy`` (global and per server).

    Loading takes a few hundred milliseconds: without this, the first decisions after start-up
    or a reload would be slow. Run before a policy takes traffic — at start-up (before the
    workers are forked, so they share the pages) and on every reload, before the swap
    (``gateway.proxy.reload``). A configuration already warm is skipped; ``evaluate`` warms a
    configuration it meets cold, so no caller is ever wrong, only slow.
    """
    for server in (None, *policy.servers):
        _warm(policy.detect_config(server))


def is_warm(policy: Policy) -> bool:
    """True when every detection configuration of ``policy`` has been warmed."""
    return all(policy.detect_config(server) in _warmed for server in (None, *policy.servers))


def _warm(cfg: DetectConfig) -> None:
    if cfg in _warmed:
        return
    for params in _WARM_UP:
        if params.get("mode") == "url":
            _url(params, cfg)
        else:
            _form(params, cfg)
        _pii(params["message"])
    _warmed.add(cfg)


def evaluate(
    params: Any,
    *,
    modes: frozenset[str],
    server: str | None,
    policy: Policy,
    era: str | None = None,
) -> Decision:
    """Decide on one elicitation. Never raises: any failure is a fail-closed block.

    ``era`` is the protocol era of the exchange (``"handshake"`` or ``"modern"``, as
    ``gateway.era.Era`` values); None or ``"unknown"`` turns the era-specific rules off (a
    handshake-era URL request must carry ``elicitationId``, a 2026-07-28 one has none)."""
    try:
        cfg = policy.detect_config(server)
        _warm(cfg)
        findings = _findings(params, modes, cfg, era)
        return _decide(findings, policy, server)
    except Exception as exc:  # fail closed; the caller reports it (see the module docstring)
        failed = Finding(Reason.INTERNAL_ERROR, "$", detail=type(exc).__name__[:64])
        return Decision(Action.BLOCK, (failed,), enforced=policy.enforce)


def decide(findings: list[Finding], policy: Policy, server: str | None = None) -> Decision:
    """Layer 3 alone: the strictest per-finding action (``allow`` when nothing was found)."""
    return _decide(findings, policy, server)


def _decide(findings: list[Finding], policy: Policy, server: str | None) -> Decision:
    unique = tuple(dict.fromkeys(findings))
    action = Action.ALLOW
    for finding in unique:
        candidate = policy.action_for(finding.reason, finding.severity, server)
        if candidate.rank > action.rank:
            action = candidate
    return Decision(action, unique, enforced=policy.enforce)


def _findings(
    params: Any, modes: frozenset[str], cfg: DetectConfig, era: str | None = None
) -> list[Finding]:
    envelope = check_envelope(params, cfg.limits, era)
    findings = list(envelope.findings)
    if envelope.mode is None:
        return findings  # oversize, not an object, or an unknown mode: nothing else can run
    if envelope.mode not in modes:
        findings.append(
            Finding(
                Reason.MODE_NOT_DECLARED,
                "$.mode",
                detail=envelope.mode,
                evidence=_MODE_NOT_DECLARED,
            )
        )
    if not envelope.inspectable:
        return findings
    findings += _form(params, cfg) if envelope.mode == "form" else _url(params, cfg)
    message = params.get("message")
    if isinstance(message, str):
        findings += _pii(message)
    return findings


def _form(params: dict[str, Any], cfg: DetectConfig) -> list[Finding]:
    from gateway.detect.fields import check_form  # noqa: PLC0415 - loaded once, then cached

    return check_form(params, cfg.form, cfg.limits)


def _url(params: dict[str, Any], cfg: DetectConfig) -> list[Finding]:
    from gateway.detect.fields import check_text  # noqa: PLC0415
    from gateway.detect.urls import analyze_url  # noqa: PLC0415

    out: list[Finding] = []
    url = params.get("url")
    message = params.get("message")
    context = message if isinstance(message, str) else ""
    if isinstance(url, str):
        out += analyze_url(url, "$.url", cfg.url, cfg.limits, context=context)
    if isinstance(message, str):
        out += check_text(message, "$.message", cfg.limits, prose=True)
    return out


def _pii(message: str) -> list[Finding]:
    from gateway.detect.pii import find_pii, pii_evidence  # noqa: PLC0415
    from gateway.detect.url_pii import national_ids_in_text  # noqa: PLC0415

    kinds = list(find_pii(message))
    if "national-id" not in kinds and national_ids_in_text(message):
        kinds.append("national-id")  # checksum-valid IDs of more countries (PESEL, TC Kimlik, …)
    return [
        Finding(
            Reason.PII_IN_MESSAGE,
            "$.message",
            severity=Severity.LOW,
            detail=kind,
            evidence=pii_evidence(kind),
        )
        for kind in kinds
    ]
