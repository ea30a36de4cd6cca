"""`elicitation-gateway check` and `validate-policy`, run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = str(ROOT / "policies" / "default.yaml")

FORM_OK = {
    "message": "Which environment?",
    "requestedSchema": {
        "type": "object",
        "properties": {"env": {"type": "string", "enum": ["staging", "production"]}},
    },
}
FORM_PASSWORD = {
    "message": "Sign in again",
    "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
}
URL_OK = {
    "mode": "url",
    "message": "Authorize access",
    "url": "https://example.com/connect?elicitationId=abc",
    "elicitationId": "abc",
}


def _run(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def _check(lines: list[str], *extra: str) -> list[dict[str, Any]]:
    proc = _run(["check", "--policy", DEFAULT, *extra], "\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_check_bare_wrapped_invalid_and_blank_lines() -> None:
    lines = [
        json.dumps(FORM_OK),
        json.dumps({"id": "pw", "params": FORM_PASSWORD}),
        "",
        "{not json",
        json.dumps({"id": 7, "params": URL_OK}),
        "   ",
        json.dumps({"params": FORM_OK}),
    ]
    out = _check(lines)
    assert [r["id"] for r in out] == [1, "pw", 4, 7, 7]
    assert out[0] == {"id": 1, "action": "allow", "reasons": [], "findings": []}
    assert out[1]["action"] == "block"
    assert "secret-field" in out[1]["reasons"]
    assert {"reason": "secret-field", "path": "$.requestedSchema.properties.password"} in out[1][
        "findings"
    ]
    assert out[2] == {
        "id": 4,
        "action": "block",
        "reasons": ["malformed"],
        "findings": [{"reason": "malformed", "path": "$"}],
    }
    assert out[3]["action"] == "allow"
    assert out[4]["id"] == 7
    assert out[4]["action"] == "allow"


def test_bare_params_with_params_key_is_not_a_wrapper() -> None:
    odd = {"message": "m", "params": {"a": 1}, "requestedSchema": FORM_OK["requestedSchema"]}
    out = _check([json.dumps(odd)])
    assert out[0]["id"] == 1
    assert out[0]["action"] == "allow"  # evaluated as params (unknown top-level keys are ignored)


def test_capabilities_flag() -> None:
    out = _check([json.dumps(URL_OK)], "--capabilities", "form")
    assert out[0]["action"] == "block"
    assert out[0]["reasons"] == ["mode-not-declared"]
    out = _check([json.dumps(FORM_OK)], "--capabilities", "none")
    assert out[0]["reasons"] == ["mode-not-declared"]
    out = _check([json.dumps(FORM_OK)], "--capabilities", "")
    assert out[0]["reasons"] == ["mode-not-declared"]
    out = _check(
        [json.dumps({"id": "x", "params": URL_OK, "capabilities": "url"})], "--capabilities", "form"
    )
    assert out[0]["action"] == "allow"


def test_bad_capabilities_exit_2() -> None:
    proc = _run(["check", "--policy", DEFAULT, "--capabilities", "form,sms"], "")
    assert proc.returncode == 2
    assert "sms" in proc.stderr


def test_server_overrides(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\nservers:\n  vault:\n    actions: {secret-field: warn}\n")
    line = json.dumps(FORM_PASSWORD)
    proc = _run(["check", "--policy", str(policy), "--server", "vault"], line)
    assert json.loads(proc.stdout)["action"] == "warn"
    proc = _run(["check", "--policy", str(policy)], line)
    assert json.loads(proc.stdout)["action"] == "block"


def test_check_bad_policy_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nurl:\n  schemes: [https, 9]\n")
    proc = _run(["check", "--policy", str(bad)], json.dumps(FORM_OK))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr
    assert "url.schemes[1]" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("name", ["default", "strict", "dev", "audit-only"])
def test_validate_shipped(name: str) -> None:
    proc = _run(["validate-policy", str(ROOT / "policies" / f"{name}.yaml")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OK: ")


def test_validate_reports_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nservers:\n  acme:\n    actions:\n      secret-field: blok\n")
    proc = _run(["validate-policy", str(bad)])
    assert proc.returncode == 2
    assert f"{bad}: servers.acme.actions.secret-field:" in proc.stderr
    assert proc.stdout == ""


def test_validate_missing_file(tmp_path: Path) -> None:
    proc = _run(["validate-policy", str(tmp_path / "missing.yaml")])
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr


def test_check_matches_the_engine_on_the_corpus(tmp_path: Path) -> None:
    """The CLI and the in-process engine agree on every corpus case (one subprocess; no clock
    takes part in a decision, so a loaded machine decides like an idle one)."""
    from gateway.cli.check import parse_capabilities
    from gateway.policy.engine import evaluate
    from gateway.policy.loader import load_policy

    corpus = ROOT / "tests" / "corpus" / "elicitations.jsonl"
    cases = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    cases = [c for c in cases if isinstance(c["params"], dict)]
    lines = [
        json.dumps(
            {
                "id": c["id"],
                "params": c["params"],
                "capabilities": c.get("capabilities", "form,url"),
            }
        )
        for c in cases
    ]
    proc = _run(["check", "--policy", DEFAULT], "\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in out] == [c["id"] for c in cases]
    policy = load_policy(DEFAULT)
    for case, result in zip(cases, out, strict=True):
        modes = parse_capabilities(case.get("capabilities", "form,url"))
        decision = evaluate(case["params"], modes=modes, server=None, policy=policy)
        assert result["action"] == decision.action.value, case["id"]
        assert result["reasons"] == decision.reasons, case["id"]


def test_hostile_lines_never_stop_the_run() -> None:
    lines = [
        "[" * 100_000 + "]" * 100_000,  # too deep for the JSON parser
        json.dumps({"message": "x" * 200_000}),  # larger than max_bytes
        "NaN",
        json.dumps({"id": [1], "params": URL_OK, "capabilities": 5}),
        json.dumps(FORM_OK),
    ]
    out = _check(lines)
    assert [(r["id"], r["action"], r["reasons"]) for r in out] == [
        (1, "block", ["malformed"]),
        (2, "block", ["oversize"]),
        (3, "block", ["malformed"]),
        ([1], "block", ["malformed"]),
        (5, "allow", []),
    ]


def test_era_flag_and_per_line_era() -> None:
    url_no_id = {"mode": "url", "message": "Connect", "url": "https://example.com/connect"}
    lines = "\n".join(
        [
            json.dumps({"id": "a", "params": url_no_id}),
            json.dumps({"id": "b", "params": url_no_id, "era": "modern"}),
            json.dumps({"id": "c", "params": url_no_id, "era": "bogus"}),
        ]
    )
    off = [json.loads(x) for x in _run(["check", "--policy", DEFAULT], lines).stdout.splitlines()]
    assert [r["action"] for r in off] == ["allow", "allow", "block"]
    proc = _run(["check", "--policy", DEFAULT, "--era", "handshake"], lines)
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [r["action"] for r in out] == ["block", "allow", "block"]
    assert out[0]["findings"] == [{"reason": "malformed", "path": "$.elicitationId"}]
    assert _run(["check", "--policy", DEFAULT, "--era", "2025"], "").returncode == 2


# -- --explain ------------------------------------------------------------------------------------

FORM_OPAQUE_FR = {
    "message": "Veuillez saisir votre mot de passe",
    "requestedSchema": {"type": "object", "properties": {"x1": {"type": "string"}}},
}
URL_SHORTENER = {
    "mode": "url",
    "message": "Open the report",
    "url": "https://bit.ly/3Xq9TmB",
    "elicitationId": "s-1",
}
URL_LOOKALIKE = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://paypal.com.secure-login.xyz/x",
    "elicitationId": "l-1",
}


def test_explain_prints_one_line_per_finding_after_each_verdict() -> None:
    lines = [
        json.dumps({"id": "fr", "params": FORM_OPAQUE_FR}),
        json.dumps({"id": "short", "params": URL_SHORTENER}),
        json.dumps({"id": "brand", "params": URL_LOOKALIKE}),
        json.dumps({"id": "ok", "params": FORM_OK}),
        "{not json",
    ]
    proc = _run(["check", "--policy", DEFAULT, "--explain"], "\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    verdicts = [i for i, line in enumerate(out) if line.startswith("{")]
    assert [json.loads(out[i])["id"] for i in verdicts] == ["fr", "short", "brand", "ok", 5]
    explained = {
        json.loads(out[i])["id"]: out[i + 1 : [*verdicts, len(out)][n + 1]]
        for n, i in enumerate(verdicts)
    }
    assert explained["fr"] == [
        "  block  secret-field  $.requestedSchema.properties.x1  "
        'concept=password signal=message-ask term="mot de passe" lang=fr'
    ]
    assert explained["short"] == [
        "  warn  shortener  $.url  concept=shortener signal=shortener:bit.ly"
    ]
    assert any(
        "block  confusable-host  $.url  concept=brand-embedding signal=brand-embedding:paypal.com"
        in line
        for line in explained["brand"]
    )
    assert explained["ok"] == []  # nothing found, nothing to explain
    assert explained[5] == ["  block  malformed  $  detail=not-json"]
    for i in verdicts:  # one explanation line per finding
        assert len(explained[json.loads(out[i])["id"]]) == len(json.loads(out[i])["findings"])


def test_without_explain_the_output_is_only_the_verdict_lines() -> None:
    lines = [json.dumps(FORM_OPAQUE_FR), json.dumps(URL_SHORTENER), json.dumps(FORM_PASSWORD)]
    plain = _run(["check", "--policy", DEFAULT], "\n".join(lines) + "\n")
    explained = _run(["check", "--policy", DEFAULT, "--explain"], "\n".join(lines) + "\n")
    assert plain.returncode == explained.returncode == 0
    verdicts = [line for line in explained.stdout.splitlines() if not line.startswith("  ")]
    assert plain.stdout == "\n".join(verdicts) + "\n"
    assert "concept=" not in plain.stdout
    assert json.loads(plain.stdout.splitlines()[1]) == {
        "id": 2,
        "action": "warn",
        "reasons": ["shortener"],
        "findings": [{"reason": "shortener", "path": "$.url"}],
    }
