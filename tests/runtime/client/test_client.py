"""The client (`open_client`) against real servers over every transport, and its failure modes.

Peers: the demo server in-process (memory channels), as a stdio subprocess, over Streamable
HTTP and legacy SSE (`serve_http` on a loopback port in the test's nursery), and the official
MCP SDK's server over stdio. Waits are bounded by `trio.fail_after`; nothing sleeps to wait.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

import demo_tools
from tests.fixtures import echo_tools
from tests.helpers import DEMO_TOOLS, REPO_ROOT, scripted
from tests.http_helpers import Gate, http_response, json_response, read_request, serve, serve_bare
from tests.sdk_servers import SDK_SERVER, sdk_http_server
from tests.timing import scaled
from trio_mcp import (
    Client,
    ConnectionClosed,
    LogMessage,
    Progress,
    RemoteProtocolError,
    RequestError,
    Server,
    TextContent,
    Timeouts,
    ToolCallError,
    ToolResult,
    TransportError,
    open_client,
)
from trio_mcp._core.versions import HANDSHAKE_VERSIONS
from trio_mcp._run import serve_http
from trio_mcp.http import RetryPolicy

ROOT = REPO_ROOT
FIXTURES = ROOT / "tests" / "fixtures"
ECHO_TOOLS = str(FIXTURES / "echo_tools.py")
CLIENT_TOOLS = str(FIXTURES / "client_tools.py")
#: Bounds any one test's waits on a subprocess or a socket.
TIMEOUT = scaled(60)


def serve_command(target: str) -> list[str]:
    return [sys.executable, "-m", "trio_mcp", "run", target]


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


# -- one behaviour, every transport ---------------------------------------------------------------

Connect = Callable[[Server], Any]


@asynccontextmanager
async def target_for(kind: str, server: Server | None = None) -> AsyncIterator[Any]:
    """What `open_client` takes to reach the demo server (or `server`) over `kind`."""
    server = server or demo_tools.build_server()
    if kind == "memory":
        yield server
    elif kind == "stdio":
        yield [sys.executable, "-m", "demo_tools"]
    else:
        async with serve(server) as served:
            yield served.base + ("/sse" if kind == "sse" else "/mcp")


@asynccontextmanager
async def connect(kind: str, server: Server | None = None, **options: Any) -> AsyncIterator[Client]:
    async with target_for(kind, server) as target, open_client(target, **options) as client:
        yield client


TRANSPORTS = ["memory", "stdio", "streamable-http", "sse"]


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_demo_server_over_every_transport(kind: str) -> None:
    progress: list[Progress] = []
    with trio.fail_after(TIMEOUT):
        async with connect(kind) as client:
            assert client.server_info["name"] == "trio-mcp-demo"
            assert client.protocol_version == HANDSHAKE_VERSIONS[0]
            assert client.instructions
            assert client.server_capabilities["tools"] == {"listChanged": True}
            await client.ping()
            tools = {tool.name: tool for tool in await client.list_tools()}
            assert len(tools) == len(DEMO_TOOLS)
            dice = {param.name: param for param in tools["wh40k.roll_dice"].parameters}
            assert dice["dice_count"].required
            assert dice["dice_count"].type == "integer 1..100"
            assert not dice["flavor"].required
            assert dice["flavor"].default == "hit"
            assert dice["flavor"].type == "hit|wound|save"

            added = await client.call_tool("calculator.add", {"a": 5, "b": 3})
            assert added.structured == {"result": 8.0}
            assert added.text == "8.0"
            assert added.content == (TextContent("8.0"),)
            assert not added.is_error

            divided = await client.call_tool("calculator.divide", {"a": 10, "b": 0})
            assert divided.is_error
            assert divided.text == "Cannot divide by zero"
            assert divided.structured is None

            battle = await client.call_tool(
                "wh40k.battle_simulation",
                {"imperial_force": "Space Marines", "enemy_force": "Orks"},
                progress=progress.append,
            )
            assert battle.structured is not None
            assert battle.structured["imperial_force"] == "Space Marines"
            assert client.in_flight == 0
    assert [p.progress for p in progress] == [1, 2, 3]
    assert all(p.total == 3 for p in progress)
    assert progress[0].message is not None
    assert progress[0].message.startswith("Deployment on ")


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_many_concurrent_calls_share_one_connection(kind: str) -> None:
    results: dict[int, Any] = {}
    with trio.fail_after(TIMEOUT):
        async with connect(kind) as client:

            async def one(i: int) -> None:
                result = await client.call_tool("calculator.multiply", {"a": i, "b": 3})
                results[i] = result.structured

            async with trio.open_nursery() as nursery:
                for i in range(40):
                    nursery.start_soon(one, i)
            assert client.in_flight == 0
    assert results == {i: {"result": float(i * 3)} for i in range(40)}


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_an_error_in_the_block_comes_out_as_itself(kind: str) -> None:
    async def use_and_fail(target: Any) -> None:
        async with open_client(target) as client:
            await client.ping()
            raise KeyError("mine")

    with trio.fail_after(TIMEOUT):
        async with target_for(kind) as target:
            with pytest.raises(KeyError) as info:
                await use_and_fail(target)
    assert not isinstance(info.value, BaseExceptionGroup)
    assert info.value.__context__ is None


@pytest.mark.parametrize("kind", ["memory", "streamable-http", "sse"])
async def test_cancelled_call_tells_the_server_and_frees_its_id(kind: str) -> None:
    gate = Gate()
    with trio.fail_after(TIMEOUT):
        async with connect(kind, gate.server()) as client:
            with trio.CancelScope() as scope:

                async def cancel_when_started() -> None:
                    await gate.started.wait()
                    assert client.in_flight == 1
                    scope.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(cancel_when_started)
                    await client.call_tool("test.wait")
            assert scope.cancelled_caught
            await gate.cancelled.wait()  # the server's tool was cancelled, not left running
            assert client.in_flight == 0
            # The connection goes on.
            assert (await client.call_tool("calculator.add", {"a": 1, "b": 1})).text == "2.0"


async def test_calls_left_waiting_when_the_client_closes_fail() -> None:
    gate = Gate()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            async with open_client(gate.server()) as client:

                async def outlives_the_client() -> None:
                    with pytest.raises(ConnectionClosed, match="the client was closed"):
                        await client.call_tool("test.wait")

                nursery.start_soon(outlives_the_client)
                await gate.started.wait()
            with pytest.raises(ConnectionClosed, match="the client was closed"):
                await client.ping()


async def test_timeout_through_fail_after(autojump_clock: trio.testing.MockClock) -> None:
    gate = Gate()
    async with open_client(gate.server()) as client:
        with pytest.raises(trio.TooSlowError):
            with trio.fail_after(30):
                await client.call_tool("test.wait")
        assert client.in_flight == 0
        with trio.fail_after(1):
            await gate.cancelled.wait()
        assert (await client.call_tool("calculator.add", {"a": 2, "b": 2})).text == "4.0"


# -- results, errors and schemas (in-process) -----------------------------------------------------


async def test_raise_on_error_raises_tool_call_error() -> None:
    async with open_client(demo_tools.build_server()) as client:
        with pytest.raises(ToolCallError) as info:
            await client.call_tool("calculator.divide", {"a": 1, "b": 0}, raise_on_error=True)
    assert info.value.tool == "calculator.divide"
    assert info.value.result.is_error
    assert "Cannot divide by zero" in str(info.value)


async def test_unknown_tool_is_a_request_error() -> None:
    async with open_client(demo_tools.build_server()) as client:
        with pytest.raises(RequestError) as info:
            await client.call_tool("no.such.tool")
    assert info.value.code == -32602
    assert "Unknown tool: no.such.tool" in info.value.message


async def test_invalid_arguments_are_a_tool_error() -> None:
    async with open_client(demo_tools.build_server()) as client:
        result = await client.call_tool("calculator.add", {"a": "five"})
    assert result.is_error
    assert "a" in result.text
    assert "b" in result.text


async def test_list_tools_follows_pagination() -> None:
    server = demo_tools.build_server()
    server._dispatcher.page_size = 3
    pages: list[Any] = []
    async with open_client(server) as client:
        original = client.request

        async def counting(method: str, params: Any = None, **kwargs: Any) -> Any:
            result = await original(method, params, **kwargs)
            if method == "tools/list":
                pages.append(result)
            return result

        client.request = counting  # type: ignore[method-assign]
        tools = await client.list_tools()
    assert [tool.name for tool in tools] == [tool.name for tool in server.tools]
    assert len(pages) == -(-len(DEMO_TOOLS) // 3)  # pages of 3
    assert "nextCursor" not in pages[-1]


def _schema_server(structured: dict[str, Any] | None) -> Server:
    server = Server("schemas")

    def handler(arguments: dict[str, Any]) -> ToolResult:
        return ToolResult([TextContent("out")], structured=structured)

    server.add_raw_tool(
        "typed",
        {"type": "object"},
        handler,
        output_schema={
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
    )
    return server


async def test_structured_content_is_checked_against_the_output_schema() -> None:
    async with open_client(_schema_server({"count": "three"})) as client:
        # Not listed yet: nothing to check against.
        assert (await client.call_tool("typed")).structured == {"count": "three"}
        await client.list_tools()
        with pytest.raises(RemoteProtocolError, match=r"at count: 'three' is not of type"):
            await client.call_tool("typed")
    async with open_client(_schema_server({"count": "three"}), validate_output=False) as client:
        await client.list_tools()
        assert (await client.call_tool("typed")).structured == {"count": "three"}
    async with open_client(_schema_server(None)) as client:
        await client.list_tools()
        with pytest.raises(RemoteProtocolError, match="returned no structuredContent"):
            await client.call_tool("typed")
    async with open_client(_schema_server({"count": 3})) as client:
        await client.list_tools()
        assert (await client.call_tool("typed")).structured == {"count": 3}


@pytest.mark.parametrize("version", [HANDSHAKE_VERSIONS[0], "2026-07-28"])
async def test_progress_and_log_notifications_reach_their_handlers(version: str) -> None:
    # The same in both eras, though 2026-07-28 has no logging/setLevel: there the client names
    # its level in each request's _meta, and the server sends nothing to a request without one.
    logs: list[LogMessage] = []
    progress: list[Progress] = []

    async def on_progress(update: Progress) -> None:
        progress.append(update)

    async with open_client(
        echo_tools.server, log_handler=logs.append, protocol_version=version
    ) as client:
        assert client.protocol_version == version
        result = await client.call_tool("chatty", {"text": "hi"}, progress=on_progress)
        assert result.text == "hi"
        await client.set_log_level("debug")
        await client.call_tool("chatty", {"text": "all"})
    assert progress == [Progress(1, 2, "half way"), Progress(2, 2, None)]
    # The default level (info) holds back the debug line of the first call.
    assert logs == [
        LogMessage("warning", "warning: hi", "echo_tools"),
        LogMessage("debug", "debug: all", None),
        LogMessage("warning", "warning: all", "echo_tools"),
    ]


async def test_a_modern_client_checks_its_log_level_itself() -> None:
    async with open_client(echo_tools.server, protocol_version="2026-07-28") as client:
        with pytest.raises(ValueError, match="unknown log level 'loud'"):
            await client.set_log_level("loud")
    async with open_client(echo_tools.server) as client:  # the handshake era asks the server
        with pytest.raises(RequestError) as refused:
            await client.set_log_level("loud")
    assert refused.value.code == -32602


@pytest.mark.parametrize("version", [HANDSHAKE_VERSIONS[0], "2026-07-28"])
async def test_ping_in_both_eras(version: str) -> None:
    # 2026-07-28 removed ping (trio-mcp answers it -32601 there): the client asks server/discover.
    async with open_client(demo_tools.build_server(), protocol_version=version) as client:
        await client.ping()
        if version == "2026-07-28":
            with pytest.raises(RequestError) as missing:
                await client.request("ping")
            assert missing.value.code == -32601
        else:
            assert await client.request("ping") == {}


async def test_server_logs_go_to_python_logging_without_a_handler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(update: Progress) -> None:
        raise RuntimeError("a bug in the handler")

    with caplog.at_level(logging.DEBUG, logger="trio_mcp.client"):
        async with open_client(echo_tools.server) as client:
            assert (await client.call_tool("chatty", {"text": "x"}, progress=broken)).text == "x"
    server_records = [r for r in caplog.records if r.name == "trio_mcp.client.server"]
    assert [(r.levelno, r.getMessage()) for r in server_records] == [
        (logging.WARNING, "[echo_tools] warning: x")
    ]
    assert any("handler failed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_modern_revision_uses_per_request_meta(kind: str) -> None:
    progress: list[Progress] = []
    with trio.fail_after(TIMEOUT):
        async with connect(kind, protocol_version="2026-07-28") as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_info["name"] == "trio-mcp-demo"
            assert client.session_id is None  # no sessions in this revision, on HTTP neither
            result = await client.call_tool("calculator.add", {"a": 1, "b": 2})
            assert result.text == "3.0"
            assert result.raw["resultType"] == "complete"
            await client.call_tool("wh40k.battle_simulation", progress=progress.append)
    assert [p.progress for p in progress] == [1, 2, 3]


async def test_unknown_client_version_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported protocol version"):
        async with open_client(demo_tools.build_server(), protocol_version="1999-01-01"):
            pass


async def test_a_string_that_is_not_a_url_is_refused() -> None:
    with pytest.raises(ValueError, match="not an http"):
        async with open_client("python -m demo_tools"):
            pass


# -- a scripted peer, for what well-behaved servers never do -------------------------------------


def reply(message: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}


async def test_server_requests_are_answered() -> None:
    answers: list[Any] = []

    async def answer(message: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        if message.get("method") == "initialize":
            await send(reply(message, INIT))
        elif message.get("method") == "tools/list":
            # Ask the client two things before answering.
            await send({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
            await send({"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage"})
            await send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            await send({"jsonrpc": "2.0", "id": 999, "result": {}})  # nobody asked
            await send({"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "?"}})
            await send(reply(message, {"tools": []}))
        elif "id" in message and "method" not in message:
            answers.append(message)

    with trio.fail_after(TIMEOUT):
        async with scripted(answer) as client:
            assert await client.list_tools() == []
    assert answers[0] == {"jsonrpc": "2.0", "id": "s1", "result": {}}
    assert answers[1]["id"] == "s2"
    assert answers[1]["error"]["code"] == -32601


async def test_looping_cursors_and_malformed_results_are_protocol_errors() -> None:
    async def answer(message: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        method = message.get("method")
        if method == "initialize":
            await send(reply(message, INIT))
        elif method == "tools/list":
            await send(reply(message, {"tools": [{"name": "t"}], "nextCursor": "same"}))
        elif method == "tools/call":
            await send(reply(message, {"content": "not a list"}))

    with trio.fail_after(TIMEOUT):
        async with scripted(answer) as client:
            with pytest.raises(RemoteProtocolError, match="came back twice"):
                await client.list_tools()
            with pytest.raises(RemoteProtocolError, match="malformed tools/call result"):
                await client.call_tool("t")


async def test_a_version_the_client_does_not_speak_is_refused() -> None:
    async def answer(message: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        if message.get("method") == "initialize":
            await send(reply(message, {**INIT, "protocolVersion": "1999-01-01"}))

    with trio.fail_after(TIMEOUT), pytest.raises(RemoteProtocolError, match="1999-01-01"):
        async with scripted(answer):
            pass


@pytest.mark.parametrize(("refusals", "connects"), [(1, True), (2, False)])
async def test_discover_retries_once_when_the_refusal_lists_our_version(
    refusals: int, connects: bool
) -> None:
    # spec 2026-07-28, versioning: a client "SHOULD select a mutually supported version from
    # the supported list and retry"; a server that refuses our version while listing it gets
    # one retry, not an endless loop.
    discovers: list[Any] = []

    async def answer(message: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        if message.get("method") != "server/discover":
            return
        discovers.append(message)
        if len(discovers) <= refusals:
            data = {"supported": ["2026-07-28"], "requested": "2026-07-28"}
            error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
            await send({"jsonrpc": "2.0", "id": message["id"], "error": error})
        else:
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
            await send(reply(message, result))

    with trio.fail_after(TIMEOUT):
        if connects:
            async with scripted(answer, protocol_version="2026-07-28") as client:
                assert client.protocol_version == "2026-07-28"
        else:
            with pytest.raises(RequestError, match="Unsupported protocol version"):
                async with scripted(answer, protocol_version="2026-07-28"):
                    pass
    assert len(discovers) == 2


@pytest.mark.parametrize("kind", ["input_required", "task", 3])
async def test_a_result_that_is_not_complete_is_not_taken_for_success(kind: Any) -> None:
    async def answer(message: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        if message.get("method") == "initialize":
            await send(reply(message, INIT))
        elif message.get("method") == "tools/call":
            result = {"resultType": kind, "inputRequests": {"a": {"method": "roots/list"}}}
            await send(reply(message, result))

    with trio.fail_after(TIMEOUT):
        async with scripted(answer) as client:
            with pytest.raises(RemoteProtocolError, match="resultType"):
                await client.call_tool("t")


async def test_content_blocks_become_records() -> None:
    blocks = [
        {"type": "text", "text": "t", "annotations": {"priority": 1}},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "a", "mimeType": "x"}},
        {"type": "resource", "resource": {"uri": "file:///b", "text": "b", "blob": "YQ=="}},
        {"type": "resource_link", "uri": "file:///c", "name": "c", "size": 3},
        {"type": "future-kind", "x": 1},
    ]

    async def answer(message: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        if message.get("method") == "initialize":
            await send(reply(message, INIT))
        elif message.get("method") == "tools/call":
            await send(reply(message, {"content": blocks, "_meta": {"k": 1}}))

    with trio.fail_after(TIMEOUT):
        async with scripted(answer) as client:
            result = await client.call_tool("t")
    kinds = [type(block).__name__ for block in result.content]
    assert kinds == [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "EmbeddedResource",
        "dict",  # both text and blob: kept as it came
        "ResourceLink",
        "dict",
    ]
    assert result.text == "t"
    assert result.meta == {"k": 1}


# -- stdio subprocess -----------------------------------------------------------------------------


async def test_stdio_environment_and_working_directory(tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(
            serve_command(CLIENT_TOOLS), env={"CLIENT_TEST_VAR": "from the test"}, cwd=tmp_path
        ) as client:
            result = await client.call_tool("env", {"name": "CLIENT_TEST_VAR"})
    assert result.text == "from the test"


async def test_server_crash_fails_every_pending_call_with_its_exit_code() -> None:
    errors: list[BaseException] = []
    with trio.fail_after(TIMEOUT):
        async with open_client(serve_command(CLIENT_TOOLS)) as client:
            waiting = trio.Event()

            async def pending() -> None:
                with pytest.raises(ConnectionClosed) as info:
                    await client.call_tool("wait", progress=lambda _: waiting.set())
                errors.append(info.value)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(pending)
                await waiting.wait()
                with pytest.raises(ConnectionClosed) as info:
                    await client.call_tool("crash")
                errors.append(info.value)
            assert client.closed
            assert client.in_flight == 0
            with pytest.raises(ConnectionClosed, match="exited with code 3"):
                await client.ping()
    assert len(errors) == 2
    for error in errors:
        assert "exited with code 3" in str(error)
        assert "client_tools: crashing on purpose" in str(error)


async def test_server_that_fails_to_start_says_why() -> None:
    with trio.fail_after(TIMEOUT), pytest.raises(ConnectionClosed) as info:
        async with open_client(serve_command("no_such_module_here")):
            pass
    assert "exited with code 2" in str(info.value)
    assert "No module named 'no_such_module_here'" in str(info.value)


async def test_a_program_that_does_not_exist_is_a_transport_error() -> None:
    with pytest.raises(TransportError, match="cannot start the server"):
        async with open_client(["/nonexistent/program"]):
            pass


async def test_closing_terminates_a_server_that_will_not_exit() -> None:
    busy = trio.Event()
    with trio.fail_after(TIMEOUT):
        async with open_client(serve_command(CLIENT_TOOLS), shutdown_timeout=0.2) as client:
            pid = int((await client.call_tool("pid")).text)
            async with trio.open_nursery() as nursery:

                async def stubborn() -> None:
                    await client.call_tool("stubborn", progress=lambda _: busy.set())

                nursery.start_soon(stubborn)
                await busy.wait()
                nursery.cancel_scope.cancel()
    # The process is gone (and reaped): terminated, then killed, within the timeouts.
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.slow
async def test_sdk_server_over_stdio() -> None:
    progress: list[Progress] = []
    with trio.fail_after(TIMEOUT):
        async with open_client([sys.executable, SDK_SERVER]) as client:
            assert client.server_info["name"] == "sdk-peer"
            tools = {tool.name: tool for tool in await client.list_tools()}
            assert set(tools) == {"add", "fail", "steps"}
            assert [p.name for p in tools["add"].parameters] == ["a", "b"]
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured == {"result": 5}
            assert added.text == "5"
            failed = await client.call_tool("fail", {"message": "boom"})
            assert failed.is_error
            steps = await client.call_tool("steps", {"n": 3}, progress=progress.append)
            assert steps.text == "done"

            async def add(i: int) -> None:
                assert (await client.call_tool("add", {"a": i, "b": i})).structured == {
                    "result": 2 * i
                }

            async with trio.open_nursery() as nursery:
                for i in range(20):
                    nursery.start_soon(add, i)
    assert progress == [Progress(i, 3, f"step {i}") for i in (1, 2, 3)]


@pytest.mark.slow
async def test_sdk_server_over_streamable_http() -> None:
    progress: list[Progress] = []
    with trio.fail_after(TIMEOUT):
        async with sdk_http_server(SDK_SERVER) as url, open_client(url) as client:
            assert client.server_info["name"] == "sdk-peer"
            assert client.session_id is not None
            assert {tool.name for tool in await client.list_tools()} == {"add", "fail", "steps"}
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured == {"result": 5}
            assert (await client.call_tool("fail", {"message": "boom"})).is_error
            steps = await client.call_tool("steps", {"n": 2}, progress=progress.append)
            assert steps.text == "done"
    assert progress == [Progress(1, 2, "step 1"), Progress(2, 2, "step 2")]


# -- HTTP: sessions, reconnection, retries --------------------------------------------------------


async def test_http_session_ended_by_the_server_is_initialized_again() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as served, open_client(served.url) as client:
            first = client.session_id
            assert first is not None
            async with httpx.AsyncClient() as raw:
                response = await raw.delete(served.url, headers={"mcp-session-id": first})
                assert response.status_code == 204

            async def add() -> None:
                assert (await client.call_tool("calculator.add", {"a": 1, "b": 2})).text == "3.0"

            # Several calls learn of the lost session at once; one new session serves them all.
            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(add)
            assert client.session_id not in (None, first)


class Restartable:
    """An HTTP server the test can stop (waiting until it is gone) and start again."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.port = 0
        self.stop = trio.Event()
        self.done = trio.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        self.stop, self.done = trio.Event(), trio.Event()
        binds = await self.nursery.start(self._serve, self.stop, self.done)
        self.port = port_of(binds[0])

    async def _serve(
        self, stop: trio.Event, done: trio.Event, *, task_status: trio.TaskStatus[list[str]]
    ) -> None:
        try:
            await serve_http(
                demo_tools.build_server(),
                port=self.port,
                shutdown_trigger=stop.wait,
                task_status=task_status,
            )
        finally:
            done.set()

    async def halt(self) -> None:
        self.stop.set()
        await self.done.wait()


async def test_http_server_restarted_on_the_same_port() -> None:
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            server = Restartable(nursery)
            await server.start()
            async with open_client(server.url) as client:
                assert (await client.call_tool("calculator.add", {"a": 1, "b": 1})).text == "2.0"
                first = client.session_id
                port = server.port
                await server.halt()
                await server.start()  # a new server on the same port: it knows no sessions
                assert server.port == port
                result = await client.call_tool("calculator.add", {"a": 2, "b": 2})
                assert result.text == "4.0"
                assert client.session_id not in (None, first)
            await server.halt()


class RetryWatcher(logging.Handler):
    """Sets `retried` when the HTTP link logs its first retry."""

    def __init__(self) -> None:
        super().__init__()
        self.retried = trio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "attempt" in record.getMessage():
            self.retried.set()


async def test_http_call_waits_out_a_server_restart() -> None:
    watcher = RetryWatcher()
    http_logger = logging.getLogger("trio_mcp.client.http")
    http_logger.addHandler(watcher)
    retry = RetryPolicy(attempts=500, base_delay=0.01, max_delay=0.02)
    try:
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                server = Restartable(nursery)
                await server.start()
                async with open_client(server.url, retry=retry) as client:
                    await client.ping()
                    await server.halt()
                    answered = trio.Event()
                    results: list[str] = []

                    async def call() -> None:
                        result = await client.call_tool("calculator.add", {"a": 3, "b": 4})
                        results.append(result.text)
                        answered.set()

                    nursery.start_soon(call)
                    await watcher.retried.wait()  # the call found nobody listening...
                    await server.start()  # ...and reaches the new server on a later attempt
                    await answered.wait()
                    assert results == ["7.0"]
                await server.halt()
    finally:
        http_logger.removeHandler(watcher)


@pytest.mark.parametrize(
    ("path", "error", "match"),
    [
        ("/sse", TransportError, "HTTP 404"),  # legacy SSE switched off
        ("/nothing-here/sse", TransportError, "HTTP 404"),
        ("/mcp", TransportError, "HTTP 404 .*: Not found: /mcp"),
    ],
)
async def test_http_endpoints_that_are_not_there(
    path: str, error: type[Exception], match: str
) -> None:
    from trio_mcp.http import HttpOptions  # noqa: PLC0415 - only here

    server = demo_tools.build_server()
    stop = trio.Event()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            options = HttpOptions(legacy_sse=False, path="/other")
            binds = await nursery.start(
                functools.partial(
                    serve_http, server, port=0, options=options, shutdown_trigger=stop.wait
                )
            )
            with pytest.raises(error, match=match):
                async with open_client(binds[0] + path):
                    pass
            stop.set()


async def test_sse_unreachable_server_gives_up_after_bounded_attempts() -> None:
    retry = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.001)
    with trio.fail_after(TIMEOUT), pytest.raises(ConnectionClosed, match="cannot open the event"):
        async with open_client("http://127.0.0.1:9/sse", retry=retry):
            pass


async def test_http_without_httpx_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)  # as if it were not installed
    with pytest.raises(TransportError, match=r"pip install \"trio-mcp\[http\]\""):
        async with open_client("http://127.0.0.1:9/mcp"):
            pass


async def test_http_unreachable_server_gives_up_after_bounded_attempts() -> None:
    retry = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.001)
    with trio.fail_after(TIMEOUT), pytest.raises(ConnectionClosed) as info:
        async with open_client("http://127.0.0.1:9/mcp", retry=retry):
            pass
    assert "gave up after 3 attempt(s)" in str(info.value)


class BareHttp:
    """A bare HTTP/1.1 server: it answers initialize and notifications like a real one, and
    `respond(message)` answers each tools/call (None: close the connection unanswered)."""

    def __init__(self, respond: Callable[[Any], bytes | None]) -> None:
        self.respond = respond
        self.calls = 0

    async def handle(self, stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if request is None:
            return
        _, body = request
        answer: bytes | None
        if not body:  # the DELETE that ends the session
            answer = http_response("204 No Content")
        else:
            message = json.loads(body)
            if message.get("method") == "tools/call":
                self.calls += 1
                answer = self.respond(message)
            elif "id" in message:
                result = INIT if message["method"] == "initialize" else {}
                answer = json_response(reply(message, result), "mcp-session-id: s1")
            else:
                answer = http_response("202 Accepted")
        if answer is not None:
            await stream.send_all(answer)
        await stream.aclose()


@asynccontextmanager
async def bare_http(respond: Callable[[Any], bytes | None]) -> AsyncIterator[tuple[str, BareHttp]]:
    server = BareHttp(respond)
    async with serve_bare(server.handle) as url:
        yield url, server


FAST_RETRY = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.001)


async def test_http_request_is_not_sent_twice_unless_retry_safe() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            bare_http(lambda message: None) as (url, server),
            open_client(url, retry=FAST_RETRY) as client,
        ):
            with pytest.raises(ConnectionClosed, match="not sent again"):
                await client.call_tool("calculator.add", {"a": 1, "b": 1})
            assert server.calls == 1
            with pytest.raises(ConnectionClosed):
                await client.call_tool("calculator.add", {"a": 1, "b": 1}, retry_safe=True)
            assert server.calls == 1 + 4


def ok_after(answers: list[bytes]) -> Callable[[Any], bytes]:
    """A bare server's answers: what `answers` holds while it holds any (the last first), then
    a tool result saying "ok"."""

    def respond(message: Any) -> bytes:
        if answers:
            return answers.pop()
        return json_response(reply(message, {"content": [{"type": "text", "text": "ok"}]}))

    return respond


async def test_http_busy_server_is_asked_again() -> None:
    answers = [http_response("503 Service Unavailable", b"", "retry-after: 0")]
    with trio.fail_after(TIMEOUT):
        async with (
            bare_http(ok_after(answers)) as (url, server),
            open_client(url, retry=FAST_RETRY) as client,
        ):
            assert (await client.call_tool("t")).text == "ok"
            assert server.calls == 2
            # Busy for good: bounded attempts, then the caller hears of it.
            server.respond = lambda message: http_response("429 Too Many Requests")
            with pytest.raises(ConnectionClosed, match=r"busy \(HTTP 429\).*4 time"):
                await client.call_tool("t")


@pytest.mark.parametrize("status", ["502 Bad Gateway", "504 Gateway Timeout"])
async def test_http_a_proxy_that_lost_its_server_is_asked_again_only_when_safe(
    status: str,
) -> None:
    """A balancer's 502 or 504 may come after the server ran the call: a call is not sent
    again unless the caller says it is safe; one that is, is sent again (bounded)."""
    answers = [http_response(status, b"<html>upstream failed</html>")]
    with trio.fail_after(TIMEOUT):
        async with (
            bare_http(ok_after(answers)) as (url, server),
            open_client(url, retry=FAST_RETRY) as client,
        ):
            code = status.split(maxsplit=1)[0]
            with pytest.raises(ConnectionClosed, match=rf"HTTP {code} .*not sent again"):
                await client.call_tool("t")
            assert server.calls == 1
            answers.append(http_response(status))
            assert (await client.call_tool("t", retry_safe=True)).text == "ok"
            assert server.calls == 3
            server.respond = lambda message: http_response(status)
            with pytest.raises(ConnectionClosed, match=rf"HTTP {code}"):
                await client.call_tool("t", retry_safe=True)
            assert server.calls == 3 + 4


SSE_NOTICE = (
    b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message",'
    b'"params":{"level":"info","data":"x"}}\n\n'
)


@pytest.mark.parametrize(
    ("answer", "error", "match"),
    [
        (
            http_response(
                "401 Unauthorized",
                b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Bad token"}}',
            ),
            TransportError,
            r"HTTP 401 from .*: Bad token",
        ),
        (http_response("500 Internal Server Error", b"oops"), TransportError, "HTTP 500 .*: oops"),
        (
            http_response(
                "400 Bad Request",
                b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
            ),
            RequestError,
            r"Parse error \(HTTP 400\)",
        ),
        (
            http_response("200 OK", b"hi", "content-type: text/plain"),
            RemoteProtocolError,
            "text/plain",
        ),
        (http_response("202 Accepted"), RemoteProtocolError, "without answering it"),
        (
            http_response("200 OK", SSE_NOTICE, "content-type: text/event-stream"),
            RemoteProtocolError,
            "ended the event stream without answering",
        ),
    ],
    ids=["401", "500", "400", "wrong-type", "no-answer", "stream-without-answer"],
)
async def test_http_answers_that_are_not_answers(
    answer: bytes, error: type[Exception], match: str
) -> None:
    with trio.fail_after(TIMEOUT):
        async with bare_http(lambda message: answer) as (url, _), open_client(url) as client:
            with pytest.raises(error, match=match):
                await client.call_tool("t")


@pytest.mark.parametrize("path", ["/sse", "/mcp"])
async def test_a_server_shutting_down_answers_pending_calls(path: str) -> None:
    """Defect: at shutdown a call still running got no answer; it gets -32000 now, on both
    HTTP transports (the ASGI server's deadline comes after the answers are out)."""
    gate = Gate()
    with trio.fail_after(TIMEOUT):
        server = gate.server(timeouts=Timeouts(shutdown=0.1))
        async with serve(server) as served, open_client(served.base + path) as client:
            async with trio.open_nursery() as nursery:

                async def pending() -> None:
                    with pytest.raises(RequestError, match="Server shutting down") as refused:
                        await client.call_tool("test.wait")
                    assert refused.value.code == -32000

                nursery.start_soon(pending)
                await gate.started.wait()
                served.stop.set()  # graceful shutdown: 0.1 s of grace, then the answers
            assert gate.cancelled.is_set()
