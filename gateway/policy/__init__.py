"""Policy files and the decision engine (sans-IO: no aiohttp here).

* ``load_policy(path) -> Policy`` — validate and compile a YAML policy (``PolicyError`` on error);
* ``evaluate(params, *, modes, server, policy) -> Decision`` — decide on one elicitation, never
  raises (fail closed);
* ``warm_up(cfg)`` — load detector data once at start-up (``evaluate`` does it on first use).

The file format is documented key by key in docs/policies.md.
"""

from __future__ import annotations

from gateway.policy.engine import decide, evaluate, warm_policy, warm_up
from gateway.policy.loader import Policy, load_policy, parse_policy

__all__ = [
    "Policy",
    "decide",
    "evaluate",
    "load_policy",
    "parse_policy",
    "warm_policy",
    "warm_up",
]
