"""The relay's upstream HTTP/1.1 client against raw TCP servers that send exactly the bytes a
test chooses (well-formed, hostile, slow, or broken)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from yarl import URL

from gateway.proxy import upstream as up
from gateway.proxy.upstream import UpstreamClient, UpstreamError, UpstreamResponse, UpstreamTimeout

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Server"], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


@dataclass
class Server:
    url: URL
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)


async def read_request(reader: asyncio.StreamReader, server: Server) -> bytes:
    """One request (head and Content-Length body), recorded in ``server.requests``."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    raw = head + (await reader.readexactly(length) if length else b"")
    server.requests.append(raw)
    return raw


def answering(*answers: bytes, close: bool = False) -> Handler:
    """Answer each request on a connection with the next of ``answers``."""

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: Server
    ) -> None:
        for answer in answers:
            await read_request(reader, server)
            writer.write(answer)
            await writer.drain()
        if not close:
            with contextlib.suppress(ConnectionError):
                while await read_request(reader, server):
                    writer.write(answers[-1])
                    await writer.drain()

    return handle


@contextlib.asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[Server]:
    server = Server(URL("http://127.0.0.1/"))
    tasks: set[asyncio.Task[None]] = set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await handler(reader, writer, server)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            tasks.discard(task)

    srv = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    server.url = URL(f"http://127.0.0.1:{port}/mcp")
    try:
        yield server
    finally:
        srv.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await srv.wait_closed()


def client(**timeouts: float) -> UpstreamClient:
    return UpstreamClient(
        connect_timeout=timeouts.get("connect", 2.0),
        response_timeout=timeouts.get("response", 5.0),
        idle_timeout=timeouts.get("idle", 5.0),
    )


async def body_of(resp: UpstreamResponse) -> bytes:
    out = b""
    async for chunk in resp.iter_chunks():
        out += chunk
    resp.close()
    return out


HEADERS = [("Content-Type", "application/json"), ("Mcp-Session-Id", "abc")]


async def fetch(c: UpstreamClient, url: URL) -> bytes:
    return await body_of(await c.request("POST", url, HEADERS, b"{}"))


# -- what is sent ---------------------------------------------------------------------------


async def test_request_carries_only_host_and_length_besides_the_relays_headers() -> None:
    async with raw_server(answering(OK)) as srv:
        c = client()
        resp = await c.request("POST", srv.url, HEADERS, b'{"a":1}')
        assert resp.status == 200
        assert resp.headers["content-type"] == "application/json"
        assert resp.content_length == 2
        assert await body_of(resp) == b"{}"
        await c.close()
    host = f"127.0.0.1:{srv.url.port}"
    assert srv.requests == [
        b"POST /mcp HTTP/1.1\r\nHost: " + host.encode() + b"\r\n"
        b"Content-Type: application/json\r\nMcp-Session-Id: abc\r\n"
        b"Content-Length: 7\r\n\r\n"
        b'{"a":1}'
    ]


async def test_get_without_body_has_no_length_and_the_query_is_passed_raw() -> None:
    async with raw_server(answering(OK)) as srv:
        c = client()
        await body_of(await c.request("GET", srv.url, [], None, query="a=%20b&c"))
        await c.close()
    assert srv.requests[0].startswith(b"GET /mcp?a=%20b&c HTTP/1.1\r\n")
    assert b"content-length" not in srv.requests[0].lower()


@pytest.mark.parametrize(
    "headers",
    [
        [("X-Evil", "a\r\nInjected: yes")],
        [("X-Evil", "a\nb")],
        [("X-Evil", "a\rb")],
        [("X-Evil", "a\x00b")],
        [("X-Evil\r\nInjected", "yes")],
    ],
)
async def test_header_injection_is_refused_before_anything_is_sent(
    headers: list[tuple[str, str]],
) -> None:
    async with raw_server(answering(OK)) as srv:
        c = client()
        with pytest.raises(UpstreamError, match="CR, LF or NUL"):
            await c.request("POST", srv.url, headers, b"{}")
        await c.close()
    assert srv.requests == []


def test_ipv6_and_default_ports_in_the_host_header() -> None:
    def head(url: str) -> bytes:
        u = URL(url)
        return up._request_bytes("GET", u, up._origin_of(u), [], body=None, query="")

    assert b"Host: [::1]:8080\r\n" in head("http://[::1]:8080/mcp")
    assert b"Host: example.org\r\n" in head("http://example.org/mcp")
    assert b"Host: example.org\r\n" in head("https://example.org:443/mcp")
    assert b"Host: example.org:80\r\n" in head("https://example.org:80/mcp")


# -- connection reuse -----------------------------------------------------------------------


async def test_connections_are_reused_after_a_complete_answer() -> None:
    async with raw_server(answering(OK)) as srv:
        c = client()
        for _ in range(5):
            assert await fetch(c, srv.url) == b"{}"
        await c.close()
    assert srv.connections == 1
    assert len(srv.requests) == 5


async def test_an_answer_not_read_to_its_end_closes_its_connection() -> None:
    long = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234"

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, srv: Server) -> None:
        await (answering(long) if srv.connections == 1 else answering(OK))(r, w, srv)

    async with raw_server(handle) as srv:
        c = client()
        resp = await c.request("POST", srv.url, HEADERS, b"{}")
        resp.close()  # before the body is complete
        assert await fetch(c, srv.url) == b"{}"
        await c.close()
    assert srv.connections == 2


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        # Two answers to one request: out of step, never reused.
        OK + OK,
    ],
)
async def test_connections_the_upstream_did_not_keep_alive_are_not_reused(answer: bytes) -> None:
    async with raw_server(answering(answer, answer, answer)) as srv:
        c = client()
        for _ in range(3):
            assert await fetch(c, srv.url) == b"{}"
        await c.close()
    assert srv.connections == 3


async def test_bytes_after_a_complete_answer_spoil_the_idle_connection() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, srv: Server) -> None:
        await read_request(r, srv)
        w.write(OK)
        await w.drain()
        await asyncio.sleep(0.1)
        w.write(OK)  # unasked: would be read as the next request's answer
        await w.drain()
        await asyncio.sleep(5)

    async with raw_server(handle) as srv:
        c = client()
        assert await fetch(c, srv.url) == b"{}"
        await asyncio.sleep(0.3)
        with contextlib.suppress(UpstreamError):
            await c.request("POST", srv.url, HEADERS, b"{}")
        await c.close()
    assert srv.connections == 2  # the spoiled connection was not used again


async def test_idle_connections_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(up, "KEEPALIVE_SECONDS", 0.05)
    async with raw_server(answering(OK)) as srv:
        c = client()
        await fetch(c, srv.url)
        await asyncio.sleep(0.1)
        await fetch(c, srv.url)
        await c.close()
    assert srv.connections == 2


async def test_a_pooled_connection_the_server_closed_is_not_used() -> None:
    async with raw_server(answering(OK, close=True)) as srv:
        c = client()
        await fetch(c, srv.url)
        await asyncio.sleep(0.1)  # the server has closed the connection meanwhile
        assert await fetch(c, srv.url) == b"{}"
        await c.close()
    assert srv.connections == 2


# -- strict parsing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"2\r\n{}\r\n0\r\n\r\n",
            "invalid HTTP",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "invalid HTTP"),
        (b"HTTP/1.1 200 OK\r\nX: a\nContent-Length: 2\r\n\r\n{}", "invalid HTTP"),
        (b"HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 2\r\n\r\n{}", "invalid HTTP"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "coding"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n{}", "coding"),
        (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n",
            "switch",
        ),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "invalid HTTP"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * (70 * 1024) + b"\r\n\r\n", "too large"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: a\r\n" * 300 + b"\r\n", "too many"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "closed"),  # the head never ends
    ],
)
async def test_invalid_answers_are_refused(answer: bytes, match: str) -> None:
    async with raw_server(answering(answer, close=True)) as srv:
        c = client()
        with pytest.raises(UpstreamError, match=match):
            await fetch(c, srv.url)
        await c.close()


async def test_informational_answers_are_skipped() -> None:
    answer = b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + OK
    async with raw_server(answering(answer)) as srv:
        c = client()
        resp = await c.request("POST", srv.url, HEADERS, b"{}")
        assert resp.status == 200
        assert "Link" not in resp.headers
        assert await body_of(resp) == b"{}"
        await c.close()


async def test_chunked_body_with_trailers() -> None:
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'3\r\n{"a\r\n4;ext=1\r\n":1}\r\n0\r\nX-Trailer: t\r\n\r\n'
    )
    async with raw_server(answering(answer)) as srv:
        c = client()
        resp = await c.request("POST", srv.url, HEADERS, b"{}")
        assert await body_of(resp) == b'{"a":1}'
        assert "X-Trailer" not in resp.headers
        await fetch(c, srv.url)
        await c.close()
    assert srv.connections == 1


async def test_body_until_the_connection_ends() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it"
    async with raw_server(answering(answer, close=True)) as srv:
        c = client()
        assert await fetch(c, srv.url) == b"all of it"
        await c.close()


async def test_truncated_body_is_an_error_not_an_end() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234"
    async with raw_server(answering(answer, close=True)) as srv:
        c = client()
        resp = await c.request("POST", srv.url, HEADERS, b"{}")
        with pytest.raises(UpstreamError, match="closed"):
            await body_of(resp)
        await c.close()


async def test_large_body_streams_through_a_bounded_buffer() -> None:
    size = 8 * 1024 * 1024
    payload = bytes(range(256)) * (size // 256)

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, srv: Server) -> None:
        await read_request(r, srv)
        w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        for i in range(0, size, 65536):
            w.write(payload[i : i + 65536])
            await w.drain()
        await asyncio.sleep(5)

    async with raw_server(handle) as srv:
        c = client()
        resp = await c.request("POST", srv.url, HEADERS, b"{}")
        got = bytearray()
        most = 0
        while chunk := await resp.read():
            got += chunk
            most = max(most, len(chunk))
            await asyncio.sleep(0.001)  # a slow reader
        resp.close()
        await c.close()
    assert bytes(got) == payload
    assert most <= up.HIGH_WATER + 256 * 1024  # paused at the high-water mark (+ one read)


# -- failures and timeouts -----------------------------------------------------------------


async def test_refused_connection() -> None:
    async with raw_server(answering(OK)) as srv:
        url = srv.url
    c = client()
    with pytest.raises(UpstreamError, match="unreachable") as info:
        await c.request("POST", url, HEADERS, b"{}")
    assert not isinstance(info.value, UpstreamTimeout)
    await c.close()


async def test_response_timeout() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, srv: Server) -> None:
        await read_request(r, srv)
        await asyncio.sleep(30)

    async with raw_server(handle) as srv:
        c = client(response=0.2)
        start = asyncio.get_running_loop().time()
        with pytest.raises(UpstreamTimeout, match="in time"):
            await c.request("POST", srv.url, HEADERS, b"{}")
        assert asyncio.get_running_loop().time() - start < 2
        await c.close()


async def test_idle_timeout_inside_a_body_but_not_while_the_reader_is_slow() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, srv: Server) -> None:
        await read_request(r, srv)
        w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
        w.write(b"x" * (2 * up.HIGH_WATER))
        await w.drain()
        await asyncio.sleep(30)

    async with raw_server(handle) as srv:
        c = client(idle=0.2)
        resp = await c.request("POST", srv.url, HEADERS, b"{}")
        await asyncio.sleep(0.3)
        assert await resp.read()  # buffered (reading was paused): not an upstream stall
        with pytest.raises(UpstreamTimeout, match="stalled"):
            await body_of(resp)
        resp.close()
        await c.close()


async def test_closing_an_answer_ends_a_read_waiting_in_another_task() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, srv: Server) -> None:
        await read_request(r, srv)
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: hi\r\n\r\n")
        await w.drain()
        await asyncio.sleep(30)

    async with raw_server(handle) as srv:
        c = client()
        resp = await c.request("GET", srv.url, HEADERS, None)
        assert await resp.read() == b": hi\r\n\r\n"
        reader = asyncio.create_task(resp.read())
        await asyncio.sleep(0.05)
        resp.close()
        assert resp.closed
        with pytest.raises(UpstreamError, match="closed by the gateway"):
            await asyncio.wait_for(reader, 2)
        await c.close()


async def test_cancelled_request_closes_its_connection() -> None:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, srv: Server) -> None:
        await read_request(r, srv)
        with contextlib.suppress(ConnectionError):
            await r.read()  # until the client closes
        srv.requests.append(b"closed")

    async with raw_server(handle) as srv:
        c = client()
        task = asyncio.create_task(c.request("POST", srv.url, HEADERS, b"{}"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(50):
            if srv.requests[-1] == b"closed":
                break
            await asyncio.sleep(0.02)
        assert srv.requests[-1] == b"closed"
        await c.close()


async def test_a_closed_client_refuses_requests() -> None:
    c = client()
    await c.close()
    with pytest.raises(UpstreamError, match="closed"):
        await c.request("POST", URL("http://127.0.0.1:9/mcp"), HEADERS, b"{}")


def test_only_http_urls_with_a_host() -> None:
    with pytest.raises(UpstreamError, match="http"):
        up._origin_of(URL("ftp://example.org/x"))


# -- TLS upstreams ----------------------------------------------------------------------------


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_https_upstream_is_verified(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    seen: list[bytes] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            seen.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(OK)
            await writer.drain()
        writer.close()

    srv = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=server_ctx)
    port = srv.sockets[0].getsockname()[1]
    try:
        trusting = ssl.create_default_context(cafile=str(cert))
        c = UpstreamClient(
            connect_timeout=2, response_timeout=5, idle_timeout=5, ssl_context=trusting
        )
        resp = await c.request("GET", URL(f"https://localhost:{port}/mcp"), [], None)
        assert await body_of(resp) == b"{}"
        await c.close()
        assert seen[0].startswith(b"GET /mcp HTTP/1.1\r\nHost: localhost:" + str(port).encode())
        # The system trust store does not know this certificate: refused, nothing sent.
        c = client()
        with pytest.raises(UpstreamError, match="unreachable"):
            await c.request("GET", URL(f"https://localhost:{port}/mcp"), [], None)
        await c.close()
        assert len(seen) == 1
    finally:
        srv.close()
        await srv.wait_closed()
