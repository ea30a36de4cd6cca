"""Era registry: versions are an enumerated set; unknown is never guessed."""

from __future__ import annotations

import pytest

from gateway.wire.era import Era, era_of_version, header_mismatch


@pytest.mark.parametrize(
    ("version", "era"),
    [
        (None, Era.HANDSHAKE),
        ("2024-11-05", Era.HANDSHAKE),
        ("2025-03-26", Era.HANDSHAKE),
        ("2025-06-18", Era.HANDSHAKE),
        ("2025-11-25", Era.HANDSHAKE),
        ("2026-07-28", Era.MODERN),
        ("2025-99-99", Era.UNKNOWN),
        ("", Era.UNKNOWN),
    ],
)
def test_era_of_version(version: str | None, era: Era) -> None:
    assert era_of_version(version) is era


def test_header_mismatch() -> None:
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}
    assert header_mismatch("2026-07-28", meta)
    ok = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    assert not header_mismatch("2026-07-28", ok)
    assert not header_mismatch("2025-11-25", meta)  # handshake: no envelope to compare
    assert not header_mismatch("2026-07-28", {})  # missing _meta: the server answers -32602
