"""Compiled, immutable detection settings.

The policy loader (``gateway.policy``) validates YAML with pydantic and compiles it into these
frozen dataclasses once; detectors only ever read them. Keeping them here (not in the policy
package) lets every detector depend on plain data and be tested without YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int = 65_536  # serialized params; larger → oversize, nothing else runs
    max_properties: int = 50
    max_string: int = 8_192
    max_enum: int = 500
    max_depth: int = 8
    max_url_length: int = 4_096
    max_query_params: int = 64
    decode_depth: int = 2  # nested percent/base64/hex decoding rounds
    # Decisions slower than this are marked slow (audit line, metric); never failed: no clock
    # takes part in a decision.
    slow_decision_ms: float = 50.0


@dataclass(frozen=True, slots=True)
class FormConfig:
    """Form-mode detection settings. Terms are already normalised (NFKC + casefold)."""

    extra_secret_terms: frozenset[str] = frozenset()
    extra_payment_terms: frozenset[str] = frozenset()
    extra_sensitive_pii_terms: frozenset[str] = frozenset()
    # Terms that must never trigger a field finding (operator exceptions), normalised.
    allow_terms: frozenset[str] = frozenset()
    card_context_required: bool = True


@dataclass(frozen=True, slots=True)
class UrlConfig:
    """URL-mode (and URL-in-text) settings. Domains are lower-case A-labels (punycode)."""

    schemes: frozenset[str] = frozenset({"https"})
    dev_loopback_http: bool = True
    protected_domains: frozenset[str] = frozenset()  # registrable domains, e.g. "paypal.com"
    trusted_domains: frozenset[str] = frozenset()  # registrable domains trusted for this server
    # If non-empty, only these hosts (or hosts under these domains) are allowed.
    allowed_hosts: frozenset[str] = frozenset()
    safe_query_keys: frozenset[str] = frozenset()  # case-folded
    sensitive_query_keys: frozenset[str] = frozenset()  # case-folded


@dataclass(frozen=True, slots=True)
class DetectConfig:
    limits: Limits = field(default_factory=Limits)
    form: FormConfig = field(default_factory=FormConfig)
    url: UrlConfig = field(default_factory=UrlConfig)
