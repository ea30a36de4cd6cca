"""The layout is the pipeline, and the core stays sans-IO: checked by directory, not by a list.

* ``gateway/`` holds packages only, besides ``__init__.py``, ``__main__.py`` and ``errors.py``:
  a new module goes into the package of its stage (docs/architecture.md, "Package layout").
* Only ``gateway/proxy/`` (the relay, its upstream client, the process around them),
  ``gateway/stdio/`` (the stdio transport: the gateway's own pipes and the child server) and
  ``gateway/demo/`` (the demo upstream, its child processes) import network or event-loop
  modules. Every other package is sans-IO and does not import those two packages either.
* ``gateway/cli/`` is no exception for I/O modules: ``serve`` is dispatched to
  ``gateway.proxy.serve`` (``stdio`` to ``gateway.stdio.run``, ``demo`` to ``gateway.demo``)
  by a lazy import in ``cli/main.py``,
  the one place outside them allowed to name them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GATEWAY = Path(__file__).resolve().parents[1] / "gateway"
IO_MODULES = frozenset({"aiohttp", "asyncio", "socket", "ssl", "httptools", "selectors"})
TOP_LEVEL = frozenset({"__init__.py", "__main__.py", "errors.py"})
STAGES = frozenset(
    {"wire", "carriers", "detect", "policy", "enforce", "audit", "proxy", "stdio", "cli", "demo"}
)
IO_PACKAGES = frozenset({"proxy", "stdio", "demo"})
# Modules outside IO_PACKAGES that may import from them (lazily, to start the server or the demo).
DISPATCHERS = frozenset({"cli/main.py"})


def imported_modules(path: Path) -> set[str]:
    """Every absolute module name imported anywhere in the file (functions included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _package(module: str) -> str:
    return module.partition("/")[0] if "/" in module else ""


MODULES = sorted(str(p.relative_to(GATEWAY)) for p in GATEWAY.rglob("*.py"))
SANS_IO = [m for m in MODULES if _package(m) not in IO_PACKAGES]


def test_gateway_holds_only_packages_and_the_allowed_top_level_files() -> None:
    flat = {p.name for p in GATEWAY.glob("*.py")}
    assert flat == TOP_LEVEL, "put a new module into the package of its stage"


def test_every_package_is_a_known_stage() -> None:
    packages = {p.parent.name for p in GATEWAY.glob("*/__init__.py")}
    assert packages == STAGES
    assert not [m for m in MODULES if _package(m) and _package(m) not in STAGES]


def test_the_sans_io_core_is_not_empty() -> None:
    core = set(SANS_IO)
    assert {"enforce/enforcer.py", "wire/jsonrpc.py", "wire/sse.py", "policy/engine.py"} <= core
    assert "wire/ndjson.py" in core  # the stdio framing is sans-IO; only its pumps are not
    assert not {m for m in core if m.startswith(("proxy/", "stdio/", "demo/"))}


def test_the_io_packages_are_where_the_io_is() -> None:
    """The rule below is not vacuous: the relay does import the network modules."""
    assert {"aiohttp", "asyncio"} <= {
        n.split(".")[0] for n in imported_modules(GATEWAY / "proxy" / "relay.py")
    }


@pytest.mark.parametrize("module", SANS_IO)
def test_sans_io_module_imports_no_io(module: str) -> None:
    roots = {name.split(".")[0] for name in imported_modules(GATEWAY / module)}
    assert not roots & IO_MODULES


@pytest.mark.parametrize("module", [m for m in SANS_IO if m not in DISPATCHERS])
def test_sans_io_module_imports_no_io_package(module: str) -> None:
    io_packages = {f"gateway.{p}" for p in IO_PACKAGES}
    imported = imported_modules(GATEWAY / module)
    inside = tuple(f"{p}." for p in io_packages)
    assert not {n for n in imported if n in io_packages or n.startswith(inside)}
