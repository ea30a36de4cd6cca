"""Policy reload (gateway/proxy/reload.py): all-or-nothing, and warm before it takes traffic."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import aiohttp
from aiohttp.test_utils import TestServer
from structlog.testing import capture_logs

from gateway.policy.engine import is_warm
from gateway.policy.loader import load_policy
from gateway.proxy.app import make_app
from gateway.proxy.config import Settings
from gateway.proxy.reload import reload_from_file, reload_upstreams
from tests.relay_harness import DEFAULT_POLICY, TEST_KEYS
from tests.upstream_servers import Pki, mcp_upstream, server_context

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{}}}'
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

DEFAULT = Path("policies/default.yaml")


def _with_fresh_server(tmp_path: Path) -> Path:
    """A policy whose per-server detection configuration no test has warmed yet (a protected
    trusted domain of its own makes it a configuration never seen in this process)."""
    unique = f"reload-{uuid.uuid4().hex[:12]}.example"
    text = DEFAULT.read_text().replace(
        "servers: {}", f"servers:\n  acme:\n    trusted_domains: [{unique}]"
    )
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_a_reloaded_policy_is_warm_before_it_is_swapped_in(tmp_path: Path) -> None:
    path = _with_fresh_server(tmp_path)
    assert not is_warm(load_policy(path))  # loading alone leaves the new configuration cold
    new = reload_from_file(str(path), load_policy(DEFAULT))
    assert new is not None and "acme" in new.servers
    assert is_warm(new)


def test_an_invalid_file_keeps_the_current_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("version: 1\nactions: {secret-field: maybe}\n")
    assert reload_from_file(str(path), load_policy(DEFAULT)) is None


async def test_a_reload_rereads_the_upstreams_ca_file_and_keeps_the_old_on_a_broken_one(
    tmp_path: Path, pki: Pki
) -> None:
    """CA rotation without a restart: the gateway starts with a CA file that does not sign the
    upstream (calls fail: certificate not trusted), the file is replaced by the right CA and
    the reload (SIGHUP's ``reload_upstreams``) makes calls pass; a file that no longer loads
    keeps the settings in force."""
    ca = tmp_path / "ca.pem"
    shutil.copy(pki.other_ca_file, ca)
    upstream = {"url": "", "tls": {"ca_file": str(ca)}}
    async with mcp_upstream(server_context(pki)) as up:
        upstream["url"] = up.url("https", "localhost")
        settings = Settings.model_validate({"upstreams": {"default": upstream}})
        app = make_app(settings, load_policy(DEFAULT_POLICY), TEST_KEYS)
        async with (
            TestServer(app, port=0) as gw,
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        ):

            async def call() -> tuple[int, str]:
                async with http.post(gw.make_url("/mcp"), data=CALL, headers=JSON) as resp:
                    answer = await resp.json()
                    return resp.status, answer.get("error", {}).get("message", "")

            assert await call() == (
                502,
                "Upstream MCP server unavailable: upstream certificate not trusted",
            )
            shutil.copy(pki.ca_file, ca)
            assert reload_upstreams(app)
            assert await call() == (200, "")
            ca.write_text("not a certificate\n")
            with capture_logs() as logs:
                assert not reload_upstreams(app)
            assert [e["event"] for e in logs] == ["upstream.reload_failed"]
            assert str(ca) in logs[0]["error"]
            assert await call() == (200, "")  # the settings in force stayed
