"""The demo's child processes: entered once the child accepts connections, stopped afterwards,
and a child that dies or never listens reported as a ConfigError naming why."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from gateway.demo.process import child_process, free_port
from gateway.errors import ConfigError

LISTEN = (
    "import socket, sys, time\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "print('listening', flush=True)\n"
    "time.sleep(60)\n"
)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def test_free_port_is_bindable_on_loopback() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_the_block_runs_while_the_child_listens_and_the_child_stops_after(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "child.log"
    with child_process([sys.executable, "-c", LISTEN, str(port)], port, "listener", log=log):
        assert _accepts(port)
    assert "listening" in log.read_text()  # its output went to the log
    deadline = time.monotonic() + 5
    while _accepts(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _accepts(port)


def test_a_child_that_exits_at_start_is_reported_with_its_last_error_line() -> None:
    port = free_port()
    argv = [
        sys.executable,
        "-c",
        "import sys; print('first', file=sys.stderr); sys.exit('bad key')",
    ]
    with (
        pytest.raises(ConfigError, match=r"^the gateway exited with status 1: bad key$"),
        child_process(argv, port, "gateway", quiet=True),
    ):
        pytest.fail("the block must not run")


def test_without_quiet_only_the_status_is_reported() -> None:
    port = free_port()
    argv = [sys.executable, "-c", "import sys; sys.exit(3)"]
    with (
        pytest.raises(ConfigError, match=r"^the upstream exited with status 3$"),
        child_process(argv, port, "upstream"),
    ):
        pytest.fail("the block must not run")


def test_a_child_that_never_listens_times_out_and_is_stopped() -> None:
    port = free_port()
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    start = time.monotonic()
    with (
        pytest.raises(ConfigError, match=r"^the sleeper did not start within 0.5 s$"),
        child_process(argv, port, "sleeper", start_timeout=0.5),
    ):
        pytest.fail("the block must not run")
    assert time.monotonic() - start < 15  # terminated, not waited for
