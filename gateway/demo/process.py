"""Child processes on a loopback port for the demo: the bundled upstream and a gateway."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from gateway.errors import ConfigError


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def child_process(
    argv: list[str],
    port: int,
    what: str,
    *,
    log: Path | None = None,
    quiet: bool = False,
    start_timeout: float = 30.0,
) -> Iterator[None]:
    """Run ``argv`` until the block ends; enter the block once it accepts connections on
    ``port``. Its output goes to ``log`` (or nowhere). When ``quiet`` its errors are kept aside
    and, if it exits before it is ready, their last line is the ConfigError's message."""
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    errors = tempfile.TemporaryFile() if quiet else None  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, stdout=out, stderr=errors, env=env)
    try:
        _wait_port(port, proc, what, start_timeout, errors)
        yield
    finally:
        if errors is not None:
            errors.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log is not None and not isinstance(out, int):
            out.close()


def _last_line(errors: IO[bytes] | None) -> str:
    if errors is None:
        return ""
    errors.seek(0)
    lines = [line.strip() for line in errors.read().decode(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    return f": {lines[-1]}" if lines else ""


def _wait_port(
    port: int,
    proc: subprocess.Popen[bytes],
    what: str,
    timeout: float,
    errors: IO[bytes] | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise ConfigError(
                f"the {what} exited with status {proc.returncode}{_last_line(errors)}"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            if time.monotonic() > deadline:
                raise ConfigError(f"the {what} did not start within {timeout:g} s") from None
            time.sleep(0.1)
            continue
        return
