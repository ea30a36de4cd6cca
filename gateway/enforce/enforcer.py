"""Acting on decisions, per carrier (sans-IO): :meth:`Enforcer.process`.

``process(message, exchange, policy) -> (Outcome, events)`` takes one parsed message, the frozen
:class:`~gateway.enforce.exchange.Exchange` it belongs to and the exchange's policy snapshot; it
scans the message for elicitations once, decides, and returns what to do
(:class:`~gateway.enforce.outcome.Outcome`) and the audit events to log
(:mod:`gateway.audit.events`: one ``elicitation.decision`` per elicitation, written when it is
decided; one ``elicitation.answer`` per answer; one ``elicitation.complete`` per completion
notification). It does no I/O and mutates none of its
inputs; what the relay must remember (the gateway's own retry) comes back in the outcome. The
enforcer's only state is its memory across exchanges, kept here because it is about the
protocol, not the transport: server requests already answered on the client's behalf, blocked
elicitation ids (per process), answered ``gq1.`` tokens (shared by the workers).

server → client
* handshake ``elicitation/create``: allow/warn → forwarded with its id replaced by a sealed
  ``gq1.`` token (warn also marks ``params._meta``); block → dropped, and the server is answered
  on the client's behalf (``replies``) with a decline (or cancel / an error, per policy).
* ``-32042``: blocked entries removed; none left → a JSON-RPC error naming the reasons.
* 2026 ``InputRequiredResult``: blocked entries removed and ``requestState`` replaced by a sealed
  ``gr1.`` token; if every entry is blocked the gateway retries upstream itself (``retry``) or
  the call fails, per policy.
* ``notifications/elicitation/complete`` for an elicitation this process blocked → dropped.
* a handshake elicitation blocked only because the client did not declare its mode → answered
  with the JSON-RPC error a client answers itself (``-32602``, "Client does not support
  URL-mode elicitation requests"), so that the server falls back as it would without a gateway.

client → server
* a handshake answer to a ``gq1.`` id → token opened against the session, the upstream and the
  client's credential, the server's id restored; a second answer to the same token (through
  any worker of this gateway, ``gateway.enforce.replay``) → ``absorb``: the relay answers 202 and
  forwards nothing; an accepted form answer that violates the requested schema or carries a
  secret → replaced by a decline; a token that does not open → ``fail`` (400 ``-32602``);
* a 2026 retry with a ``gr1.`` token → token verified against the retry, the server's exact state
  restored (or removed), a decline injected for every blocked key, accepted answers checked;
* an elicitation answer the gateway never asked for (a raw id, a 2026 retry without a ``gr1.``
  token, an input-response key it never forwarded) → checked as content without a schema: any
  content is declined (``schema-violation``, ``no-schema``) and scanned for secrets. Answers to
  other server requests (sampling, roots, ping) carry no ``action`` and pass unchanged.

Policy: one snapshot per exchange. The relay captures the policy in force when a request
arrives and passes that object for every message of the request, its stream and the gateway's
retries, whatever a reload swapped in meanwhile.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypedDict

from gateway import errors
from gateway.audit.events import Event
from gateway.audit.records import (
    answer_record,
    complete_record,
    decision_record,
    detector_failed_record,
    new_decision_id,
)
from gateway.carriers.extract import Carrier, Sighting, from_client, from_server
from gateway.detect.findings import Action, Decision, Finding, Reason
from gateway.enforce.answers import check_answer
from gateway.enforce.exchange import Direction, Exchange
from gateway.enforce.notice import Blocked, log_message, notice_text, with_notice, worth_telling
from gateway.enforce.outcome import FORWARD, Outcome, Retry
from gateway.enforce.replay import AnsweredTable, shared_table
from gateway.enforce.seal import KeyRing
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
from gateway.errors import ClientProtocolError, SealError
from gateway.policy.engine import decide, evaluate
from gateway.policy.loader import Policy
from gateway.wire.jsonrpc import Message

WARNING_META_KEY: Final = "dev.elicitation-gateway/warning"
# What a client answers for an elicitation in a mode it did not declare (spec 2025-11-25:
# -32602; the wording is the TypeScript SDK client's, the Python SDK client does not check).
UNSUPPORTED_MODE: Final = {
    "form": "Client does not support form-mode elicitation requests",
    "url": "Client does not support URL-mode elicitation requests",
}
SecretScanner = Callable[[str, str], list[Finding]]


def scan_secrets(text: str, path: str) -> list[Finding]:
    """The detectors' secret scanner (imported on first use: its data is heavy)."""
    from gateway.detect.secrets import scan_secrets as scan  # noqa: PLC0415

    return scan(text, path)


@dataclass(slots=True)
class _Job:
    """One call of :meth:`Enforcer.process`: its inputs and the events it collects."""

    x: Exchange
    policy: Policy
    events: list[Event] = field(default_factory=list)


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


def _reject(message: str) -> Outcome:
    return Outcome(fail=ClientProtocolError(message, jsonrpc_code=errors.INVALID_PARAMS))


class Enforcer:
    def __init__(
        self,
        keys: KeyRing,
        *,
        secret_scanner: SecretScanner = scan_secrets,
        request_ttl: float = REQUEST_TTL,
        state_ttl: float = STATE_TTL,
        answered: AnsweredTable | None = None,
    ) -> None:
        """``secret_scanner`` scans outbound answers when the policy asks for it
        (``enforcement.outbound.scan_secrets``); the detectors' scanner unless replaced (there
        is no way to switch scanning off here: that is the policy's call)."""
        self._request_ttl = request_ttl
        self._state_ttl = state_ttl
        self._keys = keys
        self._scan = secret_scanner
        self._answered = _Recent()  # (session digest, server request id) answered on behalf
        self._blocked_ids = _Recent()  # (session digest, elicitationId) blocked
        # Answered gq1. tokens: shared by the workers forked from this process (enforce/replay.py).
        self._answered_tokens = answered if answered is not None else shared_table()

    def process(
        self, message: Message, exchange: Exchange, policy: Policy
    ) -> tuple[Outcome, list[Event]]:
        """Decide what happens to ``message`` (see the module docstring)."""
        job = _Job(exchange, policy)
        if exchange.direction is Direction.CLIENT:
            sightings = from_client(message, answer_ids=REQUEST)
            outcome = self._client_message(job, message, sightings)
        else:
            sightings = from_server(message)
            outcome = self._server_message(job, message, sightings)
        return outcome, job.events

    # -- decisions ------------------------------------------------------------------------

    def _decide(self, job: _Job, s: Sighting) -> Decision:
        x = job.x
        started = time.perf_counter()
        decision = evaluate(
            s.params,
            modes=x.modes or frozenset(),
            server=x.upstream,
            policy=job.policy,
            era=x.era.value,
        )
        latency = (time.perf_counter() - started) * 1000.0
        decision_id = new_decision_id()
        job.events.append(
            decision_record(x, s, decision, job.policy, latency, decision_id=decision_id)
        )
        for f in decision.findings:
            if f.reason is Reason.INTERNAL_ERROR and f.path == "$":
                # A detector raised: the engine blocked (fail closed); say so, without values.
                job.events.append(
                    detector_failed_record(x, s, f.detail, job.policy, decision_id=decision_id)
                )
        return decision

    @staticmethod
    def _mark(params: Any, decision: Decision) -> Any:
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

    def _server_message(self, job: _Job, msg: Message, sightings: list[Sighting]) -> Outcome:
        outcome = self._judge_server(job, msg, sightings) if sightings else FORWARD
        x = job.x
        if (
            x.retry_id is not None
            and msg.id == x.retry_id
            and not outcome.drop
            and not outcome.retry
        ):
            # The answer to the gateway's own retry goes back under the client's id.
            answer = dict(outcome.message if outcome.message is not None else msg.obj)
            answer["id"] = x.request_id
            outcome = replace(outcome, message=answer)
        return self._tell(job, msg, outcome)

    @staticmethod
    def _tell(job: _Job, msg: Message, outcome: Outcome) -> Outcome:
        """Tell the user why (``notify_user``, ``gateway.enforce.notice``): the call's final
        result gets the notice in its ``content`` (else, on a stream, a ``notifications/message``
        goes before it); a block on a GET stream, where no result follows, gets the warning in
        its place. A 2026 round answered with entries left is not the end: the client retries
        in a call of its own, and the ``gr1.`` token carries the blocks to that call's result.
        Without ``notify_user`` no block is recorded at all."""
        if not job.policy.spec.notify_user:
            return replace(outcome, blocked=()) if outcome.blocked else outcome
        x = job.x
        blocked = x.blocked + outcome.blocked
        result = msg.result if isinstance(msg.result, Mapping) else {}
        final = (
            msg.kind in ("response", "error")
            and x.request_id is not None
            and msg.id in (x.request_id, x.retry_id)
            and outcome.retry is None
            and not outcome.drop
            and result.get("resultType") != "input_required"
        )
        if final and blocked:
            text = notice_text(x.upstream, blocked)
            told = with_notice(outcome.message if outcome.message is not None else msg.obj, text)
            if told is not None:
                return replace(outcome, message=told)
            if x.transport in ("post", "get"):
                return replace(outcome, notice=log_message(text))
            return outcome
        if outcome.blocked and x.transport == "get":
            # No result follows on a GET stream: a warning in place of the swallowed request
            # (told now, so nothing is left for the stream to remember).
            text = notice_text(x.upstream, outcome.blocked)
            return replace(outcome, notice=log_message(text), blocked=())
        return outcome

    def _judge_server(self, job: _Job, msg: Message, sightings: list[Sighting]) -> Outcome:
        carrier = sightings[0].carrier
        if carrier is Carrier.SERVER_REQUEST:
            return self._server_request(job, msg, sightings[0])
        if carrier is Carrier.URL_REQUIRED_ERROR:
            return self._url_required(job, msg, sightings)
        if carrier is Carrier.INPUT_REQUIRED:
            return self._input_required(job, msg, sightings)
        if carrier is Carrier.COMPLETE:
            eid = sightings[0].elicitation_id or ""
            dropped = (job.x.session_digest, eid) in self._blocked_ids
            job.events.append(complete_record(job.x, sightings[0], dropped=dropped))
            if dropped:
                return Outcome(drop=True)
        return FORWARD

    def _block_reply(self, request_id: Any, decision: Decision, policy: Policy) -> dict[str, Any]:
        answer = policy.enforcement.block_response
        if answer == "error":
            return _policy_error(request_id, decision.reasons)
        return {"jsonrpc": "2.0", "id": request_id, "result": {"action": answer}}

    @staticmethod
    def _unsupported_mode(job: _Job, s: Sighting, decision: Decision) -> str | None:
        """The error message a client answers itself when the block is due to an undeclared
        mode alone (the client's modes are known, and no other finding blocks); else None."""
        if job.x.modes is None or s.mode not in UNSUPPORTED_MODE:
            return None
        if not any(f.reason is Reason.MODE_NOT_DECLARED for f in decision.findings):
            return None
        rest = [f for f in decision.findings if f.reason is not Reason.MODE_NOT_DECLARED]
        if decide(rest, job.policy, job.x.upstream).action is Action.BLOCK:
            return None
        return UNSUPPORTED_MODE[s.mode]

    def _server_request(self, job: _Job, msg: Message, s: Sighting) -> Outcome:
        x = job.x
        decision = self._decide(job, s)
        if decision.effective_action is Action.BLOCK:
            if s.elicitation_id is not None:
                self._blocked_ids.add((x.session_digest, s.elicitation_id))
            first = self._answered.add((x.session_digest, repr(msg.id)))
            unsupported = self._unsupported_mode(job, s, decision)
            if not first:
                replies: tuple[dict[str, Any], ...] = ()
            elif unsupported is not None:
                replies = (_error(msg.id, errors.INVALID_PARAMS, unsupported),)
            else:
                replies = (self._block_reply(msg.id, decision, job.policy),)
            tell = first and worth_telling(decision.reasons, mode_only=unsupported is not None)
            blocked = (Blocked(s.mode, tuple(decision.reasons)),) if tell else ()
            return Outcome(drop=True, replies=replies, blocked=blocked)
        params = msg.params if isinstance(msg.params, Mapping) else {}
        schema = params.get("requestedSchema") if s.mode == "form" else None
        token = seal_request(
            self._keys,
            RequestClaims(
                msg.id if msg.id is not None else "",
                x.session_digest,
                s.mode,
                schema if isinstance(schema, Mapping) else None,
                decision.action is not Action.ALLOW,
                x.credential,
                x.upstream,
            ),
            self._request_ttl,
        )
        new = dict(msg.obj)
        new["id"] = token
        new["params"] = self._maybe_mark(msg.params, decision, job.policy)
        return Outcome(message=new)

    def _url_required(self, job: _Job, msg: Message, sightings: list[Sighting]) -> Outcome:
        kept: list[Any] = []
        reasons: list[str] = []
        told: list[Blocked] = []
        changed = False
        for s in sightings:
            decision = self._decide(job, s)
            if decision.effective_action is Action.BLOCK:
                changed = True
                reasons.extend(decision.reasons)
                if worth_telling(decision.reasons):
                    told.append(Blocked(s.mode, tuple(decision.reasons)))
                if s.elicitation_id is not None:
                    self._blocked_ids.add((job.x.session_digest, s.elicitation_id))
                continue
            marked = self._maybe_mark(s.params, decision, job.policy)
            changed = changed or marked is not s.params
            kept.append(marked)
        if not changed:
            return FORWARD
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
        message = {"jsonrpc": "2.0", "id": msg.id, "error": error}
        return Outcome(message=message, blocked=tuple(told))

    def _input_required(self, job: _Job, msg: Message, sightings: list[Sighting]) -> Outcome:
        x, policy = job.x, job.policy
        result = dict(msg.result) if isinstance(msg.result, Mapping) else {}
        requests = result.get("inputRequests")
        decisions = {s.key: (s, self._decide(job, s)) for s in sightings}
        if not isinstance(requests, Mapping):
            reasons = [r for _, d in decisions.values() for r in d.reasons]
            return Outcome(message=_policy_error(msg.id, reasons or ["malformed"]))
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
        told = tuple(
            Blocked(decisions[k][0].mode, tuple(decisions[k][1].reasons))
            for k in blocked
            if worth_telling(decisions[k][1].reasons)
        )
        request = x.request
        claims = StateClaims(
            has_state=result.get("requestState") is not None,
            state=result.get("requestState"),
            blocked=tuple(blocked),
            schemas=schemas,
            **_binding(x, request),
            # The client answers what is left in a call of its own: its result tells the user.
            told=tuple((b.mode, b.reasons) for b in x.blocked + told),
        )
        if not kept:
            reasons = [r for k in blocked for r in decisions[k][1].reasons]
            if policy.enforcement.all_blocked_round == "fail":
                return Outcome(message=_policy_error(msg.id, reasons), blocked=told)
            if x.rounds >= policy.enforcement.max_gateway_rounds or request is None:
                return Outcome(message=_policy_error(msg.id, reasons), blocked=told)
            return Outcome(retry=_retry(x, request, claims), blocked=told)
        result["inputRequests"] = kept
        result["requestState"] = seal_state(self._keys, claims, self._state_ttl)
        message = {"jsonrpc": "2.0", "id": msg.id, "result": result}
        return Outcome(message=message, blocked=told)

    # -- client → server --------------------------------------------------------------------

    def _client_message(self, job: _Job, msg: Message, sightings: list[Sighting]) -> Outcome:
        if msg.kind in ("response", "error"):
            answer = sightings[0] if sightings else None
            if isinstance(msg.id, str) and msg.id.startswith(REQUEST):
                return self._answer(job, msg, answer)
            return self._unsealed_answer(job, msg, answer)
        if msg.kind == "request" and isinstance(msg.params, Mapping):
            state = msg.params.get("requestState")
            if isinstance(state, str) and state.startswith(STATE):
                return self._retry_from_client(job, msg, state, sightings)
            if isinstance(msg.params.get("inputResponses"), Mapping):
                return self._unsealed_inputs(job, msg, sightings)
        return FORWARD

    def _answer(self, job: _Job, msg: Message, s: Sighting | None) -> Outcome:
        x = job.x
        token = str(msg.id)
        try:
            claims = open_request(
                self._keys,
                token,
                session=x.session_digest,
                credential=x.credential,
                upstream=x.upstream,
            )
        except SealError as exc:
            job.events.append(
                answer_record(x, "rejected", [], s, reason=exc.reason, answer_id="sealed")
            )
            return _reject("Invalid or expired elicitation response id")
        key = hashlib.sha256(f"{x.upstream}\0{token}".encode()).digest()
        if not self._answered_tokens.add(key, time.time() + self._request_ttl):
            # The server already has this answer (through this gateway, any worker): like the
            # MCP SDK server for a duplicate response, accept it and pass nothing on.
            job.events.append(answer_record(x, "replayed", [], s, answer_id="sealed"))
            return Outcome(absorb=True)
        new = dict(msg.obj)
        new["id"] = claims.request_id
        result = msg.result
        if msg.kind == "response" and isinstance(result, Mapping):
            schema = claims.schema if claims.mode == "form" else None
            findings = self._check_answer(job, result, schema, form=claims.mode == "form")
            if findings:
                new["result"] = {"action": "decline"}
                job.events.append(
                    answer_record(x, "declined-by-gateway", findings, s, answer_id="sealed")
                )
                return Outcome(message=new)
        job.events.append(answer_record(x, "forwarded", [], s, answer_id="sealed"))
        return Outcome(message=new)

    def _unsealed_answer(self, job: _Job, msg: Message, s: Sighting | None) -> Outcome:
        """A response whose id the gateway did not seal. Every elicitation the gateway forwards
        carries a ``gq1.`` id, so an ElicitResult-shaped answer (one with ``action``) answers
        nothing the user was shown through the gateway: it is checked as content without a
        schema. Answers to sampling, roots or ping carry no ``action`` and pass unchanged."""
        result = msg.result
        if msg.kind != "response" or not isinstance(result, Mapping) or "action" not in result:
            return FORWARD
        findings = self._check_answer(job, result, None, form=False)
        if findings:
            new = dict(msg.obj)
            new["result"] = {"action": "decline"}
            job.events.append(
                answer_record(job.x, "declined-by-gateway", findings, s, answer_id="raw")
            )
            return Outcome(message=new)
        job.events.append(answer_record(job.x, "forwarded", [], s, answer_id="raw"))
        return FORWARD

    def _unsealed_inputs(self, job: _Job, msg: Message, sightings: list[Sighting]) -> Outcome:
        """A 2026 request carrying ``inputResponses`` without a ``gr1.`` token: the gateway
        seals the state of every round it forwards, so these answer nothing it let through.
        Elicitation answers are checked as content without a schema."""
        params = dict(msg.params) if isinstance(msg.params, Mapping) else {}
        responses = dict(params.get("inputResponses") or {})
        found = {s.key: s for s in sightings}
        changed = False
        for key, answer in list(responses.items()):
            if not isinstance(answer, Mapping) or "action" not in answer:
                continue  # sampling / roots results: not elicitation answers
            findings = self._check_answer(job, answer, None, form=False)
            if findings:
                responses[key] = {"action": "decline"}
                changed = True
                job.events.append(
                    answer_record(job.x, "declined-by-gateway", findings, found.get(str(key)))
                )
            else:
                job.events.append(answer_record(job.x, "forwarded", [], found.get(str(key))))
        if not changed:
            return FORWARD
        params["inputResponses"] = responses
        new = dict(msg.obj)
        new["params"] = params
        return Outcome(message=new)

    def _check_answer(
        self,
        job: _Job,
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
        outbound = job.policy.enforcement.outbound
        findings: list[Finding] = []
        if outbound.validate_content or outbound.scan_secrets:
            scan = self._scan if outbound.scan_secrets else None
            findings = check_answer(schema, content, scan)
            if not outbound.validate_content:
                findings = [f for f in findings if f.reason is not Reason.SCHEMA_VIOLATION]
        return findings

    def _retry_from_client(
        self, job: _Job, msg: Message, token: str, sightings: list[Sighting]
    ) -> Outcome:
        x = job.x
        try:
            claims = open_state(
                self._keys,
                token,
                expect=StateClaims(False, None, (), {}, **_binding(x, msg)),
            )
        except SealError as exc:
            job.events.append(answer_record(x, "state-rejected", [], reason=exc.reason))
            return _reject("Invalid or expired gateway request state")
        params = dict(msg.params) if isinstance(msg.params, Mapping) else {}
        if claims.has_state:
            params["requestState"] = claims.state
        else:
            params.pop("requestState", None)
        given = params.get("inputResponses")
        responses = dict(given) if isinstance(given, Mapping) else {}
        for s in sightings:
            if s.key is None or s.key in claims.blocked:
                continue
            answer = responses.get(s.key)
            schema = claims.schemas.get(s.key)
            if isinstance(answer, Mapping) and "action" in answer:
                findings = self._check_answer(job, answer, schema, form=schema is not None)
                if findings:
                    responses[s.key] = {"action": "decline"}
                    job.events.append(answer_record(x, "declined-by-gateway", findings, s))
                    continue
            job.events.append(answer_record(x, "forwarded", [], s))
        for key in claims.blocked:
            responses[key] = {"action": "decline"}
        params["inputResponses"] = responses
        new = dict(msg.obj)
        new["params"] = params
        told = tuple(Blocked(mode, codes) for mode, codes in claims.told)
        return Outcome(message=new, blocked=told if job.policy.spec.notify_user else ())


def _retry(x: Exchange, request: Message, claims: StateClaims) -> Retry:
    """The retry the gateway performs itself when every input request was blocked, and the
    exchange its answer belongs to."""
    params = request.params if isinstance(request.params, Mapping) else {}
    new_params = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
    new_params["inputResponses"] = {k: {"action": "decline"} for k in claims.blocked}
    if claims.has_state:
        new_params["requestState"] = claims.state
    retry_id = f"gateway-retry-{uuid.uuid4().hex}"
    message = {"jsonrpc": "2.0", "id": retry_id, "method": request.method, "params": new_params}
    client_id = x.request_id if x.request_id is not None else request.id
    return Retry(message, replace(x, request_id=client_id, retry_id=retry_id, rounds=x.rounds + 1))


def _policy_error(request_id: Any, reasons: list[str]) -> dict[str, Any]:
    return _error(
        request_id,
        errors.GATEWAY_POLICY_BLOCKED,
        "Elicitation blocked by gateway policy",
        {"reasons": list(dict.fromkeys(reasons))},
    )


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class _Binding(TypedDict):
    method: str
    target: str
    arguments: str
    credential: str
    upstream: str


def _binding(x: Exchange, request: Message | None) -> _Binding:
    """What a 2026 request-state token is bound to."""
    params = request.params if request is not None and isinstance(request.params, Mapping) else {}
    method = request.method or "" if request is not None else ""
    target = params.get("uri") if method == "resources/read" else params.get("name")
    return {
        "method": method,
        "target": target if isinstance(target, str) else "",
        "arguments": arguments_digest(params.get("arguments")),
        "credential": x.credential,
        "upstream": x.upstream,
    }
