"""Real peers as subprocesses: the demo upstream, the gateway CLI and the SDK client runner.

Every process is started with ``asyncio.create_subprocess_exec`` (so a gateway running on the
test's own loop never stalls), reached on a free loopback port, and stopped by its own PID
(terminate, wait at most 10 s, then kill).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).resolve().with_name("client.py")
READY_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
CLIENT_TIMEOUT = 60.0
LOOPBACK = "127.0.0.1"


class PeerStartError(RuntimeError):
    """A peer process died or did not open its port in time."""


@dataclass(frozen=True)
class Peer:
    """A running subprocess listening on ``port``."""

    process: asyncio.subprocess.Process
    port: int
    stderr_path: Path
    stdout_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint (``/mcp``)."""
        return f"{self.base_url}/mcp"


def free_port() -> int:
    """A currently free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def peer_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for peers: the repository on ``PYTHONPATH``, unbuffered output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return "<no stderr>"


async def wait_for_port(
    port: int,
    process: asyncio.subprocess.Process,
    *,
    stderr_path: Path,
    timeout: float = READY_TIMEOUT,
) -> None:
    """Wait until ``port`` accepts TCP connections; raise with the stderr tail if it died."""
    deadline = time.monotonic() + timeout
    while True:
        if process.returncode is not None:
            raise PeerStartError(
                f"process {process.pid} exited with {process.returncode} before opening port "
                f"{port}; stderr tail:\n{_tail(stderr_path)}"
            )
        try:
            _, writer = await asyncio.open_connection(LOOPBACK, port)
        except OSError:
            if time.monotonic() > deadline:
                raise PeerStartError(
                    f"port {port} not open after {timeout} s; stderr tail:\n{_tail(stderr_path)}"
                ) from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return


async def stop(process: asyncio.subprocess.Process, timeout: float = STOP_TIMEOUT) -> None:
    """Terminate ``process`` by its PID; kill it if it has not exited within ``timeout``."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


@contextlib.asynccontextmanager
async def running(
    argv: Sequence[str],
    port: int,
    *,
    stdout_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    ready_timeout: float = READY_TIMEOUT,
) -> AsyncIterator[Peer]:
    """Start ``argv``, wait for ``port``, yield the peer, stop it on exit.

    stdout goes to ``stdout_path`` (or is discarded), stderr to a temporary file whose tail is
    quoted when the process fails to come up.
    """
    with contextlib.ExitStack() as files:
        tmp = Path(files.enter_context(tempfile.TemporaryDirectory(prefix="peer-")))
        stderr_path = tmp / "stderr.log"
        err = files.enter_context(stderr_path.open("wb"))
        out = files.enter_context(stdout_path.open("wb")) if stdout_path is not None else None
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out if out is not None else asyncio.subprocess.DEVNULL,
            stderr=err,
            cwd=ROOT,
            env=peer_env(env),
        )
        try:
            await wait_for_port(port, process, stderr_path=stderr_path, timeout=ready_timeout)
            yield Peer(process, port, stderr_path, stdout_path)
        finally:
            await stop(process)


def upstream_argv(port: int, **flags: Any) -> list[str]:
    """Command line of the demo upstream; ``flags`` map to options (``event_store=True`` ->
    ``--event-store``, ``retry_interval=300`` -> ``--retry-interval 300``)."""
    argv = [sys.executable, "-m", "gateway.demo.upstream", "--port", str(port)]
    for name, value in flags.items():
        option = "--" + name.replace("_", "-")
        if value is True:
            argv.append(option)
        elif value not in (False, None):
            argv += [option, str(value)]
    return argv


@contextlib.asynccontextmanager
async def start_upstream(**flags: Any) -> AsyncIterator[Peer]:
    """Run the bundled demo upstream on a free port (see ``upstream_argv`` for ``flags``)."""
    port = free_port()
    async with running(upstream_argv(port, **flags), port) as peer:
        yield peer


@contextlib.asynccontextmanager
async def start_gateway(
    upstream_url: str | None,
    *extra_args: str,
    log_path: Path,
    keys: str | None = None,
    ready_timeout: float = READY_TIMEOUT,
) -> AsyncIterator[Peer]:
    """Run ``python -m gateway serve`` on a free port, in front of ``upstream_url`` (None when
    ``extra_args`` bring a ``--config``); JSON log lines go to ``log_path``; ``keys`` is the
    ``GATEWAY_KEYS`` value shared by replicas. Ready once ``GET /healthz`` answers 200."""
    port = free_port()
    argv = [sys.executable, "-m", "gateway", "serve", "--listen", f"{LOOPBACK}:{port}"]
    if upstream_url is not None:
        argv += ["--upstream", upstream_url]
    argv += extra_args
    env = {"GATEWAY_KEYS": keys} if keys is not None else None
    async with running(
        argv, port, stdout_path=log_path, env=env, ready_timeout=ready_timeout
    ) as peer:
        await wait_for_health(peer, ready_timeout)
        yield peer


async def wait_for_health(peer: Peer, timeout: float = READY_TIMEOUT) -> None:
    """Poll ``GET /healthz`` until it answers 200."""
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        if peer.process.returncode is not None:
            break
        status = await _http_status(peer.port, "/healthz")
        if status == 200:
            return
        await asyncio.sleep(0.05)
    raise PeerStartError(
        f"GET /healthz on port {peer.port} never answered 200 (last status {status}); "
        f"stderr tail:\n{_tail(peer.stderr_path)}"
    )


async def _http_status(port: int, path: str) -> int | None:
    try:
        reader, writer = await asyncio.open_connection(LOOPBACK, port)
    except OSError:
        return None
    try:
        request = f"GET {path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nConnection: close\r\n\r\n"
        writer.write(request.encode())
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 5)
    except (OSError, TimeoutError):
        return None
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    parts = line.split()
    return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None


def read_log_events(path: Path) -> list[dict[str, Any]]:
    """The JSON objects logged one per line to ``path`` (other lines are skipped)."""
    events: list[dict[str, Any]] = []
    for line in path.read_text(errors="replace").splitlines():
        stripped = line.strip()
        if not stripped.startswith("{"):
            continue
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


# What a client worker's run showed: the elicitations the user saw, how the call ended, and the
# gateway's audit decisions (shared by the stdio end-to-end tests).
def shown(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The elicitations the client was shown."""
    return [e for e in events if e["event"] == "elicit"]


def outcome(events: list[dict[str, Any]]) -> dict[str, Any]:
    """How the call ended: its one result, error or exception event."""
    [last] = [e for e in events if e["event"] in ("result", "error", "exception")]
    return last


def decisions(audit: Path) -> list[dict[str, Any]]:
    """The ``elicitation.decision`` lines of an audit file (none if it was never written)."""
    if not audit.exists():
        return []
    return [e for e in read_log_events(audit) if e.get("event") == "elicitation.decision"]


def client_args(
    url: str | Sequence[str],
    mode: str,
    *,
    tool: str | None = None,
    args: Mapping[str, Any] | None = None,
    answer: str = "accept",
    content: Mapping[str, Any] | None = None,
    progress: bool = False,
    list_all: bool = False,
    prompt: str | None = None,
    read: str | None = None,
    ping: bool = False,
    no_callback: bool = False,
) -> list[str]:
    """Command-line arguments of tests/peers/client.py for one run. ``url`` is the server's
    URL, or a command line (a list) to run and speak to over stdio."""
    target = ["--url", url] if isinstance(url, str) else ["--command", json.dumps(list(url))]
    argv = [*target, "--mode", mode, "--answer", answer]
    argv += ["--args", json.dumps(dict(args or {}))]
    if tool is not None:
        argv += ["--tool", tool]
    if prompt is not None:
        argv += ["--prompt", prompt]
    if read is not None:
        argv += ["--read", read]
    if content is not None:
        argv += ["--content", json.dumps(dict(content))]
    if progress:
        argv.append("--progress")
    if list_all:
        argv.append("--list")
    if ping:
        argv.append("--ping")
    if no_callback:
        argv.append("--no-callback")
    return argv


async def run_client(
    url: str | Sequence[str], mode: str, *, timeout: float = CLIENT_TIMEOUT, **options: Any
) -> list[dict[str, Any]]:
    """Run tests/peers/client.py once in its own process and return its event lines.
    ``options`` are those of ``client_args``."""
    argv = [sys.executable, str(CLIENT), *client_args(url, mode, **options)]
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=peer_env(),
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        await stop(process)
        raise AssertionError(f"client timed out after {timeout} s: {argv[2:]}") from None
    if process.returncode != 0:
        raise AssertionError(
            f"client exited with {process.returncode}: {err.decode(errors='replace')[-3000:]}"
        )
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


class ClientWorker:
    """A long-lived ``client.py --serve`` process running one fresh SDK ``Client`` per ``run``
    (concurrent runs allowed). Saves the SDK import (1-2 s of CPU) per client run."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._ids = itertools.count(1)
        self._lines: dict[int, list[dict[str, Any]]] = {}
        self._done: dict[int, asyncio.Future[list[dict[str, Any]]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            run_id = line.pop("run")
            if line["event"] == "done":
                lines = self._lines.pop(run_id, [])
                future = self._done.get(run_id)
                if future is not None and not future.done():
                    future.set_result(lines)
            else:
                self._lines.setdefault(run_id, []).append(line)
        for future in self._done.values():
            if not future.done():
                future.set_exception(AssertionError("client worker exited"))

    async def run(
        self,
        url: str | Sequence[str],
        mode: str,
        *,
        timeout: float = CLIENT_TIMEOUT,
        **options: Any,
    ) -> list[dict[str, Any]]:
        """One client run (see ``client_args`` for ``options``); its event lines."""
        assert self.process.stdin is not None
        run_id = next(self._ids)
        future: asyncio.Future[list[dict[str, Any]]] = asyncio.get_running_loop().create_future()
        self._done[run_id] = future
        command = {"run": run_id, "argv": client_args(url, mode, **options)}
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        await self.process.stdin.drain()
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise AssertionError(f"client run timed out after {timeout} s: {command}") from None
        finally:
            del self._done[run_id]

    async def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
        except TimeoutError:
            await stop(self.process)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


@contextlib.asynccontextmanager
async def start_client_worker() -> AsyncIterator[ClientWorker]:
    """A ``ClientWorker`` for the duration of the block."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CLIENT),
        "--serve",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,
        cwd=ROOT,
        env=peer_env(),
        limit=2**22,
    )
    worker = ClientWorker(process)
    try:
        yield worker
    finally:
        await worker.close()
