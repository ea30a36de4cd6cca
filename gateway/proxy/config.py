"""Gateway settings: the ``--config`` YAML file and command-line flags, validated once at start.

Precedence: **command-line flags > environment (``GATEWAY_*``) > config file > defaults**. The
environment variables are stand-ins for flags (``gateway/proxy/serve.py`` reads a variable only
when its flag is absent) and override the file like a flag. Two other kinds of environment
variable are *values*, not settings: the ``${NAME}`` references of an upstream's static
``headers`` and the egress proxy variables (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``, …),
which apply to an upstream whose ``proxy`` is ``env`` (the default) — both are read by
``gateway/proxy/upstream_settings.py``, which turns these validated settings into one object per
upstream (TLS context, proxy, headers, limits).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.errors import ConfigError

# The shipped policies are package data (gateway/data/policies/, byte-identical to the documented
# top-level policies/, which is their source: tests/proxy/test_config.py checks the copy), so the
# default resolves wherever the gateway runs, not against the working directory.
PACKAGED_POLICIES = Path(str(resources.files("gateway").joinpath("data", "policies")))
DEFAULT_POLICY = str(PACKAGED_POLICIES / "default.yaml")
LOG_LEVELS = ("debug", "info", "warning", "error")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_-]{1,63})*\.?$"
)
# Header names a static header may not set: framing and hop-by-hop headers (the client or the
# HTTP client computes them) and the MCP routing headers the relay carries for the client.
MANAGED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "accept",
        "accept-encoding",
        "origin",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    }
)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 token: a header field name


class UpstreamTLS(_Strict):
    """How an https upstream is verified and what the gateway presents to it."""

    # PEM bundle of the CA(s) that sign the upstream's certificate; replaces the system CAs for
    # this upstream (concatenate the system bundle into it to trust both). None: system CAs.
    ca_file: str | None = None
    # Client certificate (PEM; may hold the key too) and its unencrypted private key, for mTLS.
    cert_file: str | None = None
    key_file: str | None = None
    # The name sent as SNI and checked against the certificate, when it differs from the URL's
    # host (an IP address in the URL, an internal alias).
    server_name: str | None = None
    # False: no certificate check at all (tests, never production). Logged at start.
    verify: bool = True

    @field_validator("server_name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not _HOSTNAME.match(value):
            raise ValueError("must be a DNS host name (no scheme, port or path)")
        return value

    @model_validator(mode="after")
    def _key_needs_cert(self) -> UpstreamTLS:
        if self.key_file and not self.cert_file:
            raise ValueError("key_file given without cert_file")
        return self


def check_proxy_url(value: str) -> None:
    """Raise ValueError for a proxy URL the gateway cannot use. Never echoes the value: it may
    carry credentials."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError("is not a valid proxy URL (http://[user:password@]host[:port])") from None
    if parts.scheme.lower() != "http":
        raise ValueError(
            "must be an http:// proxy URL (the tunnel to an https upstream is end-to-end TLS "
            "through CONNECT; https:// and socks proxies are not supported)"
        )
    if not parts.hostname:
        raise ValueError("has no host (http://[user:password@]host[:port])")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("must not have a path, query or fragment")
    if port == 0:
        raise ValueError("has port 0")


class Upstream(_Strict):
    url: str
    tls: UpstreamTLS | None = None
    # "env" (default): HTTPS_PROXY / HTTP_PROXY / ALL_PROXY and NO_PROXY (lowercase first);
    # "none" or null: always direct; an http:// URL (credentials allowed): always that proxy.
    proxy: str = "env"
    # Upstream connections open at once (this worker process); more requests wait in a queue of
    # ``max_queued`` for up to ``queue_timeout`` seconds, else 503 with Retry-After.
    max_connections: int = Field(default=1024, ge=1, le=1_000_000)
    max_queued: int = Field(default=1024, ge=0, le=1_000_000)
    queue_timeout: float = Field(default=5.0, gt=0, le=3600)
    # An idle kept-alive connection is closed after this long (below the 2 s keep-alive of
    # gunicorn, the shortest common server default; uvicorn, Node and Apache keep 5 s).
    idle_seconds: float = Field(default=1.5, gt=0, le=3600)
    # How long a resolved address list is reused (0: resolve for every new connection).
    dns_ttl: float = Field(default=10.0, ge=0, le=86400)
    # Static headers sent with every request to this upstream, replacing the client's header of
    # the same name. Values may hold ${NAME} (environment) and ${file:/path} references.
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("proxy", mode="before")
    @classmethod
    def _proxy(cls, value: Any) -> Any:
        if value is None:
            return "none"  # `proxy: null` in YAML: direct
        if not isinstance(value, str):
            return value  # the type check says what is wrong
        if value.lower() in ("none", "env"):
            return value.lower()
        check_proxy_url(value)
        return value

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        seen: set[str] = set()
        for name in value:
            low = name.lower()
            if not _TOKEN.match(name):
                raise ValueError(f"header name {name!r} is not a valid HTTP field name")
            if low in MANAGED_HEADERS or low.startswith("mcp-param-"):
                raise ValueError(f"header {name!r} is set by the gateway or the client, not here")
            if low in seen:
                raise ValueError(f"header {name!r} is given twice")
            seen.add(low)
        return value

    @model_validator(mode="after")
    def _tls_needs_https(self) -> Upstream:
        if self.tls is not None and not self.url.startswith("https://"):
            raise ValueError("tls is set but the url is not https://")
        return self


class Limits(_Strict):
    max_request_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    max_response_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    max_event_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    max_json_depth: int = Field(default=64, ge=4, le=1000)
    # Client connections open at once per listener (per worker process); above it a new
    # connection gets a 503 and is closed at once (gateway/proxy/listener.py).
    max_connections: int = Field(default=4096, ge=1, le=1_000_000)


class Timeouts(_Strict):
    connect: float = Field(default=5.0, gt=0)  # TCP connect to the upstream
    response: float = Field(default=60.0, gt=0)  # request sent → response headers
    idle: float = Field(default=300.0, gt=0)  # longest silence on a body or SSE stream
    # Client side (gateway/proxy/listener.py): connection accepted, or first byte of a kept-alive
    # connection's next request → complete request head; head → complete body; a kept-alive
    # connection's silence between requests.
    header: float = Field(default=10.0, gt=0)
    body: float = Field(default=30.0, gt=0)
    keepalive: float = Field(default=75.0, gt=0)


class Tokens(_Strict):
    """Lifetimes of the sealed tokens handed to clients (seconds)."""

    request_ttl: float = Field(default=24 * 3600.0, gt=0)  # a forwarded elicitation's answer id
    state_ttl: float = Field(default=3600.0, gt=0)  # a 2026 round's request state


class Security(_Strict):
    # "auto": on for loopback listeners (only loopback Host/Origin accepted), off otherwise.
    dns_rebinding_protection: Literal["auto", "on", "off"] = "auto"
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()


class Settings(_Strict):
    listen: str = "127.0.0.1:8080"
    policy: str = DEFAULT_POLICY
    upstreams: dict[str, Upstream] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    security: Security = Field(default_factory=Security)
    tokens: Tokens = Field(default_factory=Tokens)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    policy_watch_interval: float | None = Field(default=None, gt=0)
    audit_file: str | None = None  # the audit trail goes here instead of stdout
    workers: int | None = Field(default=None, ge=1, le=256)  # None: one per core
    drain_seconds: float = Field(default=20.0, ge=0, le=3600)

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_level(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str) -> str:
        parse_listen(value)
        return value

    @field_validator("upstreams")
    @classmethod
    def _names(cls, value: dict[str, Upstream]) -> dict[str, Upstream]:
        for name in value:
            if not name or not all(c.isalnum() or c in "-_." for c in name):
                raise ValueError(f"upstream name {name!r} must be letters, digits, '-', '_', '.'")
        return value


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_settings(
    config_file: str | None = None,
    overrides: dict[str, Any] | None = None,
    sources: Mapping[str, str] | None = None,
) -> Settings:
    """Read the config file (if any), apply flag overrides, validate. Raises ConfigError.

    ``sources`` names where each override came from (``--workers``, ``GATEWAY_WORKERS``): an
    error in an overridden setting names that flag or variable, one in the file names the file.
    """
    data: dict[str, Any] = {}
    source = config_file or "command line"
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    if config_file:
        try:
            raw = yaml.safe_load(Path(config_file).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{config_file}: cannot read: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{config_file}: invalid YAML: {exc}") from exc
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{config_file}: top level must be a mapping")
        data.update(raw)
        base = Path(config_file).parent
        if isinstance(data.get("policy"), str) and not os.path.isabs(data["policy"]):
            candidate = base / data["policy"]
            if candidate.exists():
                data["policy"] = str(candidate)
        _resolve_upstream_paths(data.get("upstreams"), base)
    data.update(given)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first["loc"]
        key = loc[0] if loc else None
        if isinstance(key, str) and key in given:
            label = _source_of(loc, sources or {})
            if label is None:
                raise ConfigError(f"command line: {_loc(loc)}: {first['msg']}") from exc
            field = f"{_loc(loc)}: " if len(loc) > 1 else ""  # e.g. --upstream → upstreams.…
            raise ConfigError(f"{label}: {field}{first['msg']}") from exc
        raise ConfigError(f"{source}: {_loc(loc)}: {first['msg']}") from exc
    if not settings.upstreams:
        raise ConfigError(f"{source}: no upstream: pass --upstream URL or declare `upstreams:`")
    return settings


_FILE_REF = re.compile(r"\$\{file:([^}]*)\}")
_TLS_FILES = ("ca_file", "cert_file", "key_file")


def _resolve_upstream_paths(upstreams: Any, base: Path) -> None:
    """Relative TLS file paths and ``${file:…}`` header references in the config file resolve
    against the file's folder (like ``policy``), wherever the gateway is started."""
    if not isinstance(upstreams, dict):
        return
    for upstream in upstreams.values():
        if not isinstance(upstream, dict):
            continue
        tls = upstream.get("tls")
        if isinstance(tls, dict):
            for key in _TLS_FILES:
                if isinstance(tls.get(key), str) and tls[key] and not os.path.isabs(tls[key]):
                    tls[key] = str(base / tls[key])
        headers = upstream.get("headers")
        if isinstance(headers, dict):
            for name, value in headers.items():
                if isinstance(value, str):
                    headers[name] = _FILE_REF.sub(lambda m: _file_ref(m, base), value)


def _file_ref(match: re.Match[str], base: Path) -> str:
    path = match.group(1)
    return match.group(0) if not path or os.path.isabs(path) else "${file:" + str(base / path) + "}"


def _source_of(loc: tuple[int | str, ...], sources: Mapping[str, str]) -> str | None:
    """The flag or variable an overridden setting came from: the most specific entry of
    ``sources`` for the error's location (``upstreams.default.tls.ca_file`` before
    ``upstreams``)."""
    for end in range(len(loc), 0, -1):
        label = sources.get(".".join(str(part) for part in loc[:end]))
        if label is not None:
            return label
    return None
