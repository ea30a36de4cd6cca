"""The proxy benchmark's pieces, in process: fake upstream, minimal proxy, load generator.

Correctness only (shapes, sizes, byte-exact relaying, streams); no timing is asserted. The bench
scripts are not a package (they run as ``python bench/run.py``), so they are loaded by path.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import string
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import pytest
from aiohttp import web

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


fake_upstream = _load("fake_upstream")
minimal = _load("minimal")
load = _load("load")
run = _load("run")
Loader, percentiles_us = load.Loader, load.percentiles_us

pytestmark = pytest.mark.e2e


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def urls() -> AsyncIterator[tuple[str, str]]:
    """(direct URL, proxied URL) of a fake upstream and the minimal proxy in front of it."""
    up_port, pt_port = _port(), _port()
    upstream = await fake_upstream.start("127.0.0.1", up_port)
    direct = f"http://127.0.0.1:{up_port}/mcp"
    relay = await minimal.start("127.0.0.1", pt_port, direct)
    try:
        yield direct, f"http://127.0.0.1:{pt_port}/mcp"
    finally:
        await relay.cleanup()
        await upstream.cleanup()


async def _post(url: str, req: tuple[str, dict[str, str]], body: str | None = None) -> bytes:
    async with aiohttp.ClientSession() as session:
        data = body if body is not None else req[0]
        async with session.post(url, data=data, headers=req[1]) as resp:
            assert resp.status == 200
            return await resp.read()


@pytest.mark.parametrize("size", [1024, 65536, 1048576])
async def test_sized_results_are_relayed_byte_exact(urls: tuple[str, str], size: int) -> None:
    direct, relay = urls
    for req in (run.CALL, run.LIST):
        a = await _post(f"{direct}?size={size}", req)
        b = await _post(f"{relay}?size={size}", req)
        assert a == b
        assert 0.8 * size <= len(a) <= 1.2 * size + 200
        msg = json.loads(a)
        assert msg["id"] == 1
        assert msg["result"]["resultType"] == "complete"
    tools = json.loads(await _post(f"{relay}?size={size}", run.LIST))["result"]["tools"]
    assert len(tools) >= 1
    assert all("inputSchema" in t for t in tools)


async def test_elicitation_round_and_retry(urls: tuple[str, str]) -> None:
    _, relay = urls
    first = json.loads(await _post(f"{relay}?elicit=1", run.ELICIT))["result"]
    assert first["resultType"] == "input_required"
    ask = first["inputRequests"]["who"]
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["mode"] == "form"
    retry = json.loads(run.ELICIT[0])
    retry["params"]["inputResponses"] = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    retry["params"]["requestState"] = first["requestState"]
    final = json.loads(await _post(f"{relay}?elicit=1", run.ELICIT, json.dumps(retry)))
    assert final["result"]["resultType"] == "complete"


async def test_loader_commands_through_the_minimal_proxy(urls: tuple[str, str]) -> None:
    _, relay = urls
    loader = Loader()
    body, headers = run.CALL
    base: dict[str, Any] = {"body": body, "headers": headers}
    seq = await loader.run({"op": "seq", "url": f"{relay}?size=100", "n": 5, **base})
    assert seq["errors"] == 0
    assert seq["lat"]["n"] == 5
    closed = await loader.run(
        {"op": "closed", "url": f"{relay}?size=100", "conns": 3, "duration": 0.2, **base}
    )
    assert closed["errors"] == 0
    assert closed["count"] > 0
    sse = await loader.run({"op": "sse", "url": f"{relay}?sse=4&interval_ms=1", "n": 2, **base})
    assert sse["errors"] == 0
    assert sse["delay"]["n"] == 8  # 2 streams × 4 stamped events
    assert 0 <= sse["delay"]["p50"] < 1_000_000
    ebody, eheaders = run.ELICIT
    elicit = await loader.run(
        {"op": "elicit", "url": f"{relay}?elicit=1", "body": ebody, "headers": eheaders,
         "conns": 2, "duration": 0.2}
    )  # fmt: skip
    assert elicit["errors"] == 0
    assert elicit["rounds"] > 0
    ibody, iheaders = run.INITIALIZE
    idle = await loader.run(
        {"op": "open_idle", "url": relay, "body": ibody, "headers": iheaders, "n": 5}
    )
    assert idle == {"opened": 5, "errors": 0}
    assert await loader.run({"op": "close_idle"}) == {"closed": 5}


async def test_notifications_and_answers_get_202(urls: tuple[str, str]) -> None:
    direct, _ = urls
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    async with aiohttp.ClientSession() as session:
        async with session.post(direct, data=note, headers=run.CALL[1]) as resp:
            assert resp.status == 202
        async with session.post(direct, data=run.INITIALIZE[0], headers=run.INITIALIZE[1]) as resp:
            assert resp.status == 200
            assert resp.headers["Mcp-Session-Id"].startswith("bench-")


def test_percentiles() -> None:
    stats = percentiles_us([i * 1000 for i in range(1, 101)])
    assert stats["p50"] == 51
    assert stats["p99"] == 100
    assert stats["n"] == 100
    assert percentiles_us([])["n"] == 0


def test_modern_request_header_matches_body() -> None:
    body, headers = run.modern_request("tools/call", "blob")
    msg = json.loads(body)
    assert headers["Mcp-Method"] == msg["method"]
    assert headers["Mcp-Name"] == msg["params"]["name"]
    meta = msg["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == headers["MCP-Protocol-Version"]


def test_nginx_template_fills_completely(tmp_path: Path) -> None:
    template = string.Template((BENCH / "nginx.conf.template").read_text())
    conf = template.substitute(prefix=tmp_path, port=1234, upstream_port=5678)
    assert "proxy_buffering off;" in conf
    assert "listen 127.0.0.1:1234" in conf
    assert "server 127.0.0.1:5678;" in conf
    assert "$" not in conf


def test_derive_subtracts_direct_per_round() -> None:
    r = run.Results()
    for name, values in ((run.DIRECT, [100.0, 200.0]), (run.GATEWAY, [150.0, 260.0])):
        for v in values:
            r.add("seq_p50", name, v)
    run.derive(r)
    assert r.values["added_seq_p50"][run.GATEWAY] == [50.0, 60.0]


def test_app_factories_build() -> None:
    assert isinstance(fake_upstream.FakeUpstream().app(), web.Application)


def test_nginx_upstream_template_fills_completely(tmp_path: Path) -> None:
    body = '{"jsonrpc":"2.0","id":1,"result":{}}'
    conf = string.Template(run.NGINX_UPSTREAM).substitute(prefix=tmp_path, port=1234, body=body)
    assert f"return 200 '{body}';" in conf
    assert "listen 127.0.0.1:1234" in conf
    assert "$" not in conf


def test_per_round_comparisons_and_the_noise_rule() -> None:
    r = run.Results()
    for a, b in ((100.0, 200.0), (150.0, 100.0), (90.0, 100.0)):
        r.add("tput", run.GATEWAY, a)
        r.add("tput", run.MINIMAL, b)
    assert run.per_round(r, "tput", run.GATEWAY, run.MINIMAL) == 0.9  # median of 0.5, 1.5, 0.9
    assert run.per_round(r, "tput", run.GATEWAY, run.MINIMAL, diff=True) == -10.0
    assert not run.beyond_noise(run._ratio(r, "tput", run.GATEWAY, run.MINIMAL))
    assert run.beyond_noise([0.7, 0.9, 0.99])
    assert run.beyond_noise([1.01, 1.4])
    assert not run.beyond_noise([1.0, 1.2])
    assert run.cv([2.0, 2.0, 2.0]) == 0.0
    assert round(run.cv([1.0, 3.0]), 3) == 0.707
