"""The child process: its environment, its own process group, and every step of stopping it
(real processes; every wait bounded)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from gateway.errors import ConfigError
from gateway.stdio.child import (
    MINIMAL_ENV,
    Child,
    ChildGone,
    child_env,
    exit_status,
    parse_env_file,
)

ENVIRON = {
    "HOME": "/home/ada",
    "PATH": "/usr/bin",
    "USER": "ada",
    "SHELL": "() { :; }; echo pwned",  # an exported shell function: never passed
    "GATEWAY_KEYS": "secret",
    "GITHUB_TOKEN": "ghp_x",
    "LANG": "C.UTF-8",
}
WAIT = 30.0


def test_only_the_minimal_set_by_default() -> None:
    assert child_env(ENVIRON) == {"HOME": "/home/ada", "PATH": "/usr/bin", "USER": "ada"}
    assert set(MINIMAL_ENV) == {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}


def test_listed_names_values_and_files_in_that_order() -> None:
    env = child_env(
        ENVIRON,
        ["GITHUB_TOKEN", "MODE=fast", "PATH=/opt/bin"],
        [("a.env", "MODE=slow\nFROM_FILE=1\n")],
    )
    assert env["GITHUB_TOKEN"] == "ghp_x"
    assert env["MODE"] == "fast"  # --env wins over a file
    assert env["PATH"] == "/opt/bin" and env["FROM_FILE"] == "1"
    assert "LANG" not in env and "GATEWAY_KEYS" not in env


@pytest.mark.parametrize(
    ("names", "files", "message"),
    [
        (["GATEWAY_KEYS"], [], "never passed"),
        (["gateway_key_file=x"], [], "never passed"),
        ([], [("k.env", "GATEWAY_KEYS=x\n")], "never passed"),
        (["NOT_SET"], [], "not set"),
        (["1BAD=x"], [], "not a variable name"),
        ([], [("bad.env", "just words\n")], "bad.env:1"),
    ],
)
def test_refusals_name_the_entry(
    names: list[str], files: list[tuple[str, str]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        child_env(ENVIRON, names, files)


def test_env_file_syntax() -> None:
    text = "# comment\n\nexport A=1\nB = 'two words'\nC=\"x=y\"\nD=\n"
    assert parse_env_file(text, "f") == {"A": "1", "B": "two words", "C": "x=y", "D": ""}


def test_exit_status_of_a_signal_is_128_plus_it() -> None:
    assert exit_status(0) == 0 and exit_status(3) == 3
    assert exit_status(-signal.SIGKILL) == 137 and exit_status(-signal.SIGTERM) == 143


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def test_the_child_runs_in_its_own_process_group_and_echoes() -> None:
    code = "import os,sys\nprint(os.getpgid(0), flush=True)\nfor l in sys.stdin: print(l.strip(), flush=True)"
    child = await Child.start(python(code), {"PATH": os.environ["PATH"]})
    try:
        pgid = int((await asyncio.wait_for(child.read(), WAIT)).split()[0])
        assert pgid == child.pid != os.getpgid(0)
        await child.send(b"hello\n")
        assert b"hello" in await asyncio.wait_for(child.read(), WAIT)
    finally:
        assert await asyncio.wait_for(child.stop(5.0, 5.0), WAIT) == 0  # exits on EOF


async def test_stop_escalates_to_sigterm_then_sigkill() -> None:
    ignores_term = (
        "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
    )
    child = await Child.start(python(ignores_term), {})
    await asyncio.sleep(0.5)  # let it install the handler
    assert await asyncio.wait_for(child.stop(0.2, 0.2), WAIT) == -signal.SIGKILL
    plain = await Child.start(python("import time\ntime.sleep(60)"), {})
    assert await asyncio.wait_for(plain.stop(0.2, 5.0), WAIT) == -signal.SIGTERM


async def test_hurry_skips_the_grace() -> None:
    child = await Child.start(python("import time\ntime.sleep(60)"), {})
    hurry = asyncio.Event()
    hurry.set()
    assert await asyncio.wait_for(child.stop(60.0, 5.0, hurry=hurry), WAIT) == -signal.SIGTERM


async def test_writing_to_a_child_that_exited_raises_child_gone() -> None:
    child = await Child.start(python("pass"), {})
    assert await child.wait_exit(WAIT)
    assert await asyncio.wait_for(child.read(), WAIT) == b""

    async def write_until_broken() -> None:
        for _ in range(100):  # the pipe breaks on the first write or soon after
            await child.send(b"x" * 65536 + b"\n")

    with pytest.raises(ChildGone):
        await write_until_broken()
    child.sweep()


async def test_a_command_that_does_not_exist_raises_oserror() -> None:
    with pytest.raises(FileNotFoundError):
        await Child.start(["/nonexistent/mcp-server"], {})


async def test_lines_written_without_waiting_do_not_block_on_a_child_that_does_not_read() -> None:
    """What the gateway writes while relaying the child's output must not wait for a child that
    is itself blocked writing: 200 KiB (over the 64 KiB pipe) is buffered, not waited for."""
    child = await Child.start(python("import time\ntime.sleep(60)"), {})
    try:
        for _ in range(200):
            await asyncio.wait_for(child.send(b"x" * 1023 + b"\n", wait=False), 5.0)
        stdin = child.process.stdin
        assert stdin is not None and stdin.transport.get_write_buffer_size() > 0
    finally:
        await asyncio.wait_for(child.stop(0.0, 5.0), WAIT)
