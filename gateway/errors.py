"""The gateway's exception tree. A policy denial is *not* an exception: it is a Decision.

Split by who is at fault, like h11's local/remote errors. Each class carries the HTTP status and
the JSON-RPC code a client gets for it (``http_status``, ``jsonrpc_code``, class attributes; an
instance may narrow them, e.g. 413 for a body too large); never shown with input values.

* GatewayError                  500  -32603  base: an error the gateway raises on purpose
  + ConfigError                   —       —  configuration: bad flags or config file; startup
                                             fails with one line naming the flag or field
  + PolicyError                   —       —  configuration: bad policy file (file and field);
                                             startup fails, a reload keeps the old policy
  + ProtocolError                400  -32600  a message breaks the protocol; raised by the
                                             sans-IO wire parsers, which do not know its sender
    - ClientProtocolError        400  -32600  client fault: the MCP client sent it (413, 408,
                                             404 "Session not found", -32602, -32020 per case)
    - UpstreamProtocolError      502  -31003  upstream fault: the untrusted server sent something
                                             the gateway cannot inspect (fail closed)
  + UpstreamUnavailable          502  -31001  upstream fault: connect/read failure
                                             (``timeout``: 504 -31002)
    - UpstreamBusy               503  -31004  the upstream's connection cap is reached and its
                                             waiting queue is full or waited too long
                                             (``Retry-After``: ``retry_after``)
    - UpstreamConnectError       502  -31001  no connection could be opened; ``kind``,
                                             ``upstream``, ``address``, ``detail`` (log only)
      - UpstreamDNSError         502  -31001  the host name does not resolve
      - UpstreamConnectionRefused 502 -31001  every address refused (or was unreachable)
      - UpstreamConnectTimeout   504  -31002  no connection within ``timeouts.connect``
      - UpstreamProxyError       502  -31001  the egress proxy refused the tunnel, or could
                                             not be reached
        - UpstreamProxyAuthRequired 502 -31001  the proxy wants (other) credentials (407)
      - UpstreamTLSError         502  -31001  the TLS handshake failed (protocol, cipher)
        - UpstreamCertificateUntrusted 502 -31001  the server's certificate does not chain to
                                             the configured CA file (or the system CAs)
        - UpstreamHostnameMismatch 502 -31001  the certificate is not for the expected name
        - UpstreamClientCertificateRejected 502 -31001  the server refused the gateway's
                                             client certificate (or wanted one)
  + SealError                    400  -32602  sealing: a gateway token that does not open
                                             (tampered, expired, foreign); ``reason``

The relay raises the client and upstream classes where the fault is known; the proxy's HTTP
client's ``UpstreamError`` / ``UpstreamTimeout`` are ``UpstreamUnavailable``. A session token
that does not open is answered 404 (what an MCP server answers for an unknown session), so the
relay turns that ``SealError`` into a ``ClientProtocolError``. The ``UpstreamConnectError``
family is built by ``gateway.proxy.upstream_settings.classify`` from the exception a connection
attempt raised: its ``message`` (what the client reads) is fixed per class and names no host,
address, file or credential; ``detail`` (the log line's) says which host, CA file or proxy.
docs/architecture.md shows the same table; ``tests/test_errors.py`` checks that both match these
classes.
"""

from __future__ import annotations

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020  # spec code (2026-07-28): header/body disagreement
# Gateway-specific codes live outside the reserved -32768..-32000 range (see protocol.md §7).
GATEWAY_UPSTREAM_ERROR = -31001
GATEWAY_UPSTREAM_TIMEOUT = -31002
GATEWAY_UPSTREAM_PROTOCOL = -31003
GATEWAY_UPSTREAM_BUSY = -31004
GATEWAY_POLICY_BLOCKED = -31010


class GatewayError(Exception):
    """Base of every error the gateway raises on purpose."""

    http_status: int | None = 500
    jsonrpc_code: int | None = INTERNAL_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(GatewayError):
    """Invalid command line or configuration file (no HTTP answer: the gateway does not start)."""

    http_status = None
    jsonrpc_code = None


class PolicyError(GatewayError):
    """Invalid policy file. ``file`` and ``field`` locate the problem precisely."""

    http_status = None
    jsonrpc_code = None

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file = file
        self.field = field
        where = f"{file}: {field}: " if field else f"{file}: "
        super().__init__(where + message)
        self.message = message


class ProtocolError(GatewayError):
    """A message that breaks the protocol; carries the JSON-RPC code and HTTP status to answer."""

    http_status: int = 400
    jsonrpc_code: int = INVALID_REQUEST

    def __init__(
        self, message: str, *, jsonrpc_code: int | None = None, http_status: int | None = None
    ) -> None:
        super().__init__(message)
        if jsonrpc_code is not None:
            self.jsonrpc_code = jsonrpc_code  # narrowed per instance
        if http_status is not None:
            self.http_status = http_status


class ClientProtocolError(ProtocolError):
    """The MCP client sent something invalid (answered 4xx)."""


class UpstreamProtocolError(ProtocolError):
    """The upstream server sent something the gateway cannot inspect (answered 502, fail closed)."""

    http_status = 502
    jsonrpc_code = GATEWAY_UPSTREAM_PROTOCOL


class UpstreamUnavailable(GatewayError):
    """The upstream could not be reached or did not answer in time (``timeout``: 504)."""

    http_status: int = 502
    jsonrpc_code: int = GATEWAY_UPSTREAM_ERROR

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout
        if timeout:
            self.http_status = 504
            self.jsonrpc_code = GATEWAY_UPSTREAM_TIMEOUT


class SealError(GatewayError):
    """A token that does not open: tampered, foreign key, wrong purpose, expired or malformed.
    ``reason`` is a short code for the audit log (``invalid``, ``expired``)."""

    http_status: int = 400
    jsonrpc_code: int = INVALID_PARAMS

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UpstreamBusy(UpstreamUnavailable):
    """The upstream's ``max_connections`` are all in use and its waiting queue is full, or a
    request waited ``queue_timeout`` for a connection: 503 with ``Retry-After``."""

    http_status: int = 503
    jsonrpc_code: int = GATEWAY_UPSTREAM_BUSY

    def __init__(
        self, message: str = "upstream busy: too many connections", *, retry_after: int = 1
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class UpstreamConnectError(UpstreamUnavailable):
    """No connection to the upstream could be opened. ``message`` (for the client) is fixed per
    class; ``detail`` (for the log line) says what happened to which host, address, CA file or
    proxy; ``upstream`` is the upstream's name, ``address`` the ``host:port`` dialled."""

    kind = "connect"
    summary = "upstream unreachable"
    timeout_error = False

    def __init__(self, detail: str, *, upstream: str = "", address: str = "") -> None:
        super().__init__(self.summary, timeout=self.timeout_error)
        self.detail = detail
        self.upstream = upstream
        self.address = address

    def log_fields(self) -> dict[str, str]:
        """The fields of the log line (never a credential or header value)."""
        return {
            "upstream": self.upstream,
            "address": self.address,
            "kind": self.kind,
            "error": self.detail,
        }


class UpstreamDNSError(UpstreamConnectError):
    """The upstream's (or the proxy's) host name does not resolve."""

    kind = "dns"
    summary = "upstream host name does not resolve"


class UpstreamConnectionRefused(UpstreamConnectError):
    """Every address of the upstream refused the connection (or was unreachable)."""

    kind = "refused"
    summary = "upstream refused the connection"


class UpstreamConnectTimeout(UpstreamConnectError, TimeoutError):
    """No connection (TCP, proxy tunnel and TLS handshake) within ``timeouts.connect``."""

    http_status: int = 504
    jsonrpc_code: int = GATEWAY_UPSTREAM_TIMEOUT
    kind = "connect-timeout"
    summary = "upstream connect timed out"
    timeout_error = True


class UpstreamProxyError(UpstreamConnectError):
    """The egress proxy refused the tunnel (a non-2xx answer to CONNECT) or could not be
    reached."""

    kind = "proxy"
    summary = "egress proxy refused the connection to the upstream"


class UpstreamProxyAuthRequired(UpstreamProxyError):
    """The egress proxy answered 407: credentials missing or not accepted."""

    kind = "proxy-auth"
    summary = "egress proxy requires authentication"


class UpstreamTLSError(UpstreamConnectError):
    """The TLS handshake with the upstream failed (protocol version, cipher, broken stream)."""

    kind = "tls"
    summary = "upstream TLS handshake failed"


class UpstreamCertificateUntrusted(UpstreamTLSError):
    """The upstream's certificate does not chain to the configured CA file (or the system
    CAs), or is expired or otherwise invalid."""

    kind = "tls-untrusted"
    summary = "upstream certificate not trusted"


class UpstreamHostnameMismatch(UpstreamTLSError):
    """The upstream's certificate is valid but not for the expected host name."""

    kind = "tls-hostname"
    summary = "upstream certificate does not match its host name"


class UpstreamClientCertificateRejected(UpstreamTLSError):
    """The upstream refused the gateway's client certificate (or required one it was not
    given)."""

    kind = "tls-client-cert"
    summary = "upstream rejected the gateway's client certificate"
