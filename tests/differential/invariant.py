"""The invariant: every elicitation a client parsed from the gateway's output has a matching audit
decision (allow or warn), and no elicitation the policy blocks is ever parsed; the gateway logged
no error while doing so."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gateway.carriers.extract import field_names
from gateway.policy.engine import evaluate
from gateway.policy.loader import Policy

MODES = frozenset({"form", "url"})


@dataclass(frozen=True)
class Parsed:
    """One elicitation as a client parsed it: which carrier, and its params."""

    carrier: str
    params: Mapping[str, Any]


def elicitations_in(message: Any) -> list[Parsed]:
    """Every elicitation in one JSON-RPC message (as a JSON value) a client parsed."""
    found: list[Parsed] = []
    if not isinstance(message, Mapping):
        return found
    if message.get("method") == "elicitation/create" and "id" in message:
        params = message.get("params")
        if isinstance(params, Mapping):
            found.append(Parsed("server-request", params))
    error = message.get("error")
    if isinstance(error, Mapping) and error.get("code") == -32042:
        data = error.get("data")
        entries = data.get("elicitations") if isinstance(data, Mapping) else None
        listed = entries if isinstance(entries, list) else []
        found.extend(Parsed("url-required-error", e) for e in listed if isinstance(e, Mapping))
    result = message.get("result")
    if isinstance(result, Mapping):
        requests = result.get("inputRequests")
        if isinstance(requests, Mapping):
            for request in requests.values():
                if isinstance(request, Mapping) and request.get("method") == "elicitation/create":
                    params = request.get("params")
                    if isinstance(params, Mapping):
                        found.append(Parsed("input-required", params))
    return found


def _scheme(params: Mapping[str, Any]) -> str | None:
    url = params.get("url")
    if not isinstance(url, str):
        return None
    try:
        return urlsplit(url).scheme.lower() or None
    except ValueError:
        return None


def _mode(params: Mapping[str, Any]) -> Any:
    return params.get("mode", "form")


def _matches(record: Mapping[str, Any], parsed: Parsed) -> bool:
    return (
        record.get("event") == "elicitation.decision"
        and record.get("action") in ("allow", "warn")
        and record.get("mode") == _mode(parsed.params)
        and sorted(record.get("fields") or []) == sorted(field_names(parsed.params))
        and record.get("url_scheme") == _scheme(parsed.params)
    )


def violations(
    victim: str,
    parsed: Sequence[Parsed],
    audits: Iterable[Mapping[str, Any]],
    errors: Sequence[str],
    policy: Policy,
) -> list[str]:
    """What broke the invariant for one response read by one victim (empty: it held)."""
    problems = [f"gateway error: {e}" for e in errors]
    unused = [r for r in audits if r.get("event") == "elicitation.decision"]
    for item in parsed:
        decision = evaluate(dict(item.params), modes=MODES, server=None, policy=policy)
        what = (
            f"{victim} parsed {item.carrier} {_mode(item.params)} fields={field_names(item.params)}"
        )
        if decision.action.value == "block":
            problems.append(f"{what}: BLOCKED by the policy ({', '.join(decision.reasons)})")
            continue
        match = next((r for r in unused if _matches(r, item)), None)
        if match is None:
            problems.append(f"{what}: no matching allow/warn audit decision")
        else:
            unused.remove(match)
    return problems
