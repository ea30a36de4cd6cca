"""What to do with one message: the instruction :meth:`Enforcer.process` returns (sans-IO).

The relay carries an outcome out in one place (``Relay._carry_out``), whatever the path the
message came by (a client's POST body, a JSON response body, an SSE event on a POST or GET
stream, the answer to the gateway's own 2026 retry):

* **forward** — nothing set: the original bytes go on, byte-exact;
* **rewrite** — ``message``: this message goes on instead;
* **drop** — ``drop``: nothing goes on (an SSE event becomes an id-only block; inside a JSON
  body, where a server request must never be, the response fails closed);
* **reply upstream** — ``replies``: JSON-RPC responses POSTed to the server on the client's
  behalf (a blocked elicitation's decline), before anything else happens;
* **retry** — ``retry``: the gateway sends ``retry.message`` upstream itself and judges its
  answer in ``retry.exchange``;
* **absorb** — ``absorb``: the client's message was handled here (a replayed answer): 202, no
  body, nothing forwarded;
* **fail** — ``fail``: the error the client gets instead (nothing is forwarded).

Two more fields tell the user why (``gateway.enforce.notice``): ``blocked`` lists the
notice-worthy elicitations this message blocked (the relay adds them to the call's exchange, so
that the call's final result gets the notice), and ``notice`` is a message for the client — a
``notifications/message`` warning — written on the stream before the message (or in place of a
dropped one) where no result can carry the notice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.enforce.exchange import Exchange
from gateway.enforce.notice import Blocked
from gateway.errors import ProtocolError


@dataclass(frozen=True, slots=True)
class Retry:
    """The gateway's own 2026 retry: the request, and the exchange its answer belongs to (the
    client's request id, the retry's id, the rounds so far)."""

    message: Mapping[str, Any]
    exchange: Exchange


@dataclass(frozen=True, slots=True)
class Outcome:
    message: Mapping[str, Any] | None = None
    drop: bool = False
    replies: tuple[Mapping[str, Any], ...] = ()
    retry: Retry | None = None
    absorb: bool = False
    fail: ProtocolError | None = None
    blocked: tuple[Blocked, ...] = ()
    notice: Mapping[str, Any] | None = None

    @property
    def unchanged(self) -> bool:
        """True when the original bytes go on and nothing else happens."""
        return (
            self.message is None
            and not self.drop
            and not self.replies
            and self.retry is None
            and not self.absorb
            and self.fail is None
            and not self.blocked
            and self.notice is None
        )


FORWARD = Outcome()
