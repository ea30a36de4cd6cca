"""Per-upstream settings (gateway/proxy/upstream_settings.py), proven against real servers: a
private CA, an upstream that requires a client certificate, a CONNECT proxy, an unreachable IPv6
address first — each connection made with the settings' own context, proxy and resolver, so the
tests check the configuration's effect, not only its parsing."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from gateway import errors
from gateway.errors import (
    ConfigError,
    UpstreamBusy,
    UpstreamCertificateUntrusted,
    UpstreamClientCertificateRejected,
    UpstreamConnectError,
    UpstreamConnectionRefused,
    UpstreamConnectTimeout,
    UpstreamDNSError,
    UpstreamHostnameMismatch,
    UpstreamProxyAuthRequired,
    UpstreamProxyError,
    UpstreamTLSError,
)
from gateway.proxy.config import load_settings
from gateway.proxy.upstream_settings import (
    SYSTEM_CAS,
    AddrInfo,
    ConnectionSlots,
    DNSCache,
    UpstreamSettings,
    build_upstreams,
    no_proxy_matches,
    open_socket,
    parse_proxy,
    probe,
    proxy_from_environment,
    ready_reason,
)
from tests.upstream_servers import (
    ONLY_NAME,
    ConnectProxy,
    Pki,
    Upstream,
    blackhole,
    dual_stack_lookup,
    mcp_upstream,
    server_context,
    threaded_upstream,
)

BOUND = 10.0  # no test waits longer than this for anything
SECRET = "s3cr3t-upstream-token"
PROXY_PASSWORD = "pr0xy-pa55"


def build(
    config: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    connect: float = 3.0,
    config_file: Path | None = None,
) -> UpstreamSettings:
    """One upstream ``up`` from a config mapping, built as the gateway builds it."""
    if config_file is not None:
        config_file.write_text(yaml.safe_dump({"upstreams": {"up": dict(config)}}))
        settings = load_settings(str(config_file))
        return build_upstreams(settings, environ=environ or {}, source=str(config_file))["up"]
    settings = load_settings(
        None, {"upstreams": {"up": dict(config)}, "timeouts": {"connect": connect}}
    )
    return build_upstreams(settings, environ=environ or {})["up"]


async def call(up: UpstreamSettings, dns: DNSCache | None = None) -> dict[str, Any]:
    """One JSON-RPC POST over a connection opened with the settings (resolver, proxy, TLS
    context, SNI, static headers); a failure comes back classified."""
    async with asyncio.timeout(BOUND):
        sock = await open_socket(up, dns or up.new_dns_cache())
        try:
            reader, writer = await asyncio.open_connection(
                sock=sock, ssl=up.ssl, server_hostname=up.server_name
            )
        except OSError as exc:
            sock.close()
            raise up.classify(exc) from exc
        body = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}'
        headers = up.apply_headers(
            [("Content-Type", "application/json"), ("Authorization", "Bearer client-token")]
        )
        head = f"POST {up.url.raw_path} HTTP/1.1\r\nHost: {up.address}\r\n"
        head += "".join(f"{n}: {v}\r\n" for n, v in headers)
        head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        try:
            writer.write(head.encode() + body)
            answer = await reader.read()
        except OSError as exc:
            raise up.classify(exc) from exc
        finally:
            writer.close()
        if not answer:
            raise up.classify(ConnectionResetError("closed before answering"))
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line.startswith(b"HTTP/1.1 200"), status_line
        result: dict[str, Any] = json.loads(rest.partition(b"\r\n\r\n")[2])
        return result


@pytest.fixture
async def tls_upstream(pki: Pki) -> AsyncIterator[Upstream]:
    async with mcp_upstream(server_context(pki)) as up:
        yield up


@pytest.fixture
def mtls_upstream(pki: Pki) -> Iterator[Upstream]:
    with threaded_upstream(server_context(pki, require_client_cert=True)) as up:
        yield up


# -- private CA -------------------------------------------------------------------------------


async def test_a_private_ca_file_makes_the_upstream_trusted(
    pki: Pki, tls_upstream: Upstream
) -> None:
    up = build({"url": tls_upstream.url(), "tls": {"ca_file": str(pki.ca_file)}})
    assert up.ca == str(pki.ca_file)
    assert (await call(up))["result"]["content"][0]["text"] == "ok"
    assert await probe(up, up.new_dns_cache()) is None


async def test_without_the_ca_file_the_certificate_is_untrusted_by_the_system_cas(
    tls_upstream: Upstream,
) -> None:
    up = build({"url": tls_upstream.url()})
    with pytest.raises(UpstreamCertificateUntrusted) as err:
        await call(up)
    e = err.value
    assert up.ca == SYSTEM_CAS and SYSTEM_CAS in e.detail
    assert "127.0.0.1" in e.detail and e.upstream == "up" and e.address == up.address
    assert e.message == "upstream certificate not trusted"  # the client's: no host, no file
    assert (e.http_status, e.jsonrpc_code) == (502, errors.GATEWAY_UPSTREAM_ERROR)
    failed = await probe(up, up.new_dns_cache())
    assert isinstance(failed, UpstreamCertificateUntrusted) and ready_reason(failed) == "tls"


async def test_another_ca_file_names_that_file(pki: Pki, tls_upstream: Upstream) -> None:
    up = build({"url": tls_upstream.url(), "tls": {"ca_file": str(pki.other_ca_file)}})
    with pytest.raises(UpstreamCertificateUntrusted) as err:
        await call(up)
    assert str(pki.other_ca_file) in err.value.detail
    assert str(pki.other_ca_file) not in err.value.message


async def test_server_name_sets_sni_and_the_verified_name(pki: Pki) -> None:
    """The certificate names only upstream.test; the URL says 127.0.0.1."""
    async with mcp_upstream(server_context(pki, named_only=True)) as server:
        plain = build({"url": server.url(), "tls": {"ca_file": str(pki.ca_file)}})
        with pytest.raises(UpstreamHostnameMismatch) as err:
            await call(plain)
        assert "127.0.0.1" in err.value.detail and "server_name" in err.value.detail
        failed = await probe(plain, plain.new_dns_cache())
        assert isinstance(failed, UpstreamHostnameMismatch) and ready_reason(failed) == "tls"
        named = build(
            {"url": server.url(), "tls": {"ca_file": str(pki.ca_file), "server_name": ONLY_NAME}}
        )
        assert named.server_name == ONLY_NAME
        assert (await call(named))["id"] == 7


async def test_verify_off_accepts_an_untrusted_certificate(tls_upstream: Upstream) -> None:
    up = build({"url": tls_upstream.url(), "tls": {"verify": False}})
    assert up.ssl is not None and up.ssl.verify_mode == ssl.CERT_NONE
    assert (await call(up))["id"] == 7


def test_one_context_per_upstream_built_once(pki: Pki) -> None:
    settings = load_settings(
        None,
        {
            "upstreams": {
                "a": {"url": "https://a.example/mcp", "tls": {"ca_file": str(pki.ca_file)}},
                "b": {"url": "https://b.example/mcp"},
                "c": {"url": "http://c.example/mcp"},
            }
        },
    )
    built = build_upstreams(settings, environ={})
    a, b = built["a"].ssl, built["b"].ssl
    assert a is not None and b is not None and a is not b
    assert built["c"].ssl is None and built["c"].server_name is None
    assert len(a.get_ca_certs()) == 1  # only the private CA: it replaces the system store


# -- mTLS -------------------------------------------------------------------------------------


async def test_a_client_certificate_is_presented(pki: Pki, mtls_upstream: Upstream) -> None:
    up = build(
        {
            "url": mtls_upstream.url(),
            "tls": {
                "ca_file": str(pki.ca_file),
                "cert_file": str(pki.client_cert),
                "key_file": str(pki.client_key),
            },
        }
    )
    assert (await call(up))["id"] == 7
    combined = build(
        {
            "url": mtls_upstream.url(),
            "tls": {"ca_file": str(pki.ca_file), "cert_file": str(pki.client_combined)},
        }
    )
    assert (await call(combined))["id"] == 7


async def test_no_client_certificate_is_rejected_as_such(pki: Pki, mtls_upstream: Upstream) -> None:
    up = build({"url": mtls_upstream.url(), "tls": {"ca_file": str(pki.ca_file)}})
    with pytest.raises(UpstreamClientCertificateRejected) as err:
        await call(up)
    assert "none presented" in err.value.detail
    assert err.value.message == "upstream rejected the gateway's client certificate"


async def test_a_client_certificate_of_another_ca_is_rejected_as_such(
    pki: Pki, mtls_upstream: Upstream
) -> None:
    up = build(
        {
            "url": mtls_upstream.url(),
            "tls": {
                "ca_file": str(pki.ca_file),
                "cert_file": str(pki.foreign_client_cert),
                "key_file": str(pki.foreign_client_key),
            },
        }
    )
    with pytest.raises(UpstreamClientCertificateRejected) as err:
        await call(up)
    assert str(pki.foreign_client_cert) in err.value.detail


# -- egress proxy -----------------------------------------------------------------------------


async def test_a_configured_proxy_tunnels_to_the_https_upstream(
    pki: Pki, tls_upstream: Upstream
) -> None:
    async with ConnectProxy(credentials=("gw", PROXY_PASSWORD)) as proxy:
        url = f"http://gw:{PROXY_PASSWORD}@127.0.0.1:{proxy.port}"
        up = build(
            {"url": tls_upstream.url(), "tls": {"ca_file": str(pki.ca_file)}, "proxy": url},
            {"NO_PROXY": "*"},  # an explicit proxy wins over the environment
        )
        assert up.proxy is not None and up.proxy.source == "config"
        assert PROXY_PASSWORD not in repr(up) and "gw:" not in repr(up)
        assert (await call(up))["id"] == 7
        assert proxy.tunnels == 1 and proxy.requests == [tls_upstream.url()[8:-4]]
        # through the tunnel, a certificate failure is the upstream's, not the proxy's
        untrusted = build({"url": tls_upstream.url(), "proxy": url})
        with pytest.raises(UpstreamCertificateUntrusted) as err:
            await call(untrusted)
        assert err.value.address == untrusted.address and PROXY_PASSWORD not in err.value.detail
        assert proxy.tunnels == 2


async def test_a_proxy_that_wants_credentials(pki: Pki, tls_upstream: Upstream) -> None:
    async with ConnectProxy(credentials=("gw", PROXY_PASSWORD)) as proxy:
        tls = {"ca_file": str(pki.ca_file)}
        bare = build({"url": tls_upstream.url(), "tls": tls, "proxy": proxy.url})
        with pytest.raises(UpstreamProxyAuthRequired) as err:
            await call(bare)
        assert "no credentials set" in err.value.detail
        wrong = build(
            {
                "url": tls_upstream.url(),
                "tls": tls,
                "proxy": f"http://gw:nope@127.0.0.1:{proxy.port}",
            }
        )
        with pytest.raises(UpstreamProxyAuthRequired) as err:
            await call(wrong)
        assert "refused" in err.value.detail and "nope" not in err.value.detail
        assert err.value.address == f"127.0.0.1:{proxy.port}"
        assert proxy.tunnels == 0


async def test_a_proxy_that_refuses_the_tunnel(pki: Pki, tls_upstream: Upstream) -> None:
    async with ConnectProxy(refuse=403) as proxy:
        up = build(
            {"url": tls_upstream.url(), "tls": {"ca_file": str(pki.ca_file)}, "proxy": proxy.url}
        )
        with pytest.raises(UpstreamProxyError) as err:
            await call(up)
        assert not isinstance(err.value, UpstreamProxyAuthRequired)
        assert "403" in err.value.detail
        failed = await probe(up, up.new_dns_cache())
        assert isinstance(failed, UpstreamProxyError) and ready_reason(failed) == "proxy"


async def test_a_proxy_that_is_down(pki: Pki, tls_upstream: Upstream) -> None:
    async with ConnectProxy() as proxy:
        port = proxy.port
    up = build({"url": tls_upstream.url(), "proxy": f"http://127.0.0.1:{port}"})
    with pytest.raises(UpstreamProxyError) as err:
        await call(up)
    assert "egress proxy 127.0.0.1" in err.value.detail


async def test_an_http_upstream_through_a_proxy_is_tunnelled_too() -> None:
    """CONNECT for http upstreams as well: the proxy never sees (nor logs) a request."""
    async with mcp_upstream(None) as server, ConnectProxy() as proxy:
        up = build({"url": server.url("http"), "proxy": proxy.url})
        assert up.ssl is None and (await call(up))["id"] == 7
        assert proxy.tunnels == 1 and proxy.requests == [f"127.0.0.1:{server.port}"]


async def test_a_proxy_that_talks_for_the_upstream_is_refused(
    pki: Pki, tls_upstream: Upstream
) -> None:
    async with ConnectProxy(trailing=b"HTTP/1.1 200 OK\r\n\r\n") as proxy:
        up = build(
            {"url": tls_upstream.url(), "tls": {"ca_file": str(pki.ca_file)}, "proxy": proxy.url}
        )
        with pytest.raises(UpstreamProxyError) as err:
            await call(up)
        assert "sent data after its answer" in err.value.detail


async def test_tls_to_a_plain_http_server_is_a_tls_failure() -> None:
    async with mcp_upstream(None) as server:
        up = build({"url": server.url("https")})
        with pytest.raises(UpstreamTLSError) as err:
            await call(up)
    assert type(err.value) is UpstreamTLSError and err.value.kind == "tls"
    assert err.value.message == "upstream TLS handshake failed"
    assert "TLS handshake with 127.0.0.1" in err.value.detail


async def test_https_proxy_from_the_environment_and_no_proxy_bypass(
    pki: Pki, tls_upstream: Upstream
) -> None:
    """The upstream is reached by a name only the proxy resolves (loopback is never proxied
    from the environment, so the test uses a non-loopback name)."""
    async with ConnectProxy(hosts={"mcp.internal.test": "127.0.0.1"}) as proxy:
        config = {
            "url": f"https://mcp.internal.test:{tls_upstream.port}/mcp",
            "tls": {"ca_file": str(pki.ca_file), "server_name": "upstream.test"},
        }
        env = {"HTTPS_PROXY": f"127.0.0.1:{proxy.port}", "NO_PROXY": "other.test"}
        up = build(config, env)
        assert up.proxy is not None and up.proxy.source == "HTTPS_PROXY"
        assert (await call(up))["id"] == 7
        assert proxy.tunnels == 1
        bypass = build(config, {**env, "no_proxy": ".internal.test"})
        assert bypass.proxy is None  # lowercase no_proxy first; direct: the name does not resolve
        with pytest.raises(UpstreamDNSError):
            await call(bypass, DNSCache(10, lookup=_fail_lookup))
        direct = build({**config, "proxy": "none"}, env)
        assert direct.proxy is None
        assert proxy.tunnels == 1


async def _fail_lookup(host: str, port: int) -> list[AddrInfo]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "exempt"),
    [
        ("api.example.com", 443, "*", True),
        ("api.example.com", 443, "example.com", True),
        ("example.com", 443, "example.com", True),
        ("api.example.com", 443, ".example.com", True),
        ("example.com", 443, ".example.com", True),
        ("api.example.com", 443, "*.example.com", True),
        ("badexample.com", 443, "example.com", False),
        ("API.Example.COM", 443, " other.org , EXAMPLE.com ", True),
        ("api.example.com", 443, "example.com:8443", False),
        ("api.example.com", 8443, "example.com:8443", True),
        ("10.1.2.3", 443, "10.0.0.0/8", True),
        ("10.1.2.3", 443, "10.1.2.3", True),
        ("11.1.2.3", 443, "10.0.0.0/8", False),
        ("[fd00::1]", 443, "fd00::/8", True),
        ("[fd00::1]", 443, "[fd00::1]:443", True),
        ("mcp.example.com", 443, "10.0.0.0/8", False),  # names are never resolved to decide
        ("a.example.com", 443, "", False),
    ],
)
def test_no_proxy_conventions(host: str, port: int, no_proxy: str, exempt: bool) -> None:
    assert no_proxy_matches(host, port, no_proxy) is exempt


@pytest.mark.parametrize(
    ("scheme", "environ", "expected"),
    [
        ("https", {"HTTPS_PROXY": "http://p:3128"}, ("p", 3128, "HTTPS_PROXY")),
        ("https", {"https_proxy": "p1:1", "HTTPS_PROXY": "p2:2"}, ("p1", 1, "https_proxy")),
        ("https", {"HTTP_PROXY": "p:3128"}, None),  # http_proxy is for http upstreams
        ("http", {"http_proxy": "p:8080"}, ("p", 8080, "http_proxy")),
        ("http", {"ALL_PROXY": "p:9"}, ("p", 9, "ALL_PROXY")),
        ("https", {"HTTPS_PROXY": "p:1", "NO_PROXY": "mcp.example.com"}, None),
        ("https", {"HTTPS_PROXY": "p"}, ("p", 80, "HTTPS_PROXY")),
        ("https", {}, None),
    ],
)
def test_proxy_environment_conventions(
    scheme: str, environ: dict[str, str], expected: tuple[str, int, str] | None
) -> None:
    route = proxy_from_environment(scheme, "mcp.example.com", 443, environ)
    got = None if route is None else (route.host, route.port, route.source)
    assert got == expected


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.9.9.9", "[::1]", "a.localhost"])
def test_loopback_is_never_proxied_from_the_environment(host: str) -> None:
    assert proxy_from_environment("https", host, 443, {"HTTPS_PROXY": "p:1"}) is None


@pytest.mark.parametrize(
    ("value", "stored"), [(None, "none"), ("NONE", "none"), ("Env", "env"), ("http://p:1", None)]
)
def test_proxy_setting_values(value: str | None, stored: str | None) -> None:
    up = load_settings(None, {"upstreams": {"u": {"url": "https://a/mcp", "proxy": value}}})
    assert up.upstreams["u"].proxy == (stored or value)


def test_proxy_credentials_stay_out_of_repr_and_errors() -> None:
    route = parse_proxy("http://user:p%40ss@proxy.corp:3128", "HTTPS_PROXY")
    assert route.authorization == "Basic dXNlcjpwQHNz"  # user:p@ss, percent-decoded
    assert "p@ss" not in repr(route) and "p%40ss" not in repr(route)
    assert route.url == "http://proxy.corp:3128" and "with credentials" in repr(route)
    for bad in (
        "socks5://user:hunter2@p:1",
        "http://user:hunter2@p:0",
        "http://user:hunter2@p:1/x",
    ):
        with pytest.raises(ConfigError) as err:
            parse_proxy(bad, "HTTPS_PROXY")
        assert "hunter2" not in str(err.value) and "HTTPS_PROXY" in str(err.value)


def test_a_bad_proxy_url_in_the_file_names_the_file_and_field(tmp_path: Path) -> None:
    cfg = tmp_path / "gw.yaml"
    cfg.write_text("upstreams: {up: {url: 'https://a/mcp', proxy: 'ftp://u:hunter2@p:1'}}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(cfg))
    assert str(cfg) in str(err.value) and "upstreams.up.proxy" in str(err.value)
    assert "hunter2" not in str(err.value)


# -- static headers ---------------------------------------------------------------------------


async def test_static_headers_from_environment_and_file_replace_the_clients(
    tmp_path: Path, pki: Pki, tls_upstream: Upstream
) -> None:
    secret_file = tmp_path / "tenant"
    secret_file.write_text("tenant-42\n")
    cfg = tmp_path / "gw.yaml"
    up = build(
        {
            "url": tls_upstream.url(),
            "tls": {"ca_file": str(pki.ca_file)},
            "headers": {"Authorization": "Bearer ${UPSTREAM_TOKEN}", "X-Tenant": "${file:tenant}"},
        },
        {"UPSTREAM_TOKEN": SECRET},
        config_file=cfg,
    )
    assert SECRET not in repr(up)
    await call(up)
    seen = tls_upstream.seen_headers[-1]
    assert seen["Authorization"] == f"Bearer {SECRET}"  # the client's "Bearer client-token" is gone
    assert seen["X-Tenant"] == "tenant-42"
    assert list(seen).count("Authorization") == 1


def test_header_reference_forms() -> None:
    up = build(
        {"url": "http://a/mcp", "headers": {"X-A": "$${LITERAL} and ${A}", "X-B": "plain"}},
        {"A": "x"},
    )
    assert up.headers == (("X-A", "${LITERAL} and x"), ("X-B", "plain"))
    assert up.apply_headers([("x-a", "client"), ("Accept", "*/*")]) == [
        ("Accept", "*/*"),
        ("X-A", "${LITERAL} and x"),
        ("X-B", "plain"),
    ]


@pytest.mark.parametrize(
    ("headers", "environ", "needle"),
    [
        ({"Authorization": "Bearer ${MISSING_TOKEN}"}, {}, "MISSING_TOKEN is not set"),
        ({"Authorization": "Bearer ${EMPTY}"}, {"EMPTY": ""}, "EMPTY is empty"),
        ({"Authorization": "${TOKEN}"}, {"TOKEN": f"{SECRET}\r\nX-Evil: 1"}, "line break"),
        ({"Authorization": "${file:/nonexistent/token}"}, {}, "cannot read /nonexistent/token"),
        ({"Authorization": "${not a name}"}, {}, "neither"),
    ],
)
def test_bad_header_values_name_the_field_never_the_value(
    tmp_path: Path, headers: dict[str, str], environ: dict[str, str], needle: str
) -> None:
    cfg = tmp_path / "gw.yaml"
    with pytest.raises(ConfigError) as err:
        build({"url": "http://a/mcp", "headers": headers}, environ, config_file=cfg)
    message = str(err.value)
    assert needle in message and str(cfg) in message
    assert "upstreams.up.headers.Authorization" in message
    assert SECRET not in message


@pytest.mark.parametrize(
    "name", ["Host", "content-length", "Mcp-Session-Id", "Mcp-Param-X", "Bad Name"]
)
def test_headers_the_gateway_manages_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"upstreams\.up\.headers"):
        build({"url": "http://a/mcp", "headers": {name: "x"}})


# -- TLS configuration errors -----------------------------------------------------------------


def test_tls_file_errors_name_the_file_and_field(tmp_path: Path, pki: Pki) -> None:
    cfg = tmp_path / "gw.yaml"
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"ca_file": "missing-ca.pem"}, "tls.ca_file: " + str(tmp_path / "missing-ca.pem")),
        ({"ca_file": str(tmp_path)}, "not a file"),
        ({"ca_file": str(garbage)}, "no PEM certificate"),
        ({"key_file": str(pki.client_key)}, "key_file given without cert_file"),
        ({"cert_file": str(pki.client_cert)}, "tls.cert_file"),  # no key anywhere
        ({"cert_file": str(pki.client_cert), "key_file": str(pki.server_key)}, "matching"),
        ({"server_name": "https://x/"}, "tls.server_name"),
    ]
    for tls, needle in cases:
        with pytest.raises(ConfigError) as err:
            build({"url": "https://a/mcp", "tls": tls}, config_file=cfg)
        assert str(cfg) in str(err.value), tls
        assert needle in str(err.value), (tls, str(err.value))


def test_an_encrypted_key_is_refused_without_prompting(tmp_path: Path, pki: Pki) -> None:
    key = serialization.load_pem_private_key(pki.client_key.read_bytes(), None)
    locked = tmp_path / "locked-key.pem"
    locked.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw"),
        )
    )
    tls = {"cert_file": str(pki.client_cert), "key_file": str(locked)}
    with pytest.raises(ConfigError, match="encrypted private keys are not supported"):
        build({"url": "https://a/mcp", "tls": tls})


def test_tls_on_an_http_upstream_is_a_mistake() -> None:
    with pytest.raises(ConfigError, match="not https"):
        build({"url": "http://a/mcp", "tls": {"verify": False}})


def test_relative_tls_paths_resolve_against_the_config_file(tmp_path: Path, pki: Pki) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "ca.pem").write_bytes(pki.ca_file.read_bytes())
    up = build(
        {"url": "https://a/mcp", "tls": {"ca_file": "ca.pem"}}, config_file=folder / "g.yaml"
    )
    assert up.ca == str(folder / "ca.pem")


def test_defaults() -> None:
    up = build({"url": "https://mcp.example.com/mcp"})
    assert (up.max_connections, up.max_queued, up.queue_timeout) == (1024, 1024, 5.0)
    assert (up.idle_seconds, up.dns_ttl, up.connect_timeout) == (1.5, 10.0, 3.0)
    assert up.server_name == "mcp.example.com" and up.verify and up.proxy is None
    assert up.ssl is not None and up.ssl.verify_mode == ssl.CERT_REQUIRED


# -- connecting: addresses, timeouts, refusals ------------------------------------------------


async def test_a_dead_ipv6_address_first_does_not_eat_the_connect_budget(pki: Pki) -> None:
    """``dual.test`` resolves to [::1]:P (a black hole: SYNs dropped) then 127.0.0.1:P (the
    upstream). Tried one after the other, the first attempt alone would use the whole 3 s
    budget; raced (happy eyeballs), the second starts after 0.25 s and wins."""
    async with mcp_upstream(server_context(pki), host="127.0.0.1") as server:
        with blackhole("::1", server.port):
            up = build(
                {
                    "url": f"https://dual.test:{server.port}/mcp",
                    "tls": {"ca_file": str(pki.ca_file), "server_name": "upstream.test"},
                }
            )
            dns = DNSCache(10, lookup=dual_stack_lookup())
            # the v6 address is really dead: alone, it times out
            v6_only = DNSCache(10, lookup=_only_v6)
            with pytest.raises(UpstreamConnectTimeout) as err:
                await open_socket(up, v6_only, timeout=0.5)
            assert err.value.http_status == 504 and "connecting to" in err.value.detail
            # one address after the other: the dead first one takes the whole budget
            with pytest.raises(UpstreamConnectTimeout):
                await open_socket(up, dns, timeout=1.0, happy_eyeballs_delay=None)
            # raced: connected well within the 3 s connect timeout
            assert (await call(up, dns))["id"] == 7


async def _only_v6(_host: str, port: int) -> list[AddrInfo]:
    return [(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("::1", port, 0, 0))]


async def test_refused_and_unresolvable_are_told_apart() -> None:
    with socket.socket() as probe_sock:
        probe_sock.bind(("127.0.0.1", 0))
        port = probe_sock.getsockname()[1]  # bound, not listening: connections are refused
        up = build({"url": f"http://127.0.0.1:{port}/mcp"})
        with pytest.raises(UpstreamConnectionRefused) as err:
            await open_socket(up, up.new_dns_cache())
        assert err.value.message == "upstream refused the connection"
        assert ready_reason(await probe(up, up.new_dns_cache())) == "connect"
    named = build({"url": "http://mcp.nowhere.test/mcp"})
    with pytest.raises(UpstreamDNSError) as dns_err:
        await open_socket(named, DNSCache(10, lookup=_fail_lookup))
    assert "mcp.nowhere.test does not resolve" in dns_err.value.detail


def test_every_failure_kind_has_its_own_message() -> None:
    kinds = [
        UpstreamDNSError,
        UpstreamConnectionRefused,
        UpstreamConnectTimeout,
        UpstreamProxyError,
        UpstreamProxyAuthRequired,
        UpstreamTLSError,
        UpstreamCertificateUntrusted,
        UpstreamHostnameMismatch,
        UpstreamClientCertificateRejected,
    ]
    made = [cls("detail", upstream="u", address="h:1") for cls in kinds]
    assert len({e.message for e in made}) == len(kinds)
    assert len({e.kind for e in made}) == len(kinds)
    assert all(
        e.log_fields() == {"upstream": "u", "address": "h:1", "kind": e.kind, "error": "detail"}
        for e in made
    )
    assert all(isinstance(e, UpstreamConnectError) for e in made)


# -- the cache and the cap --------------------------------------------------------------------


async def test_dns_cache_reuses_answers_for_the_ttl_and_shares_a_lookup() -> None:
    now = [0.0]
    calls: list[str] = []
    release = asyncio.Event()

    async def lookup(host: str, port: int) -> list[AddrInfo]:
        calls.append(host)
        await release.wait()
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.1", port))]

    dns = DNSCache(10, lookup=lookup, clock=lambda: now[0])
    async with asyncio.timeout(BOUND):
        waiting = [asyncio.ensure_future(dns.resolve("mcp.example", 443)) for _ in range(50)]
        await asyncio.sleep(0)
        release.set()
        answers = await asyncio.gather(*waiting)
        assert calls == ["mcp.example"] and all(a == answers[0] for a in answers)
        now[0] = 9.9
        await dns.resolve("MCP.example", 443)
        assert len(calls) == 1
        now[0] = 10.1
        await dns.resolve("mcp.example", 443)
        assert len(calls) == 2
        assert await dns.resolve("10.0.0.1", 80) == [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("10.0.0.1", 80))
        ]
        assert len(calls) == 2  # literals are not looked up


async def test_the_system_resolver_answers_localhost() -> None:
    dns = DNSCache(10)
    async with asyncio.timeout(BOUND):
        infos = await dns.resolve("localhost", 80)
    assert any(info[4][0] in ("127.0.0.1", "::1") for info in infos)


async def test_the_connection_cap_under_500_concurrent_calls() -> None:
    """Cap 10, queue 40: at most 10 at once, 40 wait their turn, 450 are refused at once with
    503 UpstreamBusy; everyone admitted is served."""
    slots = ConnectionSlots(10, 40, queue_timeout=BOUND)
    gate = asyncio.Event()
    peak = 0
    served = 0

    refused: list[UpstreamBusy] = []
    all_refused = asyncio.Event()

    async def one() -> str:
        nonlocal peak, served
        try:
            async with slots.slot():
                peak = max(peak, slots.in_use)
                await gate.wait()
                served += 1
                return "served"
        except UpstreamBusy as exc:
            refused.append(exc)
            if len(refused) == 450:
                all_refused.set()
            return "busy"

    async with asyncio.timeout(BOUND):
        tasks = [asyncio.ensure_future(one()) for _ in range(500)]
        await all_refused.wait()
        assert slots.in_use == 10 and slots.queued == 40
        assert {(e.http_status, e.jsonrpc_code, e.retry_after) for e in refused} == {
            (503, -31004, 1)
        }
        gate.set()
        results = await asyncio.gather(*tasks)
    assert results.count("busy") == 450 and results.count("served") == 50 == served
    assert peak == 10 and slots.in_use == 0 and slots.queued == 0


async def test_500_concurrent_calls_to_a_real_upstream_never_exceed_the_cap() -> None:
    """The cap around real connections: 500 calls at once, cap 10, queue 490 — the upstream
    never serves more than 10 at once and all 500 are answered."""
    up_settings: UpstreamSettings | None = None
    async with mcp_upstream(None) as server:
        server.hold, server.busy_at = asyncio.Event(), 10
        up_settings = build(
            {
                "url": server.url("http"),
                "max_connections": 10,
                "max_queued": 490,
                "queue_timeout": BOUND,
            }
        )
        slots, dns = up_settings.new_slots(), up_settings.new_dns_cache()

        async def capped() -> dict[str, Any]:
            assert up_settings is not None
            async with slots.slot():
                return await call(up_settings, dns)

        async with asyncio.timeout(BOUND * 3):
            tasks = [asyncio.ensure_future(capped()) for _ in range(500)]
            await server.busy.wait()
            assert (slots.in_use, slots.queued) == (10, 490)
            server.hold.set()
            answers = await asyncio.gather(*tasks)
    assert len(answers) == 500 and {a["id"] for a in answers} == {7}
    assert server.peak == 10 and slots.in_use == 0


async def test_a_queued_request_gives_up_after_the_queue_timeout() -> None:
    slots = ConnectionSlots(1, 5, queue_timeout=0.05)
    async with asyncio.timeout(BOUND):
        await slots.acquire()
        with pytest.raises(UpstreamBusy):
            await slots.acquire()
        assert slots.queued == 0 and slots.in_use == 1
        slots.release()
        await slots.acquire()  # the slot is free again
    assert slots.in_use == 1


def test_the_readme_configuration_example_is_valid() -> None:
    """The README's gateway.yaml example (with its upstream connection keys) validates."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("# gateway.yaml", 1)[1].split("\n", 1)[1].split("```", 1)[0]
    data = yaml.safe_load(block)
    settings = load_settings(None, data)
    billing = settings.upstreams["billing"]
    assert billing.tls is not None and billing.tls.ca_file == "/etc/gateway/tls/corp-ca.pem"
    assert billing.proxy == "env" and billing.idle_seconds == 1.5
    assert set(billing.headers) == {"Authorization", "X-Tenant"}
