"""Suite-wide test settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from gateway.audit.logs import unroute_stdlib

# Property tests judge behaviour, not speed (speed is measured in bench/): no per-example
# deadline, which would only make the suite flaky on a loaded CI machine.
settings.register_profile("gateway", deadline=None, print_blob=True)
settings.load_profile("gateway")


@pytest.fixture(autouse=True)
def _stdlib_logging_unrouted() -> Iterator[None]:
    """A test that configured logging leaves no root handler on its (soon closed) stream."""
    yield
    unroute_stdlib()
