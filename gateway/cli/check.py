"""``elicitation-gateway check`` and ``validate-policy``: the engine on JSON lines, no network.

``check`` reads one JSON value per line from stdin. A line is either the ``params`` object of an
``elicitation/create`` or a wrapper ``{"id": …, "params": {…}}`` (optionally with
``"capabilities"``: a string like the ``--capabilities`` flag, or a list of mode names, overriding
the flag for that line; and/or ``"era"``: ``"handshake"``, ``"modern"`` or null, overriding
``--era``). A wrapper is an object whose ``params`` is an object and whose only other keys are
``id``/``capabilities``/``era``: a real params object never looks like that (form params need
``message`` and ``requestedSchema``; URL params need ``message`` and ``url``).

For each line it writes, in input order, one JSON line
``{"id": …, "action": "allow"|"warn"|"block", "reasons": [...], "findings": [{"reason", "path"}]}``
where ``id`` is the wrapper's id or else the 1-based line number. ``action`` is the decision as
made (in shadow mode, ``enforce: false``, the relay would not block it). A line that is not JSON
is ``block`` with ``malformed``. Blank lines are skipped (no output) but still counted.

``--era`` (``handshake`` or ``modern``) turns on the era-specific structure rules (a handshake-era
URL request must carry ``elicitationId``); without it they are off.

``--explain`` adds, after each verdict line, one line per finding for people (not JSON)::

      block  secret-field  $.requestedSchema.properties.x1  concept=password signal=message-ask \
term="mot de passe" lang=fr

the finding's own action under the policy, its reason code and path, then its evidence: the
concept recognised, the signal that fired and, for lexicon hits, the term of the gateway's own
lexicon that matched and the language it is listed under (never the input's text). A finding
without evidence shows its value-free ``detail``. Without ``--explain`` the output is unchanged.

Exit status: 0 when every line was evaluated; 2 for a bad policy file or a bad ``--capabilities``.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from gateway.detect.findings import Action, Decision, Finding, Reason
from gateway.errors import PolicyError
from gateway.policy.engine import evaluate
from gateway.policy.loader import Policy, load_policy

KNOWN_MODES = frozenset({"form", "url"})
_WRAPPER_KEYS = frozenset({"id", "params", "capabilities", "era"})
KNOWN_ERAS = frozenset({"handshake", "modern"})


def parse_capabilities(value: str | list[Any]) -> frozenset[str]:
    """``"form,url"`` → {form, url}; ``""`` or ``"none"`` → {}. ValueError on an unknown mode."""
    items = value.split(",") if isinstance(value, str) else value
    modes = {str(m).strip().lower() for m in items if str(m).strip()}
    modes.discard("none")
    unknown = modes - KNOWN_MODES
    if unknown:
        raise ValueError(f"unknown mode(s): {', '.join(sorted(unknown))} (use form, url or none)")
    return frozenset(modes)


def run_check(
    *,
    policy_path: str,
    capabilities: str,
    server: str | None,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    era: str | None = None,
    explain: bool = False,
) -> int:
    try:
        policy = load_policy(policy_path)
    except PolicyError as exc:
        stderr.write(f"error: invalid policy: {exc}\n")
        return 2
    try:
        modes = parse_capabilities(capabilities)
    except ValueError as exc:
        stderr.write(f"error: --capabilities: {exc}\n")
        return 2
    if era is not None and era not in KNOWN_ERAS:
        stderr.write("error: --era: use handshake or modern\n")
        return 2
    for number, line in enumerate(stdin, start=1):
        if not line.strip():
            continue
        ident, decision = _check(line, number, modes=modes, server=server, policy=policy, era=era)
        result = _result(ident, decision)
        stdout.write(json.dumps(result, ensure_ascii=False, separators=(",", ":")) + "\n")
        if explain:
            stdout.writelines(explain_lines(decision, policy, server))
        stdout.flush()
    return 0


def explain_lines(decision: Decision, policy: Policy, server: str | None = None) -> list[str]:
    """One line per finding, for people: its action, reason, path and evidence (``--explain``)."""
    out = []
    for f in decision.findings:
        action = policy.action_for(f.reason, f.severity, server).value
        if f.evidence is not None:
            why = f.evidence.describe()
        else:
            why = f"detail={f.detail}" if f.detail else "-"
        out.append(f"  {action}  {f.reason.value}  {f.path}  {why}\n")
    return out


def _check(
    line: str,
    number: int,
    *,
    modes: frozenset[str],
    server: str | None,
    policy: Policy,
    era: str | None = None,
) -> tuple[Any, Decision]:
    """The id and the decision for one input line; never raises."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        bad = Decision(Action.BLOCK, (Finding(Reason.MALFORMED, "$", detail="not-json"),))
        return number, bad
    ident: Any = number
    params = value
    if _is_wrapper(value):
        ident = value.get("id", number)
        params = value["params"]
        if "capabilities" in value:
            try:
                modes = parse_capabilities(value["capabilities"])
            except (ValueError, TypeError):
                bad = Decision(Action.BLOCK, (Finding(Reason.MALFORMED, "$.capabilities"),))
                return ident, bad
        if "era" in value:
            era = value["era"]
            if era is not None and (not isinstance(era, str) or era not in KNOWN_ERAS):
                bad = Decision(Action.BLOCK, (Finding(Reason.MALFORMED, "$.era"),))
                return ident, bad
    return ident, evaluate(params, modes=modes, server=server, policy=policy, era=era)


def _is_wrapper(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("params"), dict)
        and set(value) <= _WRAPPER_KEYS
        and (not isinstance(value.get("capabilities"), dict))
    )


def _result(ident: Any, decision: Decision) -> dict[str, Any]:
    return {
        "id": ident,
        "action": decision.action.value,
        "reasons": decision.reasons,
        "findings": [{"reason": f.reason.value, "path": f.path} for f in decision.findings],
    }


def run_validate(path: str, *, stdout: TextIO, stderr: TextIO) -> int:
    try:
        policy = load_policy(path)
    except PolicyError as exc:
        stderr.write(f"error: invalid policy: {exc}\n")
        return 2
    servers = len(policy.servers)
    mode = "enforcing" if policy.enforce else "audit-only (enforce: false)"
    stdout.write(
        f"OK: {path}: policy version 1, {mode}, {servers} server override(s), "
        f"revision {policy.revision[:12]}\n"
    )
    return 0
