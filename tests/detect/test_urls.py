"""URL-mode analysis: schemes, userinfo, IP literals, pre-auth families, keys, PII, encodings."""

from __future__ import annotations

import base64
import statistics
import time
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.detect.config import Limits, UrlConfig
from gateway.detect.findings import Finding, Reason, Severity
from gateway.detect.urls import UrlFacts, analyze_url, url_facts

CFG = UrlConfig()
LIMITS = Limits()
P = "$.url"


def run(url: str, cfg: UrlConfig = CFG, limits: Limits = LIMITS) -> list[Finding]:
    findings = analyze_url(url, P, cfg, limits)
    assert all(f.path == P for f in findings)
    return findings


def summary(url: str, cfg: UrlConfig = CFG) -> set[tuple[str, str]]:
    return {(f.reason.value, f.detail) for f in run(url, cfg)}


def reasons(url: str, cfg: UrlConfig = CFG) -> set[Reason]:
    return {f.reason for f in run(url, cfg)}


# ---------------------------------------------------------------- clean URLs


@pytest.mark.parametrize(
    "url",
    [
        # the MCP spec's own URL-mode example
        "https://example.com/connect?elicitationId=550e8400-e29b-41d4-a716-446655440000",
        # OAuth 2.1 authorization request with PKCE
        "https://auth.example.com/authorize?response_type=code&client_id=s6BhdRkqt3"
        "&redirect_uri=https%3A%2F%2Fclient.example.org%2Fcb&scope=openid%20profile"
        "&state=af0ifjsldkj&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        "&code_challenge_method=S256",
        # device authorization: the user_code is meant to be shown to the user
        "https://example.com/device?user_code=WDJB-MJHT",
        "https://login.microsoftonline.com/common/oauth2/v2.0/authorize?client_id=6731de76-14a6"
        "-49ae-97bc-6eba6914391e&response_type=code&state=12345&response_mode=query",
        "https://github.com/login/oauth/authorize?client_id=Iv1.8a61f9b3a7aba766&state=abc",
        "https://docs.example.com/guide/signatures?signature=ed25519#verifying",
        "https://example.com/docs/reset/password-policy",
        "https://example.com/search?q=how+to+reset+a+token&page=2",
        "https://example.com/orders/2024-01-15/items?limit=50",
        "https://example.com/cb?code=&state=x",  # empty code: nothing to leak
        "https://example.com/?token=true",  # a placeholder, not a token
        "https://example.com/commit/3f786850e387550fdab836ed7e6dc881de23001b",
        "http://localhost:8080/callback?elicitationId=abc",
        "http://127.0.0.1:3000/",
        "http://[::1]:3000/",
        "https://example.com/#section-2",
        "https://example.com/feed?t=1700000000&hash=3f786850e387550fdab836ed7e6dc881de23001b",
        "https://example.com/files?key=2024-report&session=spring",
        "https://example.com/?sig=ed25519&code=en-US",
    ],
)
def test_clean(url: str) -> None:
    assert run(url) == []


def test_url_facts() -> None:
    assert url_facts("https://a.b.example.co.uk/x?token=secret") == UrlFacts(
        "https", "a.b.example.co.uk", "example.co.uk", is_ip=False, is_loopback=False
    )
    assert url_facts("http://2130706433/") == UrlFacts(
        "http", "127.0.0.1", None, is_ip=True, is_loopback=True
    )
    assert url_facts("https://bücher.de/") == UrlFacts(
        "https", "xn--bcher-kva.de", "xn--bcher-kva.de", is_ip=False, is_loopback=False
    )
    assert url_facts("not a url") is None
    facts = url_facts("javascript:alert(1)")
    assert facts is not None
    assert (facts.scheme, facts.host) == ("javascript", "")


# ---------------------------------------------------------------- scheme


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "java\tscript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "ftp://example.com/x",
        "vbscript:msgbox",
        "mailto:someone@example.com",
    ],
)
def test_bad_scheme(url: str) -> None:
    assert Reason.BAD_SCHEME in reasons(url)


@pytest.mark.parametrize(
    "url", ["http://example.com/", "http://localhost.evil.com/", "http://127.0.0.1.nip.io/"]
)
def test_plain_http_is_non_https(url: str) -> None:
    assert (Reason.NON_HTTPS.value, "scheme") in summary(url)


def test_loopback_http_only_in_dev_mode() -> None:
    cfg = UrlConfig(dev_loopback_http=False)
    assert (Reason.NON_HTTPS.value, "scheme") in summary("http://localhost:8080/", cfg)
    assert run("http://localhost:8080/") == []
    assert run("https://localhost:8080/") == []


# ---------------------------------------------------------------- userinfo


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pass@example.com/",
        "https://user@example.com/",
        "https://:pass@example.com/",
        "https://@example.com/",
        "https://paypal.com@evil.example/",
        "https://docs.example.org\\@attacker.test/",  # naive readers see userinfo and attacker.test
    ],
)
def test_userinfo(url: str) -> None:
    assert (Reason.USERINFO.value, "userinfo") in summary(url)


def test_backslash_trick_also_flags_the_host_mismatch() -> None:
    assert summary("https://docs.example.org\\@attacker.test/") == {
        (Reason.USERINFO.value, "userinfo"),
        (Reason.CONFUSABLE_HOST.value, "host-mismatch"),
    }


# ---------------------------------------------------------------- IP literals


@pytest.mark.parametrize(
    "url",
    [
        "https://3232235777/",
        "https://0xC0A80101/",
        "https://0xC0.0xA8.1.1/",
        "https://0300.0250.1.1/",
        "https://192.168.257/",
        "https://192.168.1.1/",
        "https://１９２.１６８.０.１/",
        "https://10.1/",
        "https://8.8.8.8/",
        "https://169.254.169.254/latest/meta-data/",
        "https://[2606:4700::1111]/",
        "https://[::ffff:192.168.1.1]/",
        "https://[::ffff:7f00:1]/",
        "http://2130706433/",  # loopback in disguise
        "http://0x7f.1/",
        "http://0177.0.0.1/",
    ],
)
def test_ip_literals(url: str) -> None:
    findings = [f for f in run(url) if f.reason is Reason.IP_LITERAL]
    assert len(findings) == 1
    assert findings[0].severity is Severity.HIGH


# ---------------------------------------------------------------- hosts (wired through)


def test_host_findings_are_reported_with_the_callers_path() -> None:
    findings = analyze_url("https://pаypal.com/login", "$.params.url", CFG, LIMITS)
    assert {f.path for f in findings} == {"$.params.url"}
    assert Reason.CONFUSABLE_HOST in {f.reason for f in findings}


@pytest.mark.parametrize("url", ["https://bücher.de/", "https://例え.jp/", "https://한국.kr/"])
def test_legit_idn_is_low_only(url: str) -> None:
    findings = run(url)
    assert [(f.reason, f.severity) for f in findings] == [(Reason.IDN_HOST, Severity.LOW)]


@pytest.mark.parametrize(
    "url",
    ["https://ex%61mple.org/", "https://example｡org/", "https:example.org/", "https:///x.org/"],
)
def test_obfuscated_host_spelling(url: str) -> None:
    assert (Reason.CONFUSABLE_HOST.value, "host-mismatch") in summary(url)


def test_allowed_hosts() -> None:
    cfg = UrlConfig(allowed_hosts=frozenset({"example.com"}))
    assert run("https://auth.example.com/x", cfg) == []
    assert summary("https://example.net/x", cfg) == {(Reason.HOST_NOT_ALLOWED.value, "host")}


# ---------------------------------------------------------------- pre-authenticated URLs


@pytest.mark.parametrize(
    ("url", "detail"),
    [
        (
            "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
            "aws-sigv4",
        ),
        (
            "https://bucket.s3.amazonaws.com/k?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1141889120"
            "&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D",
            "aws-sigv2",
        ),
        (
            "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256"
            "&X-Goog-Credential=sa%40proj.iam.gserviceaccount.com%2F20190301%2Fauto%2Fstorage"
            "&X-Goog-Signature=7f3a",
            "gcs-v4",
        ),
        (
            "https://storage.googleapis.com/b/o?GoogleAccessId=sa@proj.iam.gserviceaccount.com"
            "&Expires=1&Signature=BWDq%2F",
            "gcs-v2",
        ),
        (
            "https://acct.blob.core.windows.net/c/b.txt?sv=2021-06-08&ss=b&srt=o&sp=r"
            "&se=2030-01-01&sig=vWm%2FrHq8nLzC%3D",
            "azure-sas",
        ),
        (
            "https://d111111abcdef8.cloudfront.net/image.jpg?Expires=1357034400"
            "&Signature=nitfHRCrtziwO2HwPfWw~yYDhUF5EwRunQA-j19DzZrvDh6hQ73lDx~-ar3UocvvRQVw6EkC"
            "&Key-Pair-Id=K2JCJMDEHXQW5F",
            "cloudfront",
        ),
        (
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "webhook",
        ),
        ("https://discord.com/api/webhooks/123456789012345678/abcDEF-ghi_jkl", "webhook"),
        ("https://discordapp.com/api/v10/webhooks/1234/abcDEF", "webhook"),
        ("https://contoso.webhook.office.com/webhookb2/a@b/IncomingWebhook/c/d", "webhook"),
        ("https://example.com/magic/3f9a7c2e8b1d4a6f9e0c2b7a5d3e1f08", "path:magic-link"),
        ("https://example.com/reset-password/Zx8Kq2LmN4pR7sT1vW3y", "path:magic-link"),
        ("https://example.com/app;jsessionid=0AAB6C8DE415E2E5E3F1C2E2A5E2F4D1", "path:session"),
        ("https://example.com/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=xyz", "query:code"),
        (
            "https://example.com/cb#access_token=2YotnFZFEjr1zCsicMWpAA&token_type=bearer",
            "fragment:access_token",
        ),
        ("https://example.com/#/callback?id_token=abcd1234efgh", "fragment:id_token"),
        (
            "https://example.com/__/auth/action?mode=resetPassword&oobCode=ABC123def456",
            "query:oobCode",
        ),
        ("https://example.com/x?refresh_token=tGzv3JOkF0XG5Qx2TlKWIA", "query:refresh_token"),
        ("https://example.com/x?PHPSESSID=el4ukv0kqbvoirg7nkp4dncpk3", "query:PHPSESSID"),
    ],
)
def test_preauth(url: str, detail: str) -> None:
    assert (Reason.PREAUTH_URL.value, detail) in summary(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.aws.amazon.com/AmazonS3/latest/userguide/ShareObjectPreSignedURL.html",
        "https://example.com/docs?signature=rsa&sig=true",  # words about signatures
        "https://example.com/sv?sv=2021-06-08",  # the SAS version alone is not a SAS
        "https://slack.com/services/pricing",  # Slack, but not its webhook host
        "https://discord.com/api/docs/webhooks",
        "https://example.com/magic/the-gathering",  # not a capability token
        "https://example.com/login/help",
        "https://example.com/?code=python",  # an ambiguous key with a word value
        "https://example.com/docs/aws?Signature=v4-explained",  # SigV2 needs AWSAccessKeyId too
        "https://example.com/?GoogleAccessId=docs-team",  # GCS V2 needs a Signature too
        "https://example.com/?Key-Pair-Id=K2JCJMDEHXQW5F",  # CloudFront needs a Signature too
        "https://developers.example.com/oauth#access_token",  # a docs anchor, no value
        "https://example.com/api/webhooks/guide",
        "https://hooks.slack.com/",
    ],
)
def test_preauth_lookalikes_are_clean(url: str) -> None:
    assert run(url) == []


# ---------------------------------------------------------------- credentials


@pytest.mark.parametrize(
    ("url", "detail"),
    [
        ("https://example.com/login?password=hunter22", "query:password"),
        ("https://example.com/login?user=bob&pwd=s3cr3t!", "query:pwd"),
        ("https://example.com/api?api_key=0123456789abcdef", "query:api_key"),
        ("https://example.com/api?API-Key=0123456789abcdef", "query:API-Key"),
        ("https://example.com/api?apikey=abcd1234efgh5678", "query:apikey"),
        ("https://example.com/x?client_secret=9f8e7d6c5b4a", "query:client_secret"),
        ("https://example.com/x?otp=123456", "query:otp"),
        ("https://example.com/x?token=2YotnFZFEjr1zCsicMWpAA", "query:token"),
        ("https://example.com/x?key=AbCdEf012345", "query:key"),
        ("https://example.com/x?sig=Zx8Kq2LmN4pR7sT1", "query:sig"),
        ("https://example.com/x#secret=correct-horse-battery", "fragment:secret"),
    ],
)
def test_credential_keys(url: str, detail: str) -> None:
    assert (Reason.CREDENTIAL_IN_URL.value, detail) in summary(url)


def test_operator_sensitive_keys() -> None:
    cfg = UrlConfig(sensitive_query_keys=frozenset({"membership"}))
    assert (Reason.CREDENTIAL_IN_URL.value, "query:membership") in summary(
        "https://example.com/?membership=gold-4471", cfg
    )
    assert run("https://example.com/?membership=gold-4471") == []


def test_operator_safe_keys_skip_key_rules_but_not_pii() -> None:
    cfg = UrlConfig(safe_query_keys=frozenset({"token"}))
    assert run("https://example.com/?token=2YotnFZFEjr1zCsicMWpAA", cfg) == []
    assert (Reason.PII_IN_URL.value, "query:token:email") in summary(
        "https://example.com/?token=jane%40example.com", cfg
    )


@pytest.mark.parametrize(
    "url",
    ["https://example.com/?token=", "https://example.com/?password=", "https://example.com/?otp=1"],
)
def test_trivial_values_are_not_credentials(url: str) -> None:
    assert run(url) == []


JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
    "IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


def test_jwt_under_an_opaque_key() -> None:
    assert (Reason.CREDENTIAL_IN_URL.value, "query:x") in summary(f"https://example.com/?x={JWT}")


def test_jwt_in_a_path_segment() -> None:
    assert (Reason.CREDENTIAL_IN_URL.value, "path") in summary(f"https://example.com/v/{JWT}")


def test_jwt_state_is_fine() -> None:
    assert run(f"https://auth.example.com/authorize?client_id=a&state={JWT}") == []


def test_shared_secret_rules_are_used() -> None:
    # npm tokens are only known to gateway.detect.secrets (the form helper's rule set)
    npm = "npm_" + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8"
    assert (Reason.CREDENTIAL_IN_URL.value, "query:q") in summary(f"https://example.com/?q={npm}")


def test_prefixed_tokens() -> None:
    gh = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert (Reason.CREDENTIAL_IN_URL.value, "query:q") in summary(f"https://example.com/?q={gh}")
    assert (Reason.CREDENTIAL_IN_URL.value, "path") in summary(f"https://example.com/{gh}/x")


# ---------------------------------------------------------------- PII


@pytest.mark.parametrize(
    ("url", "detail"),
    [
        ("https://example.com/u?email=jane.doe%40example.com", "query:email:email"),
        ("https://example.com/u?e=jane.doe@example.com", "query:e:email"),
        ("https://example.com/users/jane.doe@example.com/profile", "path:email"),
        ("https://example.com/p#contact=jane.doe%40example.com", "fragment:contact:email"),
        ("https://example.com/p#jane.doe@example.com", "fragment:email"),
        ("https://example.com/?phone=%2B14155550132", "query:phone:phone"),
        ("https://example.com/?n=415-555-0132", "query:n:phone"),
        ("https://example.com/?ssn=536-90-1234", "query:ssn:ssn"),
        ("https://example.com/pay/4111111111111111", "path:card"),
        ("https://example.com/?cc=4111%201111%201111%201111", "query:cc:card"),
        ("https://example.com/?iban=DE89370400440532013000", "query:iban:iban"),
        ("https://example.com/?dni=12345678Z", "query:dni:national-id"),
        ("https://example.com/#cpf=529.982.247-25", "fragment:cpf:national-id"),
        ("https://4111111111111111.exfil.example/", "host:card"),
    ],
)
def test_pii(url: str, detail: str) -> None:
    assert (Reason.PII_IN_URL.value, detail) in summary(url)


def test_pii_in_a_safe_key_is_still_pii() -> None:
    assert (Reason.PII_IN_URL.value, "query:login_hint:email") in summary(
        "https://auth.example.com/authorize?client_id=a&login_hint=jane%40example.com"
    )


def test_pii_in_a_key_hides_the_key_name() -> None:
    found = summary("https://example.com/?jane.doe%40example.com=1")
    assert (Reason.PII_IN_URL.value, "query-key:email") in found
    assert all("jane" not in detail for _, detail in found)


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def b64url(s: str) -> str:
    return base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("url", "reason", "detail"),
    [
        (
            f"https://example.com/?d={quote(b64('jane.doe@example.com'))}",
            "pii-in-url",
            "query:d:email",
        ),
        (f"https://example.com/?d={b64url('ssn 536-90-1234 ok')}", "pii-in-url", "query:d:ssn"),
        (f"https://example.com/r/{b64url('card 4111111111111111')}", "pii-in-url", "path:card"),
        (f"https://example.com/#{b64url('jane.doe@example.com')}", "pii-in-url", "fragment:email"),
        (
            "https://example.com/?d=" + b"jane.doe@example.com".hex(),
            "pii-in-url",
            "query:d:email",
        ),
        (
            "https://example.com/?d=jane.doe%2540example.com",
            "pii-in-url",
            "query:d:email",
        ),  # %25 → %
        (f"https://example.com/?d={b64(JWT)}", "credential-in-url", "query:d"),
        (
            f"https://example.com/?d={b64(b64('jane.doe@example.com'))}",
            "pii-in-url",
            "query:d:email",
        ),
    ],
)
def test_encoded_payloads(url: str, reason: str, detail: str) -> None:
    found = summary(url)
    assert (reason, detail) in found
    assert (
        Reason.ENCODED_PAYLOAD.value,
        detail.rsplit(":", 1)[0] if reason == "pii-in-url" else detail,
    ) in found


def test_base64_with_plus_turned_into_spaces() -> None:
    encoded = base64.b64encode("sーjane.doe@example.com".encode()).decode()
    assert encoded.startswith("c+")  # the "+" misaligns everything after it once it is a space
    url = "https://example.com/?d=" + encoded  # unescaped "+" reads as a space after decoding
    assert (Reason.PII_IN_URL.value, "query:d:email") in summary(url)


def test_plain_values_are_not_encoded_payloads() -> None:
    found = summary("https://example.com/?email=jane.doe%40example.com")
    assert Reason.ENCODED_PAYLOAD.value not in {r for r, _ in found}


def nested_b64(text: str, levels: int) -> str:
    for _ in range(levels):
        text = b64(text)
    return text


def test_decode_depth_is_bounded() -> None:
    three = b64(b64(b64("jane.doe@example.com")))
    assert run(f"https://example.com/?d={three}") == []  # decode_depth=2
    deep = Limits(decode_depth=3)
    assert (Reason.PII_IN_URL.value, "query:d:email") in {
        (f.reason.value, f.detail) for f in run(f"https://example.com/?d={three}", limits=deep)
    }


# ---------------------------------------------------------------- malformed, oversize, invisible


@pytest.mark.parametrize(
    "url", ["not a url", "", "https://exa mple.com/", "https://example.com:99999/", "https://[::1/"]
)
def test_malformed(url: str) -> None:
    assert (Reason.MALFORMED.value, "url") in summary(url)


def test_oversize_url_skips_everything_else() -> None:
    url = "https://user:pw@example.com/?password=" + "a" * 5000
    assert run(url) == [Finding(Reason.OVERSIZE, P, Severity.HIGH, "url")]


def test_too_many_parameters() -> None:
    url = "https://example.com/?" + "&".join(f"k{i}=v" for i in range(70))
    assert summary(url) == {(Reason.OVERSIZE.value, "query")}


def test_too_many_path_segments() -> None:
    url = "https://example.com/" + "/".join("s" for _ in range(70))
    assert summary(url) == {(Reason.OVERSIZE.value, "path")}


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a\u200bb",
        "https://example.com/\u202egnp.exe",
        "https://exa\tmple.com/",
        "https://example.com/\nx",
    ],
)
def test_invisible_chars(url: str) -> None:
    assert (Reason.INVISIBLE_CHARS.value, "url") in summary(url)


# ---------------------------------------------------------------- no values in findings


def test_findings_never_carry_values() -> None:
    url = (
        "https://u:hunter2@example.com/users/jane.doe@example.com?password=hunter22"
        f"&x={JWT}&cc=4111111111111111#access_token=2YotnFZFEjr1zCsicMWpAA"
    )
    for finding in run(url):
        for secret in ("hunter2", "jane", "eyJ", "4111", "2Yotn"):
            assert secret not in finding.detail


# ---------------------------------------------------------------- robustness and speed


def test_one_megabyte_url_is_bounded() -> None:
    url = "https://example.com/?" + "a=" + "%41" * 350_000
    start = time.perf_counter()
    assert summary(url) == {(Reason.OVERSIZE.value, "url")}
    roomy = Limits(max_url_length=2_000_000)  # parameter and segment caps stay at the default
    for hostile in (
        url,
        "https://" + "а" * 1_000_000 + ".com/",
        "https://example.com/" + "/".join(["eyJhbGciOiJIUzI1NiJ9"] * 40_000),
        "https://example.com/?" + "&".join(["token=" + "Ab1" * 10] * 5_000),
        "https://example.com/?d=" + b64(b64("x" * 300_000)),
        "https://example.com/?d=" + nested_b64("jane.doe@example.com", 12),
        "https://example.com/?d=" + "%25" * 300_000 + "41",
    ):
        analyze_url(hostile, P, CFG, roomy)
    assert time.perf_counter() - start < 15.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_on_any_text(text: str) -> None:
    for finding in analyze_url(text, P, CFG, LIMITS):
        assert finding.path == P


URL_PARTS = st.sampled_from(
    [
        "https://", "http://", "javascript:", "//", "@", "\\", ":", "/", "?", "#", "&", "=", "%",
        "%2", "%41", "%40", "[", "]", "::1", "0x7f", ".", "1", "а", "ｅ", "xn--", "\u200b", "\t",
        "token", "code", "sig", "sv", "example.com", "eyJ", "4111", "+1", "-", "_", "~", "ß",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(URL_PARTS, max_size=40))
def test_never_raises_on_url_soup(parts: list[str]) -> None:
    analyze_url("".join(parts), P, CFG, LIMITS)
    url_facts("".join(parts))


def test_ordinary_urls_are_fast() -> None:
    urls = [
        "https://example.com/connect?elicitationId=550e8400-e29b-41d4-a716-446655440000",
        "https://auth.example.com/authorize?response_type=code&client_id=s6BhdRkqt3&state=x"
        "&redirect_uri=https%3A%2F%2Fclient.example.org%2Fcb&scope=openid&code_challenge=E9Mel",
        "https://billing.example.org/checkout/session/cs_test_a1b2c3?locale=en",
        "https://bücher.de/konto",
    ]
    for url in urls:
        run(url)  # warm-up
    samples: list[float] = []
    for _ in range(250):
        for url in urls:
            # CPU time of this thread: wall-clock p99 on a shared CI machine measures the scheduler
            start = time.thread_time()
            analyze_url(url, P, CFG, LIMITS)
            samples.append(time.thread_time() - start)
    quantiles = statistics.quantiles(samples, n=100)
    # Measured ~0.2-0.4 ms median, ~0.5-0.8 ms p99 on a loaded 2-CPU machine; the bound leaves
    # room for CPU contention (shared caches) without hiding a regression to milliseconds.
    assert quantiles[49] * 1000 < 0.75
    assert quantiles[98] * 1000 < 1.5


# ---------------------------------------------------------------- issue 10: context in URLs


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://insure.example.com/q?dob=1987-04-12&zip=94107", "query:date-of-birth"),
        ("https://arzt.example.de/b?geb=12.04.1987", "query:date-of-birth"),
        ("https://visa.example.travel/s?pp=C01X00T47&nat=DEU", "query:passport"),
        (
            "https://d.example.pl/d?n=Jan%20Kowalski&a=ul.%20Lipowa%2012/3%2C%2000-123%20Warszawa",
            "query:name-address",
        ),
        ("https://n.example.com.br/c?doc=50880935278", "query:national-id"),  # CPF, opaque key
        ("https://r.example.pl/w?p=95071771263", "query:national-id"),  # PESEL
        ("https://k.example.in/s?uid=882327950175", "query:national-id"),  # Aadhaar (Verhoeff)
        ("https://b.example.com.tr/k?k=35166267028", "query:national-id"),  # TC Kimlik
        ("https://v.example.fi/v?h=280278-769L", "query:national-id"),  # HETU
        ("https://c.example.sg/q?nric=S7593297I", "query:national-id"),
        ("https://t.example.cl/r?rut=24.843.683-2", "query:national-id"),
    ],
)
def test_personal_data_by_context(url: str, expected: str) -> None:
    assert (Reason.PII_IN_URL.value, expected) in summary(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://www.dhl.com/global-en/home/tracking.html?tracking-id=1234567890&submit=1",
        "https://shop.example.com/p?order=5787939849527",  # a number under a benign key
        "https://docs.example-hub.com/page?id=550e8400-e29b-41d4-a716-446655440000",
        "https://example.com/events?date=2026-12-01",  # a date that is not a birth date
    ],
)
def test_numbers_and_dates_in_context_are_not_pii(url: str) -> None:
    assert Reason.PII_IN_URL not in reasons(url)


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://api.example.com/x?auth=Basic%20c3ZjLWV4cG9ydDpXaW50ZXIyMDI2IQ%3D%3D", "cred"),
        (
            "https://sso.example.com/r?state=" + _b64('{"u": "d.ortega", "p": "Tr0ub4dor&3"}'),
            "cred",
        ),
        (
            "https://s.example.com/d?cookie=session%3D0INoOPDtwiDKkmyEweVcUHuGefeK3iQLU6yTNMu6",
            "cred",
        ),
        (
            "https://r.example.com/?to=https%3A%2F%2Fapp.example.com%2Flogin%3Fuser%3Dana%26pass"
            "%3DQuintal-88",
            "cred",
        ),
        (
            "https://id.example.org/verify-email?t=BfnvXObbO642RXHs2v7o8NtNcxc1B4ynUeS5jsCvXr1",
            "pre",
        ),
        (
            "https://o.example.com/s?ctx=" + _b64('{"name": "Fatima Benali", "dob": "1991-09-03"}'),
            "pii",
        ),
    ],
)
def test_credentials_and_data_in_context(url: str, reason: str) -> None:
    want = {
        "cred": Reason.CREDENTIAL_IN_URL,
        "pre": Reason.PREAUTH_URL,
        "pii": Reason.PII_IN_URL,
    }[reason]
    assert want in reasons(url)


@pytest.mark.parametrize(
    ("redirect", "reason"),
    [
        ("http%3A%2F%2Fcallback.example-app.net%2Fcb", Reason.NON_HTTPS),
        ("https%3A%2F%2F203.0.113.45%2Fcallback", Reason.IP_LITERAL),
        ("https%3A%2F%2F%5B2001%3Adb8%3A%3A7%5D%2Fcb", Reason.IP_LITERAL),
        ("https%3A%2F%2Fg00gle-auth.com%2Fcallback", Reason.CONFUSABLE_HOST),
        ("https%3A%2F%2Fwebhook.site%2F3efd73aa", Reason.CONFUSABLE_HOST),
        ("https%3A%2F%2Fab12.oastify.com%2F", Reason.CONFUSABLE_HOST),
        (
            "https%3A%2F%2Fapp.example.com%2Fcb%3Faccess_token%3Dya29.149UzHbUXauLmVPv5HwGifZ",
            Reason.CREDENTIAL_IN_URL,
        ),
    ],
)
def test_oauth_redirect_uri(redirect: str, reason: Reason) -> None:
    url = f"https://accounts.google.com/o/oauth2/v2/auth?client_id=1&redirect_uri={redirect}"
    assert reason in reasons(url)


@pytest.mark.parametrize(
    "redirect",
    [
        "https%3A%2F%2Fapp.notion-sync.example.com%2Foauth%2Fgoogle",
        "http%3A%2F%2Flocalhost%3A8765%2Fcb",  # native apps: loopback http is the standard
        "http%3A%2F%2F127.0.0.1%3A8765%2Fcb",
        "https%3A%2F%2Fplaylists.example-music.app%2Fcallback",
    ],
)
def test_honest_oauth_redirect_uri(redirect: str) -> None:
    url = f"https://accounts.google.com/o/oauth2/v2/auth?client_id=1&redirect_uri={redirect}"
    assert run(url) == []


def test_login_hint_email_is_pii() -> None:
    url = "https://login.microsoftonline.com/common/oauth2/authorize?login_hint=ana%40example.com"
    assert Reason.PII_IN_URL in reasons(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://www.paypal.com/checkoutnow?token=EC-8AB12345CD678901E",
        "https://www.sandbox.paypal.com/checkoutnow?token=5O190127TN364715T",
        "https://portal.afterpay.com/us/checkout/?token=002.5lmerr2t0o6v9pm3n1bm4qd7e3o2s9k1",
    ],
)
def test_checkout_session_token_on_the_provider_is_allowed(url: str) -> None:
    assert run(url) == []


def test_checkout_token_elsewhere_still_counts() -> None:
    assert Reason.CREDENTIAL_IN_URL in reasons(
        "https://shop.example.com/c?token=002.5lmerr2t0o6v9pm3n1bm4qd7e3o2s9k1"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://bit.ly/3Xq9TmB",
        "https://tinyurl.com/4h8k2p7w",
        "https://lnkd.in/eBx7Q2Z",
        "https://acortalink.me/Zx81q",  # regional shorteners (Spanish, Portuguese, Czech, Korean)
        "https://migre.me/Ab3dE",
        "https://zkr.cz/k9Pq",
        "https://me2.do/5tKqz0",
        "https://grabify.link/R2D2C3",  # an IP logger hides the destination too
    ],
)
def test_shorteners_warn(url: str) -> None:
    """A link shortener hides the destination: its own reason code, low severity (warn)."""
    found = run(url)
    assert found == [Finding(Reason.SHORTENER, P, Severity.LOW, "host")]
    assert found[0].evidence is not None
    assert found[0].evidence.concept == "shortener"
    assert found[0].evidence.signal.startswith("shortener:")
    assert found[0].evidence.signal.removeprefix("shortener:") in url


@pytest.mark.parametrize(
    "url",
    [
        "https://inv-view.example-docs.top/#@paypal.com/invoice/8812",
        "https://kunden.portal-check.site/?next=@sparkasse.de#@sparkasse.de",
    ],
)
def test_misleading_at(url: str) -> None:
    assert (Reason.CONFUSABLE_HOST.value, "misleading-at") in summary(url)


@pytest.mark.parametrize(
    "url", ["https://mastodon.social/@alice", "https://medium.com/@writer/a-post-1a2b3c"]
)
def test_at_handles_are_not_misleading(url: str) -> None:
    assert run(url) == []


@pytest.mark.parametrize(
    "url",
    [
        "https://https://login.example.com/",
        "https://http://portal.example.net/auth",
        "https://https//login.example.com/",  # the colon dropped: the host would be "https"
        "https:https://x.example.com/",
    ],
)
def test_doubled_scheme_is_malformed(url: str) -> None:
    assert run(url) == [Finding(Reason.MALFORMED, P, Severity.HIGH, "doubled-scheme")]


@pytest.mark.parametrize(
    "url",
    [
        "https://accounts.google.com\u2215signin\u2215v2.evil-login.xyz/",
        "https://paypal.com\u2044webapps\u2044mpp.secure-pay.io/",
        "https://www.hsbc.co.uk\u2571login.hsbc-secure.info/",
    ],
)
def test_fake_separators(url: str) -> None:
    assert (Reason.CONFUSABLE_HOST.value, "fake-separator") in summary(url)


def test_request_catcher_subdomains_and_tunnels() -> None:
    url = (
        "https://login.example-idp.com/authorize?client_id=1"
        "&redirect_uri=https%3A%2F%2Fabc.ngrok-free.app%2Fcb"
    )
    assert (Reason.CONFUSABLE_HOST.value, "query:redirect_uri:request-catcher") in summary(url)


def test_capability_token_after_a_magic_path_segment() -> None:
    url = "https://app.example.com/confirm-email/Zx8Kq2LmN4pR7sT1vW3yA5bCdE"
    assert Reason.PREAUTH_URL in reasons(url)


def test_benign_id_keys_are_never_national_ids() -> None:
    assert run("https://shop.example.com/p?id=95071771263") == []  # PESEL-valid, but an id


def test_brand_domain_under_an_unlisted_suffix() -> None:
    assert Reason.CONFUSABLE_HOST in reasons("https://www.amazon.com.evil.example/")


# ---------------------------------------------------------------- credentials and capability keys


@pytest.mark.parametrize(
    "url",
    [
        "https://nas.example.net/login?user=ana&senha=Primavera-2031",  # pt
        "https://vpn.example.org/connect?usuario=jo&contrase%C3%B1a=Otono%2199",  # es, encoded ñ
        "https://mail.example.de/?benutzer=kai&Passwort=Sommer-2030",  # de, capitalised
        "https://erp.example.fr/auth?login=lea&mot_de_passe=soleil-levant",  # fr
        "https://portal.example.pl/in?login=ola&haslo=Zima2029x",  # pl
        "https://panel.example.com.tr/giris?kullanici=efe&sifre=Deniz-4455",  # tr
        "https://router.example.ru/?user=ivan&parol=Vesna-2028",  # ru transliterated
        "https://app.example.com/?admin_pwd=kettle-drum-9",  # a name ending in a password word
        "https://app.example.com/?new-wachtwoord=Tulp-Bloem-3",
    ],
)
def test_password_keys_in_many_languages(url: str) -> None:
    assert Reason.CREDENTIAL_IN_URL in reasons(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://app.example.com/settings?password_length=16",  # a setting about passwords
        "https://travel.example.com/pass?season_pass=annual-2030",  # a pass is not a password
        "https://example.com/help/password-policy?lang=de",
    ],
)
def test_password_words_in_settings_are_not_credentials(url: str) -> None:
    assert Reason.CREDENTIAL_IN_URL not in reasons(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://shop.example.com/cart?PHPSESSID=q3v8m1k0c7t5x2z9r4w6y1b8n0",  # PHP: lower + digits
        "https://intra.example.com/app?ASP.NET_SessionId=k2lq9x0w4vz7mbn3ydf5ha8r",
        "https://intra.example.com/app?connect.sid=s%3AxY7kQ2mN9pL4vR8t.Zq1W3e5R7t9Y2u4I6o8P",
        "https://intra.example.com/app?sess=a8Fq2LmZ9xR4tW7pKc3V",
        "https://intra.example.com/app?sid=9mzk3q7v1x8c2b5n4l6j0h",
        "https://intra.example.com/app?ASPSESSIONIDQACTRDQB=KFNDLMBABMCJEHLPGOMLKCCP7",
    ],
)
def test_session_ids_are_credentials(url: str) -> None:
    assert Reason.CREDENTIAL_IN_URL in reasons(url) or Reason.PREAUTH_URL in reasons(url)


@pytest.mark.parametrize(
    "url", ["https://example.com/docs?sid=intro", "https://example.com/talks?session=keynote-2030"]
)
def test_session_keys_with_words_are_not_credentials(url: str) -> None:
    assert run(url) == []


def test_prefixed_token_under_opaque_key() -> None:
    token = "hf_" + "Q1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXcVb"
    assert Reason.CREDENTIAL_IN_URL in reasons(f"https://app.example.com/cb?ctx={token}")


@pytest.mark.parametrize(
    "url",
    [
        "https://app.example.io/account/confirm?email_verify_token=Zr8TqW2mXc5Vb7Nn1Lp4Ks9D",
        "https://app.example.io/users/password/edit?reset_password_token=Gh7KpQ2wZx9Lm4Vt8RnB",
        "https://app.example.io/verify-email?otp_token=Ye3Rt6Uu9Ii2Oo5Pp8Aa1Ss4Dd7",
        "https://conta.example.com.br/redefinir-senha?t=Pq8Wz2Xc5Vb9Nm3Lk7Jh",  # pt path
        "https://konto.example.de/passwort-zuruecksetzen?k=Lm4Nb8Vc2Xz6Qw9Er3Ty",  # de path
        "https://hesap.example.com.tr/sifre-sifirla?t=Hy6Gt5Fr4De3Sw2Aq1Zx9",  # tr path
    ],
)
def test_reset_and_verify_links_in_many_forms(url: str) -> None:
    assert Reason.PREAUTH_URL in reasons(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://checkout.stripe.com/pay?session_id=cs_test_a1B2c3D4e5F6g7H8i9J0",
        "https://pay.klarna.com/na/hpp/payments?session=1f0b6c2e-9a4d-4f7e-8b3a-2c5d6e7f8a9b",
    ],
)
def test_checkout_session_on_the_provider_is_allowed(url: str) -> None:
    assert Reason.CREDENTIAL_IN_URL not in reasons(url)
    assert Reason.PREAUTH_URL not in reasons(url)


def test_checkout_session_elsewhere_still_counts() -> None:
    url = "https://shop.example.com/pay?session=1f0b6c2e-9a4d-4f7e-8b3a-2c5d6e7f8a9b"
    assert Reason.CREDENTIAL_IN_URL in reasons(url)


# -- third detection round (issue 10): shapes found on a fresh dev set --------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        # a US date of birth (month first) next to a name
        ("https://care.example.in/appointment?first=Fatima&last=Nagy&dob=04%2F17%2F1977",
         Reason.PII_IN_URL),
        ("https://results.example.com/view?patient=Priya%20Sharma&dob=11/20/1955",
         Reason.PII_IN_URL),
        # a passport named as a value inside base64 JSON, its number beside it
        ("https://forms.example.com/to/R8b9?s="
         + _b64('{"doc":"passport","number":"YR8568673","country":"IT"}'), Reason.PII_IN_URL),
        # a Telegram bot token glued to "bot" in the path
        ("https://api.telegram.org/bot8905262318:AAwNYhJz1F9SX5lHLmlkraYrIVR_ZOiZvEe/sendMessage",
         Reason.CREDENTIAL_IN_URL),
        # webhooks: Mattermost's incoming hooks on any server, Slack workflows
        ("https://mattermost.acme-corp.example/hooks/hn6mr8v91dd4k767wupev8pb2v",
         Reason.PREAUTH_URL),
        ("https://hooks.slack.com/workflows/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",
         Reason.PREAUTH_URL),
        # OAuth redirects to a request bin, or to a brand name on a TLD phishing favours
        ("https://www.facebook.com/v19.0/dialog/oauth?client_id=1&redirect_uri="
         + quote("https://hookb.in/mfm50txozrku8cr8gr4l", safe="") + "&response_type=code",
         Reason.CONFUSABLE_HOST),
        ("https://zoom.us/oauth/authorize?client_id=m&redirect_uri="
         + quote("https://slack-app.verify-ws.click/callback", safe="") + "&response_type=code",
         Reason.CONFUSABLE_HOST),
        # a brand beside a machine-generated name on shared hosting
        ("https://coinbase-uurqbl.vercel.app/", Reason.CONFUSABLE_HOST),
    ],
)  # fmt: skip
def test_third_round_url_shapes_block(url: str, reason: Reason) -> None:
    assert reason in {f.reason for f in run(url) if f.severity is Severity.HIGH}


@pytest.mark.parametrize(
    "url",
    [
        "https://forms.example.com/to/R8b9?s=" + _b64('{"page":3,"number":"A12345678"}'),
        "https://calendar.example.com/book?date=04/17/2027",
        "https://coinbase-clone.vercel.app/",  # a user's project name, no kit signs
        # a brand's own host with "@tenant" in the fragment (Azure's portal)
        "https://portal.azure.com/#@contoso.onmicrosoft.com/resource/subscriptions/x/overview",
        # a brand's own top-level domain
        "https://banco.bradesco/html/classic/index.shtm",
        # a payment provider's own checkout page and its payment session
        "https://cpp.iyzipay.com/?token=85353842-c63f-4b9d-8e28-8e3d1b6598ed&lang=tr",
        "https://zoom.us/oauth/authorize?client_id=m&redirect_uri="
        + quote("https://slack-bot.example.com/callback", safe=""),
    ],
)
def test_third_round_look_alikes_stay_clean(url: str) -> None:
    assert not {f for f in run(url) if f.severity is Severity.HIGH}


@pytest.mark.parametrize(
    "url",
    [
        "https://n8n.acme-ops.example/webhook/cf0178a1-eb50-4e48-bf4a-8f1e58aceb4e",
        "https://hook.eu1.make.com/f1z0leq5ywrruwgn31336v3jb9zq8dhu",
        "https://open.feishu.cn/open-apis/bot/v2/hook/7b6c28e8-241e-4163-ad18-1b4703e12862",
        "https://maker.ifttt.com/trigger/door_opened/with/key/zJeDV30q9yXt9KptCjm7DC",
        "https://app.example.es/es/acceso/lyVGvxVwVcW7Vrv9Mj_GYhApJGniAjTjF85NUFqjl0S",
    ],
)
def test_a_random_token_after_a_hook_or_access_segment_is_a_preauthenticated_url(url: str) -> None:
    assert Reason.PREAUTH_URL in reasons(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.n8n.example/webhook/getting-started",
        "https://developer.example.com/docs/webhooks/retries-and-timeouts",
        "https://hooks.example.com/blog/2026/release-notes",
        "https://app.example.es/es/acceso/ayuda",
    ],
)
def test_hook_and_access_segments_followed_by_words_are_ordinary(url: str) -> None:
    assert Reason.PREAUTH_URL not in reasons(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://correios-nemc0.workers.dev/card/unlock",
        "https://hsbc-yzvt.workers.dev/session/restore",
        "https://correos-miep.glitch.me/pay",
    ],
)
def test_a_brand_on_shared_hosting_serving_a_lure_page_is_a_phishing_deployment(url: str) -> None:
    assert Reason.CONFUSABLE_HOST in reasons(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://netflix-clone.vercel.app/",  # a developer's project page
        "https://spotify-stats.netlify.app/about",
    ],
)
def test_a_brand_on_shared_hosting_without_a_lure_page_only_resembles(url: str) -> None:
    assert Reason.CONFUSABLE_HOST not in reasons(url)
