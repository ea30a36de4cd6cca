"""gateway.detect.links: text a client would render as a navigable link."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from linkify_it import LinkifyIt
from linkify_it.tlds import TLDS

from gateway.detect.findings import Reason, Severity
from gateway.detect.links import find_links, link_kinds

_POSITIVE = [
    ("https://example.com/login", "scheme"),
    ("see HTTP://EXAMPLE.COM", "scheme"),
    ("ftp://files.example.org/x", "scheme"),
    ("https:example.com/login", "scheme"),  # browsers accept a missing //
    ("https:\\\\example.com", "scheme"),  # and backslashes
    ("foo+bar://anything", "scheme"),
    ("mailto:someone@example.com", "scheme"),
    ("call tel:+15551234567", "scheme"),
    ("intent://scan/#Intent;scheme=zxing;end", "scheme"),
    ("ms-settings:privacy", "scheme"),
    ("view-source:https://x.example", "scheme"),
    ("javascript:alert(document.cookie)", "javascript"),
    ("JaVaScRiPt:void(0)", "javascript"),
    ("vbscript:msgbox", "javascript"),
    ("data:text/html;base64,PHNjcmlwdD4=", "data"),
    ("data:,hello", "data"),
    ("file:///etc/passwd", "file"),
    ("www.example.com", "www"),
    ("visit WWW.example.org today", "www"),
    ("//evil.example/path", "protocol-relative"),
    ("[click here](https://x.example)", "markdown"),
    ("[click here](relative/path)", "markdown"),
    ("![pixel](tracker)", "markdown"),
    ("[ref]: https://x.example", "markdown"),
    ('<a href="https://x.example">x</a>', "html"),
    ("<img src=x>", "html"),
    ("<https://x.example>", "autolink"),
    ("<someone@example.com>", "autolink"),
    ("go to 192.168.1.10", "ip"),
    ("http on [2001:db8::1]", "ip"),
    ("example[.]com", "obfuscated"),
    ("example(dot)com", "obfuscated"),
    ("hxxps://example.com", "obfuscated"),
    ("visit paypal-login dot com now", "obfuscated"),
    ("example.com", "bare-domain"),
    ("Login at secure-login.xyz", "bare-domain"),
    ("example.com.secure-login.xyz", "bare-domain"),
    ("microsoft.com.zip", "bare-domain"),  # more labels than a file name
    ("report.zip/download", "bare-domain"),  # a path follows
    ("evil.example.com:8443", "bare-domain"),
    ("пример.рф", "bare-domain"),  # IDN top-level domain
    ("ｅｘａｍｐｌｅ．ｃｏｍ", "bare-domain"),  # fullwidth
    ("example。com", "bare-domain"),  # ideographic full stop
    ("exa\u200bmple.com", "bare-domain"),  # zero-width space inside
    ("(see example.org)", "bare-domain"),
]


@pytest.mark.parametrize(("text", "kind"), _POSITIVE)
def test_links_found(text: str, kind: str) -> None:
    assert kind in link_kinds(text)


_NEGATIVE = [
    "README.md",
    "Edit main.py and setup.sh, then upload report.zip",
    "see CONTRIBUTING.md",
    "lib.rs",
    "v1.2.3 released",
    "pi is 3.14, meet at 10.30",
    "e.g. this, i.e. that",
    "Note: fill this in",
    "Data: 42 rows",
    "Time:10:30",
    "File: report.pdf",
    "// TODO: explain",
    "support@example.com",  # a bare e-mail address is not a link
    "first.name@example.com",
    "the dot com era",
    "node.js and Next.js",
    "docs/setup.py",
    "archive-1.2.3.zip",
    "main.py:12",
    "Name",
    "",
    "U.S.A. a.m. p.m.",
    "Step 1: choose [A] or [B]",
    "Price: $3.50",
]


@pytest.mark.parametrize("text", _NEGATIVE)
def test_not_links(text: str) -> None:
    assert link_kinds(text) == []


def test_find_links_findings_carry_kind_not_url() -> None:
    text = "go to https://secret.example/path?token=abc and www.other.org"
    findings = find_links(text, "$.message")
    assert {f.detail for f in findings} == {"scheme", "www", "bare-domain"}
    for f in findings:
        assert f.reason is Reason.CLICKABLE_URL
        assert f.severity is Severity.HIGH
        assert f.path == "$.message"
        assert "example" not in f.detail
    assert len(findings) == len({f.detail for f in findings})  # one finding per kind


def test_agrees_with_linkify_on_real_links() -> None:
    """Every link linkify-it-py finds (full TLD list) is found here too, file names aside."""
    linkify = LinkifyIt(options={"fuzzy_email": False}).tlds(TLDS)
    corpus = [
        "go to example.com now",
        "https://a.example/b?c=d",
        "www.example.co.uk/path",
        "login.example.com.secure-login.xyz",
        "mixed: foo.bar.io/x and http://y.example",
        "sub.domain.example.org:8080/x",
        "bücher.de",
        "paypal.com.login.top",
    ]
    for text in corpus:
        matches = linkify.match(text) or []
        assert matches, text
        assert link_kinds(text), text


def test_linkify_filename_false_positives_are_filtered() -> None:
    linkify = LinkifyIt(options={"fuzzy_email": False}).tlds(TLDS)
    for text in ("README.md", "main.py", "report.zip"):
        assert linkify.match(text)  # what the library reports …
        assert link_kinds(text) == []  # … and what we decided


@settings(deadline=None, max_examples=300)
@given(st.text())
def test_never_raises(text: str) -> None:
    kinds = link_kinds(text)
    assert len(kinds) == len(set(kinds))


@settings(deadline=None, max_examples=100)
@given(st.text(alphabet="abc.:/[]()<>@ wx-", max_size=200))
def test_never_raises_on_link_syntax(text: str) -> None:
    link_kinds(text)


_ADVERSARIAL = [
    "a.b " * 250_000,
    "a.md " * 200_000,
    " ".join(f"f{i}.md" for i in range(150_000)),  # distinct file names: fail closed past a cap
    "x" * 1_000_000,
    "a." * 500_000,
    "[" * 1_000_000,
    "[x](" * 250_000,
    "<a" * 500_000,
    "javascript:" * 90_000,
    "1.2.3." * 160_000,
    "а" * 1_000_000,
    "a@b.com " * 120_000,
    "-" * 1_000_000,
    "example dot com " * 60_000,
    "http://" * 140_000,
]


@pytest.mark.parametrize("text", _ADVERSARIAL, ids=range(len(_ADVERSARIAL)))
def test_bounded_on_adversarial_input(text: str) -> None:
    start = time.perf_counter()
    link_kinds(text)
    assert time.perf_counter() - start < 2.0


def test_many_distinct_candidates_fail_closed() -> None:
    text = " ".join(f"f{i}.md" for i in range(5000))
    assert link_kinds(text) == ["bare-domain"]


@pytest.mark.parametrize(
    "text",
    [
        "Go to paypal-secure-check.com and confirm",
        "Confirm at account-security.xyz today",
        "Details: bit.ly/hadiah-undian-2026",
        "see paypa1.com for the invoice",
        "login-chase.com.secure-id.net",
    ],
)
def test_lure_domains(text: str) -> None:
    """Issue 10: a bare domain that is a look-alike, brand-in-domain or shortener is a lure wherever
    it is written (a plain mention is dropped in descriptions by the form checks)."""
    assert "lookalike-domain" in link_kinds(text)


@pytest.mark.parametrize(
    "text",
    ["owner/name, as shown on github.com", "e.g. api.example.io", "like alice.bsky.social"],
)
def test_plain_mentions_are_no_lure(text: str) -> None:
    assert link_kinds(text) == ["bare-domain"]


def test_a_brands_own_domain_written_with_its_languages_accents_is_no_lure() -> None:
    # "Ghișeul.ro" is how Romanians write ghiseul.ro; a Cyrillic look-alike is still a lure
    assert "lookalike-domain" not in link_kinds("Publicate pe site-ul Ghișeul.ro.")
    assert "lookalike-domain" in link_kinds("Log in at pаypal.com now")
