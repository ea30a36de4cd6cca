"""The answered-token table shared by the workers (gateway/enforce/replay.py): set semantics, expiry,
bounded eviction, and sharing across ``fork`` — real processes, no mocks."""

from __future__ import annotations

import hashlib
import multiprocessing

from gateway.enforce.replay import AnsweredTable

NOW = 1_800_000_000.0


def key(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def test_a_token_is_new_once_until_it_expires() -> None:
    table = AnsweredTable(64)
    assert table.add(key("a"), NOW + 10, now=NOW)
    assert not table.add(key("a"), NOW + 10, now=NOW + 5)
    assert table.add(key("b"), NOW + 10, now=NOW)
    assert table.add(key("a"), NOW + 30, now=NOW + 11)  # lapsed with its token
    assert not table.add(key("a"), NOW + 30, now=NOW + 12)


def test_a_full_probe_window_drops_the_entry_that_expires_first() -> None:
    table = AnsweredTable(64)
    colliding = [b"\1" * 8 + i.to_bytes(4, "little") for i in range(33)]  # one home slot
    for i, digest in enumerate(colliding[:32]):
        assert table.add(digest, NOW + 100 + i, now=NOW)
    assert table.add(colliding[32], NOW + 500, now=NOW)  # evicts colliding[0]
    assert table.add(colliding[0], NOW + 500, now=NOW)  # forgotten: new again
    assert not table.add(colliding[31], NOW + 500, now=NOW)  # the others are kept


def _add_in_child(table: AnsweredTable, digest: bytes, result: multiprocessing.Queue[bool]) -> None:
    result.put(table.add(digest, NOW + 100, now=NOW))


def test_the_table_is_shared_with_forked_workers() -> None:
    table = AnsweredTable(64)
    fork = multiprocessing.get_context("fork")
    result: multiprocessing.Queue[bool] = fork.Queue()
    assert table.add(key("parent"), NOW + 100, now=NOW)
    for digest, expected in ((key("parent"), False), (key("child"), True)):
        child = fork.Process(target=_add_in_child, args=(table, digest, result))
        child.start()
        child.join(10)
        assert child.exitcode == 0
        assert result.get(timeout=5) is expected
    assert not table.add(key("child"), NOW + 100, now=NOW)  # the child's entry is seen here
