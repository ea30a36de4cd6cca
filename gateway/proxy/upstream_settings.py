"""One frozen object per upstream, built from the validated settings at start (and on reload):
how to reach it and what to send it. The relay's HTTP client takes everything it needs from here.

* **TLS**: one ``ssl.SSLContext`` per https upstream, built once (loading a CA store costs tens
  of milliseconds of CPU: never per connection): the ``tls.ca_file`` bundle instead of the system
  CAs, the client certificate and key (mTLS), verification on (default) or off, ALPN
  ``http/1.1``. ``server_name`` is what the client passes as ``server_hostname``: the SNI name
  and the name the certificate must carry (the URL's host unless ``tls.server_name`` says
  otherwise).
* **Egress proxy**: ``proxy: env`` (default) reads ``https_proxy`` / ``HTTPS_PROXY`` (https
  upstreams) or ``http_proxy`` / ``HTTP_PROXY`` (http upstreams), then ``all_proxy`` /
  ``ALL_PROXY``, and ``no_proxy`` / ``NO_PROXY`` — lowercase first, like curl, Go and Python's
  urllib (unlike curl, an uppercase ``HTTP_PROXY`` counts: the gateway is no CGI program). A value
  without a scheme is ``http://``. ``NO_PROXY`` entries are separated by commas (or spaces):
  ``*`` (everything), a domain (``example.com`` and ``.example.com`` both match the domain and
  every name under it), optionally with ``:port``, an IP address or a CIDR block (matched
  against an IP-literal upstream host; names are never resolved to decide). Loopback upstreams
  (``localhost``, ``127.0.0.0/8``, ``::1``) are never sent to a proxy from the environment.
  ``proxy: none`` (or ``null``) is always direct; ``proxy: http://[user:password@]host:port``
  always uses that proxy, whatever the environment says (``NO_PROXY`` included). The tunnel is
  ``CONNECT host:port`` (for http upstreams too: the proxy never sees a request), with
  ``Proxy-Authorization: Basic`` when the URL has credentials; they are kept out of ``repr``,
  of every message and of every log line.
* **Static headers**: ``${NAME}`` is replaced by the environment variable ``NAME`` (unset or
  empty: a configuration error), ``${file:/path}`` by the file's content (one trailing newline
  removed; relative paths resolve against the config file's folder), ``$${`` is a literal
  ``${``. Resolved values must be printable ASCII; they are never logged, never shown in an
  error, never in ``repr``. A static header replaces the client's header of the same name.
* **Limits**: ``max_connections``, ``max_queued`` and ``queue_timeout`` (``ConnectionSlots``),
  ``idle_seconds`` (idle kept-alive connections), ``dns_ttl`` (``DNSCache``), and the connect
  timeout (``timeouts.connect``), which covers name resolution, the TCP connect (happy eyeballs
  over every resolved address, RFC 8305, a new attempt every 250 ms), the proxy's answer and the
  TLS handshake.
* **Failures**: ``classify`` turns what a connection attempt raised into one class of the
  ``UpstreamConnectError`` family (``gateway/errors.py``): a fixed message for the client, and a
  ``detail`` for the log line that names the host, the address, the CA file (or "system CAs"),
  the client certificate or the proxy — never a credential.

Wiring (the relay's client; ``build_upstreams`` once per process, at start):

* the gateway's own client, per upstream: ``slots = up.new_slots()``, ``dns =
  up.new_dns_cache()``; per request ``async with slots.slot():`` around the whole exchange (an
  SSE stream holds its slot); a new connection is ``sock = await open_socket(up, dns)`` then
  ``loop.create_connection(factory, sock=sock, ssl=up.ssl, server_hostname=up.server_name,
  ssl_handshake_timeout=…)``, an ``OSError`` there (and on the first read: a TLS 1.3 server
  refuses a client certificate after the handshake) becoming ``raise up.classify(exc)``; pooled
  connections idle longer than ``up.idle_seconds`` are closed; request headers are
  ``up.apply_headers(upstream_request_headers(…))``, after the credential digest of the client's
  own ``Authorization`` was taken.
* aiohttp's ``ClientSession``, one per upstream: ``TCPConnector(ssl=up.ssl or True, limit=0,
  ttl_dns_cache=up.dns_ttl or None, use_dns_cache=up.dns_ttl > 0, keepalive_timeout=
  up.idle_seconds, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY)``, ``trust_env=False`` (the proxy is
  decided here), per request ``proxy=up.proxy.url if up.proxy else None``, ``proxy_headers=
  {"Proxy-Authorization": up.proxy.authorization}`` when set, ``server_hostname=
  up.server_name``, the same ``slots`` and ``apply_headers``; ``aiohttp.ClientConnectorError``'s
  ``os_error`` (or the ``ssl`` error) goes through ``up.classify``.
* ``/readyz``: ``ready_reason(await probe(up, dns))`` per upstream, with the same settings as the
  client (``reason``: ``tls``, ``timeout``, ``proxy``, ``dns`` or ``connect``).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import errno
import ipaddress
import os
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import aiohappyeyeballs
from yarl import URL

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
from gateway.proxy.config import Settings, Upstream, UpstreamTLS, check_proxy_url

SYSTEM_CAS: Final = "system CAs"
HAPPY_EYEBALLS_DELAY: Final = 0.25  # RFC 8305 §5: the recommended connection attempt delay
MAX_PROXY_HEAD: Final = 16 * 1024
# OpenSSL's verify codes for "the certificate is not for this name / this IP address".
_HOSTNAME_MISMATCH: Final = frozenset({62, 64})
# Alerts a server sends about the client's certificate (received by the client as SSLError
# reasons): missing (TLS 1.3 "certificate required"), unknown CA, bad, expired, revoked, …
_CLIENT_CERT_ALERTS: Final = frozenset(
    {
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED",
        "SSLV3_ALERT_CERTIFICATE_REVOKED",
        "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
        "TLSV1_ALERT_UNKNOWN_CA",
        "TLSV1_ALERT_ACCESS_DENIED",
    }
)
_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PRINTABLE = re.compile(r"^[\x20-\x7e\t]*$")

AddrInfo = tuple[int, int, int, str, tuple[Any, ...]]
Lookup = Callable[[str, int], Awaitable[list[AddrInfo]]]


# -- egress proxy ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProxyRoute:
    """An egress proxy to tunnel through. ``source`` says where it was configured (``config``
    or the environment variable's name); the credentials are only in ``authorization``."""

    host: str
    port: int
    source: str
    authorization: str | None = field(default=None, repr=False, compare=False)

    @property
    def address(self) -> str:
        return _address(self.host, self.port)

    @property
    def url(self) -> str:
        """The proxy's URL without credentials (what logs and messages may show)."""
        return f"http://{self.address}"

    def __repr__(self) -> str:
        auth = ", with credentials" if self.authorization else ""
        return f"ProxyRoute({self.url}, from {self.source}{auth})"

    def connect_request(self, host: str, port: int) -> bytes:
        """The ``CONNECT`` request that opens a tunnel to ``host:port``."""
        target = _address(host, port)
        lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
        if self.authorization:
            lines.append(f"Proxy-Authorization: {self.authorization}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def parse_proxy(value: str, source: str) -> ProxyRoute:
    """A ProxyRoute from a proxy URL (``host:port`` alone means ``http://host:port``); raises
    ConfigError naming ``source`` — never the value, which may carry credentials."""
    text = value.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        check_proxy_url(text)
    except ValueError as exc:
        raise ConfigError(f"{source}: proxy URL {exc}") from None
    parts = urlsplit(text)
    host = parts.hostname or ""
    authorization = None
    if parts.username is not None:
        user, password = unquote(parts.username), unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        authorization = f"Basic {token}"
    return ProxyRoute(host=host, port=parts.port or 80, source=source, authorization=authorization)


def _first_set(environ: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return name, value
    return None


def no_proxy_matches(host: str, port: int, no_proxy: str) -> bool:
    """Does a ``NO_PROXY`` value exempt ``host:port`` (see the module docstring)?"""
    host = host.strip("[]").lower().rstrip(".")
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    for raw in re.split(r"[,\s]+", no_proxy):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        name, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        try:
            network = ipaddress.ip_network(name.strip("[]"), strict=False)
        except ValueError:
            network = None
        if network is not None:
            if ip is not None and ip in network:
                return True
            continue
        domain = name.lstrip("*").lstrip(".").rstrip(".")
        if domain and (host == domain or host.endswith("." + domain)):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port``, ``v6`` (several colons: no port), ``host``."""
    if entry.startswith("["):
        close = entry.find("]")
        rest = entry[close + 1 :] if close >= 0 else ""
        if rest.startswith(":") and rest[1:].isdigit():
            return entry[: close + 1], int(rest[1:])
        return entry, None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        if port.isdigit():
            return name, int(port)
    return entry, None


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def proxy_from_environment(
    scheme: str, host: str, port: int, environ: Mapping[str, str]
) -> ProxyRoute | None:
    """The proxy the environment gives a ``scheme://host:port`` upstream, or None (direct)."""
    if is_loopback(host):
        return None
    exempt = _first_set(environ, "no_proxy", "NO_PROXY")
    if exempt is not None and no_proxy_matches(host, port, exempt[1]):
        return None
    names = ("https_proxy", "HTTPS_PROXY") if scheme == "https" else ("http_proxy", "HTTP_PROXY")
    found = _first_set(environ, *names, "all_proxy", "ALL_PROXY")
    if found is None:
        return None
    return parse_proxy(found[1], found[0])


# -- static headers -------------------------------------------------------------------------


def resolve_header(value: str, environ: Mapping[str, str], where: str) -> str:
    """Replace ``${NAME}`` / ``${file:/path}`` references; raise ConfigError naming ``where``
    and the variable or file — never a value."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        ref = match.group(1)
        if ref.startswith("file:"):
            return _read_secret(ref[5:], where)
        if not _ENV_NAME.match(ref):
            raise ConfigError(f"{where}: ${{{ref}}} is neither ${{NAME}} nor ${{file:/path}}")
        if ref not in environ:
            raise ConfigError(f"{where}: environment variable {ref} is not set")
        if not environ[ref]:
            raise ConfigError(f"{where}: environment variable {ref} is empty")
        return environ[ref]

    resolved = _REFERENCE.sub(substitute, value)
    if not _PRINTABLE.match(resolved):
        raise ConfigError(
            f"{where}: the value contains a line break, a control or a non-ASCII character "
            "(after resolving its references)"
        )
    if not resolved.strip():
        raise ConfigError(f"{where}: the value is empty")
    return resolved


def _read_secret(path: str, where: str) -> str:
    if not path:
        raise ConfigError(f"{where}: ${{file:}} names no file")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable text"
        raise ConfigError(f"{where}: cannot read {path}: {why}") from None
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


# -- TLS ------------------------------------------------------------------------------------


def _refuse_password() -> str:
    raise ConfigError("encrypted private keys are not supported (decrypt it, keep it mode 0600)")


def build_ssl_context(tls: UpstreamTLS | None, where: Callable[[str], str]) -> ssl.SSLContext:
    """One client context for an https upstream; raises ConfigError naming the field."""
    tls = tls or UpstreamTLS()
    for key in ("ca_file", "cert_file", "key_file"):
        path = getattr(tls, key)
        if path is None:
            continue
        if not os.path.exists(path):
            raise ConfigError(f"{where(key)}: {path}: no such file")
        if not os.path.isfile(path):
            raise ConfigError(f"{where(key)}: {path}: not a file")
        if not os.access(path, os.R_OK):
            raise ConfigError(f"{where(key)}: {path}: not readable")
    try:
        context = ssl.create_default_context(cafile=tls.ca_file)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(
            f"{where('ca_file')}: {tls.ca_file}: no PEM certificate ({exc})"
        ) from None
    if tls.cert_file:
        try:
            context.load_cert_chain(tls.cert_file, tls.key_file, password=_refuse_password)
        except ConfigError as exc:
            raise ConfigError(f"{where('key_file')}: {exc.message}") from None
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                f"{where('cert_file')}: {tls.cert_file}"
                + (f" with {tls.key_file}" if tls.key_file else "")
                + f": not a certificate and its matching private key ({_ssl_reason(exc)})"
            ) from None
    if not tls.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    return context


def _ssl_reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason) if reason else (str(exc) or type(exc).__name__)


# -- the per-upstream object ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UpstreamSettings:
    """Everything about reaching one upstream, resolved and validated (see module docstring).

    ``ssl`` is None for http upstreams. ``proxy`` is None for a direct connection. ``headers``
    are the resolved static headers (kept out of ``repr``). ``ca`` and ``client_cert`` describe
    the trust and the client certificate for messages (a path, or ``"system CAs"`` / None)."""

    name: str
    url: URL
    host: str
    port: int
    ssl: ssl.SSLContext | None
    server_name: str | None
    verify: bool
    ca: str
    client_cert: str | None
    proxy: ProxyRoute | None
    headers: tuple[tuple[str, str], ...] = field(repr=False)
    max_connections: int
    max_queued: int
    queue_timeout: float
    idle_seconds: float
    dns_ttl: float
    connect_timeout: float

    @property
    def address(self) -> str:
        """``host:port`` of the upstream (brackets around an IPv6 address)."""
        return _address(self.host, self.port)

    @property
    def dial(self) -> tuple[str, int]:
        """Where the TCP connection goes: the proxy, or the upstream itself."""
        return (self.proxy.host, self.proxy.port) if self.proxy else (self.host, self.port)

    def apply_headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The request headers for this upstream: the client's, minus those a static header
        replaces (same name, any case), plus the static headers."""
        items = list(headers)
        if not self.headers:
            return items
        replaced = {name.lower() for name, _ in self.headers}
        return [(n, v) for n, v in items if n.lower() not in replaced] + list(self.headers)

    def new_slots(self) -> ConnectionSlots:
        return ConnectionSlots(self.max_connections, self.max_queued, self.queue_timeout)

    def new_dns_cache(self) -> DNSCache:
        return DNSCache(self.dns_ttl)

    def classify(self, exc: BaseException, *, via_proxy: bool = False) -> UpstreamConnectError:
        """What a connection attempt to this upstream raised, as one class of the
        ``UpstreamConnectError`` family with a log-ready ``detail``. ``via_proxy``: the error
        concerns the connection to the egress proxy, not the upstream."""
        return classify(exc, self, via_proxy=via_proxy)


def build_upstream(
    name: str,
    upstream: Upstream,
    *,
    connect_timeout: float,
    environ: Mapping[str, str],
    where: Callable[[str], str],
) -> UpstreamSettings:
    """One upstream's settings; ``where(field)`` names a field for errors (file or flag)."""
    url = URL(upstream.url)
    host = url.raw_host or ""
    if not host or url.port is None:
        raise ConfigError(f"{where('url')}: no host")
    context: ssl.SSLContext | None = None
    tls = upstream.tls or UpstreamTLS()
    if url.scheme == "https":
        context = build_ssl_context(upstream.tls, lambda key: where(f"tls.{key}"))
    if upstream.proxy == "none":
        proxy = None
    elif upstream.proxy == "env":
        proxy = proxy_from_environment(url.scheme, host, url.port, environ)
    else:
        proxy = parse_proxy(upstream.proxy, where("proxy"))
        proxy = ProxyRoute(proxy.host, proxy.port, "config", proxy.authorization)
    headers = tuple(
        (header, resolve_header(value, environ, where(f"headers.{header}")))
        for header, value in upstream.headers.items()
    )
    return UpstreamSettings(
        name=name,
        url=url,
        host=host,
        port=url.port,
        ssl=context,
        server_name=(tls.server_name or host) if context is not None else None,
        verify=tls.verify,
        ca=tls.ca_file or SYSTEM_CAS,
        client_cert=tls.cert_file,
        proxy=proxy,
        headers=headers,
        max_connections=upstream.max_connections,
        max_queued=upstream.max_queued,
        queue_timeout=upstream.queue_timeout,
        idle_seconds=upstream.idle_seconds,
        dns_ttl=upstream.dns_ttl,
        connect_timeout=connect_timeout,
    )


def build_upstreams(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    source: str = "command line",
    sources: Mapping[str, str] | None = None,
) -> dict[str, UpstreamSettings]:
    """Every upstream's settings (at start, and again on reload: certificate and secret files
    are re-read). Raises ConfigError naming the file (``source``) and the field, or the flag /
    variable a setting came from (``sources``: dotted setting path → label, as for
    ``load_settings``)."""
    env = os.environ if environ is None else environ
    labels = sources or {}

    def namer(name: str) -> Callable[[str], str]:
        def where(key: str) -> str:
            path = f"upstreams.{name}.{key}"
            for end in range(path.count(".") + 1, 0, -1):
                label = labels.get(".".join(path.split(".")[:end]))
                if label is not None:
                    return label
            return f"{source}: {path}"

        return where

    return {
        name: build_upstream(
            name,
            upstream,
            connect_timeout=settings.timeouts.connect,
            environ=env,
            where=namer(name),
        )
        for name, upstream in settings.upstreams.items()
    }


# -- failures -------------------------------------------------------------------------------


def classify(
    exc: BaseException, up: UpstreamSettings, *, via_proxy: bool = False
) -> UpstreamConnectError:
    """See ``UpstreamSettings.classify``. An already classified error is returned as is."""
    if isinstance(exc, UpstreamConnectError):
        return exc
    address = up.proxy.address if via_proxy and up.proxy else up.address
    made = _made(up.name, address)
    if isinstance(exc, ssl.SSLCertVerificationError):
        message = exc.verify_message or _ssl_reason(exc)
        if exc.verify_code in _HOSTNAME_MISMATCH:
            return made(
                UpstreamHostnameMismatch,
                f"the certificate of {up.address} is not valid for the name {up.server_name} "
                f"({message}); set tls.server_name if the server is known by another name",
            )
        return made(
            UpstreamCertificateUntrusted,
            f"certificate verification failed for {up.server_name} at {up.address}: {message} "
            f"(trusted: {up.ca})",
        )
    if isinstance(exc, ssl.SSLError):
        reason = _ssl_reason(exc)
        if reason in _CLIENT_CERT_ALERTS:
            presented = up.client_cert or "none presented (no tls.cert_file)"
            return made(
                UpstreamClientCertificateRejected,
                f"{up.address} rejected the client certificate ({reason}); presented: {presented}",
            )
        return made(UpstreamTLSError, f"TLS handshake with {up.address} failed: {reason}")
    if isinstance(exc, TimeoutError):
        return made(UpstreamConnectTimeout, f"no connection to {address} in time")
    if isinstance(exc, socket.gaierror):
        what = f"egress proxy host {up.proxy.host}" if via_proxy and up.proxy else up.host
        cls: type[UpstreamConnectError] = UpstreamProxyError if via_proxy else UpstreamDNSError
        return made(cls, f"{what} does not resolve: {exc.strerror or exc}")
    if isinstance(exc, OSError):
        why = exc.strerror or str(exc) or type(exc).__name__
        if via_proxy:
            return made(UpstreamProxyError, f"cannot connect to the egress proxy {address}: {why}")
        if exc.errno == errno.ECONNREFUSED or isinstance(exc, ConnectionRefusedError):
            return made(UpstreamConnectionRefused, f"{address} refused the connection")
        return made(UpstreamConnectError, f"cannot connect to {address}: {why}")
    return made(UpstreamConnectError, f"cannot connect to {address}: {type(exc).__name__}")


def _made(
    upstream: str, address: str
) -> Callable[[type[UpstreamConnectError], str], UpstreamConnectError]:
    def make(cls: type[UpstreamConnectError], detail: str) -> UpstreamConnectError:
        return cls(detail, upstream=upstream, address=address)

    return make


# -- name resolution, connection cap, connecting --------------------------------------------


class DNSCache:
    """Resolved addresses per ``(host, port)``, reused for ``ttl`` seconds; concurrent lookups
    of one name share one ``getaddrinfo``. Failures are not cached. IP literals skip it."""

    def __init__(
        self,
        ttl: float,
        lookup: Lookup | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._lookup = lookup or _getaddrinfo
        self._clock = clock
        self._cache: dict[tuple[str, int], tuple[float, list[AddrInfo]]] = {}
        self._pending: dict[tuple[str, int], asyncio.Future[list[AddrInfo]]] = {}
        self.lookups = 0  # getaddrinfo calls made (for tests and metrics)

    async def resolve(self, host: str, port: int) -> list[AddrInfo]:
        literal = _literal(host, port)
        if literal is not None:
            return literal
        key = (host.lower(), port)
        hit = self._cache.get(key)
        if hit is not None and hit[0] > self._clock():
            return list(hit[1])
        while (pending := self._pending.get(key)) is not None:
            try:
                return list(await asyncio.shield(pending))
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not pending.cancelled() or (task is not None and task.cancelling()):
                    raise
                # the lookup's owner was cancelled, not us: look it up ourselves
        future: asyncio.Future[list[AddrInfo]] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            self.lookups += 1
            infos = await self._lookup(host, port)
            if not infos:
                raise socket.gaierror(socket.EAI_NONAME, "no address")
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: nobody else may be waiting
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            del self._pending[key]
        future.set_result(infos)
        if self.ttl > 0:
            self._cache[key] = (self._clock() + self.ttl, infos)
        return list(infos)


async def _getaddrinfo(host: str, port: int) -> list[AddrInfo]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [(f, t, p, c, tuple(a)) for f, t, p, c, a in infos]


def _literal(host: str, port: int) -> list[AddrInfo] | None:
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if ip.version == 6:
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (str(ip), port, 0, 0))
        ]
    return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (str(ip), port))]


class ConnectionSlots:
    """At most ``limit`` connections in use; up to ``max_queued`` requests wait (first come,
    first served) for at most ``queue_timeout`` seconds; beyond that, ``UpstreamBusy`` (503
    with Retry-After). A released slot goes straight to the oldest waiter."""

    def __init__(
        self, limit: int, max_queued: int, queue_timeout: float, *, retry_after: int = 1
    ) -> None:
        self.limit = limit
        self.max_queued = max_queued
        self.queue_timeout = queue_timeout
        self.retry_after = retry_after
        self.in_use = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def queued(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def acquire(self) -> None:
        if self.in_use < self.limit and not self._waiters:
            self.in_use += 1
            return
        if len(self._waiters) >= self.max_queued:
            raise UpstreamBusy(retry_after=self.retry_after)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(self.queue_timeout):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot as the timer fired: pass it on
            else:
                waiter.cancel()
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            if isinstance(exc, TimeoutError):
                raise UpstreamBusy(retry_after=self.retry_after) from None
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot changes hands; in_use stays
                return
        self.in_use -= 1

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()


async def open_socket(
    up: UpstreamSettings,
    dns: DNSCache,
    *,
    timeout: float | None = None,
    happy_eyeballs_delay: float | None = HAPPY_EYEBALLS_DELAY,
) -> socket.socket:
    """A connected (non-blocking) socket to the upstream — through the proxy's tunnel when there
    is one — ready for ``loop.create_connection(factory, sock=…, ssl=up.ssl,
    server_hostname=up.server_name)``. Resolves through ``dns``, races every address (happy
    eyeballs). Raises an ``UpstreamConnectError``; ``timeout`` (default: the connect timeout)
    covers resolution, connect and the proxy's answer. ``happy_eyeballs_delay=None`` tries the
    addresses one after the other (for comparison in tests)."""
    stage = ["resolving " + (f"the egress proxy {up.proxy.address}" if up.proxy else up.host)]
    try:
        async with asyncio.timeout(up.connect_timeout if timeout is None else timeout):
            return await _open(up, dns, stage, happy_eyeballs_delay)
    except TimeoutError:
        raise UpstreamConnectTimeout(
            f"no connection to {up.address} within the connect timeout (while {stage[0]})",
            upstream=up.name,
            address=up.proxy.address if up.proxy else up.address,
        ) from None


async def _open(
    up: UpstreamSettings, dns: DNSCache, stage: list[str], delay: float | None
) -> socket.socket:
    via_proxy = up.proxy is not None
    host, port = up.dial
    try:
        infos = await dns.resolve(host, port)
    except OSError as exc:
        raise classify(exc, up, via_proxy=via_proxy) from None
    stage[0] = f"connecting to {'the egress proxy ' if via_proxy else ''}{_address(host, port)}"
    try:
        sock = await aiohappyeyeballs.start_connection(
            infos, happy_eyeballs_delay=delay, interleave=1
        )
    except (OSError, RuntimeError) as exc:
        raise classify(exc, up, via_proxy=via_proxy) from None
    if up.proxy is None:
        return sock
    stage[0] = f"waiting for the egress proxy {up.proxy.address} to open the tunnel"
    try:
        await _tunnel(sock, up, up.proxy)
    except BaseException:
        sock.close()
        raise
    return sock


async def _tunnel(sock: socket.socket, up: UpstreamSettings, proxy: ProxyRoute) -> None:
    loop = asyncio.get_running_loop()
    made = _made(up.name, proxy.address)
    target = up.address
    try:
        await loop.sock_sendall(sock, proxy.connect_request(up.host, up.port))
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = await loop.sock_recv(sock, 4096)
            if not chunk:
                raise made(
                    UpstreamProxyError,
                    f"the egress proxy {proxy.address} closed the connection instead of "
                    f"answering CONNECT {target}",
                )
            head += chunk
            if len(head) > MAX_PROXY_HEAD:
                raise made(
                    UpstreamProxyError, f"the egress proxy {proxy.address}'s answer is too long"
                )
    except OSError as exc:
        raise classify(exc, up, via_proxy=True) from None
    status_line, _, _ = head.partition(b"\r\n")
    parts = status_line.decode("latin-1").split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    said = _printable(parts[2] if len(parts) > 2 else "")
    if status == 407:
        sent = "credentials sent and refused" if proxy.authorization else "no credentials set"
        raise made(
            UpstreamProxyAuthRequired,
            f"the egress proxy {proxy.address} ({proxy.source}) answered 407 to CONNECT "
            f"{target}: {sent}",
        )
    if not 200 <= status < 300 or not parts[0].startswith("HTTP/1."):
        raise made(
            UpstreamProxyError,
            f"the egress proxy {proxy.address} ({proxy.source}) refused CONNECT {target}: "
            f"{status or 'not HTTP'} {said}".rstrip(),
        )
    if not head.endswith(b"\r\n\r\n") or head.count(b"\r\n\r\n") != 1:
        raise made(
            UpstreamProxyError,
            f"the egress proxy {proxy.address} sent data after its answer to CONNECT {target}",
        )


def _printable(text: str, limit: int = 80) -> str:
    return "".join(c if " " <= c <= "~" else "?" for c in text[:limit])


def _address(host: str, port: int) -> str:
    host = host.strip("[]")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def probe(
    up: UpstreamSettings, dns: DNSCache, *, timeout: float | None = None
) -> UpstreamConnectError | None:
    """None when a connection opens — for https, with the TLS handshake verified exactly as the
    client verifies it; else the classified failure (``/readyz``: ``reachable: false``)."""
    loop = asyncio.get_running_loop()
    limit = up.connect_timeout if timeout is None else timeout
    deadline = loop.time() + limit
    try:
        sock = await open_socket(up, dns, timeout=limit)
    except UpstreamConnectError as exc:
        return exc
    try:
        async with asyncio.timeout_at(deadline):
            _, writer = await asyncio.open_connection(
                sock=sock, ssl=up.ssl, server_hostname=up.server_name
            )
    except (OSError, TimeoutError) as exc:
        sock.close()
        return classify(exc, up)
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()
    return None


def ready_reason(error: UpstreamConnectError | None) -> str | None:
    """``/readyz``'s ``reason`` for a probe's result: ``tls``, ``timeout``, ``proxy``, ``dns``
    or ``connect`` (None: reachable)."""
    if error is None:
        return None
    if isinstance(error, UpstreamTLSError):
        return "tls"
    if isinstance(error, UpstreamConnectTimeout):
        return "timeout"
    if isinstance(error, UpstreamProxyError):
        return "proxy"
    if isinstance(error, UpstreamDNSError):
        return "dns"
    return "connect"


__all__ = [
    "SYSTEM_CAS",
    "ConnectionSlots",
    "DNSCache",
    "ProxyRoute",
    "UpstreamSettings",
    "build_ssl_context",
    "build_upstream",
    "build_upstreams",
    "classify",
    "no_proxy_matches",
    "open_socket",
    "parse_proxy",
    "probe",
    "proxy_from_environment",
    "ready_reason",
    "resolve_header",
]
