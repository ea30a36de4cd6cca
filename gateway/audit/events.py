"""The audit events: one frozen pydantic model per event kind (logger ``gateway.audit``).

Every audit line the gateway writes is one of these models rendered to a JSON object
(:meth:`AuditEvent.record`). A model names facts, never values: reason codes, field names, JSON
paths, modes, schemes, registrable domains, and ids only as 16-hex-digit SHA-256 prefixes.
``extra="forbid"`` keeps a field from being added without a model change, and
``tests/audit/test_events.py`` checks every model field against its section of docs/audit.md
(and the other way round).

* ``elicitation.decision``   one line per elicitation decided (the canonical line)
* ``elicitation.answer``     one line per user answer checked on the way out
* ``elicitation.complete``   one line per ``notifications/elicitation/complete`` seen
* ``policy.detector_failed`` a detector raised while deciding (its decision fails closed)
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

SCHEMA_VERSION: Final = 2
"""Version 2: ``elicitation.seen`` folded into ``elicitation.decision`` (``location``,
``request_id``, ``elicitation_id``) and ``elicitation.answer`` (``carrier``, ``answer_action``);
``elicitation.complete`` added; ``policy.detector_failed`` names its ``decision_id``."""

Era = Literal["handshake", "modern", "unknown"]
Mode = Literal["form", "url"]
Transport = Literal["json", "sse", "stdio"]
Stream = Literal["post", "get"]
Action = Literal["allow", "warn", "block"]
AnswerAction = Literal["accept", "decline", "cancel", "error", "other"]
ElicitationCarrier = Literal["server-request", "url-required-error", "input-required"]
AnswerCarrier = Literal["answer", "input-response"]
AnswerOutcome = Literal[
    "forwarded", "declined-by-gateway", "rejected", "state-rejected", "replayed"
]
TokenError = Literal[
    "invalid",
    "expired",
    "foreign-session",
    "foreign-credential",
    "foreign-upstream",
    "other-method",
    "other-target",
    "other-arguments",
]
HashedId = str  # 16 hex digits of SHA-256 (gateway.enforce.exchange.hash_id)

_HASH = r"^[0-9a-f]{16}$"


class FindingRecord(BaseModel):
    """One finding: a reason code and a JSON path (``detail`` only when the finding has one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str
    path: str
    detail: str | None = None

    @model_serializer(mode="plain")
    def _render(self) -> dict[str, str]:
        out = {"reason": self.reason, "path": self.path}
        if self.detail:
            out["detail"] = self.detail
        return out


class AuditEvent(BaseModel):
    """Common to every audit event: its name (``event``) and the schema version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    LOGGER: ClassVar[str] = "gateway.audit"

    schema_version: Literal[2] = SCHEMA_VERSION

    def record(self) -> dict[str, Any]:
        """The JSON object of the audit line (``event`` first, then the fields in model order)."""
        fields = self.model_dump(mode="json")
        return {"event": fields.pop("event"), **fields}


class _Where(AuditEvent):
    """Which upstream, era, session and client an event belongs to."""

    upstream: str
    era: Era
    session: HashedId | None = Field(default=None, pattern=_HASH)
    client: str | None = Field(default=None, max_length=128)


class ElicitationDecision(_Where):
    """One line per elicitation decided, written when the decision is made."""

    event: Literal["elicitation.decision"] = "elicitation.decision"
    decision_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    carrier: ElicitationCarrier
    transport: Transport
    stream: Stream | None
    location: str = Field(max_length=256)
    request_id: HashedId | None = Field(pattern=_HASH)
    elicitation_id: HashedId | None = Field(pattern=_HASH)
    mode: Mode | None
    declared_modes: tuple[str, ...] | None
    action: Action
    decided: Action
    enforced: bool
    reasons: tuple[str, ...]
    findings: tuple[FindingRecord, ...]
    policy_revision: str
    fields: tuple[str, ...]
    url_scheme: str | None
    url_domain: str | None
    key: str | None = Field(max_length=128)
    latency_ms: float
    slow: bool


class ElicitationAnswer(_Where):
    """One line per user answer to an elicitation checked on its way to the server."""

    event: Literal["elicitation.answer"] = "elicitation.answer"
    decision_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    carrier: AnswerCarrier
    answer_action: AnswerAction | None
    outcome: AnswerOutcome
    reasons: tuple[str, ...]
    findings: tuple[FindingRecord, ...]
    token_error: TokenError | None
    key: str | None = Field(max_length=128)
    answer_id: Literal["sealed", "raw"] | None


class ElicitationComplete(_Where):
    """A ``notifications/elicitation/complete`` seen on its way to the client."""

    event: Literal["elicitation.complete"] = "elicitation.complete"
    transport: Transport
    stream: Stream | None
    elicitation_id: HashedId | None = Field(pattern=_HASH)
    outcome: Literal["forwarded", "dropped"]


class DetectorFailed(_Where):
    """A detector raised while deciding; the decision (same ``decision_id``) is a block."""

    event: Literal["policy.detector_failed"] = "policy.detector_failed"
    decision_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    carrier: ElicitationCarrier
    mode: Mode | None
    error: str | None = Field(max_length=128)
    policy_revision: str


Event = ElicitationDecision | ElicitationAnswer | ElicitationComplete | DetectorFailed
"""Any audit event (what :meth:`gateway.enforce.enforcer.Enforcer.process` returns)."""

EVENT_MODELS: Final[tuple[type[AuditEvent], ...]] = (
    ElicitationDecision,
    ElicitationAnswer,
    ElicitationComplete,
    DetectorFailed,
)
