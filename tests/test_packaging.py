"""What a new user installs: ``make run`` only what running needs, and packaging metadata that
builds without deprecation banners."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_installs_only_what_running_needs(tmp_path: Path) -> None:
    """``make -n`` prints what ``make run`` would do in a fresh venv: one install, of the
    project with the demo extra only (the MCP SDK its demo upstream is written with; the dev
    extras — pytest, mypy, Node, kubernetes-validate, 581 MB — come with ``make test``), then
    the gateway."""
    venv = tmp_path / "venv"
    # Run as a top-level make even under `make test` (a nested make prints directory lines).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", f"VENV={venv}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    installs = [line for line in done.stdout.splitlines() if re.search(r"pip install .*-e ", line)]
    assert installs, done.stdout
    assert all(line.rstrip().endswith("-e '.[demo]'") for line in installs), installs
    assert "[dev]" not in done.stdout and "[bench]" not in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith(f"{venv}/bin/elicitation-gateway serve")


def test_license_is_an_spdx_expression_the_build_backend_accepts() -> None:
    """A ``license = {text = ...}`` table makes setuptools print a deprecation banner on every
    install; an SPDX string needs setuptools >= 77 (PEP 639), which the build requires."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["license"] == "Apache-2.0"
    assert not any(c.startswith("License ::") for c in meta["project"].get("classifiers", []))
    backends = [Requirement(r) for r in meta["build-system"]["requires"]]
    setuptools = next(r for r in backends if r.name == "setuptools")
    assert not setuptools.specifier.contains("76.9")
    assert setuptools.specifier.contains("77.0")


def test_the_demo_sdk_is_an_extra_that_dev_pulls_in() -> None:
    """A production install does not carry the MCP SDK (the demo upstream's only reason to
    exist); ``[demo]`` brings it, and ``[dev]`` brings ``[demo]`` (the tests use the SDK as
    peers)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {Requirement(r).name for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    assert "mcp" not in core
    assert {Requirement(r).name for r in extras["demo"]} == {"mcp"}
    self_refs = [Requirement(r) for r in extras["dev"] if Requirement(r).name == project["name"]]
    assert [r.extras for r in self_refs] == [{"demo"}]
