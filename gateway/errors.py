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
  + SealError                    400  -32602  sealing: a gateway token that does not open
                                             (tampered, expired, foreign); ``reason``

The relay raises the client and upstream classes where the fault is known; the proxy's HTTP
client's ``UpstreamError`` / ``UpstreamTimeout`` are ``UpstreamUnavailable``. A session token
that does not open is answered 404 (what an MCP server answers for an unknown session), so the
relay turns that ``SealError`` into a ``ClientProtocolError``. docs/architecture.md shows the same
table; ``tests/test_errors.py`` checks that both match these classes.
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
