"""``elicitation-gateway serve``: settings, policy and keys, then the relay until a signal.

Configuration precedence: **flags > environment (``GATEWAY_*``) > config file > defaults**.

Processes: ``--workers N`` (default: one per core) forks N workers after the policy is loaded and
the detectors are warmed up; they share the listening port (``SO_REUSEPORT``) and the sealing keys,
so any worker can serve any request. Before forking, the parent checks that no other process holds
the port (a bind without ``SO_REUSEPORT``, so another gateway sharing its port is found too) and
then keeps the port reserved for its workers. It supervises them: on SIGHUP it reloads its own
copy of the policy (a worker it restarts starts with the policy in force) and forwards the signal;
it forwards SIGUSR1 (reopen the audit file) and SIGTERM/SIGINT (drain); it restarts a worker that
dies after a growing delay, and gives up (exit 1) when workers keep dying.

Signals during start-up: SIGHUP and SIGUSR1 are remembered from the first line of ``serve`` on and
acted on once the process (or the worker) is running; they never end it.

Drain (SIGTERM): stop being ready and stop accepting connections; end the standalone GET streams
at once (clients reconnect to another replica); let requests in flight finish for up to
``--drain-seconds``; then end the streams still open cleanly, and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import errno
import gc
import importlib.util
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any

from gateway.audit.logs import AuditFile, configure_logging, get_logger
from gateway.demo.process import child_process, free_port
from gateway.enforce.replay import shared_table
from gateway.enforce.seal import KeyRing
from gateway.errors import ConfigError, PolicyError
from gateway.proxy.allocator import give_back_freed_memory
from gateway.proxy.config import LOG_LEVELS, Settings, load_settings, parse_listen

SINGLE_UPSTREAM = "default"
# The demo upstream and the `demo` command are written with the MCP SDK, an optional extra.
DEMO_SDK = ("mcp", "mcp_types")
DEMO_EXTRA = "pip install 'elicitation-gateway[demo]'"

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
    "upstream_ca_file": "GATEWAY_UPSTREAM_CA_FILE",
    "upstream_cert_file": "GATEWAY_UPSTREAM_CERT_FILE",
    "upstream_key_file": "GATEWAY_UPSTREAM_KEY_FILE",
    "upstream_server_name": "GATEWAY_UPSTREAM_SERVER_NAME",
    "upstream_tls_verify": "GATEWAY_UPSTREAM_TLS_VERIFY",
    "upstream_proxy": "GATEWAY_UPSTREAM_PROXY",
    "upstream_max_connections": "GATEWAY_UPSTREAM_MAX_CONNECTIONS",
}
# The single --upstream's connection flags (argparse dest → its key in upstreams.default);
# ``--upstream-header`` (repeatable, no variable) is read apart.
UPSTREAM_TLS_FLAGS = {
    "upstream_ca_file": "ca_file",
    "upstream_cert_file": "cert_file",
    "upstream_key_file": "key_file",
    "upstream_server_name": "server_name",
    "upstream_tls_verify": "verify",
}
UPSTREAM_FLAGS = {
    **{dest: f"tls.{key}" for dest, key in UPSTREAM_TLS_FLAGS.items()},
    "upstream_proxy": "proxy",
    "upstream_max_connections": "max_connections",
    "upstream_header": "headers",
}


# Flag (argparse dest) → the setting it overrides.
SETTING_OF = {
    "listen": "listen",
    "upstream": "upstreams",
    "policy": "policy",
    "watch_policy": "policy_watch_interval",
    "audit_file": "audit_file",
    "log_level": "log_level",
    "workers": "workers",
    "drain_seconds": "drain_seconds",
    **{dest: f"upstreams.{SINGLE_UPSTREAM}.{key}" for dest, key in UPSTREAM_FLAGS.items()},
}

# Worker restarts: the first after RESTART_DELAY, doubling with each exit in the window up to
# RESTART_DELAY_MAX; MAX_EXITS unexpected exits within EXIT_WINDOW seconds and the gateway gives
# up (exit 1) instead of forking in a loop.
RESTART_DELAY = 0.5
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies
RESTART_DELAY_MAX = 8.0
EXIT_WINDOW = 60.0
MAX_EXITS = 5


def resolve_flags(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """Each flag's value, or the environment's when the flag was not given."""
    flags = {
        dest: getattr(args, dest, None)
        if getattr(args, dest, None) is not None
        else environ.get(var) or None
        for dest, var in ENVIRONMENT.items()
    }
    flags["upstream_header"] = getattr(args, "upstream_header", None)
    return flags


def resolve_sources(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, str]:
    """Setting → where its override came from (``--workers`` or ``GATEWAY_WORKERS``), so an
    error names the flag or variable the operator wrote."""
    out: dict[str, str] = {}
    for dest, setting in SETTING_OF.items():
        if getattr(args, dest, None) is not None:
            out[setting] = "--" + dest.replace("_", "-")
        elif dest in ENVIRONMENT and environ.get(ENVIRONMENT[dest]):
            out[setting] = ENVIRONMENT[dest]
    return out


class _Pending:
    """Signals that arrive before the process can act on them (start-up, a worker still
    starting): remembered and acted on once it can. SIGHUP's default action ends a process."""

    def __init__(self) -> None:
        self.signals: list[int] = []

    def catch(self, *signums: int) -> None:
        for signum in signums:
            signal.signal(signum, self._remember)

    def _remember(self, signum: int, _frame: object) -> None:
        if signum not in self.signals:
            self.signals.append(signum)

    def take(self) -> list[int]:
        taken, self.signals = self.signals, []
        return taken


_PENDING = _Pending()


def reopen_audit(audit: AuditFile | None) -> None:
    """Reopen the audit file at its path (log rotation); a failure keeps the old file."""
    if audit is None:
        return
    log = get_logger("gateway")
    try:
        audit.reopen()
    except OSError as exc:
        log.error("audit.reopen_failed", path=audit.path, error=exc.strerror, pid=os.getpid())
        return
    log.info("audit.reopened", path=audit.path, pid=os.getpid())


def claim_port(host: str, port: int, label: str, *, share: bool) -> list[socket.socket]:
    """Bind (without listening) every address ``host`` resolves to, as the listener will.

    ``share=False``: without ``SO_REUSEPORT``, so any process on the port — also one sharing it
    with ``SO_REUSEPORT``, such as another gateway — makes it fail with a ConfigError naming
    ``label``; nothing is kept. ``share=True``: with ``SO_REUSEPORT``; the sockets are returned
    and keep the port reserved for the workers (they accept no connection: never listening)."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise ConfigError(f"{label}: cannot resolve {host!r}: {exc.strerror}") from None
    held: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:
                continue  # a family this host lacks (no IPv6): the listener skips it too
            held.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if share:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except OSError as exc:
        for sock in held:
            sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"{label}: address already in use by another process") from None
        raise ConfigError(f"{label}: cannot listen: {exc.strerror or exc}") from None
    if not share:
        for sock in held:
            sock.close()
        return []
    return held


def require_demo_extra(what: str) -> None:
    """Fail with the command that installs the demo extra when the MCP SDK is missing (looked up,
    not imported: the SDK is only loaded by the demo's own processes)."""
    if any(importlib.util.find_spec(name) is None for name in DEMO_SDK):
        raise ConfigError(f"{what} needs the MCP SDK, which is not installed: {DEMO_EXTRA}")


@contextlib.contextmanager
def demo_upstream() -> Iterator[str]:
    """Start the bundled demo MCP server on a free loopback port; yield its URL."""
    require_demo_extra("--demo-upstream")
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
    given: dict[str, Any] = {d: flags[d] for d in UPSTREAM_FLAGS if flags.get(d) is not None}
    if given and not upstream:
        dest = next(iter(given))
        label = "--" + dest.replace("_", "-")
        if dest in ENVIRONMENT:
            label += f" / {ENVIRONMENT[dest]}"
        key = UPSTREAM_FLAGS[dest]
        raise ConfigError(
            f"{label} applies to --upstream only; with --config set upstreams.<name>.{key}"
        )
    if upstream:
        single: dict[str, Any] = {"url": upstream}
        tls = {key: flags[dest] for dest, key in UPSTREAM_TLS_FLAGS.items() if given.get(dest)}
        if tls:
            single["tls"] = tls
        if given.get("upstream_proxy"):
            single["proxy"] = given["upstream_proxy"]
        if given.get("upstream_max_connections") is not None:
            single["max_connections"] = given["upstream_max_connections"]
        if given.get("upstream_header"):
            single["headers"] = _header_flags(given["upstream_header"])
        out["upstreams"] = {SINGLE_UPSTREAM: single}
    return out


def _header_flags(values: list[str]) -> dict[str, str]:
    """``--upstream-header 'Name: value'`` (repeatable) → ``headers``."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not name.strip():
            raise ConfigError("--upstream-header: expected 'NAME: VALUE'")
        headers[name.strip()] = rest.strip()
    return headers


async def _run(
    settings: Settings,
    policy: Any,
    keys: KeyRing,
    *,
    reuse_port: bool,
    audit: AuditFile | None = None,
) -> None:
    from aiohttp import web  # noqa: PLC0415 - after the worker processes' metrics set-up

    from gateway.proxy.app import GUARD, POLICY, RELAY, make_app  # noqa: PLC0415
    from gateway.proxy.reload import (  # noqa: PLC0415
        WATCH_INTERVAL,
        policy_watcher,
        reload_policy,
        reload_upstreams,
    )

    log = get_logger("gateway")
    app = make_app(settings, policy, keys)
    loop = asyncio.get_running_loop()

    def on_hup() -> None:
        reopen_audit(audit)
        reload_policy(app)
        reload_upstreams(app)

    def on_usr1() -> None:
        reopen_audit(audit)

    loop.add_signal_handler(signal.SIGHUP, on_hup)
    loop.add_signal_handler(signal.SIGUSR1, on_usr1)
    if settings.policy_watch_interval:
        app[WATCH_INTERVAL] = settings.policy_watch_interval
    app.cleanup_ctx.append(policy_watcher)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    host, port = parse_listen(settings.listen)
    # Header / body / keep-alive timeouts and the connection cap (gateway/proxy/listener.py).
    site = app[GUARD].site(runner, host, port, reuse_port=reuse_port)
    await site.start()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # What arrived while starting: SIGTERM/SIGINT drain at once, SIGHUP reloads, SIGUSR1 reopens.
    actions: dict[int, Callable[[], None]] = {signal.SIGHUP: on_hup, signal.SIGUSR1: on_usr1}
    for signum in _PENDING.take():
        actions.get(signum, stop.set)()
    log.info(
        "gateway.started",
        listen=settings.listen,
        upstreams={n: u.url for n, u in settings.upstreams.items()},
        policy=settings.policy,
        policy_revision=app[POLICY].current.revision,
        event_loop=type(loop).__module__.split(".")[0],  # uvloop, or asyncio (the fallback)
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


def _check_upstreams(settings: Settings, sources: Mapping[str, str], config: str | None) -> None:
    """Build every upstream's connection settings once (raises ConfigError naming the file and
    field, or the flag / variable) and log how each upstream is reached — never a credential or
    a header value."""
    from gateway.proxy.upstream_settings import build_upstreams  # noqa: PLC0415 - ssl set-up

    log = get_logger("gateway")
    built = build_upstreams(settings, source=config or "command line", sources=sources)
    for name, up in built.items():
        log.info(
            "upstream.configured",
            upstream=name,
            url=str(up.url.with_query(None).with_user(None)),
            proxy=None if up.proxy is None else f"{up.proxy.url} ({up.proxy.source})",
            ca=up.ca if up.ssl is not None else None,
            client_cert=up.client_cert,
            server_name=up.server_name,
            static_headers=[header for header, _ in up.headers],
            max_connections=up.max_connections,
        )
        if up.ssl is not None and not up.verify:
            log.warning(
                "upstream.tls_verify_off",
                upstream=name,
                message="the upstream's certificate is not verified (tls.verify: false)",
            )


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (a dependency: about a quarter less CPU per
    request, bench/results/upstream-client-ab-run*.md), else None: the stock asyncio loop."""
    try:
        import uvloop  # noqa: PLC0415 - optional at run time: the stock loop is the fallback
    except ImportError:
        return None
    return uvloop.new_event_loop


def _run_loop(main: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(main)


def _warning_for_keys(keys: KeyRing) -> None:
    if keys.generated:
        get_logger("gateway").warning(
            "gateway.ephemeral_key",
            message="no --key-file or GATEWAY_KEYS: using a random sealing key for this run; "
            "other replicas (and restarts) will not accept its session ids and tokens",
        )


def _worker(
    settings: Settings,
    policy: Any,
    keys: KeyRing,
    *,
    audit: AuditFile | None,
    reserved: list[socket.socket],
    supervisor: int,
) -> None:
    """A forked worker process: its own event loop on the shared port."""
    for sock in reserved:  # the supervisor's reservation, inherited by the fork
        sock.close()
    # Until its loop runs, a worker remembers every signal (SIGTERM from a supervisor stopping
    # while it starts drains it at once; SIGHUP reloads) instead of dying of it.
    _PENDING.catch(signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
    _drain_when_orphaned(supervisor)
    try:
        _run_loop(_run(settings, policy, keys, reuse_port=True, audit=audit))
    except OSError as exc:
        get_logger("gateway").error("gateway.worker_failed", error=str(exc), pid=os.getpid())
        sys.exit(3)


def _drain_when_orphaned(supervisor: int) -> None:
    """Linux: SIGTERM this worker (a drain) when its supervisor dies, so that no orphan keeps
    serving with nobody to forward reloads or restart it — and keeps holding the port."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != supervisor:  # it died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


class _Supervisor:
    """Forks the workers, forwards signals, restarts a worker that dies unexpectedly (after a
    growing delay; gives up when they keep dying). SIGHUP (and, with a watch interval, a change
    of the file) also reloads the supervisor's copy of the policy: every worker started later
    begins with it."""

    def __init__(
        self,
        settings: Settings,
        policy: Any,
        keys: KeyRing,
        audit: AuditFile | None,
        reserved: list[socket.socket],
    ) -> None:
        self.settings = settings
        self.policy = policy
        self.keys = keys
        self.audit = audit
        self.reserved = reserved
        self.log = get_logger("gateway")
        self.fork = multiprocessing.get_context("fork")
        self.stopping = False
        self.slots: dict[int, multiprocessing.process.BaseProcess | None] = {}
        self.restart_at: dict[int, float] = {}
        self.exits: list[float] = []  # when workers exited unexpectedly (within EXIT_WINDOW)
        self.stop_codes: list[int] = []
        self.seen = policy.revision  # the policy file's revision last acted on

    def start(self) -> multiprocessing.process.BaseProcess:
        args = (self.settings, self.policy, self.keys)
        kwargs = {"audit": self.audit, "reserved": self.reserved, "supervisor": os.getpid()}
        proc = self.fork.Process(target=_worker, args=args, kwargs=kwargs, daemon=False)
        proc.start()
        return proc

    def signal_workers(self, signum: int) -> None:
        for proc in self.slots.values():
            if proc is not None and proc.pid is not None and proc.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signum)

    def on_stop(self, _signum: int, _frame: object) -> None:
        self.stopping = True
        self.signal_workers(signal.SIGTERM)

    def reload(self, trigger: str) -> None:
        from gateway.proxy.reload import reload_from_file  # noqa: PLC0415 - after the metrics set-up

        new = reload_from_file(
            self.settings.policy, self.policy, process="supervisor", trigger=trigger
        )
        self.policy = new or self.policy

    def on_signal(self, signum: int) -> None:
        """SIGHUP: reopen the audit file and reload; SIGUSR1: reopen. Then the workers do too."""
        reopen_audit(self.audit)
        if signum == signal.SIGHUP:
            self.reload("signal")
            self.seen = self.policy.revision
        self.signal_workers(signum)

    def watch(self) -> None:
        """The policy file changed: reload (the workers watch the file themselves)."""
        from gateway.proxy.reload import file_revision  # noqa: PLC0415

        revision = file_revision(self.settings.policy)
        if revision is not None and revision != self.seen:
            self.seen = revision
            self.reload("file")

    def reap(self, index: int, proc: multiprocessing.process.BaseProcess, now: float) -> bool:
        """A worker exited: schedule its restart; False when workers keep dying."""
        from prometheus_client import multiprocess  # noqa: PLC0415

        code = proc.exitcode if proc.exitcode is not None else -1
        self.slots[index] = None
        if proc.pid is not None:
            multiprocess.mark_process_dead(proc.pid)  # type: ignore[no-untyped-call]
        if self.stopping:
            self.stop_codes.append(code)
            return True
        self.exits = [t for t in self.exits if now - t < EXIT_WINDOW] + [now]
        if len(self.exits) >= MAX_EXITS:
            self.give_up(code)
            return False
        delay = min(RESTART_DELAY * 2 ** (len(self.exits) - 1), RESTART_DELAY_MAX)
        self.restart_at[index] = now + delay
        self.log.error("gateway.worker_died", worker=proc.pid, exitcode=code, restart_in=delay)
        return True

    def give_up(self, last: int) -> None:
        """Workers keep dying: say so in one line, stop the others."""
        exits = len(self.exits)
        self.log.error(
            "gateway.workers_failing", exits=exits, window_seconds=EXIT_WINDOW, last_exitcode=last
        )
        print(
            f"elicitation-gateway: error: worker processes keep exiting ({exits} within "
            f"{EXIT_WINDOW:g} s, last exit code {last}); giving up",
            file=sys.stderr,
        )
        alive = [p for p in self.slots.values() if p is not None and p.exitcode is None]
        for proc in alive:
            proc.terminate()
        for proc in alive:
            proc.join(self.settings.drain_seconds + 5.0)
            if proc.exitcode is None:
                proc.kill()
                proc.join(5.0)

    def run(self, count: int) -> int:
        for index in range(count):
            for signum in _PENDING.take():  # arrived during start-up: act on it before forking
                self.on_signal(signum)
            self.slots[index] = self.start()
        signal.signal(signal.SIGINT, self.on_stop)
        signal.signal(signal.SIGTERM, self.on_stop)
        pids = [p.pid for p in self.slots.values() if p is not None]
        self.log.info("gateway.workers", workers=count, pids=pids)
        interval = self.settings.policy_watch_interval
        next_watch = time.monotonic() + (interval or 0.0)
        while not self.stopping or any(p is not None for p in self.slots.values()):
            now = time.monotonic()
            for signum in _PENDING.take():
                if not self.stopping:
                    self.on_signal(signum)
            if interval and not self.stopping and now >= next_watch:
                next_watch = now + interval
                self.watch()
            for index, proc in list(self.slots.items()):
                if proc is None:
                    if not self.stopping and now >= self.restart_at[index]:
                        self.slots[index] = started = self.start()
                        self.log.info("gateway.worker_restarted", worker=started.pid)
                elif proc.exitcode is not None and not self.reap(index, proc, now):
                    return 1
            time.sleep(0.1)
        return 0 if all(code == 0 for code in self.stop_codes) else 1


def _claim_listen(
    settings: Settings, sources: Mapping[str, str], config: str | None, count: int
) -> list[socket.socket]:
    """Refuse a port another process holds (ConfigError naming how the address was set); with
    workers, reserve it for them (the sockets returned)."""
    where = sources.get("listen") or (f"{config}: listen" if config else None)
    label = f"{where} {settings.listen}" if where else f"--listen {settings.listen} (the default)"
    host, port = parse_listen(settings.listen)
    if count > 1 and port == 0:
        raise ConfigError(f"{label}: --workers above 1 needs a fixed port (not :0)")
    if port == 0:
        return []
    claim_port(host, port, label, share=False)
    return claim_port(host, port, label, share=True) if count > 1 else []


def _open_audit(
    settings: Settings, sources: Mapping[str, str], config: str | None
) -> AuditFile | None:
    if not settings.audit_file:
        return None
    try:
        return AuditFile(settings.audit_file)
    except OSError as exc:
        where = sources.get("audit_file") or f"{config}: audit_file"
        raise ConfigError(f"{where} {settings.audit_file}: cannot open: {exc.strerror}") from None


def run_serve(args: argparse.Namespace) -> int:
    _PENDING.catch(signal.SIGHUP, signal.SIGUSR1)  # first: never die of them while starting
    flags = resolve_flags(args, os.environ)
    sources = resolve_sources(args, os.environ)
    level = str(flags["log_level"] or "info").lower()
    configure_logging(level if level in LOG_LEVELS else "info")  # validated with the settings
    log = get_logger("gateway")
    metrics_dir: str | None = None
    reserved: list[socket.socket] = []
    try:
        with contextlib.ExitStack() as stack:
            upstream = flags["upstream"]
            if args.demo_upstream:
                if upstream:
                    raise ConfigError("--demo-upstream and --upstream are exclusive")
                upstream = stack.enter_context(demo_upstream())
            settings = load_settings(flags["config"], _overrides(flags, upstream), sources)
            # Certificates, keys, CA bundles, proxies and header references are checked now, so
            # that a mistake stops the start (exit 2) instead of failing every request.
            _check_upstreams(settings, sources, flags["config"])
            count = settings.workers or os.cpu_count() or 1
            reserved = _claim_listen(settings, sources, flags["config"], count)
            if count > 1:
                # Workers share one metrics view: prometheus_client's multiprocess mode must be
                # switched on before it is first imported.
                metrics_dir = tempfile.mkdtemp(prefix="gateway-metrics-")
                os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
            audit = _open_audit(settings, sources, flags["config"])
            if audit is not None:
                stack.callback(audit.close)
            configure_logging(settings.log_level, audit_stream=audit)
            from gateway.policy.engine import warm_up  # noqa: PLC0415 - heavy, and after the env set-up
            from gateway.policy.loader import load_policy  # noqa: PLC0415

            policy = load_policy(settings.policy)
            keys = KeyRing.from_sources(flags["key_file"])
            _warning_for_keys(keys)
            warm_up(policy)  # load detector data once, before forking: shared by the workers
            # The answered-token table must exist before the workers fork, or each worker makes
            # its own and a replay sent to another worker goes through (enforce/replay.py).
            shared_table()
            # What start-up built lives as long as the process: out of the collector's sight,
            # so that a full collection after an attack (ConnectionGuard.give_back_memory) is
            # short, and forked workers do not copy the pages a collection would touch.
            gc.collect()
            gc.freeze()
            give_back_freed_memory()
            if count == 1:
                _run_loop(_run(settings, policy, keys, reuse_port=False, audit=audit))
                return 0
            return _Supervisor(settings, policy, keys, audit, reserved).run(count)
    except (ConfigError, PolicyError) as exc:
        log.error("gateway.config_error", error=str(exc))
        print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        log.error("gateway.start_failed", error=str(exc))
        print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
        return 2
    finally:
        for sock in reserved:
            sock.close()
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
