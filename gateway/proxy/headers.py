"""Header rules for the relay (sans-IO): hop-by-hop filtering and Host/Origin validation.

End-to-end headers (Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*,
Last-Event-ID, Authorization, Accept, Content-Type, …) pass unchanged in both directions.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

# RFC 9110 §7.6.1 hop-by-hop headers, plus the ones the HTTP client recomputes.
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_NOT_UPSTREAM: Final = HOP_BY_HOP | {"host", "content-length", "origin", "accept-encoding"}
_NOT_DOWNSTREAM: Final = HOP_BY_HOP | {"content-length", "server", "date"}

LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def _connection_tokens(headers: Iterable[tuple[str, str]]) -> set[str]:
    tokens: set[str] = set()
    for name, value in headers:
        if name.lower() == "connection":
            tokens.update(t.strip().lower() for t in value.split(",") if t.strip())
    return tokens


def upstream_request_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Client request headers to send upstream: hop-by-hop, Host (set from the upstream URL),
    Origin (never forwarded: the gateway validated it) and Accept-Encoding (we ask for identity so
    bodies stay inspectable) are removed. Duplicates are kept as duplicates (the server rejects
    duplicated routing headers itself)."""
    items = list(headers)
    drop = _NOT_UPSTREAM | _connection_tokens(items)
    out = [(n, v) for n, v in items if n.lower() not in drop]
    out.append(("Accept-Encoding", "identity"))
    return out


def downstream_response_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Upstream response headers to send to the client (hop-by-hop and length removed)."""
    items = list(headers)
    drop = _NOT_DOWNSTREAM | _connection_tokens(items)
    return [(n, v) for n, v in items if n.lower() not in drop]


def split_host(host: str) -> tuple[str, int | None]:
    """Split a Host header value into (lower-case name, port). IPv6 keeps its brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end == -1:
            return host, None
        name, rest = host[: end + 1], host[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port_text = host.partition(":")
    port = int(port_text) if port_text.isdigit() and len(port_text) <= 5 else None
    return name, port


def is_loopback_host(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class HostGuard:
    """DNS-rebinding protection for the gateway's own listener.

    ``allowed_hosts`` entries are host names (any port) or ``name:port``; ``allowed_origins`` are
    exact origins (``scheme://host[:port]``) or ``scheme://host:*``. ``loopback_only`` accepts the
    loopback names on any port (the default for loopback listeners).
    """

    enabled: bool
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()
    loopback_only: bool = False

    def host_ok(self, host: str | None) -> bool:
        if not self.enabled:
            return True
        if not host:
            return False
        name, port = split_host(host)
        if self.loopback_only and is_loopback_host(name):
            return True
        return name in self.allowed_hosts or f"{name}:{port}" in self.allowed_hosts

    def origin_ok(self, origin: str | None) -> bool:
        if not self.enabled or origin is None:
            return True
        origin = origin.strip().lower()
        if origin in self.allowed_origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        if f"{parts.scheme}://{name}:*" in self.allowed_origins:
            return True
        return self.loopback_only and is_loopback_host(name)
