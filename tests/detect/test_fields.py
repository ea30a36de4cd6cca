"""gateway.detect.fields: judging form elicitations (field classes, links, secrets, invisibles)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.detect.config import FormConfig, Limits
from gateway.detect.fields import check_form, check_text
from gateway.detect.findings import Finding, Reason, Severity

CFG = FormConfig()
LIMITS = Limits()
S: dict[str, Any] = {"type": "string"}
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def form(message: str, props: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": props, **schema},
    }


def run(message: str, props: dict[str, Any], cfg: FormConfig = CFG, **schema: Any) -> list[Finding]:
    return check_form(form(message, props, **schema), cfg, LIMITS)


def summary(message: str, props: dict[str, Any], cfg: FormConfig = CFG) -> set[tuple[str, str]]:
    """(reason, property key or path tail) pairs."""
    prefix = "$.requestedSchema.properties"
    return {(f.reason.value, f.path.removeprefix(prefix)) for f in run(message, props, cfg)}


def field_reasons(message: str, props: dict[str, Any], cfg: FormConfig = CFG) -> dict[str, str]:
    """Field-classification reason per property key (paths that end at the property)."""
    out: dict[str, str] = {}
    for f in run(message, props, cfg):
        if f.reason in (
            Reason.SECRET_FIELD,
            Reason.OTP_FIELD,
            Reason.PAYMENT_FIELD,
            Reason.SENSITIVE_PII_FIELD,
        ):
            key = f.path.removeprefix("$.requestedSchema.properties")
            out[key.lstrip(".").strip('[]"')] = f.reason.value
    return out


# ---------------------------------------------------------------- ordinary forms pass untouched

_BENIGN_FORMS: list[tuple[str, dict[str, Any]]] = [
    (
        "Profile needed for billing",
        {
            "name": {"type": "string", "title": "Full name"},
            "email": {"type": "string", "format": "email", "title": "Email"},
            "phone": {"type": "string", "title": "Phone number"},
            "address": {"type": "string", "title": "Street address"},
            "age": {"type": "integer", "title": "Age"},
        },
    ),
    (
        "Preferences",
        {
            "color": {"type": "string", "enum": ["red", "green"], "title": "Favourite colour"},
            "size": {
                "type": "string",
                "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
            },
            "newsletter": {"type": "boolean", "title": "Subscribe?"},
        },
    ),
    (
        "Model settings",
        {
            "token_count": {"type": "integer", "title": "Token count"},
            "max_tokens": {"type": "integer", "title": "Max tokens"},
            "password_policy_accepted": {"type": "boolean", "title": "Password policy accepted?"},
            "secretary_name": {"type": "string", "title": "Secretary name"},
            "api_key_name": {"type": "string", "title": "API key name"},
            "sms_alerts": {"type": "boolean", "title": "SMS alerts"},
            "require_2fa": {"type": "string", "enum": ["always", "never"], "title": "Require 2FA"},
            "password_hint": {"type": "string", "title": "Password hint"},
            "primary_key": {"type": "string", "title": "Primary key column"},
            "fingerprint": {"type": "string", "title": "Public key fingerprint"},
            "mfa_enabled": {"type": "boolean", "title": "MFA enabled"},
        },
    ),
    (
        "Account recovery",
        {"forgot": {"type": "boolean", "title": "Forgot password?"}},
    ),
    ("Enter the discount code from your voucher", {"code": S}),
    ("Where should we ship it?", {"zip": {"type": "string", "title": "Zip code"}}),
    ("Read README.md and main.py, then confirm", {"ok": {"type": "boolean"}}),
    ("Version v1.2.3 ships at 10.30, e.g. tomorrow", {"notes": S}),
    ("Contact support@example.com if stuck", {"question": S}),
    ("Your library card", {"card_number": {"type": "string", "title": "Library card number"}}),
    ("Tell us about you", {"nickname": S, "company": S, "website_name": S}),
    ("Bitte geben Sie Ihren Namen ein", {"vorname": S, "nachname": S}),
    ("お名前を入力してください", {"名前": S}),
]


# Date of birth is sensitive personal data (issue 10): a LOW finding (warn), not a block. These
# two forms were listed as ordinary ones before.
@pytest.mark.parametrize(
    ("message", "props"),
    [
        ("Profile", {"birthday": {"type": "string", "format": "date", "title": "Birth date"}}),
        ("Дата рождения", {"birthday": {"type": "string", "format": "date"}}),
    ],
)
def test_date_of_birth_warns(message: str, props: dict[str, Any]) -> None:
    found = run(message, props)
    assert [(f.reason, f.severity, f.detail) for f in found] == [
        (Reason.SENSITIVE_PII_FIELD, Severity.LOW, "date-of-birth")
    ]


@pytest.mark.parametrize(("message", "props"), _BENIGN_FORMS)
def test_ordinary_forms_pass(message: str, props: dict[str, Any]) -> None:
    assert run(message, props) == []


# Named false-positive guards (each a field someone will legitimately ask for).
_REGRESSIONS = {
    "token-count": {"type": "integer", "title": "Token count"},
    "max-tokens": {"type": "integer", "title": "max_tokens"},
    "password-policy-accepted": {"type": "boolean", "title": "Password policy accepted?"},
    "secretary-name": {"type": "string", "title": "Secretary name"},
    "api-key-name": {"type": "string", "title": "API key name"},
    "sms-alerts": {"type": "boolean", "title": "sms_alerts"},
    "require-2fa": {"type": "string", "title": "require_2fa", "enum": ["on", "off"]},
    "password-hint": {"type": "string", "title": "Password hint"},
    "forgot-password": {"type": "string", "title": "Forgot password?"},
    "primary-key-column": {"type": "string", "title": "Primary key column"},
    "public-key-fingerprint": {"type": "string", "title": "Public key fingerprint"},
    "password-expiry-date": {"type": "string", "title": "Password expiry date"},
    "pin-code-postal": {"type": "string", "title": "PIN code (postal)"},
    "boarding-pass": {"type": "string", "title": "Boarding pass number"},
    "promo-code": {"type": "string", "title": "Promo code"},
    "error-code": {"type": "string", "title": "Error code"},
    "keyword": {"type": "string", "title": "Keyword"},
    "secret-arn": {"type": "string", "title": "Secret ARN"},
    "credential-type": {"type": "string", "title": "Credential type"},
    "session-name": {"type": "string", "title": "Session name"},
    "expiry-days": {"type": "integer", "title": "Expiry (days)"},
    "serial-number": {"type": "string", "title": "Serial number"},
    "readme-filename": {"type": "string", "title": "File", "description": "e.g. README.md"},
    "email-in-description": {"type": "string", "description": "Contact support@example.com"},
    "reassurance-in-description": {
        "type": "string",
        "title": "Nickname",
        "description": "We will never ask for your password.",
    },
}


@pytest.mark.parametrize("name", sorted(_REGRESSIONS))
def test_false_positive_guard(name: str) -> None:
    assert run("Please fill in the details below.", {"field": _REGRESSIONS[name]}) == []


# ---------------------------------------------------------------- secret fields


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "Password",
        "newPassword",
        "confirm_password",
        "current-password",
        "passphrase",
        "pin",
        "api_key",
        "apiKey",
        "access_token",
        "refresh_token",
        "session_token",
        "client_secret",
        "private_key",
        "seed_phrase",
        "recovery_codes",
        "мнемоника_пароль",
        "раssword",  # Cyrillic р, а
        "ｐａｓｓｗｏｒｄ",  # fullwidth
        "p a s s w o r d",
        "p.a.s.s.w.o.r.d",
        "contraseña",
        "senha",
        "passwort",
        "mot_de_passe",
        "parola_d_ordine",
        "пароль",
        "密码",
        "パスワード",
        "비밀번호",
    ],
)
def test_secret_fields(key: str) -> None:
    assert field_reasons("Please fill in", {key: S}) == {key: Reason.SECRET_FIELD.value}


def test_secret_named_by_title_or_description() -> None:
    props = {
        "a": {"type": "string", "title": "Your bank password"},
        "b": {"type": "string", "description": "The API token from your dashboard"},
    }
    assert field_reasons("Setup", props) == {"a": "secret-field", "b": "secret-field"}


def test_zero_width_in_a_secret_key_is_found_twice() -> None:
    key = "pass\u200bword"
    found = summary("Login", {key: S})
    assert ("secret-field", '["pass\u200bword"]') in found
    assert ("invisible-chars", '["pass\u200bword"]') in found


def test_structural_secret_signals() -> None:
    props = {
        "x1": {"type": "string", "format": "password"},
        "x2": {"type": "string", "writeOnly": True},
        "x3": {"type": "string", "autocomplete": "current-password"},
    }
    details = {
        f.path.rsplit(".", 1)[1]: f.detail
        for f in run("Setup", props)
        if f.reason.value == "secret-field"
    }
    assert details == {"x1": "format-password", "x2": "write-only", "x3": "autocomplete"}


def test_kba_is_a_secret_field() -> None:
    findings = run(
        "Verify it's you", {"maiden": {"type": "string", "title": "Mother's maiden name"}}
    )
    assert [(f.reason, f.detail) for f in findings] == [(Reason.SECRET_FIELD, "kba")]


def test_booleans_and_enums_only_mention_secrets() -> None:
    props = {
        "password": {"type": "boolean"},
        "token": {"type": "string", "enum": ["a", "b"]},
        "pin": {"type": "string", "oneOf": [{"const": "x", "title": "X"}]},
        "secret": {"type": "array", "items": {"type": "string", "enum": ["a"]}},
    }
    assert field_reasons("Choose", props) == {}


def test_number_fields_can_ask_for_a_pin() -> None:
    assert field_reasons("ATM", {"pin": {"type": "integer"}}) == {"pin": "secret-field"}


def test_untyped_field_is_treated_as_value_entry() -> None:
    assert field_reasons("x", {"password": {}}) == {"password": "secret-field"}


# ---------------------------------------------------------------- the message counts


@pytest.mark.parametrize(
    ("message", "key", "reason"),
    [
        ("Enter the code we texted you", "code", "otp-field"),
        ("Enter the 6-digit code from your authenticator app", "value", "otp-field"),
        ("请输入短信验证码", "code", "otp-field"),
        ("Bitte geben Sie Ihr Passwort ein", "wert", "secret-field"),
        ("Please provide your GitHub password to continue", "answer", "secret-field"),
        ("Entrez votre mot de passe", "reponse", "secret-field"),
        ("Enter your credit card details", "number", "payment-field"),
    ],
)
def test_message_turns_generic_field(message: str, key: str, reason: str) -> None:
    assert field_reasons(message, {key: S}) == {key: reason}


def test_message_does_not_turn_a_specific_field() -> None:
    assert field_reasons("Enter the code we texted you", {"first_name": S}) == {}


# ---------------------------------------------------------------- OTP


def test_otp_fields() -> None:
    props = {
        "otp": S,
        "one-time-code": S,
        "verification_code": S,
        "tfa": {"type": "string", "title": "2FA code"},
        "bestaetigung": {"type": "string", "title": "Bestätigungscode"},
    }
    assert set(field_reasons("Sign in", props).values()) == {"otp-field"}
    assert len(field_reasons("Sign in", props)) == len(props)


def test_short_digit_pattern_with_code_word() -> None:
    props = {"verification": {"type": "string", "pattern": "^[0-9]{6}$"}}
    findings = run("Confirm", props)
    assert [(f.reason, f.detail) for f in findings] == [(Reason.OTP_FIELD, "digit-pattern")]
    zip_field = {"zip": {"type": "string", "title": "Zip code", "pattern": "^\\d{5}$"}}
    assert run("Shipping", zip_field) == []


# ---------------------------------------------------------------- payment, with card context


def test_card_form_blocks_every_card_field() -> None:
    props = {
        "card_number": S,
        "exp": S,
        "cvv": S,
        "holder": {"type": "string", "title": "Name on card"},
    }
    assert field_reasons("Checkout", props) == {
        "card_number": "payment-field",
        "exp": "payment-field",
        "cvv": "payment-field",
    }


def test_card_number_needs_context() -> None:
    assert field_reasons("Enter it", {"card_number": S}) == {}
    assert field_reasons("Complete your payment", {"card_number": S}) == {
        "card_number": "payment-field"
    }
    no_gate = FormConfig(card_context_required=False)
    assert field_reasons("Enter it", {"card_number": S}, no_gate) == {
        "card_number": "payment-field"
    }


def test_strong_payment_terms_need_no_context() -> None:
    props = {
        "ccnum": {"type": "string", "title": "Credit card number"},
        "cvc": S,
        "card_pin": S,
        "iban": S,
        "kk": {"type": "string", "title": "Kreditkartennummer"},
        "cc-number": S,
    }
    reasons = field_reasons("Enter it", props)
    assert reasons == dict.fromkeys(props, "payment-field")


def test_expiry_alone_is_not_payment() -> None:
    assert field_reasons("Passport", {"expiry": {"type": "string", "title": "Expiry date"}}) == {}


# ---------------------------------------------------------------- sensitive PII


def test_sensitive_pii_is_low() -> None:
    findings = run("KYC", {"ssn": S, "passport": {"type": "string", "title": "Passport number"}})
    assert {(f.reason, f.severity) for f in findings} == {
        (Reason.SENSITIVE_PII_FIELD, Severity.LOW)
    }
    assert len(findings) == 2


# ---------------------------------------------------------------- operator terms


def test_allow_terms_suppress_field_findings() -> None:
    cfg = FormConfig(allow_terms=frozenset({"deploy token"}))
    assert field_reasons("CI", {"deploy_token": S}, cfg) == {}
    assert field_reasons("CI", {"deploy_token": S}) == {"deploy_token": "secret-field"}


def test_extra_terms_add_field_findings() -> None:
    cfg = FormConfig(extra_secret_terms=frozenset({"vault phrase"}))
    assert field_reasons("x", {"vaultPhrase": S}, cfg) == {"vaultPhrase": "secret-field"}


# ---------------------------------------------------------------- links everywhere


def test_links_everywhere_with_exact_paths() -> None:
    props = {
        "a": {
            "type": "string",
            "title": "See www.evil.com",
            "description": "[docs](https://x.example)",
            "default": "javascript:alert(1)",
        },
        "b": {"type": "string", "enum": ["x", "y", "z", "visit evil.com"]},
        "c": {"type": "string", "oneOf": [{"const": "data:text/html,hi", "title": "evil.org"}]},
        "d": {"type": "string", "anyOf": [{"const": "a", "title": "//evil.net/x"}]},
        "evil.com": S,
    }
    found = {(f.path, f.detail) for f in run("Go to https://evil.example", props)}
    p = "$.requestedSchema.properties"
    assert ("$.message", "scheme") in found
    assert (f"{p}.a.title", "www") in found
    assert (f"{p}.a.description", "markdown") in found
    assert (f"{p}.a.default", "javascript") in found
    assert (f"{p}.b.enum[3]", "bare-domain") in found
    assert (f"{p}.c.oneOf[0].const", "data") in found
    assert (f"{p}.c.oneOf[0].title", "bare-domain") in found
    assert (f"{p}.d.anyOf[0].title", "protocol-relative") in found
    assert (f'{p}["evil.com"]', "bare-domain") in found


def test_schema_title_is_checked() -> None:
    findings = run("x", {"a": S}, title="Visit evil.com")
    assert [(f.path, f.detail) for f in findings] == [("$.requestedSchema.title", "bare-domain")]


def test_uri_field_examples_are_low() -> None:
    props = {
        "site": {
            "type": "string",
            "format": "uri",
            "title": "Website",
            "description": "e.g. https://example.com",
            "default": "https://example.org",
        }
    }
    findings = run("Your website", props)
    assert {(f.path.rsplit(".", 1)[1], f.severity) for f in findings} == {
        ("description", Severity.LOW),
        ("default", Severity.LOW),
    }


def test_uri_field_dangerous_links_stay_high() -> None:
    props = {
        "site": {
            "type": "string",
            "format": "uri",
            "description": "[click](https://x.example)",
            "default": "javascript:alert(1)",
        }
    }
    found = {(f.path.rsplit(".", 1)[1], f.detail, f.severity) for f in run("x", props)}
    assert ("description", "markdown", Severity.HIGH) in found
    assert ("default", "javascript", Severity.HIGH) in found


def test_uri_field_title_link_stays_high() -> None:
    props = {"site": {"type": "string", "format": "uri", "title": "https://evil.example"}}
    assert [f.severity for f in run("x", props)] == [Severity.HIGH]


# ---------------------------------------------------------------- secret values, invisibles


def test_secret_values_everywhere() -> None:
    props = {
        "a": {"type": "string", "default": AWS_KEY},
        "b": {"type": "string", "enum": ["x", "token=" + "9f8e7d6c5b4a3f2e1d0c9b8a7"]},
    }
    found = {
        (f.path, f.detail)
        for f in run("Use key " + AWS_KEY, props)
        if f.reason.value == "secret-value"
    }
    p = "$.requestedSchema.properties"
    assert found == {
        ("$.message", "aws-access-key-id"),
        (f"{p}.a.default", "aws-access-key-id"),
        (f"{p}.b.enum[1]", "generic-api-key"),
    }


def test_invisible_characters_in_visible_strings() -> None:
    props = {"a": {"type": "string", "title": "Na\u202eme", "description": "ok"}}
    found = {(f.reason.value, f.path) for f in run("Hi\u200b", props)}
    assert found == {
        ("invisible-chars", "$.message"),
        ("invisible-chars", "$.requestedSchema.properties.a.title"),
    }


def test_findings_never_carry_values() -> None:
    secret_url = "https://evil.example/reset?token=abc"
    props = {"password": {"type": "string", "description": secret_url, "default": AWS_KEY}}
    for f in run("Visit " + secret_url, props):
        assert "evil" not in f.detail
        assert "AKIA" not in f.detail
        assert "evil" not in f.path
        assert "AKIA" not in f.path


# ---------------------------------------------------------------- check_text


def test_check_text() -> None:
    findings = check_text("Open www.example.com with " + AWS_KEY + "\u202e", "$.message", LIMITS)
    assert {(f.reason.value, f.detail) for f in findings} == {
        ("clickable-url", "www"),
        ("clickable-url", "bare-domain"),
        ("secret-value", "aws-access-key-id"),
        ("invisible-chars", ""),
    }
    assert check_text("Please confirm your booking", "$.message", LIMITS) == []


# ---------------------------------------------------------------- odd shapes never raise

_ODD: list[Any] = [
    None,
    [],
    "string",
    {"message": 3, "requestedSchema": []},
    {"message": "x", "requestedSchema": {"properties": []}},
    {"message": "x", "requestedSchema": {"properties": {"a": "string", "b": None, "c": 3}}},
    {"message": "x", "requestedSchema": {"properties": {"a": {"type": 5, "enum": "x"}}}},
    {"message": "x", "requestedSchema": {"properties": {"a": {"type": ["string", None]}}}},
    {"message": "x", "requestedSchema": {"properties": {"a": {"pattern": 5, "format": []}}}},
    {"message": "x", "requestedSchema": {"properties": {3: {"type": "string"}}}},
    {"message": "x", "requestedSchema": {"title": {"nested": ["evil.com"]}}},
]


@pytest.mark.parametrize("params", _ODD)
def test_odd_shapes_never_raise(params: Any) -> None:
    assert isinstance(check_form(params, CFG, LIMITS), list)


def test_deep_nesting_is_bounded() -> None:
    deep: dict[str, Any] = {"title": "evil.com"}
    for _ in range(200):
        deep = {"items": deep}
    params = form("x", {"a": deep})
    assert isinstance(check_form(params, CFG, LIMITS), list)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(deadline=None, max_examples=200)
@given(
    st.text(max_size=200),
    st.dictionaries(st.text(max_size=20), st.dictionaries(st.sampled_from(
        ["type", "title", "description", "default", "enum", "oneOf", "format", "pattern",
         "writeOnly", "items", "anyOf"]), _JSON, max_size=5), max_size=6),
)  # fmt: skip
def test_never_raises_on_random_forms(message: str, props: dict[str, Any]) -> None:
    for f in check_form(form(message, props), CFG, LIMITS):
        assert f.path.startswith("$.")


@settings(deadline=None, max_examples=100)
@given(_JSON)
def test_never_raises_on_random_params(params: Any) -> None:
    check_form(params, CFG, LIMITS)


# ---------------------------------------------------------------- bounded time


def test_large_adversarial_form_is_bounded() -> None:
    props = {
        f"p\u200ba\u0455s{i}": {
            "type": "string",
            "title": "а" * 8000,
            "description": ("www.x" + "a.md " * 1500)[:8000],
            "enum": ["e" * 16] * 500,
        }
        for i in range(50)
    }
    params = form("к" * 8000, props)
    start = time.perf_counter()
    check_form(params, CFG, LIMITS)
    assert time.perf_counter() - start < 5.0


def test_typical_form_cost() -> None:
    """A ~5 KB form, new every time (nothing cached): reported, loosely bounded."""
    timings = []
    for n in range(30):
        props = {
            f"field_{n}_{i}": {
                "type": "string",
                "title": f"Field {n} number {i}",
                "description": f"Please provide value {n}/{i} exactly as it appears on your document, "
                "without spaces. We use it only to fill in the form you asked for.",
            }
            for i in range(20)
        }
        params = form(
            f"Please complete the form {n} so that we can continue with your request.", props
        )
        assert 3_000 < len(json.dumps(params)) < 7_000
        start = time.perf_counter()
        assert check_form(params, CFG, LIMITS) == []
        timings.append(time.perf_counter() - start)
    timings.sort()
    assert timings[len(timings) // 2] < 0.1  # generous: shared CI machines are slow


# -- evidence (check --explain) -------------------------------------------------------------------


def _evidence(message: str, props: dict[str, Any]) -> dict[str, Any]:
    """Property key → the evidence of its field finding."""
    prefix = "$.requestedSchema.properties."
    out = {}
    for f in run(message, props):
        if f.path.startswith(prefix) and f.path.count(".") == 3:
            assert f.evidence is not None, f
            out[f.path.removeprefix(prefix)] = f.evidence
    return out


def test_evidence_of_a_term_names_concept_term_and_language() -> None:
    ev = _evidence("Sign in", {"p": {**S, "title": "Contraseña"}, "h": {**S, "title": "Heslo"}})
    assert (ev["p"].concept, ev["p"].signal, ev["p"].lang) == ("password", "term", "es")
    assert ev["p"].term in ("contrasena", "contraseña")
    # a term listed under several languages names them all
    assert (ev["h"].concept, ev["h"].term) == ("password", "heslo")
    assert ev["h"].lang is not None
    assert {"cs", "sk"} <= set(ev["h"].lang.split(","))


def test_evidence_of_a_message_ask_on_an_opaque_field() -> None:
    ev = _evidence("Veuillez saisir votre mot de passe", {"x1": S})
    assert ev["x1"].concept == "password"
    assert ev["x1"].signal == "message-ask"
    assert (ev["x1"].term, ev["x1"].lang) == ("mot de passe", "fr")


def test_evidence_term_is_the_lexicons_text_not_the_inputs() -> None:
    """The input spells the term its own way; the evidence holds our lexicon's entry."""
    ev = _evidence("Hi", {"f": {**S, "title": "PASSWORD"}, "g": {**S, "title": "P-A-S-S-W-0-R-D"}})
    assert ev["f"].term == "password"
    assert ev["g"].term is not None
    assert ev["g"].term != "P-A-S-S-W-0-R-D"
    assert ev["g"].term in "password"  # the entry of the lexicon that the spelling folds to


def test_evidence_of_structural_signals() -> None:
    ev = _evidence(
        "Hi",
        {
            "a": {**S, "format": "password"},
            "b": {**S, "autocomplete": "one-time-code"},
            "PAT": S,
            "d": {**S, "title": "Code", "pattern": "^[0-9]{6}$"},
        },
    )
    assert (ev["a"].concept, ev["a"].signal) == ("secret", "format-password")
    assert (ev["b"].concept, ev["b"].signal, ev["b"].term) == (
        "otp",
        "autocomplete",
        "one-time-code",
    )
    assert (ev["PAT"].concept, ev["PAT"].signal, ev["PAT"].term) == (
        "api-key",
        "abbreviation",
        "PAT",
    )
    assert (ev["d"].concept, ev["d"].signal) == ("otp", "pattern-digits+code-word")


def test_evidence_of_choice_lists() -> None:
    digits = {"type": "string", "enum": [str(i) for i in range(10)]}
    ev = _evidence("Hi", {"d1": digits, "d2": digits})
    assert (ev["d1"].concept, ev["d1"].signal) == ("pin", "choice-list:digit")


def test_evidence_of_text_findings() -> None:
    found = run("See bit.ly/x and click [here](https://x.example)", {"a": S})
    by_detail = {f.detail: f.evidence for f in found if f.reason is Reason.CLICKABLE_URL}
    assert by_detail["markdown"] is not None
    assert by_detail["markdown"].concept == "form-link"
    assert by_detail["lookalike-domain"] is not None
    assert by_detail["lookalike-domain"].concept == "lookalike-domain"


# -- choosing a security question; a password described, not named (issue 10) ------------------


def _form_reasons(props: dict[str, Any], message: str = "Please fill in the form.") -> list[str]:
    params = {"message": message, "requestedSchema": {"type": "object", "properties": props}}
    return sorted({f.reason.value for f in check_form(params, FormConfig(), Limits())})


@pytest.mark.parametrize(
    ("title", "choices"),
    [
        (
            "Security question",
            ["Model of your first bicycle", "Street you grew up on", "Your best friend in school"],
        ),
        (
            "Sicherheitsfrage wählen",
            ["Modell Ihres ersten Fahrrads", "Straße Ihrer Kindheit", "Ihr bester Schulfreund"],
        ),
        (
            "Pergunta de segurança",
            [
                "Modelo da sua primeira bicicleta",
                "Rua onde você cresceu",
                "Seu melhor amigo na escola",
            ],
        ),
    ],
)
def test_picking_which_security_question_to_use_is_not_its_answer(
    title: str, choices: list[str]
) -> None:
    assert _form_reasons({"q": {"type": "string", "title": title, "enum": choices}}) == []


def test_answers_offered_as_choices_under_the_question_itself_still_block() -> None:
    props = {
        "a": {
            "type": "string",
            "title": "Your first pet was a…",
            "enum": ["Cat called Tom", "Dog called Bella", "Hamster named Nibbles"],
        }
    }
    assert _form_reasons(props, "Confirm your identity") == ["secret-field"]


@pytest.mark.parametrize(
    "description",
    [
        "The secret phrase you type every time you sign in",
        "Die geheime Zeichenfolge, die Sie bei jeder Anmeldung eingeben",
        "La chaîne secrète que vous saisissez à chaque connexion",
        "Ciąg tajnych znaków wpisywany przy logowaniu",
        "ログインのたびに入力する秘密の文字列",
    ],
)
def test_a_password_described_without_its_name_blocks(description: str) -> None:
    assert _form_reasons({"z9": {"type": "string", "description": description}}) == ["secret-field"]


def test_describing_the_login_secret_in_a_setting_does_not_block() -> None:
    props = {
        "n": {"type": "integer", "description": "Minimum length of the secret you type to log in"}
    }
    assert _form_reasons(props) == []


# -- a card form by its shape (issue 10: "Number" / "Code" / "Valid thru" in any language) -----

_MM_YY = "^(0[1-9]|1[0-2])/[0-9]{2}$"


def test_number_code_and_mm_yy_fields_make_a_card_form_in_any_language() -> None:
    props = {
        "a": {"type": "string", "title": "Nummeret", "maxLength": 19},
        "b": {"type": "string", "title": "Koden", "maxLength": 3},
        "c": {"type": "string", "title": "Gyldig til", "pattern": _MM_YY},
    }
    assert _form_reasons(props, "Årsabonnement") == ["payment-field"]


def test_an_mm_yy_field_and_a_code_need_payment_words_to_be_a_card_form() -> None:
    props = {
        "b": {"type": "string", "title": "Kodi", "maxLength": 4},
        "c": {"type": "string", "title": "Halali hadi", "pattern": _MM_YY},
    }
    assert _form_reasons(props, "Mwezi na mwaka wa kuhitimu") == []
    assert _form_reasons(props, "Complete your payment") == ["payment-field"]


def test_a_date_pattern_is_not_a_card_expiry() -> None:
    props = {
        "d": {"type": "string", "title": "Datum", "pattern": r"^\d{2}/\d{2}/\d{4}$"},
        "n": {"type": "string", "title": "Nummer", "maxLength": 20},
        "k": {"type": "string", "title": "Kenteken", "maxLength": 4},
    }
    assert _form_reasons(props, "Registratie") == []


# -- a box for pasting what the message asks for (issue 10: credential files) -----------------


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("Connect your account: paste the [default] block of ~/.aws/credentials.", "Profile block"),
        ("Kopieren Sie den Inhalt Ihrer Datei .npmrc hier hinein.", "Inhalt"),
        ("Pegue aquí el archivo kubeconfig completo.", "Configuración"),
    ],
)
def test_a_box_for_the_credential_file_the_message_asks_for_blocks(
    message: str, title: str
) -> None:
    props = {"box": {"type": "string", "title": title, "maxLength": 4000}}
    assert _form_reasons(props, message) == ["secret-field"]


def test_a_box_that_says_it_holds_something_public_does_not_block() -> None:
    props = {"k": {"type": "string", "title": "SSH public key", "maxLength": 4000}}
    assert _form_reasons(props, "Add your SSH key") == []


def test_a_short_field_next_to_a_credential_file_request_is_not_the_box() -> None:
    props = {"who": {"type": "string", "title": "Ticket owner", "maxLength": 40}}
    assert _form_reasons(props, "We never ask you to paste your kubeconfig.") == []


def test_a_code_sized_text_field_under_a_delivery_message_is_a_one_time_code() -> None:
    props = {"q7": {"type": "string", "maxLength": 6}}
    assert _form_reasons(props, "Open your authenticator app and copy the digits shown.") == [
        "otp-field"
    ]
    assert _form_reasons({"q7": {"type": "string", "maxLength": 60}}, "We sent you an SMS.") == []


def test_a_number_and_a_code_field_under_payment_words_are_card_fields() -> None:
    props = {
        "n": {"type": "string", "title": "Numri", "maxLength": 19},
        "k": {"type": "string", "title": "Kodi", "maxLength": 4},
    }
    assert _form_reasons(props, "Complete the payment for your subscription") == ["payment-field"]
    assert _form_reasons(props, "Regjistrimi i automjetit") == []


def test_a_recovery_phrase_asked_word_by_word_in_any_language_blocks() -> None:
    for label in ("Word", "Słowo", "Λέξη", "Palavra"):
        props = {f"f{n}": {"type": "string", "title": f"{label} {n}"} for n in (2, 5, 9)}
        assert _form_reasons(props, "Check your backup") == ["secret-field"], label


def test_two_numbered_word_fields_or_numbered_other_fields_do_not() -> None:
    two = {f"f{n}": {"type": "string", "title": f"Word {n}"} for n in (1, 2)}
    guests = {f"g{n}": {"type": "string", "title": f"Guest {n}"} for n in (1, 2, 3, 4)}
    assert _form_reasons(two, "Crossword helper") == []
    assert _form_reasons(guests, "Who is coming?") == []


def test_recovery_words_offered_as_choices_from_the_bip39_lists_block() -> None:
    en = ["absorb", "adjust", "alpha", "annual", "armor", "auction", "auto", "award"]
    es = ["ábaco", "abdomen", "abeja", "abierto", "abogado", "abono"]
    props = {"w2": {"type": "string", "title": "Word 2", "enum": en}}
    assert _form_reasons(props, "Backup check") == ["secret-field"]
    both = {"a": {"type": "string", "enum": en}, "b": {"type": "string", "enum": es}}
    assert _form_reasons(both, "Quick quiz") == ["secret-field"]


def test_a_single_list_of_ordinary_words_is_not_a_recovery_phrase() -> None:
    props = {
        "c": {
            "type": "string",
            "title": "Favourite colour",
            "enum": ["red", "blue", "green", "yellow"],
        }
    }
    assert _form_reasons(props, "Tell us about you") == []


def test_a_word_of_the_day_from_the_same_list_is_not_a_recovery_phrase() -> None:
    props = {
        "w": {
            "type": "string",
            "title": "Choose today's word",
            "enum": ["abandon", "ability", "access", "actor", "adapt"],
        }
    }
    assert _form_reasons(props, "Word of the day") == []


def test_a_code_asked_by_its_digits_into_the_only_opaque_field_is_a_one_time_code() -> None:
    props = {"v": {"type": "integer", "minimum": 0, "maximum": 999999}}
    assert _form_reasons(props, "Open the app and type the six digits shown now.") == ["otp-field"]
    assert _form_reasons(props, "Type the six digits of your postal code.") == []
    two = {**props, "name": {"type": "string", "title": "Your name"}}
    assert _form_reasons(two, "Type the six digits of your membership number and your name.") == []


@pytest.mark.parametrize(
    "message",
    [
        "Restore your wallet: type your 12 words in order.",
        "Унесите својих 12 речи редом.",
        "Wpisz 24 słowa w kolejności.",
        "Masukkan 12 perkataan mengikut urutan.",
    ],
)
def test_a_message_counting_phrase_words_asks_for_a_recovery_phrase(message: str) -> None:
    props = {"box": {"type": "string", "maxLength": 300}}
    assert _form_reasons(props, message) == ["secret-field"]


def test_counting_words_of_an_essay_is_not_a_recovery_phrase() -> None:
    props = {"n": {"type": "integer", "title": "Essay length", "minimum": 100}}
    assert _form_reasons(props, "Essays must be at least 500 words; summaries 12 words.") == []


@pytest.mark.parametrize(
    "title",
    [
        ".env dosyasının içeriği",
        "Inhalt von ~/.aws/credentials",
        "id_ed25519",
        "wallet.dat (base64)",
    ],
)
def test_a_field_naming_a_credential_file_in_any_language_blocks(title: str) -> None:
    assert _form_reasons({"k": {"type": "string", "title": title}}, "Connect") == ["secret-field"]


@pytest.mark.parametrize(
    "title", ["Path to your .env file", "id_ed25519.pub", "Name of the kubeconfig context"]
)
def test_naming_a_credential_file_to_point_at_it_does_not_block(title: str) -> None:
    assert _form_reasons({"k": {"type": "string", "title": title}}, "Connect") == []


def test_a_message_asking_to_paste_a_credential_file_fills_the_box() -> None:
    props = {"box": {"type": "string", "maxLength": 8000}}
    assert _form_reasons(props, "Paste your .npmrc here, please.") == ["secret-field"]


@pytest.mark.parametrize(
    "title",
    [
        "When did you last change your password?",
        "Когда вы последний раз меняли пароль?",
        "Wann haben Sie Ihr Passwort zuletzt geändert?",
        "最後にパスワードを変更したのはいつ？",
    ],
)
def test_a_question_about_when_a_password_changed_is_a_date(title: str) -> None:
    assert _form_reasons({"d": {"type": "string", "title": title}}, "Account check") == []


def test_a_password_asked_with_a_when_clause_still_blocks() -> None:
    props = {"p": {"type": "string", "title": "Password you use when you sign in"}}
    assert _form_reasons(props, "Confirm") == ["secret-field"]


def test_a_bare_secret_word_yields_to_a_description_about_its_name() -> None:
    props = {
        "s": {
            "type": "string",
            "title": "Befintlig secret",
            "description": "Bara namnet på Kubernetes-secreten.",
        }
    }
    assert _form_reasons(props, "Konfigurera Helm") == []
    told = {
        "s": {
            "type": "string",
            "title": "Secret",
            "description": "The value of the secret, base64-encoded.",
        }
    }
    assert _form_reasons(told, "Sync") == ["secret-field"]


def test_a_six_digit_postal_pin_code_in_an_address_form_is_not_a_code() -> None:
    props = {"postal_pin": {"type": "string", "title": "பின்கோடு", "pattern": "^[0-9]{6}$"}}
    assert _form_reasons(props, "அஞ்சல் முகவரிக்கான பின்கோடு (6 இலக்க அஞ்சல் குறியீடு).") == []


def test_an_mm_yy_hint_under_card_words_is_a_card_expiry() -> None:
    props = {"d": {"type": "string", "description": "MM/YY"}}
    assert _form_reasons(props, "Pay with your credit card: the date printed on it") == [
        "payment-field"
    ]
    assert _form_reasons(props, "When did you start this job?") == []


def test_a_description_denying_it_is_the_secret_wins_over_the_title() -> None:
    hint = {
        "h": {
            "type": "string",
            "title": "Adgangskodehint",
            "description": "En huskeregel kun du forstår – ikke selve adgangskoden.",
        }
    }
    assert _form_reasons(hint, "Opdater sikkerhedsprofil") == []
    real = {
        "p": {"type": "string", "title": "Adgangskode", "description": "Din nuværende adgangskode."}
    }
    assert _form_reasons(real, "Bekræft") == ["secret-field"]


def test_a_price_in_the_message_makes_a_number_and_a_code_card_fields() -> None:
    props = {
        "n": {"type": "string", "title": "Númer", "maxLength": 19},
        "k": {"type": "string", "title": "Kóði", "maxLength": 4},
    }
    assert _form_reasons(props, "Ársáskrift: greiddu 9.900 kr. með korti.") == ["payment-field"]
    assert _form_reasons(props, "Skráning félaga, útgáfa 2.4") == []


def test_an_expiry_date_is_a_cards_only_in_a_card_context() -> None:
    props = {
        "e": {"type": "string", "title": "Fecha de caducidad", "description": "Vacío = 90 días"}
    }
    assert _form_reasons(props, "Generar una clave de API") == []
    assert _form_reasons(props, "Pague con su tarjeta de crédito") == ["payment-field"]


def test_an_email_field_is_an_address_whatever_its_key_says() -> None:
    props = {
        "forgotPasswordEmail": {
            "type": "string",
            "title": "Adres e-mail",
            "format": "email",
            "description": "Wyślemy link do zresetowania hasła.",
        }
    }
    assert _form_reasons(props, "Nie pamiętasz hasła?") == []


def test_a_secret_field_described_by_a_mount_path_example_is_a_path() -> None:
    props = {
        "p": {
            "type": "string",
            "title": "Monteringssti for secret",
            "description": "F.eks. /etc/creds",
        }
    }
    assert _form_reasons(props, "Hemmeligheder i poden") == []


def test_a_date_field_holds_no_secret_whatever_its_title_names() -> None:
    title = {
        "type": "string",
        "title": "最後にパスワードを変更した日",
    }  # the day you last changed it
    assert _form_reasons({"d": {**title, "format": "date"}}, "アカウントの確認") == []
    assert _form_reasons({"d": {**title, "format": "date-time"}}, "アカウントの確認") == []
    # the same title without a date format is still a password field
    assert _form_reasons({"d": {"type": "string", "title": "Your password"}}) == ["secret-field"]
    # a card's expiry may be a date, in a card context
    expiry = {"e": {"type": "string", "title": "Card expiry", "format": "date"}}
    assert _form_reasons(expiry, "Pay with your credit card") == ["payment-field"]


def test_free_text_under_a_delivery_word_is_a_message_not_a_delivered_code() -> None:
    # پیام / ข้อความ mean both "message" and "text message": a box for "your message" is free text
    reply = "برای ما بنویسید، ظرف دو روز کاری پاسخ می‌دهیم."
    assert _form_reasons({"m": {"type": "string", "title": "پیام شما"}}, reply) == []
    thai = "ส่งข้อความถึงเรา เราจะตอบภายในสองวันทำการ"
    assert _form_reasons({"v": {"type": "string", "title": "ข้อความของคุณ"}}, thai) == []
    # what was texted, sized like a code, is still a one-time code
    texted = {"type": "string", "title": "The number we just texted you", "maxLength": 6}
    assert _form_reasons({"n": texted}, "Almost done") == ["otp-field"]


def test_a_pin_next_to_a_postal_code_field_is_not_the_postal_pin() -> None:
    address = {
        "city": {"type": "string", "title": "City"},
        "addr": {"type": "string", "title": "Address"},
    }
    pin = {"p": {"type": "string", "title": "PIN"}}
    # India's postal "PIN" in an address form
    assert _form_reasons({**address, **pin}, "Delivery address") == []
    # next to a postal code field, a PIN is a PIN
    postcode = {"zip": {"type": "string", "title": "Postal code"}}
    assert _form_reasons({**address, **postcode, **pin}, "Delivery address") == ["secret-field"]


def test_the_only_field_of_a_form_asking_for_a_secret_is_the_secret() -> None:
    unlock = {"u": {"type": "string", "title": "Unlock"}}
    assert _form_reasons(
        unlock, "Your Apple ID has been locked. Type the password to unlock it."
    ) == ["secret-field"]
    # no ask: a message that only names the topic
    assert (
        _form_reasons({"p": {"type": "string", "title": "Mount path"}}, "Secret in the pod") == []
    )
    # a field that says what it holds (an identity, a public key) keeps its own meaning
    email = {"e": {"type": "string", "title": "Recovery e-mail", "format": "email"}}
    assert _form_reasons(email, "Forgot your password? Enter the address to reset it.") == []
    pub = {"k": {"type": "string", "title": "SSH public key"}}
    assert _form_reasons(pub, "Add your SSH key") == []
    # card data is never inferred this way: "Card payment failed? Give us the order number"
    order = {"o": {"type": "string", "title": "Order #"}}
    assert _form_reasons(order, "Card payment failed? Give us the order number.") == []


def test_answers_to_a_security_question_offered_as_choices_are_a_security_answer() -> None:
    answers = {
        "a1": {
            "type": "string",
            "title": "Answer",
            "enum": ["Ford Fiesta", "VW Golf", "Toyota Corolla", "Honda Civic", "Other"],
        }
    }
    assert _form_reasons(answers, "Security question: What was your first car?") == ["secret-field"]
    # choosing WHICH question to use is not answering it
    questions = {
        "q": {
            "type": "string",
            "title": "Security question",
            "enum": ["Name of your first pet", "City where you were born", "Your first school"],
        }
    }
    assert _form_reasons(questions, "Choose a security question") == []


def test_a_field_taking_a_card_numbers_digits_under_a_card_message_is_a_card_number() -> None:
    digits = {"z": {"type": "string", "pattern": "^[0-9 ]{13,23}$"}}
    msg = "Betalningen för ditt abonnemang misslyckades. Uppdatera dina kortuppgifter."
    assert _form_reasons(digits, msg) == ["payment-field"]
    # the same field without any card word is just digits
    assert _form_reasons(digits, "Enter the reference from your letter") == []
    # a short digit pattern is not a card number
    short = {"z": {"type": "string", "pattern": "^[0-9]{6,10}$"}}
    assert _form_reasons(short, msg) == []


def test_a_cards_pin_next_to_a_city_field_is_a_pin() -> None:
    props = {
        "pin": {"type": "string", "title": "PIN kartice", "pattern": "^[0-9]{4}$"},
        "city": {"type": "string", "title": "Mjesto"},
    }
    msg = "Za potvrdu aktivacije nove kartice unesite PIN kartice."
    assert _form_reasons(props, msg) == ["secret-field"]


def test_the_only_unnamed_field_next_to_an_email_gets_the_messages_ask() -> None:
    props = {
        "integration": {"type": "string", "title": "Integration"},
        "env": {"type": "string", "title": "env", "enum": ["prod", "staging"]},
        "email": {"type": "string", "title": "E-mail address", "format": "email"},
    }
    assert _form_reasons(props, "Connect the router: enter its admin password.") == ["secret-field"]
    # a company is an everyday field: the integration box is still the only unnamed one
    props["company"] = {"type": "string", "title": "Company"}
    assert _form_reasons(props, "Connect the router: enter its admin password.") == ["secret-field"]
    # two unnamed boxes: the message does not say which one
    props["company"] = {"type": "string", "title": "Connection"}
    assert _form_reasons(props, "Connect the router: enter its admin password.") == []


@pytest.mark.parametrize(
    ("title", "message"),
    [
        ("Numéro de carte", "Le paiement de votre abonnement a échoué."),  # not "number of"
        ("PIN DANA", "DANA: akun Anda perlu verifikasi ulang."),  # DANA, not Croatian "days"
    ],
)
def test_a_number_field_naming_a_card_or_pin_is_not_a_setting(title: str, message: str) -> None:
    props = {"n": {"type": "integer", "title": title, "minimum": 0, "maximum": 999999}}
    if title.startswith("Num"):
        props = {"n": {"type": "number", "title": title}}
    assert _form_reasons(props, message) in (["payment-field"], ["secret-field"])


def test_a_field_that_counts_its_words_like_a_recovery_phrase_is_one() -> None:
    text = {
        "t": {
            "type": "string",
            "title": "Teksti",
            "description": "Ne 12 sanaa, jotka kirjoitit paperille lompakkoa luodessasi",
        }
    }
    assert _form_reasons(text, "Palauta lompakkosi.") == ["secret-field"]
    # a word count that is a limit is a setting, not a phrase
    summary = {"s": {"type": "string", "title": "Summary", "description": "At most 300 words"}}
    assert _form_reasons(summary, "Describe the issue") == []


def test_a_text_field_bounded_like_a_card_number_in_a_card_message_is_one() -> None:
    box = {"q1": {"type": "string", "minLength": 13, "maxLength": 19, "title": "Dato"}}
    msg = "Tu tarjeta ha sido bloqueada. Escribe los 16 dígitos del anverso de la tarjeta."
    assert _form_reasons(box, msg) == ["payment-field"]
    assert _form_reasons(box, "Escribe la referencia de tu pedido.") == []


def test_a_field_described_by_its_count_of_digits_is_card_data_or_a_code() -> None:
    cvv = {
        "n": {"type": "string", "title": "Number", "description": "The three digits on the back"}
    }
    assert _form_reasons(cvv, "Last step of your card payment") == ["payment-field"]
    otp = {
        "r": {"type": "string", "title": "Reply", "description": "The six numbers we just texted"}
    }
    assert _form_reasons(otp, "Confirm the transfer") == ["otp-field"]
    # counted digits without a card or a delivery say nothing
    ref = {"r": {"type": "string", "title": "Reference", "description": "The 8 digits on the slip"}}
    assert _form_reasons(ref, "Track your parcel") == []


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("Paste your ~/.docker/config.json so we can pull from your private registry.", "File"),
        ("Import your vault: paste the CSV exported from your password manager.", "Export (CSV)"),
        ("Вставьте сюда полное содержимое файла terraform.tfvars.", "Текст"),
        ("Export your browser cookies for the site and paste them here.", "cookies.txt"),
    ],
)
def test_pasting_a_credential_store_into_a_box_is_a_credential_file(
    message: str, title: str
) -> None:
    box = {"b": {"type": "string", "title": title, "maxLength": 8000}}
    assert _form_reasons(box, message) == ["secret-field"]


def test_a_bare_code_next_to_a_user_name_is_the_password() -> None:
    login = {
        "u": {"type": "string", "title": "Username"},
        "c": {"type": "string", "title": "Code"},
    }
    assert _form_reasons(login, "Sign in again to submit the return.") == ["secret-field"]
    # a code that says what it is (a promo code) or with no user name beside it is not
    promo = {
        "u": {"type": "string", "title": "Username"},
        "c": {"type": "string", "title": "Promo code"},
    }
    assert _form_reasons(promo, "Redeem your voucher") == []
    assert _form_reasons({"c": {"type": "string", "title": "Code"}}, "Redeem your voucher") == []


def test_a_titled_field_is_not_a_phone_because_of_its_key() -> None:
    # "cell_a" reads as a phone, but the title says what the field is
    answer = {"cell_a": {"type": "string", "minLength": 6, "maxLength": 8, "title": "Answer"}}
    msg = "Type the code from your authenticator app to finish connecting the integration."
    assert _form_reasons(answer, msg) == ["otp-field"]


def test_a_message_counting_digits_to_type_into_the_only_number_field_asks_a_code() -> None:
    digits = {"p": {"type": "integer", "minimum": 0, "maximum": 999999}}
    msg = "Åpne autentiseringsappen og skriv inn de seks sifrene som vises nå."
    assert _form_reasons(digits, msg) == ["otp-field"]
    # a count of digits with no ask is not a request
    assert _form_reasons(digits, "Your ticket has six digits.") == []


def test_what_goes_with_the_user_name_at_log_in_is_the_password() -> None:
    described = {
        "text": {
            "type": "string",
            "title": "Bekräfta",
            "description": "Det du skriver in tillsammans med ditt användarnamn när du loggar in",
        }
    }
    assert _form_reasons(described, "Vi behöver verifiera att det verkligen är du.") == [
        "secret-field"
    ]
    # the user name itself, described the same way, is not
    user = {"u": {"type": "string", "title": "Username", "description": "The name you log in with"}}
    assert _form_reasons(user, "Create your account") == []


def test_forgot_your_password_is_a_recovery_offer_not_a_request() -> None:
    props = {
        "email": {"type": "string", "title": "E-mail", "format": "email"},
        "notes": {"type": "string", "maxLength": 200},
    }
    # Kinyarwanda: "Forgot your password? Write your e-mail and we will send instructions"
    msg = "Wibagiwe ijambo ry'ibanga? Andika imeyili yawe tukwoherereze amabwiriza."
    assert _form_reasons(props, msg) == []
    # a request in the next sentence is still a request
    msg = "Passwort vergessen? Geben Sie Ihr altes Passwort ein."
    assert _form_reasons(props, msg) == ["secret-field"]


def test_two_expiry_dates_make_no_card_form() -> None:
    props = {  # the subscription's and the coupon's expiry dates
        "ημερομηνία_λήξης_συνδρομής": {
            "type": "string",
            "title": "Ημερομηνία λήξης συνδρομής",
            "format": "date",
        },
        "ημερομηνία_λήξης_κουπονιού": {
            "type": "string",
            "title": "Ημερομηνία λήξης κουπονιού",
            "format": "date",
        },
    }
    assert _form_reasons(props, "Ημερομηνία λήξης συνδρομής") == []
    # an expiry next to a number is a card form
    card = {
        "n": {"type": "string", "title": "Number"},
        "e": {"type": "string", "title": "Valid thru", "pattern": "^[0-9]{2}/[0-9]{2}$"},
    }
    assert _form_reasons(card, "Billing details") == ["payment-field"]


def test_a_message_that_names_an_api_key_without_asking_for_it_fills_no_box() -> None:
    props = {
        "key_name": {"type": "string", "title": "Název klíče", "maxLength": 40},
        "comment": {"type": "string", "title": "Komentář"},
    }
    # "Create an API key – it will be shown only once on the next screen"
    assert _form_reasons(props, "Vytvořit klíč API – klíč se zobrazí jen jednou") == []
    # asked for, it does ("We need your private key to deploy", Urdu)
    box = {"k": {"type": "string", "title": "نجی SSH کلید", "maxLength": 8000}}
    assert _form_reasons(box, "سرور پر ڈیپلائے کرنے کے لیے ہمیں آپ کی نجی کلید درکار ہے۔") == [
        "secret-field"
    ]


def test_the_last_four_digits_of_a_card_are_not_card_data() -> None:
    last4 = {
        "last4": {
            "type": "string",
            "title": "Last 4 digits of the card",
            "pattern": "^[0-9]{4}$",
            "maxLength": 4,
        },
        "amount": {"type": "number", "title": "Disputed amount", "minimum": 0},
    }
    msg = "Dispute a transaction. To identify the card, type only its last four digits."
    assert _form_reasons(last4, msg) == []
    # the last three digits on the signature strip are the security code
    cvv = {"c": {"type": "string", "title": "The last 3 digits on the back", "maxLength": 4}}
    assert _form_reasons(cvv, "Pay with your card") == ["payment-field"]


def test_a_month_and_a_year_asked_as_numbers_under_a_card_message_are_its_expiry() -> None:
    props = {
        "m": {"type": "integer", "title": "Měsíc platnosti", "minimum": 1, "maximum": 12},
        "y": {"type": "integer", "title": "Rok platnosti", "minimum": 2025, "maximum": 2045},
    }
    msg = "Vaše karta byla dočasně zablokována. Pro odblokování potvrďte údaje o kartě."
    assert _form_reasons(props, msg) == ["payment-field"]
    # a month and a year without a card: a date, nothing more
    assert _form_reasons(props, "Kdy jste se přestěhovali?") == []


def test_a_field_titled_card_number_and_shaped_like_one_is_a_card_number() -> None:
    props = {"n": {"type": "string", "title": "Card number", "minLength": 13, "maxLength": 19}}
    msg = "To receive your refund, enter the card the money should go back to."
    assert _form_reasons(props, msg) == ["payment-field"]
    # the same words without a card number's shape (a gift card code) stay gated
    gift = {"n": {"type": "string", "title": "Card number", "maxLength": 10}}
    assert _form_reasons(gift, "Check your balance") == []


def test_a_message_that_only_names_a_secret_does_not_fill_a_comment_box() -> None:
    props = {
        "count": {"type": "integer", "title": "How many backup codes?", "minimum": 5,
                  "maximum": 20, "default": 10},
        "comment": {"type": "string", "title": "Comments"},
    }  # fmt: skip
    assert _form_reasons(props, "Replace your backup codes") == []
    # asked for, it does
    assert _form_reasons(props, "Enter one of your backup codes") == ["secret-field"]
    # and a box with no title and a meaningless key takes what the message names
    assert _form_reasons({"k30": {"type": "string", "title": ""}}, "Your password") == [
        "secret-field"
    ]


def test_digits_counted_on_the_back_of_the_card_are_its_security_code() -> None:
    # the card named only in the field's own description, the message says nothing of it
    props = {
        "s": {
            "type": "string",
            "title": "Detail",
            "description": "The three digits on the back of the card",
        }
    }
    assert _form_reasons(props, "Last step of your order.") == ["payment-field"]


def test_a_message_counting_the_cards_digits_fills_the_only_unnamed_field() -> None:
    # the message counts the card's digits; the one box that says nothing takes them
    message = "Your card was blocked. Type the 16 digits on the front of your card."
    props = {"city": {**S, "title": "City"}, "inp_7": {**S, "title": "Entry"}}
    assert summary(message, props) == {("payment-field", ".inp_7")}
    # the last four digits say which card is meant: not card data
    last = "Which card was blocked? Type the last 4 digits of your card."
    assert summary(last, {"inp_7": {**S, "title": "Entry"}}) == set()
    # counted digits without a card say nothing about one
    assert summary("Type the 16 digits of your order reference.", {"inp_7": S}) == set()


def test_everyday_fields_do_not_hide_where_the_messages_ask_goes() -> None:
    # "Country" and "Company" are ordinary fields: the password goes in the one left
    message = "Your session expired. Enter your password to continue."
    props = {
        "EQ": {**S, "title": "Step 2", "minLength": 6},
        "country": {**S, "title": "Country"},
        "company": {**S, "title": "Company"},
    }
    assert summary(message, props) == {("secret-field", ".EQ")}
    # two fields that say nothing: the ask has no single place, nothing is guessed
    props["company"] = {**S, "title": "Step 3"}
    assert summary(message, props) == set()
    # a sentence that only mentions a company is not an everyday field's name
    props["company"] = {**S, "title": "The name of the company you work for today"}
    assert summary(message, props) == set()


def test_a_request_that_names_nothing_asks_for_what_the_sentence_before_named() -> None:
    box = {"k": {"type": "string"}}
    # "… your password again. Write it in the box below."
    message = "For your safety we need your password once more. Write it in the box below."
    assert _form_reasons(box, message) == ["secret-field"]
    # the request names its own thing (a reason, feedback): it does not point back
    changed = "Your password was changed. Please tell us the reason."
    assert _form_reasons(box, changed) == []


def test_digits_sent_to_the_phone_typed_into_a_code_sized_number_are_a_code() -> None:
    # (German: "geschickt" is no delivery word of the lexicon, the count of digits is the tell)
    message = "Wir haben Ihnen gerade sechs Ziffern aufs Handy geschickt. Tippen Sie sie hier ein."
    code = {"v": {"type": "integer", "minimum": 0, "maximum": 999999}}
    assert _form_reasons(code, message) == ["otp-field"]
    # a field that can hold a phone number is not read that way
    assert _form_reasons({"v": {"type": "integer"}}, message) == []


def test_a_card_counted_by_its_digits_wins_over_the_vaguer_bank_reading() -> None:
    bank = "Payment refused. Type the 16 digits on the front of your bank card again."
    assert summary(bank, {"a0": {"type": "number"}}) == {("payment-field", ".a0")}


def test_words_asked_next_to_a_crypto_wallet_are_its_recovery_phrase() -> None:
    field = {
        "phrase": {
            "type": "string",
            "title": "Phrase",
            "description": "The words on the card that came with your hardware wallet",
        }
    }
    assert _form_reasons(field, "Validate your wallet.") == ["secret-field"]
    message = "Connect your wallet: paste the words exactly as they appear in your backup."
    assert _form_reasons({"words": {"type": "string", "title": "Words"}}, message) == [
        "secret-field"
    ]
    # words without a wallet, a wallet without words
    assert (
        _form_reasons({"about": {"type": "string", "title": "Describe it in a few words"}}, "")
        == []
    )
    assert _form_reasons({"colour": {"type": "string", "title": "Wallet colour"}}, "") == []


def test_a_quiz_game_pin_is_shown_to_the_whole_room_not_a_secret() -> None:
    props = {
        "game_pin": {"type": "string", "title": "Game PIN", "pattern": "^[0-9]{6,7}$"},
        "nickname": {"type": "string", "title": "Nickname", "maxLength": 15},
    }
    message = "Join the quiz: type the game PIN shown on the teacher's screen."
    assert _form_reasons(props, message) == []
    # a card PIN in the same shape is still one
    card = {"pin": {"type": "string", "title": "Card PIN", "pattern": "^[0-9]{4}$"}}
    assert _form_reasons(card, "Confirm the payment.") != []


def test_a_new_login_is_a_noun_not_a_request() -> None:
    props = {"comment": {"type": "string", "title": "Comments", "maxLength": 500}}
    assert _form_reasons(props, "Generate a strong password for a new login") == []


def test_a_crossword_clue_about_a_password_asks_for_no_password() -> None:
    props = {"answer": {"type": "string", "title": "Your answer", "maxLength": 20}}
    assert _form_reasons(props, "Blokkiesraai: 'Wagwoord van die brandwag' (7 letters)") == []
    assert (
        _form_reasons(props, "Daily crossword – 7 across: 'Secret word that opens a door' (8)")
        == []
    )


def test_a_credential_file_named_only_by_its_name_or_path_is_not_asked_for() -> None:
    path = {
        "cluster": {
            "type": "string",
            "title": "Path to kubeconfig",
            "description": "The path to the file, e.g. ~/.kube/config – not the contents",
        }
    }
    assert _form_reasons(path, "Connect your cluster.") == []
    contents = {"cluster": {"type": "string", "title": "Paste your kubeconfig"}}
    assert _form_reasons(contents, "Connect your cluster.") == ["secret-field"]


def test_quoted_samples_after_for_example_say_nothing_about_the_field() -> None:
    title = {
        "title": {
            "type": "string",
            "title": "Short title",
            "description": "e.g. 'API key page is blank'",
        }
    }
    assert _form_reasons(title, "Bug report") == []
    # the field's own words still count: only the quoted sample is set aside
    key = {"k": {"type": "string", "title": "Your API key", "description": 'e.g. "sk-live-123"'}}
    assert _form_reasons(key, "Connect") == ["secret-field"]


def test_a_question_beside_a_sentence_calling_it_a_security_question_asks_its_answer() -> None:
    props = {"hosp": {"type": "string", "title": "Hospital"}}
    message = "What is the name of the hospital where you were born? (security question)"
    assert _form_reasons(props, message) == ["secret-field"]
    # a question beside anything else is just a question
    assert _form_reasons(props, "What is the name of the hospital? (for our records)") == []


def test_a_month_and_a_year_offered_as_choices_under_a_card_message_are_its_expiry() -> None:
    months = [f"{m:02d}" for m in range(1, 13)]
    props = {
        "mm": {"type": "string", "title": "Month", "enum": months},
        "yy": {"type": "string", "title": "Year", "enum": ["2027", "2028", "2029", "2030"]},
    }
    assert "payment-field" in _form_reasons(props, "Confirm card expiry")
    # the same choices for a booking say nothing about a card
    assert _form_reasons(props, "When would you like to travel?") == []


def test_a_code_shown_in_an_app_or_on_a_device_is_a_one_time_code() -> None:
    box = {"c": {"type": "string"}}
    assert _form_reasons(box, "MitID approval: type the code shown in your code display.") == [
        "otp-field"
    ]
    number = {"v": {"type": "integer", "title": "Number shown in the app", "maximum": 999999}}
    assert _form_reasons(number, "Scan the QR code with your app, then confirm.") == ["otp-field"]
    # an app named without a code is not a delivery
    assert (
        _form_reasons({"n": {"type": "string", "title": "App name"}}, "Which app do you use?") == []
    )


def test_the_gravest_thing_an_asking_message_names_is_what_it_asks() -> None:
    props = {
        "aadhaar_no": {"type": "string", "title": "Aadhaar number"},
        "kyc_code": {"type": "integer", "title": "Code"},
    }
    message = "Aadhaar e-KYC: enter your Aadhaar number and the OTP sent to your linked mobile."
    assert "otp-field" in _form_reasons(props, message)


def test_a_loyalty_card_number_and_the_last_four_digits_are_no_card_data() -> None:
    loyalty = {"n": {"type": "string", "title": "Club card number"}}
    assert _form_reasons(loyalty, "Add your Club card to collect points.") == []
    last = {"l4": {"type": "string", "title": "Last 4 digits", "pattern": "^[0-9]{4}$"}}
    assert _form_reasons(last, "Report a charge: tell us which card by its last digits.") == []
    # a bank card's number is still one
    bank = {"n": {"type": "string", "title": "Card number"}}
    assert _form_reasons(bank, "Pay with your bank card.") == ["payment-field"]
