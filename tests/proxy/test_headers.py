"""Hop-by-hop filtering and the gateway's own Host/Origin checks."""

from __future__ import annotations

from gateway.proxy.headers import (
    HostGuard,
    downstream_response_headers,
    split_host,
    upstream_request_headers,
)


def test_upstream_headers_drop_hop_by_hop_host_origin_and_encoding() -> None:
    out = upstream_request_headers(
        [
            ("Host", "gw:8080"),
            ("Connection", "close, X-Hop"),
            ("X-Hop", "1"),
            ("Transfer-Encoding", "chunked"),
            ("Origin", "http://localhost"),
            ("Accept-Encoding", "gzip"),
            ("Mcp-Session-Id", "s"),
            ("Mcp-Param-A", "1"),
            ("Mcp-Param-A", "2"),
        ]
    )
    assert out == [
        ("Mcp-Session-Id", "s"),
        ("Mcp-Param-A", "1"),
        ("Mcp-Param-A", "2"),
        ("Accept-Encoding", "identity"),
    ]


def test_downstream_headers_keep_sse_headers() -> None:
    out = downstream_response_headers(
        [
            ("Content-Type", "text/event-stream"),
            ("Cache-Control", "no-cache, no-transform"),
            ("X-Accel-Buffering", "no"),
            ("Content-Length", "10"),
            ("Transfer-Encoding", "chunked"),
            ("mcp-session-id", "s"),
        ]
    )
    assert [n for n, _ in out] == [
        "Content-Type",
        "Cache-Control",
        "X-Accel-Buffering",
        "mcp-session-id",
    ]


def test_split_host() -> None:
    assert split_host("LocalHost:80") == ("localhost", 80)
    assert split_host("[::1]:9") == ("[::1]", 9)
    assert split_host("example.com") == ("example.com", None)
    assert split_host("a:b") == ("a", None)


def test_loopback_guard() -> None:
    g = HostGuard(enabled=True, loopback_only=True)
    assert g.host_ok("127.0.0.1:8080")
    assert g.host_ok("localhost")
    assert g.host_ok("[::1]:1")
    assert not g.host_ok("evil.example.com")
    assert not g.host_ok("127.0.0.1.evil.com")
    assert not g.host_ok(None)
    assert g.origin_ok(None)
    assert g.origin_ok("http://localhost:3000")
    assert not g.origin_ok("http://evil.example.com")
    assert not g.origin_ok("null")


def test_explicit_allow_lists() -> None:
    g = HostGuard(
        enabled=True,
        allowed_hosts=frozenset({"gw.example.com", "alt:8443"}),
        allowed_origins=frozenset({"https://app.example.com", "https://dev.example.com:*"}),
    )
    assert g.host_ok("gw.example.com:443")
    assert g.host_ok("alt:8443")
    assert not g.host_ok("alt:8444")
    assert not g.host_ok("localhost")
    assert g.origin_ok("https://app.example.com")
    assert g.origin_ok("https://dev.example.com:9000")
    assert not g.origin_ok("https://evil.example.com")


def test_disabled_guard_accepts_anything() -> None:
    g = HostGuard(enabled=False)
    assert g.host_ok("evil") and g.origin_ok("http://evil")
