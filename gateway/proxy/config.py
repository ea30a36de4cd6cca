"""Gateway settings: the ``--config`` YAML file and command-line flags, validated once at start.

Precedence: command-line flags override the config file, which overrides the defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gateway.errors import ConfigError

# The shipped policies are package data (gateway/data/policies/, byte-identical to the documented
# top-level policies/, which is their source: tests/proxy/test_config.py checks the copy), so the
# default resolves wherever the gateway runs, not against the working directory.
PACKAGED_POLICIES = Path(str(resources.files("gateway").joinpath("data", "policies")))
DEFAULT_POLICY = str(PACKAGED_POLICIES / "default.yaml")
LOG_LEVELS = ("debug", "info", "warning", "error")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Upstream(_Strict):
    url: str

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value


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
    data.update(given)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first["loc"]
        key = loc[0] if loc else None
        if isinstance(key, str) and key in given:
            label = (sources or {}).get(key)
            if label is None:
                raise ConfigError(f"command line: {_loc(loc)}: {first['msg']}") from exc
            field = f"{_loc(loc)}: " if len(loc) > 1 else ""  # e.g. --upstream → upstreams.…
            raise ConfigError(f"{label}: {field}{first['msg']}") from exc
        raise ConfigError(f"{source}: {_loc(loc)}: {first['msg']}") from exc
    if not settings.upstreams:
        raise ConfigError(f"{source}: no upstream: pass --upstream URL or declare `upstreams:`")
    return settings
