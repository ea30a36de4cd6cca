"""gateway.detect.secrets: live-looking secret values (ported gitleaks rule ideas, RE2)."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.detect.findings import Reason, Severity
from gateway.detect.secrets import RULES, rule_ids, scan_secrets, shannon_entropy

# Samples are assembled from pieces so that no complete token appears in the source.
B62 = "a1B2c3D4e5F6g7H8i9J0"
HEX = "0123456789abcdef"


def _jwt(header: dict[str, str], payload: dict[str, object]) -> str:
    def enc(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{enc(header)}.{enc(payload)}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"


JWT = _jwt({"alg": "HS256", "typ": "JWT"}, {"sub": "1234567890", "name": "Jane", "iat": 1516239022})

SAMPLES: dict[str, str] = {
    "aws-access-key-id": "AKIA" + "IOSFODNN7EXAMPLE",
    "aws-secret-access-key": "aws_secret_access_key = "
    + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "gcp-api-key": "AIza" + "SyD" + B62 + "abcdefghijkl",
    "google-oauth-access-token": "ya29." + B62 + "_-xyz",
    "azure-storage-account-key": "AccountName=x;AccountKey=" + "Ab1+" * 21 + "xy==",
    "azure-ad-client-secret": "secret: " + "abc1Q~" + "Xy7_abcdefghijklmnopqrstuvwxyz1234",
    "digitalocean-token": "dop_v1_" + HEX * 4,
    "databricks-token": "dapi" + HEX * 2,
    "heroku-api-key": "HRKU-AA" + B62 * 2 + "abcdefghijklmnopqr",
    "github-pat": "ghp_" + B62 + "abcdefghijklmnop",
    "github-oauth-token": "gho_" + B62 + "abcdefghijklmnop",
    "github-app-token": "ghs_" + B62 + "abcdefghijklmnop",
    "github-refresh-token": "ghr_" + B62 + "abcdefghijklmnop",
    "github-fine-grained-pat": "github_pat_" + (B62 * 5)[:82],
    "gitlab-pat": "glpat-" + B62,
    "gitlab-pipeline-trigger-token": "glptt-" + HEX * 2 + "01234567",
    "gitlab-runner-token": "glrt-" + B62 + "xy",
    "npm-access-token": "npm_" + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8",
    "pypi-upload-token": "pypi-AgEIcHlwaS5vcmc" + B62 * 3,
    "atlassian-api-token": "ATATT3" + B62 * 8,
    "postman-api-token": "PMAK-" + HEX + "01234567" + "-" + HEX * 2 + "ab",
    "pulumi-api-token": "pul-" + HEX * 2 + "01234567",
    "linear-api-key": "lin_api_" + B62 * 2,
    "doppler-api-token": "dp.pt." + "abcdefghij0123456789abcdefghij0123456789abc",
    "huggingface-access-token": "hf_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "huggingface-org-token": "api_org_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    "openai-api-key": "sk-proj-" + B62 + "T3BlbkFJ" + B62,
    "anthropic-api-key": "sk-ant-api03-" + B62 * 4 + "abcdefghijklmAA",
    "slack-bot-token": "xoxb-" + "1234567890-1234567890-" + B62 + "abcd",
    "slack-user-token": "xoxp-" + "1234567890-1234567890-1234567890-" + HEX * 2,
    "slack-app-token": "xapp-1-A0123ABCDEF-1234567890-" + HEX * 4,
    "slack-legacy-token": "xoxs-" + "1234567890-" + B62,
    "slack-webhook-url": "https://hooks.slack.com/services/T00000000/B00000000/" + B62,
    "discord-webhook-url": "https://discord.com/api/webhooks/123456789012345678/" + B62 * 4,
    "telegram-bot-token": "123456789:AA" + B62 + "abcdefghijklm",
    "stripe-access-token": "sk_live_" + B62,
    "square-access-token": "sq0atp-" + B62 + "ab",
    "twilio-api-key": "SK" + HEX * 2,
    "sendgrid-api-token": "SG." + B62 + "ab" + "." + B62 * 2 + "abc",
    "mailchimp-api-key": HEX * 2 + "-us12",
    "mailgun-private-api-token": "key-" + HEX * 2,
    "facebook-access-token": "EAAC" + B62 * 6,
    "shopify-token": "shpat_" + HEX * 2,
    "grafana-cloud-token": "glc_" + B62 * 2,
    "grafana-service-account-token": "glsa_" + B62 + "abcdefghijkl" + "_" + "0a1b2c3d",
    "newrelic-user-api-key": "NRAK-" + "ABCDEFGHIJ0123456789ABCDEFG",
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + "q" * 70 + "\n-----END",
    "age-secret-key": "AGE-SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58],
    "jwt": JWT,
    "url-credentials": "https://admin:" + "hunter22" + "@db.example.com/",
    "bearer-token": "Authorization: Bearer " + B62 + "xyz",
    "generic-api-key": "client_secret = " + "9f8e7d6c5b4a3f2e1d0c9b8a7",
}


def test_every_rule_has_a_sample() -> None:
    assert {r.id for r in RULES} == set(SAMPLES)
    assert len(RULES) >= 30


@pytest.mark.parametrize(("rule_id", "sample"), sorted(SAMPLES.items()))
def test_rule_matches_its_sample(rule_id: str, sample: str) -> None:
    assert rule_id in rule_ids(f"some text {sample} more text")


@pytest.mark.parametrize(("rule_id", "sample"), sorted(SAMPLES.items()))
def test_findings_are_value_free(rule_id: str, sample: str) -> None:
    findings = scan_secrets(sample, "$.requestedSchema.properties.x.default")
    assert findings
    for f in findings:
        assert f.reason is Reason.SECRET_VALUE
        assert f.severity is Severity.HIGH
        assert f.path == "$.requestedSchema.properties.x.default"
        assert sample not in f.detail


_BENIGN = [
    "password: must contain at least 8 characters",
    "Your API key: will be stored securely",
    "max_tokens: 4096",
    "token_count = 123456789012345678",
    "api_key_name: MyProductionKeyForBilling2",
    "session_id: 123e4567-e89b-12d3-a456-426614174000",
    "primary_key: user_id_column_12",
    "monkey: Abc123def456ghi789",
    "auth_method: oauth2_client_credentials",
    "client: my-service-account-01",
    "api_version: 2024-01-01T00:00:00",
    "api_key=YOUR_API_KEY_HERE",
    "token=xxxxxxxxxxxxxxxxxxxxxxxx1",
    "secret: ${SECRET_FROM_ENV_123456}",
    "Enter your password",
    "The word token appears here",
    "sk-ant is a prefix",
    "eyJhbGciOi.eyJzdWIiOi.abc",  # JWT-shaped but not JSON inside
    "https://example.com/path?x=1",
    "-----BEGIN PRIVATE KEY-----",  # a header without a key body
    "SK is short for Slovakia",
    "bearer token authentication",
    "ghp_tooShort",
    "",
]


@pytest.mark.parametrize("text", _BENIGN)
def test_benign_text(text: str) -> None:
    assert scan_secrets(text, "$.x") == []


def test_jwt_must_decode_to_json() -> None:
    bad = _jwt({"x": "y"}, {"sub": "1"})  # no alg/typ
    assert "jwt" not in rule_ids(bad)
    assert "jwt" in rule_ids(JWT)


def test_documented_examples_count() -> None:
    assert rule_ids("AKIAIOSFODNN7EXAMPLE") == ["aws-access-key-id"]


def test_invisible_characters_do_not_hide_a_token() -> None:
    token = SAMPLES["github-pat"]
    hidden = token[:6] + "\u200b" + token[6:]
    assert "github-pat" in rule_ids(hidden)
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in token)
    assert "github-pat" in rule_ids(fullwidth)


@pytest.mark.parametrize(
    "encode",
    [
        lambda s: base64.b64encode(s.encode()).decode(),
        lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
        lambda s: s.encode().hex(),
        lambda s: quote(s, safe=""),
    ],
    ids=["base64", "base64url", "hex", "percent"],
)
def test_encoded_secrets(encode: object) -> None:
    assert callable(encode)
    payload = "key " + SAMPLES["aws-access-key-id"] + " end"
    details = [f.detail for f in scan_secrets(str(encode(payload)), "$.x")]
    assert details == ["aws-access-key-id+encoded"]


def test_nested_encoding_respects_depth() -> None:
    payload = "key " + SAMPLES["stripe-access-token"] + " end"
    twice = base64.b64encode(base64.b64encode(payload.encode())).decode()
    assert scan_secrets(twice, "$.x", decode_depth=1) == []
    assert [f.detail for f in scan_secrets(twice, "$.x", decode_depth=2)] == [
        "stripe-access-token+encoded"
    ]
    assert scan_secrets(twice, "$.x", decode_depth=0) == []


def test_plain_finding_wins_over_encoded_duplicate() -> None:
    token = SAMPLES["aws-access-key-id"]
    text = token + " " + base64.b64encode(("x " + token).encode()).decode()
    assert [f.detail for f in scan_secrets(text, "$.x")] == ["aws-access-key-id"]


def test_entropy() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)


@settings(deadline=None, max_examples=300)
@given(st.text())
def test_never_raises(text: str) -> None:
    for f in scan_secrets(text, "$.x"):
        assert f.reason is Reason.SECRET_VALUE


@settings(deadline=None, max_examples=100)
@given(st.text(alphabet="AKIAghp_xob-=:.eyJ0123456789+/ \n", max_size=300))
def test_never_raises_on_token_alphabet(text: str) -> None:
    scan_secrets(text, "$.x")


_ADVERSARIAL = [
    "key=" * 250_000,
    "AKIA" * 250_000,
    "eyJ" + "a" * 1_000_000,
    "eyJaaaaaaaaaaa.eyJ" * 50_000,
    "-----BEGIN PRIVATE KEY-----" * 35_000,
    "sk-" * 330_000,
    "token: " + "a1" * 500_000,
    base64.b64encode(("x AKIA " * 100_000).encode()).decode(),
    "https://a:bcd@" * 70_000,
]


@pytest.mark.parametrize("text", _ADVERSARIAL, ids=range(len(_ADVERSARIAL)))
def test_bounded_on_adversarial_input(text: str) -> None:
    start = time.perf_counter()
    scan_secrets(text, "$.x")
    assert time.perf_counter() - start < 2.0
