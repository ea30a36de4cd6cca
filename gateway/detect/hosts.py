"""Host checks for URL mode: IP literals, IDN, confusables, typosquats, allow-lists.

``check_host(host, raw_host, cfg)`` judges the host a browser would open (``host``: the WHATWG
canonical form, A-labels or an IP) together with the host as written in the URL (``raw_host``).
Everything is offline: the public suffix list is tldextract's bundled snapshot (read by
``gateway.detect.psl`` without importing tldextract), confusables come
from ``gateway/data/confusables.txt`` (UTS #39), script properties from the ``regex`` module.

Checks, in order (every finding has path ``$.url`` and ``detail`` naming the check):

* IP literal (IP_LITERAL, HIGH): any IP host except the loopback spellings ``127.0.0.1`` and
  ``[::1]`` written exactly so. Numeric spellings (``2130706433``, ``0x7f.1``), IPv4-mapped IPv6 and
  fullwidth digits all canonicalise to an IP, and a raw spelling that differs is itself reported.
* Raw vs canonical (CONFUSABLE_HOST, HIGH, ``host-mismatch``): the written host, after NFC and
  lower-casing, must be the canonical A-label host or its U-label form. Percent-encoded,
  fullwidth or ideographic-dot spellings and the ``\\@`` backslash trick (where a naive reader sees
  another host than the browser opens) differ. Invisible characters → INVISIBLE_CHARS.
* IDN (IDN_HOST, LOW): any ``xn--`` label, as the MCP spec asks clients to warn on punycode. A
  host the browser opens but that is not valid IDNA 2008 (emoji, symbols) adds CONFUSABLE_HOST LOW
  ``invalid-idn``; its labels are still decoded (plain punycode) for the script checks.
* Script mixing (CONFUSABLE_HOST, HIGH, ``mixed-script``): UTS #39 Highly Restrictive per label —
  one script, or Latin+Han+Hiragana+Katakana, Latin+Han+Bopomofo, Latin+Han+Hangul (the Latin then
  ASCII only), as in Chromium's IDN policy.
* Whole-script confusable (HIGH, ``whole-script``): a Cyrillic/Greek/… label whose skeleton is
  plain ASCII (``аррӏе``) unless the TLD belongs to that script's allow-list.
* Skeleton match (HIGH, ``skeleton-match``): a non-ASCII registrable domain (or its label) whose
  skeleton equals that of a protected domain.
* Typosquat (TYPOSQUAT, LOW): ASCII look-alikes of a protected domain (0→o, 1→l, rn→m, vv→w),
  Damerau distance 1, an extra hyphen or added words (``paypal-login``), and a protected brand in
  the subdomain of another registrable domain (``paypal.com.evil.net``).
* Allow-list (HOST_NOT_ALLOWED, HIGH) when ``cfg.allowed_hosts`` is non-empty.

Trusted domains (``cfg.trusted_domains``) and protected domains themselves are never reported as
IDN, typosquat or skeleton matches (LOW findings); script and IP rules still apply.
"""

from __future__ import annotations

import functools
import gc
import ipaddress
import itertools
import re
import unicodedata
from importlib import resources
from typing import Final

import idna
import regex

from gateway.detect.config import UrlConfig
from gateway.detect.findings import Evidence, Finding, Reason, Severity
from gateway.detect.normalize import DIGIT_LETTERS
from gateway.detect.psl import private_suffix, split_host
from gateway.detect.substrings import Substrings

_DEFAULT_URL_CONFIG: Final = UrlConfig()

PATH: Final = "$.url"
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "[::1]"})

# TLDs under which a label written entirely in a non-Latin script may look like Latin
# (Chromium's whole-script-confusable allow-lists, as A-labels).
_WHOLE_SCRIPT_TLDS: Final[dict[str, frozenset[str]]] = {
    "Cyrillic": frozenset(
        {"bg", "by", "kg", "kz", "mk", "mn", "rs", "ru", "su", "tj", "ua", "uz"}
        | {"xn--p1ai", "xn--90ais", "xn--j1amh", "xn--d1alf", "xn--90a3ac", "xn--80ao21a"}
        | {"xn--l1acc", "xn--p1acf", "xn--90ae", "xn--c1avg", "xn--80asehdb", "xn--80aswg"}
    ),
    "Greek": frozenset({"gr", "cy", "xn--qxam", "xn--qxa6a"}),
    "Armenian": frozenset({"am", "xn--y9a3aq"}),
    "Georgian": frozenset({"ge", "xn--node"}),
}
_ALLOWED_MIXES: Final = (
    frozenset({"Latin", "Han", "Hiragana", "Katakana"}),
    frozenset({"Latin", "Han", "Bopomofo"}),
    frozenset({"Latin", "Han", "Hangul"}),
)
_IGNORED_SCRIPTS: Final = frozenset({"Common", "Inherited"})
# In a host name "1" and "|" stand for "l" (paypa1); the typosquat fold also reads "i" as "l".
_HOST_DIGITS: Final = {**DIGIT_LETTERS, "1": "l", "|": "l"}
_ASCII_FOLD: Final = str.maketrans({**_HOST_DIGITS, "i": "l"})
# Top-level domains cheap to register and favoured for throw-away phishing hosts.
_RISKY_TLDS: Final = frozenset(
    {"app", "dev", "zip", "mov", "top", "xyz", "site", "online", "live", "click", "help", "shop",
     "info", "icu", "buzz", "cyou", "rest", "work", "support", "link", "today", "life", "world",
     "club", "vip", "win", "bid", "loan", "men", "date", "review", "stream", "download", "racing",
     "xin", "ltd", "tk", "ml", "ga", "cf", "gq", "pw", "su", "cam", "monster", "sbs", "cfd",
     "quest", "bond", "beauty", "hair", "skin", "makeup", "lol", "mom", "best", "fun", "space",
     "website", "store", "tech", "host", "press", "fit", "uno", "mobi", "page", "digital",
     "services", "security", "secure", "login", "account", "accountant", "bank", "pay", "money",
     "finance", "cash", "claims", "gift", "gifts", "promo", "ws", "cc", "ink", "network",
     "center", "email", "group", "solutions", "systems", "one", "run", "box", "wiki", "social"}
)  # fmt: skip
# Words that phishing hosts add to a brand (any language): log-in, security, account, delivery.
_PHISHY_WORDS: Final = frozenset(
    {"login", "log", "signin", "signon", "sign", "logon", "secure", "security", "sicherheit",
     "seguranca", "seguridad", "securite", "sicurezza", "verify", "verification", "verificatie",
     "verificacion", "verifica", "verifizierung", "validate", "validation", "confirm",
     "confirmation", "account", "accounts", "konto", "cuenta", "conta", "compte", "akun",
     "update", "updates", "aktualisierung", "atualizacao", "actualizacion", "kyc", "auth",
     "oauth", "oauth2", "sso", "billing", "invoice", "payment", "payments", "pagos", "pago",
     "pagamento", "wallet", "refund", "refunds", "rembourse", "remboursement", "erstattung",
     "iade", "bonus", "reward", "rewards", "promo", "gift", "gifts", "prize", "claim", "unlock",
     "unblock", "recover", "recovery", "restore", "alert", "alerts", "notice", "support",
     "helpdesk", "customer", "customers", "clientes", "cliente", "kunden", "client", "service",
     "services", "online", "portal", "session", "check", "reset", "password", "tracking",
     "track", "parcel", "delivery", "redelivery", "redeliver", "shipment", "colis", "paket",
     "paczka", "envio", "pacco", "cartao", "netbanking", "netbank", "ebanking", "banking",
     "mobilebanking", "id", "identity", "kimlik", "giris", "dogrulama", "aadhaar", "tax",
     "voucher", "hadiah", "undian", "kompensaciya", "vyplata", "suspended", "locked", "blocked",
     "activate", "activation", "device", "devices", "otp", "2fa", "mfa", "token", "unusual",
     "case", "appeal", "dispute", "fee", "fees", "free", "offer", "sale", "deal", "lucky",
     "center", "centre", "help", "resolution", "renewal", "renew", "expired", "app", "card",
     "bank", "tan", "pix", "klik", "betaalpas", "veilig", "teruggave", "verlopen", "rimborso",
     "devolucion", "reembolso", "aide", "doplata", "platnosc", "dostawa", "weryfikacja",
     "logowanie", "suivi", "livraison", "compensation", "certicode", "zustellung", "sendung",
     "rastreio", "rastreamento", "encomenda", "entrega", "spedizione", "consegna", "teslimat",
     "kargo", "odeme", "guncelle", "dogrula", "masuk", "verifikasi", "xacminh", "xacthuc",
     "cashback", "premium", "nitro", "win", "winner", "lottery", "giveaway", "airdrop",
     "mint", "seed", "ledger",
     "mail", "webmail", "mailbox", "storage", "docs", "document", "documents", "file", "share",
     "factura", "fatura", "rechnung", "facture", "fattura", "faktura",
     # rewards, prizes, gifts and account words in more languages (telco and wallet lures)
     "recompensa", "recompensas", "premio", "premios", "premiacao", "regalo", "regalos",
     "brinde", "brindes", "sorteo", "sorteio", "ganador", "ganhador", "ganhe", "gana",
     "beneficio", "beneficios", "promocion", "promociones", "promocao", "promocoes", "canje",
     "resgate", "resgatar", "bono", "bonos", "puntos", "pontos", "desbloqueo", "desbloqueio",
     "bloqueo", "bloqueio", "acceso", "acesso", "ingreso", "iniciar", "sesion", "verificar",
     "validar", "actualizar", "atualizar", "confirmar", "cadeau", "cadeaux", "recompense",
     "gagnant", "connexion", "identifiant", "gewinn", "gewinnspiel", "gutschein", "praemie",
     "anmelden", "anmeldung", "entsperren", "accesso", "sblocco", "omaggio", "vincita",
     "klaim", "poin", "blokir", "hediye", "odul", "kampanya", "nagroda", "zwrot",
     "uudai", "khuyenmai", "quatang", "nhanqua", "hoantien", "trungthuong", "taikhoan",
     "dangnhap", "baomat", "tangqua", "priz", "vozvrat", "podarok",
     "keuntungan", "tebus", "ganjaran", "baucar", "regali", "belohnung"}
)  # fmt: skip
# Characters that look like a URL separator (slash, dot, colon, at, question mark) inside a host
# label: ``paypal.com∕webapps.evil.io`` reads as the brand's host followed by a path.
_FAKE_SEPARATORS: Final = frozenset(
    "\u2215\u2044\u29f8\u2571\uff0f\u2cc6\u3033\u30ce\u4e3f\u2f03\u27cb\u29f5\u2216"
    "\ufe68\uff3c\u2572\u2024\u2027\u00b7\u0701\u0702\u2e31\ua60e\u06d4\u066b\uff61"
    "\u3002\uff0e\ufe52\u2e33\u02d0\ua789\u2236\uff1a\ufe55\uff20\ufe6b\uff1f\u0294"
    "\u2039\u203a\u2063\u01c0\u05c0\u2223\u2758"
)
# Registrable labels of brand domains that are ordinary words (never a brand sign by themselves).
_GENERIC_LABELS: Final = frozenset(
    {"shop", "cash", "wise", "ally", "key", "box", "sky", "free", "mail", "web", "line", "live",
     "admin", "trip", "portal", "service", "online", "secure", "login", "account", "bank",
     "one", "mac", "post", "office", "max", "ring", "mint", "square", "chime", "target", "discover",
     "booking", "orange", "signal", "notion", "slack", "zoom", "stripe", "bolt", "otto", "noon",
     "global", "proton", "threads", "messenger", "disney", "android", "windows", "ledger",
     "exodus", "phantom", "gemini", "kraken", "steam", "chase", "citizens", "regions", "equity",
     "fidelity", "vanguard", "nationwide", "halifax", "revenue", "spectrum", "claro", "vivo",
     "smart", "globe", "bell", "inter", "marcus", "sage", "canva", "figma", "asana", "wix"}
)  # fmt: skip
# Account words too common in honest names to make a lure without a brand (docs-ch.dev).
_WEAK_WORDS: Final = frozenset(
    {"app", "card", "online", "portal", "service", "services", "help", "center", "centre", "id",
     "docs", "document", "documents", "file", "share", "storage", "mail", "webmail", "mailbox",
     "support", "customer", "customers", "client", "track", "tracking", "delivery", "sale",
     "deal", "offer", "free", "premium", "case", "device", "devices", "log", "sign", "check",
     "notice", "alert", "alerts", "update", "updates", "mint", "seed", "ledger", "wallet",
     "restore", "session", "token", "otp", "2fa", "mfa", "tax", "fee", "fees", "connect",
     "identity", "bank", "pay", "payments", "payment", "invoice", "parcel", "paket",
     "shipment", "colis", "envio", "pacco", "paczka", "auth", "oauth", "oauth2", "sso"}
)  # fmt: skip
# Words for banks, payments and public services: with an account word, a lure on any TLD
# (``bancopichincha-seguridad.com``) even when the brand is unknown.
_FINANCE_STEMS: Final = (
    "bank", "banco", "banca", "banque", "bancaria", "bankasi", "bankas", "pank", "sparbank",
    "kasse", "credit", "kredit", "credito", "paypal", "pay", "wallet", "crypto", "coin", "finance",
    "tax", "gov", "irs", "post", "posta", "poste", "parcel", "courier", "express", "customs",
)  # fmt: skip
_TOKEN_SPLIT: Final = re.compile(r"[.\-]+")
_MIN_BRAND_LEN: Final = 4  # protected labels shorter than this only match as whole domains
_MIN_SUBSTRING_LEN: Final = 6  # "securepaypal" style matches need a distinctive brand
_MIN_EDIT_LEN: Final = 6  # Damerau distance 1 only for brands at least this long


# ---------------------------------------------------------------- public suffix list (offline)


@functools.lru_cache(maxsize=8192)
def registrable_domain(host: str) -> str | None:
    """The registrable domain (eTLD+1, PSL private section included) of a host, or None for IPs,
    single labels, unknown suffixes and public suffixes themselves. Lower-case, as given (A- or
    U-labels), without a trailing dot. Uses only the bundled PSL snapshot: never the network."""
    name = host.strip().rstrip(".").lower()
    if not name or name.startswith("[") or _ip_of(name) is not None:
        return None
    label, suffix = split_host(name)
    return f"{label}.{suffix}" if label and suffix else None


# ---------------------------------------------------------------- confusables and scripts


@functools.cache
def _confusables() -> dict[int, str]:
    table: dict[int, str] = {}
    text = resources.files("gateway").joinpath("data", "confusables.txt").read_text("utf-8")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        source, target = line.split(";")
        table[int(source, 16)] = "".join(chr(int(cp, 16)) for cp in target.split())
    return table


def skeleton(s: str) -> str:
    """UTS #39 skeleton: NFD, map every character through confusables.txt, NFD again.
    Two strings are confusable when their skeletons are equal (``skeleton("раypal") ==
    skeleton("paypal")``). Case is kept, as in UTS #39."""
    if s.isascii():  # NFD is the identity on ASCII; the ASCII rows of the table suffice
        out = s.translate(_ascii_confusables())
        if out.isascii():
            return out
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", s).translate(_confusables()))


@functools.cache
def _ascii_confusables() -> dict[int, str]:
    return {k: v for k, v in _confusables().items() if k < 128}


@functools.cache
def _script_names() -> tuple[str, ...]:
    text = resources.files("gateway").joinpath("data", "scripts.txt").read_text("utf-8")
    return tuple(n for n in (ln.strip() for ln in text.splitlines()) if n and n[0] != "#")


@functools.cache
def _script_regex() -> regex.Pattern[str]:
    return regex.compile("|".join(f"(?P<{n}>\\p{{sc={n}}})" for n in _script_names()))


@functools.cache
def _scx_regexes() -> tuple[tuple[str, regex.Pattern[str]], ...]:
    return tuple((n, regex.compile(f"\\p{{scx={n}}}")) for n in _script_names())


@functools.lru_cache(maxsize=16384)
def _scripts_of(ch: str) -> frozenset[str]:
    """Script_Extensions of one character, without Common/Inherited (empty set = neutral)."""
    if ch.isascii():
        return frozenset({"Latin"}) if ch.isalpha() else frozenset()
    m = _script_regex().match(ch)
    script = m.lastgroup if m is not None else None
    if script is None:
        return frozenset({"Unknown"})
    if script not in _IGNORED_SCRIPTS:
        return frozenset({script})
    found = frozenset(n for n, pat in _scx_regexes() if pat.match(ch))
    return found - _IGNORED_SCRIPTS


def _label_scripts(label: str) -> list[frozenset[str]]:
    return [s for s in map(_scripts_of, label) if s]


def _highly_restrictive(label: str) -> bool:
    sets = _label_scripts(label)
    if not sets or frozenset.intersection(*sets):
        return True
    for mix in _ALLOWED_MIXES:
        if all(s & mix for s in sets):
            non_ascii_latin = any(
                ch.isalpha() and not ch.isascii() and _scripts_of(ch) == {"Latin"} for ch in label
            )
            return not non_ascii_latin
    return False


def _single_script(label: str) -> str | None:
    sets = _label_scripts(label)
    if not sets:
        return None
    common = frozenset.intersection(*sets)
    return min(common) if len(common) == 1 else None


def _whole_script_confusable(label: str, tld: str) -> bool:
    script = _single_script(label)
    if script is None or script == "Latin" or tld in _WHOLE_SCRIPT_TLDS.get(script, ()):
        return False
    skel = skeleton(label)
    return skel.isascii() and any(c.isalpha() for c in skel)


# ---------------------------------------------------------------- protected-domain index


@functools.cache
def _seed_protected() -> frozenset[str]:
    text = resources.files("gateway").joinpath("data", "protected_domains.txt").read_text("utf-8")
    return frozenset(
        ln.strip().lower() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")
    )


@functools.lru_cache(maxsize=16384)
def _fold(s: str) -> str:
    """ASCII look-alike fold for typosquats: skeleton, lower-case, digit look-alikes, rn/vv."""
    out = skeleton(s).lower().translate(_ASCII_FOLD)
    return out.replace("rn", "m").replace("vv", "w").replace("cl", "d")


_EDIT_FOLD: Final = str.maketrans(_HOST_DIGITS)


@functools.lru_cache(maxsize=16384)
def _edit_fold(s: str) -> str:
    """The fold for one-edit comparisons: digit look-alikes only. Letter folds (``i``→``l``,
    ``rn``→``m``) are look-alikes in their own right (``_fold``); combined with a further edit they
    would make two edits look like one (``shoply`` is not one edit from ``shopify``)."""
    return s.lower().translate(_EDIT_FOLD)


@functools.lru_cache(maxsize=8192)
def _label_of(domain: str) -> str:
    """The registrable label: ``paypal`` for ``paypal.com``, ``amazon`` for ``amazon.co.uk``."""
    if domain.count(".") == 1 and domain.isascii() and not domain.startswith("xn--"):
        return domain.split(".", 1)[0]  # name.tld: every TLD is a public suffix
    suffix = split_host(domain)[1]
    return domain[: -len(suffix) - 1] if suffix and domain.endswith("." + suffix) else domain


@functools.cache
def _brand_rows() -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """(names, own domains) per line of ``gateway/data/brands.txt``."""
    text = resources.files("gateway").joinpath("data", "brands.txt").read_text("utf-8")
    rows: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or ":" not in line:
            continue
        names, _, domains = line.partition(":")
        rows.append(
            (
                tuple(
                    n.strip().lower().replace("-", "").replace(".", "")
                    for n in names.split(",")
                    if n.strip()
                ),
                tuple(d.strip().lower() for d in domains.split() if d.strip()),
            )
        )
    return tuple(rows)


# Letters a reader confuses (substitutions that make a one-edit look-alike convincing).
_VISUAL_PAIRS: Final = frozenset(
    frozenset(p)
    for p in ("il", "lj", "ij", "mn", "nh", "uv", "vy", "oa", "oe", "ce", "ea", "gq", "oc",
              "bd", "pq", "rn", "ft", "tl", "hb", "kx", "sz")
)  # fmt: skip


class _Index:
    """Lookup tables over the protected domains and brands, built once per configuration."""

    def __init__(self, domains: frozenset[str], extra: frozenset[str] = frozenset()) -> None:
        rows = _brand_rows()
        own: dict[str, int] = {}
        names: dict[str, tuple[int, bool]] = {}  # name → (brand id, generic word)
        for brand, (brand_names, brand_domains) in enumerate(rows):
            for d in brand_domains:
                own.setdefault(d, brand)
            for raw in brand_names:
                generic = raw.startswith("?")
                name = raw.lstrip("?")
                if len(name) <= 2:
                    continue  # au, vi, ch: country codes and syllables, never a brand sign
                if name not in names or not generic:
                    names[name] = (brand, generic or len(name) <= 3)
        for n, d in enumerate(sorted(extra)):  # a policy's own protected domains name brands too
            label = _label_of(d).replace("-", "")
            if len(label) >= _MIN_BRAND_LEN and label not in names:
                names[label] = (len(rows) + n, len(label) < 5)
        # A readable name per brand id (its first own domain, else its first name), for evidence.
        self.brand_names: list[str] = [
            (brand_domains or brand_names or ("?",))[0].lstrip("?")
            for brand_names, brand_domains in rows
        ]
        self.brand_names.extend(sorted(extra))
        all_domains = domains | frozenset(own)
        next_id = len(rows)
        for d in sorted(all_domains):
            if d not in own:
                own[d] = next_id
                next_id += 1
        self.domains = all_domains
        generic_labels = _GENERIC_LABELS | {n for n, (_, g) in names.items() if g}
        labels = {d: _label_of(d) for d in all_domains}
        # Domains whose label is a word (x.com, shop.app, cash.app) match inside another host only
        # as whole labels followed by more (x.com.evil.net), never glued by a hyphen.
        self.embeddable = frozenset(d for d, lb in labels.items() if len(lb) >= 2)
        self.distinctive_domains = frozenset(
            d for d, lb in labels.items() if len(lb) >= 5 and lb not in generic_labels
        )
        self.own = own
        self.names = names
        self.folded_names: dict[str, int] = {}
        for name, (brand, _) in names.items():
            if len(name) >= _MIN_BRAND_LEN:
                self.folded_names.setdefault(_fold(name), brand)
        self.skeletons: dict[str, str] = {}  # skeleton of the whole domain → domain
        self.label_skeletons: dict[str, str] = {}  # skeleton of the brand label → domain
        self.brands: dict[str, str] = {}  # folded brand label → domain
        self.deletes: dict[str, set[str]] = {}  # brand minus one character → brands
        self.edit_brands: set[str] = set()  # brand labels and names for one-edit comparisons
        for domain in sorted(all_domains):
            label = _label_of(domain)
            self.skeletons.setdefault(skeleton(domain), domain)
            if len(label) < _MIN_BRAND_LEN or "." in label:
                continue
            self.label_skeletons.setdefault(skeleton(label), domain)
            folded = _fold(label)
            self.brands.setdefault(folded, domain)
            self.edit_brands.add(_edit_fold(label))
        for name, (_, generic) in names.items():
            if not generic and len(name) >= _MIN_EDIT_LEN:
                self.brands.setdefault(_fold(name), "")
                self.edit_brands.add(_edit_fold(name))
        for folded in self.edit_brands:
            if len(folded) >= _MIN_EDIT_LEN:
                for i in range(len(folded)):
                    self.deletes.setdefault(folded[:i] + folded[i + 1 :], set()).add(folded)
        long_names = {
            _fold(n) for n, (_, g) in names.items() if not g and len(n) >= _MIN_SUBSTRING_LEN
        }
        # thousands of names: an Aho-Corasick set (an RE2 alternation outgrew its DFA memory)
        self._long_names = Substrings((n, True) for n in long_names)

    def brand_of(self, domain: str) -> int | None:
        return self.own.get(domain)

    def brand_name(self, brand: int) -> str | None:
        return self.brand_names[brand] if 0 <= brand < len(self.brand_names) else None

    def contains_name(self, word: str) -> str | None:
        """A distinctive (long) brand name inside ``word`` (``securepaypal``), folded."""
        return self._long_names.first_per_owner(word).get(True)

    def one_edit(self, word: str) -> str | None:
        """``"visual"`` when a protected brand is one convincing edit away from ``word`` (a dropped
        or doubled letter, an adjacent swap, a look-alike letter), ``"other"`` for any other single
        substitution, None otherwise (delete-neighbourhood lookups, no scan of the brands)."""
        if len(word) > 64 or len(word) < _MIN_EDIT_LEN - 1 or word in self.edit_brands:
            return None
        if word in self.deletes:
            return "visual"  # word is a brand with one character missing
        for i in range(1, len(word)):
            if word[i] == word[i - 1] and word[:i] + word[i + 1 :] in self.edit_brands:
                return "visual"  # a doubled letter, also in a short brand (hsbcc)
        other = False
        for i in range(len(word)):
            shorter = word[:i] + word[i + 1 :]
            if len(shorter) >= _MIN_EDIT_LEN and shorter in self.edit_brands:
                return "visual"  # one extra character
            for brand in self.deletes.get(shorter, ()):
                if len(brand) == len(word) and brand[:i] + brand[i + 1 :] == shorter:
                    if frozenset((brand[i], word[i])) in _VISUAL_PAIRS:
                        return "visual"
                    other = True
            if i + 1 < len(word):
                swapped = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
                if len(swapped) >= _MIN_EDIT_LEN and swapped in self.edit_brands:
                    return "visual"
        return "other" if other else None


@functools.lru_cache(maxsize=32)
def _index(extra: frozenset[str]) -> _Index:
    # Python's cyclic garbage collector paused meanwhile: tens of thousands of new containers
    # (plain tables, no cycles to find) would make it walk the growing heap again and again
    # (a third of the build, measured at start-up). Re-enabled after, if it was on.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Index(_seed_protected() | extra, extra)
    finally:
        if enabled:
            gc.enable()


@functools.cache
def _shorteners() -> frozenset[str]:
    text = resources.files("gateway").joinpath("data", "shorteners.txt").read_text("utf-8")
    return frozenset(
        ln.strip().lower() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")
    )


def is_shortener(host: str, domain: str | None = None) -> bool:
    """Is ``host`` (or its registrable ``domain``) a link shortener (``gateway/data/
    shorteners.txt``)? Its links hide where they lead."""
    return shortener_of(host, domain) is not None


def shortener_of(host: str, domain: str | None = None) -> str | None:
    """The entry of ``gateway/data/shorteners.txt`` that ``host`` (or its registrable ``domain``)
    is, or None."""
    names = _shorteners()
    if host in names:
        return host
    domain = domain if domain is not None else registrable_domain(host)
    return domain if domain in names else None


def suspicious_host(host: str) -> bool:
    """A host name that reads as someone else's (a HIGH look-alike or brand-in-domain finding under
    the default settings) or hides its destination (a shortener): a bare domain like this in text
    is a phishing lure even without a scheme."""
    if is_shortener(host):
        return True
    findings = _check_host_cached(host, host, _DEFAULT_URL_CONFIG)
    return any(f.reason is Reason.CONFUSABLE_HOST and f.severity is Severity.HIGH for f in findings)


# ---------------------------------------------------------------- IP literals


def _ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _ip_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return "ipv4-mapped"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_private or ip.is_reserved or ip.is_unspecified or ip.is_multicast:
        return "private"
    return "public"


def _check_ip(host: str, raw_host: str) -> list[Finding]:
    ip = _ip_of(host)
    if ip is None:
        return [Finding(Reason.MALFORMED, PATH, Severity.HIGH, "host")]
    if host in LOOPBACK_HOSTS and raw_host.lower() == host:
        return []
    kind = _ip_kind(ip)
    if kind == "loopback" and raw_host.lower() != host:
        kind = "ip-obfuscated"
    return [Finding(Reason.IP_LITERAL, PATH, Severity.HIGH, kind, Evidence("url-ip", kind))]


# ---------------------------------------------------------------- names


def _to_unicode(host: str) -> str | None:
    """U-label form of an A-label host, or None if it is not valid IDNA 2008."""
    try:
        return str(idna.decode(host, uts46=False))
    except (idna.IDNAError, UnicodeError, ValueError):
        return None


def _punycode_labels(host: str) -> str:
    """Best-effort U-labels (plain RFC 3492 punycode per label) for hosts that the browser opens
    but that are not valid IDNA 2008 (emoji, symbols): the script checks still see the letters."""
    return ".".join(_punycode_label(label) for label in host.split("."))


def _punycode_label(label: str) -> str:
    if not label.startswith("xn--"):
        return label
    try:
        return label[4:].encode("ascii").decode("punycode")
    except (UnicodeError, ValueError):
        return label


def _raw_matches(raw_host: str, host: str, unicode_host: str | None) -> bool:
    raw = unicodedata.normalize("NFC", raw_host).lower().rstrip(".")
    canonical = host.rstrip(".")
    return raw in {canonical, (unicode_host or canonical).rstrip(".")}


def _has_invisible(s: str) -> bool:
    return any(unicodedata.category(c) in {"Cf", "Cc", "Zs", "Zl", "Zp"} for c in s)


def _script_findings(labels: list[str], tld: str) -> list[Finding]:
    out: list[Finding] = []
    for label in labels:
        if label.isascii():
            continue
        if not _highly_restrictive(label):
            out.append(_host_finding(Reason.CONFUSABLE_HOST, Severity.HIGH, "mixed-script"))
        elif _whole_script_confusable(label, tld):
            script = _single_script(label) or "other"
            out.append(
                _host_finding(
                    Reason.CONFUSABLE_HOST, Severity.HIGH, "whole-script", f"whole-script:{script}"
                )
            )
    return out


def _host_finding(
    reason: Reason,
    severity: Severity,
    detail: str,
    signal: str | None = None,
    concept: str = "lookalike-domain",
) -> Finding:
    """A finding at ``$.url``; the evidence's signal defaults to the detail."""
    return Finding(reason, PATH, severity, detail, Evidence(concept, signal or detail))


# Concept per brand-check detail (``_brand_findings``); the signal adds the brand.
_BRAND_CONCEPTS: Final = {
    "brand-domain-embedded": ("brand-embedding", "brand-embedding"),
    "brand-name": ("brand-embedding", "brand-name"),
    "ascii-lookalike": ("lookalike-domain", "skeleton"),
    "other-suffix": ("lookalike-domain", "other-suffix"),
    "edit-distance": ("lookalike-domain", "edit-distance"),
    "phishy-name": ("lookalike-domain", "phishy-name"),
}


def _brand_evidence(detail: str, brand: str | None) -> Evidence:
    concept, signal = _BRAND_CONCEPTS.get(detail, ("lookalike-domain", detail))
    return Evidence(concept, f"{signal}:{brand}" if brand else signal)


def _strip_marks(s: str) -> str:
    return "".join(c for c in s if not unicodedata.combining(c))


def _skeleton_match(ulabel_domain: str, index: _Index) -> str | None:
    """A protected domain whose skeleton equals this domain's or its brand label's, also after
    removing diacritics (``pàypal.com``), as Chromium compares with its top domains."""
    for skel in (skeleton(ulabel_domain), skeleton(_label_of(ulabel_domain))):
        for candidate in (skel, _strip_marks(skel)):
            hit = index.skeletons.get(candidate) or index.label_skeletons.get(candidate)
            if hit is not None:
                return hit
    return None


def _embedded_domain(host: str, domain: str, index: _Index) -> str | None:
    """A protected domain written inside another host: ``paypal.com.evil.net``,
    ``login-chase.com.x.net``, ``www.apple.com-icloud.help``, ``my-paypal.com``. A parent domain
    of the host (``octocat.github.io`` under ``github.io``) is not embedded. Returns the
    protected domain found, or None."""
    starts = [0] + [i + 1 for i, c in enumerate(host) if c in ".-"]
    for start in starts[:32]:
        dots = 0
        for end in range(start, min(len(host), start + 80) + 1):
            if end < len(host) and host[end] not in ".-":
                continue
            candidate = host[start:end]
            if end == len(host):
                # my-paypal.com: only a distinctive brand label (example-shop.app is not Shopify's)
                hyphened = start > 0 and host[start - 1] == "-"
                if hyphened and candidate in index.distinctive_domains and candidate != domain:
                    return candidate
                break
            if host[end] == ".":
                dots += 1
            if "." in candidate and candidate != domain and candidate in index.embeddable:
                return candidate
            if dots > 4:
                break
    return None


def _digit_fold(token: str) -> str:
    return token.translate(_EDIT_FOLD)


def _name_matches(tokens: list[str], index: _Index) -> list[tuple[str, bool, str | None]]:
    """(detail, needs a sign) for each brand name among host tokens (joined neighbours too): a
    look-alike spelling (``outl00k``) or a brand split by hyphens (``pay-pal``) is a sign itself;
    a distinctive name as a token counts alone (``nubank-app``); a brand that is also a word
    (``orange-county``) or a name inside a longer word (``amazonwatch``) needs a sign. The third
    value names the brand (for explanations)."""
    out: list[tuple[str, bool, str | None]] = []
    n = len(tokens)
    for i in range(n):
        for j in range(i + 1, min(n, i + 3) + 1):
            word = "".join(tokens[i:j])
            if not word:
                continue
            hit = index.names.get(word)
            if hit is not None:
                # a distinctive name needs no other sign; a word-like one (orange) does; a brand
                # split by hyphens (pay-pal) is written to pass a filter: a sign itself
                out.append(("brand-name", hit[1] and j - i == 1, index.brand_name(hit[0])))
                continue
            if j - i > 1:
                continue
            folded = _fold(word)
            if len(word) >= _MIN_BRAND_LEN and folded in index.folded_names:
                brand = index.brand_name(index.folded_names[folded])
                out.append(("ascii-lookalike", False, brand))
                continue
            if any(c.isdigit() for c in word):
                for variant in (_digit_fold(word), _digit_fold(word.replace("1", "i"))):
                    if variant != word and variant in index.names:
                        brand = index.brand_name(index.names[variant][0])
                        out.append(("ascii-lookalike", False, brand))
                        break
            if len(word) > _MIN_SUBSTRING_LEN:
                name = index.contains_name(folded)
                if name is not None:
                    out.append(("brand-name", True, name))
    return out


_VOWELS: Final = frozenset("aeiouy")


_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xz]{4}")


def known_brand_domain(domain: str) -> bool:
    """Whether ``domain`` is a well-known brand's own (the bundled brand list)."""
    return _index(frozenset()).brand_of(domain) is not None


def risky_tld(domain: str) -> bool:
    """Whether ``domain`` sits on a TLD that phishing favours (``.click``, ``.xyz``, ``.top``)."""
    return domain.rsplit(".", 1)[-1] in _RISKY_TLDS


def _generated(token: str) -> bool:
    """A machine-generated name (``65qaqn``, ``uo7r3v``, ``ddppv``), not a word or a word with a
    number (``team42``, ``app2``): 5–16 letters and digits that start with a digit, alternate
    letters and digits twice or more, or have no vowel at all."""
    if not 5 <= len(token) <= 16 or not token.isalnum() or not token.isascii():
        return False
    letters = [c for c in token if c.isalpha()]
    if not letters:
        return False
    if not any(c in _VOWELS for c in letters):
        return True
    if _CONSONANT_RUN.search(token.lower()):
        return True  # "uurqbl", "bvswwi": four consonants in a row, no syllable
    if len(letters) == len(token):
        return False
    switches = sum(a.isdigit() != b.isdigit() for a, b in itertools.pairwise(token))
    return token[0].isdigit() or switches >= 2


def _phishy(tokens: list[str], index: _Index) -> bool:
    """An account/lure word among the host's tokens. A word that is also a brand (``sso``,
    ``otp``) is no sign for itself: it counts only beside another brand name."""
    words = [t for t in tokens if t in _PHISHY_WORDS]
    if not words:
        return False
    if any(t not in index.names for t in words):
        return True
    return len({t for t in tokens if t in index.names}) >= 2


def _brand_findings(host: str, domain: str, index: _Index) -> list[tuple[str, bool, str | None]]:
    """(detail, high, brand) for every way the host borrows a protected brand. High: the host is
    not the brand's and reads as it (a look-alike, a brand domain or name inside it with a sign of
    phishing); low: a lone resemblance (an unrelated word one letter off a brand). ``brand``: the
    protected domain or brand name it borrows, when the check knows it (for explanations)."""
    label = _label_of(domain)
    suffix = domain[len(label) + 1 :]
    tld = suffix.rsplit(".", 1)[-1]
    brand_tld = index.names.get(tld)
    if brand_tld is not None and not brand_tld[1] and len(tld) >= 4 and tld not in _RISKY_TLDS:
        return []  # banco.bradesco: a brand's own top-level domain, closed to anyone else
    rest = host[: -len(suffix) - 1] if host.endswith("." + suffix) else host
    tokens = [t for t in _TOKEN_SPLIT.split(rest) if t]
    label_tokens = [t for t in label.split("-") if t]
    # on a hosting platform (netflix-clone.vercel.app) the name is a user's project and the TLD
    # is the platform's: a brand name there needs a sign of its own
    hosted = private_suffix(suffix)
    risky = tld in _RISKY_TLDS and not hosted
    phishy = _phishy(tokens, index)
    out: list[tuple[str, bool, str | None]] = []
    embedded_domain = _embedded_domain(host, domain, index)
    embedded = embedded_domain is not None
    if embedded:
        out.append(("brand-domain-embedded", True, embedded_domain))
    folded = _fold(label)
    hit = index.skeletons.get(skeleton(domain)) or index.brands.get(folded)
    if hit and hit != domain:
        if _label_of(hit) != label:
            out.append(("ascii-lookalike", True, hit))
        else:
            out.append(("other-suffix", risky or phishy, hit))
    # paypal-de, santander-es: a country code beside a brand in the registered name (not the
    # name itself: booking.uz.gov.ua is Ukraine's railway, "uz" its whole name)
    country = len(label_tokens) > 1 and any(len(t) == 2 and t.isalpha() for t in label_tokens)
    label_hits = _name_matches(label_tokens, index)
    sub_hits = _name_matches(tokens[: len(tokens) - len(label_tokens)], index)
    lookalike = any(d == "ascii-lookalike" for d, _, _ in label_hits + sub_hits)
    # securepaypal, paypalverify (a lure word beside the brand, not inside its own name:
    # socialsecurity.be is the Belgian social security's own)
    own = label if label in index.names else index.contains_name(label)
    rest = label.replace(own, " ") if own else label
    glued = any(w in rest for w in _PHISHY_WORDS if len(w) >= 5)
    # a brand beside a machine-generated name on shared hosting (paypal-x7k2qz.workers.dev,
    # brand.qzxvw.web.app) is a phishing kit's deployment: a sign there
    generated = hosted and any(_generated(t) for t in tokens)
    # a brand LEFT of the user's project on shared hosting (postnord.ujenf.vercel.app): the
    # platforms give one name per project, a label above it is the kit's decoration
    above_project = hosted and bool(sub_hits)
    sign = risky or phishy or embedded or country or lookalike or generated or above_project
    out.extend(
        (detail, sign or glued or (not needs_sign and not hosted), brand)
        for detail, needs_sign, brand in label_hits
    )
    if sign:  # a brand word as a subdomain label (github.acme-corp.com) alone is no phishing
        out.extend((detail, True, brand) for detail, _, brand in sub_hits)
    high = any(h for _, h, _ in out)
    if not high and len(label_tokens) == 1 and len(folded) >= _MIN_EDIT_LEN - 1:
        # paypall.com: a brand with a doubled letter also contains the brand's name (a LOW
        # brand-name hit): the look-alike spelling is what makes it high
        edit = index.one_edit(_edit_fold(label))
        if edit is not None and (edit == "visual" or not out):
            out.append(("edit-distance", edit == "visual", None))
    if not out:
        for token in label_tokens:
            if len(token) >= _MIN_EDIT_LEN and index.one_edit(_edit_fold(token)) == "visual":
                out.append(("edit-distance", sign, None))
                break
    finance = [t for t in label_tokens if t.startswith(_FINANCE_STEMS)]
    strong_word = any(
        t in _PHISHY_WORDS and t not in _WEAK_WORDS and t not in finance for t in label_tokens
    )
    if not out and len(label_tokens) > 1 and (risky or finance) and strong_word:
        out.append(("phishy-name", True, None))  # account-security.xyz, bancoxyz-seguridad.com
    return out


def _allowed(host: str, domain: str | None, allowed: frozenset[str]) -> bool:
    return host in allowed or (domain is not None and domain in allowed)


def _name_findings(host: str, raw_host: str, domain: str | None, cfg: UrlConfig) -> list[Finding]:
    out: list[Finding] = []
    unicode_host = _to_unicode(host)
    shown_host = unicode_host or _punycode_labels(host)
    if _has_invisible(raw_host):
        out.append(
            _host_finding(Reason.INVISIBLE_CHARS, Severity.HIGH, "host", "invisible-char", "host")
        )
    elif not _raw_matches(raw_host, host, shown_host):
        out.append(_host_finding(Reason.CONFUSABLE_HOST, Severity.HIGH, "host-mismatch"))
    if any(c in _FAKE_SEPARATORS for c in raw_host + shown_host):
        out.append(_host_finding(Reason.CONFUSABLE_HOST, Severity.HIGH, "fake-separator"))
    index = _index(cfg.protected_domains)
    trusted = domain is not None and (domain in cfg.trusted_domains or domain in index.domains)
    if unicode_host is None and "xn--" in host:
        out.append(_host_finding(Reason.CONFUSABLE_HOST, Severity.LOW, "invalid-idn"))
    labels = shown_host.split(".")
    tld = host.rstrip(".").rsplit(".", 1)[-1]
    is_idn = any(lb.startswith("xn--") for lb in host.split("."))
    out.extend(_script_findings(labels, tld))
    if is_idn and domain is not None and not trusted:
        u_domain = _to_unicode(domain) or domain
        brand = _skeleton_match(u_domain, index) if not u_domain.isascii() else None
        if brand is not None:
            out.append(
                _host_finding(
                    Reason.CONFUSABLE_HOST, Severity.HIGH, "skeleton-match", f"skeleton:{brand}"
                )
            )
    if is_idn and not trusted:
        out.append(_host_finding(Reason.IDN_HOST, Severity.LOW, "punycode", concept="idn-host"))
    bare = host.rstrip(".")
    latin = all(_scripts_of(c) <= {"Latin"} for c in shown_host)
    if is_idn and not trusted and domain is not None and latin:
        # itaú-seguranca.app reads as itau-seguranca.app: the brand checks on its ASCII skeleton
        # (Latin letters with marks only: other scripts have the whole-script rules above)
        folded = _strip_marks(unicodedata.normalize("NFD", skeleton(shown_host))).lower()
        folded_domain = registrable_domain(folded) if folded.isascii() else None
        if folded_domain is not None and folded_domain not in index.domains:
            for detail, high, brand in _brand_findings(folded.rstrip("."), folded_domain, index):
                if high:
                    evidence = _brand_evidence(detail, brand)
                    out.append(
                        Finding(Reason.CONFUSABLE_HOST, PATH, Severity.HIGH, detail, evidence)
                    )
    if domain is None and bare.count(".") >= 1:
        # an unlisted suffix (paypal.com.evil.example, a private TLD): read its last two labels
        # as the registrable domain, for the brand checks only
        domain = ".".join(bare.rsplit(".", 2)[-2:])
        trusted = domain in cfg.trusted_domains
    if not is_idn and domain is not None and not trusted:
        for detail, high, brand in _brand_findings(bare, domain, index):
            evidence = _brand_evidence(detail, brand)
            if high:
                out.append(Finding(Reason.CONFUSABLE_HOST, PATH, Severity.HIGH, detail, evidence))
            else:
                out.append(Finding(Reason.TYPOSQUAT, PATH, Severity.LOW, detail, evidence))
    return out


def check_host(host: str, raw_host: str, cfg: UrlConfig) -> list[Finding]:
    """Findings for one URL host. ``host`` is the WHATWG canonical host (A-labels, dotted IPv4 or
    bracketed IPv6); ``raw_host`` is the host as written in the URL. Never raises on odd input."""
    if len(host) + len(raw_host) > 512:  # beyond DNS limits: not worth a cache slot
        return _check_host(host, raw_host, cfg)
    return list(_check_host_cached(host, raw_host, cfg))


@functools.lru_cache(maxsize=4096)
def _check_host_cached(host: str, raw_host: str, cfg: UrlConfig) -> tuple[Finding, ...]:
    return tuple(_check_host(host, raw_host, cfg))


def _check_host(host: str, raw_host: str, cfg: UrlConfig) -> list[Finding]:
    host = host.lower()
    if not host:
        return [Finding(Reason.MALFORMED, PATH, Severity.HIGH, "host")]
    is_ip = host.startswith("[") or _ip_of(host) is not None
    domain = None if is_ip else registrable_domain(host)
    out = _check_ip(host, raw_host) if is_ip else _name_findings(host, raw_host, domain, cfg)
    if cfg.allowed_hosts and not _allowed(host.rstrip("."), domain, cfg.allowed_hosts):
        out.append(
            _host_finding(
                Reason.HOST_NOT_ALLOWED, Severity.HIGH, "host", "not-in-allowed-hosts", "host"
            )
        )
    return out
