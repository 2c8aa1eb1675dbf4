"""Interop: the official `mcp` Python SDK client drives our servers as subprocesses over stdio.

The SDK (2.x) runs on anyio, so it runs here under trio (pytest-trio) and, once, under asyncio.
It connects in all three of its modes: "legacy" (the `initialize` handshake, which settles on
2025-11-25, the newest handshake revision both sides speak), "auto" (probes `server/discover`,
which we answer, so it settles on the stateless 2026-07-28) and pinned "2026-07-28" (no probe).
The SDK validates every result it receives with its own pydantic models, including
`structuredContent` against each tool's `outputSchema`, so a shape error fails these tests.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import trio
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import (
    BlobResourceContents,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

from tests.helpers import DEMO_TOOLS
from tests.stdio_peer import ECHO_TOOLS, ROOT
from tests.timing import scaled

# The SDK flags ping and logging as deprecated from 2026-07-28 on (even on a 2025-11-25
# connection); the handshake-era tests use them on purpose.
pytestmark = [
    pytest.mark.slow,  # every test here runs a peer's process
    pytest.mark.filterwarnings("ignore:ping is removed as of 2026-07-28"),
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
]

#: SDK connect mode -> the protocol version it ends up speaking with our server.
MODES = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}
#: Bounds a whole SDK session (spawn, handshake, calls, shutdown).
SESSION_TIMEOUT = scaled(60)


@asynccontextmanager
async def sdk_client(args: list[str], mode: str, **options: Any) -> AsyncIterator[Client]:
    """An SDK client over stdio to `python <args>`; fails on any traceback on the server side."""
    params = StdioServerParameters(
        command=sys.executable, args=args, cwd=ROOT, env={"TRIO_MCP_DEMO_SEED": "40000"}
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, **options) as client:
            yield client
        errlog.seek(0)
        stderr = errlog.read()
    assert "Traceback" not in stderr, stderr


def only_text(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def exercise_demo(mode: str) -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with sdk_client(["-m", "demo_tools"], mode) as client:
        assert client.protocol_version == MODES[mode]
        if mode != "2026-07-28":  # a pinned version skips discovery: nothing learnt then
            assert client.server_info is not None
            assert client.server_info.name == "trio-mcp-demo"
            assert client.server_capabilities.tools is not None

        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == DEMO_TOOLS
        add = listed.tools[0]
        assert add.input_schema["required"] == ["a", "b"]
        assert add.input_schema["additionalProperties"] is False

        added = await client.call_tool("calculator.add", {"a": 5, "b": 3})
        assert not added.is_error
        assert added.structured_content == {"result": 8}
        assert float(only_text(added)) == 8

        divided = await client.call_tool("calculator.divide", {"a": 5, "b": 0})
        assert divided.is_error
        assert only_text(divided) == "Cannot divide by zero"

        rolled = await client.call_tool(
            "wh40k.roll_dice", {"dice_count": 5, "dice_sides": 6, "flavor": "wound"}
        )
        assert not rolled.is_error
        roll = rolled.structured_content
        assert roll is not None
        assert len(roll["rolls"]) == 5
        assert all(1 <= r <= 6 for r in roll["rolls"])
        assert roll["total"] == sum(roll["rolls"])
        assert roll["successes"] == sum(r >= 4 for r in roll["rolls"])

        refused = await client.call_tool("wh40k.roll_dice", {"dice_count": 0})
        assert refused.is_error
        assert "dice_count" in only_text(refused)

        battle = await client.call_tool(
            "wh40k.battle_simulation",
            {"imperial_force": "Cadian 8th"},
            progress_callback=on_progress,
        )
        assert not battle.is_error
        report = battle.structured_content
        assert report is not None
        assert report["imperial_force"] == "Cadian 8th"
        assert set(report) >= {"enemy_force", "battlefield", "imperial_victory", "report"}
        assert [(done, total) for done, total, _ in updates] == [(1, 3), (2, 3), (3, 3)]

        if mode == "legacy":  # ping is gone from 2026-07-28 (the SDK warns if asked to)
            await client.send_ping()


@pytest.mark.parametrize("mode", list(MODES))
async def test_sdk_lists_and_calls_the_demo_tools_under_trio(mode: str) -> None:
    with trio.fail_after(SESSION_TIMEOUT):
        await exercise_demo(mode)


def test_sdk_lists_and_calls_the_demo_tools_under_asyncio() -> None:
    async def main() -> None:
        with anyio.fail_after(SESSION_TIMEOUT):
            await exercise_demo("legacy")
            await exercise_demo("auto")

    anyio.run(main, backend="asyncio")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_receives_log_messages(mode: str) -> None:
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    options: dict[str, Any] = {"logging_callback": on_log}
    if mode == "auto":  # 2026-07-28: each request opts in to log messages through its _meta
        options["log_level"] = "info"
    with trio.fail_after(SESSION_TIMEOUT):
        async with sdk_client(["-m", "trio_mcp", "run", ECHO_TOOLS], mode, **options) as client:
            if mode == "legacy":  # handshake era: logging/setLevel sets the session's level
                await client.set_logging_level("info")
            result = await client.call_tool("chatty", {"text": "hello"})
            assert only_text(result) == "hello"
    # debug is filtered out by the "info" level; the warning arrives, from its logger
    assert [(log.level, log.logger) for log in logs] == [("warning", "echo_tools")]
    assert logs[0].data == "warning: hello"


PRIMITIVES = str(ROOT / "tests" / "fixtures" / "primitives_server.py")


async def exercise_primitives(client: Client, version: str) -> None:
    """Read resources, get prompts and complete arguments of the primitives fixture."""
    listed = await client.list_resources()
    assert listed.resources[0].name == "factions"
    templates = await client.list_resource_templates()
    assert templates.resource_templates[0].uri_template == ("wh40k://units/{faction}/{unit_id}")
    read = await client.read_resource("wh40k://units/necrons/0")
    (content,) = read.contents
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "application/json"
    assert content.text == '{"faction":"necrons","unit_id":0,"name":"warriors"}'
    logo = await client.read_resource("wh40k://logo")
    assert isinstance(logo.contents[0], BlobResourceContents)

    prompts = await client.list_prompts()
    assert prompts.prompts[0].name == "wh40k.battle_briefing"
    briefing = await client.get_prompt(
        "wh40k.battle_briefing", {"attacker": "orks", "defender": "necrons", "turns": "2"}
    )
    assert [message.role for message in briefing.messages] == ["user", "assistant"]
    first = briefing.messages[0].content
    assert isinstance(first, TextContent)
    assert first.text == "orks attack necrons for 2 turns (short)."

    completed = await client.complete(
        PromptReference(type="ref/prompt", name="wh40k.battle_briefing"),
        {"name": "defender", "value": "s"},
    )
    assert completed.completion.values == ["space_marines"]
    units = await client.complete(
        ResourceTemplateReference(type="ref/resource", uri="wh40k://roster/{faction}/{name}"),
        {"name": "name", "value": ""},
        {"faction": "orks"},
    )
    assert units.completion.values == ["boyz", "nobz", "gretchin"]

    with pytest.raises(MCPError) as missing:
        await client.read_resource("wh40k://nowhere")
    assert missing.value.error.code == (-32602 if version == "2026-07-28" else -32002)


async def exercise_demo_codex(client: Client) -> None:
    """Read every demo resource (and a unit of every faction), get every prompt with every
    battlefield, and complete an argument: what issue 13 asks of the official SDK client."""
    listed = await client.list_resources()
    assert [r.uri for r in listed.resources] == [
        "wh40k://codex/factions",
        "wh40k://battles/latest",
        "skill://wh40k-rules/SKILL.md",
        "skill://wh40k-rules/references/wound-rolls.md",
    ]
    for listed_resource in listed.resources:
        read = await client.read_resource(listed_resource.uri)
        assert read.contents, listed_resource.uri
    factions = json.loads(only_text_contents(await client.read_resource("wh40k://codex/factions")))
    (template,) = (await client.list_resource_templates()).resource_templates
    for faction in factions:
        name = faction if isinstance(faction, str) else faction["id"]
        uri = template.uri_template.replace("{faction}", name).replace("{unit_id}", "0")
        unit = json.loads(only_text_contents(await client.read_resource(uri)))
        assert unit, uri
    for listed_prompt in (await client.list_prompts()).prompts:
        assert listed_prompt.name == "wh40k.battle_briefing"
        got = await client.get_prompt(
            listed_prompt.name, {"attacker": "orks", "defender": "necrons"}
        )
        assert got.messages
    completed = await client.complete(
        PromptReference(type="ref/prompt", name="wh40k.battle_briefing"),
        {"name": "defender", "value": "ty"},
    )
    assert completed.completion.values == ["tyranids"]


def only_text_contents(read: Any) -> str:
    (content,) = read.contents
    assert isinstance(content, TextResourceContents)
    return content.text


@pytest.mark.parametrize("mode", list(MODES))
async def test_sdk_reads_the_demo_codex_over_stdio(mode: str) -> None:
    with trio.fail_after(SESSION_TIMEOUT):
        async with sdk_client(["-m", "demo_tools"], mode) as client:
            await exercise_demo_codex(client)


@pytest.mark.parametrize("mode", list(MODES))
async def test_sdk_reads_resources_gets_prompts_and_completes(mode: str) -> None:
    with trio.fail_after(SESSION_TIMEOUT):
        async with sdk_client(["-m", "trio_mcp", "run", PRIMITIVES], mode) as client:
            await exercise_primitives(client, MODES[mode])
