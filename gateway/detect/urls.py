"""URL-mode analysis: what the browser would open, and what the URL carries.

``analyze_url(url, path, cfg, limits)`` parses like a browser (WHATWG, ``ada_url``) and reports, in
order: OVERSIZE (then stops), INVISIBLE_CHARS, MALFORMED (then stops), BAD_SCHEME (then stops),
NON_HTTPS, USERINFO, the host checks of ``gateway.detect.hosts.check_host``, pre-authenticated URL
families (PREAUTH_URL), credential-bearing keys (CREDENTIAL_IN_URL), PII (PII_IN_URL) and secrets
(CREDENTIAL_IN_URL) in path segments, query and fragment, also behind extra encodings
(ENCODED_PAYLOAD in addition). Findings carry the caller's ``path`` and a value-free ``detail``
(``"query:token"``, ``"path"``, ``"fragment:access_token"``, ``"host"``).

Decisions (documented in the tests):

* The value a server receives after the one round of URL percent-decoding is the *plain* value;
  ENCODED_PAYLOAD means PII or a secret showed up only after a further layer (percent again,
  base64/base64url, hex), at most ``limits.decode_depth`` layers.
* Sensitive keys need a non-trivial value: empty, shorter than 4 characters or a placeholder
  (``true``, ``null``…) is not a credential. Ambiguous keys (``code``, ``key``, ``sig``,
  ``signature``, ``auth``, ``session``, ``sid``, ``token``) need a random-looking value (see
  ``_token_like``): ``?signature=ed25519`` on a docs page and ``?code=python`` are fine.
* Safe keys (``client_id``, ``state``, ``redirect_uri``, ``elicitationId``, ``user_code``…) skip
  key-name and secret-format rules (a JWT ``state`` is normal) but are still scanned for PII.
* Parameter names appear in ``detail`` only when they look like identifiers; a key that itself
  carries PII or a secret is reported as ``query-key`` / ``fragment-key``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import importlib
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, unquote_plus

import ada_url
import regex

from gateway.detect.config import Limits, UrlConfig
from gateway.detect.findings import Finding, Reason, Severity
from gateway.detect.hosts import LOOPBACK_HOSTS, check_host, registrable_domain
from gateway.detect.pii import find_pii

_SAFE_KEYS: Final = frozenset(
    {
        "elicitationid", "elicitation_id", "state", "nonce", "client_id", "scope",
        "response_type", "response_mode", "redirect_uri", "code_challenge",
        "code_challenge_method", "user_code", "prompt", "login_hint", "audience", "resource",
        "ui_locales", "display", "max_age", "acr_values", "claims", "request_uri",
    }
)  # fmt: skip
# Keys whose presence with a non-trivial value means a credential travels in the URL.
_CREDENTIAL_KEYS: Final = frozenset(
    {
        "password", "passwd", "pwd", "pass", "passphrase", "secret", "client_secret", "api_key",
        "apikey", "api-key", "x-api-key", "access_key", "secret_key", "private_key", "jwt", "otp",
        "totp", "mfa_code", "pin", "auth_token", "authtoken", "bearer", "credentials",
        "x-amz-security-token", "security_token", "webhook_secret",
    }
)  # fmt: skip
# Keys that carry pre-authenticated or capability material (log-in without credentials).
_PREAUTH_KEYS: Final = frozenset(
    {
        "access_token", "id_token", "refresh_token", "oobcode", "magic", "magic_token",
        "magic_link", "reset_token", "reset", "login_token", "sessionid", "session_id",
        "jsessionid", "phpsessid", "aspsessionid", "sessiontoken", "session_token", "ticket",
        "one_time_token", "invite_token", "confirmation_token", "verification_token",
    }
)  # fmt: skip
# Ambiguous keys: only a token-like value counts.
_AMBIGUOUS_KEYS: Final = frozenset(
    {"code", "key", "sig", "signature", "auth", "session", "sid", "token", "state_token"}
)
_PLACEHOLDERS: Final = frozenset(
    {"true", "false", "null", "none", "undefined", "yes", "no", "on", "off", "xxx", "****"}
)
_PREAUTH_FAMILIES: Final[tuple[tuple[str, frozenset[str], frozenset[str]], ...]] = (
    # (detail, keys that alone identify the family, keys that must all be present)
    ("aws-sigv4", frozenset({"x-amz-signature", "x-amz-credential"}), frozenset()),
    ("aws-sigv2", frozenset(), frozenset({"awsaccesskeyid", "signature"})),
    ("gcs-v4", frozenset({"x-goog-signature", "x-goog-credential"}), frozenset()),
    ("gcs-v2", frozenset(), frozenset({"googleaccessid", "signature"})),
    ("azure-sas", frozenset(), frozenset({"sv", "sig"})),
    ("cloudfront", frozenset(), frozenset({"signature", "key-pair-id"})),
)
_MAGIC_SEGMENTS: Final = frozenset(
    {
        "magic", "magic-link", "magiclink", "magic_link", "reset", "reset-password",
        "password-reset", "reset_password", "passwordreset", "login", "signin", "sign-in",
        "verify", "confirm", "activate", "invite", "invitation", "auth", "token", "callback",
        "one-time-login", "passwordless", "sso",
    }
)  # fmt: skip
_IDENT_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-\[\]]{0,39}")
_JWT: Final = re.compile(
    r"eyJ[A-Za-z0-9_\-]{4,4096}\.eyJ[A-Za-z0-9_\-]{4,8192}\.[A-Za-z0-9_\-]{0,4096}"
)
_BASE64: Final = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_HEX: Final = re.compile(r"(?:[0-9a-fA-F]{2}){16,}")
_TOKEN_PREFIXES: Final = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{40,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}|sk-ant-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9_\-]{20,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}|glpat-[A-Za-z0-9_\-]{20}"
    r"|(?:sk|rk)_live_[A-Za-z0-9]{16,}|ya29\.[A-Za-z0-9_\-]{20,})"
)
_WEBHOOK_HOSTS: Final = {
    "hooks.slack.com": re.compile(r"/services/[^/]+/[^/]+/[^/]+"),
    "discord.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "discordapp.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "ptb.discord.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "canary.discord.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "hooks.zapier.com": re.compile(r"/hooks/catch/[^/]+/[^/]+"),
}
_C0_OR_SPACE: Final = "".join(map(chr, range(0x21)))  # trimmed by WHATWG before parsing
_MIN_SECRET_LEN: Final = 8  # no provider token or JWT is shorter
_INVISIBLE: Final = regex.compile(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]")


@dataclass(frozen=True, slots=True)
class UrlFacts:
    """Value-free facts about a URL for the audit log: never the path, query or fragment."""

    scheme: str
    host: str  # canonical A-label host or IP ("" for schemes without a host)
    registrable_domain: str | None
    is_ip: bool
    is_loopback: bool


def _parse(url: str) -> ada_url.URL | None:
    try:
        return ada_url.URL(url)
    except (ValueError, TypeError, UnicodeError):
        return None


def url_facts(url: str) -> UrlFacts | None:
    """Scheme, canonical host and registrable domain of a URL, or None if it does not parse."""
    parsed = _parse(url)
    if parsed is None:
        return None
    host = str(parsed.hostname).lower()
    is_ip = int(parsed.host_type) != 0
    return UrlFacts(
        scheme=str(parsed.protocol).rstrip(":"),
        host=host,
        registrable_domain=None if is_ip or not host else registrable_domain(host),
        is_ip=is_ip,
        is_loopback=host in LOOPBACK_HOSTS,
    )


# ---------------------------------------------------------------- raw view


def _raw_authority(url: str) -> str | None:
    """The authority as a naive reader sees it: after ``scheme://``, up to ``/ ? #`` (backslash
    is *not* a separator here, unlike in the browser). None when there is no ``//``."""
    text = url.strip(_C0_OR_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    colon = text.find(":")
    if colon < 0 or not text[colon + 1 :].startswith("//"):
        return None
    rest = text[colon + 3 :]
    end = len(rest)
    for sep in "/?#":
        i = rest.find(sep)
        if 0 <= i < end:
            end = i
    return rest[:end]


def _raw_host(authority: str) -> str:
    host = authority.rsplit("@", 1)[-1]
    if host.startswith("["):
        close = host.find("]")
        return host[: close + 1] if close >= 0 else host
    return host.rsplit(":", 1)[0] if ":" in host else host


# ---------------------------------------------------------------- value scanning


def _printable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text or sum(c.isprintable() for c in text) < 0.9 * len(text):
        return None
    return text


def _decode_layers(text: str) -> Iterator[str]:
    """One further decoding of ``text``: percent (if any %XX left), base64/base64url, hex."""
    if re.search(r"%[0-9A-Fa-f]{2}", text):
        yield unquote(text)
    if " " in text and "+" not in text:  # form decoding turned base64 "+" into spaces
        text = text.replace(" ", "+")
    for m in _BASE64.finditer(text):
        chunk = m.group().rstrip("=")
        if len(chunk) % 4 == 1:
            continue
        padded = chunk + "=" * (-len(chunk) % 4)
        try:
            raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            continue
        decoded = _printable(raw)
        if decoded is not None:
            yield decoded
    for m in _HEX.finditer(text):
        decoded = _printable(bytes.fromhex(m.group()))
        if decoded is not None:
            yield decoded


def _jwt_like(text: str) -> bool:
    """A structurally valid JWT/JWS: base64url JSON header with ``alg`` and JSON payload."""
    for m in _JWT.finditer(text):
        header_b64 = m.group().split(".", 1)[0]
        try:
            header = json.loads(base64.urlsafe_b64decode(header_b64 + "=" * (-len(header_b64) % 4)))
        except (ValueError, binascii.Error):
            continue
        if isinstance(header, dict) and "alg" in header:
            return True
    return False


def _own_secret(text: str) -> bool:
    return _TOKEN_PREFIXES.search(text) is not None or _jwt_like(text)


def _shared_scanner() -> Callable[..., list[Finding]] | None:
    """The form helper's ``gateway.detect.secrets.scan_secrets``, if present (imported lazily)."""
    try:
        module = importlib.import_module("gateway.detect.secrets")
    except ImportError:
        return None
    scanner = getattr(module, "scan_secrets", None)
    return scanner if callable(scanner) else None


def _has_secret(text: str, path: str) -> bool:
    if len(text) < _MIN_SECRET_LEN:
        return False
    if _own_secret(text):
        return True
    scanner = _shared_scanner()
    if scanner is None:
        return False
    return bool(scanner(text, path, decode_depth=0))


@dataclass(slots=True)
class _Scan:
    """What one value revealed: PII kinds and secrets, plainly and behind extra encodings."""

    pii: set[str] = dataclasses.field(default_factory=set)
    secret: bool = False
    encoded: bool = False


def _scan_value(text: str, path: str, depth: int, *, secrets: bool) -> _Scan:
    out = _Scan()
    layer = [text]
    for level in range(depth + 1):
        found_here = False
        for value in layer:
            kinds = find_pii(value)
            secret = secrets and _has_secret(value, path)
            if kinds or secret:
                found_here = True
                out.pii.update(kinds)
                out.secret = out.secret or secret
        if found_here:
            out.encoded = out.encoded or level > 0
            return out
        if level == depth:
            break
        layer = [d for v in layer for d in _decode_layers(v)][:16]
        if not layer:
            break
    return out


def _token_like(value: str) -> bool:
    """Random-looking: no spaces, ≥ 3 bits of entropy per character, and either ≥ 12 characters
    mixing lower, upper and digits, or ≥ 16 characters of which at least a fifth are digits or
    capitals (hex digests, base64url). ``ed25519``, ``v4-explained`` and ``2024-report`` are not."""
    if len(value) < 12 or any(c.isspace() for c in value) or _entropy(value) < 3.0:
        return False
    lower = sum(c.islower() for c in value)
    upper = sum(c.isupper() for c in value)
    digits = sum(c.isdigit() for c in value)
    if lower and upper and digits:
        return True
    return len(value) >= 16 and (upper + digits) >= len(value) / 5


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


# ---------------------------------------------------------------- URL parts


@functools.lru_cache(maxsize=4096)
def _norm_key(key: str) -> str:
    return unicodedata.normalize("NFKC", key).casefold().strip().removesuffix("[]")


def _split_pairs(text: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for part in text.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        pairs.append((unquote_plus(key), unquote_plus(value)))
    return pairs


def _fragment_pairs(fragment: str) -> list[tuple[str, str]]:
    """Key/value pairs of an implicit-flow fragment (``#access_token=…``) or of the query part of
    a hash route (``#/cb?code=…``); a plain anchor (``#section-2``) has none."""
    if "?" in fragment:
        fragment = fragment.split("?", 1)[1]
    return _split_pairs(fragment) if "=" in fragment else []


def _detail_key(part: str, key: str) -> str:
    return f"{part}:{key}" if _IDENT_KEY.fullmatch(key) and not find_pii(key) else part


class _Analysis:
    """Collects findings for one URL; every finding carries the caller's path."""

    def __init__(self, path: str, cfg: UrlConfig, limits: Limits) -> None:
        self.path = path
        self.cfg = cfg
        self.depth = max(0, limits.decode_depth)
        self.findings: list[Finding] = []
        self.safe = _SAFE_KEYS | {_norm_key(k) for k in cfg.safe_query_keys}
        self.strong = _CREDENTIAL_KEYS | {_norm_key(k) for k in cfg.sensitive_query_keys}

    def add(self, reason: Reason, detail: str, severity: Severity = Severity.HIGH) -> None:
        finding = Finding(reason, self.path, severity, detail)
        if finding not in self.findings:
            self.findings.append(finding)

    def scan(self, text: str, detail: str, *, secrets: bool = True) -> None:
        if not text:
            return
        result = _scan_value(text, self.path, self.depth, secrets=secrets)
        for kind in sorted(result.pii):
            self.add(Reason.PII_IN_URL, f"{detail}:{kind}")
        if result.secret:
            self.add(Reason.CREDENTIAL_IN_URL, detail)
        if result.encoded:
            self.add(Reason.ENCODED_PAYLOAD, detail)

    def scan_host(self, host: str) -> None:
        """PII smuggled in host labels (``jane-doe-536-90-1234.evil.example``)."""
        for kind in find_pii(host.replace(".", " ")):
            self.add(Reason.PII_IN_URL, f"host:{kind}")

    def key_rules(self, part: str, key: str, value: str) -> None:
        nkey = _norm_key(key)
        if nkey in self.safe:
            return
        alt = nkey.replace("-", "_")
        trivial = len(value) < 4 or value.casefold() in _PLACEHOLDERS
        if trivial:
            return
        detail = _detail_key(part, key)
        if nkey in _PREAUTH_KEYS or alt in _PREAUTH_KEYS:
            self.add(Reason.PREAUTH_URL, detail)
        elif nkey in self.strong or alt in self.strong:
            self.add(Reason.CREDENTIAL_IN_URL, detail)
        elif nkey in _AMBIGUOUS_KEYS and _token_like(value):
            reason = Reason.PREAUTH_URL if nkey == "code" else Reason.CREDENTIAL_IN_URL
            self.add(reason, detail)

    def pairs(self, part: str, pairs: list[tuple[str, str]]) -> None:
        for key, value in pairs:
            nkey = _norm_key(key)
            safe = nkey in self.safe
            if not _IDENT_KEY.fullmatch(key):
                before = len(self.findings)
                self.scan(key, f"{part}-key")
                if len(self.findings) > before:
                    continue
            self.key_rules(part, key, value)
            self.scan(value, _detail_key(part, key), secrets=not safe)

    def preauth_families(self, keys: set[str]) -> None:
        for detail, any_of, all_of in _PREAUTH_FAMILIES:
            if (any_of and keys & any_of) or (all_of and all_of <= keys):
                self.add(Reason.PREAUTH_URL, detail)

    def path_segments(self, host: str, pathname: str) -> None:
        pattern = _WEBHOOK_HOSTS.get(host)
        if pattern is not None and pattern.match(pathname):
            self.add(Reason.PREAUTH_URL, "webhook")
        if host.endswith(".webhook.office.com") and "/webhookb2/" in pathname:
            self.add(Reason.PREAUTH_URL, "webhook")
        segments = [unquote(s) for s in pathname.split("/") if s]
        previous = ""
        for segment in segments:
            lowered = segment.casefold()
            if ";jsessionid=" in lowered or ";sessionid=" in lowered:
                self.add(Reason.PREAUTH_URL, "path:session")
            if previous in _MAGIC_SEGMENTS and _capability_token(segment):
                self.add(Reason.PREAUTH_URL, "path:magic-link")
            self.scan(segment, "path")
            previous = lowered


def _capability_token(segment: str) -> bool:
    """A path segment that looks like a bearer capability: JWT-shaped, or ≥ 16 characters of
    token alphabet with high entropy (a UUID-like random string)."""
    if _jwt_like(segment):
        return True
    if len(segment) < 16 or not re.fullmatch(r"[A-Za-z0-9_\-.=~]+", segment):
        return False
    return _token_like(segment) and _entropy(segment) >= 3.0


def _invisible(url: str) -> bool:
    return _INVISIBLE.search(url) is not None


def _scheme_findings(a: _Analysis, scheme: str, host: str) -> bool:
    """Scheme checks; True when analysis must stop (not a web URL)."""
    if scheme not in {"http", "https"}:
        a.add(Reason.BAD_SCHEME, "scheme")
        return True
    if scheme not in a.cfg.schemes and not (
        scheme == "http" and a.cfg.dev_loopback_http and host in LOOPBACK_HOSTS
    ):
        a.add(Reason.NON_HTTPS, "scheme")
    return False


def analyze_url(url: str, path: str, cfg: UrlConfig, limits: Limits) -> list[Finding]:
    """All findings for one URL-mode ``url``; never raises on hostile input."""
    a = _Analysis(path, cfg, limits)
    if len(url) > limits.max_url_length:
        a.add(Reason.OVERSIZE, "url")
        return a.findings
    if _invisible(url):
        a.add(Reason.INVISIBLE_CHARS, "url")
    parsed = _parse(url)
    if parsed is None:
        a.add(Reason.MALFORMED, "url")
        return a.findings
    scheme = str(parsed.protocol).rstrip(":")
    host = str(parsed.hostname).lower()
    if _scheme_findings(a, scheme, host):
        return a.findings
    authority = _raw_authority(url)
    if parsed.username or parsed.password or (authority is not None and "@" in authority):
        a.add(Reason.USERINFO, "userinfo")
    for finding in check_host(host, _raw_host(authority or ""), cfg):
        a.add(finding.reason, finding.detail, finding.severity)
    query = str(parsed.search).removeprefix("?")
    query_pairs = _split_pairs(query)
    fragment_pairs = _fragment_pairs(str(parsed.hash).removeprefix("#"))
    if len(query_pairs) + len(fragment_pairs) > limits.max_query_params:
        a.add(Reason.OVERSIZE, "query")
        return a.findings
    if str(parsed.pathname).count("/") > limits.max_query_params:
        a.add(Reason.OVERSIZE, "path")
        return a.findings
    if not int(parsed.host_type):
        a.scan_host(host)
    a.preauth_families({_norm_key(k) for k, _ in query_pairs})
    a.path_segments(host, str(parsed.pathname))
    a.pairs("query", query_pairs)
    a.pairs("fragment", fragment_pairs)
    if not fragment_pairs:
        a.scan(unquote(str(parsed.hash).removeprefix("#")), "fragment")
    return a.findings
