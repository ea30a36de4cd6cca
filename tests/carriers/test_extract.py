"""Extraction of every elicitation carrier, in both directions (sans-IO)."""

from __future__ import annotations

from typing import Any

from gateway.carriers.extract import Carrier, field_names, from_client, from_server, mode_of
from gateway.wire.jsonrpc import classify

FORM = {
    "mode": "form",
    "message": "Profile",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
URL = {"mode": "url", "message": "Connect", "url": "https://x.test/", "elicitationId": "e1"}


def msg(obj: dict[str, Any]) -> Any:
    return classify({"jsonrpc": "2.0", **obj})


def test_handshake_server_request() -> None:
    [s] = from_server(msg({"id": 3, "method": "elicitation/create", "params": FORM}))
    assert s.carrier is Carrier.SERVER_REQUEST
    assert (s.mode, s.request_id, s.location) == ("form", 3, "$.params")
    assert s.params == FORM


def test_handshake_url_request_carries_the_elicitation_id() -> None:
    [s] = from_server(msg({"id": "x", "method": "elicitation/create", "params": URL}))
    assert (s.mode, s.elicitation_id) == ("url", "e1")


def test_missing_mode_means_form_and_odd_modes_are_kept_for_the_engine() -> None:
    assert mode_of({"message": "m"}) == "form"
    assert mode_of({"mode": 3}) is None
    assert mode_of("nope") is None
    [s] = from_server(msg({"id": 1, "method": "elicitation/create", "params": [1]}))
    assert s.params == [1]
    assert s.mode is None


def test_url_required_error_yields_one_sighting_per_entry() -> None:
    error = {"code": -32042, "message": "URL required", "data": {"elicitations": [URL, URL]}}
    found = from_server(msg({"id": 5, "error": error}))
    assert [s.carrier for s in found] == [Carrier.URL_REQUIRED_ERROR] * 2
    assert [s.location for s in found] == [
        "$.error.data.elicitations[0]",
        "$.error.data.elicitations[1]",
    ]


def test_url_required_error_without_a_list_is_still_reported() -> None:
    [s] = from_server(msg({"id": 5, "error": {"code": -32042, "message": "x", "data": 1}}))
    assert s.carrier is Carrier.URL_REQUIRED_ERROR
    assert s.mode is None


def test_other_errors_are_not_elicitations() -> None:
    assert from_server(msg({"id": 5, "error": {"code": -32600, "message": "x"}})) == []


def test_input_required_result_entries() -> None:
    result = {
        "resultType": "input_required",
        "requestState": "s",
        "inputRequests": {
            "a": {"method": "elicitation/create", "params": FORM},
            "b": {"method": "elicitation/create", "params": URL},
            "c": {"method": "sampling/createMessage", "params": {}},
            "d": {"method": "roots/list"},
            "e": {"params": FORM},  # no method: treated as an elicitation (conservative)
        },
    }
    found = from_server(msg({"id": 9, "result": result}))
    assert [(s.key, s.mode) for s in found] == [("a", "form"), ("b", "url"), ("e", "form")]
    assert found[0].location == "$.result.inputRequests.a.params"
    assert all(s.carrier is Carrier.INPUT_REQUIRED for s in found)


def test_input_requests_is_inspected_even_without_result_type() -> None:
    result = {"inputRequests": {"k y": {"method": "elicitation/create", "params": FORM}}}
    [s] = from_server(msg({"id": 9, "result": result}))
    assert s.location == '$.result.inputRequests["k y"].params'


def test_malformed_input_requests_is_reported() -> None:
    [s] = from_server(msg({"id": 9, "result": {"inputRequests": [1, 2]}}))
    assert s.carrier is Carrier.INPUT_REQUIRED
    assert s.params is None


def test_completion_notification() -> None:
    n = msg({"method": "notifications/elicitation/complete", "params": {"elicitationId": "e1"}})
    [s] = from_server(n)
    assert (s.carrier, s.elicitation_id) == (Carrier.COMPLETE, "e1")


def test_ordinary_results_and_notifications_are_not_elicitations() -> None:
    assert from_server(msg({"id": 1, "result": {"content": []}})) == []
    assert from_server(msg({"method": "notifications/progress", "params": {}})) == []
    assert from_server(msg({"id": 1, "method": "sampling/createMessage", "params": {}})) == []


def test_client_answers_in_the_handshake_era() -> None:
    [s] = from_client(msg({"id": 3, "result": {"action": "accept", "content": {"name": "A"}}}))
    assert (s.carrier, s.request_id, s.action) == (Carrier.ANSWER, 3, "accept")
    assert from_client(msg({"id": 3, "result": {"roots": []}})) == []


def test_client_input_responses_in_the_modern_era() -> None:
    params = {
        "name": "t",
        "inputResponses": {"a": {"action": "accept", "content": {}}, "b": {"action": "decline"}},
        "requestState": "s",
    }
    found = from_client(msg({"id": 4, "method": "tools/call", "params": params}))
    assert [(s.carrier, s.key, s.action) for s in found] == [
        (Carrier.INPUT_RESPONSE, "a", "accept"),
        (Carrier.INPUT_RESPONSE, "b", "decline"),
    ]
    assert from_client(msg({"id": 4, "method": "tools/call", "params": {"name": "t"}})) == []


def test_field_names_are_bounded_and_safe() -> None:
    assert field_names(FORM) == ["name"]
    assert field_names({"requestedSchema": {"properties": []}}) == []
    many: dict[str, Any] = {"requestedSchema": {"properties": {f"f{i}": {} for i in range(100)}}}
    assert len(field_names(many)) == 64
