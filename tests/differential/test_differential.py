"""The differential property test (issue 9, section 2): hostile upstream responses carrying an
elicitation, through the real gateway, read by the real SDK clients. Invariant: every elicitation
a client parses has a matching allow/warn audit decision, no blocked one is ever parsed, and the
gateway logs no error.

Bounded here (``DIFFERENTIAL_EXAMPLES``, default 300, inside ``make test``); ``make fuzz`` runs
the long version (``tests/differential/fuzz.py``). Failing examples are kept in the committed
example database next to this file and replayed first on every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from tests.differential.rig import Victims, victims
from tests.differential.strategies import Plan, plans

EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "300"))
DATABASE = DirectoryBasedExampleDatabase(Path(__file__).with_name(".hypothesis-db"))
FULL_CLIENT_EVERY = 8  # one example in this many also runs the whole mcp.Client


def _run_property(v: Victims, loop: asyncio.AbstractEventLoop) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=DATABASE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )
    @given(plan=plans(), pick=st.integers(0, FULL_CLIENT_EVERY - 1))
    def gateway_reads_like_every_client(plan: Plan, pick: int) -> None:
        outcome = loop.run_until_complete(v.run(plan, full_client=pick == 0))
        note(outcome.report())
        assert not outcome.problems, outcome.report()

    gateway_reads_like_every_client()


def test_every_parsed_elicitation_was_decided_and_allowed() -> None:
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    try:
        v = loop.run_until_complete(stack.enter_async_context(victims(full_client=True)))
        _run_property(v, loop)
    finally:
        loop.run_until_complete(stack.aclose())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
