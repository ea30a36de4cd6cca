"""Acting on decisions, per carrier (sans-IO).

The relay hands every parsed message to an :class:`Enforcer` and carries out the outcome it
returns; nothing here touches a socket. Outcomes:

server → client (:meth:`Enforcer.server_message` → :class:`ServerOutcome`)
* handshake ``elicitation/create``: allow/warn → forwarded with its id replaced by a sealed
  ``gq1.`` token (warn also marks ``params._meta``); block → dropped, and the server is answered
  on the client's behalf (``replies``) with a decline (or cancel / an error, per policy).
* ``-32042``: blocked entries removed; none left → a JSON-RPC error naming the reasons.
* 2026 ``InputRequiredResult``: blocked entries removed and ``requestState`` replaced by a sealed
  ``gr1.`` token; if every entry is blocked the relay retries upstream itself (``retry``) or the
  call fails, per policy.
* ``notifications/elicitation/complete`` for an elicitation this process blocked → dropped.
* a handshake elicitation blocked only because the client did not declare its mode → answered
  with the JSON-RPC error a client answers itself (``-32602``, "Client does not support
  URL-mode elicitation requests"), so that the server falls back as it would without a gateway.

client → server (:meth:`Enforcer.client_message` → :class:`ClientOutcome`)
* a handshake answer to a ``gq1.`` id → token opened against the session, the upstream and the
  client's credential, the server's id restored; a second answer to the same token (through
  any worker of this gateway, ``gateway.enforce.replay``) → ``absorb``: the relay answers 202 and
  forwards nothing; an accepted form answer that violates the requested schema or carries a
  secret → replaced by a decline;
* a 2026 retry with a ``gr1.`` token → token verified against the retry, the server's exact state
  restored (or removed), a decline injected for every blocked key, accepted answers checked;
* an elicitation answer the gateway never asked for (a raw id, a 2026 retry without a ``gr1.``
  token, an input-response key it never forwarded) → checked as content without a schema: any
  content is declined (``schema-violation``, ``no-schema``) and scanned for secrets. Answers to
  other server requests (sampling, roots, ping) carry no ``action`` and pass unchanged.

Policy: one snapshot per exchange. The first use captures the current policy in
:attr:`Context.policy` (the relay sets it when the request arrives); every later decision of that
request, stream or gateway retry uses the same object, whatever a reload swapped in meanwhile.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gateway import errors
from gateway.audit.records import AuditSink, answer_record, decision_record
from gateway.carriers.extract import Carrier, Sighting, from_client, from_server
from gateway.detect.findings import Action, Decision, Finding, Reason
from gateway.enforce.answers import check_answer
from gateway.enforce.replay import AnsweredTable, shared_table
from gateway.enforce.seal import KeyRing, SealError, digest
from gateway.enforce.tokens import (
    REQUEST,
    REQUEST_TTL,
    STATE,
    STATE_TTL,
    RequestClaims,
    StateClaims,
    arguments_digest,
    open_request,
    open_state,
    seal_request,
    seal_state,
)
from gateway.policy.engine import decide, evaluate, warm_policy
from gateway.policy.loader import Policy
from gateway.wire.era import Era
from gateway.wire.jsonrpc import Message

WARNING_META_KEY: Final = "dev.elicitation-gateway/warning"
INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
# What a client answers for an elicitation in a mode it did not declare (spec 2025-11-25:
# -32602; the wording is the TypeScript SDK client's, the Python SDK client does not check).
UNSUPPORTED_MODE: Final = {
    "form": "Client does not support form-mode elicitation requests",
    "url": "Client does not support URL-mode elicitation requests",
}


@dataclass(slots=True)
class Context:
    """What the enforcer knows about one exchange (filled in by the relay)."""

    upstream: str
    era: Era
    modes: frozenset[str] | None  # declared elicitation modes; None = unknown (fail closed)
    credential: str  # digest of the client's credential
    session: str | None = None  # the upstream Mcp-Session-Id (restored from the sealed one)
    client: str | None = None
    request: Message | None = None  # the (upstream-facing) request this response answers
    transport: str = "json"  # json | post | get
    client_id: str | int | None = None  # the client's id when the gateway retried itself
    retry_id: str | None = None
    rounds: int = 0  # rounds the gateway retried itself
    policy: Policy | None = None  # the snapshot this exchange is judged by (set on first use)

    @property
    def session_digest(self) -> str:
        return digest(self.session or "")


@dataclass(slots=True)
class ServerOutcome:
    """``message`` None with ``drop`` False means: forward the original bytes unchanged."""

    message: dict[str, Any] | None = None
    drop: bool = False
    replies: list[dict[str, Any]] = field(default_factory=list)
    retry: dict[str, Any] | None = None

    @property
    def unchanged(self) -> bool:
        return self.message is None and not self.drop and self.retry is None


@dataclass(slots=True)
class ClientOutcome:
    """``message`` None, ``reject`` None and ``absorb`` False: forward unchanged.

    ``absorb``: the message was handled here (a replayed answer); the client gets what the MCP
    SDK server answers for a duplicate response, 202 with no body, and nothing is forwarded."""

    message: dict[str, Any] | None = None
    reject: tuple[int, int, str] | None = None  # (HTTP status, JSON-RPC code, message)
    absorb: bool = False


class _Recent:
    """A bounded set (LRU) of recently seen keys, per process."""

    def __init__(self, capacity: int = 65_536) -> None:
        self._data: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._capacity = capacity

    def add(self, key: tuple[str, str]) -> bool:
        """Add ``key``; return False when it was already there."""
        if key in self._data:
            self._data.move_to_end(key)
            return False
        self._data[key] = None
        if len(self._data) > self._capacity:
            self._data.popitem(last=False)
        return True

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._data


def warm_up(policy: Policy) -> None:
    """Load every detector's data and warm every detection configuration of ``policy`` before
    it takes traffic (one warm-up, the engine's: :func:`gateway.policy.engine.warm_policy`)."""
    warm_policy(policy)


class Enforcer:
    def __init__(
        self,
        keys: KeyRing,
        policy: Callable[[], Policy],
        audit: AuditSink,
        *,
        secret_scanner: Callable[[str, str], list[Finding]] | None = None,
        request_ttl: float = REQUEST_TTL,
        state_ttl: float = STATE_TTL,
        answered: AnsweredTable | None = None,
    ) -> None:
        self._request_ttl = request_ttl
        self._state_ttl = state_ttl
        self._keys = keys
        self._policy = policy
        self._audit = audit
        self._scan = secret_scanner
        self._answered = _Recent()  # (session digest, server request id) answered on behalf
        self._blocked_ids = _Recent()  # (session digest, elicitationId) blocked
        # Answered gq1. tokens: shared by the workers forked from this process (enforce/replay.py).
        self._answered_tokens = answered if answered is not None else shared_table()
        warm_up(policy())

    def policy(self) -> Policy:
        """The policy in force now (what a new exchange captures)."""
        return self._policy()

    def _policy_of(self, ctx: Context) -> Policy:
        """The exchange's policy snapshot, captured on first use."""
        if ctx.policy is None:
            ctx.policy = self._policy()
        return ctx.policy

    # -- decisions ------------------------------------------------------------------------

    def _decide(self, ctx: Context, s: Sighting, policy: Policy) -> Decision:
        started = time.perf_counter()
        decision = evaluate(
            s.params,
            modes=ctx.modes or frozenset(),
            server=ctx.upstream,
            policy=policy,
            era=ctx.era.value,
        )
        latency = (time.perf_counter() - started) * 1000.0
        self._audit(decision_record(ctx, s, decision, policy, latency))
        return decision

    def _mark(self, params: Any, decision: Decision) -> Any:
        if not isinstance(params, Mapping):
            return params
        marked = dict(params)
        meta = dict(marked["_meta"]) if isinstance(marked.get("_meta"), Mapping) else {}
        meta[WARNING_META_KEY] = {"action": "warn", "reasons": decision.reasons}
        marked["_meta"] = meta
        return marked

    def _maybe_mark(self, params: Any, decision: Decision, policy: Policy) -> Any:
        if decision.action is not Action.ALLOW and policy.enforcement.mark_warnings:
            return self._mark(params, decision)
        return params

    # -- server → client --------------------------------------------------------------------

    def server_message(self, ctx: Context, msg: Message) -> ServerOutcome:
        retry_id = ctx.retry_id
        outcome = self._server_message(ctx, msg)
        if retry_id is not None and msg.id == retry_id and not outcome.drop and not outcome.retry:
            # The answer to the gateway's own retry goes back under the client's id.
            answer = outcome.message if outcome.message is not None else dict(msg.obj)
            answer["id"] = ctx.client_id
            outcome.message = answer
        return outcome

    def _server_message(self, ctx: Context, msg: Message) -> ServerOutcome:
        sightings = from_server(msg)
        if not sightings:
            return ServerOutcome()
        policy = self._policy_of(ctx)
        carrier = sightings[0].carrier
        if carrier is Carrier.SERVER_REQUEST:
            return self._server_request(ctx, msg, sightings[0], policy)
        if carrier is Carrier.URL_REQUIRED_ERROR:
            return self._url_required(ctx, msg, sightings, policy)
        if carrier is Carrier.INPUT_REQUIRED:
            return self._input_required(ctx, msg, sightings, policy)
        if carrier is Carrier.COMPLETE:
            eid = sightings[0].elicitation_id or ""
            if (ctx.session_digest, eid) in self._blocked_ids:
                return ServerOutcome(drop=True)
        return ServerOutcome()

    def _block_reply(self, request_id: Any, decision: Decision, policy: Policy) -> dict[str, Any]:
        answer = policy.enforcement.block_response
        if answer == "error":
            return self._policy_error(request_id, decision.reasons)
        return {"jsonrpc": "2.0", "id": request_id, "result": {"action": answer}}

    @staticmethod
    def _unsupported_mode(
        ctx: Context, s: Sighting, decision: Decision, policy: Policy
    ) -> str | None:
        """The error message a client answers itself when the block is due to an undeclared
        mode alone (the client's modes are known, and no other finding blocks); else None."""
        if ctx.modes is None or s.mode not in UNSUPPORTED_MODE:
            return None
        if not any(f.reason is Reason.MODE_NOT_DECLARED for f in decision.findings):
            return None
        rest = [f for f in decision.findings if f.reason is not Reason.MODE_NOT_DECLARED]
        if decide(rest, policy, ctx.upstream).action is Action.BLOCK:
            return None
        return UNSUPPORTED_MODE[s.mode]

    def _server_request(
        self, ctx: Context, msg: Message, s: Sighting, policy: Policy
    ) -> ServerOutcome:
        decision = self._decide(ctx, s, policy)
        if decision.effective_action is Action.BLOCK:
            if s.elicitation_id is not None:
                self._blocked_ids.add((ctx.session_digest, s.elicitation_id))
            first = self._answered.add((ctx.session_digest, repr(msg.id)))
            unsupported = self._unsupported_mode(ctx, s, decision, policy)
            if not first:
                replies = []
            elif unsupported is not None:
                replies = [_error(msg.id, errors.INVALID_PARAMS, unsupported)]
            else:
                replies = [self._block_reply(msg.id, decision, policy)]
            return ServerOutcome(drop=True, replies=replies)
        params = msg.params if isinstance(msg.params, Mapping) else {}
        schema = params.get("requestedSchema") if s.mode == "form" else None
        token = seal_request(
            self._keys,
            RequestClaims(
                msg.id if msg.id is not None else "",
                ctx.session_digest,
                s.mode,
                schema if isinstance(schema, Mapping) else None,
                decision.action is not Action.ALLOW,
                ctx.credential,
                ctx.upstream,
            ),
            self._request_ttl,
        )
        new = dict(msg.obj)
        new["id"] = token
        new["params"] = self._maybe_mark(msg.params, decision, policy)
        return ServerOutcome(message=new)

    def _url_required(
        self, ctx: Context, msg: Message, sightings: list[Sighting], policy: Policy
    ) -> ServerOutcome:
        kept: list[Any] = []
        reasons: list[str] = []
        changed = False
        for s in sightings:
            decision = self._decide(ctx, s, policy)
            if decision.effective_action is Action.BLOCK:
                changed = True
                reasons.extend(decision.reasons)
                if s.elicitation_id is not None:
                    self._blocked_ids.add((ctx.session_digest, s.elicitation_id))
                continue
            marked = self._maybe_mark(s.params, decision, policy)
            changed = changed or marked is not s.params
            kept.append(marked)
        if not changed:
            return ServerOutcome()
        error = dict(msg.error or {})
        if kept:
            data = dict(error["data"]) if isinstance(error.get("data"), Mapping) else {}
            data["elicitations"] = kept
            error["data"] = data
        else:
            error = {
                "code": errors.GATEWAY_POLICY_BLOCKED,
                "message": "URL elicitation blocked by gateway policy",
                "data": {"reasons": list(dict.fromkeys(reasons))},
            }
        return ServerOutcome(message={"jsonrpc": "2.0", "id": msg.id, "error": error})

    def _input_required(
        self, ctx: Context, msg: Message, sightings: list[Sighting], policy: Policy
    ) -> ServerOutcome:
        result = dict(msg.result) if isinstance(msg.result, Mapping) else {}
        requests = result.get("inputRequests")
        decisions = {s.key: (s, self._decide(ctx, s, policy)) for s in sightings}
        if not isinstance(requests, Mapping):
            reasons = [r for _, d in decisions.values() for r in d.reasons]
            return ServerOutcome(message=self._policy_error(msg.id, reasons or ["malformed"]))
        blocked: list[str] = []
        schemas: dict[str, Mapping[str, Any]] = {}
        kept: dict[str, Any] = {}
        for key, entry in requests.items():
            pair = decisions.get(str(key))
            if pair is None:  # sampling / roots: not ours to judge
                kept[key] = entry
                continue
            s, decision = pair
            if decision.effective_action is Action.BLOCK:
                blocked.append(str(key))
                continue
            params = s.params if isinstance(s.params, Mapping) else {}
            schema = params.get("requestedSchema")
            if s.mode == "form" and isinstance(schema, Mapping):
                schemas[str(key)] = schema
            marked = dict(entry)
            marked["params"] = self._maybe_mark(s.params, decision, policy)
            kept[key] = marked
        request = ctx.request
        params = (
            request.params if request is not None and isinstance(request.params, Mapping) else {}
        )
        claims = StateClaims(
            has_state=result.get("requestState") is not None,
            state=result.get("requestState"),
            blocked=tuple(blocked),
            schemas=schemas,
            **_binding(ctx, request),
        )
        if not kept:
            reasons = [r for k in blocked for r in decisions[k][1].reasons]
            if policy.enforcement.all_blocked_round == "fail":
                return ServerOutcome(message=self._policy_error(msg.id, reasons))
            if ctx.rounds >= policy.enforcement.max_gateway_rounds or request is None:
                return ServerOutcome(message=self._policy_error(msg.id, reasons))
            return ServerOutcome(retry=self._retry(ctx, request, params, claims))
        result["inputRequests"] = kept
        result["requestState"] = seal_state(self._keys, claims, self._state_ttl)
        return ServerOutcome(message={"jsonrpc": "2.0", "id": msg.id, "result": result})

    def _retry(
        self, ctx: Context, request: Message, params: Mapping[str, Any], claims: StateClaims
    ) -> dict[str, Any]:
        """The retry the gateway performs itself when every input request was blocked."""
        new_params = {
            k: v for k, v in params.items() if k not in ("inputResponses", "requestState")
        }
        new_params["inputResponses"] = {k: {"action": "decline"} for k in claims.blocked}
        if claims.has_state:
            new_params["requestState"] = claims.state
        if ctx.client_id is None:
            ctx.client_id = request.id
        ctx.retry_id = f"gateway-retry-{uuid.uuid4().hex}"
        ctx.rounds += 1
        return {
            "jsonrpc": "2.0",
            "id": ctx.retry_id,
            "method": request.method,
            "params": new_params,
        }

    @staticmethod
    def _policy_error(request_id: Any, reasons: list[str]) -> dict[str, Any]:
        return _error(
            request_id,
            errors.GATEWAY_POLICY_BLOCKED,
            "Elicitation blocked by gateway policy",
            {"reasons": list(dict.fromkeys(reasons))},
        )

    # -- client → server --------------------------------------------------------------------

    def client_message(self, ctx: Context, msg: Message) -> ClientOutcome:
        if msg.kind in ("response", "error"):
            if isinstance(msg.id, str) and msg.id.startswith(REQUEST):
                return self._answer(ctx, msg)
            return self._unsealed_answer(ctx, msg)
        if msg.kind == "request" and isinstance(msg.params, Mapping):
            state = msg.params.get("requestState")
            if isinstance(state, str) and state.startswith(STATE):
                return self._retry_from_client(ctx, msg, state)
            if isinstance(msg.params.get("inputResponses"), Mapping):
                return self._unsealed_inputs(ctx, msg)
        return ClientOutcome()

    def _answer(self, ctx: Context, msg: Message) -> ClientOutcome:
        token = str(msg.id)
        try:
            claims = open_request(
                self._keys,
                token,
                session=ctx.session_digest,
                credential=ctx.credential,
                upstream=ctx.upstream,
            )
        except SealError as exc:
            self._audit(answer_record(ctx, "rejected", [], reason=exc.reason, answer_id="sealed"))
            return ClientOutcome(
                reject=(400, errors.INVALID_PARAMS, "Invalid or expired elicitation response id")
            )
        key = hashlib.sha256(f"{ctx.upstream}\0{token}".encode()).digest()
        if not self._answered_tokens.add(key, time.time() + self._request_ttl):
            # The server already has this answer (through this gateway, any worker): like the
            # MCP SDK server for a duplicate response, accept it and pass nothing on.
            self._audit(answer_record(ctx, "replayed", [], answer_id="sealed"))
            return ClientOutcome(absorb=True)
        new = dict(msg.obj)
        new["id"] = claims.request_id
        result = msg.result
        if msg.kind == "response" and isinstance(result, Mapping):
            schema = claims.schema if claims.mode == "form" else None
            findings = self._check_answer(ctx, result, schema, form=claims.mode == "form")
            if findings:
                new["result"] = {"action": "decline"}
                self._audit(answer_record(ctx, "declined-by-gateway", findings, answer_id="sealed"))
                return ClientOutcome(message=new)
        self._audit(answer_record(ctx, "forwarded", [], answer_id="sealed"))
        return ClientOutcome(message=new)

    def _unsealed_answer(self, ctx: Context, msg: Message) -> ClientOutcome:
        """A response whose id the gateway did not seal. Every elicitation the gateway forwards
        carries a ``gq1.`` id, so an ElicitResult-shaped answer (one with ``action``) answers
        nothing the user was shown through the gateway: it is checked as content without a
        schema. Answers to sampling, roots or ping carry no ``action`` and pass unchanged."""
        result = msg.result
        if msg.kind != "response" or not isinstance(result, Mapping) or "action" not in result:
            return ClientOutcome()
        findings = self._check_answer(ctx, result, None, form=False)
        if findings:
            new = dict(msg.obj)
            new["result"] = {"action": "decline"}
            self._audit(answer_record(ctx, "declined-by-gateway", findings, answer_id="raw"))
            return ClientOutcome(message=new)
        self._audit(answer_record(ctx, "forwarded", [], answer_id="raw"))
        return ClientOutcome()

    def _unsealed_inputs(self, ctx: Context, msg: Message) -> ClientOutcome:
        """A 2026 request carrying ``inputResponses`` without a ``gr1.`` token: the gateway
        seals the state of every round it forwards, so these answer nothing it let through.
        Elicitation answers are checked as content without a schema."""
        params = dict(msg.params) if isinstance(msg.params, Mapping) else {}
        responses = dict(params.get("inputResponses") or {})
        changed = False
        for key, answer in list(responses.items()):
            if not isinstance(answer, Mapping) or "action" not in answer:
                continue  # sampling / roots results: not elicitation answers
            findings = self._check_answer(ctx, answer, None, form=False)
            if findings:
                responses[key] = {"action": "decline"}
                changed = True
                self._audit(answer_record(ctx, "declined-by-gateway", findings, key=str(key)))
            else:
                self._audit(answer_record(ctx, "forwarded", [], key=str(key)))
        if not changed:
            return ClientOutcome()
        params["inputResponses"] = responses
        new = dict(msg.obj)
        new["params"] = params
        return ClientOutcome(message=new)

    def _check_answer(
        self,
        ctx: Context,
        answer: Mapping[str, Any],
        schema: Mapping[str, Any] | None,
        *,
        form: bool,
    ) -> list[Finding]:
        """Findings for one ElicitResult-shaped answer.

        An accepted answer to a form (``form``) must match its requested ``schema``. Any other
        answer (URL mode, decline, cancel, an answer to nothing the gateway forwarded) must
        carry no content: content there matches no schema (``no-schema``). Strings are scanned
        for secrets in every case."""
        content = answer.get("content")
        if not (form and answer.get("action") == "accept") and content in (None, {}):
            return []
        if not (form and answer.get("action") == "accept"):
            schema = None
        outbound = self._policy_of(ctx).enforcement.outbound
        findings: list[Finding] = []
        if outbound.validate_content or outbound.scan_secrets:
            scan = self._scan if outbound.scan_secrets else None
            findings = check_answer(schema, content, scan)
            if not outbound.validate_content:
                findings = [f for f in findings if f.reason is not Reason.SCHEMA_VIOLATION]
        return findings

    def _retry_from_client(self, ctx: Context, msg: Message, token: str) -> ClientOutcome:
        try:
            claims = open_state(
                self._keys,
                token,
                expect=StateClaims(False, None, (), {}, **_binding(ctx, msg)),
            )
        except SealError as exc:
            self._audit(answer_record(ctx, "state-rejected", [], reason=exc.reason))
            return ClientOutcome(
                reject=(400, errors.INVALID_PARAMS, "Invalid or expired gateway request state")
            )
        params = dict(msg.params) if isinstance(msg.params, Mapping) else {}
        if claims.has_state:
            params["requestState"] = claims.state
        else:
            params.pop("requestState", None)
        given = params.get("inputResponses")
        responses = dict(given) if isinstance(given, Mapping) else {}
        for s in from_client(msg):
            if s.key is None or s.key in claims.blocked:
                continue
            answer = responses.get(s.key)
            schema = claims.schemas.get(s.key)
            if isinstance(answer, Mapping) and "action" in answer:
                findings = self._check_answer(ctx, answer, schema, form=schema is not None)
                if findings:
                    responses[s.key] = {"action": "decline"}
                    self._audit(answer_record(ctx, "declined-by-gateway", findings, key=s.key))
                    continue
            self._audit(answer_record(ctx, "forwarded", [], key=s.key))
        for key in claims.blocked:
            responses[key] = {"action": "decline"}
        params["inputResponses"] = responses
        new = dict(msg.obj)
        new["params"] = params
        return ClientOutcome(message=new)


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _binding(ctx: Context, request: Message | None) -> dict[str, str]:
    """What a 2026 request-state token is bound to."""
    params = request.params if request is not None and isinstance(request.params, Mapping) else {}
    method = request.method or "" if request is not None else ""
    target = params.get("uri") if method == "resources/read" else params.get("name")
    return {
        "method": method,
        "target": target if isinstance(target, str) else "",
        "arguments": arguments_digest(params.get("arguments")),
        "credential": ctx.credential,
        "upstream": ctx.upstream,
    }
