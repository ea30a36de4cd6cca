"""A fast, deterministic fake MCP server for the proxy benchmark (aiohttp, no SDK).

The shape of each answer is chosen by the request's query string, so every proxy under test
forwards the same bytes:

* ``POST /mcp`` ``initialize`` → a 2025-11-25 result and a fresh ``Mcp-Session-Id``;
  notifications and JSON-RPC responses → 202; ``ping`` → ``{}``;
* ``tools/list?size=N`` → a ``tools/list`` result of about N bytes (tools with input schemas);
* ``tools/call?size=N`` → a text result of about N bytes;
* ``tools/call?sse=N&interval_ms=X`` → an SSE stream of N progress notifications X ms apart,
  each carrying the send time (``time.monotonic_ns()``, the same clock in every process) in its
  ``message``, then the result;
* ``tools/call?elicit=1`` → a 2026 ``InputRequiredResult`` with one clean form elicitation; the
  retry (``params.inputResponses`` present) → a complete result;
* ``GET /mcp`` → an SSE stream kept open and idle until the client goes away;
* ``DELETE /mcp`` → 200.

Run: ``python bench/fake_upstream.py --port PORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import time
from typing import Any

from aiohttp import web

MODERN = "2026-07-28"
SERVER_INFO = {"name": "bench-upstream", "version": "1.0"}
_JSON = "application/json"
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}

ELICIT_PARAMS: dict[str, Any] = {
    "message": "Please tell us who is filing this report",
    "mode": "form",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Your name"},
            "team": {"type": "string", "title": "Team"},
        },
        "required": ["name"],
    },
}


def tool_entry(i: int) -> dict[str, Any]:
    """One ``tools/list`` entry shaped like a real server's (name, description, schema)."""
    return {
        "name": f"tool_{i}",
        "description": f"Search the issue tracker of project {i} and summarise matching tickets",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "free-text search query"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "state": {"type": "string", "enum": ["open", "closed", "all"]},
            },
            "required": ["query"],
        },
    }


def tools_list_result(size: int) -> dict[str, Any]:
    """A ``tools/list`` result whose JSON is about ``size`` bytes (at least one tool)."""
    one = len(json.dumps(tool_entry(0), separators=(",", ":"))) + 1
    return {"tools": [tool_entry(i) for i in range(max(1, round(size / one)))]}


def text_result(size: int) -> dict[str, Any]:
    words = "the quick brown fox jumps over the lazy dog 0123456789 "
    text = (words * (size // len(words) + 1))[: max(0, size - 60)]
    return {"content": [{"type": "text", "text": text}], "isError": False}


class _Canned:
    """Result bodies cached per (kind, size, era); the id is spliced in per request."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, bool], tuple[bytes, bytes]] = {}

    def body(self, kind: str, size: int, modern: bool, msg_id: Any) -> bytes:
        key = (kind, size, modern)
        parts = self._cache.get(key)
        if parts is None:
            result: dict[str, Any]
            if kind == "tools/list":
                result = tools_list_result(size)
            elif kind == "tools/call":
                result = text_result(size)
            else:
                result = {}
            if modern:
                result = {**result, "resultType": "complete"}
            tail = json.dumps(result, separators=(",", ":")).encode()
            parts = (b'{"jsonrpc":"2.0","id":', b',"result":' + tail + b"}")
            self._cache[key] = parts
        return parts[0] + json.dumps(msg_id).encode() + parts[1]


def _reply(msg_id: Any, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}).encode()


def sse_event(payload: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class FakeUpstream:
    def __init__(self) -> None:
        self._canned = _Canned()
        self._sessions = itertools.count(1)
        self._states = itertools.count(1)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_post("/mcp", self.post)
        app.router.add_get("/mcp", self.get)
        app.router.add_delete("/mcp", self.delete)
        return app

    async def post(self, request: web.Request) -> web.StreamResponse:
        msg = json.loads(await request.read())
        method = msg.get("method")
        msg_id = msg.get("id")
        if method is None or msg_id is None:  # a response or a notification
            return web.Response(status=202)
        modern = request.headers.get("MCP-Protocol-Version") == MODERN
        query = request.query
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO,
            }
            session = f"bench-{next(self._sessions):08d}"
            return web.Response(
                body=_reply(msg_id, result), content_type=_JSON, headers={"Mcp-Session-Id": session}
            )
        if method == "tools/call" and "elicit" in query:
            return self._elicit(msg_id, msg.get("params") or {})
        if method == "tools/call" and "sse" in query:
            return await self._stream(
                request, msg_id, int(query["sse"]), float(query.get("interval_ms", "1")), modern
            )
        size = int(query.get("size", "0"))
        body = self._canned.body(
            method if method in ("tools/list", "tools/call") else "", size, modern, msg_id
        )
        return web.Response(body=body, content_type=_JSON)

    def _elicit(self, msg_id: Any, params: dict[str, Any]) -> web.Response:
        if "inputResponses" in params:
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": "report filed"}],
                "isError": False,
                "resultType": "complete",
            }
        else:
            result = {
                "inputRequests": {
                    "who": {"method": "elicitation/create", "params": ELICIT_PARAMS},
                },
                "requestState": f"state-{next(self._states)}",
                "resultType": "input_required",
                "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
            }
        return web.Response(body=_reply(msg_id, result), content_type=_JSON)

    async def _stream(
        self, request: web.Request, msg_id: Any, events: int, interval_ms: float, modern: bool
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers=_SSE_HEADERS)
        await resp.prepare(request)
        for i in range(events):
            await asyncio.sleep(interval_ms / 1000)
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {
                    "progressToken": 1,
                    "progress": i + 1,
                    "total": events,
                    "message": f"t={time.monotonic_ns()}",
                },
            }
            await resp.write(sse_event(note))
        result = text_result(64)
        if modern:
            result["resultType"] = "complete"
        await resp.write(sse_event({"jsonrpc": "2.0", "id": msg_id, "result": result}))
        await resp.write_eof()
        return resp

    async def get(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers=_SSE_HEADERS)
        await resp.prepare(request)
        await resp.write(b": idle\n\n")
        await asyncio.Event().wait()  # cancelled when the client disconnects
        return resp

    async def delete(self, request: web.Request) -> web.Response:
        return web.Response(status=200)


async def start(host: str, port: int) -> web.AppRunner:
    """Start the fake upstream on ``host:port`` in the running loop; the caller cleans up."""
    runner = web.AppRunner(
        FakeUpstream().app(), handler_cancellation=True, access_log=None, shutdown_timeout=0.5
    )
    await runner.setup()
    await web.TCPSite(runner, host, port, backlog=4096).start()
    return runner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    async def serve() -> None:
        runner = await start(args.host, args.port)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
