"""The tasks of MCP 2025-11-25 (basic/utilities/tasks) on the server, one requirement at a time.

Through `trio_mcp.testing.connect`, which checks every message both ways against the 2025-11-25
JSON Schema (a task-augmented call answered `CreateTaskResult`, `tasks/result` with the result
of the call that made the task), or through a raw peer whose messages the same checker reads
where a test looks at the wire itself (the related-task key, the status notifications).
Tools that must not end before the test says so wait on events; trio's autojump clock stands
in for the time the others sleep.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from pydantic import BaseModel

import trio_mcp.testing
from tests.helpers import RawPeer
from tests.schema_check import MessageChecker
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    AuthInfo,
    Client,
    Context,
    ElicitRequest,
    RemoteProtocolError,
    RequestError,
    Server,
    ToolError,
)
from trio_mcp._features.task_utility import MIN_TTL, RELATED_TASK
from trio_mcp.tasks import TaskSupport
from trio_mcp.transports import memory_channel_pair

VERSION = "2025-11-25"
TERMINAL = ("completed", "failed", "cancelled")


class Confirm(BaseModel):
    confirm: bool


class Gates:
    """What the tools of one test's server wait on, and tell."""

    def __init__(self) -> None:
        self.open = trio.Event()
        self.stopped = trio.Event()
        self.asked = trio.Event()


def make_server(gates: Gates | None = None, **options: Any) -> Server:
    gates = gates or Gates()
    server = Server("utility", **options)

    @server.tool(task=True)
    async def slow(seconds: float) -> str:
        await trio.sleep(seconds)
        return f"slept {seconds:g}"

    @server.tool(task=True)
    async def gated() -> str:
        try:
            await gates.open.wait()
        finally:
            gates.stopped.set()
        return "opened"

    @server.tool(task=TaskSupport(required=True, ttl=120))
    async def only_task() -> str:
        return "done"

    @server.tool(inline=True)
    def plain() -> str:
        return "plain"

    @server.tool()
    async def plain_async() -> str:
        return "plain"

    @server.tool(task=True)
    async def confirm(ctx: Context) -> str:
        outcome = await ctx.elicit("Sure?", Confirm)
        gates.asked.set()
        await gates.open.wait()
        return "yes" if isinstance(outcome, AcceptedElicitation) and outcome.data.confirm else "no"

    @server.tool(task=True)
    async def failing() -> str:
        raise ToolError("it broke")

    @server.tool(task=True)
    async def crashing() -> str:
        raise RemoteProtocolError("Internal error: crashed", -32603, {"why": "test"})

    return server


async def make_task(client: Client, name: str, **task: Any) -> dict[str, Any]:
    """Call `name` as a task; its `Task`."""
    created = await client.request("tools/call", {"name": name, "arguments": {}, "task": task})
    assert set(created) == {"task"}, created
    made: dict[str, Any] = created["task"]
    return made


async def refused(client: Client, method: str, params: dict[str, Any]) -> RequestError:
    with pytest.raises(RequestError) as caught:
        await client.request(method, params)
    return caught.value


# -- capabilities and tool-level negotiation ------------------------------------------------------


async def test_the_session_is_told_the_tasks_capability_and_each_tools_support() -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        listed = {tool["name"]: tool for tool in (await client.request("tools/list"))["tools"]}
    assert client.server_capabilities["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    assert "extensions" not in client.server_capabilities  # SEP-2663 is not 2025-11-25's
    assert listed["slow"]["execution"] == {"taskSupport": "optional"}
    assert listed["only_task"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in listed["plain"]  # absent: "forbidden"


@pytest.mark.parametrize("tool", ["plain", "plain_async"])
async def test_a_forbidden_tool_refuses_a_task_with_method_not_found(tool: str) -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        error = await refused(client, "tools/call", {"name": tool, "arguments": {}, "task": {}})
        plain = await client.request("tools/call", {"name": tool, "arguments": {}})
    assert error.code == -32601
    assert "does not run as a task" in error.message
    assert plain["content"] == [{"type": "text", "text": "plain"}]


async def test_a_required_tool_refuses_a_call_that_is_no_task() -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        error = await refused(client, "tools/call", {"name": "only_task", "arguments": {}})
        task = await make_task(client, "only_task")
        done = await client.request("tasks/result", {"taskId": task["taskId"]})
    assert error.code == -32601
    assert "requires task augmentation" in error.message
    assert done["content"] == [{"type": "text", "text": "done"}]


async def test_a_server_that_declares_no_tasks_ignores_the_task_field() -> None:
    server = Server("no-tasks")

    @server.tool()
    async def plain() -> str:
        return "plain"

    async with trio_mcp.testing.connect(server) as client:
        answer = await client.request("tools/call", {"name": "plain", "arguments": {}, "task": {}})
    assert "tasks" not in client.server_capabilities
    assert answer["content"] == [{"type": "text", "text": "plain"}]


# -- creating, getting, the result ----------------------------------------------------------------


async def test_a_task_augmented_call_is_answered_with_its_task_before_the_work_ends() -> None:
    gates = Gates()
    async with trio_mcp.testing.connect(make_server(gates)) as client:
        task = await make_task(client, "gated", ttl=60_000)
        got = await client.request("tasks/get", {"taskId": task["taskId"]})
        assert not gates.stopped.is_set()  # the tool still runs
        gates.open.set()
        await client.request("tasks/result", {"taskId": task["taskId"]})
        settled = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert task["status"] == "working"
    assert task["ttl"] == 60_000
    assert task["pollInterval"] == 1000
    assert task["createdAt"] == task["lastUpdatedAt"]
    assert task["createdAt"].endswith("Z")
    assert got == task  # nothing changed yet: the same task, no related-task key
    assert settled["status"] == "completed"
    assert settled["createdAt"] == task["createdAt"]
    assert settled["lastUpdatedAt"] >= task["lastUpdatedAt"]


async def test_tasks_result_waits_for_the_task_and_answers_what_the_call_would_have() -> None:
    gates = Gates()
    answered: list[dict[str, Any]] = []
    async with trio_mcp.testing.connect(make_server(gates)) as client:
        task = await make_task(client, "gated")

        async def wait_result() -> None:
            answered.append(await client.request("tasks/result", {"taskId": task["taskId"]}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_result)
            await trio.testing.wait_all_tasks_blocked()
            assert answered == []  # held while the task works
            gates.open.set()
        direct = await client.request("tools/call", {"name": "gated", "arguments": {}})
    (result,) = answered
    assert result["_meta"] == {RELATED_TASK: {"taskId": task["taskId"]}}
    assert {k: v for k, v in result.items() if k != "_meta"} == direct


async def test_a_tool_error_fails_the_task_and_tasks_result_is_the_error_result() -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        task = await make_task(client, "failing")
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        got = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "it broke"}]
    assert got["status"] == "failed"  # "this includes ... isError set to true"
    assert got["statusMessage"] == "it broke"


async def test_a_protocol_error_fails_the_task_and_tasks_result_is_that_error() -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        task = await make_task(client, "crashing")
        error = await refused(client, "tasks/result", {"taskId": task["taskId"]})
        got = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert (error.code, error.message, error.data) == (
        -32603,
        "Internal error: crashed",
        {"why": "test"},
    )
    assert got["status"] == "failed"
    assert got["statusMessage"] == "Internal error: crashed"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/cancel"])
async def test_an_unknown_task_is_invalid_params(method: str) -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        error = await refused(client, method, {"taskId": "no-such-task"})
    async with trio_mcp.testing.connect(make_server(), check_schema=False) as client:
        malformed = await refused(client, method, {"taskId": 7})
    assert error.code == malformed.code == -32602
    assert error.message == "Failed to retrieve task: Task not found: no-such-task"


async def test_the_extension_methods_are_not_2025_11_25s() -> None:
    async with trio_mcp.testing.connect(make_server(), check_schema=False) as client:
        task = await make_task(client, "only_task")
        error = await refused(
            client, "tasks/update", {"taskId": task["taskId"], "inputResponses": {}}
        )
    assert error.code == -32601


# -- ttl ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "asked", "kept"),
    [
        ("slow", 5000, 5000),  # as asked
        ("only_task", 3_600_000, 120_000),  # at most the tool's ttl (120 s)
        ("slow", 0, round(MIN_TTL * 1000)),  # at least MIN_TTL
        ("slow", None, 3_600_000),  # the tool's, when none is asked
    ],
)
async def test_the_ttl_is_the_one_asked_within_the_servers_bounds(
    tool: str, asked: int | None, kept: int, autojump_clock: Any
) -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        params = {"ttl": asked} if asked is not None else {}
        arguments = {"seconds": 1} if tool == "slow" else {}
        created = await client.request(
            "tools/call", {"name": tool, "arguments": arguments, "task": params}
        )
        got = await client.request("tasks/get", {"taskId": created["task"]["taskId"]})
    assert created["task"]["ttl"] == got["ttl"] == kept


async def test_a_malformed_ttl_is_invalid_params() -> None:
    async with trio_mcp.testing.connect(make_server(), check_schema=False) as client:
        error = await refused(
            client,
            "tools/call",
            {"name": "slow", "arguments": {"seconds": 1}, "task": {"ttl": "soon"}},
        )
    assert error.code == -32602


async def test_a_task_may_be_dropped_once_its_ttl_has_passed(autojump_clock: Any) -> None:
    server = make_server()
    server._task_runtime.clock = trio.current_time  # the records' times, on the test's clock
    async with trio_mcp.testing.connect(server) as client:
        task_id = (await make_task(client, "only_task", ttl=5000))["taskId"]
        await client.request("tasks/result", {"taskId": task_id})
        await trio.sleep(4)
        kept = await client.request("tasks/get", {"taskId": task_id})
        await trio.sleep(2)
        gone = await refused(client, "tasks/get", {"taskId": task_id})
        listed = await client.request("tasks/list")
    assert kept["status"] == "completed"
    assert gone.code == -32602
    assert listed == {"tasks": []}


# -- cancel ---------------------------------------------------------------------------------------


async def test_cancel_moves_a_working_task_to_cancelled_before_answering_and_stops_it() -> None:
    gates = Gates()
    async with trio_mcp.testing.connect(make_server(gates)) as client:
        task = await make_task(client, "gated")
        cancelled = await client.request("tasks/cancel", {"taskId": task["taskId"]})
        await gates.stopped.wait()  # the work was stopped (its cancel scope)
        gates.open.set()
        got = await client.request("tasks/get", {"taskId": task["taskId"]})
        no_result = await refused(client, "tasks/result", {"taskId": task["taskId"]})
        again = await refused(client, "tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["taskId"] == task["taskId"]
    assert cancelled["status"] == got["status"] == "cancelled"  # and stays so
    assert "_meta" not in cancelled
    assert no_result.code == -32602
    assert again.code == -32602
    assert (
        again.message
        == f"Cannot cancel task {task['taskId']}: already in terminal status 'cancelled'"
    )


@pytest.mark.parametrize(("tool", "status"), [("only_task", "completed"), ("failing", "failed")])
async def test_cancel_of_a_settled_task_is_invalid_params(tool: str, status: str) -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        task = await make_task(client, tool)
        await client.request("tasks/result", {"taskId": task["taskId"]})
        error = await refused(client, "tasks/cancel", {"taskId": task["taskId"]})
        got = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert error.code == -32602
    assert (
        error.message
        == f"Cannot cancel task {task['taskId']}: already in terminal status '{status}'"
    )
    assert error.data == {"taskId": task["taskId"], "status": status}
    assert got["status"] == status


# -- status paths, input_required, the related-task key -------------------------------------------


async def test_a_question_moves_the_task_to_input_required_and_back_to_working() -> None:
    gates = Gates()
    seen: list[str] = []
    holder: list[Client] = []
    task_ids: list[str] = []

    async def answer(request: ElicitRequest) -> AcceptedElicitation[Any]:
        # Asked on the tasks/result stream, while the task waits for the answer.
        seen.append((await holder[0].request("tasks/get", {"taskId": task_ids[0]}))["status"])
        return AcceptedElicitation({"confirm": True})

    async with trio_mcp.testing.connect(
        make_server(gates), asking=Asking(elicitation=answer)
    ) as client:
        holder.append(client)
        task = await make_task(client, "confirm")
        task_ids.append(task["taskId"])
        seen.append(task["status"])
        async with trio.open_nursery() as nursery:
            result: list[dict[str, Any]] = []

            async def wait_result() -> None:
                result.append(await client.request("tasks/result", {"taskId": task["taskId"]}))

            nursery.start_soon(wait_result)
            await gates.asked.wait()
            await trio.testing.wait_all_tasks_blocked()
            seen.append((await client.request("tasks/get", {"taskId": task["taskId"]}))["status"])
            gates.open.set()
        seen.append((await client.request("tasks/get", {"taskId": task["taskId"]}))["status"])
    assert seen == ["working", "input_required", "working", "completed"]
    assert result[0]["content"] == [{"type": "text", "text": "yes"}]


@asynccontextmanager
async def checked_peer(server: Server, auth: AuthInfo | None = None) -> AsyncIterator[RawPeer]:
    """A raw peer on `server` whose messages both ways are checked against the schema."""
    checker = MessageChecker(VERSION)
    client_end, server_end = memory_channel_pair()

    class Checked(RawPeer):
        async def send(self, message: Any) -> None:
            checker.check("client", message)
            await super().send(message)

        async def receive(self) -> Any:
            message = await super().receive()
            checker.check("server", message)
            return message

    async with trio.open_nursery() as nursery:
        await nursery.start(
            functools.partial(server.serve_connection, auth=auth),
            server_end.receive,
            server_end.send,
        )
        peer = Checked(client_end.send, client_end.receive)
        await peer.request(
            "initialize",
            {
                "protocolVersion": VERSION,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "t", "version": "0"},
            },
        )
        await peer.notify("notifications/initialized")
        yield peer
        nursery.cancel_scope.cancel()


async def test_the_questions_and_the_result_carry_the_related_task_key_the_states_do_not() -> None:
    gates = Gates()
    async with checked_peer(make_server(gates)) as peer:
        created = await peer.call("confirm", {}, task={})
        task_id = created["result"]["task"]["taskId"]
        result_id = await peer.start_request("tasks/result", {"taskId": task_id})
        states: list[dict[str, Any]] = []
        asked = result = None
        while result is None or states[-1]["status"] not in TERMINAL:
            message = await peer.receive()
            if message.get("method") == "notifications/tasks/status":
                states.append(message["params"])
            elif message.get("method") == "elicitation/create":
                asked = message
                answer = {"action": "accept", "content": {"confirm": False}}
                await peer.send({"jsonrpc": "2.0", "id": message["id"], "result": answer})
                gates.open.set()
            elif message.get("id") == result_id:
                result = message["result"]
        listed = (await peer.request("tasks/list"))["result"]
    assert asked is not None
    assert asked["params"]["_meta"] == {RELATED_TASK: {"taskId": task_id}}
    assert asked["params"]["message"] == "Sure?"
    assert result["_meta"] == {RELATED_TASK: {"taskId": task_id}}
    assert [s["status"] for s in states] == ["input_required", "working", "completed"]
    assert all(state["taskId"] == task_id and "_meta" not in state for state in states)
    assert "_meta" not in listed
    assert all("_meta" not in task for task in listed["tasks"])


# -- listing, and whose a task is -----------------------------------------------------------------


async def test_each_session_lists_and_reaches_its_own_tasks_only(autojump_clock: Any) -> None:
    server = make_server()
    async with (
        trio_mcp.testing.connect(server) as mine,
        trio_mcp.testing.connect(server) as theirs,
    ):
        task = await make_task(mine, "only_task")
        other = await make_task(theirs, "only_task")
        my_list = await mine.request("tasks/list")
        their_list = await theirs.request("tasks/list")
        reached = [
            await refused(theirs, method, {"taskId": task["taskId"]})
            for method in ("tasks/get", "tasks/result", "tasks/cancel")
        ]
        mine_still = await mine.request("tasks/get", {"taskId": task["taskId"]})
    assert [t["taskId"] for t in my_list["tasks"]] == [task["taskId"]]
    assert [t["taskId"] for t in their_list["tasks"]] == [other["taskId"]]
    assert {error.code for error in reached} == {-32602}
    assert {error.message for error in reached} == {
        f"Failed to retrieve task: Task not found: {task['taskId']}"
    }  # as if it did not exist
    assert mine_still["taskId"] == task["taskId"]


async def test_a_list_pages_with_opaque_cursors_oldest_first(autojump_clock: Any) -> None:
    async with trio_mcp.testing.connect(make_server(page_size=2)) as client:
        made = []
        for _ in range(5):
            made.append((await make_task(client, "only_task"))["taskId"])
            await trio.sleep(1)  # distinct creation times
        pages: list[list[str]] = []
        cursor = None
        while True:
            listed = await client.request(
                "tasks/list", {"cursor": cursor} if cursor is not None else {}
            )
            pages.append([task["taskId"] for task in listed["tasks"]])
            cursor = listed.get("nextCursor")
            if cursor is None:
                break
        bad = await refused(client, "tasks/list", {"cursor": "not-a-cursor"})
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [task_id for page in pages for task_id in page] == made
    assert bad.code == -32602


async def test_with_a_token_a_task_is_its_principals_from_any_session() -> None:
    alice = AuthInfo(subject="alice", client_id="app", issuer="https://issuer.example")
    mallory = AuthInfo(subject="mallory", client_id="app", issuer="https://issuer.example")
    server = make_server()
    async with checked_peer(server, alice) as first:
        created = await first.call("only_task", {}, task={})
        task_id = created["result"]["task"]["taskId"]
        async with checked_peer(server, alice) as second, checked_peer(server, mallory) as other:
            seen = (await second.request("tasks/get", {"taskId": task_id}))["result"]
            listed = (await second.request("tasks/list"))["result"]
            strange = await other.request("tasks/get", {"taskId": task_id})
            nothing = (await other.request("tasks/list"))["result"]
    assert seen["taskId"] == task_id
    assert [task["taskId"] for task in listed["tasks"]] == [task_id]
    assert strange["error"]["code"] == -32602
    assert nothing == {"tasks": []}


async def test_invalid_arguments_of_a_task_fail_the_task_with_their_error_result() -> None:
    async with trio_mcp.testing.connect(make_server()) as client:
        task = await make_task(client, "slow")  # no `seconds`
        result = await client.request("tasks/result", {"taskId": task["taskId"]})
        got = await client.request("tasks/get", {"taskId": task["taskId"]})
    assert result["isError"] is True
    assert "seconds: missing required argument" in result["content"][0]["text"]
    assert got["status"] == "failed"


async def test_a_question_left_by_a_tasks_result_that_went_away_is_asked_by_the_next() -> None:
    gates = Gates()
    gates.open.set()
    async with checked_peer(make_server(gates)) as peer:
        created = await peer.call("confirm", {}, task={})
        task_id = created["result"]["task"]["taskId"]
        first = await peer.start_request("tasks/result", {"taskId": task_id})
        while (asked := await peer.receive()).get("method") != "elicitation/create":
            pass
        await peer.notify("notifications/cancelled", {"requestId": first})
        while (withdrawn := await peer.receive()).get("method") != "notifications/cancelled":
            pass
        second = await peer.start_request("tasks/result", {"taskId": task_id})
        while (again := await peer.receive()).get("method") != "elicitation/create":
            pass
        answer = {"action": "accept", "content": {"confirm": True}}
        await peer.send({"jsonrpc": "2.0", "id": again["id"], "result": answer})
        while (result := await peer.receive()).get("id") != second or "method" in result:
            pass
    assert withdrawn["params"]["requestId"] == asked["id"]
    assert again["params"] == asked["params"]  # the same question, the related-task key too
    assert result["result"]["content"] == [{"type": "text", "text": "yes"}]


async def test_an_error_answer_to_a_question_is_raised_in_the_tool() -> None:
    async with checked_peer(make_server()) as peer:
        created = await peer.call("confirm", {}, task={})
        task_id = created["result"]["task"]["taskId"]
        waiting = await peer.start_request("tasks/result", {"taskId": task_id})
        while (asked := await peer.receive()).get("method") != "elicitation/create":
            pass
        refusal = {"code": -32603, "message": "no user here"}
        await peer.send({"jsonrpc": "2.0", "id": asked["id"], "error": refusal})
        while (result := await peer.receive()).get("id") != waiting or "method" in result:
            pass
        got = (await peer.request("tasks/get", {"taskId": task_id}))["result"]
    assert result["result"]["isError"] is True
    assert "no user here" in result["result"]["content"][0]["text"]
    assert got["status"] == "failed"
