"""Middleware on the resolved path: what it sees, what it may change, and where it runs.

In process (`trio_mcp.testing.connect`, the same connection code stdio runs) in both eras, over
Streamable HTTP, and over stdio in a subprocess of the real command line.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
import trio
import trio.lowlevel
import trio.testing
from pydantic import BaseModel

from tests.helpers import LATEST, open_memory_peer
from tests.http_helpers import serve
from tests.processes import cli
from tests.timing import scaled
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    Context,
    ElicitRequest,
    Param,
    RequestError,
    Server,
    ToolError,
)
from trio_mcp._core.jsonrpc import Notification, Request, parse
from trio_mcp.middleware import CallNext, Middleware, ResolvedRequest
from trio_mcp.testing import connect

MODERN = "2026-07-28"


class Confirm(BaseModel):
    ok: bool


TIMEOUT = scaled(30)


def make_server(*middleware: Any) -> Server:
    server = Server("mw", middleware=list(middleware))

    @server.tool(inline=True)
    def add(a: Annotated[int, Param("a")], b: Annotated[int, Param("b")]) -> int:
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        return text.upper()

    @server.tool()
    def broken() -> str:
        raise ValueError("it broke")

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt()
    def greet(who: str) -> str:
        return f"Hello {who}"

    return server


class Recorder(Middleware):
    """Keeps what each hook saw, in order."""

    def __init__(self, label: str = "") -> None:
        self.label = label
        self.seen: list[tuple[str, str, str | None]] = []
        self.results: list[dict[str, Any]] = []
        self.errors: list[BaseException] = []
        self.notifications: list[str] = []

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        self.seen.append(("request", request.method, request.name))
        try:
            result = await call_next(request)
        except Exception as exc:
            self.errors.append(exc)
            raise
        self.results.append(result)
        return result

    async def on_call_tool(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        self.seen.append(("tool", request.method, request.name))
        return await call_next(request)

    async def on_read_resource(
        self, request: ResolvedRequest, call_next: CallNext
    ) -> dict[str, Any]:
        self.seen.append(("resource", request.method, request.name))
        return await call_next(request)

    async def on_get_prompt(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        self.seen.append(("prompt", request.method, request.name))
        return await call_next(request)

    async def on_list(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        self.seen.append(("list", request.method, None))
        return await call_next(request)

    async def on_notification(self, notification: Notification, call_next: Any) -> None:
        self.notifications.append(notification.method)
        await call_next(notification)


@pytest.mark.parametrize("version", [LATEST, MODERN])
async def test_every_family_reaches_its_hook_inside_the_generic_one(version: str) -> None:
    recorder = Recorder()
    async with connect(make_server(recorder), protocol_version=version) as client:
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured == {"result": 5}
        assert (await client.read_resource("note://x")).text == "note x"
        assert (await client.get_prompt("greet", {"who": "Ann"})).messages
        assert [t.name for t in await client.list_tools()] == ["add", "shout", "broken"]
    kinds = [(hook, method) for hook, method, _ in recorder.seen]
    for hook, method in [
        ("tool", "tools/call"),
        ("resource", "resources/read"),
        ("prompt", "prompts/get"),
        ("list", "tools/list"),
    ]:
        # The family's hook runs inside the generic one, for the same request.
        assert kinds.index(("request", method)) + 1 == kinds.index((hook, method))
    assert ("request", "tools/call", "add") in recorder.seen
    assert ("resource", "resources/read", "note://x") in recorder.seen
    # Every result went back through the chain; the tool's is the CallToolResult object.
    assert any(r.get("structuredContent") == {"result": 5} for r in recorder.results)


async def test_a_middleware_answers_without_calling_on() -> None:
    ran: list[str] = []

    class Cached(Middleware):
        async def on_call_tool(
            self, request: ResolvedRequest, call_next: CallNext
        ) -> dict[str, Any]:
            if request.name == "shout":
                return {"content": [{"type": "text", "text": "from the cache"}]}
            return await call_next(request)

    server = make_server(Cached())

    @server.tool()
    def spy() -> str:
        ran.append("spy")
        return "ran"

    async with connect(server) as client:
        result = await client.call_tool("shout", {"text": "hi"})
        assert result.text == "from the cache"
        assert (await client.call_tool("spy")).text == "ran"
    assert ran == ["spy"]


async def test_what_a_middleware_raises_is_answered_as_the_servers_own_errors_are() -> None:
    class Refuse(Middleware):
        async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
            if request.method == "tools/call":
                raise ToolError("calls are closed today")
            if request.method == "resources/read":
                raise ToolError("reads are closed today")
            if request.method == "prompts/get":
                raise RequestError("slow down", -32000, {"retryAfterSeconds": 2})
            return await call_next(request)

    async with open_memory_peer(make_server(Refuse())) as peer:
        called = await peer.call("shout", {"text": "x"})
        read = await peer.request("resources/read", {"uri": "note://x"})
        got = await peer.request("prompts/get", {"name": "greet", "arguments": {"who": "a"}})
    # A tools/call has an isError result for it; a read has none: -32603 with the message.
    assert called["result"] == {
        "content": [{"type": "text", "text": "calls are closed today"}],
        "isError": True,
    }
    assert read["error"]["code"] == -32603
    assert read["error"]["message"] == "reads are closed today"
    assert got["error"] == {
        "code": -32000,
        "message": "slow down",
        "data": {"retryAfterSeconds": 2},
    }


async def test_changed_arguments_are_validated_again() -> None:
    class Rewrite(Middleware):
        async def on_call_tool(
            self, request: ResolvedRequest, call_next: CallNext
        ) -> dict[str, Any]:
            arguments = dict(request.arguments)
            if request.name == "add":
                arguments["b"] = arguments.get("b", 0) * 10
            if request.name == "shout":
                arguments["text"] = 42  # not a string: validation refuses it
            return await call_next(request.replace(arguments=arguments))

    async with connect(make_server(Rewrite())) as client:
        added = await client.call_tool("add", {"a": 1, "b": 2})  # b x10, validated again
        shouted = await client.call_tool("shout", {"text": "hi"})
    assert added.structured == {"result": 21}
    assert shouted.is_error
    assert "Invalid arguments for tool shout" in shouted.text
    assert "text" in shouted.text


async def test_a_middleware_sees_results_and_protocol_errors() -> None:
    recorder = Recorder()
    async with open_memory_peer(make_server(recorder)) as peer:
        broken = await peer.call("broken")
        unknown = await peer.call("no.such.tool")
    # A tool's failure is a result (isError), a request that cannot be served an exception.
    assert broken["result"]["isError"] is True
    assert {"content": broken["result"]["content"], "isError": True} in recorder.results
    assert unknown["error"]["code"] == -32602
    assert [type(e).__name__ for e in recorder.errors] == ["RemoteProtocolError"]
    assert "Unknown tool: no.such.tool" in str(recorder.errors[0])


async def test_the_first_middleware_is_outermost_and_plain_functions_work() -> None:
    order: list[str] = []

    def named(label: str) -> Any:
        async def middleware(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
            order.append(f"{label}>")
            result = await call_next(request)
            order.append(f"<{label}")
            return result

        return middleware

    server = make_server(named("a"))
    server.add_middleware(named("b"))
    async with connect(server) as client:
        order.clear()  # the handshake's requests went through too
        await client.call_tool("add", {"a": 1, "b": 1})
    assert order == ["a>", "b>", "<b", "<a"]


async def test_notifications_go_through_on_notification_and_still_take_effect() -> None:
    recorder = Recorder()
    started = trio.Event()
    server = make_server(recorder)

    @server.tool()
    async def wait() -> str:
        started.set()
        await trio.sleep_forever()
        return "never"

    async with open_memory_peer(server) as peer:
        request_id = await peer.start_request("tools/call", {"name": "wait"})
        await started.wait()
        await peer.notify("notifications/cancelled", {"requestId": request_id})
        pong = await peer.request("ping")
    assert pong["result"] == {}
    assert recorder.notifications == ["notifications/initialized", "notifications/cancelled"]
    # The cancellation reached the call: it was never answered.
    assert [m for m in peer.log if m.get("id") == request_id] == []


async def test_a_call_that_becomes_a_task_carries_the_chain_into_the_task() -> None:
    recorder = Recorder()
    server = make_server(recorder)

    @server.tool(task=0)  # a task at once
    async def slow(ctx: Context) -> str:
        await trio.lowlevel.checkpoint()
        return "done in a task"

    async with connect(server, tasks=True) as client:
        result = await client.call_tool("slow")
    assert result.text == "done in a task"
    # The chain ran around the work: it saw the tool's own result, not the task's handle.
    tool_results = [r for r in recorder.results if "content" in r]
    assert any(r["content"][0]["text"] == "done in a task" for r in tool_results)
    assert ("tool", "tools/call", "slow") in recorder.seen


async def test_every_2026_input_round_is_a_request_of_its_own() -> None:
    recorder = Recorder()
    server = make_server(recorder)

    @server.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Sure?", Confirm)
        return f"answered {type(answer).__name__}"

    async def accept(request: ElicitRequest) -> AcceptedElicitation[Any]:
        return AcceptedElicitation({"ok": True})

    async with connect(
        server,
        protocol_version=MODERN,
        asking=Asking(elicitation=accept),
    ) as client:
        result = await client.call_tool("confirm")
    assert result.text == "answered AcceptedElicitation"
    rounds = [r for r in recorder.results if r.get("resultType") in ("input_required", "complete")]
    calls = [seen for seen in recorder.seen if seen == ("tool", "tools/call", "confirm")]
    assert len(calls) == 2  # the first round asked, the second (replayed) finished
    assert [r.get("resultType") for r in rounds if "inputRequests" in r] == ["input_required"]


async def test_over_streamable_http_the_chain_sees_the_verified_token() -> None:
    seen: list[tuple[str, Any]] = []

    async def watch(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        seen.append((request.method, request.auth and sorted(request.auth.scopes)))
        return await call_next(request)

    server = make_server(watch)
    with trio.fail_after(TIMEOUT):
        async with serve(server, bearer_token="s3cret") as served:
            client = served.client(authorization="Bearer s3cret")
            await client.initialize()
            reply = await client.call("add", {"a": 2, "b": 2})
    assert reply.result["structuredContent"] == {"result": 4}
    assert ("tools/call", []) in seen


def test_over_stdio_the_command_line_serves_the_chain(tmp_path: Any) -> None:
    module = tmp_path / "mw_server.py"
    module.write_text(
        "from trio_mcp import Server\nfrom trio_mcp.middleware import Middleware\n"
        "class Tag(Middleware):\n"
        "    async def on_call_tool(self, request, call_next):\n"
        "        result = await call_next(request)\n"
        "        result['content'].append({'type': 'text', 'text': 'tagged ' + request.name})\n"
        "        return result\n"
        "server = Server('mw', middleware=[Tag()])\n"
        "@server.tool(inline=True)\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
    )
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST, "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
    ]  # fmt: skip
    done = cli("run", str(module), input="".join(json.dumps(line) + "\n" for line in lines))
    assert done.returncode == 0, done.stderr
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    texts = [block["text"] for block in answers[2]["result"]["content"]]
    assert texts == ["3", "tagged add"]


class Count(Middleware):
    """Never waits: counts the calls it sees."""

    inline = True

    def __init__(self) -> None:
        self.calls = 0

    async def on_call_tool(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        self.calls += 1
        return await call_next(request)


async def test_inline_calls_stay_on_the_reader_through_middleware_that_never_waits() -> None:
    # The record of an inline call says `now` with no middleware, and with middleware that
    # never waits (`inline = True`); a middleware that may wait sends it to a task of its own.
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add"}}
    (parsed,), _ = parse(json.dumps(request))
    assert isinstance(parsed, Request)
    count = Count()
    plain, counted, waiting = make_server(), make_server(count), make_server(Recorder())
    assert plain._dispatcher.resolve(parsed).now
    assert counted._dispatcher.resolve(parsed).now
    assert not waiting._dispatcher.resolve(parsed).now
    # A family the waiting middleware does not hook keeps its fast path.
    hooks_tools_only = make_server(Recorder.on_call_tool.__get__(Recorder()))
    listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    (parsed_list,), _ = parse(json.dumps(listed))
    assert isinstance(parsed_list, Request)
    assert not hooks_tools_only._dispatcher.resolve(parsed_list).now  # a function hooks all

    async with open_memory_peer(counted) as peer:
        # Both lines in one read: the call is answered on the reader before the cancellation
        # that follows it is read, so the cancellation finds nothing (as without middleware).
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 4, "b": 5}},
        }
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 7}}  # fmt: skip
        await peer._send.send([json.dumps(call).encode(), json.dumps(cancel).encode()])  # type: ignore[arg-type]
        reply = await peer.receive()
    assert reply["result"]["structuredContent"] == {"result": 9}
    assert count.calls == 1


class Tally(Middleware):
    """Counts what it sees and says it never waits."""

    inline = True

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        self.seen.append(request.method)
        return await call_next(request)

    async def on_call_tool(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        if request.arguments.get("a") == 99:
            raise ToolError("no 99s here")
        return await call_next(request)


async def test_middleware_that_never_wait_keep_requests_on_the_reader() -> None:
    server = make_server(Tally())
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add"}}
    (parsed,), _ = parse(json.dumps(request))
    assert server._dispatcher.resolve(parsed).now  # type: ignore[arg-type]
    # One that may wait beside it (a plain function may) sends every request to a task again.
    server.add_middleware(Recorder())
    assert not server._dispatcher.resolve(parsed).now  # type: ignore[arg-type]
    tally = Tally()
    async with connect(make_server(tally), protocol_version=MODERN) as client:
        added = await client.call_tool("add", {"a": 1, "b": 2})
        refused = await client.call_tool("add", {"a": 99, "b": 2})
        shouted = await client.call_tool("shout", {"text": "x"})  # not inline: in a task
        tools = await client.list_tools()
    # The chain ran around the answers made on the reader, as it does around the others.
    assert added.structured == {"result": 3}
    assert refused.is_error  # a middleware's ToolError: the tool's error result
    assert refused.text == "no 99s here"
    assert shouted.text == "X"
    assert len(tools) == 3
    assert tally.seen.count("tools/call") == 3
    assert "tools/list" in tally.seen


async def test_an_inline_middleware_that_waits_all_the_same_holds_only_the_reader() -> None:
    # Nothing breaks: its request is answered on the reader's task after the wait, and the
    # requests behind it are read once it is done.
    released = trio.Event()

    class Dawdler(Middleware):
        inline = True  # but it waits

        async def on_call_tool(
            self, request: ResolvedRequest, call_next: CallNext
        ) -> dict[str, Any]:
            await released.wait()
            return await call_next(request)

    async with open_memory_peer(make_server(Dawdler())) as peer:
        add = {"name": "add", "arguments": {"a": 1, "b": 0}}
        call_id = await peer.start_request("tools/call", add)
        ping_id = await peer.start_request("ping")
        await trio.testing.wait_all_tasks_blocked()
        assert [m for m in peer.log if m.get("id") in (call_id, ping_id)] == []  # held
        released.set()
        answers: dict[Any, Any] = {}
        while len(answers) < 2:
            message = await peer.receive()
            answers[message["id"]] = message
    assert answers[call_id]["result"]["structuredContent"] == {"result": 1}
    assert answers[ping_id]["result"] == {}
