"""The three sealed tokens (``gs1.`` session, ``gq1.`` server request, ``gr1.`` request state):
round trips, every binding refused with its reason, purposes that do not mix, default lifetimes,
and the digests the bindings are built from. Public behaviour of ``gateway.enforce.tokens`` only.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from gateway.enforce import tokens
from gateway.enforce.seal import KeyRing
from gateway.enforce.tokens import (
    REQUEST,
    REQUEST_TTL,
    SESSION,
    STATE,
    STATE_TTL,
    RequestClaims,
    SessionClaims,
    StateClaims,
    arguments_digest,
    credential_digest,
    open_request,
    open_session,
    open_state,
    seal_request,
    seal_session,
    seal_state,
)
from gateway.errors import SealError

KEYS = KeyRing([b"k" * 32])
OTHER_KEYS = KeyRing([b"o" * 32])
CRED = credential_digest("Bearer user-token-1")
UPSTREAM_SESSION = "upstream-session-4f2a"

SESSION_CLAIMS = SessionClaims(UPSTREAM_SESSION, "docs", frozenset({"url", "form"}), "claude", CRED)
REQUEST_CLAIMS = RequestClaims(
    request_id=7,
    session="sess-digest",
    mode="form",
    schema={"type": "object", "properties": {"name": {"type": "string"}}},
    warned=True,
    credential=CRED,
    upstream="docs",
)
STATE_CLAIMS = StateClaims(
    has_state=True,
    state={"server": ["opaque", 1]},
    blocked=("b", "a"),
    schemas={"c": {"type": "object"}},
    method="tools/call",
    target="lookup",
    arguments=arguments_digest({"q": "x"}),
    credential=CRED,
    upstream="docs",
)


def _reason(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(SealError) as info:
        call(*args, **kwargs)
    return info.value.reason


# -- digests ---------------------------------------------------------------------------------------


def test_credential_digest_is_stable_short_and_hides_the_credential() -> None:
    bearer = "Bearer s3cr3t-value-that-must-not-leak"
    d = credential_digest(bearer)
    assert d == credential_digest(bearer)
    assert len(d) == 16
    assert "s3cr3t" not in d
    assert d != credential_digest("Bearer s3cr3t-value-that-must-not-leaK")


def test_no_credential_is_one_binding_whether_absent_or_empty() -> None:
    assert credential_digest(None) == credential_digest("")
    assert credential_digest(None) != credential_digest("Bearer x")


def test_arguments_digest_ignores_key_order_but_not_values() -> None:
    assert arguments_digest({"a": 1, "b": [1, 2]}) == arguments_digest({"b": [1, 2], "a": 1})
    assert arguments_digest({"a": 1, "b": [1, 2]}) != arguments_digest({"a": 1, "b": [2, 1]})
    assert arguments_digest({"a": 1}) != arguments_digest({"a": "1"})
    assert arguments_digest(None) == arguments_digest({})


# -- gs1. session ids ------------------------------------------------------------------------------


def test_session_round_trip() -> None:
    token = seal_session(KEYS, SESSION_CLAIMS)
    assert token.startswith(SESSION)
    assert UPSTREAM_SESSION not in token and "claude" not in token
    opened = open_session(KEYS, token, upstream="docs", credential=CRED)
    assert opened == SESSION_CLAIMS


def test_session_without_a_client_name() -> None:
    claims = replace(SESSION_CLAIMS, client=None, modes=frozenset())
    opened = open_session(KEYS, seal_session(KEYS, claims), upstream="docs", credential=CRED)
    assert opened.client is None
    assert opened.modes == frozenset()


def test_session_is_bound_to_upstream_and_credential() -> None:
    token = seal_session(KEYS, SESSION_CLAIMS)
    assert _reason(open_session, KEYS, token, upstream="mail", credential=CRED) == (
        "foreign-upstream"
    )
    other = credential_digest("Bearer someone-else")
    assert _reason(open_session, KEYS, token, upstream="docs", credential=other) == (
        "foreign-credential"
    )


def test_session_under_another_key_ring_does_not_open() -> None:
    token = seal_session(OTHER_KEYS, SESSION_CLAIMS)
    assert _reason(open_session, KEYS, token, upstream="docs", credential=CRED) == "invalid"


@pytest.mark.parametrize(
    "payload",
    [
        {"n": "docs", "p": CRED, "m": ["form"]},  # no upstream session id
        {"n": "docs", "p": CRED, "u": 5, "m": ["form"]},  # not a string
        {"n": "docs", "p": CRED, "u": "s", "m": "form"},  # modes not a list
    ],
)
def test_session_with_malformed_claims_is_invalid(payload: dict[str, Any]) -> None:
    token = KEYS.seal(SESSION, payload)
    assert _reason(open_session, KEYS, token, upstream="docs", credential=CRED) == "invalid"


# -- gq1. server-request ids -----------------------------------------------------------------------


@pytest.mark.parametrize("request_id", [7, "req-7", 0, -1])
def test_request_round_trip_keeps_the_server_id_and_its_type(request_id: str | int) -> None:
    claims = replace(REQUEST_CLAIMS, request_id=request_id)
    token = seal_request(KEYS, claims)
    assert token.startswith(REQUEST)
    opened = open_request(KEYS, token, session="sess-digest", credential=CRED, upstream="docs")
    assert opened == claims
    assert type(opened.request_id) is type(request_id)


def test_request_bindings_are_checked_in_order() -> None:
    token = seal_request(KEYS, REQUEST_CLAIMS)
    good = {"session": "sess-digest", "credential": CRED, "upstream": "docs"}
    for key, wrong, reason in (
        ("upstream", "mail", "foreign-upstream"),
        ("session", "other-session", "foreign-session"),
        ("credential", credential_digest("Bearer other"), "foreign-credential"),
    ):
        assert _reason(open_request, KEYS, token, **{**good, key: wrong}) == reason
    # Everything wrong at once: the upstream is named first.
    everything = {"session": "x", "credential": "y", "upstream": "z"}
    assert _reason(open_request, KEYS, token, **everything) == "foreign-upstream"


@pytest.mark.parametrize("request_id", [True, None, 1.5, ["x"]])
def test_request_id_that_is_not_a_jsonrpc_id_is_invalid(request_id: Any) -> None:
    token = KEYS.seal(REQUEST, {"i": request_id, "s": "s", "p": CRED, "n": "docs"})
    assert _reason(open_request, KEYS, token, session="s", credential=CRED, upstream="docs") == (
        "invalid"
    )


def test_request_with_odd_mode_and_schema_opens_with_none() -> None:
    token = KEYS.seal(REQUEST, {"i": 1, "s": "s", "p": CRED, "n": "docs", "m": 3, "f": [1]})
    opened = open_request(KEYS, token, session="s", credential=CRED, upstream="docs")
    assert (opened.mode, opened.schema, opened.warned) == (None, None, False)


def test_request_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    now = time.time()
    token = seal_request(KEYS, REQUEST_CLAIMS)
    short = seal_request(KEYS, REQUEST_CLAIMS, ttl=-5)
    opened = {"session": "sess-digest", "credential": CRED, "upstream": "docs"}
    monkeypatch.setattr(time, "time", lambda: now + REQUEST_TTL - 60)
    assert open_request(KEYS, token, **opened) == REQUEST_CLAIMS  # a form left open for hours
    monkeypatch.setattr(time, "time", lambda: now + REQUEST_TTL + 60)
    assert _reason(open_request, KEYS, token, **opened) == "expired"
    monkeypatch.setattr(time, "time", lambda: now)
    assert _reason(open_request, KEYS, short, **opened) == "expired"


# -- gr1. request state ----------------------------------------------------------------------------


def test_state_round_trip() -> None:
    token = seal_state(KEYS, STATE_CLAIMS)
    assert token.startswith(STATE)
    assert "opaque" not in token
    opened = open_state(KEYS, token, expect=replace(STATE_CLAIMS, state=None, blocked=()))
    assert opened == STATE_CLAIMS
    assert opened.blocked == ("b", "a")  # the server's order


def test_state_absent_is_not_the_same_as_null() -> None:
    absent = replace(STATE_CLAIMS, has_state=False, state=None)
    null = replace(STATE_CLAIMS, has_state=True, state=None)
    assert open_state(KEYS, seal_state(KEYS, absent), expect=STATE_CLAIMS).has_state is False
    assert open_state(KEYS, seal_state(KEYS, null), expect=STATE_CLAIMS).has_state is True


@pytest.mark.parametrize(
    ("field", "wrong", "reason"),
    [
        ("upstream", "mail", "foreign-upstream"),
        ("credential", "someone-else", "foreign-credential"),
        ("method", "tools/list", "other-method"),
        ("target", "delete_everything", "other-target"),
        ("arguments", arguments_digest({"q": "y"}), "other-arguments"),
    ],
)
def test_state_is_bound_to_the_retried_request(field: str, wrong: str, reason: str) -> None:
    token = seal_state(KEYS, STATE_CLAIMS)
    change: dict[str, Any] = {field: wrong}
    assert _reason(open_state, KEYS, token, expect=replace(STATE_CLAIMS, **change)) == reason


@pytest.mark.parametrize(
    "payload",
    [
        {"b": "a", "f": {}},  # blocked keys not a list
        {"b": [], "f": []},  # schemas not an object
        {"f": {}},  # no blocked keys at all
    ],
)
def test_state_with_malformed_claims_is_invalid(payload: dict[str, Any]) -> None:
    binding = {"m": "tools/call", "t": "lookup", "a": STATE_CLAIMS.arguments, "p": CRED}
    token = KEYS.seal(STATE, {**binding, "n": "docs", **payload})
    assert _reason(open_state, KEYS, token, expect=STATE_CLAIMS) == "invalid"


def test_state_drops_schemas_that_are_not_objects() -> None:
    binding = {"m": "tools/call", "t": "lookup", "a": STATE_CLAIMS.arguments, "p": CRED}
    token = KEYS.seal(STATE, {**binding, "n": "docs", "b": [1], "f": {"a": {}, "b": "x"}})
    opened = open_state(KEYS, token, expect=STATE_CLAIMS)
    assert opened.schemas == {"a": {}}
    assert opened.blocked == ("1",)


def test_state_expires_after_its_default_lifetime(monkeypatch: pytest.MonkeyPatch) -> None:
    now = time.time()
    token = seal_state(KEYS, STATE_CLAIMS)
    monkeypatch.setattr(time, "time", lambda: now + STATE_TTL - 60)
    assert open_state(KEYS, token, expect=STATE_CLAIMS) == STATE_CLAIMS
    monkeypatch.setattr(time, "time", lambda: now + STATE_TTL + 60)
    assert _reason(open_state, KEYS, token, expect=STATE_CLAIMS) == "expired"


def test_state_lives_shorter_than_a_server_request() -> None:
    """A form may stay open for long; the retry of a 2026 request follows within the hour."""
    assert STATE_TTL < REQUEST_TTL


# -- purposes --------------------------------------------------------------------------------------


def test_the_three_prefixes_are_distinct() -> None:
    assert len({SESSION, REQUEST, STATE}) == 3


def test_a_token_never_opens_as_another_kind() -> None:
    """Even with the prefix swapped, a token sealed for one purpose is invalid for the others
    (each purpose has its own derived key)."""
    sealed = {
        SESSION: seal_session(KEYS, SESSION_CLAIMS),
        REQUEST: seal_request(KEYS, REQUEST_CLAIMS),
        STATE: seal_state(KEYS, STATE_CLAIMS),
    }
    openers = {
        SESSION: lambda t: open_session(KEYS, t, upstream="docs", credential=CRED),
        REQUEST: lambda t: open_request(
            KEYS, t, session="sess-digest", credential=CRED, upstream="docs"
        ),
        STATE: lambda t: open_state(KEYS, t, expect=STATE_CLAIMS),
    }
    for made, token in sealed.items():
        for kind, opener in openers.items():
            if kind == made:
                continue
            assert _reason(opener, token) == "invalid"
            assert _reason(opener, kind + token[len(made) :]) == "invalid"


def test_the_prefixes_are_the_wire_format() -> None:
    """Clients hold these tokens across replicas and upgrades: a changed prefix would turn
    every token in flight into ``invalid``."""
    assert tokens.REQUEST == "gq1."
    assert tokens.SESSION == "gs1."
    assert tokens.STATE == "gr1."


def test_state_tokens_carry_what_the_user_is_to_be_told() -> None:
    told = (("form", ("secret-field", "otp-field")), (None, ("oversize",)))
    token = seal_state(KEYS, replace(STATE_CLAIMS, told=told))
    assert open_state(KEYS, token, expect=STATE_CLAIMS).told == told
    # A token sealed without the claim (or with a malformed one) tells nothing.
    assert open_state(KEYS, seal_state(KEYS, STATE_CLAIMS), expect=STATE_CLAIMS).told == ()
    assert tokens._told([["url", "x"], 3, ["form", ["a"]]]) == (("form", ("a",)),)
