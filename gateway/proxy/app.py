"""Application wiring: routes, typed app state and the shared upstream client (with each
upstream's settings, ``gateway/proxy/upstream_settings.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web
from yarl import URL

from gateway.audit.events import Event
from gateway.audit.logs import AUDIT_LOGGER, get_logger
from gateway.audit.records import AuditSink
from gateway.enforce.enforcer import Enforcer
from gateway.enforce.seal import KeyRing
from gateway.policy.loader import Policy
from gateway.proxy.config import Settings, parse_listen
from gateway.proxy.headers import HostGuard, is_loopback_host
from gateway.proxy.listener import ConnectionGuard
from gateway.proxy.metrics import CONTENT_TYPE, Metrics
from gateway.proxy.relay import Relay, Target
from gateway.proxy.upstream import UpstreamClient
from gateway.proxy.upstream_settings import (
    UpstreamSettings,
    build_upstreams,
    probe,
    ready_reason,
)
from gateway.wire.era import era_of_version

SETTINGS = web.AppKey("settings", Settings)
CLIENT = web.AppKey("client", UpstreamClient)
RELAY = web.AppKey("relay", Relay)
TARGETS = web.AppKey("targets", dict[str, Target])
READY_CACHE = web.AppKey("ready_cache", dict[str, tuple[float, str | None]])
# Each upstream's connection settings (TLS, proxy, cap, headers) as built at start; the client
# holds those in force (a SIGHUP rebuilds them: reload.reload_upstreams).
UPSTREAMS = web.AppKey("upstreams", dict[str, UpstreamSettings])
ENFORCER = web.AppKey("enforcer", Enforcer)
KEYS = web.AppKey("keys", KeyRing)
METRICS = web.AppKey("metrics", Metrics)
GUARD = web.AppKey("connection_guard", ConnectionGuard)  # client-side timeouts, connection cap


class PolicyRef:
    """The current policy. A reload builds a whole new Policy and swaps this one reference;
    requests in flight keep the Policy object they started with."""

    def __init__(self, policy: Policy) -> None:
        self.current = policy

    def __call__(self) -> Policy:
        return self.current


POLICY = web.AppKey("policy", PolicyRef)

SINGLE_UPSTREAM = "default"


def host_guard(settings: Settings) -> HostGuard:
    """DNS-rebinding protection: on by default for loopback listeners (only loopback Host and
    Origin values pass), off by default otherwise; explicit allow-lists extend it."""
    host, _ = parse_listen(settings.listen)
    sec = settings.security
    loopback = is_loopback_host(host.lower())
    enabled = sec.dns_rebinding_protection == "on" or (
        sec.dns_rebinding_protection == "auto" and (loopback or bool(sec.allowed_hosts))
    )
    return HostGuard(
        enabled=enabled,
        allowed_hosts=frozenset(h.lower() for h in sec.allowed_hosts),
        allowed_origins=frozenset(o.lower() for o in sec.allowed_origins),
        loopback_only=loopback or not sec.allowed_hosts,
    )


def targets_of(settings: Settings) -> dict[str, Target]:
    return {name: Target(name, URL(up.url)) for name, up in settings.upstreams.items()}


class Events:
    """Where the enforcer's audit events go: each is rendered once (its JSON object) and written
    as one line of the audit trail, the ``gateway.audit`` logger; the metrics are derived from
    the same record, and ``extra`` (tests) gets a copy."""

    def __init__(self, metrics: Metrics, extra: AuditSink | None = None) -> None:
        self._metrics = metrics
        self._extra = extra
        self._audit = get_logger(AUDIT_LOGGER)

    def __call__(self, events: list[Event]) -> None:
        for event in events:
            record = event.record()
            self._metrics.record_audit(record)
            if self._extra is not None:
                self._extra(dict(record))
            fields = dict(record)
            self._audit.info(fields.pop("event"), **fields)


EVENTS = web.AppKey("events", Events)


def make_app(
    settings: Settings,
    policy: Policy,
    keys: KeyRing,
    audit: AuditSink | None = None,
    *,
    upstreams: dict[str, UpstreamSettings] | None = None,
) -> web.Application:
    """``upstreams``: built settings (default: ``build_upstreams(settings)``, which reads the
    certificate files and the proxy and header environment now)."""
    app = web.Application(client_max_size=settings.limits.max_request_bytes)
    app[SETTINGS] = settings
    app[UPSTREAMS] = build_upstreams(settings) if upstreams is None else upstreams
    app[POLICY] = PolicyRef(policy)
    app[KEYS] = keys
    app[METRICS] = Metrics()
    app[EVENTS] = Events(app[METRICS], audit)
    app[GUARD] = ConnectionGuard.from_settings(settings, app[METRICS])
    app.middlewares.append(app[GUARD].middleware)
    app[ENFORCER] = Enforcer(
        keys,
        request_ttl=settings.tokens.request_ttl,
        state_ttl=settings.tokens.state_ttl,
    )
    app[TARGETS] = targets_of(settings)
    app[READY_CACHE] = {}
    app.cleanup_ctx.append(_upstream_client)
    app.cleanup_ctx.append(_memory_keeper)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    for name, target in app[TARGETS].items():
        path = "/mcp" if name == SINGLE_UPSTREAM else f"/servers/{name}/mcp"
        handler = _mcp_handler(target)
        for method in ("POST", "GET", "DELETE"):
            app.router.add_route(method, path, handler)
    return app


def _mcp_handler(target: Target) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        relay = request.app[RELAY]
        response = await relay.handle(request, target)
        if relay.draining and not response.prepared:
            response.force_close()  # no further requests on this connection while draining
        era = era_of_version(request.headers.get("MCP-Protocol-Version")).value
        request.app[METRICS].request(era, request.method, response.status)
        return response

    return handler


async def _memory_keeper(app: web.Application) -> AsyncIterator[None]:
    """Hands memory back after a burst of connections (``ConnectionGuard.give_back_memory``)."""
    task = asyncio.create_task(app[GUARD].give_back_memory())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _upstream_client(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    t = settings.timeouts
    client = UpstreamClient(
        connect_timeout=t.connect,
        response_timeout=t.response,
        idle_timeout=t.idle,
        upstreams=app[UPSTREAMS],
    )
    app[CLIENT] = client
    logger = get_logger("gateway.relay")
    app[RELAY] = Relay(
        settings=settings,
        client=client,
        guard=host_guard(settings),
        logger=logger,
        enforcer=app[ENFORCER],
        policy=app[POLICY],
        events=app[EVENTS],
        keys=app[KEYS],
        metrics=app[METRICS],
    )
    yield
    await client.close()


async def _metrics(request: web.Request) -> web.Response:
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE})


async def _healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _reachable(client: UpstreamClient, name: str, timeout: float) -> str | None:
    """None when the upstream accepts a connection made with its settings (name cache, happy
    eyeballs, egress proxy, and for https the TLS handshake verified as the relay's client
    verifies it); else why not: ``tls``, ``timeout``, ``proxy``, ``dns`` or ``connect``."""
    up, dns = client.settings(name), client.dns(name)
    if up is None or dns is None:
        return "connect"
    return ready_reason(await probe(up, dns, timeout=timeout))


async def _readyz(request: web.Request) -> web.Response:
    """Ready once the config and policy are loaded; upstream reachability is reported (a TCP
    connect, and the TLS handshake for https; cached for 2 s) but does not make the gateway
    unready. An unreachable upstream carries a ``reason``: tls, timeout, proxy, dns or
    connect."""
    if request.app[RELAY].draining:
        return web.json_response({"status": "draining"}, status=503)
    cache = request.app[READY_CACHE]
    now = time.monotonic()
    report: dict[str, Any] = {}
    client = request.app[CLIENT]
    for name in request.app[TARGETS]:
        cached = cache.get(name)
        if cached is None or now - cached[0] > 2.0:
            cached = (now, await _reachable(client, name, 1.0))
            cache[name] = cached
        why = cached[1]
        report[name] = {"reachable": True} if why is None else {"reachable": False, "reason": why}
    return web.json_response({"status": "ready", "upstreams": report})
