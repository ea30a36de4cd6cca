"""``/readyz`` against real upstreams on port 0: reachability means what the relay's upstream
client would get, TLS verification included."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from gateway.policy.loader import load_policy
from gateway.proxy.app import make_app
from gateway.proxy.config import Settings
from tests.proxy.test_upstream import _self_signed
from tests.relay_harness import DEFAULT_POLICY, TEST_KEYS

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{}}}'
RESULT = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'
OK = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(RESULT)).encode()
    + b"\r\n\r\n"
    + RESULT
)
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def tls_upstream(tmp_path: Path) -> AsyncIterator[tuple[int, Path]]:
    """A TLS server on port 0 with a self-signed certificate (for localhost and 127.0.0.1)
    that answers every request with a JSON-RPC result; yields its port and certificate."""
    cert, key = _self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            await reader.readuntil(b"\r\n\r\n")
            await reader.read(len(CALL))
            writer.write(OK)
            await writer.drain()
        writer.close()

    srv = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=server_ctx)
    try:
        yield srv.sockets[0].getsockname()[1], cert
    finally:
        srv.close()
        await srv.wait_closed()


async def readyz_and_call(url: str, ca_file: Path | None) -> tuple[dict[str, Any], int]:
    upstream: dict[str, Any] = {"url": url}
    if ca_file is not None:
        upstream["tls"] = {"ca_file": str(ca_file)}
    settings = Settings.model_validate({"upstreams": {"default": upstream}})
    app = make_app(settings, load_policy(DEFAULT_POLICY), TEST_KEYS)
    async with TestServer(app, port=0) as gw, aiohttp.ClientSession() as http:
        async with http.get(gw.make_url("/readyz")) as resp:
            assert resp.status == 200
            report: dict[str, Any] = (await resp.json())["upstreams"]["default"]
        async with http.post(gw.make_url("/mcp"), data=CALL, headers=JSON_HEADERS) as resp:
            return report, resp.status


async def test_readyz_reports_an_untrusted_tls_certificate_as_not_reachable(
    tmp_path: Path,
) -> None:
    async with tls_upstream(tmp_path) as (port, cert):
        url = f"https://localhost:{port}/mcp"
        # The system trust store does not know the certificate: every call fails, and so
        # does readiness's view of the upstream.
        report, status = await readyz_and_call(url, None)
        assert report == {"reachable": False, "reason": "tls"}
        assert status == 502
        # Trusted (tls.ca_file: the same context for the relay's client and /readyz):
        # reachable, calls pass.
        report, status = await readyz_and_call(url, cert)
        assert report == {"reachable": True}
        assert status == 200


async def test_readyz_names_why_a_plain_upstream_is_not_reachable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = sock.getsockname()[1]
        report, _ = await readyz_and_call(f"http://127.0.0.1:{port}/mcp", None)
    assert report == {"reachable": False, "reason": "connect"}
