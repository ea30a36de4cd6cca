"""Public suffix lookups, offline, without importing tldextract (and with it ``requests``).

The data is tldextract's bundled snapshot of the Public Suffix List (``.tld_set_snapshot`` in the
installed ``tldextract`` package, MPL 2.0, https://publicsuffix.org/), located without importing
the package. The matching rules are the ones tldextract 5.x applies with
``include_psl_private_domains=True`` (exact labels, ``*`` wildcards, ``!`` exceptions, punycode
labels compared in their Unicode form), so results equal ``TLDExtract(suffix_list_urls=(),
include_psl_private_domains=True)`` — ``tests/detect/test_psl.py`` checks that on every rule of the
list. Importing tldextract costs ~0.4 s (most of it ``requests``); this module loads in ~30 ms.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from urllib.parse import scheme_chars

import idna

__all__ = ["private_suffix", "split_host"]

_SEPARATOR = "// ===BEGIN PRIVATE DOMAINS==="
_RULE_RE = re.compile(r"^(?P<suffix>[.*!]*\w[\S]*)", re.UNICODE | re.MULTILINE)
_SCHEME_CHARS = frozenset(scheme_chars)
_IDEOGRAPHIC_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


class _Node:
    __slots__ = ("end", "matches", "private")

    def __init__(self) -> None:
        self.matches: dict[str, _Node] = {}
        self.end = False
        self.private = False


def _snapshot() -> str:
    spec = importlib.util.find_spec("tldextract")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("tldextract's bundled public suffix list is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return (folder / ".tld_set_snapshot").read_text(encoding="utf-8")


@functools.cache
def _trie() -> _Node:
    public, _, private = _snapshot().partition(_SEPARATOR)
    root = _Node()
    for text, is_private in ((public, False), (private, True)):
        # Line by line is _RULE_RE.finditer over the text (its ^ is a line start, [\S] never
        # crosses a newline); comment and blank lines cannot match and are skipped unparsed.
        for line in text.split("\n"):
            if not line or line[0] == "/":
                continue
            m = _RULE_RE.match(line)
            if m is None:
                continue
            node = root
            for label in reversed(m.group("suffix").split(".")):
                child = node.matches.get(label)
                if child is None:
                    child = node.matches[label] = _Node()
                node = child
            node.end = True
            node.private = is_private
    return root


def _decode(label: str) -> str:
    lowered = label.lower()
    if lowered.startswith("xn--"):
        try:
            return str(idna.decode(lowered))
        except (UnicodeError, IndexError):
            pass
    return lowered


def _suffix_index(labels: list[str]) -> int | None:
    """Index of the first public-suffix label (private section included), None if none."""
    node = _trie()
    suffix_idx = label_idx = len(labels)
    for label in reversed(labels):
        decoded = _decode(label)
        child = node.matches.get(decoded)
        if child is not None:
            label_idx -= 1
            node = child
            if node.end:
                suffix_idx = label_idx
            continue
        if "*" in node.matches:
            return label_idx if "!" + decoded in node.matches else label_idx - 1
        break
    return None if suffix_idx == len(labels) else suffix_idx


def _netloc(url: str) -> str:
    """The host part of a URL-like string, case kept (tldextract's lenient parsing)."""
    start = url.find("//")
    if start == 0:
        url = url[2:]
    elif start >= 2 and url[start - 1] == ":" and not set(url[: start - 1]) - _SCHEME_CHARS:
        url = url[start + 2 :]
    authority = url.partition("/")[0].partition("?")[0].partition("#")[0]
    host = authority.rpartition("@")[-1]
    if host and host[0] == "[":
        before, bracket, _ = host.partition("]")
        if bracket:
            return f"{before}]"
    return host.partition(":")[0].strip().rstrip(".\u3002\uff0e\uff61")


def split_host(host: str) -> tuple[str, str]:
    """(registrable label, public suffix) of a host or URL, as tldextract's ``domain`` and
    ``suffix``: ``("bbc", "co.uk")`` for ``forums.bbc.co.uk``; the suffix is ``""`` when no rule
    matches (IP addresses, ``localhost``, unknown TLDs), the label ``""`` for a bare suffix."""
    netloc = _netloc(host).translate(_IDEOGRAPHIC_DOTS)
    if len(netloc) >= 4 and netloc[0] == "[" and netloc[-1] == "]":
        return "", ""
    labels = netloc.split(".")
    idx = _suffix_index(labels)
    if idx is None:
        return "", ""
    return (labels[idx - 1] if idx > 0 else ""), ".".join(labels[idx:])


@functools.lru_cache(maxsize=4096)
def private_suffix(suffix: str) -> bool:
    """Is ``suffix`` a rule of the list's private section (``vercel.app``, ``github.io``: names
    under it are chosen by a platform's users, not registered)?"""
    node = _trie()
    for label in reversed(suffix.lower().split(".")):
        child = node.matches.get(_decode(label))
        if child is None:
            return False
        node = child
    return node.end and node.private
