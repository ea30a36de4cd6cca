"""The decision engine: layers, the decision rule, shadow mode, per-server actions, fail closed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.detect.findings import Action, Finding, Reason, Severity
from gateway.errors import PolicyError
from gateway.policy import engine
from gateway.policy.engine import decide, evaluate
from gateway.policy.loader import Policy, load_policy, parse_policy

POLICIES = Path(__file__).resolve().parents[2] / "policies"
BOTH = frozenset({"form", "url"})


@pytest.fixture(scope="module")
def default() -> Policy:
    return load_policy(POLICIES / "default.yaml")


def _form(message: str, **props: Any) -> dict[str, Any]:
    return {"message": message, "requestedSchema": {"type": "object", "properties": props}}


def _url(url: str, message: str = "Please sign in to connect your account.") -> dict[str, Any]:
    return {"mode": "url", "message": message, "url": url, "elicitationId": "e-1"}


def _codes(params: Any, policy: Policy, modes: frozenset[str] = BOTH) -> tuple[str, set[str]]:
    d = evaluate(params, modes=modes, server=None, policy=policy)
    return d.action.value, set(d.reasons)


# --- layer 3: the decision rule (no detectors involved) ---------------------------------------


def test_no_findings_is_allow(default: Policy) -> None:
    d = decide([], default)
    assert d.action is Action.ALLOW
    assert d.findings == ()
    assert d.enforced


def test_strictest_action_wins(default: Policy) -> None:
    warn = Finding(Reason.IDN_HOST, "$.url", Severity.LOW)
    block = Finding(Reason.SECRET_FIELD, "$.requestedSchema.properties.pw")
    assert decide([warn], default).action is Action.WARN
    assert decide([warn, block], default).action is Action.BLOCK
    assert decide([block, warn], default).reasons == ["secret-field", "idn-host"]


def test_low_severity_downgrade(default: Policy) -> None:
    low = Finding(
        Reason.CLICKABLE_URL, "$.requestedSchema.properties.site.description", Severity.LOW
    )
    assert decide([low], default).action is Action.WARN
    strict = load_policy(POLICIES / "strict.yaml")
    assert decide([low], strict).action is Action.BLOCK


def test_duplicate_findings_are_merged(default: Policy) -> None:
    f = Finding(Reason.INVISIBLE_CHARS, "$.message")
    assert decide([f, f], default).findings == (f,)


def test_shadow_mode_decides_but_does_not_enforce() -> None:
    shadow = load_policy(POLICIES / "audit-only.yaml")
    d = decide([Finding(Reason.SECRET_FIELD, "$")], shadow)
    assert d.action is Action.BLOCK
    assert d.enforced is False
    assert d.effective_action is Action.WARN


def test_per_server_actions() -> None:
    policy = parse_policy(b"version: 1\nservers:\n  lab:\n    actions: {ip-literal: warn}\n")
    f = [Finding(Reason.IP_LITERAL, "$.url")]
    assert decide(f, policy, "lab").action is Action.WARN
    assert decide(f, policy, None).action is Action.BLOCK
    assert decide(f, policy, "prod").action is Action.BLOCK


def test_allow_action_keeps_the_finding_for_the_audit() -> None:
    policy = parse_policy(b"version: 1\nactions: {pii-in-message: allow}\n")
    d = decide([Finding(Reason.PII_IN_MESSAGE, "$.message", Severity.LOW)], policy)
    assert d.action is Action.ALLOW
    assert d.reasons == ["pii-in-message"]


# --- layers 0 and 1 ---------------------------------------------------------------------------


def test_oversize_runs_nothing_else(default: Policy) -> None:
    params = _form("enter your password " * 4000, pw={"type": "string"})
    d = evaluate(params, modes=frozenset(), server=None, policy=default)
    assert [(f.reason, f.path) for f in d.findings] == [(Reason.OVERSIZE, "$")]
    assert d.action is Action.BLOCK


@pytest.mark.parametrize("params", [None, [], "x", 3, {"mode": "sms", "message": "m"}])
def test_malformed_params_block(params: Any, default: Policy) -> None:
    assert _codes(params, default) == ("block", {"malformed"})


def test_url_mode_not_declared(default: Policy) -> None:
    action, reasons = _codes(_url("https://example.com/connect"), default, frozenset({"form"}))
    assert action == "block"
    assert "mode-not-declared" in reasons


def test_no_modes_declared_blocks_form(default: Policy) -> None:
    action, reasons = _codes(_form("Your name?", name={"type": "string"}), default, frozenset())
    assert (action, reasons) == ("block", {"mode-not-declared"})


def test_schema_violation_still_runs_detectors(default: Policy) -> None:
    params = _form("Log in", password={"type": "string", "format": "password"})
    action, reasons = _codes(params, default)
    assert action == "block"
    assert {"schema-violation", "secret-field"} <= reasons


# --- layer 4: fail closed ---------------------------------------------------------------------


def test_detector_exception_blocks(default: Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(params: dict[str, Any], cfg: Any) -> list[Finding]:
        raise RuntimeError("detector bug")

    monkeypatch.setattr(engine, "_form", boom)
    d = evaluate(
        _form("Your name?", name={"type": "string"}), modes=BOTH, server=None, policy=default
    )
    assert d.action is Action.BLOCK
    assert [(f.reason, f.path) for f in d.findings] == [(Reason.INTERNAL_ERROR, "$")]
    # The caller can report it: the exception's class, never its message (it may quote input).
    assert d.findings[0].detail == "RuntimeError"
    assert "detector bug" not in repr(d)


def test_no_clock_takes_part_in_a_decision() -> None:
    """A slow-decision threshold far below any real decision time changes nothing: the verdict
    is the same as under the default (issue 10: same input, same verdict under any load)."""
    tiny = parse_policy(b"version: 1\nlimits: {slow_decision_ms: 0.000001}\n")
    default = parse_policy(b"version: 1\n")
    for params in (
        _form("Your name?", name={"type": "string"}),
        _form("Sign in again", password={"type": "string"}),
        _url("https://example.org/connect"),
    ):
        fast = evaluate(params, modes=BOTH, server=None, policy=default)
        slow = evaluate(params, modes=BOTH, server=None, policy=tiny)
        assert (slow.action, slow.findings) == (fast.action, fast.findings)
        assert Reason.INTERNAL_ERROR not in {f.reason for f in slow.findings}


def test_internal_error_blocks_even_if_shadowed() -> None:
    shadow = load_policy(POLICIES / "audit-only.yaml")
    d = evaluate({"message": {1}}, modes=BOTH, server=None, policy=shadow)
    assert d.action is Action.BLOCK
    assert d.enforced is False


# --- layers 2 and 3 with the real detectors ---------------------------------------------------


def test_benign_form_allowed(default: Policy) -> None:
    params = _form(
        "Which release should I deploy?",
        env={"type": "string", "enum": ["staging", "production"]},
        notify={"type": "boolean", "default": True},
    )
    assert _codes(params, default) == ("allow", set())


def test_password_form_blocked(default: Policy) -> None:
    params = _form("Confirm your identity", password={"type": "string", "title": "Password"})
    action, reasons = _codes(params, default)
    assert action == "block"
    assert "secret-field" in reasons


def test_ssn_form_warns(default: Policy) -> None:
    params = _form("Tax form", ssn={"type": "string", "title": "Social Security Number"})
    assert _codes(params, default) == ("warn", {"sensitive-pii-field"})


def test_clean_url_allowed(default: Policy) -> None:
    assert (
        _codes(_url("https://github.com/login/oauth/authorize?client_id=abc&state=xyz"), default)[0]
        == "allow"
    )


def test_url_findings_block(default: Policy) -> None:
    action, reasons = _codes(_url("http://user:pw@203.0.113.7/login"), default)
    assert action == "block"
    assert {"userinfo", "ip-literal"} <= reasons


def test_dev_policy_allows_loopback_http() -> None:
    dev = load_policy(POLICIES / "dev.yaml")
    assert _codes(_url("http://localhost:8080/callback"), dev)[0] == "allow"
    strict = load_policy(POLICIES / "strict.yaml")
    assert _codes(_url("http://localhost:8080/callback"), strict)[0] == "block"


def test_pii_in_message_warns(default: Policy) -> None:
    params = _url("https://example.com/verify", "We will email jane.doe@example.com a receipt.")
    action, reasons = _codes(params, default)
    assert action == "warn"
    assert "pii-in-message" in reasons


def test_findings_never_carry_values(default: Policy) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    params = _form(f"Token {secret}", x={"type": "string", "default": secret})
    d = evaluate(params, modes=BOTH, server=None, policy=default)
    assert d.action is Action.BLOCK
    assert secret not in json.dumps([(f.path, f.detail) for f in d.findings])


# --- property: never raises, bounded time -----------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)
_TOKENS = [
    *"aаеoоpр1l.:/@%-_ ",
    "\u200b",
    "\u202e",
    *"ｈｔｐｓ",
    "http://",
    "xn--",
    "password",
    "AKIA",
]
_texts = st.lists(st.sampled_from(_TOKENS), max_size=120).map("".join)


@st.composite
def _elicitations(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["json", "form", "url"]))
    if kind == "json":
        return draw(_json)
    if kind == "url":
        return {"mode": "url", "message": draw(_texts), "url": draw(_texts)}
    props = draw(
        st.dictionaries(
            _texts.filter(bool),
            st.fixed_dictionaries(
                {"type": st.sampled_from(["string", "integer", "boolean", "object", "array"])},
                optional={"title": _texts, "description": _texts, "default": _json, "enum": _json},
            ),
            max_size=6,
        )
    )
    return _form(draw(_texts), **props)


_DEFAULT_POLICY = load_policy(POLICIES / "default.yaml")


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    _elicitations(),
    st.sets(st.sampled_from(["form", "url"])),
    st.sampled_from([None, "handshake", "modern"]),
)
def test_evaluate_decides_every_input_by_the_decision_rule(
    params: Any, modes: set[str], era: str | None
) -> None:
    """Every generated input gets a real decision, with no clock involved (the profile has no
    deadline): evaluate catches any detector exception and turns it into an ``internal-error``
    block, so "it did not raise" proves nothing. Instead: no internal-error finding (no detector
    raised), the action is the decision rule over the findings it reports, and the same input
    gets the same decision again."""
    policy = _DEFAULT_POLICY
    declared = frozenset(modes)
    d = evaluate(params, modes=declared, server=None, policy=policy, era=era)
    assert Reason.INTERNAL_ERROR not in {f.reason for f in d.findings}, params
    assert d == decide(list(d.findings), policy)
    assert d.reasons == list(dict.fromkeys(f.reason.value for f in d.findings))
    assert evaluate(params, modes=declared, server=None, policy=policy, era=era) == d
    if d.action is Action.ALLOW:
        assert all(policy.action_for(f.reason, f.severity) is Action.ALLOW for f in d.findings)
    if not isinstance(params, dict):
        assert d.action is Action.BLOCK  # not an object: malformed, fail closed


def test_the_property_above_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A detector that raises is caught by evaluate and shows as internal-error, which the
    property rejects."""

    def broken(*_: Any, **__: Any) -> list[Finding]:
        raise RuntimeError("detector bug")

    monkeypatch.setattr(engine, "_findings", broken)
    d = evaluate(_form("x"), modes=BOTH, server=None, policy=_DEFAULT_POLICY)
    assert d.action is Action.BLOCK
    assert Reason.INTERNAL_ERROR in {f.reason for f in d.findings}


@pytest.mark.parametrize(
    "params",
    [
        _form("p a s s w o r d " * 3000, f={"type": "string"}),
        _form(
            "x",
            **{f"f{i}": {"type": "string", "description": "аррӏе.com " * 50} for i in range(40)},
        ),
        _url("https://" + "а" * 3000 + ".com/" + "%25" * 5000),
        _url("https://example.com/?" + "&".join(f"k{i}=dG9rZW4" for i in range(2000))),
    ],
)
def test_adversarial_inputs_are_bounded(params: Any, default: Policy) -> None:
    start = time.perf_counter()
    d = evaluate(params, modes=BOTH, server=None, policy=default)
    assert time.perf_counter() - start < 1.0
    assert d.action is not Action.ALLOW


def test_time_budget_ms_is_read_as_the_old_name_of_slow_decision_ms() -> None:
    policy = parse_policy(b"version: 1\nlimits: {time_budget_ms: 7}\n")
    assert policy.detect_config().limits.slow_decision_ms == 7.0
    with pytest.raises(PolicyError, match=r"limits: give slow_decision_ms only"):
        parse_policy(b"version: 1\nlimits: {time_budget_ms: 7, slow_decision_ms: 3}\n")


def test_first_decision_of_a_new_configuration_is_decided_normally() -> None:
    text = b"version: 1\nurl:\n  protected_domains: [mybank-example.com]\n"
    policy = parse_policy(text)
    d = evaluate(_url("https://example.org/connect"), modes=BOTH, server=None, policy=policy)
    assert Reason.INTERNAL_ERROR not in {f.reason for f in d.findings}
    assert d.action is Action.ALLOW


# -- link shorteners and evidence -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy_file", "action"),
    [
        ("default.yaml", "warn"),
        ("dev.yaml", "warn"),
        ("audit-only.yaml", "warn"),
        ("strict.yaml", "block"),
    ],
)
def test_a_shortener_has_its_own_reason(policy_file: str, action: str) -> None:
    """A link shortener hides the destination: reason `shortener` (low), at least a warning; the
    strict policy, which blocked it as a typosquat before, blocks it still."""
    policy = load_policy(POLICIES / policy_file)
    decision = evaluate(_url("https://bit.ly/3Xq9TmB"), modes=BOTH, server=None, policy=policy)
    assert decision.reasons == ["shortener"]
    assert decision.action.value == action
    assert decision.findings[0].severity is Severity.LOW
    assert policy.action_for(Reason.SHORTENER, Severity.LOW) is Action(action)


def test_an_empty_policy_warns_on_shorteners() -> None:
    policy = parse_policy(b"version: 1\n")
    assert policy.action_for(Reason.SHORTENER, Severity.LOW) is Action.WARN
    assert policy.action_for(Reason.SHORTENER, Severity.HIGH) is Action.WARN


def test_card_number_in_a_message_is_explained_by_its_checksum(default: Policy) -> None:
    params = _form("Your card 4111 1111 1111 1111 was charged. OK?", ok={"type": "boolean"})
    decision = evaluate(params, modes=BOTH, server=None, policy=default)
    card = [f for f in decision.findings if f.detail == "card"]
    assert [f.reason for f in card] == [Reason.PII_IN_MESSAGE]
    assert card[0].evidence is not None
    assert (card[0].evidence.concept, card[0].evidence.signal) == (
        "card-number",
        "luhn+card-prefix",
    )
    assert card[0].evidence.term is None  # never the number itself


# -- a plain domain named in a message is prose, a lure domain is not (issue 10) ---------------


@pytest.mark.parametrize(
    ("message", "action"),
    [
        ("Continue on github.com to authorise the app.", "allow"),
        ("Abra stripe.com e conclua o pagamento.", "allow"),
        ("Sign in at paypal.com.secure-login.io to continue.", "block"),
        ("Open https://github.com/settings first.", "block"),
    ],
)
def test_a_domain_named_in_a_url_mode_message_is_prose_unless_it_is_a_lure(
    message: str, action: str
) -> None:
    from gateway.policy.loader import load_policy

    policy = load_policy(Path(__file__).resolve().parents[2] / "policies" / "default.yaml")
    params = {
        "mode": "url",
        "message": message,
        "elicitationId": "e1",
        "url": "https://github.com/login/oauth/authorize?client_id=abc&state=xyz",
    }
    decision = evaluate(params, modes=frozenset({"form", "url"}), server=None, policy=policy)
    assert decision.action.value == action
