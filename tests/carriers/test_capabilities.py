"""Declared elicitation modes (protocol.md §2)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.carriers.capabilities import (
    client_name,
    modes_from_capabilities,
    modes_from_initialize,
    modes_from_meta,
)


@pytest.mark.parametrize(
    ("caps", "modes"),
    [
        ({"elicitation": {"form": {}, "url": {}}}, {"form", "url"}),
        ({"elicitation": {}}, {"form"}),  # backwards compatibility: {} means form only
        ({"elicitation": {"url": {}}}, {"url"}),
        ({"elicitation": {"form": {}}}, {"form"}),
        ({}, set()),
        ({"sampling": {}}, set()),
        ({"elicitation": True}, set()),
        (None, set()),
        ("x", set()),
    ],
)
def test_modes_from_capabilities(caps: Any, modes: set[str]) -> None:
    assert modes_from_capabilities(caps) == modes


def test_initialize_and_meta() -> None:
    init = {"capabilities": {"elicitation": {}}, "clientInfo": {"name": "c"}}
    assert modes_from_initialize(init) == {"form"}
    assert client_name(init) == "c"
    meta = {
        "_meta": {
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "m"},
        }
    }
    assert modes_from_meta(meta) == frozenset({"url"})
    assert client_name(meta) == "m"
    assert modes_from_meta({"_meta": {}}) is None
    assert (
        modes_from_meta({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})
        == frozenset()
    )
