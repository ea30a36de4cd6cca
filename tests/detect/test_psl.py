"""gateway.detect.psl must give exactly tldextract's answers (it replaces it to save start-up)."""

from __future__ import annotations

import contextlib
import functools
import subprocess
import sys

import pytest
import tldextract
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.detect.psl import _RULE_RE, _snapshot, split_host


@functools.cache
def _reference() -> tldextract.TLDExtract:
    return tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
    )


@pytest.fixture
def reference() -> tldextract.TLDExtract:
    return _reference()


def _expected(ext: tldextract.TLDExtract, host: str) -> tuple[str, str]:
    result = ext(host)
    return str(result.domain) if result.suffix else "", str(result.suffix)


def _rules() -> list[str]:
    return [m.group("suffix") for m in _RULE_RE.finditer(_snapshot())]


def test_every_rule_and_its_neighbours_match_tldextract(reference: tldextract.TLDExtract) -> None:
    rules = _rules()
    assert len(rules) > 5_000
    hosts: list[str] = []
    for rule in rules:
        base = rule.lstrip("!").removeprefix("*.")
        hosts += [base, "brand." + base, "a.brand." + base, "www." + base, "x.y." + rule]
        with contextlib.suppress(UnicodeError):
            hosts.append("brand." + base.encode("idna").decode("ascii"))
    mismatches = [h for h in hosts if split_host(h) != _expected(reference, h)]
    assert mismatches == []


@pytest.mark.parametrize(
    "host",
    [
        "forums.bbc.co.uk",
        "foo.github.io",
        "xn--bcher-kva.de",
        "a.b.xn--p1ai",
        "www.ck",
        "a.b.ck",
        "localhost",
        "example.notatld",
        "192.168.1.1",
        "[::1]",
        "[::1]:443",
        "https://user@login.example.com.au:8443/path?q#f",
        "//example.org/x",
        "EXAMPLE.COM.",
        "bücher。example。jp",
        "a..com",
        ".com",
        "",
        "co.uk",
        "[a.com]",
        "xn--zz.com",
    ],
)
def test_edge_cases_match_tldextract(reference: tldextract.TLDExtract, host: str) -> None:
    assert split_host(host) == _expected(reference, host)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "xn--p1ai", "co", "uk", "com", "github", "io", "ck", "www", "", "jp"])
        | st.text(alphabet="ab-.:/@[]。", max_size=6),
        max_size=5,
    )
)
def test_random_hosts_match_tldextract(labels: list[str]) -> None:
    host = ".".join(labels)
    assert split_host(host) == _expected(_reference(), host)


def test_importing_hosts_does_not_import_tldextract_or_requests() -> None:
    code = (
        "import sys, gateway.detect.hosts as h; h.registrable_domain('a.example.co.uk'); "
        "print('tldextract' in sys.modules, 'requests' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_private_suffix() -> None:
    from gateway.detect.psl import private_suffix

    assert private_suffix("vercel.app")
    assert private_suffix("github.io")
    assert not private_suffix("com")
    assert not private_suffix("co.uk")
