"""Atomic policy reload: on SIGHUP and, optionally, when the policy file changes.

The new file is loaded and validated with the same loader as at start-up and swapped in whole (one
reference assignment), or the old policy stays and the failure is logged and counted. With
``--workers N`` the supervisor reloads its own copy too (SIGHUP, file watch), so a worker it
restarts starts with the policy in force, not the one loaded at start-up. Requests in
flight keep the Policy object they started with; open streams are not touched.

SIGHUP also rebuilds each upstream's connection settings (``reload_upstreams``) from the settings
read at start: CA bundles, client certificates and keys, ``${file:…}`` header values are read
again (a rotated certificate takes effect without a restart). The settings themselves (URLs,
proxies, caps, the environment) are those of the start. A file that no longer loads keeps the
old settings, logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web

from gateway.audit.logs import get_logger
from gateway.errors import ConfigError, PolicyError
from gateway.policy.engine import warm_up
from gateway.policy.loader import Policy, load_policy
from gateway.proxy.app import CLIENT, METRICS, POLICY, READY_CACHE, SETTINGS
from gateway.proxy.upstream_settings import build_upstreams

WATCH_INTERVAL = web.AppKey("policy_watch_interval", float)


def reload_from_file(path: str, current: Policy, **context: Any) -> Policy | None:
    """Load and validate ``path`` with the start-up loader: the new Policy, or None when it is
    invalid (logged; the caller keeps ``current``). ``context`` is added to the log lines."""
    log = get_logger("gateway.policy", **context)
    try:
        policy = load_policy(path)
    except PolicyError as exc:
        log.error("policy.reload_failed", policy=path, error=str(exc), kept=current.revision)
        return None
    except Exception as exc:  # never let a reload take the gateway down
        log.error("policy.reload_failed", policy=path, error=type(exc).__name__)
        return None
    warm_up(policy)  # before it takes traffic: its first decisions are not the slow ones
    log.info("policy.reloaded", policy=path, revision=policy.revision, previous=current.revision)
    return policy


def reload_policy(app: web.Application) -> bool:
    """Reload the policy file named in the settings; True when the new policy is in force."""
    ref = app[POLICY]
    policy = reload_from_file(app[SETTINGS].policy, ref.current)
    if policy is None:
        app[METRICS].policy_reloads.labels("failure").inc()
        return False
    ref.current = policy
    app[METRICS].policy_reloads.labels("success").inc()
    return True


def reload_upstreams(app: web.Application) -> bool:
    """Rebuild every upstream's connection settings (certificate, key and secret files read
    again); True when the new ones are in force. On a failure the old ones stay (logged, the
    file and field named, never a value). Idle pooled connections of a rebuilt upstream are
    closed; requests in flight finish on their connection."""
    log = get_logger("gateway")
    try:
        upstreams = build_upstreams(app[SETTINGS], source="reload")
    except ConfigError as exc:
        log.error("upstream.reload_failed", error=str(exc), kept=True)
        return False
    except Exception as exc:  # never let a reload take the gateway down
        log.error("upstream.reload_failed", error=type(exc).__name__, kept=True)
        return False
    app[CLIENT].configure(upstreams)  # what the relay and /readyz use from now on
    app[READY_CACHE].clear()
    log.info("upstream.reloaded", upstreams=sorted(upstreams))
    return True


def file_revision(path: str) -> str | None:
    """The revision a policy loaded from ``path`` now would have (None: unreadable)."""
    return _fingerprint(path)


def _fingerprint(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


async def _watch(app: web.Application, interval: float) -> None:
    """Poll the policy file's content; reload when it changes (editors replace files, so
    content hashing is more reliable than mtimes or inotify on ConfigMap symlink swaps)."""
    path = app[SETTINGS].policy
    # Compared with the policy in force, not with the file as first seen: a worker started with
    # an older policy than the file holds (a restart racing an edit) catches up on the first tick.
    seen = app[POLICY].current.revision
    while True:
        await asyncio.sleep(interval)
        current = _fingerprint(path)
        if current is not None and current != seen:
            seen = current
            reload_policy(app)


async def policy_watcher(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: run the file watch while the app runs (when an interval is configured)."""
    interval = app.get(WATCH_INTERVAL)
    task = asyncio.create_task(_watch(app, interval)) if interval else None
    yield
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
