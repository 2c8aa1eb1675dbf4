"""The client side of the tasks extension (SEP-2663): `call_tool` follows a task to its end.

In process with trio's autojump clock for the polls, in both eras (and the states the server
pushes, which end the wait between polls); then once over stdio and over Streamable HTTP, in
both eras, against `tests/fixtures/task_tools.py`.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from tests.fixtures import task_tools
from tests.helpers import MODERN
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    Client,
    Context,
    DeclinedElicitation,
    ElicitRequest,
    LocalProtocolError,
    RequestError,
    Server,
    TaskCancelledError,
    ToolResult,
    open_client,
)
from trio_mcp._core.client_records import task_info
from trio_mcp._runtime.client.tasks import MAX_POLL_INTERVAL, MIN_POLL_INTERVAL, poll_interval
from trio_mcp.tasks import TaskInfo, TaskSupport

ERAS = ["2025-11-25", MODERN]
TIMEOUT = scaled(60)


async def yes(request: ElicitRequest) -> AcceptedElicitation[Any]:
    return AcceptedElicitation({"confirm": True})


@pytest.mark.parametrize("version", ERAS)
async def test_call_tool_follows_a_task_to_its_result(version: str, autojump_clock: Any) -> None:
    seen: list[TaskInfo] = []
    async with open_client(task_tools.server, protocol_version=version, tasks=True) as client:
        result = await client.call_tool("slow", {"seconds": 3}, on_task_status=seen.append)
        plain = await client.call_tool("greet", {"name": "a"})
    assert result.text == "slept 3"
    assert plain.text == "Hello, a!"
    assert [t.status for t in seen][-2:] == ["working", "completed"]
    assert {t.status for t in seen[:-1]} == {"working"}
    assert [t.status_message for t in seen][-2:] == ["halfway", "halfway"]  # each change once
    assert len({t.task_id for t in seen}) == 1


@pytest.mark.parametrize("version", ERAS)
async def test_without_tasks_the_call_runs_to_its_end(version: str, autojump_clock: Any) -> None:
    async with open_client(task_tools.server, protocol_version=version) as client:
        seen: list[TaskInfo] = []
        result = await client.call_tool("slow", {"seconds": 3}, on_task_status=seen.append)
        with pytest.raises(LocalProtocolError, match="tasks=True"):
            await client.get_task("x")
    assert result.text == "slept 3"
    assert seen == []


async def test_a_tool_error_is_a_result_and_a_protocol_error_raises(autojump_clock: Any) -> None:
    async with open_client(task_tools.server, protocol_version=MODERN, tasks=True) as client:
        failed = await client.call_tool("failing")
        with pytest.raises(RequestError) as crashed:
            await client.call_tool("crashing")
    assert failed.is_error
    assert failed.text == "it broke"
    assert crashed.value.code == -32603
    assert crashed.value.message == "Internal error: crashed"
    assert crashed.value.data == {"why": "test"}


@pytest.mark.parametrize("version", ERAS)
async def test_questions_are_answered_by_the_handlers_through_update(
    version: str, autojump_clock: Any
) -> None:
    asked: list[str] = []

    async def answer(request: ElicitRequest) -> AcceptedElicitation[Any] | DeclinedElicitation:
        asked.append(request.message)
        return (
            AcceptedElicitation({"confirm": True})
            if request.message != "B?"
            else DeclinedElicitation()
        )

    async with open_client(
        task_tools.server,
        protocol_version=version,
        tasks=True,
        asking=Asking(elicitation=answer),
    ) as client:
        one = await client.call_tool("confirm")
        two = await client.call_tool("two_questions")
    assert one.text == "yes"
    assert two.text == "True False"
    assert asked[0] == "Sure?"
    assert sorted(asked[1:]) == ["A?", "B?"]  # each asked once, though polled many times


async def test_cancelling_the_caller_cancels_the_task(autojump_clock: Any) -> None:
    seen: list[TaskInfo] = []
    async with open_client(task_tools.server, protocol_version=MODERN, tasks=True) as client:
        with trio.move_on_after(2):
            await client.call_tool("slow", {"seconds": 60}, on_task_status=seen.append)
        after = await client.get_task(seen[0].task_id)
    assert after.status == "cancelled"


async def test_a_task_cancelled_elsewhere_raises_task_cancelled(autojump_clock: Any) -> None:
    async with open_client(task_tools.server, protocol_version=MODERN, tasks=True) as client:
        handle = await client.call_tool_as_task("slow", {"seconds": 60})
        assert isinstance(handle, TaskInfo)
        async with trio.open_nursery() as nursery:

            async def cancel_soon() -> None:
                await trio.sleep(1)
                await client.cancel_task(handle.task_id)

            nursery.start_soon(cancel_soon)
            with pytest.raises(TaskCancelledError) as cancelled:
                await client.wait_task(handle)
    assert cancelled.value.task_id == handle.task_id


async def test_handles_get_update_and_cancel(autojump_clock: Any) -> None:
    async with open_client(
        task_tools.server,
        protocol_version=MODERN,
        tasks=True,
        asking=Asking(elicitation=yes),
    ) as client:
        fast = await client.call_tool_as_task("maybe", {"seconds": 0.5})
        handle = await client.call_tool_as_task("confirm")
        assert isinstance(fast, ToolResult)
        assert fast.text == "finished"
        assert isinstance(handle, TaskInfo)
        assert handle.status in ("working", "input_required")
        assert handle.poll_interval == 0.05
        assert handle.ttl == 3600
        await trio.sleep(1)  # the task asks its question at once
        task = await client.get_task(handle.task_id)
        assert task.status == "input_required"
        ((key, asked),) = task.input_requests.items()
        assert asked["method"] == "elicitation/create"
        await client.update_task(
            handle.task_id, {key: {"action": "accept", "content": {"confirm": False}}}
        )
        result = await client.wait_task(handle.task_id)
        await client.cancel_task(handle.task_id)  # a settled task: an empty acknowledgement
        with pytest.raises(RequestError) as unknown:
            await client.get_task("no-such-task")
    assert result.text == "no"
    assert unknown.value.code == -32602


async def test_wait_with_cancel_false_leaves_the_task_running(autojump_clock: Any) -> None:
    async with open_client(task_tools.server, protocol_version=MODERN, tasks=True) as client:
        handle = await client.call_tool_as_task("slow", {"seconds": 10})
        assert isinstance(handle, TaskInfo)
        with trio.move_on_after(1):
            await client.wait_task(handle, cancel=False)
        assert (await client.get_task(handle.task_id)).status == "working"
        result = await client.wait_task(handle)
    assert result.text == "slept 10"


async def test_a_handler_that_fails_ends_the_call_and_cancels_the_task(
    autojump_clock: Any,
) -> None:
    async def broken(request: ElicitRequest) -> AcceptedElicitation[Any]:
        raise ValueError("no answer today")

    seen: list[TaskInfo] = []
    async with open_client(
        task_tools.server,
        protocol_version=MODERN,
        tasks=True,
        asking=Asking(elicitation=broken),
    ) as client:
        with pytest.raises(ValueError, match="no answer today"):
            await client.call_tool("confirm", on_task_status=seen.append)
        after = await client.get_task(seen[0].task_id)
    assert after.status == "cancelled"


def test_poll_intervals_are_bounded() -> None:
    def task(ms: Any) -> TaskInfo:
        return task_info({"taskId": "t", "status": "working", "pollIntervalMs": ms})

    assert poll_interval(task(250)) == 0.25
    assert poll_interval(task(0)) == MIN_POLL_INTERVAL
    assert poll_interval(task(10**9)) == MAX_POLL_INTERVAL
    assert poll_interval(task(None)) == 1.0
    assert poll_interval(task("soon")) == 1.0


@pytest.mark.parametrize(
    "wire",
    [
        {"status": "working"},
        {"taskId": "t", "status": "sleeping"},
        {"taskId": "t", "status": "failed", "error": "oops"},
        {"taskId": "t", "status": "completed", "result": []},
    ],
)
def test_malformed_tasks_are_refused(wire: dict[str, Any]) -> None:
    from trio_mcp import RemoteProtocolError  # noqa: PLC0415

    with pytest.raises(RemoteProtocolError):
        task_info(wire)


@pytest.mark.slow
@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("kind", ["stdio", "streamable-http"])
async def test_over_real_transports(kind: str, version: str) -> None:
    seen: list[TaskInfo] = []

    async def calls(client: Client) -> tuple[ToolResult, ToolResult, ToolResult, float]:
        result = await client.call_tool("slow", {"seconds": 0.2}, on_task_status=seen.append)
        asked = await client.call_tool("confirm")
        started = trio.current_time()
        told = await client.call_tool("pushed")
        return result, asked, told, trio.current_time() - started

    with trio.fail_after(TIMEOUT):
        if kind == "stdio":
            target: Any = [sys.executable, "-m", "trio_mcp", "run", task_tools.__file__]
            async with open_client(
                target,
                protocol_version=version,
                tasks=True,
                asking=Asking(elicitation=yes),
            ) as client:
                result, asked, told, took = await calls(client)
        else:
            async with (
                serve(task_tools.server) as served,
                open_client(
                    served.url,
                    protocol_version=version,
                    tasks=True,
                    asking=Asking(elicitation=yes),
                ) as client,
            ):
                result, asked, told, took = await calls(client)
    assert result.text == "slept 0.2"
    # `pushed` asks to be polled hourly, and polls come every MAX_POLL_INTERVAL (30 s) at most:
    # ending sooner, it was ended by the states the server pushed.
    assert took < MAX_POLL_INTERVAL
    assert told.text == "pushed yes"
    assert asked.text == "yes"
    assert seen[0].status == "working"
    assert seen[-1].status == "completed"


def pushing_server() -> Server:
    """A task tool whose poll interval is longer than any client waits between polls."""
    server = Server("pushing")

    @server.tool(task=TaskSupport(poll_interval=3600))
    async def slow(ctx: Context) -> str:
        await ctx.elicit("Sure?", Confirm)  # at once: before any listen stream could ask
        await trio.sleep(1)
        return "done"

    return server


class Confirm(BaseModel):
    confirm: bool


@pytest.mark.parametrize("version", ERAS)
async def test_states_the_server_pushes_end_the_wait_between_polls(
    version: str, autojump_clock: Any
) -> None:
    seen: list[TaskInfo] = []
    async with open_client(
        pushing_server(),
        protocol_version=version,
        tasks=True,
        asking=Asking(elicitation=yes),
    ) as client:
        # Polls come every MAX_POLL_INTERVAL at most: only the pushed states are sooner.
        with trio.fail_after(MAX_POLL_INTERVAL / 2):
            result = await client.call_tool("slow", on_task_status=seen.append)
    assert result.text == "done"
    statuses = [t.status for t in seen]
    assert "input_required" in statuses
    assert statuses[-1] == "completed"
