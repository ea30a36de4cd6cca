"""gateway.policy.schema: the policy file's pydantic models (what a valid policy file is)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.policy.schema import PolicyFile


def policy(**fields: Any) -> PolicyFile:
    return PolicyFile.model_validate({"version": 1, **fields})


def test_a_minimal_policy_has_the_documented_defaults() -> None:
    p = policy()
    assert p.enforce is True
    assert p.low_severity == "warn"
    assert p.notify_user is True
    assert p.url.schemes == ("https",)
    assert p.form.card_context_required is True
    assert p.enforcement.block_response == "decline"


def test_a_bare_action_sets_high_only() -> None:
    p = policy(actions={"secret-field": "warn", "typosquat": {"high": "block", "low": "block"}})
    assert p.actions["secret-field"].high == "warn"
    assert p.actions["secret-field"].low is None
    assert p.actions["typosquat"].low == "block"


@pytest.mark.parametrize(
    "fields",
    [
        {"version": 2},
        {"surprise": True},  # unknown keys are refused, at every level
        {"url": {"schemes": ["https"], "surprise": 1}},
        {"actions": {"no-such-reason": "block"}},
        {"actions": {"internal-error": "allow"}},  # the gateway fails closed
        {"actions": {"internal-error": {"high": "block", "low": "warn"}}},
        {"enforce": "yes"},  # strict booleans
        {"enforcement": {"max_gateway_rounds": 21}},
        {"url": {"protected_domains": ["*.example.com"]}},
        {"url": {"protected_domains": ["not a domain"]}},
        {"form": {"allow_terms": ["   "]}},
        {"url": {"safe_query_keys": [""]}},
    ],
)
def test_invalid_policies_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PolicyFile.model_validate({"version": 1, **fields})


def test_domains_terms_and_keys_are_normalised() -> None:
    p = policy(
        url={
            "protected_domains": ["Bücher.Example.", "[2001:db8::1]"],
            "safe_query_keys": [" UTM_Source "],
            "schemes": ["HTTPS"],
        },
        form={"allow_terms": ["ＰＡＳＳ Hint"]},
    )
    assert p.url.protected_domains == ("xn--bcher-kva.example", "2001:db8::1")
    assert p.url.safe_query_keys == ("utm_source",)
    assert p.url.schemes == ("https",)
    assert p.form.allow_terms == ("pass hint",)


def test_the_models_are_frozen() -> None:
    p = policy()
    with pytest.raises(ValidationError):
        p.enforce = False
