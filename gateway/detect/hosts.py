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
import ipaddress
import re
import unicodedata
from importlib import resources
from typing import TYPE_CHECKING, Final

import idna
import regex

from gateway.detect.findings import Finding, Reason, Severity
from gateway.detect.psl import split_host

if TYPE_CHECKING:
    from gateway.detect.config import UrlConfig

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
_ASCII_FOLD: Final = str.maketrans({"0": "o", "1": "l", "3": "e", "5": "s"})
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
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", s).translate(_confusables()))


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


def _fold(s: str) -> str:
    """ASCII look-alike fold for typosquats: skeleton, lower-case, digit look-alikes, rn/vv."""
    out = skeleton(s).lower().translate(_ASCII_FOLD)
    return out.replace("rn", "m").replace("vv", "w").replace("cl", "d")


def _label_of(domain: str) -> str:
    """The registrable label: ``paypal`` for ``paypal.com``, ``amazon`` for ``amazon.co.uk``."""
    suffix = split_host(domain)[1]
    return domain[: -len(suffix) - 1] if suffix and domain.endswith("." + suffix) else domain


class _Index:
    """Lookup tables over the protected domains, built once per distinct configuration."""

    def __init__(self, domains: frozenset[str]) -> None:
        self.domains = domains
        self.skeletons: dict[str, str] = {}  # skeleton of the whole domain → domain
        self.label_skeletons: dict[str, str] = {}  # skeleton of the brand label → domain
        self.brands: dict[str, str] = {}  # folded brand label → domain
        self.deletes: dict[str, set[str]] = {}  # brand minus one character → brands
        for domain in sorted(domains):
            label = _label_of(domain)
            self.skeletons.setdefault(skeleton(domain), domain)
            if len(label) < _MIN_BRAND_LEN:
                continue
            self.label_skeletons.setdefault(skeleton(label), domain)
            folded = _fold(label)
            self.brands.setdefault(folded, domain)
            if len(folded) >= _MIN_EDIT_LEN:
                for i in range(len(folded)):
                    self.deletes.setdefault(folded[:i] + folded[i + 1 :], set()).add(folded)

        long_brands = sorted((b for b in self.brands if len(b) >= _MIN_SUBSTRING_LEN), key=len)
        self._long_brands = re.compile("|".join(re.escape(b) for b in reversed(long_brands)))

    def contains_brand(self, word: str) -> bool:
        """True if a distinctive (long) brand occurs inside ``word`` (``securepaypal``)."""
        return bool(self._long_brands.pattern) and self._long_brands.search(word) is not None

    def within_one_edit(self, word: str) -> bool:
        """True if a protected brand is at Damerau distance exactly 1 from ``word`` (one
        substitution, insertion, deletion or adjacent swap), by delete-neighbourhood lookups."""
        if len(word) > 64 or word in self.brands:
            return False
        if word in self.deletes:
            return True  # word is a brand with one character missing
        for i in range(len(word)):
            shorter = word[:i] + word[i + 1 :]
            if len(shorter) >= _MIN_EDIT_LEN and shorter in self.brands:
                return True  # one extra character
            for brand in self.deletes.get(shorter, ()):
                if len(brand) == len(word) and brand[:i] + brand[i + 1 :] == shorter:
                    return True  # one substituted character
            if i + 1 < len(word):
                swapped = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
                if len(swapped) >= _MIN_EDIT_LEN and swapped in self.brands:
                    return True
        return False


@functools.lru_cache(maxsize=32)
def _index(extra: frozenset[str]) -> _Index:
    return _Index(_seed_protected() | extra)


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
    return [Finding(Reason.IP_LITERAL, PATH, Severity.HIGH, kind)]


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
            out.append(Finding(Reason.CONFUSABLE_HOST, PATH, Severity.HIGH, "mixed-script"))
        elif _whole_script_confusable(label, tld):
            out.append(Finding(Reason.CONFUSABLE_HOST, PATH, Severity.HIGH, "whole-script"))
    return out


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


def _typosquat(host: str, domain: str, index: _Index) -> str | None:
    """Detail label of an ASCII typosquat of a protected domain, or None."""
    label = _label_of(domain)
    folded = _fold(label)
    hit = index.skeletons.get(skeleton(domain)) or index.brands.get(folded)
    if hit is not None and hit != domain:
        return "lookalike"
    dehyphen = folded.replace("-", "")
    if dehyphen != folded and dehyphen in index.brands:
        return "hyphenated"
    tokens = [t for t in folded.split("-") if t]
    if len(tokens) > 1 and any(t in index.brands for t in tokens):
        return "added-words"
    if len(folded) > _MIN_SUBSTRING_LEN and index.contains_brand(dehyphen):
        return "added-words"
    if index.within_one_edit(folded):
        return "edit-distance"
    sub = host[: -len(domain)].rstrip(".") if host.endswith("." + domain) else ""
    if not sub:
        return None
    parts = sub.split(".")
    for i in range(len(parts)):  # a whole protected domain: paypal.com.evil.net
        for j in range(i + 2, min(len(parts), i + 4) + 1):
            if ".".join(parts[i:j]) in index.domains:
                return "brand-in-subdomain"
    if any(len(p) >= _MIN_SUBSTRING_LEN and _fold(p) in index.brands for p in parts):
        return "brand-in-subdomain"  # a distinctive brand label: login.paypal.verify.xyz
    return None


def _allowed(host: str, domain: str | None, allowed: frozenset[str]) -> bool:
    return host in allowed or (domain is not None and domain in allowed)


def _name_findings(host: str, raw_host: str, domain: str | None, cfg: UrlConfig) -> list[Finding]:
    out: list[Finding] = []
    unicode_host = _to_unicode(host)
    shown_host = unicode_host or _punycode_labels(host)
    if _has_invisible(raw_host):
        out.append(Finding(Reason.INVISIBLE_CHARS, PATH, Severity.HIGH, "host"))
    elif not _raw_matches(raw_host, host, shown_host):
        out.append(Finding(Reason.CONFUSABLE_HOST, PATH, Severity.HIGH, "host-mismatch"))
    index = _index(cfg.protected_domains)
    trusted = domain is not None and (domain in cfg.trusted_domains or domain in index.domains)
    if unicode_host is None and "xn--" in host:
        out.append(Finding(Reason.CONFUSABLE_HOST, PATH, Severity.LOW, "invalid-idn"))
    labels = shown_host.split(".")
    tld = host.rstrip(".").rsplit(".", 1)[-1]
    is_idn = any(lb.startswith("xn--") for lb in host.split("."))
    out.extend(_script_findings(labels, tld))
    if is_idn and domain is not None and not trusted:
        u_domain = _to_unicode(domain) or domain
        if not u_domain.isascii() and _skeleton_match(u_domain, index) is not None:
            out.append(Finding(Reason.CONFUSABLE_HOST, PATH, Severity.HIGH, "skeleton-match"))
    if is_idn and not trusted:
        out.append(Finding(Reason.IDN_HOST, PATH, Severity.LOW, "punycode"))
    if not is_idn and domain is not None and not trusted:
        detail = _typosquat(host.rstrip("."), domain, index)
        if detail is not None:
            out.append(Finding(Reason.TYPOSQUAT, PATH, Severity.LOW, detail))
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
        out.append(Finding(Reason.HOST_NOT_ALLOWED, PATH, Severity.HIGH, "host"))
    return out
