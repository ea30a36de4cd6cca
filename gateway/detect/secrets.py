"""Live-looking secret values in any text: provider tokens, private keys, JWTs, key=value secrets.

The rule *ideas* (which providers, which prefixes, which lengths, keyword prefilters, entropy
floors) follow gitleaks (https://github.com/gitleaks/gitleaks, ``cmd/generate/config/rules``,
MIT licence, Copyright (c) 2019 Zachary Rice) and the public token-format documentation of each
provider; the regular expressions below were written for this project, for RE2 (linear time).

How a text is scanned:

1. invisible characters are removed and non-ASCII text NFKC-normalised (a fullwidth or
   zero-width-split token is still a token);
2. a keyword prefilter picks the rules worth running (gitleaks' idea; plain substring tests);
3. each selected rule runs its RE2 pattern; some add an entropy floor or a structural validator
   (a JWT's header and payload must decode to JSON objects);
4. the same happens on bounded decodings of the text (``decode_layers``): a finding there has
   ``+encoded`` appended to its rule id.

Documented example credentials (``AKIAIOSFODNN7EXAMPLE``) count: a server that pastes them into a
form is either careless or probing, and there is no legitimate reason to show a user one.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import re2

from gateway.detect.findings import Finding, Reason, Severity
from gateway.detect.normalize import decode_layers, strip_invisible

__all__ = ["RULES", "Rule", "scan_secrets", "shannon_entropy"]


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value`` (0.0 for an empty string)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _b64url_json(segment: str) -> object:
    if len(segment) > 65_536:
        return None
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        return json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        return None


def _valid_jwt(match: re2._Match) -> bool:
    header, payload = match.group(0).split(".")[:2]
    head = _b64url_json(header)
    body = _b64url_json(payload)
    return isinstance(head, dict) and ("alg" in head or "typ" in head) and isinstance(body, dict)


_NOT_SECRET_KEY = re2.compile(
    r"(?i)(?:id|ids|name|type|url|uri|endpoint|file|path|count|length|size|version|format|hint"
    r"|prefix|label|field|column|header|policy|expiry|expires|ttl|usage|limit|max|min)$"
)
_PLACEHOLDER = re2.compile(
    r"(?i)x{5,}|\*{4,}|\.{4,}|(?:your|my|the)[_-]|example|placeholder|redacted"
)


_IDENTIFIER = re2.compile(r"[a-z][a-z0-9]*(?:[_.\-][a-z0-9]+)+")
_KEY_PARTS = (
    "api",
    "access",
    "auth",
    "client",
    "secret",
    "token",
    "passw",
    "pwd",
    "credential",
    "private",
    "key",
    "bearer",
    "session",
)
_NOT_SECRET_PARTS = frozenset({"public", "primary", "foreign", "sort", "partition", "csrf", "xsrf"})
_KEY_SPLIT = re2.compile(r"[_.\-]+")


def _secret_key_name(key: str) -> bool:
    """Is ``key`` (``client_secret``, ``apiKey``) a secret's name (not ``monkey``, ``key_id``)?"""
    key = key.strip("\"'_.- ")
    parts = [p for p in _KEY_SPLIT.split(key.lower()) if p]
    if not parts or _NOT_SECRET_KEY.search(key) or not _NOT_SECRET_PARTS.isdisjoint(parts):
        return False
    return any(p.startswith(_KEY_PARTS) for p in parts)


def _mixed_value(match: re2._Match) -> bool:
    value = match.group(1) or ""
    has_digit = any(c.isdigit() for c in value)
    return has_digit and any(c.isalpha() for c in value) and shannon_entropy(value) >= 3.5


def _generic_value_ok(match: re2._Match) -> bool:
    key, value = match.group(1) or "", match.group(2) or ""
    if not _secret_key_name(key):
        return False
    if _PLACEHOLDER.search(value) or value.startswith(("${", "{{", "<", "%")):
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    if value.isdigit() or len(set(value)) < 8:
        return False
    if _IDENTIFIER.fullmatch(value) and sum(c.isdigit() for c in value) <= 2:
        return False  # "oauth2_client_credentials", "my-service-account-01": names, not secrets
    is_hex = all(c in "0123456789abcdefABCDEF" for c in value)
    return shannon_entropy(value) >= (3.0 if is_hex else 3.5)


@dataclass(frozen=True, slots=True)
class Rule:
    """One secret format. ``keywords`` are lower-case substrings; the rule runs only if one is in
    the text. ``group`` is the capture group holding the secret (for the entropy floor)."""

    id: str
    keywords: tuple[str, ...]
    pattern: str
    entropy: float = 0.0
    group: int = 0
    validate: Callable[[re2._Match], bool] | None = None


_B62 = "0-9A-Za-z"
_TOK = "0-9A-Za-z_\\-"

RULES: tuple[Rule, ...] = (
    # Cloud providers
    Rule("aws-access-key-id", ("akia", "asia", "abia", "acca", "a3t"),
         r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"),
    Rule("aws-secret-access-key", ("aws",),
         r"(?i)aws.{0,20}?(?:secret|sk|key).{0,20}?[=:>\"'\s]{1,4}([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)",
         entropy=3.5, group=1),
    Rule("gcp-api-key", ("aiza",), rf"\bAIza[{_TOK}]{{35}}\b"),
    Rule("google-oauth-access-token", ("ya29.",), rf"\bya29\.[{_TOK}]{{20,}}"),
    Rule("azure-storage-account-key", ("accountkey",),
         r"(?i)accountkey\s*=\s*[A-Za-z0-9+/]{86}=="),
    Rule("azure-ad-client-secret", ("q~",),
         r"(?:^|[\s'\"`=:(])([A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})(?:$|[\s'\"`;),])",
         group=1),
    Rule("digitalocean-token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    Rule("databricks-token", ("dapi",), r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b"),
    Rule("heroku-api-key", ("hrku-",), rf"\bHRKU-AA[{_TOK}]{{58}}\b"),
    # Code hosting and package registries
    Rule("github-pat", ("ghp_",), rf"\bghp_[{_B62}]{{36}}\b"),
    Rule("github-oauth-token", ("gho_",), rf"\bgho_[{_B62}]{{36}}\b"),
    Rule("github-app-token", ("ghu_", "ghs_"), rf"\b(?:ghu|ghs)_[{_B62}]{{36}}\b"),
    Rule("github-refresh-token", ("ghr_",), rf"\bghr_[{_B62}]{{36}}\b"),
    Rule("github-fine-grained-pat", ("github_pat_",), rf"\bgithub_pat_[{_B62}_]{{82}}\b"),
    Rule("gitlab-pat", ("glpat-",), rf"\bglpat-[{_TOK}.]{{20,}}"),
    Rule("gitlab-pipeline-trigger-token", ("glptt-",), r"\bglptt-[0-9a-f]{40}\b"),
    Rule("gitlab-runner-token", ("glrt-",), rf"\bglrt-[{_TOK}]{{20,}}"),
    Rule("npm-access-token", ("npm_",), r"(?i)\bnpm_[a-z0-9]{36}\b"),
    Rule("pypi-upload-token", ("pypi-ageichlwas5vcmc",), rf"pypi-AgEIcHlwaS5vcmc[{_TOK}]{{50,}}"),
    Rule("atlassian-api-token", ("atatt3",), r"\bATATT3[A-Za-z0-9_\-=]{150,}"),
    Rule("postman-api-token", ("pmak-",), r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    Rule("pulumi-api-token", ("pul-",), r"\bpul-[a-f0-9]{40}\b"),
    Rule("linear-api-key", ("lin_api_",), rf"\blin_api_[{_B62}]{{40}}\b"),
    Rule("doppler-api-token", ("dp.pt.",), r"(?i)\bdp\.pt\.[a-z0-9]{43}\b"),
    # gitleaks writes [a-zA-Z]{34}; tokens issued today mix in digits
    Rule("huggingface-access-token", ("hf_",), rf"\bhf_[{_B62}]{{34}}\b"),
    Rule("huggingface-org-token", ("api_org_",), rf"\bapi_org_[{_B62}]{{34}}\b"),
    # AI providers
    Rule("openai-api-key", ("t3blbkfj",),
         rf"\bsk-(?:proj-|svcacct-|admin-)?[{_TOK}]{{20,}}T3BlbkFJ[{_TOK}]{{20,}}"),
    Rule("anthropic-api-key", ("sk-ant-",), rf"\bsk-ant-[a-z0-9]{{2,10}}-[{_TOK}]{{80,}}"),
    # Messaging, payments, e-mail
    Rule("slack-bot-token", ("xoxb-",), rf"\bxoxb-[0-9]{{10,13}}-[0-9]{{10,13}}[{_TOK}]*"),
    Rule("slack-user-token", ("xoxp-", "xoxe-"),
         r"\bxox[pe](?:-[0-9]{10,13}){3}-[0-9A-Za-z\-]{28,34}"),
    Rule("slack-app-token", ("xapp-",), r"(?i)\bxapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+"),
    Rule("slack-legacy-token", ("xoxo-", "xoxs-", "xoxa-", "xoxr-"),
         r"\bxox[osar]-[0-9]+-[0-9A-Za-z\-]{10,}"),
    Rule("slack-webhook-url", ("hooks.slack.com",),
         r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+\-]{20,}"),
    Rule("discord-webhook-url", ("discord",),
         rf"(?i)discord(?:app)?\.com/api/webhooks/[0-9]{{17,20}}/[{_TOK}]{{60,}}"),
    Rule("telegram-bot-token", (":aa",), rf"(?:^|[^0-9])[0-9]{{8,10}}:AA[{_TOK}]{{33}}\b"),
    Rule("stripe-access-token", ("sk_live", "sk_test", "sk_prod", "rk_live", "rk_test", "rk_prod"),
         rf"\b(?:sk|rk)_(?:live|test|prod)_[{_B62}]{{10,99}}\b"),
    Rule("square-access-token", ("sq0atp-", "sq0csp-"), rf"\bsq0(?:atp|csp)-[{_TOK}]{{22,60}}\b"),
    Rule("twilio-api-key", ("sk",), r"\bSK[0-9a-fA-F]{32}\b"),
    Rule("sendgrid-api-token", ("sg.",), rf"\bSG\.[{_TOK}]{{22}}\.[{_TOK}]{{43}}\b"),
    Rule("mailchimp-api-key", ("-us",), r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    Rule("mailgun-private-api-token", ("key-",), r"\bkey-[0-9a-f]{32}\b"),
    Rule("facebook-access-token", ("eaam", "eaac"), r"\bEAA[MC][A-Za-z0-9]{100,}"),
    Rule("shopify-token", ("shpat_", "shpca_", "shppa_", "shpss_"),
         r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    Rule("grafana-cloud-token", ("glc_",), r"\bglc_[A-Za-z0-9+/]{32,400}={0,2}"),
    Rule("grafana-service-account-token", ("glsa_",), r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b"),
    Rule("newrelic-user-api-key", ("nrak-",), r"\bNRAK-[A-Z0-9]{27}\b"),
    # Keys and structured tokens
    Rule("private-key", ("private key",),
         r"-----BEGIN[ A-Z0-9_\-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
         r"[\s\S]{0,300}?[A-Za-z0-9+/=]{64}"),
    Rule("age-secret-key", ("age-secret-key-1",),
         r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    Rule("jwt", ("eyj",), rf"\beyJ[{_TOK}]{{10,}}\.eyJ[{_TOK}]{{10,}}\.[{_TOK}]*",
         validate=_valid_jwt),
    Rule("url-credentials", ("://",),
         r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@]{1,64}:[^\s:/@]{3,128}@[a-z0-9.\-\[]"),
    Rule("bearer-token", ("bearer",), r"(?i)\bbearer\s+([A-Za-z0-9_.~+/\-]{20,}=*)", group=1,
         validate=_mixed_value),
    Rule("generic-api-key",
         ("api", "access", "auth", "client", "secret", "token", "passw", "pwd", "credential",
          "private", "key"),
         r"(?i)(?:^|[^a-z0-9_.\-])([a-z0-9_.\-]{0,30}?"
         r"(?:api|access|auth|client|secret|token|passw(?:or)?d|pwd|credential|private|key)"
         r"[a-z0-9_.\-]{0,25})[\"']?\s{0,5}(?::=|=>|->|:|=)\s{0,5}[\"']?([A-Za-z0-9_.+/~=\-]{16,200})",
         validate=_generic_value_ok),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Compiled:
    rule: Rule
    regex: re2._Regexp


def _compile() -> tuple[tuple[_Compiled, ...], dict[str, tuple[int, ...]]]:
    compiled = tuple(_Compiled(r, re2.compile(r.pattern)) for r in RULES)
    by_kw: dict[str, list[int]] = {}
    for i, rule in enumerate(RULES):
        for kw in rule.keywords:
            by_kw.setdefault(kw, []).append(i)
    return compiled, {k: tuple(v) for k, v in by_kw.items()}


_COMPILED, _BY_KEYWORD = _compile()
# One linear pass answers "is any keyword here?" before the per-keyword substring tests.
_ANY_KEYWORD = re2.compile(
    "(?i)" + "|".join(re2.escape(k) for k in sorted(_BY_KEYWORD, key=len, reverse=True))
)
_MAX_CANDIDATES = 4096  # regex matches checked per rule and text (64 KiB of params holds fewer)


def _selected(text: str) -> list[_Compiled]:
    """Rules with a keyword in ``text``: plain substring tests on the lower-cased text, which
    cost far less than a regex pass with one Python object per keyword occurrence."""
    if _ANY_KEYWORD.search(text) is None:
        return []
    lowered = text.lower()
    indexes = {i for kw, rules in _BY_KEYWORD.items() if kw in lowered for i in rules}
    return [_COMPILED[i] for i in sorted(indexes)]


def _matches(c: _Compiled, text: str) -> bool:
    for n, m in enumerate(c.regex.finditer(text)):
        if n >= _MAX_CANDIDATES:
            break
        if c.rule.entropy and shannon_entropy(m.group(c.rule.group) or "") < c.rule.entropy:
            continue
        if c.rule.validate is not None and not c.rule.validate(m):
            continue
        return True
    return False


def rule_ids(text: str) -> list[str]:
    """Ids of the rules that find a secret in ``text`` itself (no decoding)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", strip_invisible(text))
    return [c.rule.id for c in _selected(text) if _matches(c, text)]


def scan_secrets(text: str, path: str, *, decode_depth: int = 2) -> list[Finding]:
    """Findings (``secret-value``, HIGH) for every rule that matches ``text`` or a decoding of it.

    ``detail`` is the rule id, suffixed ``+encoded`` when only a decoded layer matched.
    """
    seen: dict[str, None] = {}
    layers: Sequence[str] = decode_layers(text, decode_depth) if decode_depth > 0 else [text]
    for n, layer in enumerate(layers):
        suffix = "" if n == 0 else "+encoded"
        for rule_id in rule_ids(layer):
            if rule_id not in seen and (not suffix or rule_id + suffix not in seen):
                seen[rule_id + suffix] = None
    plain = {k for k in seen if not k.endswith("+encoded")}
    return [
        Finding(Reason.SECRET_VALUE, path, Severity.HIGH, detail)
        for detail in seen
        if not (detail.endswith("+encoded") and detail.removesuffix("+encoded") in plain)
    ]
