"""``elicitation-gateway demo``: the product in one screen.

Starts the bundled demo upstream and a gateway in front of it (the shipped default policy, or
``--policy``; checked first: a bad policy is one line naming the file and field, exit 2), drives
the official SDK client through every demo tool in both protocol eras, and prints what the server
asked, what the gateway decided and why, what the user saw, and what the server got back. The
last rows (era ``stdio …``) are the same over stdio: the SDK's stdio client starts
``elicitation-gateway stdio -- python -m gateway.demo.upstream --stdio`` as a desktop client
would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from gateway.demo.process import child_process, free_port

DEMO_TOOLS: tuple[tuple[str, str], ...] = (
    ("demo_profile", "form: name, email, start date"),
    ("demo_password", "form: password, one-time code"),
    ("demo_card", "form: card number, CVC, expiry"),
    ("demo_hidden_link", "form with a link hidden in its text"),
    ("demo_tax_id", "form: full name, SSN"),
    ("demo_lookalike", "URL: look-alike of apple.com"),
    ("demo_email_in_url", "URL carrying an email address"),
    ("demo_idn", "URL: bücher.de (IDN)"),
    ("demo_oauth", "URL: OAuth authorize (clean)"),
)
MODES = (("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28"))
STDIO_TOOLS: tuple[tuple[str, str], ...] = (
    ("demo_profile", "form: name, email, start date"),
    ("demo_password", "form: password, one-time code"),
)
_RESULT = re.compile(r"action=(\w+)")


@dataclass
class Row:
    era: str
    tool: str
    asked: str
    decision: str = "?"
    reasons: list[str] = field(default_factory=list)
    user_saw: str = "nothing"
    server_got: str = "?"


def _fill(schema: dict[str, Any]) -> dict[str, Any]:
    """What a cooperative user types into a form (one plausible value per field)."""
    content: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if kind in ("integer", "number"):
            content[name] = 36
        elif kind == "boolean":
            content[name] = True
        elif prop.get("format") == "email":
            content[name] = "ada@example.org"
        elif prop.get("format") == "date":
            content[name] = "1990-12-10"
        else:
            content[name] = "Ada"
    return content


async def _drive(url: Any, mode: str, tool: str, row: Row) -> None:
    """One client run; ``url`` is the gateway's URL or the SDK's ``StdioServerParameters``."""
    import mcp_types  # noqa: PLC0415 - the SDK is only needed by the demo
    from mcp import Client, MCPError  # noqa: PLC0415
    from mcp.client.session import ClientRequestContext  # noqa: PLC0415

    async def on_elicit(
        _: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            row.user_saw = f"URL prompt ({params.url.split('/')[2]})"
            return mcp_types.ElicitResult(action="accept")
        fields = ", ".join(params.requested_schema.get("properties") or {})
        row.user_saw = f"form ({fields})"
        return mcp_types.ElicitResult(action="accept", content=_fill(params.requested_schema))

    try:
        async with Client(url, mode=mode, elicitation_callback=on_elicit, cache=None) as client:  # type: ignore[arg-type]
            result = await client.call_tool(tool, {})
        text = " ".join(getattr(block, "text", "") for block in result.content)
        match = _RESULT.search(text)
        row.server_got = match.group(1) if match else text[:40]
    except MCPError as exc:
        row.server_got = f"error {exc.code}"


def _decisions(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    out = []
    for line in log.read_text(errors="replace").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            event = json.loads(line)
            if isinstance(event, dict) and event.get("event") == "elicitation.decision":
                out.append(event)
    return out


async def _run_row(url: Any, mode: str, row: Row, log: Path) -> Row:
    before = len(_decisions(log))
    await _drive(url, mode, row.tool, row)
    for _ in range(50):
        new = _decisions(log)[before:]
        if new:
            row.decision = new[0]["action"]
            row.reasons = new[0]["reasons"]
            break
        await asyncio.sleep(0.05)
    return row


async def _collect(url: str, log: Path, policy: str, stdio_log: Path) -> list[Row]:
    from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: PLC0415

    rows: list[Row] = []
    for mode, version in MODES:
        for tool, asked in DEMO_TOOLS:
            rows.append(await _run_row(url, mode, Row(version, tool, asked), log))
    gateway = ["-m", "gateway", "stdio", "--policy", policy, "--name", "demo"]
    gateway += ["--audit-file", str(stdio_log), "--child-stderr", os.devnull, "--"]
    server = StdioServerParameters(
        command=sys.executable,
        args=[*gateway, sys.executable, "-m", "gateway.demo.upstream", "--stdio"],
    )
    with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 - /dev/null: never blocks
        for mode, version in MODES:
            for tool, asked in STDIO_TOOLS:
                # The gateway's own log lines (stderr) stay off the demo's screen.
                transport = stdio_client(server, errlog=quiet)
                row = Row(f"stdio {version}", tool, asked)
                rows.append(await _run_row(transport, mode, row, stdio_log))
    return rows


def _table(rows: Sequence[Row]) -> str:
    head = ("era", "server asked", "gateway", "why", "user saw", "server got")
    body = [
        (r.era, r.asked, r.decision.upper(), ", ".join(r.reasons) or "-", r.user_saw, r.server_got)
        for r in rows
    ]
    widths = [max(len(str(line[i])) for line in [head, *body]) for i in range(len(head))]
    rule = "  ".join("-" * w for w in widths)
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths, strict=True)), rule]
    lines += [
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)) for line in body
    ]
    return "\n".join(lines)


def run_demo(policy: str | None, stdout: TextIO, stderr: TextIO | None = None) -> int:
    """Run the demo; 0, or 2 with one line on ``stderr`` (bad policy, a peer that would not
    start: the line says why)."""
    from gateway.errors import ConfigError, PolicyError  # noqa: PLC0415
    from gateway.policy.loader import load_policy  # noqa: PLC0415
    from gateway.proxy.config import DEFAULT_POLICY  # noqa: PLC0415

    policy = policy or DEFAULT_POLICY
    try:
        load_policy(policy)  # the same check as the gateway's, before starting anything
        return _run_demo(policy, stdout)
    except (ConfigError, PolicyError) as exc:
        print(f"elicitation-gateway: error: {exc}", file=stderr or sys.stderr)
        return 2


def _run_demo(policy: str, stdout: TextIO) -> int:
    up_port, gw_port = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="gateway-demo-") as tmp:
        log = Path(tmp) / "gateway.log"
        upstream = [sys.executable, "-m", "gateway.demo.upstream", "--port", str(up_port)]
        gateway = [
            sys.executable,
            "-m",
            "gateway",
            "serve",
            "--listen",
            f"127.0.0.1:{gw_port}",
            "--upstream",
            f"http://127.0.0.1:{up_port}/mcp",
            "--policy",
            policy,
        ]
        print("Starting the demo upstream and the gateway …", file=stdout, flush=True)
        with (
            child_process(upstream, up_port, "demo upstream", quiet=True),
            child_process(gateway, gw_port, "gateway", log=log, quiet=True),
        ):
            url = f"http://127.0.0.1:{gw_port}/mcp"
            rows = asyncio.run(_collect(url, log, policy, Path(tmp) / "stdio-audit.log"))
    print(file=stdout)
    print(_table(rows), file=stdout)
    blocked = sum(r.decision == "block" for r in rows)
    print(
        f"\n{len(rows)} elicitations: {blocked} blocked before reaching the user "
        "(the server got a decline), the rest forwarded (warnings are audited). "
        "The stdio rows ran through `elicitation-gateway stdio -- COMMAND`.",
        file=stdout,
    )
    return 0
