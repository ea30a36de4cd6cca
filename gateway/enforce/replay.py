"""Answered ``gq1.`` tokens, shared by every worker process of one gateway.

The enforcer refuses a second answer to the same forwarded elicitation. With ``--workers N`` the
two answers may reach two workers (the kernel spreads connections over ``SO_REUSEPORT``
listeners), so a per-process set would miss most replays. This table lives in shared memory:

* a fixed number of slots (open addressing, a short linear probe), each a 12-byte digest of the
  token and its expiry (unix seconds): memory is bounded (16 bytes a slot) and an entry lapses
  when its token could no longer be opened anyway;
* mapped ``MAP_SHARED`` from anonymous memory (``memfd``), created before the first fork (an
  at-fork hook makes sure of it), so every forked worker, restarted ones included, sees the same
  table; a single process creates it on first use;
* changed under a POSIX record lock (``lockf``) on that memory's descriptor, which the kernel
  releases when a process dies, so a killed worker cannot leave the others waiting.

When the probe window is full, the entry that expires first is overwritten (a replay of that
token is then no longer recognised). Nothing survives the gateway's own restart, and replicas do
not share the table: see docs/architecture.md, "Stateless replicas".
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import tempfile
import threading
import time
from typing import Final

SLOTS: Final = 1 << 16  # 65,536 answered tokens
_PROBE: Final = 32
_DIGEST: Final = 12
_SLOT: Final = struct.Struct(f"<{_DIGEST}sI")  # digest, expiry (unix seconds)
_EMPTY: Final = bytes(_DIGEST)


class AnsweredTable:
    """A bounded set of token digests with expiry, shared across ``fork``."""

    def __init__(self, slots: int = SLOTS) -> None:
        if slots < _PROBE or slots & (slots - 1):
            raise ValueError("slots must be a power of two, at least the probe length")
        self._slots = slots
        size = slots * _SLOT.size
        # Anonymous memory with a file descriptor (Linux), else an unlinked temporary file:
        # either is gone with the last process that maps it.
        try:
            self._fd = os.memfd_create("gateway-answered", os.MFD_CLOEXEC)
        except (AttributeError, OSError):  # pragma: no cover - not Linux, or memfd refused
            with tempfile.TemporaryFile() as handle:
                self._fd = os.dup(handle.fileno())
        os.ftruncate(self._fd, size)
        self._map = mmap.mmap(self._fd, size, flags=mmap.MAP_SHARED)
        self._local = threading.Lock()  # threads of one process (POSIX locks are per process)

    def add(self, digest: bytes, expires: float, now: float | None = None) -> bool:
        """Record ``digest`` (at least 12 bytes, uniformly distributed) until ``expires``; False
        when it was already recorded and has not expired."""
        key = digest[:_DIGEST].ljust(_DIGEST, b"\0")
        if key == _EMPTY:
            key = b"\1" + key[1:]
        moment = time.time() if now is None else now
        start = int.from_bytes(key[:8], "little") & (self._slots - 1)
        with self._local:
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
            try:
                return self._add(key, start, int(moment), min(int(expires), 0xFFFFFFFF))
            finally:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def _add(self, key: bytes, start: int, now: int, expires: int) -> bool:
        free: int | None = None
        oldest, oldest_expiry = start, 0xFFFFFFFF + 1
        for step in range(_PROBE):
            index = (start + step) & (self._slots - 1)
            offset = index * _SLOT.size
            slot, expiry = _SLOT.unpack_from(self._map, offset)
            live = slot != _EMPTY and expiry > now
            if live and slot == key:
                return False
            if not live and free is None:
                free = index
            if expiry < oldest_expiry:
                oldest, oldest_expiry = index, expiry
        target = free if free is not None else oldest
        _SLOT.pack_into(self._map, target * _SLOT.size, key, expires)
        return True


_shared: AnsweredTable | None = None


def shared_table() -> AnsweredTable:
    """The process's table; created before a fork (by the hook below) it is shared with every
    child forked afterwards."""
    global _shared  # noqa: PLW0603 - one table per process tree, by design
    if _shared is None:
        _shared = AnsweredTable()
    return _shared


os.register_at_fork(before=shared_table)
