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
from gateway.detect.findings import Evidence, Finding, Reason, Severity
from gateway.detect.hosts import (
    LOOPBACK_HOSTS,
    check_host,
    known_brand_domain,
    registrable_domain,
    risky_tld,
    shortener_of,
)
from gateway.detect.pii import find_pii, pii_evidence
from gateway.detect.psl import private_suffix
from gateway.detect.url_pii import bare_national_id, names_an_id, url_pii_kinds

_SAFE_KEYS: Final = frozenset(
    {
        "elicitationid", "elicitation_id", "state", "nonce", "client_id", "scope",
        "response_type", "response_mode", "redirect_uri", "code_challenge",
        "code_challenge_method", "user_code", "prompt", "login_hint", "audience", "resource",
        "ui_locales", "display", "max_age", "acr_values", "claims", "request_uri",
        "fbclid", "gclid", "gbraid", "wbraid", "msclkid", "dclid", "yclid", "igshid", "mc_eid",
        "_hsenc", "_hsmi", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content",
        "utm_id", "ref_src", "hl", "lang", "locale",
    }
)  # fmt: skip
# Keys whose value is a URL the browser is sent on to (OAuth redirects and open redirects).
_REDIRECT_KEYS: Final = frozenset(
    {"redirect_uri", "redirect_url", "redirecturi", "redirecturl", "callback", "callback_url",
     "callbackurl", "return_to", "returnto", "return_url", "returnurl", "post_logout_redirect_uri",
     "next", "continue", "goto", "url", "to", "target", "dest", "destination", "redirect",
     "service", "success_url", "cancel_url", "relaystate", "u", "r", "link"}
)  # fmt: skip
_OAUTH_REDIRECT_KEYS: Final = frozenset(
    {"redirect_uri", "redirect_url", "redirecturi", "callback", "callback_url", "return_to",
     "post_logout_redirect_uri"}
)  # fmt: skip
# Hosts that record whatever is sent to them (request bins, out-of-band interaction catchers,
# public tunnels): an OAuth redirect there hands the code or token to whoever reads the bin.
_REQUEST_CATCHERS: Final = frozenset(
    {"webhook.site", "requestcatcher.com", "pipedream.net", "pipedream.com", "oastify.com",
     "burpcollaborator.net", "beeceptor.com", "requestbin.net", "requestbin.com", "requestbin.io",
     "interact.sh", "interactsh.com", "oast.pro", "oast.live", "oast.site", "oast.online",
     "oast.fun", "oast.me", "hookbin.com", "postb.in", "mockbin.org", "mockbin.io",
     "requestinspector.com", "webhook.cool", "typedwebhook.tools", "canarytokens.com",
     "canarytokens.org", "dnslog.cn", "ceye.io", "xss.ht", "bxss.me", "requestrepo.com",
     "ngrok.io", "ngrok-free.app", "ngrok.app", "ngrok.dev", "loca.lt", "localtunnel.me",
     "serveo.net", "trycloudflare.com", "localhost.run", "lhr.life", "telebit.cloud",
     "smee.io", "hooks.zapier.com", "ptsv2.com", "ptsv3.com", "httpdump.app", "webhook.net",
     "putsreq.com", "reqbin.com", "mocky.io", "requestbin.fullcontact.com", "pinggy.link",
     "free.pinggy.link", "tunnelmole.net", "bore.pub", "ssh.surf", "playit.gg", "hookb.in",
     "requestbin.pipedream.net", "webhookinbox.com", "httpbin.org", "beeceptor.io"}
)  # fmt: skip
# Payment providers whose own checkout pages carry the payment session id as ``token``.
_CHECKOUT_DOMAINS: Final = frozenset(
    {"paypal.com", "afterpay.com", "clearpay.co.uk", "stripe.com", "klarna.com", "mollie.com",
     "adyen.com", "adyen.link", "checkout.com", "razorpay.com", "paystack.com", "flutterwave.com",
     "xendit.co", "midtrans.com", "mercadopago.com", "mercadopago.com.br", "mercadopago.com.ar",
     "mercadopago.com.mx", "braintreegateway.com", "squareup.com", "square.link", "sumup.com",
     "payu.com", "payu.in", "iyzico.com", "affirm.com", "sezzle.com", "zip.co", "paddle.com",
     "2checkout.com", "worldpay.com", "authorize.net", "cashfree.com", "instamojo.com",
     "paytm.com", "phonepe.com", "alipay.com", "payoneer.com", "skrill.com", "venmo.com",
     "wise.com", "revolut.com", "lemonsqueezy.com", "fastspring.com", "gocardless.com",
     "yoco.com", "payfast.co.za", "ozow.com", "tap.company", "moyasar.com", "hyperpay.com",
     "paymob.com", "opayweb.com", "globalpay.com", "nuvei.com", "checkout.shopify.com",
     "iyzipay.com", "paytabs.com", "payhere.lk", "dlocal.com", "ebanx.com", "pagseguro.com.br",
     "vivapayments.com", "przelewy24.pl", "payu.pl", "tpay.com", "bambora.com", "nets.eu",
     "nexi.it", "satispay.com", "twint.ch", "billplz.com", "senangpay.my", "paymongo.com",
     "omise.co", "2c2p.com", "toss.im", "tosspayments.com", "kakaopay.com", "paypay.ne.jp"}
)  # fmt: skip
# What a payment provider's own checkout page calls its payment session (LABELLING.md: not a
# credential there).
_CHECKOUT_SESSION_KEYS: Final = frozenset(
    {"token", "session", "session_id", "sessionid", "checkout_session", "checkout_session_id",
     "payment_session", "payment_session_id", "sid", "order_token", "checkout_token"}
)  # fmt: skip
# Keys that are a capability on their own when their value is a long random string.
_CAPABILITY_KEYS: Final = frozenset(
    {"t", "k", "tk", "tok", "key", "token", "auth", "access", "login", "l", "s", "sig", "hash",
     "h", "c", "code", "ticket", "magic", "link", "invite", "verify", "confirm", "activation",
     # "token" / "link" in other languages
     "jeton", "lien", "enlace", "ligacao", "link_acesso", "gettone", "collegamento"}
)  # fmt: skip
_MAGIC_WORDS: Final = (
    "verify", "confirm", "reset", "magic", "login", "signin", "invite", "activate", "passwordless",
    "unlock", "recover", "one-click", "oneclick", "autologin", "auto-login", "sso", "password",
    # the same in other languages: reset / recover / confirm / verify / password
    "redefinir", "recuperar", "restablecer", "restaurar", "senha", "contrasena", "contraseña",
    "passwort", "kennwort", "motdepasse", "mot-de-passe", "wachtwoord", "reinitialiser",
    "réinitialiser", "zuruecksetzen", "zurücksetzen", "bestaetigen", "bestätigen", "verificar",
    "confirmar", "verifier", "vérifier", "valider", "verifica", "conferma", "reimposta",
    "sifirla", "sıfırla", "dogrula", "doğrula", "weryfik", "potwierdz", "resetuj", "haslo",
    "hasło", "herstel", "bevestig", "aktivieren", "ativar", "activar", "attiva",
    "xacminh", "xac-minh", "verifikasi", "konfirmasi", "atur-ulang", "sandi", "parol",
)  # fmt: skip
_DOUBLED_SCHEME: Final = re.compile(  # https://https://host: a scheme where the host should be
    r"[A-Za-z][A-Za-z0-9+.\-]{0,31}:[/\\]*[A-Za-z][A-Za-z0-9+.\-]{0,31}:[/\\]{2}"
)
_MISLEADING_AT: Final = re.compile(
    r"(?:^|[/#?=&;,(])@((?:[A-Za-z0-9\-]{1,63}\.){1,8}[A-Za-z]{2,24})(?![A-Za-z0-9\-])"
)
_BASIC_VALUE: Final = re.compile(r"(?i)\b(?:basic|bearer)\s+[A-Za-z0-9+/_\-.~]{8,}=*")
_COOKIE_VALUE: Final = re.compile(
    r"(?i)(?:^|[;\s])(?:session|sessionid|sid|jsessionid|phpsessid|connect\.sid|auth|token|"
    r"_session|remember_token|laravel_session|csrftoken|__secure-[a-z0-9\-]+)=[A-Za-z0-9%+/_\-.]{12,}"
)
_JSON_SECRET_KEYS: Final = frozenset(
    {"p", "pw", "pwd", "pass", "passwd", "password", "passphrase", "secret", "pin", "otp",
     "token", "access_token", "api_key", "apikey", "client_secret", "private_key", "credentials"}
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
# Words for "password" in many languages and transliterations (a key that is one of them, or
# ends in one: ``user_senha``, ``new-passwort``, ``adminpwd``). ``password_length`` is not.
_PASSWORD_WORDS: Final = frozenset(
    {"password", "passwd", "pwd", "pass", "passw", "pword", "passcode", "passphrase", "senha",
     "contrasena", "contraseña", "contrasenya", "passwort", "kennwort", "motdepasse",
     "mot_de_passe", "mdp", "parol", "parool", "пароль", "haslo", "hasło",
     "sifre", "şifre", "heslo", "geslo", "lozinka", "wachtwoord", "losenord",
     "lösenord", "adgangskode", "passord", "salasana", "jelszo", "jelszó", "jelszava",
     "slaptazodis", "slaptažodis", "parooli", "συνθηματικό", "katasandi",
     "kata_sandi", "matkhau", "mat_khau", "mậtkhẩu", "katalaluan", "kata_laluan",
     "kalimatsir", "kalima_sir", "كلمةالمرور", "كلمة_المرور", "گذرواژه", "סיסמה",
     "sisma", "पासवर्ड", "密码", "密碼", "パスワード", "pasuwado", "비밀번호",
     "bimilbeonho", "รหัสผ่าน", "rahatphan", "құпиясөз", "գաղտնաբառ", "პაროლი",
     "userpass", "user_pass", "userpassword", "loginpass", "login_pass"}
)  # fmt: skip
# Session-cookie names of web frameworks and servers; their value logs the bearer in.
_SESSION_KEYS: Final = frozenset(
    {"sid", "sess", "sessid", "session", "sessionid", "session_id", "session-id", "sessiontoken",
     "session_token", "session_key", "sessionkey", "jsessionid", "phpsessid", "aspsessionid",
     "asp.net_sessionid", "connect.sid", "ci_session", "laravel_session", "_session_id",
     "rack.session", "express.sid", "cfid", "cftoken", "cgisessid", "sessionid_ss",
     "websession", "usersession", "user_session", "auth_session",
     "_forum_session", "beaker.session.id", "play_session", "shiny-session", "sap-contextid",
     "mysapsso2", "wordpress_logged_in", "_shopify_s", "__host-session", "__secure-session"}
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
# A key naming a one-time purpose together with a token word (``reset_password_token``,
# ``otp_token``, ``email_verify_code``): a capability link whatever the path says.
_CAPABILITY_PURPOSES: Final = frozenset(
    {"reset", "recover", "recovery", "verify", "verification", "confirm", "confirmation",
     "activate", "activation", "invite", "invitation", "magic", "login", "signin", "otp",
     "onetime", "one_time", "passwordless", "unlock", "restore", "email", "auth"}
)  # fmt: skip
_CAPABILITY_NOUNS: Final = frozenset({"token", "tok", "code", "key", "hash", "secret", "ticket"})
_KEY_PARTS: Final = re.compile(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])")
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
        # "access" / "sign-in" in other languages, as paths write them
        "acceso", "acesso", "accesso", "acces", "accès", "zugang", "toegang", "dostep",
        "connexion", "anmelden", "entrar", "giris", "vhod", "masuk", "dang-nhap",
    }
)  # fmt: skip
# Path segments after which a random token is the whole credential of a webhook or a keyed
# trigger (n8n "/webhook/<uuid>", Feishu "/bot/v2/hook/<uuid>", IFTTT "/with/key/<key>").
_HOOK_SEGMENTS: Final = frozenset({"webhook", "webhooks", "hook", "hooks", "key", "trigger"})
_HOOK_HOST_LABELS: Final = frozenset({"hook", "hooks", "webhook", "webhooks"})
_IDENT_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-\[\]]{0,39}")
_JWT: Final = re.compile(
    r"eyJ[A-Za-z0-9_\-]{4,4096}\.eyJ[A-Za-z0-9_\-]{4,8192}\.[A-Za-z0-9_\-]{0,4096}"
)
_BASE64: Final = re.compile(r"[A-Za-z0-9+/_\-]{12,}={0,2}")  # 12: nine bytes, an SSN
_HEX: Final = re.compile(r"(?:[0-9a-fA-F]{2}){16,}")
_TOKEN_PREFIXES: Final = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{40,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}|sk-ant-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9_\-]{20,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}|glpat-[A-Za-z0-9_\-]{20}"
    r"|(?:sk|rk)_live_[A-Za-z0-9]{16,}|ya29\.[A-Za-z0-9_\-]{20,})"
)
_WEBHOOK_HOSTS: Final = {
    "hooks.slack.com": re.compile(r"/(?:services|workflows|triggers)/[^/]+/[^/]+/[^/]+"),
    "discord.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "discordapp.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "ptb.discord.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "canary.discord.com": re.compile(r"/api(?:/v\d+)?/webhooks/\d+/[^/]+"),
    "hooks.zapier.com": re.compile(r"/hooks/catch/[^/]+/[^/]+"),
}
_MATTERMOST_HOOK: Final = re.compile(r"/hooks/[a-z0-9]{26}/?")
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


def _json_objects(text: str, depth: int) -> Iterator[dict[str, object]]:
    """JSON objects found in ``text`` as is or behind up to ``depth`` further decodings (base64
    of ``{"u": "d.ortega", "p": "…"}`` in a ``state`` parameter)."""
    layer = [text]
    for _ in range(depth + 1):
        for value in layer:
            stripped = value.strip()
            if stripped.startswith("{") and stripped.endswith("}") and len(stripped) <= 4096:
                try:
                    obj = json.loads(stripped)
                except (ValueError, RecursionError):
                    continue
                if isinstance(obj, dict):
                    yield obj
        layer = [d for v in layer for d in _decode_layers(v)][:16]
        if not layer:
            return


def _flat_pairs(obj: dict[str, object]) -> list[tuple[str, str]]:
    return [(str(k), str(v)) for k, v in list(obj.items())[:64] if isinstance(v, str | int)]


def _nested_url(value: str) -> ada_url.URL | None:
    """A query value that is itself an absolute web URL (a redirect target)."""
    text = value.strip()
    if not text[:8].lower().startswith(("http://", "https://")) or len(text) > 4096:
        return None
    return _parse(text)


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
        self.domain: str | None = None  # registrable domain of the URL's host
        self.magic_path = False  # a path segment says verify / confirm / reset / login …
        self.nested = 0  # depth of redirect-target URLs being analysed
        self.id_context = False  # the request's message speaks of an identity (number)

    def add(
        self,
        reason: Reason,
        detail: str,
        severity: Severity = Severity.HIGH,
        evidence: Evidence | None = None,
    ) -> None:
        finding = Finding(reason, self.path, severity, detail, evidence)
        if finding not in self.findings:
            self.findings.append(finding)

    def scan(self, text: str, detail: str, *, secrets: bool = True) -> None:
        if not text:
            return
        result = _scan_value(text, self.path, self.depth, secrets=secrets)
        part = detail.split(":", 1)[0]
        for kind in sorted(result.pii):
            self.add(Reason.PII_IN_URL, f"{detail}:{kind}", evidence=pii_evidence(kind, part))
        if result.secret:
            self.add(Reason.CREDENTIAL_IN_URL, detail, evidence=_ev("credential-in-url", "secret"))
        if result.encoded:
            self.add(Reason.ENCODED_PAYLOAD, detail, evidence=_ev("encoded-payload", "decoded"))

    def scan_host(self, host: str) -> None:
        """PII smuggled in host labels (``jane-doe-536-90-1234.evil.example``)."""
        for kind in find_pii(host.replace(".", " ")):
            self.add(Reason.PII_IN_URL, f"host:{kind}", evidence=pii_evidence(kind, "host"))

    def key_rules(self, part: str, key: str, value: str) -> None:
        nkey = _norm_key(key)
        if nkey in self.safe:
            return
        alt = nkey.replace("-", "_")
        trivial = len(value) < 4 or value.casefold() in _PLACEHOLDERS
        if trivial:
            return
        detail = _detail_key(part, key)
        if nkey in _CHECKOUT_SESSION_KEYS and self.domain in _CHECKOUT_DOMAINS:
            return  # a payment provider's own checkout page: the payment session id
        # the term is the key as our key lists spell it (the input's key equals it)
        if nkey in _PREAUTH_KEYS or alt in _PREAUTH_KEYS:
            name = nkey if nkey in _PREAUTH_KEYS else alt
            self.add(Reason.PREAUTH_URL, detail, evidence=Evidence("preauth-url", "key", name))
        elif nkey in self.strong or alt in self.strong:
            name = nkey if nkey in self.strong else alt
            evidence = Evidence("credential-in-url", "key", name)
            self.add(Reason.CREDENTIAL_IN_URL, detail, evidence=evidence)
        elif (word := _password_key(nkey)) is not None:
            evidence = Evidence("credential-in-url", "password-key", word)
            self.add(Reason.CREDENTIAL_IN_URL, detail, evidence=evidence)
        elif (cookie := _session_key(nkey)) is not None and (
            _token_like(value) or _session_value(value)
        ):
            evidence = Evidence("credential-in-url", "session-key+session-id", cookie)
            self.add(Reason.CREDENTIAL_IN_URL, detail, evidence=evidence)
        elif nkey in _AMBIGUOUS_KEYS and _token_like(value):
            reason = Reason.PREAUTH_URL if nkey == "code" else Reason.CREDENTIAL_IN_URL
            evidence = Evidence(reason.value, "key+token-like-value", nkey)
            self.add(reason, detail, evidence=evidence)
        elif _purpose_token_key(key) and _capability_value(value):
            evidence = Evidence("preauth-url", "purpose-key+capability", None)
            self.add(Reason.PREAUTH_URL, detail, evidence=evidence)

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
            self.value_rules(part, key, nkey, value)
        for kind in sorted(url_pii_kinds(pairs)):
            self.add(Reason.PII_IN_URL, f"{part}:{kind}", evidence=pii_evidence(kind, part))
        # the same under the key after a further decoding (d=base64 of an identity number)
        # (digits wrapped in base64 are no page number or timestamp, whatever the key: read
        # them as under an opaque key)
        decoded = [
            ("x" if d.strip().isdigit() and not v.strip().isdigit() else k, d)
            for k, v in pairs[:64]
            for d in _decode_layers(v)
            if k and len(v) <= 512
        ]
        found = url_pii_kinds(decoded[:64]) if decoded else set()
        for kind in sorted(found):
            self.add(Reason.PII_IN_URL, f"{part}:{kind}", evidence=pii_evidence(kind, part))
        if found:
            self.add(Reason.ENCODED_PAYLOAD, part, evidence=_ev("encoded-payload", "decoded"))

    def value_rules(self, part: str, key: str, nkey: str, value: str) -> None:
        """What a value says in context: HTTP Basic/Bearer values, cookies, capability tokens,
        JSON objects (also encoded) holding secrets or personal data, redirect targets."""
        if not value:
            return
        detail = _detail_key(part, key)
        if _BASIC_VALUE.search(value) is not None:
            self.add(Reason.CREDENTIAL_IN_URL, detail, evidence=_ev("credential-in-url", "auth"))
        elif _COOKIE_VALUE.search(value) is not None:
            self.add(Reason.CREDENTIAL_IN_URL, detail, evidence=_ev("credential-in-url", "cookie"))
        if (
            nkey in _CAPABILITY_KEYS
            and self.magic_path
            and self.domain not in _CHECKOUT_DOMAINS
            and _capability_value(value)
        ):
            evidence = Evidence("preauth-url", "magic-path+capability-key", nkey)
            self.add(Reason.PREAUTH_URL, detail, evidence=evidence)
        for obj in _json_objects(value, self.depth):
            flat = _flat_pairs(obj)
            encoded = not value.lstrip().startswith("{")
            for kind in sorted(url_pii_kinds(flat) | {k for _, v in flat for k in find_pii(v)}):
                self.add(Reason.PII_IN_URL, f"{detail}:{kind}", evidence=pii_evidence(kind, "json"))
                if encoded:
                    self.add(
                        Reason.ENCODED_PAYLOAD, detail, evidence=_ev("encoded-payload", "json")
                    )
            if any(_json_secret(k, v) for k, v in flat):
                evidence = _ev("credential-in-url", "json-secret-key")
                self.add(Reason.CREDENTIAL_IN_URL, detail, evidence=evidence)
                if encoded:
                    self.add(
                        Reason.ENCODED_PAYLOAD, detail, evidence=_ev("encoded-payload", "json")
                    )
        if nkey in _REDIRECT_KEYS and self.nested < 2:
            self.redirect_target(part, nkey, value)

    def redirect_target(self, part: str, nkey: str, value: str) -> None:
        """A URL the browser is sent on to: credentials in it leak to its host, and an OAuth
        redirect must go to an honest https host (not plain http, an IP, a look-alike or a
        request catcher)."""
        target = _nested_url(value)
        if target is None:
            return
        oauth = nkey in _OAUTH_REDIRECT_KEYS
        detail = f"{part}:{nkey}"
        host = str(target.hostname).lower()
        scheme = str(target.protocol).rstrip(":")
        is_ip = int(target.host_type) != 0
        loopback = host in LOOPBACK_HOSTS or host.startswith("127.")
        if oauth and scheme == "http" and not loopback:
            self.add(Reason.NON_HTTPS, detail, evidence=_ev("oauth-redirect", "http"))
        if oauth and is_ip and not loopback:
            self.add(Reason.IP_LITERAL, detail, evidence=_ev("oauth-redirect", "ip"))
        domain = None if is_ip else registrable_domain(host)
        catcher = _request_catcher(host) if oauth else None
        if catcher is not None:
            evidence = Evidence("oauth-redirect", f"request-catcher:{catcher}")
            self.add(Reason.CONFUSABLE_HOST, f"{detail}:request-catcher", evidence=evidence)
        if oauth and not is_ip:
            for finding in check_host(host, host, self.cfg):
                # an integration named after the provider (slack-bot.example.com) is normal:
                # only look-alike spellings and embedded brand domains count here
                # (a brand name on a TLD phishing favours is no integration: slack.verify.click)
                if (
                    finding.severity is Severity.HIGH
                    and finding.reason is Reason.CONFUSABLE_HOST
                    and (finding.detail != "brand-name" or risky_tld(domain or host))
                ):
                    signal = finding.evidence.signal if finding.evidence else finding.detail
                    evidence = Evidence("oauth-redirect", signal)
                    self.add(
                        Reason.CONFUSABLE_HOST, f"{detail}:{finding.detail}", evidence=evidence
                    )
        inner = _Analysis(self.path, self.cfg, Limits(decode_depth=self.depth))
        inner.domain = domain
        inner.nested = self.nested + 1
        inner.pairs("query", _split_pairs(str(target.search).removeprefix("?")))
        inner.pairs("fragment", _fragment_pairs(str(target.hash).removeprefix("#")))
        for finding in inner.findings:
            if finding.reason in {Reason.CREDENTIAL_IN_URL, Reason.PREAUTH_URL, Reason.PII_IN_URL}:
                inner_signal = finding.evidence.signal if finding.evidence else finding.detail
                evidence = Evidence("oauth-redirect", f"redirect-target:{inner_signal}")
                self.add(finding.reason, detail, evidence=evidence)

    def preauth_families(self, keys: set[str]) -> None:
        for detail, any_of, all_of in _PREAUTH_FAMILIES:
            if (any_of and keys & any_of) or (all_of and all_of <= keys):
                self.add(Reason.PREAUTH_URL, detail, evidence=_ev("preauth-url", detail))

    def path_segments(self, host: str, pathname: str) -> None:
        pattern = _WEBHOOK_HOSTS.get(host)
        if pattern is not None and pattern.match(pathname):
            evidence = Evidence("preauth-url", f"webhook:{host}")
            self.add(Reason.PREAUTH_URL, "webhook", evidence=evidence)
        if _MATTERMOST_HOOK.fullmatch(pathname):
            # Mattermost's incoming webhooks, on any self-hosted server: /hooks/<26-char id>
            evidence = Evidence("preauth-url", "webhook:mattermost")
            self.add(Reason.PREAUTH_URL, "webhook", evidence=evidence)
        if host.endswith(".webhook.office.com") and "/webhookb2/" in pathname:
            evidence = Evidence("preauth-url", "webhook:webhook.office.com")
            self.add(Reason.PREAUTH_URL, "webhook", evidence=evidence)
        segments = [unquote(s) for s in pathname.split("/") if s]
        previous = "hook" if host.split(".", 1)[0] in _HOOK_HOST_LABELS else ""
        for segment in segments:
            lowered = segment.casefold()
            if previous in _HOOK_SEGMENTS and _capability_token(segment):
                # Make's "hook.eu1.make.com/<token>", n8n's "/webhook/<uuid>"
                evidence = _ev("preauth-url", "hook-segment+capability-token")
                self.add(Reason.PREAUTH_URL, "webhook", evidence=evidence)
            if ";jsessionid=" in lowered or ";sessionid=" in lowered:
                self.add(Reason.PREAUTH_URL, "path:session", evidence=_ev("preauth-url", "session"))
            magic = previous in _MAGIC_SEGMENTS or any(w in previous for w in _MAGIC_WORDS)
            if magic and _capability_token(segment):
                evidence = _ev("preauth-url", "magic-segment+capability-token")
                self.add(Reason.PREAUTH_URL, "path:magic-link", evidence=evidence)
            self.scan(segment, "path")
            if bare_national_id(segment, weak=self.id_context):
                evidence = pii_evidence("national-id", "path")
                self.add(Reason.PII_IN_URL, "path:national-id", evidence=evidence)
            previous = lowered


# Path words of a phishing kit's pages ("/pay", "/confirm.php", "/session/restore").
_LURE_PATH: Final = re.compile(
    r"(?:^|[/_.\-])(?:login|signin|sign-in|logon|verify|verification|confirm|pay|payment|"
    r"unlock|restore|session|account|update|secure|billing|refund|wallet|kyc|otp|card)"
    r"(?:$|[/_.\-])"
)


def _hosted_brand_lure(a: _Analysis, lowered_path: str) -> None:
    """A brand name on a shared-hosting project (a LOW ``brand-name`` resemblance there) whose
    page is a kit's lure page ("/pay", "/confirm.php", "/card/unlock"): a phishing deployment."""
    domain = a.domain
    if domain is None or "." not in domain:
        return
    if not private_suffix(domain.split(".", 1)[1]) or _LURE_PATH.search(lowered_path) is None:
        return
    if any(f.reason is Reason.TYPOSQUAT and f.detail == "brand-name" for f in a.findings):
        evidence = Evidence("lookalike-domain", "brand-on-hosting+lure-path")
        a.add(Reason.CONFUSABLE_HOST, "brand-name", Severity.HIGH, evidence)


def _password_key(nkey: str) -> str | None:
    """The password word a key is or ends in (``senha``, ``user_passwort``), or None."""
    for candidate in (nkey, nkey.replace("-", "_"), nkey.replace("-", "").replace("_", "")):
        if candidate in _PASSWORD_WORDS:
            return candidate
    parts = [p for p in _KEY_PARTS.split(nkey) if p]
    if len(parts) > 1 and parts[-1] in _PASSWORD_WORDS and parts[-1] != "pass":
        return parts[-1]  # not "pass" alone: day_pass, boarding_pass
    return None


def _session_key(nkey: str) -> str | None:
    """The session-cookie name (``PHPSESSID``, ``connect.sid``, ``ASPSESSIONIDQQGGGNCQ``) a key
    is, as our list spells it, or None."""
    if nkey in _SESSION_KEYS:
        return nkey
    return "aspsessionid" if nkey.startswith("aspsessionid") else None


def _session_value(value: str) -> bool:
    """A session id: ≥ 16 characters of letters and digits (signed ids may add ``. : - _ %``),
    both present, high entropy; PHP's 26 lower-case characters count, a word or a date does not."""
    if not 16 <= len(value) <= 512 or not re.fullmatch(r"[A-Za-z0-9%._:\-]+", value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and _entropy(value) >= 3.5


def _purpose_token_key(key: str) -> bool:
    """A key that names a one-time purpose and a token (``reset_password_token``, ``otpToken``)."""
    parts = {p.casefold() for p in _KEY_PARTS.split(key) if p}
    return bool(parts & _CAPABILITY_NOUNS) and bool(parts & _CAPABILITY_PURPOSES)


def _capability_token(segment: str) -> bool:
    """A path segment that looks like a bearer capability: JWT-shaped, or ≥ 16 characters of
    token alphabet with high entropy (a UUID-like random string)."""
    if _jwt_like(segment):
        return True
    if len(segment) < 16 or not re.fullmatch(r"[A-Za-z0-9_\-.=~]+", segment):
        return False
    return _token_like(segment) and _entropy(segment) >= 3.0


def _request_catcher(host: str) -> str | None:
    """The entry of ``_REQUEST_CATCHERS`` that ``host`` is or lies under, or None."""
    labels = host.rstrip(".").split(".")
    for i in range(len(labels) - 1):
        name = ".".join(labels[i:])
        if name in _REQUEST_CATCHERS:
            return name
    return None


@functools.cache
def _ev(concept: str, signal: str) -> Evidence:
    """Evidence with no term (shared: built once per kind)."""
    return Evidence(concept, signal)


def _json_secret(key: str, value: str) -> bool:
    return (
        _norm_key(key) in _JSON_SECRET_KEYS
        and len(value) >= 4
        and (value.casefold() not in _PLACEHOLDERS)
    )


def _capability_value(value: str) -> bool:
    """A long random string (≥ 20 characters mixing lower case, upper case and digits)."""
    if len(value) < 20 or len(value) > 2048 or not re.fullmatch(r"[A-Za-z0-9_\-.~=]+", value):
        return False
    has = (any(c.islower() for c in value), any(c.isupper() for c in value))
    return all(has) and any(c.isdigit() for c in value) and _entropy(value) >= 3.5


def _invisible(url: str) -> bool:
    return _INVISIBLE.search(url) is not None


def _misleading_at(a: _Analysis, url: str, domain: str | None) -> None:
    """``@paypal.com`` after the authority (in the path, query or fragment) makes the text read as
    if the link went to that host: reported when it is not the URL's own domain."""
    authority = _raw_authority(url)
    start = url.find(authority) + len(authority) if authority else 0
    rest = url[start:]
    if "@" not in rest:
        return
    # On a brand's own host, "@tenant.example" (Azure's portal.azure.com/#@contoso...) misleads
    # nobody: the text names an unknown place while the link goes to the brand.
    own = domain is not None and known_brand_domain(domain)
    for m in _MISLEADING_AT.finditer(unquote(rest)):
        named = registrable_domain(m.group(1).lower())
        if named is not None and named != domain and not (own and not known_brand_domain(named)):
            a.add(Reason.CONFUSABLE_HOST, "misleading-at", evidence=_ev("lookalike-domain", "at"))
            return


def _scheme_findings(a: _Analysis, scheme: str, host: str) -> bool:
    """Scheme checks; True when analysis must stop (not a web URL)."""
    if scheme not in {"http", "https"}:
        signal = f"scheme:{scheme}" if scheme in _NAMED_SCHEMES else "scheme"
        a.add(Reason.BAD_SCHEME, "scheme", evidence=_ev("url-scheme", signal))
        return True
    if scheme not in a.cfg.schemes and not (
        scheme == "http" and a.cfg.dev_loopback_http and host in LOOPBACK_HOSTS
    ):
        a.add(Reason.NON_HTTPS, "scheme", evidence=_ev("url-scheme", f"scheme:{scheme}"))
    return False


# Schemes an explanation may name (any other is only "scheme": never echo the input's text).
_NAMED_SCHEMES: Final = frozenset(
    {"javascript", "data", "file", "vbscript", "blob", "ftp", "ws", "wss", "mailto", "tel",
     "intent", "about", "chrome", "view-source", "filesystem", "jar", "sms", "ms-settings"}
)  # fmt: skip


def analyze_url(
    url: str, path: str, cfg: UrlConfig, limits: Limits, *, context: str = ""
) -> list[Finding]:
    """All findings for one URL-mode ``url``; never raises on hostile input. ``context`` is the
    request's message: when it speaks of an identity, an all-digit path segment that is a valid
    identity number counts as one (an order number in a path does not, on its own)."""
    a = _Analysis(path, cfg, limits)
    a.id_context = bool(context) and names_an_id(context)
    if len(url) > limits.max_url_length:
        a.add(Reason.OVERSIZE, "url", evidence=_ev("oversize", "max-url-length"))
        return a.findings
    if _invisible(url):
        a.add(Reason.INVISIBLE_CHARS, "url", evidence=_ev("invisible-chars", "invisible-char"))
    parsed = _parse(url)
    if parsed is None:
        a.add(Reason.MALFORMED, "url", evidence=_ev("malformed", "whatwg-parse"))
        return a.findings
    doubled = str(parsed.hostname).lower() in {"http", "https", "http:", "https:"}
    if doubled or _DOUBLED_SCHEME.match(url.strip(_C0_OR_SPACE)) is not None:
        a.add(Reason.MALFORMED, "doubled-scheme", evidence=_ev("malformed", "doubled-scheme"))
        return a.findings
    scheme = str(parsed.protocol).rstrip(":")
    host = str(parsed.hostname).lower()
    if _scheme_findings(a, scheme, host):
        return a.findings
    authority = _raw_authority(url)
    if parsed.username or parsed.password or (authority is not None and "@" in authority):
        a.add(Reason.USERINFO, "userinfo", evidence=_ev("url-userinfo", "userinfo"))
    for finding in check_host(host, _raw_host(authority or ""), cfg):
        a.add(finding.reason, finding.detail, finding.severity, finding.evidence)
    query = str(parsed.search).removeprefix("?")
    query_pairs = _split_pairs(query)
    fragment_pairs = _fragment_pairs(str(parsed.hash).removeprefix("#"))
    if len(query_pairs) + len(fragment_pairs) > limits.max_query_params:
        a.add(Reason.OVERSIZE, "query", evidence=_ev("oversize", "max-query-params"))
        return a.findings
    if str(parsed.pathname).count("/") > limits.max_query_params:
        a.add(Reason.OVERSIZE, "path", evidence=_ev("oversize", "max-query-params"))
        return a.findings
    if not int(parsed.host_type):
        a.scan_host(host)
        a.domain = registrable_domain(host)
    _misleading_at(a, url, a.domain)
    pathname = str(parsed.pathname)
    lowered_path = unquote(pathname).casefold()
    a.magic_path = any(word in lowered_path for word in _MAGIC_WORDS) or any(
        _norm_key(k) in {"auto", "autologin", "auto_login", "login", "sso", "oneclick"}
        for k, _ in query_pairs
    )
    _hosted_brand_lure(a, lowered_path)
    shortener = shortener_of(host, a.domain) if a.domain is not None else None
    if shortener is not None:  # the destination is hidden behind the shortener
        evidence = Evidence("shortener", f"shortener:{shortener}")
        a.add(Reason.SHORTENER, "host", Severity.LOW, evidence)
    a.preauth_families({_norm_key(k) for k, _ in query_pairs})
    a.path_segments(host, str(parsed.pathname))
    a.pairs("query", query_pairs)
    a.pairs("fragment", fragment_pairs)
    if not fragment_pairs:
        fragment = unquote(str(parsed.hash).removeprefix("#"))
        a.scan(fragment, "fragment")
        # a bare fragment is an opaque carrier (never sent to the server, read by the page):
        # an identity number there counts like one under a short opaque key
        if bare_national_id(fragment, weak=True):
            evidence = pii_evidence("national-id", "fragment")
            a.add(Reason.PII_IN_URL, "fragment:national-id", evidence=evidence)
    return a.findings
