"""Decisions as data: actions, stable reason codes and findings.

A finding names *where* something was found (a JSON path into the elicitation ``params``) and *why*
(a stable kebab-case reason code). It never carries the matched value: findings go to the audit
log, and the audit log must never contain what the user or the server typed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum


class Action(StrEnum):
    """What the gateway does with one elicitation."""

    ALLOW = "allow"
    WARN = "warn"
    BLOCK = "block"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Action.ALLOW: 0, Action.WARN: 1, Action.BLOCK: 2}


class Reason(StrEnum):
    """Stable reason codes. Extend only with a documented reason (docs/policies.md)."""

    SECRET_FIELD = "secret-field"  # noqa: S105 - a reason code, not a secret
    OTP_FIELD = "otp-field"
    PAYMENT_FIELD = "payment-field"
    SENSITIVE_PII_FIELD = "sensitive-pii-field"
    SECRET_VALUE = "secret-value"  # noqa: S105 - a reason code, not a secret
    CLICKABLE_URL = "clickable-url"
    NON_HTTPS = "non-https"
    BAD_SCHEME = "bad-scheme"
    USERINFO = "userinfo"
    IP_LITERAL = "ip-literal"
    IDN_HOST = "idn-host"
    CONFUSABLE_HOST = "confusable-host"
    TYPOSQUAT = "typosquat"
    PII_IN_URL = "pii-in-url"
    CREDENTIAL_IN_URL = "credential-in-url"
    PREAUTH_URL = "preauth-url"
    ENCODED_PAYLOAD = "encoded-payload"
    INVISIBLE_CHARS = "invisible-chars"
    PII_IN_MESSAGE = "pii-in-message"
    MALFORMED = "malformed"
    SCHEMA_VIOLATION = "schema-violation"
    OVERSIZE = "oversize"
    MODE_NOT_DECLARED = "mode-not-declared"
    HOST_NOT_ALLOWED = "host-not-allowed"
    SHORTENER = "shortener"
    INTERNAL_ERROR = "internal-error"


class Severity(IntEnum):
    """How sure a detector is; the policy maps (reason, severity) to an action."""

    LOW = 1  # suspicious: the default policy warns
    HIGH = 2  # a clear violation: the default policy blocks


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a detector reported a finding, for people (``check --explain``), never for the audit.

    ``concept``: what was recognised (``password``, ``card-number``, ``lookalike-domain``);
    ``signal``: what fired (``term``, ``stem``, ``message-ask``, ``format-password``, ``luhn``,
    ``skeleton:<brand>``, ``shortener:<domain>`` …); ``term``: the lexicon term that matched —
    text from the gateway's own data, never the input's — and ``lang``, the language it is listed
    under in ``gateway/data/concepts.yaml`` (or ``data/concepts/*.yaml``), when known.
    """

    concept: str
    signal: str
    term: str | None = None
    lang: str | None = None

    def describe(self) -> str:
        """``concept=password signal=message-ask term="mot de passe" lang=fr``."""
        out = f"concept={self.concept} signal={self.signal}"
        if self.term is not None:
            escaped = self.term.replace("\\", "\\\\").replace('"', '\\"')
            out += f' term="{escaped}"'
        if self.lang is not None:
            out += f" lang={self.lang}"
        return out


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason to act, at one JSON path (``$.requestedSchema.properties.pin``). Never a value.

    ``severity`` is the detector's own judgement (e.g. a legitimate IDN host is LOW, a whole-script
    confusable of a protected domain is HIGH). ``detail`` is an optional short, value-free label
    such as ``"otp"`` or ``"aws-sigv4"`` for the audit log; it must never contain input text.
    ``evidence`` explains the finding to people (``check --explain``); it takes no part in equality
    or hashing (findings deduplicate as before) and never reaches the audit log or metrics.
    """

    reason: Reason
    path: str
    severity: Severity = Severity.HIGH
    detail: str = ""
    evidence: Evidence | None = field(default=None, compare=False)


def json_path(*parts: str | int) -> str:
    """Build a JSON path from keys and indexes.

    ``json_path("requestedSchema", "properties", "a.b")`` → ``$.requestedSchema.properties["a.b"]``:
    keys that are not plain identifiers are quoted."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier() and part.isascii():
            out.append(f".{part}")
        else:
            escaped = part.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{escaped}"]')
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Decision:
    """The engine's verdict on one elicitation.

    ``action`` is what the policy decided; ``enforced`` is False in shadow mode
    (``enforce: false``), where the relay forwards everything but audits ``action`` as decided.
    """

    action: Action
    findings: tuple[Finding, ...] = ()
    enforced: bool = True

    @property
    def reasons(self) -> list[str]:
        """Unique reason codes, in first-seen order."""
        return list(dict.fromkeys(f.reason.value for f in self.findings))

    @property
    def effective_action(self) -> Action:
        """What the relay must do: shadow mode never blocks (a block is downgraded to warn)."""
        if not self.enforced and self.action is Action.BLOCK:
            return Action.WARN
        return self.action
