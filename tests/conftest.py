"""Suite-wide test settings."""

from __future__ import annotations

from hypothesis import settings

# Property tests judge behaviour, not speed (speed is measured in bench/): no per-example
# deadline, which would only make the suite flaky on a loaded CI machine.
settings.register_profile("gateway", deadline=None, print_blob=True)
settings.load_profile("gateway")
