"""``elicitation-gateway stdio -- COMMAND [ARGS…]``: the gateway as the command a desktop client
starts.

The client speaks MCP on the gateway's stdin/stdout; COMMAND is started as the upstream server
on a pipe pair (``gateway.stdio.child``); every line in both directions goes through
:class:`gateway.stdio.relay.StdioRelay`, and so through the same enforcer as the HTTP gateway.

stdout carries MCP messages and nothing else: at start the gateway keeps a private copy of
file descriptor 1 for the messages and points descriptor 1 (and ``sys.stdout``) at stderr, so a
stray ``print`` anywhere cannot corrupt the stream. Logs go to stderr; the audit trail to
``--audit-file`` or, without it, stderr with the logs.

The end, in every order, bounded at each step:

* the client closes stdin → the child's stdin is closed, it gets ``--grace`` seconds (default 2,
  the SDK's) to exit, then SIGTERM to its group, ``--grace`` seconds more, then SIGKILL;
* the gateway gets SIGTERM or SIGINT → the same without waiting out the first grace;
* the child exits → what it wrote before exiting is relayed (at most ``DRAIN_SECONDS``), the
  client's requests still in flight are answered with a JSON-RPC error (``-31001``), and the
  gateway exits.

Exit status: the child's (128 + N when a signal N ended it); 2 for a usage or configuration
error (bad flag, policy, ``--env``, a command that cannot be started), in one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from structlog.typing import FilteringBoundLogger

from gateway.audit.events import Event
from gateway.audit.logs import AUDIT_LOGGER, AuditFile, configure_logging, get_logger
from gateway.enforce.enforcer import Enforcer
from gateway.enforce.replay import AnsweredTable
from gateway.enforce.seal import KeyRing
from gateway.errors import ConfigError, PolicyError
from gateway.proxy.config import Timeouts
from gateway.proxy.metrics import Metrics
from gateway.stdio.child import Child, ChildGone, child_env, exit_status
from gateway.stdio.relay import DEFAULT_MAX_MESSAGE_BYTES, StdioRelay
from gateway.wire.ndjson import LineSplitter

if TYPE_CHECKING:
    from gateway.proxy.upstream_settings import UpstreamSettings

DEFAULT_GRACE: Final = 2.0  # the SDK's stdio client: stdin closed, 2 s, then SIGTERM
DRAIN_SECONDS: Final = 2.0  # the child exited: how long its last output may take to arrive
STOPPING_MESSAGE: Final = "The elicitation gateway is stopping"
READ_CHUNK: Final = 64 * 1024
USAGE_ERROR: Final = 2


@dataclass(frozen=True, slots=True)
class StdioOptions:
    command: tuple[str, ...]
    policy: str
    name: str
    upstream: str | None = None  # a remote Streamable HTTP server instead of COMMAND
    headers: tuple[str, ...] = ()  # static headers for it: 'NAME: VALUE'
    audit_file: str | None = None
    env: tuple[str, ...] = ()
    env_files: tuple[str, ...] = ()
    child_stderr: str | None = None
    cwd: str | None = None
    grace: float = DEFAULT_GRACE
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    metrics_listen: str | None = None
    log_level: str = "info"


# Flags that only mean something for a COMMAND upstream (argparse dest → flag).
CHILD_ONLY: Final = {
    "env": "--env",
    "env_file": "--env-file",
    "child_stderr": "--child-stderr",
    "cwd": "--cwd",
    "grace": "--grace",
}


def options_from_args(args: argparse.Namespace) -> StdioOptions:
    """The command line as options; ConfigError for what argparse cannot check."""
    command = list(args.server_command or [])
    if command and command[0] == "--":
        command = command[1:]
    upstream = getattr(args, "upstream", None)
    headers = tuple(getattr(args, "header", None) or ())
    if upstream is not None:
        if command:
            raise ConfigError("stdio: give either --upstream URL or -- COMMAND, not both")
        for dest, flag in CHILD_ONLY.items():
            if getattr(args, dest, None) is not None:
                raise ConfigError(f"{flag}: only for a COMMAND upstream (stdio -- COMMAND)")
    elif headers:
        raise ConfigError("--header: only for a remote upstream (stdio --upstream URL)")
    elif not command:
        raise ConfigError(
            "stdio: give the server's command after -- (stdio -- npx -y srv) "
            "or a remote server's URL (stdio --upstream https://…/mcp)"
        )
    if args.grace is not None and args.grace < 0:
        raise ConfigError("--grace: must be 0 or more seconds")
    if args.max_message_bytes is not None and args.max_message_bytes < 1024:
        raise ConfigError("--max-message-bytes: must be at least 1024")
    from gateway.proxy.config import DEFAULT_POLICY  # noqa: PLC0415 - light, no aiohttp

    if upstream is not None:
        from gateway.stdio.remote import default_name  # noqa: PLC0415

        name = args.name or default_name(upstream)
    else:
        name = args.name or Path(command[0]).name
    return StdioOptions(
        command=tuple(command),
        policy=args.policy or DEFAULT_POLICY,
        name=name,
        upstream=upstream,
        headers=headers,
        audit_file=args.audit_file,
        env=tuple(args.env or ()),
        env_files=tuple(args.env_file or ()),
        child_stderr=args.child_stderr,
        cwd=args.cwd,
        grace=DEFAULT_GRACE if args.grace is None else args.grace,
        max_message_bytes=args.max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES,
        metrics_listen=args.metrics_listen,
        log_level=args.log_level or "info",
    )


class AuditEvents:
    """Where the enforcer's events go: one audit line each (``gateway.audit``: the audit file,
    or stderr), and the metrics derived from the same record."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._audit = get_logger(AUDIT_LOGGER)

    def __call__(self, events: list[Event]) -> None:
        for event in events:
            record = event.record()
            self._metrics.record_audit(record)
            fields = dict(record)
            self._audit.info(fields.pop("event"), **fields)


# -- the client's side: the gateway's own stdin and stdout -----------------------------------


class ClientOut:
    """The gateway's stdout, private: MCP lines only. Writes after the client went away are
    dropped (the conversation is ending anyway)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self.closed = False

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(self._fd, "wb", buffering=0, closefd=True)
        try:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, pipe
            )
        except ValueError:  # a regular file: plain writes (they do not block for long)
            self._file: IO[bytes] = pipe
            return
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(self, line: bytes) -> None:
        if self.closed:
            return
        async with self._lock:
            try:
                if self._writer is not None:
                    self._writer.write(line)
                    await self._writer.drain()
                else:
                    self._file.write(line)
            except (BrokenPipeError, ConnectionResetError, OSError):
                self.closed = True

    async def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError, RuntimeError):
            if self._writer is not None:
                self._writer.close()
            else:
                self._file.close()


async def client_reader() -> Callable[[], Awaitable[bytes]]:
    """A function returning the next bytes of the gateway's stdin (``b""`` at its end)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
    pipe = os.fdopen(os.dup(0), "rb", buffering=0, closefd=True)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except ValueError:  # a regular file or a terminal: blocking reads in a thread

        async def read_blocking() -> bytes:
            return await loop.run_in_executor(None, pipe.read, READ_CHUNK) or b""

        return read_blocking

    async def read() -> bytes:
        try:
            return await reader.read(READ_CHUNK)
        except (ConnectionResetError, BrokenPipeError):
            return b""

    return read


def private_stdout() -> int:
    """A private copy of descriptor 1 for MCP lines; descriptor 1 and ``sys.stdout`` then point
    at stderr (nothing else can write to the client's stream)."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


# -- the conversation -------------------------------------------------------------------------


class PolicyHolder:
    """The policy in force; SIGHUP loads the file again (an invalid file keeps the old one).
    Each client request keeps the policy it started with (the relay's snapshot)."""

    def __init__(self, path: str, policy: Any, audit: AuditFile | None = None) -> None:
        self.path = path
        self.current = policy
        self.audit = audit

    def __call__(self) -> Any:
        return self.current

    def on_hup(self) -> None:
        """SIGHUP: reopen the audit file at its path (log rotation) and reload the policy."""
        from gateway.proxy.reload import reload_from_file  # noqa: PLC0415
        from gateway.proxy.serve import reopen_audit  # noqa: PLC0415

        reopen_audit(self.audit)
        policy = reload_from_file(self.path, self.current)
        if policy is not None:
            self.current = policy


@dataclass(slots=True)
class _Ending:
    stop: asyncio.Event = field(default_factory=asyncio.Event)  # SIGTERM / SIGINT
    why: str = ""


async def _pump(
    read: Callable[[], Awaitable[bytes]],
    splitter: LineSplitter,
    handle: Callable[[Any], Awaitable[None]],
) -> None:
    while chunk := await read():
        for frame in splitter.feed(chunk):
            await handle(frame)
    for frame in splitter.finish():
        await handle(frame)


async def _start_child(
    options: StdioOptions, env: dict[str, str], policy: PolicyHolder, err: IO[bytes] | None
) -> Child:
    """Start the child, then load the detectors' data while it starts (a server started by npx
    or uvx takes seconds too: the client's first answer waits for the slower of the two, not
    for both). Nothing is read from either side before the data is loaded: no decision is
    cold."""
    try:
        child = await Child.start(options.command, env, stderr=err, cwd=options.cwd)
    except OSError as exc:
        raise ConfigError(f"cannot start {options.command[0]}: {exc.strerror or exc}") from None
    try:
        from gateway.policy.engine import warm_up  # noqa: PLC0415 - heavy

        await asyncio.to_thread(warm_up, policy.current)
    except BaseException:
        child.signal_group(signal.SIGKILL)
        await child.wait_exit(2.0)
        raise
    return child


def _relay_for(
    options: StdioOptions,
    child: Child,
    *,
    policy: PolicyHolder,
    out: ClientOut,
    log: FilteringBoundLogger,
    metrics: Metrics,
) -> StdioRelay:
    async def to_server(line: bytes) -> None:
        with contextlib.suppress(ChildGone):
            await child.send(line)

    async def reply_to_server(line: bytes) -> None:
        with contextlib.suppress(ChildGone):
            await child.send(line, wait=False)

    return StdioRelay(
        upstream=options.name,
        enforcer=Enforcer(KeyRing.random(), answered=AnsweredTable(slots=4096)),
        policy=policy,
        events=AuditEvents(metrics),
        to_client=out.write,
        to_server=to_server,
        reply_to_server=reply_to_server,
        logger=log,
        max_message_bytes=options.max_message_bytes,
    )


async def converse(
    options: StdioOptions,
    *,
    policy: PolicyHolder,
    env: dict[str, str],
    read_client: Callable[[], Awaitable[bytes]],
    out: ClientOut,
    log: FilteringBoundLogger,
    metrics: Metrics,
    child_stderr: IO[bytes] | None = None,
) -> int:
    """Run one conversation to its end; the exit status."""
    child = await _start_child(options, env, policy, child_stderr)
    log.info("stdio.started", upstream=options.name, child_pid=child.pid, policy=options.policy)
    relay = _relay_for(options, child, policy=policy, out=out, log=log, metrics=metrics)
    ending = _Ending()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, ending.stop.set)
    loop.add_signal_handler(signal.SIGHUP, policy.on_hup)
    max_bytes = options.max_message_bytes
    client = asyncio.create_task(_pump(read_client, LineSplitter(max_bytes), relay.from_client))
    server = asyncio.create_task(_pump(child.read, LineSplitter(max_bytes), relay.from_server))
    exited = asyncio.create_task(child.wait_exit())
    stopped = asyncio.create_task(ending.stop.wait())
    try:
        await asyncio.wait({client, exited, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if exited.done():
            why = "child-exited"
            code = child.returncode if child.returncode is not None else 0
        elif stopped.done():
            why = "signal"
            code = await child.stop(0.0, options.grace)
        else:
            why = "client-closed"
            code = await child.stop(options.grace, options.grace, hurry=ending.stop)
        # What the child wrote before it exited still reaches the client (bounded: a helper
        # it started may hold the pipe open).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(server), DRAIN_SECONDS)
        child.sweep()
        # A client that stopped reading cannot hold the gateway: bounded like the rest.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(relay.upstream_gone(), DRAIN_SECONDS)
        log.info(
            "stdio.stopped",
            upstream=options.name,
            why=why,
            child_status=exit_status(code),
            client_refused=relay.counters.client_refused,
            server_dropped=relay.counters.server_dropped,
        )
        return exit_status(code)
    finally:
        for task in (client, server, exited, stopped):
            task.cancel()
        await asyncio.gather(client, server, exited, stopped, return_exceptions=True)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(signum)
        if child.returncode is None:  # only on an error above: never leave it running
            child.signal_group(signal.SIGKILL)
            await child.wait_exit(2.0)
        await out.close()


async def converse_remote(
    options: StdioOptions,
    *,
    policy: PolicyHolder,
    settings: UpstreamSettings,
    read_client: Callable[[], Awaitable[bytes]],
    out: ClientOut,
    log: FilteringBoundLogger,
    metrics: Metrics,
) -> int:
    """Run one conversation with a remote upstream (``stdio --upstream URL``) to its end; the
    exit status: 0, or 1 when the upstream could not be reached at all."""
    from gateway.policy.engine import warm_up  # noqa: PLC0415 - heavy
    from gateway.proxy.upstream import UpstreamClient  # noqa: PLC0415
    from gateway.stdio.remote import HttpUpstream, public_url  # noqa: PLC0415

    await asyncio.to_thread(warm_up, policy.current)  # no decision is cold
    timeouts = Timeouts()
    upstream = HttpUpstream(
        url=settings.url,
        client=UpstreamClient(
            connect_timeout=timeouts.connect,
            response_timeout=timeouts.response,
            idle_timeout=timeouts.idle,
            ssl_context=settings.ssl,
        ),
        logger=log,
        name=options.name,
        static_headers=settings.apply_headers,
        max_message_bytes=options.max_message_bytes,
    )
    relay = StdioRelay(
        upstream=options.name,
        enforcer=Enforcer(KeyRing.random(), answered=AnsweredTable(slots=4096)),
        policy=policy,
        events=AuditEvents(metrics),
        to_client=out.write,
        to_server=upstream.send,
        reply_to_server=upstream.send_detached,
        logger=log,
        max_message_bytes=options.max_message_bytes,
    )
    upstream.attach(relay.from_server)
    log.info(
        "stdio.started",
        upstream=options.name,
        url=public_url(settings.url),
        static_headers=[name for name, _ in settings.headers],  # names only, never values
        policy=options.policy,
    )
    ending = _Ending()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, ending.stop.set)
    loop.add_signal_handler(signal.SIGHUP, policy.on_hup)
    splitter = LineSplitter(options.max_message_bytes)
    client = asyncio.create_task(_pump(read_client, splitter, relay.from_client))
    stopped = asyncio.create_task(ending.stop.wait())
    try:
        await asyncio.wait({client, stopped}, return_when=asyncio.FIRST_COMPLETED)
        why = "signal" if stopped.done() else "client-closed"
        await upstream.close()  # every stream and request stopped, DELETE (bounded)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(relay.upstream_gone(STOPPING_MESSAGE), DRAIN_SECONDS)
        code = 1 if upstream.failed and not upstream.reached else 0
        log.info(
            "stdio.stopped",
            upstream=options.name,
            why=why,
            upstream_reached=upstream.reached,
            exit_status=code,
            client_refused=relay.counters.client_refused,
            server_dropped=relay.counters.server_dropped,
        )
        return code
    finally:
        for task in (client, stopped):
            task.cancel()
        await asyncio.gather(client, stopped, return_exceptions=True)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(signum)
        await upstream.close(0.0)
        await out.close()


async def _metrics_server(listen: str, metrics: Metrics) -> Callable[[], Awaitable[None]]:
    """Opt-in: ``GET /metrics`` on ``listen`` (Prometheus text); the function stopping it."""
    from aiohttp import web  # noqa: PLC0415 - only when asked for

    from gateway.proxy.config import parse_listen  # noqa: PLC0415
    from gateway.proxy.metrics import CONTENT_TYPE  # noqa: PLC0415

    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    app = web.Application()
    app.router.add_get("/metrics", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, port = parse_listen(listen)
    await web.TCPSite(runner, host, port).start()
    return runner.cleanup


async def _main(  # noqa: PLR0917 - one private call site
    options: StdioOptions,
    policy: PolicyHolder,
    env: dict[str, str],
    fd: int,
    err: IO[bytes] | None,
    remote: UpstreamSettings | None = None,
) -> int:
    log = get_logger("gateway")
    metrics = Metrics()
    stop_metrics = None
    if options.metrics_listen:
        try:
            stop_metrics = await _metrics_server(options.metrics_listen, metrics)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--metrics-listen {options.metrics_listen}: {exc}") from None
    out = ClientOut(fd)
    await out.open()
    try:
        if remote is not None:
            return await converse_remote(
                options,
                policy=policy,
                settings=remote,
                read_client=await client_reader(),
                out=out,
                log=log,
                metrics=metrics,
            )
        return await converse(
            options,
            policy=policy,
            env=env,
            read_client=await client_reader(),
            out=out,
            log=log,
            metrics=metrics,
            child_stderr=err,
        )
    finally:
        if stop_metrics is not None:
            await stop_metrics()


def load(options: StdioOptions, environ: dict[str, str]) -> tuple[Any, dict[str, str]]:
    """The policy and the child's environment; ConfigError / PolicyError when they are bad."""
    from gateway.policy.loader import load_policy  # noqa: PLC0415

    files = []
    for path in options.env_files:
        try:
            files.append((path, Path(path).read_text(encoding="utf-8")))
        except OSError as exc:
            raise ConfigError(f"--env-file {path}: cannot read: {exc.strerror}") from None
    env = child_env(environ, options.env, files)
    return load_policy(options.policy), env


def run_stdio(args: argparse.Namespace) -> int:
    """The ``stdio`` subcommand; the exit status."""
    fd = private_stdout()
    audit: AuditFile | None = None
    level = (args.log_level or "info").lower()
    configure_logging(
        level if level in ("debug", "info", "warning", "error") else "info", stream=sys.stderr
    )
    try:
        options = options_from_args(args)
        if options.audit_file:
            try:
                audit = AuditFile(options.audit_file)
            except OSError as exc:
                raise ConfigError(
                    f"--audit-file {options.audit_file}: cannot open: {exc.strerror}"
                ) from None
        configure_logging(options.log_level, stream=sys.stderr, audit_stream=audit)
        policy, env = load(options, dict(os.environ))
        remote = None
        if options.upstream is not None:
            from gateway.stdio.remote import upstream_settings  # noqa: PLC0415

            remote = upstream_settings(
                options.upstream, options.headers, os.environ, name=options.name
            )
        with contextlib.ExitStack() as stack:
            err: IO[bytes] | None = None
            if options.child_stderr:
                try:
                    err = stack.enter_context(open(options.child_stderr, "ab"))
                except OSError as exc:
                    raise ConfigError(
                        f"--child-stderr {options.child_stderr}: cannot open: {exc.strerror}"
                    ) from None
            holder = PolicyHolder(options.policy, policy, audit)
            return asyncio.run(_main(options, holder, env, fd, err, remote))
    except (ConfigError, PolicyError) as exc:
        # One line for people (logs share stderr here: no JSON twin of the same error).
        print(f"elicitation-gateway: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        if audit is not None:
            audit.close()


__all__ = ["StdioOptions", "converse", "converse_remote", "options_from_args", "run_stdio"]
