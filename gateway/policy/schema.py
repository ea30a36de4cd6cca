"""The policy file format (``version: 1``) as strict pydantic models.

Every model forbids unknown keys and is frozen: a typo in a policy file is an error naming the
exact field, never a silently ignored setting. The loader (``gateway.policy.loader``) validates a
file against ``PolicyFile`` and compiles it into an immutable ``Policy``; nothing here runs per
message. Every key is documented in docs/policies.md.
"""

from __future__ import annotations

import ipaddress
import unicodedata
from typing import Annotated, Any, Literal

import idna
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from gateway.detect.findings import Reason

ActionName = Literal["allow", "warn", "block"]
REASON_CODES = frozenset(r.value for r in Reason)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReasonAction(_Strict):
    """The action for one reason, per finding severity. A bare string sets ``high`` only; ``low``
    then follows the policy-wide ``low_severity`` rule (see ``PolicyFile.low_severity``)."""

    high: ActionName
    low: ActionName | None = None


def _action_shorthand(value: Any) -> Any:
    return {"high": value} if isinstance(value, str) else value


ActionSpec = Annotated[ReasonAction, BeforeValidator(_action_shorthand)]


def _reason_code(value: str) -> str:
    if value not in REASON_CODES:
        raise ValueError("unknown reason code (the codes are listed in docs/policies.md)")
    return value


ReasonCode = Annotated[StrictStr, AfterValidator(_reason_code)]


def _check_internal_error(value: dict[str, ReasonAction]) -> dict[str, ReasonAction]:
    if Reason.INTERNAL_ERROR.value in value:
        spec = value[Reason.INTERNAL_ERROR.value]
        if spec.high != "block" or spec.low not in (None, "block"):
            raise ValueError("internal-error is always block (the gateway fails closed)")
    return value


Actions = Annotated[dict[ReasonCode, ActionSpec], AfterValidator(_check_internal_error)]


_SCHEME = r"^[A-Za-z][A-Za-z0-9+.\-]*$"


def _domain(value: str) -> str:
    """A host or registrable domain as a lower-case A-label (UTS #46), or a canonical IP."""
    text = value.strip().rstrip(".")
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    if text.startswith("*."):
        raise ValueError("write the domain without '*.' (subdomains are always included)")
    try:
        return idna.encode(text, uts46=True).decode("ascii").lower()
    except (idna.IDNAError, UnicodeError) as exc:
        raise ValueError("not a valid domain name") from exc


def _term(value: str) -> str:
    folded = unicodedata.normalize("NFKC", value).casefold().strip()
    if not folded:
        raise ValueError("empty term")
    return folded


def _key(value: str) -> str:
    folded = value.strip().casefold()
    if not folded:
        raise ValueError("empty query key")
    return folded


Domain = Annotated[StrictStr, AfterValidator(_domain)]
Term = Annotated[StrictStr, AfterValidator(_term)]
QueryKey = Annotated[StrictStr, AfterValidator(_key)]
Scheme = Annotated[StrictStr, Field(pattern=_SCHEME), AfterValidator(str.lower)]


class LimitsSpec(_Strict):
    max_bytes: Annotated[StrictInt, Field(ge=256, le=16 * 1024 * 1024)] = 65_536
    max_properties: Annotated[StrictInt, Field(ge=1, le=10_000)] = 50
    max_string: Annotated[StrictInt, Field(ge=16, le=1_048_576)] = 8_192
    max_enum: Annotated[StrictInt, Field(ge=1, le=100_000)] = 500
    max_depth: Annotated[StrictInt, Field(ge=3, le=64)] = 8
    max_url_length: Annotated[StrictInt, Field(ge=64, le=1_048_576)] = 4_096
    max_query_params: Annotated[StrictInt, Field(ge=1, le=10_000)] = 64
    decode_depth: Annotated[StrictInt, Field(ge=0, le=5)] = 2
    slow_decision_ms: Annotated[StrictFloat | StrictInt, Field(gt=0, le=10_000)] = 50.0

    @model_validator(mode="before")
    @classmethod
    def _old_budget(cls, data: Any) -> Any:
        """``time_budget_ms``, the old name: until 2026-12 it was a wall-clock budget whose
        overrun blocked; no clock takes part in a decision any more (same input, same verdict),
        so an old file's value only marks slow decisions now."""
        if isinstance(data, dict) and "time_budget_ms" in data:
            if "slow_decision_ms" in data:
                raise ValueError("give slow_decision_ms only (time_budget_ms is its old name)")
            data = {**data, "slow_decision_ms": data["time_budget_ms"]}
            del data["time_budget_ms"]
        return data


class TermsSpec(_Strict):
    """Extra field-name terms per category (any language; normalised NFKC + casefold on load)."""

    secret: tuple[Term, ...] = ()
    payment: tuple[Term, ...] = ()
    sensitive_pii: tuple[Term, ...] = ()


class FormSpec(_Strict):
    extra_terms: TermsSpec = TermsSpec()
    allow_terms: tuple[Term, ...] = ()
    card_context_required: StrictBool = True


class UrlSpec(_Strict):
    schemes: tuple[Scheme, ...] = ("https",)
    dev_loopback_http: StrictBool = True
    protected_domains: tuple[Domain, ...] = ()
    trusted_domains: tuple[Domain, ...] = ()
    allowed_hosts: tuple[Domain, ...] = ()
    safe_query_keys: tuple[QueryKey, ...] = ()
    sensitive_query_keys: tuple[QueryKey, ...] = ()


class OutboundSpec(_Strict):
    validate_content: StrictBool = True
    scan_secrets: StrictBool = True


class EnforcementSpec(_Strict):
    """How the relay carries out a decision (used by the relay; stable from version 1)."""

    block_response: Literal["decline", "cancel", "error"] = "decline"
    all_blocked_round: Literal["retry", "fail"] = "retry"
    max_gateway_rounds: Annotated[StrictInt, Field(ge=0, le=20)] = 3
    mark_warnings: StrictBool = True
    outbound: OutboundSpec = OutboundSpec()


class ServerSpec(_Strict):
    """Overrides for one upstream, keyed by its name in the gateway config."""

    trusted_domains: tuple[Domain, ...] = ()
    allowed_hosts: tuple[Domain, ...] | None = None  # replaces the global list when set
    extra_terms: TermsSpec = TermsSpec()
    allow_terms: tuple[Term, ...] = ()
    actions: Actions = {}


class PolicyFile(_Strict):
    version: Literal[1]
    description: StrictStr = ""
    enforce: StrictBool = True
    actions: Actions = {}
    # A LOW-severity finding whose reason is set to a bare "block" becomes this action.
    low_severity: Literal["warn", "block"] = "warn"
    limits: LimitsSpec = LimitsSpec()
    form: FormSpec = FormSpec()
    url: UrlSpec = UrlSpec()
    servers: dict[StrictStr, ServerSpec] = {}
    enforcement: EnforcementSpec = EnforcementSpec()
    # Tell the user when the gateway blocked an elicitation (gateway/enforce/notice.py).
    notify_user: StrictBool = True
