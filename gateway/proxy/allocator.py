"""Give memory back after an attack: the system allocator, and a trim when connections drop.

Measured with ``bench/slowloris.py`` (issue 9): a thousand slow connections leave CPython's own
small-object allocator (pymalloc) with arenas that are mostly free but each pinned by a few live
blocks; pymalloc returns an arena only when all of it is free, so the process kept 8–35 MiB more
than its baseline after each attack although the live Python objects were back to their number
before it (``gc.get_objects()``). glibc's ``malloc_trim`` can hand back free pages anywhere in its
heap, but only for memory glibc manages: so ``serve`` runs on the system allocator
(``PYTHONMALLOC=malloc``), and the listener calls ``malloc_trim`` when the number of open
connections has fallen well below its peak (``Trimmer``).

* ``reexec_with_system_allocator`` — ``serve`` started by its console script or ``python -m
  gateway`` re-executes itself once with ``PYTHONMALLOC=malloc`` on glibc, before anything is
  loaded. An operator who sets ``PYTHONMALLOC`` (any value, e.g. ``pymalloc``) keeps it.
* ``Trimmer`` — decides when a trim is worth it; ``malloc_trim`` (a few milliseconds for the
  gateway's heap) runs in a worker thread, never on the event loop.

Elsewhere (musl, macOS) both are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform
import sys
from collections.abc import Callable, Mapping, Sequence

ALLOCATOR_ENV = "PYTHONMALLOC"
SYSTEM_ALLOCATOR = "malloc"
# A trim is worth it when this many connections closed since the peak it was measured against.
TRIM_MIN_DROP = 64
TRIM_INTERVAL = 5.0  # seconds between checks


@functools.cache
def malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where there is no glibc."""
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def reexec_argv(
    executable: str, argv: Sequence[str], environ: Mapping[str, str]
) -> tuple[list[str], dict[str, str]] | None:
    """The command line and environment to re-execute ``serve`` on the system allocator, or
    None when it already runs on it, the operator chose an allocator, or there is no glibc."""
    if ALLOCATOR_ENV in environ or malloc_trim() is None or not argv:
        return None
    script = argv[0]
    if os.path.basename(script) == "__main__.py" or not os.path.isfile(script):
        command = [executable, "-m", "gateway", *argv[1:]]
    else:  # the console script: keep its name in the process list
        command = [executable, script, *argv[1:]]
    return command, {**environ, ALLOCATOR_ENV: SYSTEM_ALLOCATOR}


def reexec_with_system_allocator() -> None:
    """Replace this process with the same command on the system allocator (see the module
    docstring); returns only when that is not wanted. Call before anything is loaded."""
    plan = reexec_argv(sys.executable, sys.argv, os.environ)
    if plan is None:
        return
    command, env = plan
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command, env)  # noqa: S606 - the same program, argv as given


def give_back_freed_memory() -> None:
    """Trim now (start-up, where nothing else runs yet); a no-op without glibc."""
    trim = malloc_trim()
    if trim is not None:
        trim(0)


class Trimmer:
    """When to give freed memory back: after the number of open connections fell by at least
    ``min_drop`` from the highest it reached since the last check.

    ``observe(open_now)`` is called when a connection opens (cheap: one comparison);
    ``due(open_now)`` by a periodic task says whether to trim now, and starts a new peak.
    """

    def __init__(self, min_drop: int = TRIM_MIN_DROP) -> None:
        self.min_drop = min_drop
        self.peak = 0
        self.trims = 0

    def observe(self, open_now: int) -> None:
        self.peak = max(self.peak, open_now)

    def due(self, open_now: int) -> bool:
        drop = self.peak - open_now
        self.peak = open_now
        if drop < self.min_drop:
            return False
        self.trims += 1
        return True
