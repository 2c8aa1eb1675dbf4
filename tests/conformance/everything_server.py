"""The server the official MCP conformance suite runs against (`scripts/conformance`).

Written with trio-mcp's public API only, the way a user would write a server: it provides each
tool, resource and prompt the suite's server scenarios use, with the behaviour the scenario's
"Server Implementation Requirements" describe. Where trio-mcp has no such feature yet (asking
the client for sampling or elicitation, resumable SSE, tasks), the fixture is left out and its
scenario is listed in `expected-failures.yml` with the reason.

Run: `python tests/conformance/everything_server.py --port 3001` serves Streamable HTTP at
http://127.0.0.1:3001/mcp until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import base64
import logging
import sys
from typing import Annotated, Any

import trio

from trio_mcp import (
    AudioContent,
    Context,
    EmbeddedResource,
    ImageContent,
    Param,
    PromptMessage,
    Server,
    TextContent,
    ToolError,
    run,
)

server = Server("trio-mcp-conformance", "1.0.0")

# A 1x1 red PNG and a 1-sample 8 kHz mono WAV: the smallest valid files of each kind.
RED_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
SILENT_WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==")


@server.tool("test_simple_text", "Returns a simple text response", inline=True)
def simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool("test_image_content", "Returns an image (a 1x1 red PNG)", inline=True)
def image_content() -> ImageContent:
    return ImageContent(RED_PIXEL_PNG, "image/png")


@server.tool("test_audio_content", "Returns a short WAV sound", inline=True)
def audio_content() -> AudioContent:
    return AudioContent(SILENT_WAV, "audio/wav")


@server.tool("test_embedded_resource", "Returns an embedded text resource", inline=True)
def embedded_resource() -> EmbeddedResource:
    return EmbeddedResource(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@server.tool("test_multiple_content_types", "Returns text, an image and a resource", inline=True)
def multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    return [
        TextContent("Multiple content types test:"),
        ImageContent(RED_PIXEL_PNG, "image/png"),
        EmbeddedResource(
            "test://mixed-content-resource",
            text='{"test":"data","value":123}',
            mime_type="application/json",
        ),
    ]


@server.tool("test_tool_with_logging", "Sends three log messages while it runs")
async def tool_with_logging(ctx: Context) -> str:
    await ctx.info("Tool execution started")
    await trio.sleep(0.05)
    await ctx.info("Tool processing data")
    await trio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool("test_logging_tool", "Logs one message at info level")
async def logging_tool(ctx: Context) -> str:
    # Under 2026-07-28 a request that names no log level must get no log messages; the
    # server's Context decides that, the tool just logs.
    await ctx.info("test_logging_tool ran")
    return "logged"


@server.tool("test_error_handling", "Always fails", inline=True)
def error_handling() -> str:
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100")
async def tool_with_progress(ctx: Context) -> str:
    await ctx.report_progress(0, 100)
    await trio.sleep(0.05)
    await ctx.report_progress(50, 100)
    await trio.sleep(0.05)
    await ctx.report_progress(100, 100)
    return "Tool with progress executed successfully"


@server.tool("test_custom_headers", "Echoes a region that travels in the Mcp-Param-Region header")
def custom_headers(
    region: Annotated[str, Param("Where to route the request", header="Region")],
) -> str:
    return f"region={region}"


# JSON Schema 2020-12 keywords ($schema, $defs, $ref, $anchor, allOf/anyOf, if/then/else) must
# reach the client as written (SEP-1613, SEP-2106), so this tool takes a hand-written schema: a
# contact needs a phone or an email, and the one its contactMethod names.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _json_schema_2020_12(arguments: dict[str, Any]) -> str:
    return f"Received: {sorted(arguments)}"


server.add_raw_tool(
    "json_schema_2020_12_tool",
    JSON_SCHEMA_2020_12,
    _json_schema_2020_12,
    description="Tool with JSON Schema 2020-12 features",
    inline=True,
)


# -- resources (resources-list, -read-text, -read-binary, -templates-read, -subscribe,
# -unsubscribe; caching reads the first listed resource) ------------------------------------------

server.add_resource(
    "test://static-text",
    "This is the content of the static text resource.",
    name="static-text",
    description="A static text resource",
    mime_type="text/plain",
)
server.add_resource(
    "test://static-binary",
    RED_PIXEL_PNG,
    name="static-binary",
    description="A static binary resource (a 1x1 red PNG)",
    mime_type="image/png",
)


@server.resource("test://template/{id}/data", mime_type="application/json", inline=True)
def template_data(id: str) -> dict[str, Any]:
    """A resource template whose data names its id."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource("test://watched-resource", mime_type="text/plain", inline=True)
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# -- prompts (prompts-list, prompts-get-*) and completion (completion-complete) ------------------


@server.prompt("test_simple_prompt", inline=True)
def simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


def _complete_arg1(value: str) -> list[str]:
    return [word for word in ("paris", "park", "party", "test") if word.startswith(value)]


@server.prompt("test_prompt_with_arguments", inline=True, completions={"arg1": _complete_arg1})
def prompt_with_arguments(
    arg1: Annotated[str, Param("First test argument")],
    arg2: Annotated[str, Param("Second test argument")],
) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt("test_prompt_with_embedded_resource", inline=True)
def prompt_with_embedded_resource(
    resourceUri: Annotated[str, Param("URI of the resource to embed")],  # noqa: N803 - the suite's
) -> list[PromptMessage]:
    """A prompt that embeds a resource."""
    return [
        PromptMessage(
            "user",
            EmbeddedResource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            ),
        ),
        PromptMessage("user", "Please process the embedded resource above."),
    ]


@server.prompt("test_prompt_with_image", inline=True)
def prompt_with_image() -> list[PromptMessage]:
    """A prompt with an image."""
    return [
        PromptMessage("user", ImageContent(RED_PIXEL_PNG, "image/png")),
        PromptMessage("user", "Please analyze the image above."),
    ]


def main(argv: list[str] | None = None) -> None:
    """Serve the fixture over Streamable HTTP on loopback."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    run(server, "http", host=args.host, port=args.port)


if __name__ == "__main__":
    main()
