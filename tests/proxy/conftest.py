"""Fixtures shared by the proxy tests: a private CA and its certificates (tests/upstream_servers.py
has the servers that use them)."""

from __future__ import annotations

import pytest

from tests.upstream_servers import Pki, make_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A private CA, an unrelated CA, server and client certificates (PEM files)."""
    return make_pki(tmp_path_factory.mktemp("pki"))
