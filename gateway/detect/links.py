"""Find text that a client would render as a navigable link (form mode forbids them).

What counts (``Finding.detail`` = kind, never the URL):

``javascript`` / ``data`` / ``file``
    ``javascript:``, ``vbscript:``, ``data:<mime>``, ``file:/`` — dangerous whatever the context.
``scheme``
    any ``scheme://`` (also ``https:\\\\host`` and ``https:host``, which browsers accept), and
    known non-hierarchical schemes followed by a value (``mailto:x``, ``tel:+1…``, ``intent:…``,
    ``ms-settings:…``). ``Note: text`` or ``Time:10:30`` are not schemes.
``www``, ``protocol-relative`` (``//host.tld``), ``ip`` (IPv4 dotted quad, bracketed IPv6)
``markdown``
    ``[text](target)``, ``![alt](src)`` and reference definitions ``[id]: target``.
``html``
    link-bearing tags and attributes (``<a``, ``<img``, ``href=``, ``src=``, …).
``autolink``
    ``<scheme:…>`` and ``<user@host.tld>`` (CommonMark turns both into links).
``obfuscated``
    defanged links (``example[.]com``, ``hxxps://``, ``example dot com``). They are not clickable,
    but inviting the user to re-type a hidden address is the same phishing move: reported.
``bare-domain``
    ``example.com``, ``login.example.com.evil.xyz``, IDNs such as ``пример.рф`` — any dotted name
    ending in a real top-level domain (the full IANA list bundled with linkify-it-py, MIT). Not
    clickable in most renderers: form checks drop it where text only *mentions* a domain (a
    field's description or sample value, "as shown on github.com").
``lookalike-domain``
    a bare domain that is itself a lure: a brand look-alike, a brand's name or domain inside
    another domain, a throw-away phishing name (``gateway.detect.hosts.suspicious_host``) or a
    link shortener. Reported in addition to ``bare-domain`` and kept wherever it appears.

Decisions:

* A bare e-mail address (``support@example.com``) is *not* a link here: it is profile data and
  the spec allows asking for it; ``mailto:`` and ``<a@b.example>`` are links.
* File names whose extension is also a TLD (``README.md``, ``main.py``, ``report.zip``) are not
  links when they are ``name.ext`` (or ``name.1.2.ext``) without port or path; with more labels
  (``microsoft.com.zip``) or a path they are.
* ``e.g.``, ``i.e.``, version numbers (``v1.2.3``), decimals (``3.14``) and times (``10.30``) never
  end in a TLD, so they are not links; a bare dotted quad (``1.2.3.4``) is reported as ``ip``.
* A name with non-ASCII letters also needs a real TLD (IDN TLDs such as ``.рф`` count). linkify-it
  accepts any TLD after a Unicode label, but with ``。`` read as a dot that would make ordinary
  Chinese and Japanese prose a link.
* Dotted code identifiers that end in a TLD (``user.name``, ``ASP.NET``) are reported: we cannot
  tell them from host names, and a false block here is cheaper than a missed link.
* Past 4096 distinct dotted names in one text the finder stops and reports ``bare-domain``
  (fail closed; real elicitations hold a handful).

linkify-it-py itself was measured at ~16 s per MB of dotted text, so it is not run on input: this
module uses RE2 patterns (linear time) and takes only linkify-it-py's TLD list.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

import idna
import re2
from linkify_it.tlds import TLDS

from gateway.detect.findings import Finding, Reason, Severity
from gateway.detect.hosts import known_brand_domain, registrable_domain, suspicious_host
from gateway.detect.normalize import strip_invisible

__all__ = ["find_links", "link_kinds"]

# TLDs that are also common file extensions: "name.ext" is a file name, not a host.
_FILE_EXTS = frozenset(
    {"zip", "mov", "md", "py", "rs", "sh", "pl", "cc", "ai", "so", "ps", "tf", "pm", "mk", "in",
     "am", "ac", "sc", "sv", "pro", "java", "ml", "run", "bz", "gs", "ws", "im", "ms", "mo", "ss",
     "cl", "st", "gd", "tr", "app", "data", "new", "rest", "ls"}
)  # fmt: skip
_PREV = r"(?:^|[^a-z0-9+.\-])"  # no scheme character right before a scheme
_HIER = re2.compile(_PREV + r"([a-z][a-z0-9+.\-]{0,31}):[/\\]{2}")
_SPECIAL_NO_SLASH = re2.compile(_PREV + r"(?:https?|ftp|wss?):[^\s/\\]")
_OPAQUE = re2.compile(
    _PREV + r"(?:mailto|tel|sms|smsto|mms|callto|facetime|facetime-audio|skype|intent|market"
    r"|itms|itms-apps|itms-services|magnet|bitcoin|ethereum|sip|sips|xmpp|webcal|geo|maps"
    r"|whatsapp|tg|viber|zoommtg|zoomus|msteams|search-ms|steam|spotify|slack|discord|vscode"
    r"|vscode-insiders|chrome|edge|chrome-extension|moz-extension|ssh|sftp|ldap|ldaps|smb|nfs"
    r"|afp|news|nntp|telnet|irc|ircs|gopher|feed|content|resource|ms-[a-z0-9\-]{1,40})"
    r":[^\s]"
)
_WWW = re2.compile(
    r"(?:^|[^a-z0-9\x{80}-\x{10ffff}\-.@_/])www[0-9]{0,3}\.[a-z0-9\x{80}-\x{10ffff}\-]"
)
_PROTOCOL_RELATIVE = re2.compile(
    r"(?:^|[\s(\[<\"'=])//[a-z0-9\x{80}-\x{10ffff}\-]+(?:\.[a-z0-9\x{80}-\x{10ffff}\-]+)+"
)
_MARKDOWN = re2.compile(r"!?\[[^\]\n]*\]\(")
_MARKDOWN_REF = re2.compile(r"(?m)^ {0,3}\[[^\]\n]{1,999}\]:[ \t]*<?[^\s>]*[./:][^\s>]*")
_HTML = re2.compile(
    r"<\s*(?:a|area|base|link|img|image|iframe|frame|frameset|form|input|button|script|object"
    r"|embed|meta|svg|math|video|audio|source|track|portal)(?:\s|/|>|$)"
    r"|\b(?:href|src|srcset|action|formaction|xlink:href|background|poster)\s*=\s*[\"'`]?[^\s\"'`>]"
)
_AUTOLINK = re2.compile(
    r"<[a-z][a-z0-9+.\-]{1,31}:[^\s<>]*>|<[^\s<>@]{1,64}@[^\s<>@]+\.[a-z\x{80}-\x{10ffff}]{2,63}>"
)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = re2.compile(
    r"(?:^|[^0-9a-z.\-_/])" + _OCTET + r"(?:\." + _OCTET + r"){3}(?:$|[^0-9a-z.\-_]|\.(?:$|\s))"
)
_IPV6 = re2.compile(r"\[(?:[0-9a-f]{0,4}:){2,7}[0-9a-f.]{0,15}(?:%[0-9a-z]+)?\]")
_DEFANGED = re2.compile(
    r"[a-z0-9\x{80}-\x{10ffff}\-]\s?"
    r"(?:\[\.\]|\(\.\)|\{\.\}|\[dot\]|\(dot\)|\{dot\}|\[\s\.\s\])"
    r"\s?[a-z0-9\x{80}-\x{10ffff}]"
    r"|\bhxxps?(?:://|\[://\]|\[:\]//)"
)
_SPOKEN_DOT = re2.compile(
    r"(?:^|[^a-z0-9\-])([a-z0-9\-]{2,63}) dot "
    r"(?:com|net|org|io|co|app|dev|xyz|info|biz|me|ru|cn|uk|de|top|site|online|link|ly|gg)"
    r"(?:$|[^a-z0-9\-])"
)
_SPOKEN_STOPWORDS = frozenset(
    {"the", "a", "an", "this", "that", "our", "your", "my", "its", "their", "his", "her", "to",
     "of", "in", "on", "at", "for", "with", "and", "or", "is", "are", "was", "be", "by", "as",
     "from"}
)  # fmt: skip


def _unicode_tld(a_label: str) -> str | None:
    try:
        return str(idna.decode(a_label))
    except (idna.IDNAError, UnicodeError, ValueError):
        return None


@cache
def _tlds() -> frozenset[str]:
    ascii_ = {t.lower() for t in TLDS}
    unicode_ = {u for t in ascii_ if t.startswith("xn--") and (u := _unicode_tld(t))}
    return frozenset(ascii_ | unicode_)


_LABEL_CHARS = "0-9a-z\u0080-\U0010ffff\\-"
# Python ``re``, linear: the look-behind lets a candidate start only where a run of label
# characters starts, and possessive quantifiers never give characters back.
_CANDIDATE = re.compile(rf"(?<![{_LABEL_CHARS}_@./\\])[{_LABEL_CHARS}]++(?:\.[{_LABEL_CHARS}]++)++")
_MAX_CANDIDATES = 4096  # distinct dotted names inspected per text; beyond that: fail closed
_MAX_NAMES = 16  # domain names checked for look-alikes per text


def _label_char(ch: str) -> bool:
    return len(ch) == 1 and (ch.isalnum() or ch in "-_@")


def _is_file_name(labels: list[str], after: str) -> bool:
    if after[:1] in ("/", "?", "#") and after[1:2].strip():
        return False
    if labels[-1] not in _FILE_EXTS:
        return False
    return all(part.isdigit() for part in labels[1:-1])


def _is_domain(text: str, name: str, end: int) -> bool:
    labels = name.split(".")
    # "example.com.x1" is a dotted identifier, not a host: the last label must be a TLD.
    if len(labels) < 2 or not all(labels) or labels[-1] not in _tlds():
        return False
    after = text[end : end + 2]
    first = after[:1]
    if _label_char(first) or (first == "." and _label_char(after[1:2])):
        return False
    return not _is_file_name(labels, after)


def _bare_domains(text: str) -> tuple[bool, list[str]]:
    """(is there a dotted name ending in a real TLD?, the first few such names). Fails closed
    (True) past ``_MAX_CANDIDATES`` candidates."""
    seen: set[tuple[str, str]] = set()
    names: list[str] = []
    for m in _CANDIDATE.finditer(text):
        name, end = m.group(), m.end()
        key = (name, text[end : end + 2])
        if key in seen:
            continue
        if len(seen) >= _MAX_CANDIDATES:
            return True, names
        seen.add(key)
        if _is_domain(text, name, end) and len(names) < _MAX_NAMES:
            names.append(name)
    return bool(names), names


def _lure(names: list[str]) -> bool:
    """A named host that reads as a brand's or hides its target (``paypal-secure-check.com``,
    ``bit.ly``): a lure even in a description, where a plain mention (``github.com``) is not."""
    for name in names:
        if _native_spelling(name):
            continue
        try:
            host = idna.encode(name, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            host = name
        if suspicious_host(host):
            return True
    return False


def _native_spelling(name: str) -> bool:
    """A brand's own domain written with its language's accents in prose ("Ghișeul.ro" for
    ghiseul.ro, "Poșta.ro"): the name as people spell it, not a look-alike host. Only Latin
    letters with marks; any other script is read as a host."""
    if name.isascii():
        return False
    plain = "".join(
        c for c in unicodedata.normalize("NFD", name) if unicodedata.category(c) != "Mn"
    )
    if not plain.isascii():
        return False
    domain = registrable_domain(plain.lower())
    return domain is not None and known_brand_domain(domain)


_JS = re2.compile(_PREV + r"(?:javascript|vbscript|livescript):[ \t]*\S")
_DATA = re2.compile(_PREV + r"data:[ \t]*(?:[a-z]+/[a-z0-9.+\-]+[;,]|[;,])")
_FILE = re2.compile(_PREV + r"file:[ \t]*[/\\]")
_OTHER_DANGEROUS = re2.compile(_PREV + r"(?:blob|filesystem|view-source|jar):[ \t]*\S")


def _dangerous_kinds(text: str) -> list[str]:
    checks = (
        ("javascript", _JS, "script:"),
        ("data", _DATA, "data:"),
        ("file", _FILE, "file:"),
        ("scheme", _OTHER_DANGEROUS, ":"),
    )
    return [
        kind for kind, regex, needle in checks if needle in text and regex.search(text) is not None
    ]


def _spoken_dot(text: str) -> bool:
    for n, m in enumerate(_SPOKEN_DOT.finditer(text)):
        if m.group(1) not in _SPOKEN_STOPWORDS:
            return True
        if n >= 64:  # only stop words so far: prose about "the dot com era", not an address
            break
    return False


# (kind, pattern, substrings of which one must occur for the pattern to have a chance):
# plain ``in`` checks skip most RE2 calls on ordinary text.
_CHEAP: tuple[tuple[str, re2._Regexp, tuple[str, ...]], ...] = (
    ("markdown", _MARKDOWN, ("](",)),
    ("markdown", _MARKDOWN_REF, ("]:",)),
    ("html", _HTML, ("<", "=")),
    ("autolink", _AUTOLINK, ("<",)),
    ("scheme", _HIER, (":/", ":\\")),
    ("scheme", _SPECIAL_NO_SLASH, ("http", "ftp", "ws:", "wss:")),
    ("scheme", _OPAQUE, (":",)),
    ("www", _WWW, ("www",)),
    ("protocol-relative", _PROTOCOL_RELATIVE, ("//",)),
    ("ip", _IPV4, (".",)),
    ("ip", _IPV6, ("[",)),
    ("obfuscated", _DEFANGED, ("[", "(", "{", "hxxp")),
)


_NEEDLES = frozenset(n for _, _, needles in _CHEAP for n in needles)
_DOTS = {ord("\u3002"): ".", ord("\uff61"): ".", ord("\uff0e"): "."}


def _view(text: str) -> str:
    """What a renderer sees: invisibles dropped, NFKC (fullwidth → ASCII), ideographic dots, lower
    case. Look-alike letters are kept: ``пример.рф`` must keep its Cyrillic top-level domain."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", strip_invisible(text)).translate(_DOTS).casefold()


def link_kinds(text: str) -> list[str]:
    """The kinds of navigable link in ``text``, in a stable order, each once."""
    view = _view(text)
    kinds = _dangerous_kinds(view) if ":" in view else []
    present = {n for n in _NEEDLES if n in view}
    for kind, regex, needles in _CHEAP if present else ():
        if kind in kinds or present.isdisjoint(needles):
            continue
        if regex.search(view) is not None:
            kinds.append(kind)
    if "obfuscated" not in kinds and " dot " in view and _spoken_dot(view):
        kinds.append("obfuscated")
    if "." in view:
        found, names = _bare_domains(view)
        if found:
            kinds.append("bare-domain")
        if _lure(names):
            kinds.append("lookalike-domain")
    return kinds


def find_links(text: str, path: str) -> list[Finding]:
    """One ``clickable-url`` finding (HIGH) per kind of link found in ``text``."""
    return [Finding(Reason.CLICKABLE_URL, path, Severity.HIGH, kind) for kind in link_kinds(text)]
