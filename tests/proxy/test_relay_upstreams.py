"""The relay reaches its upstreams with each upstream's settings, end to end: a client POSTs to
the gateway (the in-process app on a real port, or a real ``serve`` process), the gateway
connects to a real upstream with the upstream's TLS context, client certificate, egress proxy,
static headers and connection cap (gateway/proxy/upstream.py with upstream_settings.py), and
the client reads a distinct JSON-RPC error for each way the connection can fail."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from structlog.testing import capture_logs

from gateway import errors
from gateway.policy.loader import load_policy
from gateway.proxy.app import CLIENT, make_app
from gateway.proxy.config import Settings
from tests.peers.procs import free_port, read_log_events, running, wait_for_health
from tests.relay_harness import DEFAULT_POLICY, TEST_KEYS
from tests.upstream_servers import (
    ConnectProxy,
    Pki,
    Upstream,
    mcp_upstream,
    server_context,
    threaded_upstream,
)

BOUND = 30.0  # no test waits longer than this for anything
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
SECRET = "st4tic-upstream-s3cret"


@contextlib.asynccontextmanager
async def gateway(
    upstream: Mapping[str, Any], *, connect: float = 5.0
) -> AsyncIterator[tuple[TestServer, aiohttp.ClientSession]]:
    """The gateway app (one upstream, ``default``, at ``/mcp``) on a real port, and a client."""
    settings = Settings.model_validate(
        {"upstreams": {"default": dict(upstream)}, "timeouts": {"connect": connect}}
    )
    app = make_app(settings, load_policy(DEFAULT_POLICY), TEST_KEYS)
    connector = aiohttp.TCPConnector(limit=0)
    server = TestServer(app, port=0)
    async with (
        server,
        aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=BOUND)
        ) as session,
    ):
        yield server, session


async def post(
    server: TestServer, session: aiohttp.ClientSession, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, Any], Mapping[str, str]]:
    async with session.post(
        server.make_url("/mcp"), json=CALL, headers={**JSON_HEADERS, **(headers or {})}
    ) as resp:
        return resp.status, await resp.json(), resp.headers


async def readyz(server: TestServer, session: aiohttp.ClientSession) -> dict[str, Any]:
    async with session.get(server.make_url("/readyz")) as resp:
        assert resp.status == 200
        report: dict[str, Any] = (await resp.json())["upstreams"]["default"]
        return report


def connect_failures(logs: Sequence[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == "upstream.connect_failed"]


@pytest.fixture
async def tls_upstream(pki: Pki) -> AsyncIterator[Upstream]:
    async with mcp_upstream(server_context(pki)) as up:
        yield up


# -- private CA ---------------------------------------------------------------------------------


async def test_a_private_ca_upstream_works_with_its_ca_file_and_fails_cleanly_without(
    pki: Pki, tls_upstream: Upstream
) -> None:
    url = tls_upstream.url("https", "localhost")
    async with gateway({"url": url, "tls": {"ca_file": str(pki.ca_file)}}) as (server, session):
        status, answer, _ = await post(server, session)
        assert (status, answer["id"], answer["result"]["isError"]) == (200, 7, False)
        assert await readyz(server, session) == {"reachable": True}
    with capture_logs() as logs:
        async with gateway({"url": url}) as (server, session):
            status, answer, _ = await post(server, session)
            report = await readyz(server, session)
    # The system CAs do not know the private CA: a distinct message, not "unreachable".
    assert status == 502
    assert answer["error"]["code"] == errors.GATEWAY_UPSTREAM_ERROR
    assert answer["error"]["message"] == (
        "Upstream MCP server unavailable: upstream certificate not trusted"
    )
    assert report == {"reachable": False, "reason": "tls"}
    (failed,) = connect_failures(logs)
    assert failed["upstream"] == "default"
    assert failed["address"] == f"localhost:{tls_upstream.port}"
    assert failed["kind"] == "tls-untrusted"
    assert "system CAs" in failed["error"]
    assert len(tls_upstream.seen_headers) == 1  # only the call with the CA file got through


async def test_a_certificate_for_another_name_is_a_hostname_mismatch(pki: Pki) -> None:
    async with mcp_upstream(server_context(pki, named_only=True)) as named:
        tls = {"ca_file": str(pki.ca_file)}
        config: dict[str, Any] = {"url": named.url("https", "127.0.0.1"), "tls": tls}
        async with gateway(config) as (server, session):
            status, answer, _ = await post(server, session)
        assert (status, answer["error"]["message"]) == (
            502,
            "Upstream MCP server unavailable: upstream certificate does not match its host name",
        )
        # tls.server_name: the SNI name and the name the certificate must carry
        tls["server_name"] = "upstream.test"
        async with gateway(config) as (server, session):
            status, answer, _ = await post(server, session)
        assert (status, answer["id"]) == (200, 7)
    assert len(named.seen_headers) == 1  # only the call with the right name got through


# -- mTLS ---------------------------------------------------------------------------------------


async def test_an_mtls_upstream_works_with_the_client_certificate_and_says_why_without(
    pki: Pki,
) -> None:
    with threaded_upstream(server_context(pki, require_client_cert=True)) as up:
        tls = {
            "ca_file": str(pki.ca_file),
            "cert_file": str(pki.client_cert),
            "key_file": str(pki.client_key),
        }
        async with gateway({"url": up.url("https"), "tls": tls}) as (server, session):
            status, answer, _ = await post(server, session)
        assert (status, answer["id"]) == (200, 7)
        with capture_logs() as logs:
            config = {"url": up.url("https"), "tls": {"ca_file": str(pki.ca_file)}}
            async with gateway(config) as (server, session):
                status, answer, _ = await post(server, session)
    assert status == 502
    assert answer["error"]["message"] == (
        "Upstream MCP server unavailable: upstream rejected the gateway's client certificate"
    )
    (failed,) = connect_failures(logs)
    assert failed["kind"] == "tls-client-cert" and "no tls.cert_file" in failed["error"]
    assert len(up.seen_headers) == 1


# -- egress proxy -------------------------------------------------------------------------------


async def test_a_configured_connect_proxy_in_front_of_an_https_upstream(
    pki: Pki, tls_upstream: Upstream
) -> None:
    async with ConnectProxy(credentials=("gw", "pr0xy-pa55")) as proxy:
        config = {
            "url": tls_upstream.url("https", "localhost"),
            "tls": {"ca_file": str(pki.ca_file)},
            "proxy": f"http://gw:pr0xy-pa55@127.0.0.1:{proxy.port}",
        }
        with capture_logs() as logs:
            async with gateway(config) as (server, session):
                for _ in range(2):
                    status, answer, _ = await post(server, session)
                    assert (status, answer["id"]) == (200, 7)
                assert await readyz(server, session) == {"reachable": True}
            # wrong credentials: the proxy's 407, told apart
            config["proxy"] = f"http://gw:wrong@127.0.0.1:{proxy.port}"
            async with gateway(config) as (server, session):
                status, answer, _ = await post(server, session)
                report = await readyz(server, session)
    # The second call reused the pooled connection: one tunnel for the calls, one for /readyz.
    assert proxy.tunnels == 2
    assert proxy.requests[0] == f"localhost:{tls_upstream.port}"
    assert (status, answer["error"]["message"]) == (
        502,
        "Upstream MCP server unavailable: egress proxy requires authentication",
    )
    assert report == {"reachable": False, "reason": "proxy"}
    (failed,) = connect_failures(logs)
    assert failed["kind"] == "proxy-auth" and failed["address"] == f"127.0.0.1:{proxy.port}"
    assert "pr0xy-pa55" not in repr(logs) and "wrong" not in repr(logs)


async def test_https_proxy_from_the_environment_and_no_proxy_bypass(
    pki: Pki, tls_upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name only the proxy resolves (loopback upstreams are never proxied from the
    environment): through ``HTTPS_PROXY`` it works; exempted by ``NO_PROXY`` the gateway
    connects directly, and the name does not resolve here."""
    for name in ("https_proxy", "no_proxy", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    config = {
        "url": f"https://mcp.internal.test:{tls_upstream.port}/mcp",
        "tls": {"ca_file": str(pki.ca_file), "server_name": "upstream.test"},
    }
    async with ConnectProxy(hosts={"mcp.internal.test": "127.0.0.1"}) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "other.test")
        async with gateway(config) as (server, session):
            status, answer, _ = await post(server, session)
        assert (status, answer["id"]) == (200, 7)
        assert proxy.tunnels == 1
        monkeypatch.setenv("NO_PROXY", "other.test,.internal.test")
        async with gateway(config) as (server, session):
            status, answer, _ = await post(server, session)
        assert proxy.tunnels == 1  # bypassed
    assert status == 502
    assert answer["error"]["message"] == (
        "Upstream MCP server unavailable: upstream host name does not resolve"
    )


# -- connection cap -----------------------------------------------------------------------------


async def test_the_cap_under_500_concurrent_calls() -> None:
    """Cap 10, queue 90: the upstream never serves more than 10 at once, the 400 calls beyond
    the queue get 503 with Retry-After at once, the 100 others are answered."""
    async with mcp_upstream(None) as up:
        up.hold, up.busy_at = asyncio.Event(), 10
        config = {
            "url": up.url("http"),
            "max_connections": 10,
            "max_queued": 90,
            "queue_timeout": BOUND,
        }
        async with gateway(config) as (server, session):
            slots = server.app[CLIENT].slots("default")
            assert slots is not None
            busy: list[tuple[int, dict[str, Any], Mapping[str, str]]] = []
            overflowed = asyncio.Event()

            async def one() -> tuple[int, dict[str, Any], Mapping[str, str]]:
                answer = await post(server, session)
                if answer[0] == 503:
                    busy.append(answer)
                    if len(busy) == 400:
                        overflowed.set()
                return answer

            async with asyncio.timeout(BOUND * 2):
                tasks = [asyncio.ensure_future(one()) for _ in range(500)]
                await up.busy.wait()
                await overflowed.wait()  # the overflow is answered while the 10 are held
                assert (slots.in_use, slots.queued) == (10, 90)
                up.hold.set()
                answers = await asyncio.gather(*tasks)
            assert (slots.in_use, slots.queued) == (0, 0)
    assert up.peak == 10
    assert sorted(a[0] for a in answers) == [200] * 100 + [503] * 400
    for status, answer, headers in answers:
        if status == 503:
            assert headers["Retry-After"] == "1"
            assert answer["error"]["code"] == errors.GATEWAY_UPSTREAM_BUSY
            assert answer["id"] == 7
        else:
            assert answer["id"] == 7


# -- static headers -----------------------------------------------------------------------------


async def test_a_static_header_from_the_environment_reaches_the_upstream_never_the_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UPSTREAM_TOKEN_FOR_TEST", SECRET)
    async with mcp_upstream(None) as up:
        config = {
            "url": up.url("http"),
            "headers": {"Authorization": "Bearer ${UPSTREAM_TOKEN_FOR_TEST}", "X-Team": "mcp"},
        }
        with capture_logs() as logs:
            async with gateway(config) as (server, session):
                status, answer, _ = await post(
                    server, session, {"Authorization": "Bearer client-own-token"}
                )
                assert (status, answer["id"]) == (200, 7)
                status, _, _ = await post(server, session)  # a client without Authorization
                assert status == 200
    with capture_logs() as failing:  # the same upstream, now down: the failure is logged
        async with gateway(config) as (server, session):
            status, _, _ = await post(server, session)
            assert status == 502
    seen = [{k.lower(): v for k, v in h.items()} for h in up.seen_headers]
    assert [h["authorization"] for h in seen] == [f"Bearer {SECRET}"] * 2
    assert [h["x-team"] for h in seen] == ["mcp", "mcp"]
    assert [e["kind"] for e in connect_failures(failing)] == ["refused"]
    assert SECRET not in json.dumps([*logs, *failing], default=str)


async def test_the_sealed_session_is_bound_to_the_clients_credential_not_the_static_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The static Authorization replaces the client's on the way up, but the credential digest
    that binds a sealed session id is the client's own: another client credential cannot use
    the session, whatever the gateway sends upstream."""
    monkeypatch.setenv("UPSTREAM_TOKEN_FOR_TEST", SECRET)
    from aiohttp import web

    async def mcp(request: web.Request) -> web.Response:
        body = await request.json()
        headers = {"Mcp-Session-Id": "upstream-session-1"}
        return web.json_response(
            {"jsonrpc": "2.0", "id": body["id"], "result": {}}, headers=headers
        )

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    async with TestServer(app, port=0) as up:
        config = {
            "url": str(up.make_url("/mcp")),
            "headers": {"Authorization": "Bearer ${UPSTREAM_TOKEN_FOR_TEST}"},
        }
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        async with gateway(config) as (server, session):
            alice = {**JSON_HEADERS, "Authorization": "Bearer alice"}
            async with session.post(server.make_url("/mcp"), json=init, headers=alice) as resp:
                assert resp.status == 200
                sealed = resp.headers["Mcp-Session-Id"]
            assert sealed != "upstream-session-1"
            status, _, _ = await post(server, session, {**alice, "Mcp-Session-Id": sealed})
            assert status == 200
            mallory = {"Authorization": "Bearer mallory", "Mcp-Session-Id": sealed}
            status, _, _ = await post(server, session, mallory)
            assert status == 404


# -- a real serve process -----------------------------------------------------------------------


async def test_serve_with_upstream_ca_file_reaches_a_private_ca_upstream(
    pki: Pki, tls_upstream: Upstream, tmp_path: Path
) -> None:
    log = tmp_path / "gateway.log"
    port = free_port()
    url = tls_upstream.url("https", "localhost")
    argv = [
        *(sys.executable, "-m", "gateway", "serve"),
        *("--upstream", url, "--listen", f"127.0.0.1:{port}", "--workers", "1"),
        *("--upstream-ca-file", str(pki.ca_file)),
    ]
    async with running(argv, port, stdout_path=log) as gw:
        await wait_for_health(gw)
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=BOUND)) as session,
            session.post(gw.url, json=CALL, headers=JSON_HEADERS) as resp,
        ):
            answer = await resp.json()
            assert resp.status == 200, answer
    assert answer["id"] == 7
    events = [e.get("event") for e in read_log_events(log)]
    assert "upstream.connect_failed" not in events
