"""Load a policy file: bytes → YAML → ``PolicyFile`` → an immutable, precompiled ``Policy``.

The same function runs at startup and on reload. Every failure is a ``PolicyError`` naming the
file and the exact field (``url.schemes[1]``, ``servers.acme.actions.secret-field``) or, for YAML
syntax errors, the line and column. Nothing here runs per message: ``Policy.detect_config`` and
``Policy.action_for`` are dictionary look-ups.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import ValidationError

from gateway.detect.config import DetectConfig, FormConfig, Limits, UrlConfig
from gateway.detect.findings import Action, Reason, Severity
from gateway.errors import PolicyError
from gateway.policy.schema import (
    EnforcementSpec,
    PolicyFile,
    ReasonAction,
    ServerSpec,
    TermsSpec,
)

A = Action
# The built-in action per reason (high severity); a policy file overrides any of them.
DEFAULT_ACTIONS: Mapping[Reason, Action] = MappingProxyType(
    {
        Reason.SECRET_FIELD: A.BLOCK,
        Reason.OTP_FIELD: A.BLOCK,
        Reason.PAYMENT_FIELD: A.BLOCK,
        Reason.SENSITIVE_PII_FIELD: A.WARN,
        Reason.SECRET_VALUE: A.BLOCK,
        Reason.CLICKABLE_URL: A.BLOCK,
        Reason.NON_HTTPS: A.BLOCK,
        Reason.BAD_SCHEME: A.BLOCK,
        Reason.USERINFO: A.BLOCK,
        Reason.IP_LITERAL: A.BLOCK,
        Reason.IDN_HOST: A.WARN,
        Reason.CONFUSABLE_HOST: A.BLOCK,
        Reason.TYPOSQUAT: A.WARN,
        Reason.PII_IN_URL: A.BLOCK,
        Reason.CREDENTIAL_IN_URL: A.BLOCK,
        Reason.PREAUTH_URL: A.BLOCK,
        Reason.ENCODED_PAYLOAD: A.BLOCK,
        Reason.INVISIBLE_CHARS: A.BLOCK,
        Reason.PII_IN_MESSAGE: A.WARN,
        Reason.MALFORMED: A.BLOCK,
        Reason.SCHEMA_VIOLATION: A.BLOCK,
        Reason.OVERSIZE: A.BLOCK,
        Reason.MODE_NOT_DECLARED: A.BLOCK,
        Reason.HOST_NOT_ALLOWED: A.BLOCK,
        Reason.SHORTENER: A.WARN,
        Reason.INTERNAL_ERROR: A.BLOCK,
    }
)


ActionTable = Mapping[tuple[Reason, Severity], Action]


@dataclass(frozen=True, slots=True)
class Policy:
    """A validated, compiled policy. Immutable: a reload builds a new one and swaps references."""

    source: str
    revision: str  # sha256 hex of the file bytes
    enforce: bool
    enforcement: EnforcementSpec
    spec: PolicyFile = field(repr=False)  # the validated file, read-only by convention
    _detect: Mapping[str | None, DetectConfig] = field(repr=False)
    _actions: Mapping[str | None, ActionTable] = field(repr=False)

    def detect_config(self, server: str | None = None) -> DetectConfig:
        """Detection settings for one upstream (global settings for an unknown or no server)."""
        return self._detect.get(server) or self._detect[None]

    def action_for(
        self, reason: Reason, severity: Severity = Severity.HIGH, server: str | None = None
    ) -> Action:
        table = self._actions.get(server) or self._actions[None]
        if reason is Reason.INTERNAL_ERROR:
            return Action.BLOCK  # fail closed, whatever the file says
        return table.get((reason, severity), Action.BLOCK)

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(k for k in self._detect if k is not None)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read, validate and compile a policy file. Raises ``PolicyError`` on any problem."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise PolicyError(source, "", f"cannot read policy file: {exc.strerror or exc}") from None
    return parse_policy(raw, source)


def parse_policy(raw: bytes, source: str = "<policy>") -> Policy:
    """Validate and compile policy YAML given as bytes (``source`` names it in errors)."""
    data = _parse_yaml(raw, source)
    try:
        spec = PolicyFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = _field_path(err["loc"], data)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise PolicyError(source, where, _message(err) + more) from None
    return compile_policy(spec, source=source, revision=hashlib.sha256(raw).hexdigest())


def compile_policy(spec: PolicyFile, *, source: str, revision: str) -> Policy:
    # The detector adds its bundled seed (gateway/data/protected_domains.txt) to these.
    protected = frozenset(spec.url.protected_domains)
    base = _actions(DEFAULT_ACTIONS, spec.actions, spec.low_severity)
    detect: dict[str | None, DetectConfig] = {None: _detect_config(spec, None, protected)}
    actions: dict[str | None, ActionTable] = {None: base}
    for name, server in spec.servers.items():
        detect[name] = _detect_config(spec, server, protected)
        merged = {**spec.actions, **server.actions}
        actions[name] = _actions(DEFAULT_ACTIONS, merged, spec.low_severity)
    return Policy(
        source=source,
        revision=revision,
        enforce=spec.enforce,
        enforcement=spec.enforcement,
        spec=spec,
        _detect=MappingProxyType(detect),
        _actions=MappingProxyType(actions),
    )


# --- YAML -------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _parse_yaml(raw: bytes, source: str) -> Any:
    try:
        loader = _UniqueKeyLoader(raw)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "yaml"
        problem = exc.problem or exc.context or "invalid YAML"
        raise PolicyError(source, where, f"YAML syntax error: {problem}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PolicyError(source, "", f"YAML error: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise PolicyError(source, "", "the policy must be a YAML mapping with `version: 1`")
    return data


# --- errors -----------------------------------------------------------------------------------


def _field_path(loc: Iterable[int | str], data: Any) -> str:
    parts = [p for p in loc if p != "[key]"]
    # A shorthand action (`secret-field: blok`) is validated as {"high": ...}: name the key itself.
    if parts and parts[-1] == "high" and isinstance(_lookup(data, parts[:-1]), str):
        parts = parts[:-1]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _lookup(data: Any, parts: list[int | str]) -> Any:
    for part in parts:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _message(err: Any) -> str:
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return "unknown key (see docs/policies.md for the valid keys)"
    if err["type"] == "literal_error" and err["loc"] == ("version",):
        return "unsupported or missing policy version (this gateway reads `version: 1`)"
    return msg


# --- compilation ------------------------------------------------------------------------------


def _actions(
    defaults: Mapping[Reason, Action], overrides: Mapping[str, ReasonAction], low_severity: str
) -> ActionTable:
    table: dict[tuple[Reason, Severity], Action] = {}
    for reason in Reason:
        spec = overrides.get(reason.value)
        high = Action(spec.high) if spec else defaults[reason]
        if spec and spec.low is not None:
            low = Action(spec.low)
        elif high is Action.BLOCK:
            low = Action(low_severity)
        else:
            low = high
        table[(reason, Severity.HIGH)] = high
        table[(reason, Severity.LOW)] = low
    return MappingProxyType(table)


def _detect_config(
    spec: PolicyFile, server: ServerSpec | None, protected: frozenset[str]
) -> DetectConfig:
    lim = spec.limits
    limits = Limits(
        max_bytes=lim.max_bytes,
        max_properties=lim.max_properties,
        max_string=lim.max_string,
        max_enum=lim.max_enum,
        max_depth=lim.max_depth,
        max_url_length=lim.max_url_length,
        max_query_params=lim.max_query_params,
        decode_depth=lim.decode_depth,
        slow_decision_ms=float(lim.slow_decision_ms),
    )
    terms = spec.form.extra_terms
    extra = server.extra_terms if server else TermsSpec()
    form = FormConfig(
        extra_secret_terms=frozenset(terms.secret) | frozenset(extra.secret),
        extra_payment_terms=frozenset(terms.payment) | frozenset(extra.payment),
        extra_sensitive_pii_terms=frozenset(terms.sensitive_pii) | frozenset(extra.sensitive_pii),
        allow_terms=frozenset(spec.form.allow_terms)
        | frozenset(server.allow_terms if server else ()),
        card_context_required=spec.form.card_context_required,
    )
    u = spec.url
    allowed = u.allowed_hosts
    if server is not None and server.allowed_hosts is not None:
        allowed = server.allowed_hosts
    url = UrlConfig(
        schemes=frozenset(u.schemes),
        dev_loopback_http=u.dev_loopback_http,
        protected_domains=protected,
        trusted_domains=frozenset(u.trusted_domains)
        | frozenset(server.trusted_domains if server else ()),
        allowed_hosts=frozenset(allowed),
        safe_query_keys=frozenset(u.safe_query_keys),
        sensitive_query_keys=frozenset(u.sensitive_query_keys),
    )
    return DetectConfig(limits=limits, form=form, url=url)
