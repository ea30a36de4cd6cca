"""The frozen per-message Exchange (gateway/enforce/exchange.py)."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.enforce.exchange import Exchange, hash_id
from gateway.enforce.seal import digest
from gateway.wire.era import Era

SESSION = "upstream-session-secret"
X = Exchange(
    upstream="acme",
    era=Era.HANDSHAKE,
    modes=frozenset({"form"}),
    session=SESSION,
    client="c",
    transport="post",
)
FORM = {
    "message": "m",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


def test_an_exchange_is_frozen_and_changed_only_by_replacing_it() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        X.rounds = 1  # type: ignore[misc]
    later = dataclasses.replace(X, rounds=1, retry_id="r")
    assert (X.rounds, X.retry_id) == (0, None) and (later.rounds, later.retry_id) == (1, "r")


def test_session_digest_is_the_digest_of_the_upstream_session() -> None:
    assert X.session_digest == digest(SESSION)
    assert dataclasses.replace(X, session=None).session_digest == digest("")


def test_hash_id_is_a_short_digest_and_keeps_none() -> None:
    assert hash_id(None) is None
    assert len(hash_id(SESSION) or "") == 16 and SESSION not in (hash_id(SESSION) or "")
