"""`elicitation-gateway demo` (gateway/demo/run.py) runs the real peers and prints the decision table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.peers.procs import peer_env

pytestmark = pytest.mark.e2e


def test_demo_prints_what_was_asked_decided_seen_and_returned(tmp_path: Path) -> None:
    """Run from a directory that is not the repository (no policies/ there): the shipped
    default policy is used."""
    done = _demo(cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("20")]
    assert len(rows) == 18
    table = done.stdout
    for era in ("2025-11-25", "2026-07-28"):
        lines = [line for line in table.splitlines() if line.startswith(era)]
        by_tool = {re.split(r"\s{2,}", line)[1]: line for line in lines}
        password = by_tool["form: password, one-time code"]
        assert "BLOCK" in password and "secret-field" in password
        assert password.rstrip().endswith("decline") and "nothing" in password
        profile = by_tool["form: name, email, start date"]
        assert "ALLOW" in profile and profile.rstrip().endswith("accept")
        assert "WARN" in by_tool["form: full name, SSN"]
        assert "BLOCK" in by_tool["URL: look-alike of apple.com"]
    # The same over stdio: the SDK's stdio client starting `elicitation-gateway stdio -- …`.
    stdio = [line for line in table.splitlines() if line.startswith("stdio ")]
    assert [line.split()[1] for line in stdio] == ["2025-11-25"] * 2 + ["2026-07-28"] * 2
    for line in stdio:
        if "password" in line:
            assert "BLOCK" in line and "secret-field" in line and "nothing" in line
            assert line.rstrip().endswith("decline")
        else:
            assert "ALLOW" in line and line.rstrip().endswith("accept")
    assert "22 elicitations: 12 blocked" in table


def _demo(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in peer_env().items() if not k.startswith("GATEWAY_")}
    return subprocess.run(
        [sys.executable, "-m", "gateway", "demo", *argv],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_demo_with_a_bad_policy_is_one_line_naming_the_field(tmp_path: Path) -> None:
    """Checked before anything starts: exit 2, the file and the field (formerly a traceback
    ending in "the gateway exited with status 2")."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nactions: {secret-field: maybe}\n")
    done = _demo("--policy", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"elicitation-gateway: error: {bad}: actions.secret-field: "
        "Input should be 'allow', 'warn' or 'block'"
    ]
    assert done.stdout == ""


def test_demo_says_why_its_gateway_did_not_start(tmp_path: Path) -> None:
    """A gateway that exits at start (here: unusable keys in the environment) is reported with
    its own last error line, not just its exit status."""
    done = _demo(cwd=tmp_path, env={"GATEWAY_KEYS": "not*base64"})
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("elicitation-gateway: error: the gateway exited with status 2: ")
    assert "GATEWAY_KEYS" in lines[0]
