"""Telling the user why (sans-IO): the notice the gateway adds when it blocked an elicitation.

A blocked elicitation otherwise vanishes: the server is answered on the user's behalf and the
user never learns that it tried to ask them for a password. With ``notify_user`` on (the
default), the enforcer records every notice-worthy block of a call as a :class:`Blocked` in the
:class:`~gateway.enforce.outcome.Outcome` (the relay accumulates them in the call's
:class:`~gateway.enforce.exchange.Exchange`), and the call's final result gets one short text
item in its ``content`` list (:func:`with_notice`). Where no result follows, or the result has
no ``content`` list, the notice goes out on the stream as a ``notifications/message`` warning
(:func:`log_message`).

The text names the upstream (the operator's name for it, from the gateway's configuration),
plain category words and the stable reason codes; never a value, a URL, a message or a field
name the server wrote.

No notice for a block whose only cause is an undeclared mode (``mode-not-declared``): there
the gateway answers exactly as the client itself would have, and the exchange stays identical
to a direct one (:func:`worth_telling`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from gateway.detect.findings import Reason

LOGGER: Final = "elicitation-gateway"
MAX_UPSTREAM: Final = 64

_URL: Final = "opening a link"
# Plain words for what a blocked request asked for, per reason code (first seen, first said).
CATEGORY: Final[Mapping[str, str]] = {
    Reason.SECRET_FIELD.value: "a password",
    Reason.OTP_FIELD.value: "a one-time code",
    Reason.PAYMENT_FIELD.value: "payment card details",
    Reason.SENSITIVE_PII_FIELD.value: "sensitive personal information",
    Reason.SECRET_VALUE.value: "a secret",
    Reason.CLICKABLE_URL.value: _URL,
    Reason.NON_HTTPS.value: _URL,
    Reason.BAD_SCHEME.value: _URL,
    Reason.USERINFO.value: _URL,
    Reason.IP_LITERAL.value: _URL,
    Reason.IDN_HOST.value: _URL,
    Reason.CONFUSABLE_HOST.value: _URL,
    Reason.TYPOSQUAT.value: _URL,
    Reason.PII_IN_URL.value: _URL,
    Reason.CREDENTIAL_IN_URL.value: _URL,
    Reason.PREAUTH_URL.value: _URL,
    Reason.HOST_NOT_ALLOWED.value: _URL,
    Reason.SHORTENER.value: _URL,
}


@dataclass(frozen=True, slots=True)
class Blocked:
    """One blocked elicitation the user is to be told about: its mode and reason codes."""

    mode: str | None  # form | url (None: not stated)
    reasons: tuple[str, ...]


def worth_telling(reasons: Iterable[str], *, mode_only: bool = False) -> bool:
    """Whether a block is notice-worthy: not when ``mode-not-declared`` is its only reason, nor
    when the gateway answered the server as the client itself would have (``mode_only``)."""
    codes = set(reasons)
    return not mode_only and bool(codes - {Reason.MODE_NOT_DECLARED.value})


def _upstream(name: str) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in name).strip()
    return clean[:MAX_UPSTREAM] or "the server"


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"


def notice_text(upstream: str, blocked: Iterable[Blocked]) -> str:
    """The notice: ``The elicitation gateway blocked a request from <upstream> for a password
    and a one-time code (secret-field, otp-field).`` Reason codes and category words only."""
    items = list(blocked)
    codes = list(dict.fromkeys(r for b in items for r in b.reasons))
    words = list(dict.fromkeys(CATEGORY[c] for c in codes if c in CATEGORY))
    if not words and any(b.mode == "url" for b in items):
        words = [_URL]
    requests = "a request" if len(items) == 1 else f"{len(items)} requests"
    text = f"The elicitation gateway blocked {requests} from {_upstream(upstream)}"
    if words:
        text += f" for {_join(words)}"
    return f"{text} ({', '.join(codes)})." if codes else f"{text}."


def content_item(text: str) -> dict[str, Any]:
    """The notice as a ``TextContent`` item, addressed to the user."""
    return {"type": "text", "text": text, "annotations": {"audience": ["user"]}}


def with_notice(message: Mapping[str, Any], text: str) -> dict[str, Any] | None:
    """``message`` (a JSON-RPC response) with the notice appended to its result's ``content``
    list, everything else (``structuredContent`` included) untouched; None when the result has
    no ``content`` list to add to."""
    result = message.get("result")
    if not isinstance(result, Mapping) or not isinstance(result.get("content"), list):
        return None
    new_result = dict(result)
    new_result["content"] = [*result["content"], content_item(text)]
    new = dict(message)
    new["result"] = new_result
    return new


def log_message(text: str) -> dict[str, Any]:
    """The notice as a ``notifications/message`` warning, for a stream no result follows on."""
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "warning", "logger": LOGGER, "data": text},
    }
