"""Client-side timeouts and the connection cap (gateway/proxy/listener.py), with real sockets: the
gateway runs the way ``serve`` runs it (``AppRunner`` + the guarded site on port 0) in front of a
real aiohttp upstream; the attacking clients are raw sockets.

Timeouts are configured small (0.5 s) and every wait has a generous upper bound; nothing here
measures speed (that is bench/slowloris.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.errors import ConfigError
from gateway.policy.loader import load_policy
from gateway.proxy.allocator import malloc_trim
from gateway.proxy.app import GUARD, make_app
from gateway.proxy.config import Limits, Timeouts, load_settings
from gateway.proxy.listener import _HEADER_TIMEOUT_RESPONSE, ConnectionGuard, GuardedSite
from tests.relay_harness import DEFAULT_POLICY, TEST_KEYS, settings_for

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{}}}'
RESULT = b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}'
SHORT = 0.5  # the timeout under test
LONG = 30.0  # a timeout that must not fire during the test
WAIT = 10.0  # upper bound for anything expected to happen "after SHORT"


@dataclass
class Gateway:
    port: int
    guard: ConnectionGuard
    upstream_calls: list[bytes]
    site: GuardedSite

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def head(self, length: int) -> bytes:
        return (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {length}\r\n\r\n"
        ).encode()

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def metric(self, name: str, **labels: str) -> float:
        async with (
            aiohttp.ClientSession() as session,
            session.get(self.url + "/metrics") as resp,
        ):
            text = await resp.text()
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        pattern = re.escape(name + (f"{{{want}}}" if want else "")) + r" ([0-9.e+]+)$"
        match = re.search(pattern, text, re.MULTILINE)
        return float(match.group(1)) if match else 0.0

    async def wait_open(self, count: int) -> None:
        deadline = time.monotonic() + WAIT
        while self.guard.open != count:
            assert time.monotonic() < deadline, f"{self.guard.open} connections open, not {count}"
            await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def gateway(
    *, upstream_delay: float = 0.0, limits: dict[str, Any] | None = None, **timeouts: float
) -> AsyncIterator[Gateway]:
    calls: list[bytes] = []

    async def upstream(request: web.Request) -> web.Response:
        calls.append(await request.read())
        await asyncio.sleep(upstream_delay)
        return web.Response(body=RESULT, content_type="application/json")

    up_app = web.Application()
    up_app.router.add_post("/mcp", upstream)
    async with TestServer(up_app, port=0) as up:
        settings = settings_for(
            str(up.make_url("/mcp")),
            timeouts={"header": LONG, "body": LONG, "keepalive": LONG, **timeouts},
            limits=limits or {},
        )
        app = make_app(settings, load_policy(DEFAULT_POLICY), TEST_KEYS)
        runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await runner.setup()
        try:
            site = app[GUARD].site(runner, "127.0.0.1", 0)
            await site.start()
            yield Gateway(site.port, app[GUARD], calls, site)
        finally:
            await runner.cleanup()


async def read_until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the gateway sends until it closes the connection (bounded by WAIT)."""
    async with asyncio.timeout(WAIT):
        return await reader.read()


async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> int:
    """Send ``data`` one byte every 50 ms until the gateway closes the connection; return how
    many bytes were sent. (The gateway answers 408 before closing, but a byte sent after its
    close makes it reset the connection, which may drop that answer here: not checked.)"""
    closed = asyncio.create_task(read_until_closed(reader))
    sent = 0
    with contextlib.suppress(ConnectionError):
        for byte in data:
            if closed.done():
                break
            writer.write(bytes([byte]))
            await writer.drain()
            sent += 1
            await asyncio.sleep(0.05)
    with contextlib.suppress(ConnectionError):
        await closed
    writer.close()
    return sent


async def tools_call(gw: Gateway) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            gw.url + "/mcp",
            data=CALL,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        ) as resp,
    ):
        assert await resp.read() == RESULT
        return resp.status


# -- header timeout -----------------------------------------------------------------------------


async def test_half_a_request_head_gets_408_and_is_closed_after_the_header_timeout() -> None:
    async with gateway(header=SHORT) as gw:
        reader, writer = await gw.connect()
        started = time.monotonic()
        writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
        answer = await read_until_closed(reader)
        assert time.monotonic() - started >= SHORT * 0.8  # closed by the timer, not at once
        assert answer.startswith(b"HTTP/1.1 408 ")
        writer.close()
        await gw.wait_open(0)
        assert await gw.metric("gateway_connections_closed_total", reason="header-timeout") == 1
        assert gw.upstream_calls == []


async def test_a_head_sent_one_byte_at_a_time_is_cut_off_at_the_header_timeout() -> None:
    """Slowloris proper: bytes keep arriving, but the head is never complete in time."""
    async with gateway(header=SHORT) as gw:
        head = gw.head(len(CALL))
        assert await drip(*await gw.connect(), head) < len(head)
        await gw.wait_open(0)
        assert await gw.metric("gateway_connections_closed_total", reason="header-timeout") == 1
        assert gw.upstream_calls == []


async def test_many_heads_timing_out_together_are_all_closed() -> None:
    """Expiries are handled a batch per turn of the loop: every one of them still happens."""
    async with gateway(header=SHORT) as gw:
        pairs = await asyncio.gather(*(gw.connect() for _ in range(150)))
        for _, writer in pairs:
            writer.write(b"GET /healthz HTTP/1.1\r\n")
        answers = await asyncio.gather(*(read_until_closed(r) for r, _ in pairs))
        assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers)
        for _, writer in pairs:
            writer.close()
        await gw.wait_open(0)
        assert await gw.metric("gateway_connections_closed_total", reason="header-timeout") == 150


async def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout() -> None:
    async with gateway(header=SHORT) as gw:
        reader, writer = await gw.connect()
        assert await read_until_closed(reader) == b""  # no partial head, no answer: just closed
        writer.close()
        assert await gw.metric("gateway_connections_closed_total", reason="header-timeout") == 1


async def test_a_request_whose_head_arrives_in_time_is_answered() -> None:
    async with gateway(header=2.0) as gw:
        reader, writer = await gw.connect()
        head = gw.head(len(CALL))
        writer.write(head[:20])
        await asyncio.sleep(0.3)
        writer.write(head[20:] + CALL)
        answer = await reader.readuntil(b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 ")
        writer.close()


# -- keep-alive ---------------------------------------------------------------------------------


async def test_a_kept_alive_connection_waits_for_the_keepalive_timeout_not_the_header_one() -> None:
    """Between requests the keep-alive limit applies; the header clock starts at the next
    request's first byte. Then silence closes the connection (idle-timeout)."""
    async with gateway(header=SHORT, keepalive=4.0) as gw:
        reader, writer = await gw.connect()
        for _ in range(2):
            writer.write(gw.head(len(CALL)) + CALL)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
            assert await reader.readexactly(length) == RESULT
            await asyncio.sleep(3 * SHORT)  # idle for longer than the header timeout
        started = time.monotonic()
        assert await read_until_closed(reader) == b""
        assert time.monotonic() - started < WAIT
        writer.close()
        assert await gw.metric("gateway_connections_closed_total", reason="idle-timeout") == 1
        assert await gw.metric("gateway_connections_closed_total", reason="header-timeout") == 0


async def test_a_request_served_longer_than_every_client_timeout_is_not_cut() -> None:
    """No client-side timer runs while the gateway serves a request (the upstream is slow)."""
    async with gateway(upstream_delay=4 * SHORT, header=SHORT, body=SHORT, keepalive=SHORT) as gw:
        assert await tools_call(gw) == 200


# -- body timeout -------------------------------------------------------------------------------


async def test_a_stalled_body_gets_408_with_a_jsonrpc_error_and_the_connection_closes() -> None:
    async with gateway(body=SHORT) as gw:
        reader, writer = await gw.connect()
        writer.write(gw.head(len(CALL)) + CALL[:10])  # then nothing
        answer = await read_until_closed(reader)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 ")
        assert b"Connection: close" in head
        error = json.loads(body)["error"]
        assert error == {"code": -32600, "message": "Request body timeout"}
        writer.close()
        assert gw.upstream_calls == []
        await gw.wait_open(0)
        assert await gw.metric("gateway_connections_closed_total", reason="body-timeout") == 1


async def test_a_body_dripped_slower_than_the_body_timeout_is_cut_off() -> None:
    """The body timeout bounds the whole body, not the gap between two bytes."""
    async with gateway(body=SHORT) as gw:
        reader, writer = await gw.connect()
        writer.write(gw.head(len(CALL)))
        assert await drip(reader, writer, CALL) < len(CALL)
        await gw.wait_open(0)
        assert await gw.metric("gateway_connections_closed_total", reason="body-timeout") == 1
        assert gw.upstream_calls == []


async def test_a_body_sent_in_pieces_within_the_body_timeout_is_forwarded() -> None:
    async with gateway(body=3.0) as gw:
        reader, writer = await gw.connect()
        writer.write(gw.head(len(CALL)) + CALL[:10])
        await asyncio.sleep(0.3)
        writer.write(CALL[10:])
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
        writer.close()
        assert gw.upstream_calls == [CALL]


async def test_an_answer_sent_before_the_body_arrived_closes_the_connection_at_once() -> None:
    """413 on a declared length above the limit: answered and closed without waiting for the
    rest of the body (which a slow client might never send)."""
    async with gateway(limits={"max_request_bytes": 1024}) as gw:
        reader, writer = await gw.connect()
        writer.write(gw.head(100_000) + b"{")
        answer = await read_until_closed(reader)
        assert answer.startswith(b"HTTP/1.1 413 ")
        writer.close()
        await gw.wait_open(0)
        assert await gw.metric("gateway_connections_closed_total", reason="unread-body") == 1


# -- pipelining ---------------------------------------------------------------------------------


async def test_pipelined_requests_are_all_answered() -> None:
    async with gateway(header=SHORT, keepalive=SHORT) as gw:
        reader, writer = await gw.connect()
        writer.write((gw.head(len(CALL)) + CALL) * 3)
        for _ in range(3):
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
            assert await reader.readexactly(length) == RESULT
        writer.close()


async def test_half_a_head_sent_while_a_request_is_served_times_out_after_its_answer() -> None:
    """Bytes of the next request that arrive while one is served start the header clock when
    its answer is done (not the keep-alive one)."""
    async with gateway(upstream_delay=1.0, header=SHORT, keepalive=LONG) as gw:
        reader, writer = await gw.connect()
        writer.write(gw.head(len(CALL)) + CALL)
        await asyncio.sleep(0.3)  # the request is with the upstream now
        writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127")
        answer = await read_until_closed(reader)
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert answer.endswith(_HEADER_TIMEOUT_RESPONSE)
        writer.close()
        assert len(gw.upstream_calls) == 1


# -- connection cap -----------------------------------------------------------------------------


async def test_connections_above_the_cap_get_503_at_once_and_a_request_passes_once_one_frees() -> (
    None
):
    async with gateway(limits={"max_connections": 3}) as gw:
        held = [await gw.connect() for _ in range(3)]
        await gw.wait_open(3)
        reader, writer = await gw.connect()
        refused = await read_until_closed(reader)  # at once: nothing was sent on it
        writer.close()
        assert refused.startswith(b"HTTP/1.1 503 ")
        assert json.loads(refused.partition(b"\r\n\r\n")[2])["error"]["code"] == -32600
        assert gw.guard.open == 3
        held.pop()[1].close()
        await gw.wait_open(2)
        assert await tools_call(gw) == 200
        # /metrics takes a connection slot too: free one more for it.
        held.pop()[1].close()
        await gw.wait_open(1)
        assert await gw.metric("gateway_connections_closed_total", reason="over-capacity") == 1
        assert await gw.metric("gateway_connections_open") == 2  # held + the /metrics request
        for _, w in held:
            w.close()


async def test_a_flood_above_the_cap_is_refused_and_the_count_returns_to_zero() -> None:
    async with gateway(limits={"max_connections": 20}) as gw:
        pairs = await asyncio.gather(*(gw.connect() for _ in range(60)))
        await gw.wait_open(20)
        answers = await asyncio.gather(
            *(asyncio.wait_for(r.read(100), WAIT) for r, _ in pairs), return_exceptions=True
        )
        refused = [a for a in answers if isinstance(a, bytes) and a.startswith(b"HTTP/1.1 503")]
        assert len(refused) == 40
        for _, w in pairs:
            w.close()
        await gw.wait_open(0)
        assert await tools_call(gw) == 200


# -- stopping -----------------------------------------------------------------------------------


async def test_stopping_the_site_closes_connections_that_sent_nothing_and_stops_accepting() -> None:
    """A drain stops the listener; a connection that never sent a byte has no request to finish
    (aiohttp does not know it) and is closed then."""
    async with gateway() as gw:
        reader, writer = await gw.connect()
        await gw.wait_open(1)
        await gw.site.stop()
        assert await read_until_closed(reader) == b""
        writer.close()
        with pytest.raises(ConnectionRefusedError):
            await gw.connect()


# -- configuration ------------------------------------------------------------------------------


def test_defaults_are_the_documented_ones() -> None:
    assert (Timeouts().header, Timeouts().body, Timeouts().keepalive) == (10.0, 30.0, 75.0)
    assert Limits().max_connections == 4096


def test_config_file_sets_the_client_timeouts_and_the_connection_cap(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "upstreams: {a: {url: 'http://127.0.0.1:1/mcp'}}\n"
        "limits: {max_connections: 100}\n"
        "timeouts: {header: 2.5, body: 7, keepalive: 15}\n",
        encoding="utf-8",
    )
    settings = load_settings(str(config))
    assert settings.limits.max_connections == 100
    assert (settings.timeouts.header, settings.timeouts.body) == (2.5, 7.0)
    assert settings.timeouts.keepalive == 15.0


@pytest.mark.parametrize(
    "line", ["limits: {max_connections: 0}", "timeouts: {header: 0}", "timeouts: {body: -1}"]
)
def test_a_non_positive_limit_is_a_config_error(tmp_path: Path, line: str) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(f"upstreams: {{a: {{url: 'http://x/mcp'}}}}\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"(max_connections|header|body)"):
        load_settings(str(config))


# -- memory after a burst -----------------------------------------------------------------------


@pytest.mark.skipif(malloc_trim() is None, reason="malloc_trim exists only in glibc")
async def test_memory_is_handed_back_once_a_burst_of_connections_has_closed() -> None:
    async with gateway(limits={"max_connections": 500}) as gw:
        task = asyncio.create_task(gw.guard.give_back_memory(interval=0.05))
        try:
            pairs = await asyncio.gather(*(gw.connect() for _ in range(100)))
            await gw.wait_open(100)
            await asyncio.sleep(0.2)
            assert await gw.metric("gateway_memory_trims_total") == 0  # still open: no trim
            for _, w in pairs:
                w.close()
            await gw.wait_open(0)
            deadline = time.monotonic() + WAIT
            while await gw.metric("gateway_memory_trims_total") < 1:
                assert time.monotonic() < deadline, "no trim after 100 connections closed"
                await asyncio.sleep(0.05)
        finally:
            task.cancel()
