"""`elicitation-gateway demo` runs the real peers and prints the decision table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.peers.procs import ROOT, peer_env

pytestmark = pytest.mark.e2e


def test_demo_prints_what_was_asked_decided_seen_and_returned() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "demo"],
        cwd=ROOT,
        env=peer_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("20")]
    assert len(rows) == 18
    table = done.stdout
    for era in ("2025-11-25", "2026-07-28"):
        lines = [line for line in table.splitlines() if line.startswith(era)]
        by_tool = {line.split("  ")[1].strip(): line for line in lines}
        password = by_tool["form: password, one-time code"]
        assert "BLOCK" in password and "secret-field" in password
        assert password.rstrip().endswith("decline") and "nothing" in password
        profile = by_tool["form: name, email, birth date"]
        assert "ALLOW" in profile and profile.rstrip().endswith("accept")
        assert "WARN" in by_tool["form: full name, SSN"]
        assert "BLOCK" in by_tool["URL: look-alike of apple.com"]
    assert "10 blocked" in table
