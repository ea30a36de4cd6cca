"""Policy files and the decision engine (sans-IO: no aiohttp here).

* ``load_policy(path) -> Policy`` — validate and compile a YAML policy (``PolicyError`` on error);
* ``evaluate(params, *, modes, server, policy) -> Decision`` — decide on one elicitation, never
  raises (fail closed);
* ``warm_up(policy)`` — load detector data and warm every configuration of a policy before it
  takes traffic (start-up and reload; ``evaluate`` warms a cold configuration on first use).

The file format is documented key by key in docs/policies.md.
"""

from __future__ import annotations

from gateway.policy.engine import decide, evaluate, is_warm, warm_up
from gateway.policy.loader import Policy, load_policy, parse_policy

__all__ = [
    "Policy",
    "decide",
    "evaluate",
    "is_warm",
    "load_policy",
    "parse_policy",
    "warm_up",
]
