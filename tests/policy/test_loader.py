"""Policy files: validation errors name file and field; compilation; the shipped policies."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.detect.findings import Action, Reason, Severity
from gateway.errors import PolicyError
from gateway.policy.loader import DEFAULT_ACTIONS, load_policy, parse_policy

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"


def _error(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_policy(text.encode(), "p.yaml")
    return info.value


@pytest.mark.parametrize("name", ["default", "strict", "dev", "audit-only"])
def test_shipped_policies_load(name: str) -> None:
    policy = load_policy(POLICIES / f"{name}.yaml")
    assert policy.source.endswith(f"{name}.yaml")
    assert len(policy.revision) == 64
    assert policy.enforce is (name != "audit-only")


def test_revision_is_sha256_of_bytes(tmp_path: Path) -> None:
    import hashlib

    raw = b"version: 1\n"
    f = tmp_path / "p.yaml"
    f.write_bytes(raw)
    assert load_policy(f).revision == hashlib.sha256(raw).hexdigest()
    assert load_policy(str(f)).source == str(f)


def test_minimal_file_means_builtin_defaults() -> None:
    policy = parse_policy(b"version: 1\n")
    for reason, action in DEFAULT_ACTIONS.items():
        assert policy.action_for(reason, Severity.HIGH) is action


def test_default_yaml_equals_builtin_defaults() -> None:
    policy = load_policy(POLICIES / "default.yaml")
    minimal = parse_policy(b"version: 1\n")
    for reason in Reason:
        for sev in Severity:
            assert policy.action_for(reason, sev) is minimal.action_for(reason, sev)


def test_low_severity_of_block_reason_is_downgraded_to_warn() -> None:
    policy = parse_policy(b"version: 1\n")
    assert policy.action_for(Reason.CLICKABLE_URL, Severity.HIGH) is Action.BLOCK
    assert policy.action_for(Reason.CLICKABLE_URL, Severity.LOW) is Action.WARN
    assert policy.action_for(Reason.IDN_HOST, Severity.LOW) is Action.WARN


def test_low_severity_block_means_no_downgrade() -> None:
    policy = parse_policy(b"version: 1\nlow_severity: block\n")
    assert policy.action_for(Reason.CLICKABLE_URL, Severity.LOW) is Action.BLOCK
    assert policy.action_for(Reason.IDN_HOST, Severity.LOW) is Action.WARN  # warn stays warn


def test_explicit_low_action() -> None:
    text = b"version: 1\nactions:\n  typosquat: {high: block, low: allow}\n"
    policy = parse_policy(text)
    assert policy.action_for(Reason.TYPOSQUAT, Severity.HIGH) is Action.BLOCK
    assert policy.action_for(Reason.TYPOSQUAT, Severity.LOW) is Action.ALLOW


def test_strict_blocks_warn_reasons() -> None:
    policy = load_policy(POLICIES / "strict.yaml")
    for reason in (Reason.IDN_HOST, Reason.TYPOSQUAT, Reason.SENSITIVE_PII_FIELD):
        assert policy.action_for(reason, Severity.LOW) is Action.BLOCK
    assert policy.detect_config().url.dev_loopback_http is False


def test_dev_host_findings_warn() -> None:
    policy = load_policy(POLICIES / "dev.yaml")
    for reason in (Reason.CONFUSABLE_HOST, Reason.IP_LITERAL, Reason.HOST_NOT_ALLOWED):
        assert policy.action_for(reason, Severity.HIGH) is Action.WARN
    assert policy.action_for(Reason.SECRET_FIELD) is Action.BLOCK
    assert policy.detect_config().url.dev_loopback_http is True


def test_internal_error_is_always_block() -> None:
    err = _error("version: 1\nactions:\n  internal-error: warn\n")
    assert err.field == "actions"
    assert "fails closed" in err.message


def test_per_server_overrides() -> None:
    text = """
version: 1
url:
  trusted_domains: [example.org]
  allowed_hosts: [a.example.org]
form:
  extra_terms: {secret: ["Zugangscode"]}
servers:
  acme:
    trusted_domains: [ACME.com]
    allowed_hosts: [login.acme.com]
    extra_terms: {payment: [Kontonummer]}
    allow_terms: [pin]
    actions:
      secret-field: warn
"""
    policy = parse_policy(text.encode())
    glob, acme = policy.detect_config(None), policy.detect_config("acme")
    assert policy.detect_config("unknown") is glob
    assert acme.url.trusted_domains == {"example.org", "acme.com"}
    assert acme.url.allowed_hosts == {"login.acme.com"}
    assert glob.url.allowed_hosts == {"a.example.org"}
    assert acme.form.extra_secret_terms == {"zugangscode"}
    assert acme.form.extra_payment_terms == {"kontonummer"}
    assert acme.form.allow_terms == {"pin"}
    assert glob.form.allow_terms == frozenset()
    assert policy.action_for(Reason.SECRET_FIELD, server="acme") is Action.WARN
    assert policy.action_for(Reason.SECRET_FIELD, server=None) is Action.BLOCK
    assert policy.action_for(Reason.SECRET_FIELD, server="other") is Action.BLOCK
    assert policy.servers == ("acme",)


def test_domains_and_keys_are_normalised() -> None:
    text = """
version: 1
url:
  schemes: [HTTPS]
  protected_domains: ["Bücher.de", "EXAMPLE.com."]
  allowed_hosts: ["127.0.0.1", "[::1]"]
  safe_query_keys: [ElicitationId]
"""
    url = parse_policy(text.encode()).detect_config().url
    assert url.schemes == {"https"}
    assert {"xn--bcher-kva.de", "example.com"} <= url.protected_domains
    assert url.allowed_hosts == {"127.0.0.1", "::1"}
    assert url.safe_query_keys == {"elicitationid"}


def test_limits_compile() -> None:
    limits = parse_policy(b"version: 1\nlimits: {max_bytes: 1024, slow_decision_ms: 5}\n")
    assert limits.detect_config().limits.max_bytes == 1024
    assert limits.detect_config().limits.slow_decision_ms == 5.0


def test_enforcement_section_defaults() -> None:
    enf = parse_policy(b"version: 1\n").enforcement
    assert (enf.block_response, enf.all_blocked_round, enf.max_gateway_rounds) == (
        "decline",
        "retry",
        3,
    )
    assert enf.mark_warnings
    assert enf.outbound.validate_content
    assert enf.outbound.scan_secrets


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("version: 1\nurl:\n  schemes: [https, '1nvalid']\n", "url.schemes[1]"),
        (
            "version: 1\nservers:\n  acme:\n    actions:\n      secret-field: blok\n",
            "servers.acme.actions.secret-field",
        ),
        ("version: 1\nactions:\n  secret-feild: block\n", "actions.secret-feild"),
        ("version: 1\nactions:\n  typosquat: {high: block, low: maybe}\n", "actions.typosquat.low"),
        ("version: 1\nurl:\n  shemes: [https]\n", "url.shemes"),
        ("version: 1\nlimits:\n  max_bytes: 'big'\n", "limits.max_bytes"),
        ("version: 1\nlimits:\n  max_bytes: 0\n", "limits.max_bytes"),
        ("version: 1\nenforce: 'no'\n", "enforce"),
        ("version: 1\nenforcement:\n  block_response: drop\n", "enforcement.block_response"),
        ("version: 1\nenforcement:\n  outbound: {scan: true}\n", "enforcement.outbound.scan"),
        (
            "version: 1\nurl:\n  trusted_domains: [ok.example, 'bad domain!']\n",
            "url.trusted_domains[1]",
        ),
        ("version: 1\nform:\n  allow_terms: ['  ']\n", "form.allow_terms[0]"),
        ("version: 2\n", "version"),
        ("description: no version\n", "version"),
    ],
)
def test_errors_name_the_field(text: str, field: str) -> None:
    err = _error(text)
    assert err.file == "p.yaml"
    assert err.field == field
    assert str(err).startswith(f"p.yaml: {field}: ")


def test_yaml_syntax_error_has_line() -> None:
    err = _error("version: 1\nurl:\n  schemes: [https\n")
    assert err.field.startswith("line ")
    assert "YAML" in err.message


def test_duplicate_keys_rejected() -> None:
    err = _error("version: 1\nenforce: true\nenforce: false\n")
    assert err.field == "line 3, column 1"
    assert "duplicate key" in err.message


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just a string\n", "42\n"])
def test_top_level_must_be_mapping(text: str) -> None:
    err = _error(text)
    assert err.field == ""
    assert "mapping" in err.message


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(PolicyError) as info:
        load_policy(missing)
    assert info.value.file == str(missing)
    assert "cannot read" in info.value.message


def test_python_tags_are_not_constructed() -> None:
    err = _error("version: 1\ndescription: !!python/object/apply:os.system ['true']\n")
    assert "YAML" in err.message


def test_policy_is_immutable() -> None:
    import dataclasses

    policy = parse_policy(b"version: 1\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.enforce = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        policy._actions[None] = {}  # type: ignore[index]
