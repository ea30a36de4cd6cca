"""The differential property test (issue 9, section 2): hostile upstream responses carrying an
elicitation, through the real gateway, read by the real SDK clients. Invariant: every elicitation
a client parses has a matching allow/warn audit decision, no blocked one is ever parsed, and the
gateway logs no error.

Bounded here (``DIFFERENTIAL_EXAMPLES`` in all, default 300, inside ``make test``); ``make fuzz``
runs the long version (``tests/differential/fuzz.py``). One test per carrier family, so that the
committed example database next to this file (``.hypothesis-db``, the failures found on 708c947,
before the reading rules were fixed) keeps failing examples of each; they are replayed first on
every run. That database is read-only here (a passing run would otherwise prune it); new
failures go to ``.hypothesis/differential``. ``DIFFERENTIAL_SAVE=1`` writes to the committed one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from tests.differential.rig import TsVictim, Victims, victims
from tests.differential.strategies import Plan, plans

# The TypeScript victim is a Node 24 subprocess (make conformance-deps installs its SDK).
pytestmark = pytest.mark.e2e

EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "300"))
ROOT = Path(__file__).resolve().parents[2]
SAVED = DirectoryBasedExampleDatabase(Path(__file__).with_name(".hypothesis-db"))
DATABASE: ExampleDatabase = (
    SAVED
    if os.environ.get("DIFFERENTIAL_SAVE") == "1"
    else MultiplexedDatabase(
        ReadOnlyDatabase(SAVED),
        DirectoryBasedExampleDatabase(ROOT / ".hypothesis" / "differential"),
    )
)
FULL_CLIENT_EVERY = 8  # one example in this many also runs the whole mcp.Client
BOUNDED = settings(
    max_examples=max(1, EXAMPLES // 4),
    deadline=None,
    database=DATABASE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)


class Rig:
    """The gateway and the victims, on a loop of their own (Hypothesis drives a sync test)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.stack = contextlib.AsyncExitStack()
        self.victims: Victims = self.loop.run_until_complete(
            self.stack.enter_async_context(victims(full_client=True))
        )

    def check(self, plan: Plan, pick: int, *, get: bool = False) -> None:
        outcome = self.loop.run_until_complete(
            self.victims.run(plan, full_client=pick % FULL_CLIENT_EVERY == 0, get=get)
        )
        note(outcome.report())
        assert not outcome.problems, outcome.report()

    def close(self) -> None:
        self.loop.run_until_complete(self.stack.aclose())
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    if not TsVictim.available():
        pytest.fail("the TypeScript SDK victim needs `make conformance-deps`")
    r = Rig()
    try:
        yield r
    finally:
        r.close()


def test_server_requests_on_sse_and_json(rig: Rig) -> None:
    @BOUNDED
    @given(plan=plans(carriers=("server-request",)), pick=st.integers(0, 1000))
    def server_requests(plan: Plan, pick: int) -> None:
        rig.check(plan, pick)

    server_requests()


def test_server_requests_on_the_standalone_get_stream(rig: Rig) -> None:
    @BOUNDED
    @given(plan=plans(carriers=("server-request",)), pick=st.integers(0, 1000))
    def get_stream(plan: Plan, pick: int) -> None:
        rig.check(plan, pick, get=True)

    get_stream()


def test_url_required_errors_at_any_status(rig: Rig) -> None:
    @BOUNDED
    @given(plan=plans(carriers=("url-required",)), pick=st.integers(0, 1000))
    def url_required(plan: Plan, pick: int) -> None:
        rig.check(plan, pick)

    url_required()


def test_input_required_results_and_the_gateways_own_retry(rig: Rig) -> None:
    @BOUNDED
    @given(plan=plans(carriers=("input-required",)), pick=st.integers(0, 1000))
    def input_required(plan: Plan, pick: int) -> None:
        rig.check(plan, pick)

    input_required()
