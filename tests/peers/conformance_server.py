"""The target server of the official MCP conformance suite, written with the SDK (``mcp`` 2.3.0).

``python tests/peers/conformance_server.py --port N``

It provides the fixed tool/prompt/resource names the suite's server scenarios call (protocol.md
§11). The app is built with the default ``host="127.0.0.1"``, so the SDK's own DNS-rebinding
protection is on when the suite talks to it directly. An in-memory event store makes
``server-sse-polling`` (SSE resumption with ``Last-Event-ID``) work.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp_types import (
    AudioContent,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field
from starlette.applications import Starlette

from gateway.demo.upstream import MemoryEventStore

# A 1x1 red PNG and a 1-sample 8 kHz mono WAV.
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV_B64 = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little")
    + (2).to_bytes(2, "little")
    + (16).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()

SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


class UserResponse(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def build_server() -> MCPServer[Any]:
    """The conformance target: every name the server scenarios call."""
    mcp: MCPServer[Any] = MCPServer("conformance-target", version="1.0.0", log_level="WARNING")
    _add_content_tools(mcp)
    _add_interactive_tools(mcp)
    _add_resources(mcp)
    _add_prompts(mcp)
    _add_handshake_handlers(mcp)
    return mcp


def _add_content_tools(mcp: MCPServer[Any]) -> None:
    @mcp.tool()
    async def test_simple_text() -> CallToolResult:
        """Returns simple text content."""
        return CallToolResult(content=[_text("This is a simple text response for testing.")])

    @mcp.tool()
    async def test_image_content() -> CallToolResult:
        """Returns image content."""
        image = ImageContent(type="image", data=PNG_B64, mime_type="image/png")
        return CallToolResult(content=[image])

    @mcp.tool()
    async def test_audio_content() -> CallToolResult:
        """Returns audio content."""
        audio = AudioContent(type="audio", data=WAV_B64, mime_type="audio/wav")
        return CallToolResult(content=[audio])

    @mcp.tool()
    async def test_embedded_resource() -> CallToolResult:
        """Returns an embedded resource."""
        resource = TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return CallToolResult(content=[EmbeddedResource(type="resource", resource=resource)])

    @mcp.tool()
    async def test_multiple_content_types() -> CallToolResult:
        """Returns text, image and resource content."""
        resource = TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return CallToolResult(
            content=[
                _text("Multiple content types test:"),
                ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
                EmbeddedResource(type="resource", resource=resource),
            ]
        )

    @mcp.tool()
    async def test_error_handling() -> CallToolResult:
        """Always fails (isError result)."""
        return CallToolResult(
            is_error=True, content=[_text("This tool intentionally returns an error for testing")]
        )

    async def json_schema_2020_12_tool(
        name: str | None = None, address: dict[str, Any] | None = None
    ) -> str:
        return f"name={name} address={json.dumps(address, sort_keys=True)}"

    mcp.add_tool(
        json_schema_2020_12_tool,
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
    )
    tool = mcp._tool_manager.get_tool("json_schema_2020_12_tool")
    if tool is None:  # pragma: no cover - registered just above
        raise RuntimeError("json_schema_2020_12_tool was not registered")
    tool.parameters = JSON_SCHEMA_2020_12


def _add_interactive_tools(mcp: MCPServer[Any]) -> None:
    @mcp.tool()
    async def test_tool_with_logging(ctx: Context[Any, Any]) -> str:
        """Sends three info log notifications."""
        await ctx.info("Tool execution started")
        await asyncio.sleep(0.05)
        await ctx.info("Tool processing data")
        await asyncio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return "Tool with logging executed successfully"

    @mcp.tool()
    async def test_tool_with_progress(ctx: Context[Any, Any]) -> str:
        """Reports progress 0, 50 and 100 of 100."""
        await ctx.report_progress(0, 100)
        await asyncio.sleep(0.05)
        await ctx.report_progress(50, 100)
        await asyncio.sleep(0.05)
        await ctx.report_progress(100, 100)
        return "Tool with progress executed successfully"

    @mcp.tool()
    async def test_sampling(prompt: str, ctx: Context[Any, Any]) -> str:
        """Asks the client's LLM (sampling/createMessage)."""
        result = await ctx.session.create_message(
            messages=[SamplingMessage(role="user", content=_text(prompt))],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
        text = getattr(result.content, "text", None)
        return f"LLM response: {text}"

    @mcp.tool()
    async def test_elicitation(message: str, ctx: Context[Any, Any]) -> str:
        """Asks the user for a username and an email address."""
        outcome = await ctx.elicit(message, UserResponse)
        data = getattr(outcome, "data", None)
        content = data.model_dump() if isinstance(data, BaseModel) else None
        return f"User response: action={outcome.action}, content={json.dumps(content)}"

    @mcp.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context[Any, Any]) -> str:
        """Elicitation whose schema has defaults for every primitive type."""
        result = await ctx.session.elicit_form(
            "Please review and update the form fields with defaults",
            SEP1034_SCHEMA,
            related_request_id=ctx.request_id,
        )
        content = json.dumps(result.content)
        return f"Elicitation completed: action={result.action}, content={content}"

    @mcp.tool()
    async def test_elicitation_sep1330_enums(ctx: Context[Any, Any]) -> str:
        """Elicitation with the five enum variants of SEP-1330."""
        result = await ctx.session.elicit_form(
            "Please select options from the enum fields",
            SEP1330_SCHEMA,
            related_request_id=ctx.request_id,
        )
        content = json.dumps(result.content)
        return f"Elicitation completed: action={result.action}, content={content}"

    @mcp.tool()
    async def test_reconnection(ctx: Context[Any, Any]) -> str:
        """Closes the SSE stream mid-call; the result arrives after the client resumes."""
        await asyncio.sleep(0.05)
        await ctx.close_sse_stream()
        await asyncio.sleep(0.3)
        return "Reconnection test completed successfully"


def _add_resources(mcp: MCPServer[Any]) -> None:
    @mcp.resource("test://static-text", mime_type="text/plain")
    def static_text() -> str:
        """A static text resource."""
        return "This is the content of the static text resource."

    @mcp.resource("test://static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        """A static binary resource (PNG)."""
        return base64.b64decode(PNG_B64)

    @mcp.resource("test://template/{id}/data", mime_type="application/json")
    def template_data(id: str) -> str:
        """A templated resource."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @mcp.resource("test://watched-resource", mime_type="text/plain")
    def watched() -> str:
        """A resource clients can subscribe to."""
        return "Watched resource content."


def _add_prompts(mcp: MCPServer[Any]) -> None:
    @mcp.prompt()
    def test_simple_prompt() -> str:
        """A simple prompt without arguments."""
        return "This is a simple prompt for testing."

    @mcp.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """A prompt with two required arguments."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @mcp.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
        """A prompt embedding a resource."""
        resource = TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(content=EmbeddedResource(type="resource", resource=resource)),
            UserMessage(content=_text("Please process the embedded resource above.")),
        ]

    @mcp.prompt()
    def test_prompt_with_image() -> list[Message]:
        """A prompt with an image."""
        return [
            UserMessage(content=ImageContent(type="image", data=PNG_B64, mime_type="image/png")),
            UserMessage(content=_text("Please analyze the image above.")),
        ]


def _add_handshake_handlers(mcp: MCPServer[Any]) -> None:
    """Methods ``MCPServer`` does not register itself (subscribe, log level, completion)."""
    subscribed: set[str] = set()
    lowlevel = mcp._lowlevel_server

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        subscribed.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed.discard(str(params.uri))
        return EmptyResult()

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        options = ["paris", "park", "party"]
        values = [value for value in options if value.startswith(params.argument.value)]
        return CompleteResult(
            completion=Completion(values=values, total=len(values), has_more=False)
        )

    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    lowlevel.add_request_handler("completion/complete", CompleteRequestParams, complete)


def build_app() -> Starlette:
    """Streamable HTTP app at ``/mcp``, localhost host (DNS-rebinding checks on), event store."""
    return build_server().streamable_http_app(event_store=MemoryEventStore(), retry_interval=200)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the SDK flags handshake-era features as deprecated
    uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
