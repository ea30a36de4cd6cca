"""Find every elicitation in one JSON-RPC message, in either direction (sans-IO).

Carriers (protocol.md §1.2):

server → client
* ``server-request``      handshake ``elicitation/create`` request (POST or GET SSE stream)
* ``url-required-error``  ``-32042`` error, one sighting per ``error.data.elicitations`` entry
* ``input-required``      2026 ``InputRequiredResult``: one per ``inputRequests`` entry whose method
                          is ``elicitation/create``
* ``complete-notification`` ``notifications/elicitation/complete``

client → server
* ``answer``              handshake response to a server request whose result carries ``action``
* ``input-response``      2026 retry: one per ``params.inputResponses`` entry

Extraction ignores the era on purpose: an untrusted server may use any carrier in any era (the SDK
itself leaks ``-32042`` into 2026 requests), so every carrier is checked on every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from gateway.detect.findings import json_path
from gateway.wire.jsonrpc import Message

ELICIT_METHOD: Final = "elicitation/create"
COMPLETE_METHOD: Final = "notifications/elicitation/complete"
URL_REQUIRED_CODE: Final = -32042


class Carrier(StrEnum):
    SERVER_REQUEST = "server-request"
    URL_REQUIRED_ERROR = "url-required-error"
    INPUT_REQUIRED = "input-required"
    COMPLETE = "complete-notification"
    ANSWER = "answer"
    INPUT_RESPONSE = "input-response"


@dataclass(frozen=True, slots=True)
class Sighting:
    """One elicitation (or answer) found in one message.

    ``params`` is the elicitation's ``params`` object for requests (exactly as sent, possibly
    malformed: the policy engine judges it); ``None`` for answers and notifications.
    ``location`` is the JSON path of the elicitation inside the message.
    """

    carrier: Carrier
    location: str
    params: Any = None
    mode: str | None = None
    request_id: str | int | None = None  # server→client request id (handshake) / response id
    key: str | None = None  # 2026 inputRequests / inputResponses key
    elicitation_id: str | None = None
    action: str | None = None  # answers: accept / decline / cancel


def mode_of(params: Any) -> str | None:
    """Mode of elicitation params: absent → form (spec); a non-string mode → None (malformed)."""
    if not isinstance(params, Mapping):
        return None
    mode = params.get("mode", "form")
    return mode if isinstance(mode, str) else None


def _elicitation_id(params: Any) -> str | None:
    if isinstance(params, Mapping):
        value = params.get("elicitationId")
        if isinstance(value, str):
            return value
    return None


def from_server(msg: Message) -> list[Sighting]:
    """Elicitations carried by one server→client message."""
    found: list[Sighting] = []
    if msg.kind == "request" and msg.method == ELICIT_METHOD:
        found.append(
            Sighting(
                Carrier.SERVER_REQUEST,
                json_path("params"),
                params=msg.params,
                mode=mode_of(msg.params),
                request_id=msg.id,
                elicitation_id=_elicitation_id(msg.params),
            )
        )
    elif msg.kind == "notification" and msg.method == COMPLETE_METHOD:
        found.append(
            Sighting(
                Carrier.COMPLETE,
                json_path("params"),
                elicitation_id=_elicitation_id(msg.params),
            )
        )
    elif msg.kind == "error" and msg.error is not None:
        found.extend(_url_required(msg))
    elif msg.kind == "response":
        found.extend(_input_required(msg))
    return found


def _url_required(msg: Message) -> list[Sighting]:
    error = msg.error or {}
    if error.get("code") != URL_REQUIRED_CODE:
        return []
    data = error.get("data")
    entries = data.get("elicitations") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        # A -32042 without a readable list still announces a URL elicitation: report it so the
        # policy engine sees (and blocks) something it cannot inspect.
        return [Sighting(Carrier.URL_REQUIRED_ERROR, json_path("error", "data"), params=data)]
    return [
        Sighting(
            Carrier.URL_REQUIRED_ERROR,
            json_path("error", "data", "elicitations", index),
            params=entry,
            mode=mode_of(entry),
            request_id=msg.id,
            elicitation_id=_elicitation_id(entry),
        )
        for index, entry in enumerate(entries)
    ]


def _input_required(msg: Message) -> list[Sighting]:
    result = msg.result
    if not isinstance(result, Mapping) or "inputRequests" not in result:
        return []
    requests = result["inputRequests"]
    if not isinstance(requests, Mapping):
        return [Sighting(Carrier.INPUT_REQUIRED, json_path("result", "inputRequests"))]
    found = []
    for key, entry in requests.items():
        method = entry.get("method") if isinstance(entry, Mapping) else None
        if method is not None and method != ELICIT_METHOD:
            continue  # sampling/createMessage, roots/list: not elicitations
        params = entry.get("params") if isinstance(entry, Mapping) else None
        found.append(
            Sighting(
                Carrier.INPUT_REQUIRED,
                json_path("result", "inputRequests", str(key), "params"),
                params=params,
                mode=mode_of(params),
                request_id=msg.id,
                key=str(key),
            )
        )
    return found


def from_client(msg: Message, *, answer_ids: str | None = None) -> list[Sighting]:
    """Answers carried by one client→server message.

    ``answer_ids``: a prefix that marks ids of forwarded elicitations (the gateway's sealed ids);
    an *error* response to such an id is an answer too (the client refused the request).
    """
    if (
        msg.kind == "error"
        and answer_ids is not None
        and isinstance(msg.id, str)
        and msg.id.startswith(answer_ids)
    ):
        return [Sighting(Carrier.ANSWER, json_path("error"), request_id=msg.id, action="error")]
    if msg.kind == "response":
        result = msg.result
        if isinstance(result, Mapping) and "action" in result:
            action = result.get("action")
            return [
                Sighting(
                    Carrier.ANSWER,
                    json_path("result"),
                    request_id=msg.id,
                    action=action if isinstance(action, str) else None,
                )
            ]
        return []
    if msg.kind != "request" or not isinstance(msg.params, Mapping):
        return []
    responses = msg.params.get("inputResponses")
    if not isinstance(responses, Mapping):
        return []
    found = []
    for key, answer in responses.items():
        action = answer.get("action") if isinstance(answer, Mapping) else None
        found.append(
            Sighting(
                Carrier.INPUT_RESPONSE,
                json_path("params", "inputResponses", str(key)),
                request_id=msg.id,
                key=str(key),
                action=action if isinstance(action, str) else None,
            )
        )
    return found


def field_names(params: Any) -> list[str]:
    """Requested form field names (safe to log: names, never values)."""
    if not isinstance(params, Mapping):
        return []
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return []
    return [str(name)[:64] for name in list(props)[:64]]
