"""The command line as an operator meets it: every bad setting is one line on stderr naming the
flag or environment variable, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.peers.procs import ROOT, peer_env

UPSTREAM = ["--upstream", "http://127.0.0.1:9/mcp", "--listen", "127.0.0.1:0", "--workers", "1"]


def gateway(
    *argv: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in peer_env().items() if not k.startswith("GATEWAY_")}
    return subprocess.run(
        [sys.executable, "-m", "gateway", *argv],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("elicitation-gateway"), lines
    assert ": error: " in lines[0], lines
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "env", "names"),
    [
        (["--log-level", "bogus"], {}, "--log-level"),
        ([], {"GATEWAY_LOG_LEVEL": "verbose"}, "GATEWAY_LOG_LEVEL"),
    ],
)
def test_log_level_bogus_is_a_one_line_error(
    argv: list[str], env: dict[str, str], names: str
) -> None:
    done = gateway("serve", *UPSTREAM, *argv, env=env)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done)
    assert names in line
    assert "debug" in line and "error" in line  # the accepted values


def test_log_level_accepts_any_case() -> None:
    """The documented values are accepted in upper case too (they reach the config check and
    fail there on the missing policy, not on the level)."""
    done = gateway("serve", *UPSTREAM, "--log-level", "DEBUG", "--policy", "/nonexistent.yaml")
    assert done.returncode == 2
    assert "nonexistent.yaml" in one_error_line(done)


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"GATEWAY_WORKERS": "abc"}, "GATEWAY_WORKERS"),
        ({"GATEWAY_DRAIN_SECONDS": "soon"}, "GATEWAY_DRAIN_SECONDS"),
        ({"GATEWAY_WATCH_POLICY": "-1"}, "GATEWAY_WATCH_POLICY"),
        ({"GATEWAY_LISTEN": "nowhere"}, "GATEWAY_LISTEN"),
    ],
)
def test_gateway_workers_abc_names_the_environment_variable(
    env: dict[str, str], names: str
) -> None:
    argv = ["serve", "--upstream", "http://127.0.0.1:9/mcp"]
    done = gateway(*argv, env=env)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done)
    assert line.startswith(f"elicitation-gateway: error: {names}: "), line
    assert "command line" not in line


def test_flag_type_errors_are_one_line_naming_the_flag() -> None:
    done = gateway("serve", *UPSTREAM[:2], "--workers", "abc")
    assert done.returncode == 2
    line = one_error_line(done)
    assert "--workers" in line and "--help" in line


# The MCP SDK made unimportable, as in an install without the demo extra (argv is passed to
# main(), so `serve` does not re-execute itself and lose the patch).
WITHOUT_SDK = (
    "import sys; sys.modules['mcp'] = sys.modules['mcp_types'] = None; "
    "from gateway.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize(
    ("argv", "what"),
    [(["serve", "--demo-upstream", *UPSTREAM[2:]], "--demo-upstream"), (["demo"], "the demo")],
    ids=["serve-demo-upstream", "demo"],
)
def test_the_demo_without_its_extra_names_the_install_command(argv: list[str], what: str) -> None:
    """``mcp`` is an optional extra (``[demo]``): without it the demo refuses to start, in one
    line naming the command that installs it."""
    clean = {k: v for k, v in peer_env().items() if not k.startswith("GATEWAY_")}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK, *argv],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line == (
        f"elicitation-gateway: error: {what} needs the MCP SDK, which is not installed: "
        "pip install 'elicitation-gateway[demo]'"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["stdio"], "give the server's command after --"),
        (["stdio", "--"], "give the server's command after --"),
        (["stdio", "--grace", "-1", "--", "true"], "--grace"),
        (["stdio", "--max-message-bytes", "10", "--", "true"], "--max-message-bytes"),
        (["stdio", "--log-level", "loud", "--", "true"], "--log-level"),
        (["stdio", "--audit-file", "/nonexistent/dir/a.log", "--", "true"], "--audit-file"),
        (["stdio", "--child-stderr", "/nonexistent/dir/e.log", "--", "true"], "--child-stderr"),
        (["stdio", "--metrics-listen", "nonsense", "--", "true"], "--metrics-listen"),
    ],
)
def test_stdio_usage_errors_are_one_line_and_stdout_stays_empty(
    argv: list[str], names: str
) -> None:
    done = gateway(*argv)
    assert done.returncode == 2, done.stderr
    assert names in one_error_line(done)
    assert done.stdout == ""  # stdout belongs to the MCP client: nothing else, ever
