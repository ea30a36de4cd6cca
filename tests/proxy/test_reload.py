"""Policy reload (gateway/proxy/reload.py): all-or-nothing, and warm before it takes traffic."""

from __future__ import annotations

import uuid
from pathlib import Path

from gateway.policy.engine import is_warm
from gateway.policy.loader import load_policy
from gateway.proxy.reload import reload_from_file

DEFAULT = Path("policies/default.yaml")


def _with_fresh_server(tmp_path: Path) -> Path:
    """A policy whose per-server detection configuration no test has warmed yet (a protected
    trusted domain of its own makes it a configuration never seen in this process)."""
    unique = f"reload-{uuid.uuid4().hex[:12]}.example"
    text = DEFAULT.read_text().replace(
        "servers: {}", f"servers:\n  acme:\n    trusted_domains: [{unique}]"
    )
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_a_reloaded_policy_is_warm_before_it_is_swapped_in(tmp_path: Path) -> None:
    path = _with_fresh_server(tmp_path)
    assert not is_warm(load_policy(path))  # loading alone leaves the new configuration cold
    new = reload_from_file(str(path), load_policy(DEFAULT))
    assert new is not None and "acme" in new.servers
    assert is_warm(new)


def test_an_invalid_file_keeps_the_current_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("version: 1\nactions: {secret-field: maybe}\n")
    assert reload_from_file(str(path), load_policy(DEFAULT)) is None
