"""The frozen per-message Exchange and the elicitation.seen event (gateway/enforce/exchange.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gateway.carriers.extract import Carrier, Sighting
from gateway.enforce.exchange import SEEN, Direction, Exchange, hash_id, seen_events
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


def test_seen_events_name_facts_never_values() -> None:
    s = Sighting(Carrier.SERVER_REQUEST, "$.params", params=FORM, mode="form", request_id=3)
    [event] = seen_events(X, [s])
    assert event["event"] == SEEN
    assert (event["transport"], event["stream"]) == ("sse", "post")
    assert event["fields"] == ["name"] and event["declared_modes"] == ["form"]
    assert event["session"] == hash_id(SESSION) and SESSION not in json.dumps(event)


def test_answers_are_seen_on_the_clients_post_body() -> None:
    s = Sighting(Carrier.ANSWER, "$.result", request_id="gq1.x", action="accept")
    [event] = seen_events(dataclasses.replace(X, direction=Direction.CLIENT), [s])
    assert event["transport"] == "json" and "stream" not in event
    assert (event["request_id"], event["action"]) == ("sealed", "accept")
