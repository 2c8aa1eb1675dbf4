"""End to end over an in-memory connection: concurrency, cancellation, progress, shutdown."""

from __future__ import annotations

import json
import threading
import types
from typing import Annotated, Any

import pytest
import trio
import trio.testing

import demo_tools
from demo_tools import wh40k
from tests.helpers import DEMO_TOOLS, RawPeer, open_memory_peer
from tests.timing import scaled
from trio_mcp import (
    AudioContent,
    Context,
    Limits,
    Param,
    ResourceLink,
    Server,
    TextContent,
    Timeouts,
    ToolDefinitionError,
    ToolError,
    tool,
)
from trio_mcp._core.jsonrpc import Notification, Request
from trio_mcp._runtime.session import SessionRuntime
from trio_mcp.transports import memory_channel_pair

BATTLE = "wh40k.battle_simulation"
#: The one revision with JSON-RPC batches; tests that send batches speak it.
BATCHES = "2025-03-26"


def responses(log: list[Any]) -> dict[Any, Any]:
    return {m["id"]: m for m in log if "id" in m and "method" not in m}


async def test_hundred_concurrent_battles_take_about_one_delay(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_peer(demo_tools.build_server()) as peer:
        start = trio.current_time()
        ids = [await peer.start_request("tools/call", {"name": BATTLE}) for _ in range(100)]
        got: dict[Any, Any] = {}
        while len(got) < 100:
            message = await peer.receive()
            got[message["id"]] = message
        elapsed = trio.current_time() - start
    assert sorted(got) == sorted(ids)
    assert all("structuredContent" in m["result"] for m in got.values())
    assert wh40k.BATTLE_SECONDS <= elapsed < wh40k.BATTLE_SECONDS * 1.2


async def test_slow_call_does_not_delay_ping(autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_peer(demo_tools.build_server()) as peer:
        battle = await peer.start_request("tools/call", {"name": BATTLE})
        start = trio.current_time()
        pong = await peer.request("ping")
        assert pong["result"] == {}
        assert trio.current_time() - start < 0.01
        while battle not in responses(peer.log):
            await peer.receive()


async def test_cancelled_call_is_freed_and_never_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cancelled = trio.Event()
    server = Server()

    @server.tool()
    async def wait_forever() -> str:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        return "unreachable"

    async with open_memory_peer(server) as peer:
        call = await peer.start_request("tools/call", {"name": "wait_forever"})
        await peer.notify("notifications/cancelled", {"requestId": call, "reason": "test"})
        with trio.fail_after(1):
            await cancelled.wait()
        await trio.sleep(10)
        pong = await peer.request("ping")
        assert pong["result"] == {}
        # The id is free again: a new request may reuse it and is answered.
        await peer.send({"jsonrpc": "2.0", "id": call, "method": "ping"})
        again = await peer.receive()
    assert again == {"jsonrpc": "2.0", "id": call, "result": {}}
    assert [m for m in peer.log if m.get("id") == call] == [again]


async def test_progress_arrives_before_result(autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_peer(demo_tools.build_server()) as peer:
        response = await peer.call(
            BATTLE,
            {"imperial_force": "Space Marines", "enemy_force": "Orks"},
            _meta={"progressToken": "tok"},
        )
    progress = [m for m in peer.log if m.get("method") == "notifications/progress"]
    assert [p["params"]["progress"] for p in progress] == [1, 2, 3]
    assert all(
        p["params"]["progressToken"] == "tok" and p["params"]["total"] == 3 for p in progress
    )
    assert peer.log.index(response) > peer.log.index(progress[-1])
    assert response["result"]["structuredContent"]["imperial_force"] == "Space Marines"


async def test_no_progress_without_token(autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_peer(demo_tools.build_server()) as peer:
        response = await peer.call(BATTLE)
    assert "result" in response
    assert not [m for m in peer.log if "method" in m]


async def test_tool_timeout_is_an_error_result(autojump_clock: trio.testing.MockClock) -> None:
    server = Server()

    @server.tool(timeout=2)
    async def slow() -> str:
        await trio.sleep(5)
        return "done"

    async with open_memory_peer(server) as peer:
        start = trio.current_time()
        response = await peer.call("slow")
        elapsed = trio.current_time() - start
    assert response["result"]["isError"] is True
    assert "timed out after 2 s" in response["result"]["content"][0]["text"]
    assert 2 <= elapsed < 2.1


async def test_sync_tools_run_in_a_thread_unless_inline() -> None:
    server = Server()
    loop_thread = threading.current_thread()

    @server.tool()
    def where() -> bool:
        return threading.current_thread() is loop_thread

    @server.tool(inline=True)
    def where_inline() -> bool:
        return threading.current_thread() is loop_thread

    async with open_memory_peer(server) as peer:
        threaded = await peer.call("where")
        inline = await peer.call("where_inline")
    assert threaded["result"]["structuredContent"] == {"result": False}
    assert inline["result"]["structuredContent"] == {"result": True}


@pytest.mark.parametrize("inline", [False, True], ids=["thread", "inline"])
async def test_raw_tool_handler_gets_the_arguments_dict(inline: bool) -> None:
    server = Server()
    server.add_raw_tool(
        "raw.echo",
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        lambda arguments: {"got": arguments},
        inline=inline,
    )
    async with open_memory_peer(server) as peer:
        response = await peer.call("raw.echo", {"a": 7})
    assert response["result"].get("isError", False) is False
    assert response["result"]["structuredContent"] == {"got": {"a": 7}}


async def test_exceptions_become_error_results() -> None:
    server = Server()

    @server.tool()
    async def boom(kind: str) -> str:
        if kind == "tool":
            raise ToolError("exactly this text")
        raise ValueError("bad value")

    async with open_memory_peer(server) as peer:
        tool_error = await peer.call("boom", {"kind": "tool"})
        other = await peer.call("boom", {"kind": "other"})
    assert tool_error["result"] == {
        "content": [{"type": "text", "text": "exactly this text"}],
        "isError": True,
    }
    assert other["result"]["content"][0]["text"] == "ValueError: bad value"
    assert other["result"]["isError"] is True


async def test_masked_error_details() -> None:
    server = Server(mask_error_details=True)

    @server.tool()
    def secret() -> str:
        raise RuntimeError("password=hunter2")

    async with open_memory_peer(server) as peer:
        response = await peer.call("secret")
    text = response["result"]["content"][0]["text"]
    assert "hunter2" not in text
    assert text == "Internal error in tool secret"


async def test_log_notifications_follow_set_level() -> None:
    server = Server()

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("d")
        await ctx.info("i")
        await ctx.error("e")
        return "ok"

    async with open_memory_peer(server) as peer:
        await peer.call("chatty")
        default_levels = [m["params"]["level"] for m in peer.log if m.get("method")]
        peer.log.clear()
        assert (await peer.request("logging/setLevel", {"level": "error"}))["result"] == {}
        await peer.call("chatty")
        error_only = [m["params"]["level"] for m in peer.log if m.get("method")]
        bad = await peer.request("logging/setLevel", {"level": "loud"})
    assert default_levels == ["info", "error"]
    assert error_only == ["error"]
    assert bad["error"]["code"] == -32602


async def test_context_exposes_request_and_client() -> None:
    server = Server()

    @server.tool()
    async def whoami(ctx: Context) -> dict[str, Any]:
        return {
            "id": ctx.request_id,
            "client": ctx.client_info,
            "version": ctx.protocol_version,
            "tool": ctx.tool_name,
        }

    async with open_memory_peer(server) as peer:
        response = await peer.call("whoami")
    assert response["result"]["structuredContent"] == {
        "id": response["id"],
        "client": {"name": "tests", "version": "0"},
        "version": "2025-11-25",
        "tool": "whoami",
    }


async def test_batch_in_memory_mixes_answers_and_skips_notifications() -> None:
    async with open_memory_peer(demo_tools.build_server(), initialize=False) as peer:
        await peer.initialize(BATCHES)
        await peer.send(
            [
                {
                    "jsonrpc": "2.0",
                    "id": "a",
                    "method": "tools/call",
                    "params": {"name": "calculator.add", "arguments": {"a": 1, "b": 2}},
                },
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 7, "method": "no/such"},
                42,
            ]
        )
        batch = await peer.receive()
        await peer.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
        pong = await peer.request("ping")  # nothing was sent for the notification-only batch
    assert isinstance(batch, list)
    by_id = {m["id"]: m for m in batch}
    assert by_id["a"]["result"]["content"] == [{"type": "text", "text": "3.0"}]
    assert by_id[7]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    assert len(batch) == 3
    assert pong["result"] == {}


async def test_back_pressure_runs_everything_with_a_small_in_flight_limit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server(limits=Limits(max_in_flight=2))
    running = 0
    peak = 0

    @server.tool()
    async def nap(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await trio.sleep(1)
        running -= 1
        return n

    async with open_memory_peer(server) as peer:
        # Two run, two wait for a slot (the waiting queue holds as many as may run).
        ids = [
            await peer.start_request("tools/call", {"name": "nap", "arguments": {"n": i}})
            for i in range(4)
        ]
        got: dict[Any, Any] = {}
        while len(got) < 4:
            message = await peer.receive()
            got[message["id"]] = message["result"]["structuredContent"]["result"]
    assert sorted(got) == sorted(ids)
    assert sorted(got.values()) == list(range(4))
    assert peak == 2


async def test_end_of_input_lets_calls_in_flight_finish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = demo_tools.build_server()
    client, server_end = memory_channel_pair()
    peer = RawPeer(client.send, client.receive)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_connection, server_end.receive, server_end.send)
        await peer.initialize()
        call = await peer.start_request("tools/call", {"name": BATTLE})
        await peer.close()
        response = await peer.receive()
    assert response["id"] == call
    assert "structuredContent" in response["result"]


async def test_end_of_input_cancels_calls_after_the_grace_period(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server(timeouts=Timeouts(shutdown=3))
    cancelled = False

    @server.tool()
    async def forever() -> str:
        nonlocal cancelled
        try:
            await trio.sleep_forever()
        finally:
            cancelled = True
        return "never"

    client, server_end = memory_channel_pair()
    peer = RawPeer(client.send, client.receive)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_connection, server_end.receive, server_end.send)
        await peer.initialize()
        call = await peer.start_request("tools/call", {"name": "forever"})
        await trio.sleep(0.1)
        start = trio.current_time()
        await peer.close()
    # The nursery exited: serve_connection returned after the grace period, answering nothing.
    assert 3 <= trio.current_time() - start < 3.5
    assert cancelled
    assert [m for m in peer.log if m.get("id") == call] == []


async def test_list_tools_pages_with_cursor() -> None:
    server = Server(page_size=3)
    for i in range(7):

        def fn(x: Annotated[int, Param("a number")]) -> int:
            return x

        server.add_tool(fn, name=f"t{i}")
    async with open_memory_peer(server) as peer:
        names: list[str] = []
        cursor = None
        pages = 0
        while True:
            params: dict[str, Any] = {"cursor": cursor} if cursor else {}
            result = (await peer.request("tools/list", params))["result"]
            names += [t["name"] for t in result["tools"]]
            pages += 1
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        bad = await peer.request("tools/list", {"cursor": "not-a-cursor"})
    assert names == [f"t{i}" for i in range(7)]
    assert pages == 3
    assert bad["error"]["code"] == -32602


async def test_modern_request_without_initialize() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    async with open_memory_peer(demo_tools.build_server(), initialize=False) as peer:
        discover = await peer.request("server/discover", {"_meta": meta})
        listed = await peer.request("tools/list", {"_meta": meta})
        called = await peer.call("calculator.multiply", {"a": 6, "b": 7}, _meta=meta)
        old = await peer.request("tools/list", {})
        bad = await peer.request(
            "tools/list",
            {"_meta": {**meta, "io.modelcontextprotocol/protocolVersion": "1900-01-01"}},
        )
    assert "2026-07-28" in discover["result"]["supportedVersions"]
    assert listed["result"]["resultType"] == "complete"
    assert len(listed["result"]["tools"]) == len(DEMO_TOOLS)
    assert called["result"]["structuredContent"] == {"result": 42.0}
    assert called["result"]["resultType"] == "complete"
    assert old["error"]["code"] == -32600  # handshake-era request before initialize
    assert bad["error"]["code"] == -32022
    assert bad["error"]["data"]["requested"] == "1900-01-01"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
async def test_old_revisions_get_no_structured_content(version: str) -> None:
    async with open_memory_peer(demo_tools.build_server(), initialize=False) as peer:
        await peer.initialize(version)
        listed = await peer.request("tools/list")
        called = await peer.call("calculator.add", {"a": 1, "b": 1})
    assert all("outputSchema" not in t for t in listed["result"]["tools"])
    assert called["result"] == {"content": [{"type": "text", "text": "2.0"}]}


def test_add_tools_is_all_or_nothing() -> None:
    module = types.ModuleType("clashing")

    @tool("same")
    def first() -> int:
        return 1

    @tool("same")
    def second() -> int:
        return 2

    @tool("other")
    def third() -> int:
        return 3

    module.first, module.third, module.second = first, third, second  # type: ignore[attr-defined]
    server = Server()
    with pytest.raises(ToolDefinitionError, match="duplicate tool name 'same'"):
        server.add_tools(module)
    assert server.tools == []


def test_add_tools_is_all_or_nothing_against_a_disabled_tool() -> None:
    # A disabled tool still holds its name: a module clashing with it registers nothing.
    module = types.ModuleType("clashing")

    @tool("fresh")
    def fresh() -> int:
        return 1

    @tool("held")
    def held_again() -> int:
        return 2

    module.fresh, module.held_again = fresh, held_again  # type: ignore[attr-defined]
    server = Server()

    @server.tool("held")
    def held() -> int:
        return 0

    server.set_enabled("tool", "held", False)
    with pytest.raises(ToolDefinitionError, match="duplicate tool name 'held'"):
        server.add_tools(module)
    server.set_enabled("tool", "held", True)
    assert [t.name for t in server.tools] == ["held"]


async def test_unencodable_result_is_answered_with_an_error() -> None:
    server = Server()

    @server.tool()
    async def surrogate() -> str:
        return "\ud800"

    async with open_memory_peer(server, initialize=False) as peer:
        await peer.initialize(BATCHES)
        response = await peer.call("surrogate")
        await peer.send(
            [
                {
                    "jsonrpc": "2.0",
                    "id": "b",
                    "method": "tools/call",
                    "params": {"name": "surrogate"},
                },
                {"jsonrpc": "2.0", "id": "p", "method": "ping"},
            ]
        )
        batch = await peer.receive()
    assert response["error"]["code"] == -32603
    assert "could not be encoded" in response["error"]["message"]
    assert {m["id"]: ("error" in m) for m in batch} == {"b": True, "p": False}


async def test_malformed_notification_is_not_answered() -> None:
    async with open_memory_peer(demo_tools.build_server()) as peer:
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]})
        pong = await peer.request("ping")
    assert pong["result"] == {}
    assert peer.log[1:] == [pong]  # after the initialize response, only the pong


async def test_second_initialize_is_refused_and_version_kept() -> None:
    async with open_memory_peer(demo_tools.build_server()) as peer:
        again = await peer.request(
            "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}}
        )
        called = await peer.call("calculator.add", {"a": 1, "b": 2})
    assert again["error"]["code"] == -32600
    assert "already initialized" in again["error"]["message"]
    # Still 2025-11-25: structuredContent is sent (it would not be under 2024-11-05).
    assert called["result"]["structuredContent"] == {"result": 3.0}


async def test_cancellation_wins_even_when_the_call_never_checkpoints() -> None:
    server = Server()

    @server.tool()
    async def instant() -> str:
        return "done"  # no await: the call cannot notice a cancellation by itself

    async with open_memory_peer(server) as peer:
        for call, name in ((101, "instant"), (102, "no.such.tool")):
            # Both lines in one read, as a pipelining client's would arrive on stdio.
            request = {
                "jsonrpc": "2.0",
                "id": call,
                "method": "tools/call",
                "params": {"name": name},
            }
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": call},
            }
            await peer._send.send([json.dumps(request).encode(), json.dumps(cancel).encode()])  # type: ignore[arg-type]
            pong = await peer.request("ping")
            assert pong["result"] == {}
            assert [m for m in peer.log if m.get("id") == call] == []


async def test_cancellation_reaches_a_request_inside_a_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_peer(demo_tools.build_server(), initialize=False) as peer:
        await peer.initialize(BATCHES)
        batch = [
            {"jsonrpc": "2.0", "id": "in-batch", "method": "tools/call", "params": {"name": BATTLE}}
        ]
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "in-batch"},
        }
        # Both lines in one read: the cancellation is handled before the batch's task starts.
        await peer._send.send([json.dumps(batch).encode(), json.dumps(cancel).encode()])  # type: ignore[arg-type]
        await trio.sleep(wh40k.BATTLE_SECONDS * 2)
        pong = await peer.request("ping")
    assert pong["result"] == {}
    assert peer.log[1:] == [pong]  # nothing for the cancelled batch


async def test_a_batch_over_the_in_flight_limit_is_refused_whole() -> None:
    async with open_memory_peer(Server(limits=Limits(max_in_flight=2)), initialize=False) as peer:
        await peer.initialize(BATCHES)
        await peer.send([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(3)])
        refused = await peer.receive()
        await peer.send([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(2)])
        accepted = await peer.receive()
    assert len(refused) == 1
    assert refused[0]["error"]["code"] == -32600
    assert "over the limit of 2" in refused[0]["error"]["message"]
    assert sorted(m["id"] for m in accepted) == [0, 1]


async def test_a_hanging_sync_tool_does_not_starve_other_sync_tools() -> None:
    server = Server()
    release = threading.Event()

    @server.tool(timeout=0.05)
    def hang() -> str:
        release.wait(600)  # until the test ends: a starved call would wait as long
        return "late"

    @server.tool()
    def fast() -> str:
        return "fast"

    try:
        async with open_memory_peer(server) as peer:
            # More hanging calls than trio's process-wide default of 40 worker threads.
            ids = [await peer.start_request("tools/call", {"name": "hang"}) for _ in range(45)]
            got = 0
            while got < len(ids):
                message = await peer.receive()
                if message.get("id") in ids:
                    got += 1
            with trio.fail_after(scaled(60)):
                quick = await peer.call("fast")
    finally:
        release.set()
    assert quick["result"]["content"][0]["text"] == "fast"


@pytest.mark.parametrize(
    ("version", "kinds"),
    [
        ("2024-11-05", ["text", "text", "text"]),
        ("2025-03-26", ["text", "audio", "text"]),
        ("2025-06-18", ["text", "audio", "resource_link"]),
    ],
)
async def test_content_types_a_revision_lacks_become_text(version: str, kinds: list[str]) -> None:
    server = Server()

    @server.tool()
    async def media() -> list[TextContent | AudioContent | ResourceLink]:
        return [
            TextContent("hello"),
            AudioContent(b"RIFF", "audio/wav"),
            ResourceLink("file:///song.wav", "song"),
        ]

    async with open_memory_peer(server, initialize=False) as peer:
        await peer.initialize(version)
        response = await peer.call("media")
    assert [block["type"] for block in response["result"]["content"]] == kinds


async def test_open_stdio_frames_raises_a_lone_error_as_itself() -> None:
    from trio_mcp.transports import open_stdio_frames  # noqa: PLC0415 - the one test of it

    read_send, read_receive = trio.testing.memory_stream_pair()
    with pytest.raises(ValueError, match="from the block"):
        async with open_stdio_frames(read_receive, read_send):
            raise ValueError("from the block")


def _hanging_server(**limits: Any) -> tuple[Server, list[str]]:
    """A server with a tool that never returns and an inline one that records its runs."""
    server = Server(**limits)
    ran: list[str] = []

    @server.tool()
    async def hang() -> str:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    @server.tool()
    async def record(text: str) -> str:
        ran.append(text)  # before any checkpoint: it would run even if cancelled on entry
        return text

    return server, ran


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", None])
async def test_batches_outside_2025_03_26_are_refused_whole(version: str | None) -> None:
    async with open_memory_peer(demo_tools.build_server(), initialize=False) as peer:
        if version is not None:
            await peer.initialize(version)
        await peer.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        [refused] = await peer.receive()
        pong = await peer.request("ping")  # one by one, the same request is answered
    assert refused["id"] is None
    assert refused["error"]["code"] == -32600
    assert "batches are part of MCP 2025-03-26 only" in refused["error"]["message"]
    assert (version or "no version is negotiated") in refused["error"]["message"]
    assert pong["result"] == {}


async def test_a_call_cancelled_while_it_waits_for_a_slot_never_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, ran = _hanging_server(limits=Limits(max_in_flight=1))
    async with open_memory_peer(server) as peer:
        running = await peer.start_request("tools/call", {"name": "hang"})
        waiting = await peer.start_request(
            "tools/call", {"name": "record", "arguments": {"text": "cancelled"}}
        )
        await peer.notify("notifications/cancelled", {"requestId": waiting})
        await peer.notify("notifications/cancelled", {"requestId": running})
        after = await peer.call("record", {"text": "after"})
    assert after["result"]["content"][0]["text"] == "after"
    assert ran == ["after"]
    assert [m for m in peer.log if m.get("id") in (running, waiting)] == []


async def test_teardown_answers_calls_and_batches_cut_short_but_not_cancelled_ones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = _hanging_server(limits=Limits(max_in_flight=3), timeouts=Timeouts(shutdown=1.0))
    client, server_end = memory_channel_pair()
    peer = RawPeer(client.send, client.receive)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_connection, server_end.receive, server_end.send)
            await peer.initialize(BATCHES)
            call = await peer.start_request("tools/call", {"name": "hang"})
            cancelled = await peer.start_request("tools/call", {"name": "hang"})
            await peer.notify("notifications/cancelled", {"requestId": cancelled})
            batch = [
                {"jsonrpc": "2.0", "id": "b1", "method": "tools/call", "params": {"name": "hang"}},
                {"jsonrpc": "2.0", "id": "b2", "method": "ping"},
            ]
            await peer.send(batch)
            held = await peer.start_request("tools/call", {"name": "hang"})  # waits for a slot
            await peer.close()  # end of input: one second of grace, then the teardown
            by_id: dict[Any, Any] = {}
            while len(by_id) < 4:
                message = await peer.receive()
                for one in message if isinstance(message, list) else [message]:
                    by_id[one["id"]] = one
            nursery.cancel_scope.cancel()
    assert sorted(by_id, key=str) == sorted([call, held, "b1", "b2"], key=str)
    for request_id in (call, held, "b1"):
        assert by_id[request_id]["error"]["code"] == -32000
        assert "shutting down" in by_id[request_id]["error"]["message"]
    assert by_id["b2"]["result"] == {}  # the batch's finished part keeps its answer


async def test_non_finite_numbers_never_reach_a_structured_result() -> None:
    """Defect: `calculator.add` with 1e400 (valid JSON) or "NaN" answered
    `structuredContent: {"result": null}`, breaking its own outputSchema."""
    async with open_memory_peer(demo_tools.build_server()) as peer:
        await peer.send_raw(
            b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":'
            b'"calculator.add","arguments":{"a":1e400,"b":1}}}'
        )
        big = await peer.receive()
        nan = await peer.call("calculator.add", {"a": "NaN", "b": 1})
        overflow = await peer.call("calculator.add", {"a": 1e308, "b": 1e308})
    for answer in (big, nan, overflow):
        assert answer["result"]["isError"] is True
        assert "structuredContent" not in answer["result"]
    assert "a: expected a finite number" in big["result"]["content"][0]["text"]
    assert "a: expected a finite number" in nan["result"]["content"][0]["text"]
    assert overflow["result"]["content"][0]["text"] == (
        "Tool calculator.add returned an invalid result: structuredContent.result is Infinity, "
        "which JSON cannot carry (it would arrive as null)"
    )


async def test_shut_down_answers_requests_running_and_still_to_come() -> None:
    """What a per-request transport (Streamable HTTP) relies on at shutdown."""
    server, _ = _hanging_server()
    runtime = SessionRuntime(server)
    runtime.session.adopt("2025-11-25")
    answers: dict[Any, Any] = {}

    async def ask(request_id: Any) -> None:
        call = Request(request_id, "tools/call", {"name": "hang"})
        answers[request_id] = await runtime.handle(call, _no_notify)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "running")
        nursery.start_soon(ask, "cancelled")
        await trio.testing.wait_all_tasks_blocked()
        runtime.incoming(Notification("notifications/cancelled", {"requestId": "cancelled"}))
        runtime.shut_down()
    await ask("late")
    assert answers["cancelled"] is None  # the client's cancellation still means no answer
    for request_id in ("running", "late"):
        assert answers[request_id]["error"]["code"] == -32000
        assert "shutting down" in answers[request_id]["error"]["message"]


async def _no_notify(method: str, params: dict[str, Any]) -> None:
    raise AssertionError(f"unexpected notification {method}")
