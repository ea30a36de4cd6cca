"""`serve` configuration: flags > GATEWAY_* environment > config file > defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gateway.cli import _build_parser
from gateway.config import load_settings
from gateway.serve import _overrides, resolve_flags
from tests.peers.procs import ROOT, peer_env


def test_flags_win_over_environment_and_environment_over_the_file(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text(
        "listen: 127.0.0.1:7000\nlog_level: error\nworkers: 3\nupstreams: {a: {url: 'http://a/mcp'}}\n"
    )
    args = _build_parser().parse_args(["serve", "--listen", "127.0.0.1:9000"])
    env = {
        "GATEWAY_CONFIG": str(config),
        "GATEWAY_LISTEN": "127.0.0.1:8000",
        "GATEWAY_WORKERS": "2",
        "GATEWAY_DRAIN_SECONDS": "7",
    }
    flags = resolve_flags(args, env)
    settings = load_settings(flags["config"], _overrides(flags, None))
    assert settings.listen == "127.0.0.1:9000"  # flag
    assert settings.workers == 2  # environment over file
    assert settings.drain_seconds == 7  # environment over default
    assert settings.log_level == "error"  # file over default
    assert settings.upstreams["a"].url == "http://a/mcp"


def test_bad_startup_settings_exit_2_with_a_clear_message(tmp_path: Path) -> None:
    for argv, needle in (
        (
            ["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp", "--workers", "2"],
            "fixed port",
        ),
        (["--upstream", "ftp://x"], "upstreams.default.url"),
        (
            ["--upstream", "http://127.0.0.1:9/mcp", "--policy", str(tmp_path / "none.yaml")],
            "none.yaml",
        ),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "serve", *argv],
            cwd=ROOT,
            env=peer_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (argv, done.stderr)
        assert needle in done.stderr, (argv, done.stderr)
