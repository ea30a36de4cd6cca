"""gateway/proxy/allocator.py: serve on the system allocator, and when to hand memory back.

The memory itself is measured by bench/slowloris.py (RSS before and after each attack), not here.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from gateway.proxy.allocator import ALLOCATOR_ENV, TRIM_MIN_DROP, Trimmer, malloc_trim, reexec_argv

GLIBC = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"
needs_glibc = pytest.mark.skipif(not GLIBC, reason="malloc_trim exists only in glibc")


@needs_glibc
def test_glibc_malloc_trim_is_found_and_callable() -> None:
    trim = malloc_trim()
    assert trim is not None
    assert trim(0) in (0, 1)  # 1: memory was released, 0: there was none to release


@needs_glibc
def test_the_console_script_is_reexecuted_under_its_own_name_on_the_system_allocator(
    tmp_path: Path,
) -> None:
    script = tmp_path / "elicitation-gateway"
    script.write_text("#!python\n")
    plan = reexec_argv("/venv/bin/python", [str(script), "serve", "--workers", "1"], {"A": "1"})
    assert plan == (
        ["/venv/bin/python", str(script), "serve", "--workers", "1"],
        {"A": "1", ALLOCATOR_ENV: "malloc"},
    )


@needs_glibc
def test_python_dash_m_gateway_is_reexecuted_as_python_dash_m_gateway() -> None:
    main = str(Path(__file__).resolve().parents[2] / "gateway" / "__main__.py")
    plan = reexec_argv("/usr/bin/python3", [main, "serve"], {})
    assert plan is not None
    assert plan[0] == ["/usr/bin/python3", "-m", "gateway", "serve"]


@pytest.mark.parametrize("chosen", ["malloc", "pymalloc", "debug"])
def test_an_allocator_the_operator_chose_is_kept(chosen: str) -> None:
    assert (
        reexec_argv(sys.executable, ["elicitation-gateway", "serve"], {ALLOCATOR_ENV: chosen})
        is None
    )


def test_trims_only_after_connections_fell_well_below_their_peak() -> None:
    t = Trimmer(min_drop=64)
    for n in range(1, 1001):
        t.observe(n)
    assert not t.due(990)  # 10 closed: not worth it; the peak is now 990
    assert t.due(900)  # 90 below it
    assert t.peak == 900
    assert not t.due(900)  # nothing new
    t.observe(950)
    assert not t.due(940)
    assert t.due(0)
    assert t.trims == 2


def test_the_default_drop_is_a_burst_not_a_few_clients() -> None:
    assert 16 <= TRIM_MIN_DROP <= 256
