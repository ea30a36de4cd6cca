"""``elicitation-gateway serve``: settings, policy and keys, then the relay until a signal.

Configuration precedence: **flags > environment (``GATEWAY_*``) > config file > defaults**.

Processes: ``--workers N`` (default: one per core) forks N workers after the policy is loaded and
the detectors are warmed up; they share the listening port (``SO_REUSEPORT``) and the sealing keys,
so any worker can serve any request. The parent supervises them: it forwards SIGHUP (policy
reload) and SIGTERM/SIGINT (drain), and restarts a worker that dies.

Drain (SIGTERM): stop being ready and stop accepting connections; end the standalone GET streams
at once (clients reconnect to another replica); let requests in flight finish for up to
``--drain-seconds``; then end the streams still open cleanly, and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

from gateway.config import Settings, load_settings, parse_listen
from gateway.demo.process import child_process, free_port
from gateway.errors import ConfigError, PolicyError
from gateway.logs import configure_logging, get_logger
from gateway.seal import KeyRing

SINGLE_UPSTREAM = "default"

# Flag (argparse dest) → environment variable. GATEWAY_KEYS is read by the key ring itself.
ENVIRONMENT = {
    "config": "GATEWAY_CONFIG",
    "listen": "GATEWAY_LISTEN",
    "upstream": "GATEWAY_UPSTREAM",
    "policy": "GATEWAY_POLICY",
    "key_file": "GATEWAY_KEY_FILE",
    "watch_policy": "GATEWAY_WATCH_POLICY",
    "audit_file": "GATEWAY_AUDIT_FILE",
    "log_level": "GATEWAY_LOG_LEVEL",
    "workers": "GATEWAY_WORKERS",
    "drain_seconds": "GATEWAY_DRAIN_SECONDS",
}


def resolve_flags(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """Each flag's value, or the environment's when the flag was not given."""
    return {
        dest: getattr(args, dest) if getattr(args, dest) is not None else environ.get(var) or None
        for dest, var in ENVIRONMENT.items()
    }


@contextlib.contextmanager
def demo_upstream() -> Iterator[str]:
    """Start the bundled demo MCP server on a free loopback port; yield its URL."""
    port = free_port()
    argv = [sys.executable, "-m", "gateway.demo.upstream", "--port", str(port)]
    with child_process(argv, port, "demo upstream", start_timeout=20):
        yield f"http://127.0.0.1:{port}/mcp"


def _overrides(flags: Mapping[str, Any], upstream: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "listen": flags["listen"],
        "policy": flags["policy"],
        "log_level": flags["log_level"],
        "policy_watch_interval": flags["watch_policy"],
        "audit_file": flags["audit_file"],
        "workers": flags["workers"],
        "drain_seconds": flags["drain_seconds"],
    }
    if upstream:
        out["upstreams"] = {SINGLE_UPSTREAM: {"url": upstream}}
    return out


async def _run(settings: Settings, policy: Any, keys: KeyRing, *, reuse_port: bool) -> None:
    from aiohttp import web  # noqa: PLC0415 - after the worker processes' metrics set-up

    from gateway.app import GUARD, RELAY, make_app  # noqa: PLC0415
    from gateway.reload import WATCH_INTERVAL, policy_watcher, reload_policy  # noqa: PLC0415

    log = get_logger("gateway")
    app = make_app(settings, policy, keys)
    if settings.policy_watch_interval:
        app[WATCH_INTERVAL] = settings.policy_watch_interval
    app.cleanup_ctx.append(policy_watcher)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    host, port = parse_listen(settings.listen)
    # Header / body / keep-alive timeouts and the connection cap (gateway/listener.py).
    site = app[GUARD].site(runner, host, port, reuse_port=reuse_port)
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
    relay = app[RELAY]
    log.info("gateway.draining", grace_seconds=settings.drain_seconds, pid=os.getpid())
    relay.begin_drain()
    await site.stop()  # no new connections; responses on open ones now close them
    finished = await relay.wait_idle(max(settings.drain_seconds - 1.0, 0.0))
    relay.end_streams()
    await relay.wait_idle(1.0)
    await runner.cleanup()
    log.info("gateway.stopped", drained=finished, pid=os.getpid())


def _warning_for_keys(keys: KeyRing) -> None:
    if keys.generated:
        get_logger("gateway").warning(
            "gateway.ephemeral_key",
            message="no --key-file or GATEWAY_KEYS: using a random sealing key for this run; "
            "other replicas (and restarts) will not accept its session ids and tokens",
        )


def _worker(settings: Settings, policy: Any, keys: KeyRing) -> None:
    """A forked worker process: its own event loop on the shared port."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    asyncio.run(_run(settings, policy, keys, reuse_port=True))


def _supervise(settings: Settings, policy: Any, keys: KeyRing, count: int) -> int:
    """Fork ``count`` workers, forward signals, restart a worker that dies unexpectedly."""
    from prometheus_client import multiprocess  # noqa: PLC0415

    log = get_logger("gateway")
    fork = multiprocessing.get_context("fork")
    stopping = False

    def start() -> multiprocessing.process.BaseProcess:
        proc = fork.Process(target=_worker, args=(settings, policy, keys), daemon=False)
        proc.start()
        return proc

    workers = [start() for _ in range(count)]

    def forward(signum: int, _frame: object) -> None:
        nonlocal stopping
        if signum in (signal.SIGTERM, signal.SIGINT):
            stopping = True
            signum = signal.SIGTERM
        for proc in workers:
            if proc.pid is not None and proc.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    log.info("gateway.workers", workers=count, pids=[p.pid for p in workers])
    while True:
        for index, proc in enumerate(workers):
            if proc.exitcode is None:
                continue
            if proc.pid is not None:
                multiprocess.mark_process_dead(proc.pid)  # type: ignore[no-untyped-call]
            if not stopping:
                log.error("gateway.worker_died", pid=proc.pid, exitcode=proc.exitcode)
                workers[index] = start()
        if stopping and all(p.exitcode is not None for p in workers):
            break
        time.sleep(0.1)
    return 0 if all(p.exitcode == 0 for p in workers) else 1


def run_serve(args: argparse.Namespace) -> int:
    flags = resolve_flags(args, os.environ)
    configure_logging(flags["log_level"] or "info")
    log = get_logger("gateway")
    metrics_dir: str | None = None
    try:
        with contextlib.ExitStack() as stack:
            upstream = flags["upstream"]
            if args.demo_upstream:
                if upstream:
                    raise ConfigError("--demo-upstream and --upstream are exclusive")
                upstream = stack.enter_context(demo_upstream())
            settings = load_settings(flags["config"], _overrides(flags, upstream))
            count = settings.workers or os.cpu_count() or 1
            if count > 1:
                if parse_listen(settings.listen)[1] == 0:
                    raise ConfigError("--workers above 1 needs a fixed port (not :0)")
                # Workers share one metrics view: prometheus_client's multiprocess mode must be
                # switched on before it is first imported.
                metrics_dir = tempfile.mkdtemp(prefix="gateway-metrics-")
                os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
            audit_stream = None
            if settings.audit_file:
                # Line-buffered: every audit line reaches the file when it is written.
                audit_stream = stack.enter_context(
                    open(settings.audit_file, "a", encoding="utf-8", buffering=1)
                )
            configure_logging(settings.log_level, audit_stream=audit_stream)
            from gateway.enforce import warm_up  # noqa: PLC0415 - heavy, and after the env set-up
            from gateway.policy.loader import load_policy  # noqa: PLC0415

            policy = load_policy(settings.policy)
            keys = KeyRing.from_sources(flags["key_file"])
            _warning_for_keys(keys)
            warm_up(policy)  # load detector data once, before forking: shared by the workers
            if count == 1:
                asyncio.run(_run(settings, policy, keys, reuse_port=False))
                return 0
            return _supervise(settings, policy, keys, count)
    except (ConfigError, PolicyError) as exc:
        log.error("gateway.config_error", error=str(exc))
        print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        log.error("gateway.start_failed", error=str(exc))
        print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
