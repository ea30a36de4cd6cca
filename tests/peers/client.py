"""An official-SDK MCP client as a subprocess, printing one JSON line per event.

``python tests/peers/client.py (--url URL | --command JSON) --mode legacy|2026-07-28|auto
--tool NAME [--args JSON] [--answer accept|decline|cancel|error] [--content JSON] [--progress]
[--list] [--ping] [--no-callback]``

``--command '["cmd", "arg", …]'`` starts that command and speaks MCP to it over stdio (the SDK's
own stdio client: its environment rules, its shutdown) instead of HTTP. ``--no-callback`` gives
the client no elicitation callback: it then declares no elicitation capability at all.

Events (stdout, one JSON object per line):

* ``{"event": "protocol", "version": ...}`` once connected (the negotiated protocol version);
* ``{"event": "list", "tools": [...], "resources": [...], "prompts": [...]}`` with ``--list``;
* ``{"event": "ping"}`` with ``--ping``, once the server answered it;
* ``{"event": "elicit", "mode", "message", "fields", "url"}`` for each elicitation callback call;
* ``{"event": "progress", "progress", "total", "message"}`` with ``--progress``;
* ``{"event": "result", "isError", "text"}`` for a tool/prompt/resource result;
* ``{"event": "error", "code", "message"}`` for an ``MCPError``;
* ``{"event": "exception", "type"}`` for anything else.

``python tests/peers/client.py --serve`` is the worker mode of ``serve()`` below.

The mode is pinned (``auto`` only where a test checks the negotiation itself, asserting the
version), so a gateway that mangles ``server/discover`` cannot make the client silently fall back
to the handshake era. The exit status is 0 unless the command
line is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

import mcp_types
from mcp import Client, MCPError
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

ANSWERS = ("accept", "decline", "cancel", "error")
REFUSAL_CODE = -32600


class Emitter:
    """Prints one event line per call and flushes, so a parent reading the pipe sees it at
    once; in worker mode every line also carries the ``run`` id of its command."""

    def __init__(self, run: int | None = None) -> None:
        self.run = run

    def __call__(self, event: str, **fields: Any) -> None:
        line = {"event": event, **fields}
        if self.run is not None:
            line["run"] = self.run
        print(json.dumps(line, sort_keys=True), flush=True)


def sample_content(schema: dict[str, Any]) -> dict[str, Any]:
    """A plausible answer for a flat elicitation schema (one value per property)."""
    content: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if kind == "integer":
            content[name] = 36
        elif kind == "number":
            content[name] = 1.5
        elif kind == "boolean":
            content[name] = True
        elif kind == "array":
            options = (prop.get("items") or {}).get("enum") or ["a"]
            content[name] = options[:1]
        elif "enum" in prop:
            content[name] = prop["enum"][0]
        elif prop.get("format") == "email":
            content[name] = "ada@example.org"
        elif prop.get("format") == "date":
            content[name] = "1990-12-10"
        else:
            content[name] = f"{name}-value"
    return content


class Elicitor:
    """The elicitation callback: records what it was asked and answers as configured."""

    def __init__(self, emit: Emitter, answer: str, content: dict[str, Any] | None) -> None:
        self.emit = emit
        self.answer = answer
        self.content = content

    async def __call__(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            self.emit("elicit", mode="url", message=params.message, fields=[], url=params.url)
        else:
            schema = params.requested_schema
            fields = sorted((schema.get("properties") or {}).keys())
            self.emit("elicit", mode="form", message=params.message, fields=fields, url=None)
        if self.answer == "error":
            return mcp_types.ErrorData(code=REFUSAL_CODE, message="Client refused the elicitation")
        if self.answer != "accept":
            return mcp_types.ElicitResult(action=self.answer)  # type: ignore[arg-type]
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            return mcp_types.ElicitResult(action="accept")
        content = self.content if self.content is not None else sample_content(schema)
        return mcp_types.ElicitResult(action="accept", content=content)


class ProgressPrinter:
    def __init__(self, emit: Emitter) -> None:
        self.emit = emit

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.emit("progress", progress=progress, total=total, message=message)


def _texts(blocks: Sequence[Any]) -> str:
    parts = []
    for block in blocks:
        text = getattr(block, "text", None)
        if text is None:
            inner = getattr(block, "content", None) or getattr(block, "resource", None)
            text = getattr(inner, "text", None)
        if text is not None:
            parts.append(str(text))
    return "\n".join(parts)


async def _run(args: argparse.Namespace, emit: Emitter) -> None:
    elicitor = Elicitor(emit, args.answer, json.loads(args.content) if args.content else None)
    target: str | StdioServerParameters = args.url
    if args.command:
        command = json.loads(args.command)
        target = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(
        target,
        mode=args.mode,
        elicitation_callback=None if args.no_callback else elicitor,
        cache=None,
    ) as client:
        emit("protocol", version=client.protocol_version)
        if args.ping:
            await client.send_ping()
            emit("ping")
        if args.list:
            tools = await client.list_tools()
            resources = await client.list_resources()
            prompts = await client.list_prompts()
            emit(
                "list",
                tools=sorted(t.name for t in tools.tools),
                resources=sorted(str(r.uri) for r in resources.resources),
                prompts=sorted(p.name for p in prompts.prompts),
            )
        if args.tool:
            result = await client.call_tool(
                args.tool,
                json.loads(args.args),
                progress_callback=ProgressPrinter(emit) if args.progress else None,
            )
            emit("result", isError=bool(result.is_error), text=_texts(result.content))
        if args.prompt:
            prompt = await client.get_prompt(args.prompt, json.loads(args.args))
            emit("result", isError=False, text=_texts([m.content for m in prompt.messages]))
        if args.read:
            read = await client.read_resource(args.read)
            emit("result", isError=False, text=_texts(read.contents))


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def run(args: argparse.Namespace, emit: Emitter) -> None:
    """Run the client; report any failure as an ``error``/``exception`` event."""
    try:
        await _run(args, emit)
    except BaseException as raised:  # the outcome *is* the report; never a traceback
        exc = _leaf(raised)
        if isinstance(exc, MCPError):
            emit("error", code=exc.code, message=exc.message)
        elif isinstance(exc, Exception):
            emit("exception", type=type(exc).__name__)
        else:
            raise


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url")
    target.add_argument("--command", help="JSON list: a server command to run over stdio")
    parser.add_argument("--mode", required=True, choices=["legacy", "2026-07-28", "auto"])
    parser.add_argument("--tool", default=None)
    parser.add_argument("--prompt", default=None, help="prompts/get this prompt (with --args)")
    parser.add_argument("--read", default=None, help="resources/read this URI")
    parser.add_argument("--args", default="{}", help="tool/prompt arguments as JSON")
    parser.add_argument("--answer", default="accept", choices=ANSWERS)
    parser.add_argument("--content", default=None, help="form content (JSON) when accepting")
    parser.add_argument("--progress", action="store_true", help="send a progress callback")
    parser.add_argument("--list", action="store_true", help="list tools, resources and prompts")
    parser.add_argument("--ping", action="store_true", help="ping the server first")
    parser.add_argument(
        "--no-callback", action="store_true", help="no elicitation callback (no capability)"
    )
    return parser.parse_args(argv)


async def serve() -> None:
    """Worker mode: run each stdin line ``{"run": N, "argv": [...]}`` as a fresh client, runs
    concurrently; each run's lines carry ``"run": N`` and end with ``{"event": "done"}``.

    It saves the 1-2 s of SDK import a new process costs per run; every run still builds its
    own ``Client`` (its own connections, session and state)."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def one(run_id: int, argv: list[str]) -> None:
        emit = Emitter(run_id)
        try:
            await run(parse_args(argv), emit)
        finally:
            emit("done")

    while line := await loop.run_in_executor(None, sys.stdin.readline):
        command = json.loads(line)
        task = asyncio.create_task(one(int(command["run"]), list(command["argv"])))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--serve"]:
        asyncio.run(serve())
    else:
        asyncio.run(run(parse_args(arguments), Emitter()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
