"""The three sealed tokens the gateway hands to clients (sans-IO), so that no replica keeps state.

* ``gs1.`` session id: wraps the upstream ``Mcp-Session-Id`` with the client's declared modes,
  the upstream name, the client's name and a digest of its credential. Every later request of the
  session carries it; any replica reads the modes from it and restores the upstream id.
* ``gq1.`` server-request id: replaces the id of a handshake ``elicitation/create`` the gateway
  forwards. Bound to the upstream session, the upstream and the client's credential digest. The
  client answers with it; any replica restores the server's id and validates the answer against
  the requested schema it carries. A token opens any number of times: refusing a second answer
  is the enforcer's job (a per-process set of answered tokens, see ``gateway.enforce.enforcer``).
* ``gr1.`` request state: replaces a 2026 ``requestState``. Carries the server's exact state (or
  its absence), the input-request keys the gateway blocked, the schemas of the forms it let
  through, and a binding to the request (method, target, arguments digest, credential digest,
  upstream). On the retry any replica restores the state and answers the blocked keys.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gateway.enforce.seal import KeyRing, canonical_json, digest
from gateway.errors import SealError

SESSION: Final = "gs1."
REQUEST: Final = "gq1."
STATE: Final = "gr1."

REQUEST_TTL: Final = 24 * 3600.0  # a user may leave a form open for a long time
STATE_TTL: Final = 3600.0


@functools.lru_cache(maxsize=4096)
def credential_digest(authorization: str | None) -> str:
    """Binding of tokens to the client's credential (the ``Authorization`` header value).

    Cached: a client sends the same credential on every request (and most send none)."""
    return digest(authorization or "")


def arguments_digest(arguments: Any) -> str:
    return digest(canonical_json(arguments if arguments is not None else {}))


@dataclass(frozen=True, slots=True)
class SessionClaims:
    upstream_session: str
    upstream: str
    modes: frozenset[str]
    client: str | None
    credential: str


def seal_session(keys: KeyRing, claims: SessionClaims) -> str:
    return keys.seal(
        SESSION,
        {
            "u": claims.upstream_session,
            "n": claims.upstream,
            "m": sorted(claims.modes),
            "c": claims.client,
            "p": claims.credential,
        },
    )


def open_session(keys: KeyRing, token: str, *, upstream: str, credential: str) -> SessionClaims:
    """Raises SealError (``invalid``, ``foreign-upstream``, ``foreign-credential``)."""
    data = keys.open(SESSION, token)
    if data.get("n") != upstream:
        raise SealError("foreign-upstream")
    if data.get("p") != credential:
        raise SealError("foreign-credential")
    modes = data.get("m")
    client = data.get("c")
    if not isinstance(data.get("u"), str) or not isinstance(modes, list):
        raise SealError("invalid")
    return SessionClaims(
        data["u"],
        upstream,
        frozenset(str(m) for m in modes),
        client if isinstance(client, str) else None,
        credential,
    )


@dataclass(frozen=True, slots=True)
class RequestClaims:
    request_id: str | int
    session: str  # digest of the upstream session id
    mode: str | None
    schema: Mapping[str, Any] | None  # requestedSchema of a form, for outbound validation
    warned: bool = False
    credential: str = ""  # digest of the client's credential (the Authorization header)
    upstream: str = ""  # the upstream's name


def seal_request(keys: KeyRing, claims: RequestClaims, ttl: float = REQUEST_TTL) -> str:
    return keys.seal(
        REQUEST,
        {
            "i": claims.request_id,
            "s": claims.session,
            "m": claims.mode,
            "f": claims.schema,
            "w": claims.warned,
            "p": claims.credential,
            "n": claims.upstream,
        },
        ttl=ttl,
    )


def open_request(
    keys: KeyRing, token: str, *, session: str, credential: str, upstream: str
) -> RequestClaims:
    """Open a ``gq1.`` token answered in ``session`` (digest) by a client presenting
    ``credential`` (digest) to ``upstream``. Raises SealError (``invalid``, ``expired``,
    ``foreign-upstream``, ``foreign-session``, ``foreign-credential``)."""
    data = keys.open(REQUEST, token)
    if data.get("n") != upstream:
        raise SealError("foreign-upstream")
    if data.get("s") != session:
        raise SealError("foreign-session")
    if data.get("p") != credential:
        raise SealError("foreign-credential")
    request_id = data.get("i")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        raise SealError("invalid")
    schema = data.get("f")
    mode = data.get("m")
    return RequestClaims(
        request_id,
        session,
        mode if isinstance(mode, str) else None,
        schema if isinstance(schema, Mapping) else None,
        bool(data.get("w")),
        credential,
        upstream,
    )


@dataclass(frozen=True, slots=True)
class StateClaims:
    has_state: bool
    state: Any  # the server's requestState exactly as it sent it (only when has_state)
    blocked: tuple[str, ...]
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    method: str = ""
    target: str = ""
    arguments: str = ""
    credential: str = ""
    upstream: str = ""
    # What the call's result is to tell the user (gateway.enforce.notice): (mode, reason codes)
    # of every notice-worthy block of this call's rounds so far.
    told: tuple[tuple[str | None, tuple[str, ...]], ...] = ()


def seal_state(keys: KeyRing, claims: StateClaims, ttl: float = STATE_TTL) -> str:
    return keys.seal(
        STATE,
        {
            "h": claims.has_state,
            "s": claims.state,
            "b": list(claims.blocked),
            "f": dict(claims.schemas),
            "m": claims.method,
            "t": claims.target,
            "a": claims.arguments,
            "p": claims.credential,
            "n": claims.upstream,
            "r": [[mode, list(codes)] for mode, codes in claims.told],
        },
        ttl=ttl,
    )


def open_state(keys: KeyRing, token: str, *, expect: StateClaims) -> StateClaims:
    """Open a ``gr1.`` token and check its binding against ``expect`` (method, target,
    arguments, credential and upstream of the retry). Raises SealError with the reason."""
    data = keys.open(STATE, token)
    for key, reason, wanted in (
        ("n", "foreign-upstream", expect.upstream),
        ("p", "foreign-credential", expect.credential),
        ("m", "other-method", expect.method),
        ("t", "other-target", expect.target),
        ("a", "other-arguments", expect.arguments),
    ):
        if data.get(key) != wanted:
            raise SealError(reason)
    blocked = data.get("b")
    schemas = data.get("f")
    if not isinstance(blocked, list) or not isinstance(schemas, dict):
        raise SealError("invalid")
    return StateClaims(
        has_state=bool(data.get("h")),
        state=data.get("s"),
        blocked=tuple(str(k) for k in blocked),
        schemas={str(k): v for k, v in schemas.items() if isinstance(v, Mapping)},
        method=expect.method,
        target=expect.target,
        arguments=expect.arguments,
        credential=expect.credential,
        upstream=expect.upstream,
        told=_told(data.get("r")),
    )


def _told(value: Any) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
    """The ``told`` claim (absent from tokens sealed before it existed: nothing to tell)."""
    if not isinstance(value, list):
        return ()
    out: list[tuple[str | None, tuple[str, ...]]] = []
    for item in value:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
            mode = item[0] if isinstance(item[0], str) else None
            out.append((mode, tuple(str(c) for c in item[1])))
    return tuple(out)
