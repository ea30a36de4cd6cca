"""Child processes on a loopback port for the demo: the bundled upstream and a gateway."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

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
    ``port``. Its output goes to ``log`` (or nowhere); its errors too when ``quiet``."""
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    errors = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(argv, stdout=out, stderr=errors, env=env)
    try:
        _wait_port(port, proc, what, start_timeout)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log is not None and not isinstance(out, int):
            out.close()


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise ConfigError(f"the {what} exited with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            if time.monotonic() > deadline:
                raise ConfigError(f"the {what} did not start within {timeout:g} s") from None
            time.sleep(0.1)
            continue
        return
