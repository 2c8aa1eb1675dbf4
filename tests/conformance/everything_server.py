"""The server the official MCP conformance suite runs against (`scripts/conformance`).

Written with trio-mcp's public API only, the way a user would write a server: it provides each
tool, resource and prompt the suite's server scenarios use, with the behaviour the scenario's
"Server Implementation Requirements" describe. Where trio-mcp has no such feature yet, the
fixture is left out and its scenario is listed in `expected-failures.yml` with the reason.

Run: `python tests/conformance/everything_server.py --port 3001` serves Streamable HTTP at
http://127.0.0.1:3001/mcp until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import trio
from pydantic import BaseModel, Field

from trio_mcp import (
    AcceptedElicitation,
    AudioContent,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    EmbeddedResource,
    ImageContent,
    Param,
    PromptMessage,
    RemoteProtocolError,
    Server,
    TextContent,
    ToolError,
    run,
)
from trio_mcp.tasks import TaskSupport

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


@server.tool("test_reconnection", "Closes its SSE stream mid-call; the answer comes on resumption")
async def reconnection(ctx: Context) -> str:
    # SEP-1699 polling (server-sse-polling): the client reconnects with Last-Event-ID and the
    # answer is replayed from the event store. Where nothing could resume the stream (another
    # transport, 2026-07-28), the call simply answers on the stream it has.
    await ctx.close_sse_stream()
    await trio.sleep(0.1)
    return "Reconnection test completed successfully"


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


# -- skills (sep-2640-skills-*): one skill with a subfolder, for its directory reads; listed
# after the resources above, which the caching scenario reads first -------------------------------

server.add_skills(Path(__file__).resolve().parent / "skills")


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


# -- The server asks the client (issue 14) ------------------------------------------------------
# One function per scenario serves both eras: under 2025-11-25 each ask is a request on the
# call's stream; under 2026-07-28 it becomes an input-required result (the keys the scenarios
# name are given with `key=`; the state is sealed by the server).


class Contact(BaseModel):
    """The answer test_elicitation asks for."""

    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class Defaults(BaseModel):
    """Every primitive type with a default (SEP-1034)."""

    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


# The five enum shapes of SEP-1330, the legacy `enumNames` one among them: written out, as a
# raw schema, because trio-mcp's own answer types never produce the deprecated form.
SEP1330_ENUMS: dict[str, Any] = {
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


def _outcome_text(
    outcome: AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation,
) -> str:
    if isinstance(outcome, AcceptedElicitation):
        data = outcome.data if isinstance(outcome.data, dict) else outcome.data.model_dump()
        return f"action=accept, content={json.dumps(data)}"
    action = "decline" if isinstance(outcome, DeclinedElicitation) else "cancel"
    return f"action={action}, content=null"


@server.tool("test_sampling", "Asks the client's model to answer the prompt")
async def sampling(ctx: Context, prompt: str) -> str:
    reply = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {reply.text}"


@server.tool("test_elicitation", "Asks the user for a username and an email")
async def elicitation(ctx: Context, message: str) -> str:
    return f"User response: {_outcome_text(await ctx.elicit(message, Contact))}"


@server.tool("test_elicitation_sep1034_defaults", "Asks with a default for every field type")
async def elicitation_defaults(ctx: Context) -> str:
    outcome = await ctx.elicit("Please review and update the form fields with defaults", Defaults)
    return f"Elicitation completed: {_outcome_text(outcome)}"


@server.tool("test_elicitation_sep1330_enums", "Asks with the five enum shapes of SEP-1330")
async def elicitation_enums(ctx: Context) -> str:
    outcome = await ctx.elicit("Please select options from the enum fields", SEP1330_ENUMS)
    return f"Elicitation completed: {_outcome_text(outcome)}"


class PersonName(BaseModel):
    name: str


@server.tool("test_input_required_result_elicitation", "Asks the user's name")
async def mrtr_elicitation(ctx: Context) -> str:
    outcome = await ctx.elicit("What is your name?", PersonName, key="user_name")
    return (
        f"Hello, {outcome.data.name}!"
        if isinstance(outcome, AcceptedElicitation)
        else "Hello, stranger!"
    )


@server.tool("test_streaming_elicitation", "Asks the user's name (SEP-2575 stream check)")
async def streaming_elicitation(ctx: Context) -> str:
    return await mrtr_elicitation(ctx)


@server.tool("test_input_required_result_sampling", "Asks the client's model a question")
async def mrtr_sampling(ctx: Context) -> str:
    reply = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"The model says: {reply.text}"


@server.tool("test_input_required_result_list_roots", "Lists the client's roots")
async def mrtr_list_roots(ctx: Context) -> str:
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(f"{r.name or r.uri} ({r.uri})" for r in roots)


class Confirm(BaseModel):
    ok: bool


@server.tool("test_input_required_result_request_state", "Asks for a confirmation")
async def mrtr_request_state(ctx: Context) -> str:
    outcome = await ctx.elicit("Please confirm", Confirm, key="confirm")
    # Reaching here on a retry means the server opened and verified the sealed requestState.
    confirmed = isinstance(outcome, AcceptedElicitation) and outcome.data.ok
    return f"state-ok: confirmed={confirmed}"


@server.tool("test_input_required_result_tampered_state", "Asks for a confirmation")
async def mrtr_tampered_state(ctx: Context) -> str:
    return await mrtr_request_state(ctx)


@server.tool("test_input_required_result_multiple_inputs", "Asks three things in one round")
async def mrtr_multiple(ctx: Context) -> str:
    name, greeting, roots = await ctx.gather(
        ctx.elicit("What is your name?", PersonName, key="user_name"),
        ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    who = name.data.name if isinstance(name, AcceptedElicitation) else "stranger"
    return f"{greeting.text} {who} ({len(roots)} roots)"


class Color(BaseModel):
    color: str


@server.tool("test_input_required_result_multi_round", "Asks a name, then a colour")
async def mrtr_multi_round(ctx: Context) -> str:
    name = await ctx.elicit("Step 1: What is your name?", PersonName, key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", Color, key="step2")
    who = name.data.name if isinstance(name, AcceptedElicitation) else "?"
    hue = color.data.color if isinstance(color, AcceptedElicitation) else "?"
    return f"{who} likes {hue}"


@server.tool("test_input_required_result_capabilities", "Asks only what the client can answer")
async def mrtr_capabilities(ctx: Context) -> str:
    declared = ctx.client_capabilities
    asks: list[Any] = []
    if "elicitation" in declared:
        asks.append(ctx.elicit("What is your name?", PersonName, key="user_name"))
    if "sampling" in declared:
        asks.append(ctx.sample("Generate a greeting", max_tokens=50, key="greeting"))
    if "roots" in declared:
        asks.append(ctx.list_roots(key="client_roots"))
    answers = await ctx.gather(*asks)
    return f"answered {len(answers)} questions"


@server.tool("test_missing_capability", "Needs sampling, whatever the client declared")
async def missing_capability(ctx: Context) -> str:
    return (await ctx.sample("Say something", max_tokens=10)).text


# -- the tasks extension, io.modelcontextprotocol/tasks (the tasks-* scenarios) --------------------


@server.tool("greet", "Greets someone (never a task)", inline=True)
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool("slow_compute", "Sleeps `seconds`, then answers; a task", task=True)
async def slow_compute(seconds: float, label: str = "") -> str:
    await trio.sleep(seconds)
    return f"computed {label} after {seconds:g} s"


@server.tool(
    "failing_job",
    "Fails with a tool error after a second; runs only as a task",
    task=TaskSupport(required=True),
)
async def failing_job() -> str:
    await trio.sleep(1)
    raise ToolError("the job failed")


@server.tool("protocol_error_job", "Fails with a protocol error; a task", task=True)
async def protocol_error_job() -> str:
    await trio.sleep(0.1)
    raise RemoteProtocolError("Internal error: the job crashed", -32603)


class DeleteConfirmation(BaseModel):
    confirm: bool


@server.tool("confirm_delete", "Asks to confirm deleting a file; a task", task=True)
async def confirm_delete(filename: str, ctx: Context) -> str:
    outcome = await ctx.elicit(f"Delete {filename}?", DeleteConfirmation)
    if isinstance(outcome, AcceptedElicitation) and outcome.data.confirm:
        return f"deleted {filename}"
    return f"kept {filename}"


class NamedConfirmation(BaseModel):
    name: str = ""
    confirm: bool = False


@server.tool("multi_input", "Asks two questions at once; a task", task=True)
async def multi_input(ctx: Context) -> str:
    first, second = await ctx.gather(
        ctx.elicit("First answer?", NamedConfirmation),
        ctx.elicit("Second answer?", NamedConfirmation),
    )
    names = [o.data.name if isinstance(o, AcceptedElicitation) else "-" for o in (first, second)]
    return "answers: " + ", ".join(names)


@server.tool(
    "test_tool_with_task",
    "Asks a name (input-required round), then goes on as a task",
    task=TaskSupport(after=None, required=True),
)
async def tool_with_task(ctx: Context) -> str:
    outcome = await ctx.elicit("What is your name?", PersonName, key="user_name")
    who = outcome.data.name if isinstance(outcome, AcceptedElicitation) else "stranger"
    await ctx.become_task()
    await trio.sleep(0.2)
    return f"Hello, {who}! (from a task)"


# -- list changes on a subscriptions/listen stream (server-stateless) ------------------------------

DYNAMIC_TOOL = "test_dynamic_tool"
DYNAMIC_PROMPT = "test_dynamic_prompt"


def _dynamic() -> str:
    return "here for now"


@server.tool("test_trigger_tool_change", "Adds or removes test_dynamic_tool", inline=True)
def trigger_tool_change() -> str:
    if any(tool.name == DYNAMIC_TOOL for tool in server.tools):
        server.remove_tool(DYNAMIC_TOOL)
        return f"removed {DYNAMIC_TOOL}"
    server.add_tool(_dynamic, name=DYNAMIC_TOOL, description="Comes and goes", inline=True)
    return f"added {DYNAMIC_TOOL}"


@server.tool("test_trigger_prompt_change", "Adds or removes test_dynamic_prompt", inline=True)
def trigger_prompt_change() -> str:
    if any(prompt.name == DYNAMIC_PROMPT for prompt in server.prompts):
        server.remove_prompt(DYNAMIC_PROMPT)
        return f"removed {DYNAMIC_PROMPT}"
    server.add_prompt(_dynamic, name=DYNAMIC_PROMPT, description="Comes and goes", inline=True)
    return f"added {DYNAMIC_PROMPT}"


class PromptContext(BaseModel):
    context: str


@server.prompt("test_input_required_result_prompt")
async def mrtr_prompt(ctx: Context) -> str:
    """A prompt that asks the user what context to use first."""
    outcome = await ctx.elicit(
        "What context should the prompt use?", PromptContext, key="user_context"
    )
    context = outcome.data.context if isinstance(outcome, AcceptedElicitation) else "none"
    return f"Use this context: {context}"


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
