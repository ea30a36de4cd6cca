"""The instruction process() returns (gateway/enforce/outcome.py)."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.enforce.exchange import Exchange
from gateway.enforce.outcome import FORWARD, Outcome, Retry
from gateway.errors import ClientProtocolError
from gateway.wire.era import Era

X = Exchange(upstream="acme", era=Era.MODERN)


@pytest.mark.parametrize(
    "outcome",
    [
        Outcome(message={"id": 1}),
        Outcome(drop=True),
        Outcome(replies=({"id": 1, "result": {"action": "decline"}},)),
        Outcome(retry=Retry({"id": "r"}, X)),
        Outcome(absorb=True),
        Outcome(fail=ClientProtocolError("bad")),
    ],
)
def test_anything_set_means_the_original_bytes_do_not_simply_go_on(outcome: Outcome) -> None:
    assert not outcome.unchanged


def test_forward_is_the_empty_outcome_and_frozen() -> None:
    assert FORWARD.unchanged and Outcome() == FORWARD
    with pytest.raises(dataclasses.FrozenInstanceError):
        FORWARD.drop = True  # type: ignore[misc]
