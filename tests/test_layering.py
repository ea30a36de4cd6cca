"""The core stays sans-IO: only the socket layer imports network or event-loop modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GATEWAY = Path(__file__).resolve().parents[1] / "gateway"
IO_MODULES = frozenset({"aiohttp", "asyncio", "socket", "ssl", "httptools", "selectors"})
# The socket layer (relay, its upstream client), the process around it (app wiring, serve,
# reload's file watch) and the demo (its upstream, its child processes, the demo command).
SOCKET_LAYER = frozenset(
    {
        "relay.py",
        "upstream.py",
        "listener.py",
        "app.py",
        "serve.py",
        "reload.py",
        "demo/process.py",
        "demo/run.py",
        "demo/upstream.py",
    }
)


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


CORE = sorted(
    str(p.relative_to(GATEWAY))
    for p in GATEWAY.rglob("*.py")
    if str(p.relative_to(GATEWAY)) not in SOCKET_LAYER
)


def test_the_core_is_not_empty() -> None:
    assert {"enforce.py", "jsonrpc.py", "sse.py", "policy/engine.py"} <= set(CORE)


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_no_io(module: str) -> None:
    assert not imported_roots(GATEWAY / module) & IO_MODULES
