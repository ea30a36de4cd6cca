"""The upstream MCP server as a child process on a pipe pair.

* **Its own process group** (a new session, like the SDK's stdio client): a Ctrl-C or a
  signal sent to the gateway's group does not reach it behind the gateway's back; the gateway
  signals the child's whole group (``killpg``), so helpers it started (``npx`` → ``node``) go
  with it.
* **Its environment** is only what the operator lists (:func:`child_env`): the minimal set the
  SDK passes (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``, taken from the
  gateway's environment when set), then ``--env-file`` files, then ``--env NAME`` (the value
  from the gateway's environment) or ``--env NAME=VALUE``. The gateway's own settings
  (``GATEWAY_*``: its sealing keys, among others) are never passed, even when listed.
* **Stopping** (:meth:`Child.stop`) is bounded at every step: stdin closed (EOF, the MCP
  shutdown), ``grace`` seconds to exit, then SIGTERM to the group, ``kill_after`` seconds, then
  SIGKILL to the group. The exit is noticed by polling the return code (asyncio's ``wait()``
  also waits for the pipes, which a surviving helper may hold open); the child is reaped by
  asyncio's child watcher (no zombie). Once the child has exited, what is left of its group is
  killed (:meth:`Child.sweep`).
* **stderr** is the gateway's own (passed through) or a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Final

from gateway.errors import ConfigError

MINIMAL_ENV: Final = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
GATEWAY_PREFIX: Final = "GATEWAY_"  # the gateway's own settings, its keys among them
READ_CHUNK: Final = 64 * 1024
POLL_SECONDS: Final = 0.01
NOWAIT_BUFFER: Final = 1024 * 1024  # see Child.send
REAP_SECONDS: Final = 5.0  # after SIGKILL: only an unkillable process (D state) runs this out


class ChildGone(Exception):
    """The child's stdin is closed (it exited or closed it)."""


def parse_env_file(text: str, source: str) -> dict[str, str]:
    """``NAME=VALUE`` lines (``#`` comments and blank lines skipped, an optional ``export ``
    prefix, one pair of surrounding quotes removed). ConfigError names the file and line."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not _valid_name(name):
            raise ConfigError(f"{source}:{number}: expected NAME=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[name] = value
    return values


def _valid_name(name: str) -> bool:
    return bool(name) and not name[0].isdigit() and all(c.isalnum() or c == "_" for c in name)


def child_env(
    environ: Mapping[str, str],
    names: Iterable[str] = (),
    files: Iterable[tuple[str, str]] = (),
) -> dict[str, str]:
    """The child's environment (see the module docstring). ``names`` are ``--env`` values
    (``NAME`` or ``NAME=VALUE``); ``files`` are ``(path, text)`` of ``--env-file`` files.
    Raises ConfigError for a malformed entry, a listed name that is not set, or a ``GATEWAY_``
    name."""
    env = {k: environ[k] for k in MINIMAL_ENV if k in environ and not environ[k].startswith("()")}
    listed: dict[str, str] = {}
    for path, text in files:
        listed.update(parse_env_file(text, path))
    for entry in names:
        name, sep, value = entry.partition("=")
        if not _valid_name(name):
            raise ConfigError(f"--env {entry.partition('=')[0]!r}: not a variable name")
        if not sep:
            if name not in environ:
                raise ConfigError(f"--env {name}: not set in the gateway's environment")
            value = environ[name]
        listed[name] = value
    for name in listed:
        if name.upper().startswith(GATEWAY_PREFIX):
            raise ConfigError(f"{name}: the gateway's own settings are never passed to the child")
    env.update(listed)
    return env


def exit_status(returncode: int) -> int:
    """A child's return code as an exit status (killed by signal N: 128 + N, as shells do)."""
    return 128 - returncode if returncode < 0 else returncode


class Child:
    """A running child: write lines to its stdin, read its stdout, stop it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pid = process.pid

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        stderr: IO[bytes] | None = None,
        cwd: str | None = None,
    ) -> Child:
        """Start ``argv`` in a new session (its own process group). Raises OSError."""
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,  # None: the gateway's own stderr
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            limit=READ_CHUNK,
        )
        return cls(process)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def send(self, line: bytes, *, wait: bool = True) -> None:
        """Write one line to the child's stdin. Raises ChildGone once it cannot be written.

        A line goes into the pipe's buffer whole (lines never interleave); ``wait`` then waits
        until the child has read enough of it. ``wait=False`` is for what the gateway writes
        while relaying the child's own output (a blocked elicitation's decline): waiting there
        for a child that is itself blocked writing to the gateway would deadlock both, so the
        line is only buffered — up to ``NOWAIT_BUFFER`` bytes, beyond which it waits anyway (a
        child that floods and never reads must not grow the gateway without bound)."""
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise ChildGone
        try:
            stdin.write(line)
            if wait or stdin.transport.get_write_buffer_size() > NOWAIT_BUFFER:
                await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ChildGone from exc

    async def read(self) -> bytes:
        """The next bytes of the child's stdout; ``b""`` at its end."""
        stdout = self.process.stdout
        if stdout is None:
            return b""
        try:
            return await stdout.read(READ_CHUNK)
        except (ConnectionResetError, BrokenPipeError):
            return b""

    def close_stdin(self) -> None:
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                stdin.close()

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the child's process group (what is left of it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    async def wait_exit(self, timeout: float | None = None) -> bool:
        """True once the child has exited (``timeout``: at most that many seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.process.returncode is None:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(POLL_SECONDS)
        return True

    async def stop(
        self, grace: float, kill_after: float, hurry: asyncio.Event | None = None
    ) -> int:
        """Close stdin, wait ``grace`` s, SIGTERM the group, wait ``kill_after`` s, SIGKILL the
        group; the child's return code. ``hurry`` set while waiting out the grace (the gateway
        was told to stop) goes on to SIGTERM at once."""
        self.close_stdin()
        if not await self._wait_or(grace, hurry):
            self.signal_group(signal.SIGTERM)
            if not await self.wait_exit(kill_after):
                self.signal_group(signal.SIGKILL)
                await self.wait_exit(REAP_SECONDS)
        self.sweep()
        code = self.process.returncode
        return code if code is not None else -signal.SIGKILL

    async def _wait_or(self, timeout: float, hurry: asyncio.Event | None) -> bool:
        if hurry is None:
            return await self.wait_exit(timeout)
        exited = asyncio.ensure_future(self.wait_exit(timeout))
        hurried = asyncio.ensure_future(hurry.wait())
        try:
            await asyncio.wait({exited, hurried}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hurried.cancel()
            exited.cancel()
        return self.process.returncode is not None

    def sweep(self) -> None:
        """The child has exited: kill what is left of its process group (helpers it started
        that would outlive the conversation)."""
        if self.process.returncode is not None:
            self.signal_group(signal.SIGKILL)


__all__ = [
    "MINIMAL_ENV",
    "Child",
    "ChildGone",
    "child_env",
    "exit_status",
    "parse_env_file",
]
