"""``elicitation-gateway serve``: load settings and policy, then run the relay until a signal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from gateway.app import SINGLE_UPSTREAM, make_app
from gateway.config import Settings, load_settings, parse_listen
from gateway.errors import ConfigError, PolicyError
from gateway.logs import configure_logging, get_logger
from gateway.reload import WATCH_INTERVAL, policy_watcher, reload_policy
from gateway.seal import KeyRing


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def demo_upstream() -> Iterator[str]:
    """Start the bundled demo MCP server on a free loopback port; yield its URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway.demo.upstream", "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise ConfigError(f"the demo upstream exited with status {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise ConfigError("the demo upstream did not start within 20 s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _overrides(args: argparse.Namespace, upstream: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "listen": args.listen,
        "policy": args.policy,
        "log_level": args.log_level,
        "policy_watch_interval": args.watch_policy,
        "audit_file": args.audit_file,
    }
    if upstream:
        out["upstreams"] = {SINGLE_UPSTREAM: {"url": upstream}}
    return out


def _load_policy(path: str) -> Any:
    from gateway.policy.loader import load_policy  # noqa: PLC0415 - heavy import, serve only

    return load_policy(path)


async def _run(settings: Settings, policy: Any, keys: KeyRing) -> None:
    log = get_logger("gateway")
    if keys.generated:
        log.warning(
            "gateway.ephemeral_key",
            message="no --key-file or GATEWAY_KEYS: using a random per-process sealing key; "
            "replicas (and restarts) will not accept each other's session ids and tokens",
        )
    app = make_app(settings, policy, keys)
    if settings.policy_watch_interval:
        app[WATCH_INTERVAL] = settings.policy_watch_interval
    app.cleanup_ctx.append(policy_watcher)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    host, port = parse_listen(settings.listen)
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload_policy, app)
    log.info(
        "gateway.started",
        listen=settings.listen,
        upstreams={n: u.url for n, u in settings.upstreams.items()},
        policy=settings.policy,
        policy_revision=getattr(policy, "revision", None),
        pid=os.getpid(),
    )
    await stop.wait()
    log.info("gateway.stopping")
    await runner.cleanup()


def run_serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_level or "info")
    log = get_logger("gateway")
    try:
        with contextlib.ExitStack() as stack:
            upstream = args.upstream
            if args.demo_upstream:
                if upstream:
                    raise ConfigError("--demo-upstream and --upstream are exclusive")
                upstream = stack.enter_context(demo_upstream())
            settings = load_settings(args.config, _overrides(args, upstream))
            audit_stream = None
            if settings.audit_file:
                # Line-buffered: every audit line reaches the file when it is written.
                audit_stream = stack.enter_context(
                    open(settings.audit_file, "a", encoding="utf-8", buffering=1)
                )
            configure_logging(settings.log_level, audit_stream=audit_stream)
            policy = _load_policy(settings.policy)
            keys = KeyRing.from_sources(args.key_file)
            asyncio.run(_run(settings, policy, keys))
    except (ConfigError, PolicyError) as exc:
        log.error("gateway.config_error", error=str(exc))
        print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        log.error("gateway.start_failed", error=str(exc))
        print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
        return 2
    return 0
