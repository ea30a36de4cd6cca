"""The gateway's exception tree. A policy denial is *not* an exception: it is a Decision.

* GatewayError
  + ConfigError          bad flags or config file; startup fails with a clear message
  + PolicyError          bad policy file (names the file and the field); reload keeps the old one
  + ProtocolError        .jsonrpc_code, .http_status; never shown with input values
    - ClientProtocolError     the MCP client sent something we cannot accept
    - UpstreamProtocolError   the untrusted server sent something we cannot inspect (fail closed)
  + UpstreamUnavailable  connect/read failure or timeout → 502/504
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


class ConfigError(GatewayError):
    """Invalid command line or configuration file."""


class PolicyError(GatewayError):
    """Invalid policy file. ``file`` and ``field`` locate the problem precisely."""

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file = file
        self.field = field
        self.message = message
        where = f"{file}: {field}: " if field else f"{file}: "
        super().__init__(where + message)


class ProtocolError(GatewayError):
    """A message that breaks the protocol; carries the JSON-RPC code and HTTP status to answer."""

    jsonrpc_code: int = INVALID_REQUEST
    http_status: int = 400

    def __init__(
        self, message: str, *, jsonrpc_code: int | None = None, http_status: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if jsonrpc_code is not None:
            self.jsonrpc_code = jsonrpc_code
        if http_status is not None:
            self.http_status = http_status


class ClientProtocolError(ProtocolError):
    """The MCP client sent something invalid (answered 4xx)."""


class UpstreamProtocolError(ProtocolError):
    """The upstream server sent something the gateway cannot inspect (answered 502, fail closed)."""

    jsonrpc_code = GATEWAY_UPSTREAM_PROTOCOL
    http_status = 502


class UpstreamUnavailable(GatewayError):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.timeout = timeout
