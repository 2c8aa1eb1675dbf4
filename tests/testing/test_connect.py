"""`trio_mcp.testing.connect`: the real client on an in-process server, every message checked.

A whole session with the demo server, under every revision, passes the check both ways; a
server or client message that breaks its schema ends the connection with SchemaViolationError.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

import trio_mcp.testing
from demo_tools import build_server, calculator
from tests.helpers import DEMO_TOOLS, MODERN, python_json
from trio_mcp import (
    SUPPORTED_VERSIONS,
    Client,
    Context,
    LogMessage,
    Progress,
    RequestError,
    Server,
    tool,
)
from trio_mcp.testing import SchemaViolationError


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
async def test_a_whole_demo_session_conforms_in_every_revision(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    logs: list[LogMessage] = []
    progress: list[Progress] = []
    async with trio_mcp.testing.connect(
        build_server(), protocol_version=version, log_handler=logs.append
    ) as client:
        assert isinstance(client, Client)
        assert client.protocol_version == version
        assert [t.name for t in await client.list_tools()] == DEMO_TOOLS
        await client.ping()
        await client.set_log_level("debug")
        added = await client.call_tool("calculator.add", {"a": 5, "b": 3})
        assert added.text == "8.0"
        divided = await client.call_tool("calculator.divide", {"a": 1, "b": 0})
        assert divided.is_error
        assert divided.text == "Cannot divide by zero"
        refused = await client.call_tool("wh40k.roll_dice", {"dice_count": 0})
        assert refused.is_error
        battle = await client.call_tool("wh40k.battle_simulation", {}, progress=progress.append)
        assert not battle.is_error
        with pytest.raises(RequestError) as unknown:
            await client.call_tool("no.such.tool")
        assert unknown.value.code == -32602
    assert [p.progress for p in progress] == [1, 2, 3]


def buggy_server() -> Server:
    """A server with a tool's bug: `halfway` reports progress as a string (it is a number)."""

    @tool("halfway")
    async def halfway(ctx: Context) -> str:
        await ctx.report_progress("half")  # type: ignore[arg-type]
        return "done"

    server = Server("buggy")
    server.add_tool(halfway)
    return server


async def test_a_server_message_that_breaks_the_schema_ends_the_connection() -> None:
    # A tool's bug: progress must be a number. The client's reader meets the notification
    # first and the error comes out of the `async with`.
    server = buggy_server()
    with pytest.raises(SchemaViolationError) as caught:
        async with trio_mcp.testing.connect(server) as client:
            await client.call_tool("halfway", progress=lambda _: None)
    error = caught.value
    assert str(error).startswith("the server's notification notifications/progress")
    assert error.definition == "ProgressNotification"
    assert error.version == "2025-11-25"
    assert error.instance_path == "params/progress"
    assert error.schema_path == "#/$defs/ProgressNotificationParams/properties/progress/type"
    assert error.message["params"]["progress"] == "half"


async def test_without_the_check_the_same_session_goes_on() -> None:
    server = buggy_server()
    async with trio_mcp.testing.connect(server, check_schema=False) as client:
        result = await client.call_tool("halfway", progress=lambda _: None)
    assert result.text == "done"


async def test_a_client_message_that_breaks_the_schema_ends_the_connection() -> None:
    # The server's reader meets the request before the server answers it.
    with pytest.raises(SchemaViolationError) as caught:
        async with trio_mcp.testing.connect(build_server()) as client:
            await client.request("tools/call", {"arguments": {"a": 1}})  # no name
    assert str(caught.value).startswith("the client's request tools/call (id ")
    assert caught.value.definition == "CallToolRequest"
    assert "'name' is a required property" in str(caught.value)


async def test_the_stateless_revision_is_checked_per_request() -> None:
    # 2026-07-28 has no handshake: the check follows each request's `_meta` revision.
    async with trio_mcp.testing.connect(build_server(), protocol_version=MODERN) as client:
        assert client.protocol_version == MODERN
        await client.ping()  # server/discover: 2026-07-28 has no ping
        power = await client.call_tool("calculator.power", {"base": 2, "exponent": 10})
        assert power.structured == {"result": 1024.0}


async def test_a_method_the_revision_removed_is_a_violation() -> None:
    # `ping` is not among 2026-07-28's client requests: sending it breaks that schema.
    with pytest.raises(SchemaViolationError) as caught:
        async with trio_mcp.testing.connect(build_server(), protocol_version=MODERN) as client:
            await client.request("ping")
    assert str(caught.value).startswith(
        "the client's request ping (id 2) does not match ClientRequest of MCP 2026-07-28: "
        "'ping' is not one of its methods (completion/complete, prompts/get,"
    )
    assert caught.value.schema_path == "#/$defs/ClientRequest"


async def test_a_server_limited_to_an_older_revision_is_checked_in_the_one_it_settles_on() -> None:
    # The client asks for 2026-07-28 (server/discover, refused), falls back to initialize, and
    # the server settles on 2024-11-05: each message is checked in the revision it speaks.
    old = Server("old", versions=("2024-11-05",))
    old.add_tools(calculator)
    async with trio_mcp.testing.connect(old, protocol_version=MODERN) as client:
        assert client.protocol_version == "2024-11-05"
        assert (await client.call_tool("calculator.add", {"a": 1, "b": 2})).text == "3.0"


async def test_an_unknown_revision_is_refused() -> None:
    with pytest.raises(ValueError, match="2099-01-01"):
        async with trio_mcp.testing.connect(build_server(), protocol_version="2099-01-01"):
            pass


_WITHOUT_JSONSCHEMA = """
import json, sys
sys.modules["jsonschema"] = None  # as if it were not installed
import trio, trio_mcp.testing
from trio_mcp import Server

async def main(check):
    try:
        async with trio_mcp.testing.connect(Server("s"), check_schema=check) as client:
            await client.ping()
    except ImportError as exc:
        return str(exc)
    return "ok"

print(json.dumps([trio.run(main, False), trio.run(main, True)]))
"""


def test_without_jsonschema_the_check_says_how_to_install_it() -> None:
    unchecked, checked = python_json(_WITHOUT_JSONSCHEMA)
    assert unchecked == "ok"
    assert 'pip install "trio-mcp[testing]"' in checked
    assert "check_schema=False" in checked


def test_importing_the_kit_loads_neither_jsonschema_nor_pytest() -> None:
    loaded = python_json(
        "import json, sys, trio_mcp.testing; "
        "print(json.dumps(sorted(m for m in ('jsonschema', 'pytest') if m in sys.modules)))"
    )
    assert loaded == []


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_task_tools_can_be_tested_with_tasks_declared(version: str) -> None:
    server = Server("tasks")

    @server.tool(task=True)
    async def slow(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "halfway")
        await trio.sleep(0.01)
        return "done"

    seen: list[str] = []
    async with trio_mcp.testing.connect(server, protocol_version=version, tasks=True) as client:
        result = await client.call_tool("slow", on_task_status=lambda t: seen.append(t.status))
        task = await client.call_tool_as_task("slow")
        assert isinstance(task, trio_mcp.tasks.TaskInfo)
        waited = await client.wait_task(task)
    assert result.text == waited.text == "done"
    assert seen[-1] == "completed"
