"""The client side of the tasks of MCP 2025-11-25: as requestor of `tools/call`, and as receiver
of the server's sampling and elicitation.

In process through `trio_mcp.testing.connect` (every message checked against the 2025-11-25
schema: `params.task` answered `CreateTaskResult`, `tasks/result` with the call's result), then
a tool that runs only as a task over stdio and over Streamable HTTP, its question answered by
the client's handler on the `tasks/result` stream. As receiver: a server tool that asks the
client for a sample or an answer as a task, and reads it with the `tasks/` requests.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp.testing
from tests.fixtures import required_task_tools, task_tools
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    Client,
    Context,
    ElicitRequest,
    LocalProtocolError,
    RequestError,
    SamplingRequest,
    SamplingResult,
    Server,
    TaskCancelledError,
    ToolResult,
    open_client,
)
from trio_mcp.tasks import TaskInfo

TIMEOUT = scaled(60)
RELATED_TASK = "io.modelcontextprotocol/related-task"


async def pick(request: ElicitRequest) -> AcceptedElicitation[Any]:
    return AcceptedElicitation({"interpretation": "programming"})


async def yes(request: ElicitRequest) -> AcceptedElicitation[Any]:
    return AcceptedElicitation({"confirm": True})


# -- as requestor ---------------------------------------------------------------------------------


async def test_a_required_tool_runs_as_a_task_without_asking_anything_of_the_caller() -> None:
    seen: list[TaskInfo] = []
    async with trio_mcp.testing.connect(
        required_task_tools.server, asking=Asking(elicitation=pick)
    ) as client:
        # Not listed first: the client lists the tools once to learn the tool's support.
        result = await client.call_tool("research", {"topic": "python"}, on_task_status=seen.append)
        again = await client.call_tool("quick", {"name": "x"})
    assert result.text == "report on python (programming)"
    assert again.text == "done x"
    assert seen[0].status == "working"
    assert seen[-1].status == "completed"
    assert all(t.task_id == seen[0].task_id for t in seen)
    assert seen[0].poll_interval == 0.05
    assert seen[0].ttl == 3600


async def test_an_optional_tool_runs_as_a_task_only_for_a_client_that_does_tasks() -> None:
    seen: list[TaskInfo] = []
    async with trio_mcp.testing.connect(task_tools.server) as plain:
        direct = await plain.call_tool("slow", {"seconds": 0.01}, on_task_status=seen.append)
    assert direct.text == "slept 0.01"
    assert seen == []  # never a task: nobody asked
    async with trio_mcp.testing.connect(task_tools.server, tasks=True) as doing:
        tasked = await doing.call_tool("slow", {"seconds": 0.01}, on_task_status=seen.append)
    assert tasked.text == "slept 0.01"
    assert seen[-1].status == "completed"


async def test_handles_get_wait_and_cancel(autojump_clock: Any) -> None:
    async with trio_mcp.testing.connect(
        task_tools.server, tasks=True, asking=Asking(elicitation=yes)
    ) as client:
        handle = await client.call_tool_as_task("slow", {"seconds": 10})
        assert isinstance(handle, TaskInfo)
        assert handle.status == "working"
        assert handle.raw["pollInterval"] == 50
        got = await client.get_task(handle.task_id)
        await client.cancel_task(handle.task_id)
        after = await client.get_task(handle.task_id)
        with pytest.raises(RequestError) as settled:
            await client.cancel_task(handle.task_id)  # 2025-11-25: a settled task is refused
        with pytest.raises(TaskCancelledError):
            await client.wait_task(handle.task_id)
        asked = await client.call_tool_as_task("confirm")
        assert isinstance(asked, TaskInfo)
        result = await client.wait_task(asked)
        with pytest.raises(LocalProtocolError, match="no tasks/update"):
            await client.update_task(asked.task_id, {})
        listed = await client.request("tasks/list")
    assert got.status == "working"
    assert after.status == "cancelled"
    assert settled.value.code == -32602
    assert result.text == "yes"
    assert {task["taskId"] for task in listed["tasks"]} == {handle.task_id, asked.task_id}


async def test_a_tool_error_is_a_result_and_a_protocol_error_raises() -> None:
    async with trio_mcp.testing.connect(task_tools.server, tasks=True) as client:
        failed = await client.call_tool("failing")
        with pytest.raises(RequestError) as crashed:
            await client.call_tool("crashing")
    assert failed.is_error
    assert failed.text == "it broke"
    assert (crashed.value.code, crashed.value.data) == (-32603, {"why": "test"})


async def test_cancelling_the_caller_cancels_the_task(autojump_clock: Any) -> None:
    seen: list[TaskInfo] = []
    async with trio_mcp.testing.connect(task_tools.server, tasks=True) as client:
        with trio.move_on_after(2):
            await client.call_tool("slow", {"seconds": 60}, on_task_status=seen.append)
        after = await client.get_task(seen[0].task_id)
    assert after.status == "cancelled"


async def test_a_task_cancelled_while_its_result_is_held_raises_task_cancelled() -> None:
    cancelling: list[Any] = []

    async def cancel_it(request: ElicitRequest) -> AcceptedElicitation[Any]:
        client, task_id = cancelling
        await client.cancel_task(task_id)  # from the question the task asks
        await trio.sleep_forever()  # the server withdraws the question

    async with trio_mcp.testing.connect(
        task_tools.server, tasks=True, asking=Asking(elicitation=cancel_it)
    ) as client:
        handle = await client.call_tool_as_task("confirm")
        assert isinstance(handle, TaskInfo)
        cancelling[:] = [client, handle.task_id]
        with pytest.raises(TaskCancelledError) as cancelled:
            await client.wait_task(handle)
    assert cancelled.value.task_id == handle.task_id


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stdio", "streamable-http"])
async def test_a_required_tool_over_real_transports(kind: str) -> None:
    seen: list[TaskInfo] = []

    async def calls(client: Client) -> ToolResult:
        return await client.call_tool("research", {"topic": "python"}, on_task_status=seen.append)

    with trio.fail_after(TIMEOUT):
        if kind == "stdio":
            target: Any = [sys.executable, "-m", "trio_mcp", "run", required_task_tools.__file__]
            async with open_client(
                target, protocol_version="2025-11-25", asking=Asking(elicitation=pick)
            ) as client:
                result = await calls(client)
        else:
            async with (
                serve(required_task_tools.server) as served,
                open_client(
                    served.url, protocol_version="2025-11-25", asking=Asking(elicitation=pick)
                ) as client,
            ):
                result = await calls(client)
    assert result.text == "report on python (programming)"
    assert seen[-1].status == "completed"


# -- as receiver ----------------------------------------------------------------------------------


def asking_server(gate: trio.Event | None = None) -> Server:
    """A server whose tools ask the client for a sample, or an answer, as a task."""
    server = Server("asks-as-task")

    @server.tool()
    async def sample_as_task(ctx: Context) -> str:
        created = await ctx._request(
            "sampling/createMessage",
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10,
                "task": {"ttl": 60_000},
            },
        )
        if "task" not in created:
            return json.dumps({"direct": created})
        task_id = created["task"]["taskId"]
        got = await ctx._request("tasks/get", {"taskId": task_id})
        result = await ctx._request("tasks/result", {"taskId": task_id})
        listed = await ctx._request("tasks/list", {})
        return json.dumps({"created": created, "got": got, "result": result, "listed": listed})

    @server.tool()
    async def elicit_then_cancel(ctx: Context) -> str:
        created = await ctx._request(
            "elicitation/create",
            {
                "mode": "form",
                "message": "Sure?",
                "requestedSchema": {"type": "object", "properties": {}},
                "task": {},
            },
        )
        task_id = created["task"]["taskId"]
        cancelled = await ctx._request("tasks/cancel", {"taskId": task_id})
        try:
            await ctx._request("tasks/cancel", {"taskId": task_id})
        except RequestError as exc:
            again = exc.code
        return json.dumps({"cancelled": cancelled, "again": again})

    return server


async def test_the_client_runs_the_servers_sample_as_a_task_when_asked() -> None:
    async def sample(request: SamplingRequest) -> SamplingResult:
        return SamplingResult({"type": "text", "text": "hello"}, model="test-model")

    async with trio_mcp.testing.connect(
        asking_server(), tasks=True, asking=Asking(sampling=sample)
    ) as client:
        answer = await client.call_tool("sample_as_task")
    told = json.loads(answer.text)
    task_id = told["created"]["task"]["taskId"]
    assert told["created"]["task"]["status"] == "working"
    assert told["created"]["task"]["ttl"] == 60_000
    assert told["got"]["taskId"] == task_id
    assert told["result"]["content"] == {"type": "text", "text": "hello"}
    assert told["result"]["model"] == "test-model"
    assert told["result"]["_meta"] == {RELATED_TASK: {"taskId": task_id}}
    assert [task["taskId"] for task in told["listed"]["tasks"]] == [task_id]
    assert client.protocol_version == "2025-11-25"


async def test_a_client_that_does_no_tasks_answers_the_sample_as_usual() -> None:
    async def sample(request: SamplingRequest) -> SamplingResult:
        return SamplingResult({"type": "text", "text": "hello"}, model="test-model")

    async with trio_mcp.testing.connect(asking_server(), asking=Asking(sampling=sample)) as client:
        answer = await client.call_tool("sample_as_task")
    assert json.loads(answer.text)["direct"]["model"] == "test-model"


async def test_the_server_cancels_a_task_the_client_runs() -> None:
    stopped = trio.Event()

    async def hold(request: ElicitRequest) -> AcceptedElicitation[Any]:
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()

    async with trio_mcp.testing.connect(
        asking_server(), tasks=True, asking=Asking(elicitation=hold)
    ) as client:
        answer = await client.call_tool("elicit_then_cancel")
        await stopped.wait()  # the handler was stopped
    told = json.loads(answer.text)
    assert told["cancelled"]["status"] == "cancelled"
    assert told["again"] == -32602
