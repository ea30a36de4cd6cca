"""A raw-bytes MCP upstream: a real asyncio TCP server on port 0 that writes exact bytes.

It speaks just enough MCP for a client through the gateway (``initialize``, notifications and
answers → 202, ``tools/list``, a resumption GET), and answers every other request with the next
scripted response, written byte for byte (status line, headers in order and repeated, any
framing), then closes the connection. With nothing scripted it answers a plain tool result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

UPSTREAM_SID = "raw-upstream-session"
MAX_HEAD = 65536


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def _response(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers)]
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _json(body: Any, status: str = "200 OK", extra: list[tuple[str, str]] | None = None) -> bytes:
    return _response(
        status,
        [("Content-Type", "application/json"), *(extra or [])],
        json.dumps(body).encode(),
    )


Scripted = bytes | Callable[[Any], bytes]
"""A raw response, or a function of the request's JSON-RPC id that gives one."""

ACCEPTED = _response("202 Accepted", [("Content-Type", "application/json")], b"")


@dataclass
class RawUpstream:
    """``script(...)`` queues raw responses for the next requests that are not part of the
    plumbing; ``seen`` records every request; ``written`` the scripted bytes as sent."""

    host: str = "127.0.0.1"
    port: int = 0
    queue: deque[Scripted] = field(default_factory=deque)
    seen: list[Seen] = field(default_factory=list)
    written: list[bytes] = field(default_factory=list)
    serve_get: bool = (
        False  # a standalone GET stream (no Last-Event-ID) gets the next scripted answer
    )
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task

    def script(self, *responses: Scripted, get: bool = False) -> None:
        self.serve_get = get
        self.queue.clear()
        self.queue.extend(responses)
        self.seen.clear()
        self.written.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            with contextlib.suppress(
                asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError
            ):
                request = await self._read(reader)
                if request is not None:
                    self.seen.append(request)
                    writer.write(self._answer(request))
                    await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            self._tasks.discard(task)

    async def _read(self, reader: asyncio.StreamReader) -> Seen | None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > MAX_HEAD:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = b""
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _read_chunked(reader)
        return Seen(method, target, headers, body)

    def _answer(self, request: Seen) -> bytes:
        if request.method == "DELETE":
            return _response("200 OK", [], b"")
        if request.method == "GET":
            if "last-event-id" in request.headers:
                # a resumption after a stream that ended early: end the call cleanly
                return _response(
                    "200 OK",
                    [("Content-Type", "text/event-stream")],
                    b"event: message\r\ndata: "
                    + json.dumps(_result(self._last_id(), modern=False)).encode()
                    + b"\r\n\r\n",
                )
            if self.serve_get and self.queue:
                return self._scripted(0)  # no request: id 0 for the result it may carry
            return _response("405 Method Not Allowed", [("Allow", "POST")], b"")
        message = request.json()
        if not isinstance(message, dict):
            return _json({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}})
        if message.get("method") == "initialize":
            version = (message.get("params") or {}).get("protocolVersion", "2025-11-25")
            init = {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "raw-upstream", "version": "1"},
            }
            return _json(
                {"jsonrpc": "2.0", "id": message.get("id"), "result": init},
                extra=[("Mcp-Session-Id", UPSTREAM_SID)],
            )
        if "id" not in message or "method" not in message:
            return ACCEPTED  # a notification, or an answer to a server request
        modern = "io.modelcontextprotocol/protocolVersion" in json.dumps(message.get("params"))
        if message["method"] == "tools/list":
            result: dict[str, Any] = {
                "tools": [{"name": "t", "inputSchema": {"type": "object"}}],
            }
            if modern:
                result.update(resultType="complete", ttlMs=0, cacheScope="private")
            return _json({"jsonrpc": "2.0", "id": message["id"], "result": result})
        if self.queue:
            return self._scripted(message["id"])
        return _json(_result(message["id"], modern=modern))

    def _scripted(self, request_id: Any) -> bytes:
        item = self.queue.popleft()
        raw = item(request_id) if callable(item) else item
        self.written.append(raw)
        return raw

    def _last_id(self) -> Any:
        for request in reversed(self.seen):
            message = request.json()
            if isinstance(message, dict) and message.get("method") == "tools/call":
                return message.get("id")
        return None


def _result(request_id: Any, *, modern: bool) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": "done"}], "isError": False}
    if modern:
        result["resultType"] = "complete"
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)
