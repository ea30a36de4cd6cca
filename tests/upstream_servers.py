"""Real servers for upstream connection tests, all local, on port 0, offline, no root.

* ``make_pki(folder)``: a private CA (and an unrelated second CA) with ``cryptography``; server
  certificates for ``localhost``/``127.0.0.1``/``::1``/``upstream.test`` and for
  ``upstream.test`` alone, client certificates from either CA; written as PEM files.
* ``mcp_upstream(...)``: an MCP-ish HTTP(S) upstream (aiohttp): ``POST /mcp`` answers a
  JSON-RPC result and records each request's headers; TLS from ``server_context(...)``, which
  can require a client certificate signed by the private CA (mTLS). ``threaded_upstream(...)``
  answers the same on blocking OpenSSL sockets: use it for mTLS, because asyncio's server-side
  TLS closes a refused handshake without sending the alert that tells the client why.
* ``ConnectProxy``: a small asyncio ``CONNECT`` proxy (optional Basic auth, a status to refuse
  with, names it resolves itself) that counts the tunnels it opened.
* ``Blackhole``: a listening socket whose accept queue is full, so that the kernel drops new
  SYNs and a connect to it hangs — an unreachable address without root or a network. With
  ``dual_stack_upstream`` it is the dead IPv6 address (``[::1]:P``) that a name resolves to
  *first*, before the live IPv4 one (``127.0.0.1:P``), through a lookup function given to the
  client's resolver (``/etc/hosts`` cannot be changed without root, and here lists
  ``localhost`` as 127.0.0.1 only).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gateway.proxy.upstream_settings import AddrInfo

SERVER_NAMES = ("localhost", "upstream.test", "127.0.0.1", "::1")
ONLY_NAME = "upstream.test"  # the host name on ``Pki.named_cert`` (no IP address on it)


# -- certificates ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    """PEM files (paths) of a private CA, a second unrelated CA and their leaves."""

    ca_file: Path  # the private CA
    other_ca_file: Path  # a CA that signed nothing the servers use
    server_cert: Path  # SERVER_NAMES, by the private CA
    server_key: Path
    named_cert: Path  # ONLY_NAME only, by the private CA
    named_key: Path
    client_cert: Path  # client auth, by the private CA
    client_key: Path
    client_combined: Path  # client certificate and key in one file
    foreign_client_cert: Path  # client auth, by the other CA
    foreign_client_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _make_ca(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _issue(
    ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
    names: tuple[str, ...],
    *,
    client: bool,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    ca_key, ca_cert = ca
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    alt: list[x509.GeneralName] = []
    for name in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def make_pki(folder: Path) -> Pki:
    """Generate the CAs and leaves into ``folder`` (EC P-256: milliseconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, other = _make_ca("Gateway Test CA"), _make_ca("Unrelated Test CA")
    files: dict[str, bytes] = {
        "ca.pem": _cert_pem(ca[1]),
        "other-ca.pem": _cert_pem(other[1]),
    }
    leaves = {
        "server": _issue(ca, SERVER_NAMES, client=False),
        "named": _issue(ca, (ONLY_NAME,), client=False),
        "client": _issue(ca, ("gateway-client",), client=True),
        "foreign-client": _issue(other, ("gateway-client",), client=True),
    }
    for stem, (key, cert) in leaves.items():
        files[f"{stem}.pem"] = _cert_pem(cert)
        files[f"{stem}-key.pem"] = _key_pem(key)
    files["client-combined.pem"] = files["client.pem"] + files["client-key.pem"]
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return Pki(
        ca_file=folder / "ca.pem",
        other_ca_file=folder / "other-ca.pem",
        server_cert=folder / "server.pem",
        server_key=folder / "server-key.pem",
        named_cert=folder / "named.pem",
        named_key=folder / "named-key.pem",
        client_cert=folder / "client.pem",
        client_key=folder / "client-key.pem",
        client_combined=folder / "client-combined.pem",
        foreign_client_cert=folder / "foreign-client.pem",
        foreign_client_key=folder / "foreign-client-key.pem",
    )


def server_context(
    pki: Pki, *, named_only: bool = False, require_client_cert: bool = False
) -> ssl.SSLContext:
    """The upstream's TLS context: the SERVER_NAMES certificate (or the ONLY_NAME one);
    ``require_client_cert``: mTLS, clients must present a certificate of the private CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    if named_only:
        context.load_cert_chain(pki.named_cert, pki.named_key)
    else:
        context.load_cert_chain(pki.server_cert, pki.server_key)
    if require_client_cert:
        context.load_verify_locations(pki.ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


# -- the MCP-ish upstream -------------------------------------------------------------------


@dataclass
class Upstream:
    """A running upstream: where it listens and what it saw."""

    host: str
    port: int
    seen_headers: list[dict[str, str]] = field(default_factory=list)
    # Requests being answered now, and the most at once. With ``hold`` set, each request waits
    # for it before answering; ``busy`` is set when ``in_flight`` reaches ``busy_at``.
    in_flight: int = 0
    peak: int = 0
    hold: asyncio.Event | None = None
    busy_at: int = 0
    busy: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, scheme: str = "https", host: str | None = None) -> str:
        name = host or self.host
        name = f"[{name}]" if ":" in name else name
        return f"{scheme}://{name}:{self.port}/mcp"


@contextlib.asynccontextmanager
async def mcp_upstream(
    context: ssl.SSLContext | None, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[Upstream]:
    """An MCP-ish upstream on ``host:port`` (port 0: any), TLS when ``context`` is given."""
    up = Upstream(host, 0)

    async def mcp(request: web.Request) -> web.Response:
        up.seen_headers.append(dict(request.headers))
        body = json.loads(await request.read())
        up.in_flight += 1
        up.peak = max(up.peak, up.in_flight)
        try:
            if up.busy_at and up.in_flight >= up.busy_at:
                up.busy.set()
            if up.hold is not None:
                await up.hold.wait()
        finally:
            up.in_flight -= 1
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
        return web.json_response({"jsonrpc": "2.0", "id": body.get("id"), "result": result})

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=context)
    await site.start()
    server = site._server  # the bound port of a port-0 site
    assert isinstance(server, asyncio.base_events.Server)
    up.port = server.sockets[0].getsockname()[1]
    try:
        yield up
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def threaded_upstream(context: ssl.SSLContext, host: str = "127.0.0.1") -> Iterator[Upstream]:
    """The same upstream served by blocking OpenSSL sockets in a thread, like nginx or a Go
    server: a failed handshake sends its TLS alert (asyncio's TLS layer closes without one), so
    a client sees *why* its certificate was refused. One connection at a time."""
    up = Upstream(host, 0)
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.bind((host, 0))
    listener.listen(16)
    listener.settimeout(0.1)
    up.port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            raw.settimeout(5)
            with contextlib.suppress(OSError), raw:
                conn = context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
                with conn:
                    try:
                        conn.do_handshake()  # sends its alert on failure
                    except ssl.SSLError:
                        _linger(conn)
                        continue
                    _answer(conn, up)

    thread = threading.Thread(target=serve, name="threaded-upstream", daemon=True)
    thread.start()
    try:
        yield up
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def _linger(conn: ssl.SSLSocket) -> None:
    """Close like nginx's lingering close: stop writing, read what the client already sent until
    it closes, so that the kernel does not answer its unread bytes with a reset that could
    overtake the alert."""
    conn.shutdown(socket.SHUT_WR)  # drops the TLS layer: the reads below are raw
    conn.settimeout(2)
    with contextlib.suppress(OSError):
        while conn.recv(65536):
            pass


def _answer(conn: ssl.SSLSocket, up: Upstream) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    up.seen_headers.append(headers)
    length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk
    request = json.loads(body or b"{}")
    result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    payload = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}).encode()
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )


# -- the CONNECT proxy ----------------------------------------------------------------------


class ConnectProxy:
    """An HTTP ``CONNECT`` proxy on 127.0.0.1, port 0. ``credentials`` (user, password):
    Basic auth required (else 407); ``refuse``: answer every CONNECT with this status;
    ``hosts``: names it resolves itself (name → IP), like a proxy with its own DNS;
    ``trailing``: bytes sent after its 200, before the upstream says anything.
    ``tunnels`` counts the tunnels opened, ``requests`` the CONNECT targets asked for."""

    def __init__(
        self,
        *,
        credentials: tuple[str, str] | None = None,
        refuse: int | None = None,
        hosts: dict[str, str] | None = None,
        trailing: bytes = b"",
    ) -> None:
        self.credentials = credentials
        self.refuse = refuse
        self.hosts = hosts or {}
        self.trailing = trailing  # sent right after "200 Connection established" (a bad proxy)
        self.tunnels = 0
        self.requests: list[str] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> ConnectProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        method, target, _ = [*lines[0].split(" "), "", "", ""][:3]
        headers = {
            k.strip().lower(): v.strip()
            for k, _, v in (line.partition(":") for line in lines[1:] if line)
        }
        self.requests.append(target)
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        if self.credentials is not None:
            user, password = self.credentials
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            if headers.get("proxy-authorization") != f"Basic {token}":
                writer.write(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
                )
                return
        if self.refuse is not None:
            writer.write(f"HTTP/1.1 {self.refuse} Refused\r\nContent-Length: 0\r\n\r\n".encode())
            return
        host, _, port = target.rpartition(":")
        host = self.hosts.get(host.strip("[]"), host.strip("[]"))
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        self.tunnels += 1
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n" + self.trailing)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError):
            writer.write_eof()


# -- unreachable addresses ------------------------------------------------------------------


class Blackhole:
    """A listening socket on ``host:port`` whose accept queue is full: the kernel drops new
    SYNs, so a connect to it hangs until the caller's timeout (like a dead route), without
    root. ``port`` 0 picks a free one."""

    def __init__(self, host: str, port: int = 0) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET6:
            self.listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        self.listener.bind((host, port))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]
        self._fillers: list[socket.socket] = []
        for _ in range(4):  # more than the backlog can take: the queue is full
            filler = socket.socket(family, socket.SOCK_STREAM)
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect((host, self.port))
            self._fillers.append(filler)

    def close(self) -> None:
        for sock in [*self._fillers, self.listener]:
            sock.close()


@contextlib.contextmanager
def blackhole(host: str, port: int = 0) -> Iterator[Blackhole]:
    hole = Blackhole(host, port)
    try:
        yield hole
    finally:
        hole.close()


def dual_stack_lookup(v6: str = "::1", v4: str = "127.0.0.1") -> Any:
    """A resolver lookup (``DNSCache(lookup=…)``) that answers every name with the IPv6 address
    first, then the IPv4 one, as getaddrinfo orders them on a dual-stack host (RFC 6724)."""

    async def lookup(_host: str, port: int) -> list[AddrInfo]:
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (v6, port, 0, 0)),
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (v4, port)),
        ]

    return lookup
