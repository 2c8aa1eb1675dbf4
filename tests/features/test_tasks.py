"""The tasks extension (io.modelcontextprotocol/tasks, SEP-2663) on the server, end to end.

In memory through a raw peer (both eras), and once over Streamable HTTP; trio's autojump clock
stands in for the time the tools sleep. Two servers sharing one store stand for a fleet's
workers: the leases, a task settled on one worker that another runs, a dead worker's task
(tests/runtime/test_redis_tasks.py does the same across processes, with Redis).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from tests.helpers import MODERN, RawPeer, open_memory_peer
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import (
    AcceptedElicitation,
    Context,
    RemoteProtocolError,
    Server,
    ToolDefinitionError,
    ToolError,
)
from trio_mcp._runtime.tasks import FULL_WARNING_INTERVAL
from trio_mcp.tasks import MemoryTaskStore, TaskRecord, TaskSupport

TASKS = "io.modelcontextprotocol/tasks"
DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS: {}}}


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": DECLARED
        if capabilities is None
        else capabilities,
    }


class Confirm(BaseModel):
    confirm: bool


def make_server(**options: Any) -> Server:
    server = Server("tasks-test", **options)

    @server.tool(inline=True)
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(task=True)
    async def slow(seconds: float) -> str:
        await trio.sleep(seconds)
        return f"slept {seconds:g}"

    @server.tool(task=True)
    async def failing() -> str:
        await trio.sleep(1)
        raise ToolError("it broke")

    @server.tool(task=True)
    async def crashing() -> str:
        raise RemoteProtocolError("Internal error: crashed", -32603)

    @server.tool(task=TaskSupport(required=True))
    async def only_task() -> str:
        return "done"

    @server.tool(task=True)
    async def confirm(ctx: Context) -> str:
        outcome = await ctx.elicit("Sure?", Confirm)
        return "yes" if isinstance(outcome, AcceptedElicitation) and outcome.data.confirm else "no"

    @server.tool(task=True)
    async def two_questions(ctx: Context) -> str:
        a, b = await ctx.gather(ctx.elicit("A?", Confirm), ctx.elicit("B?", Confirm))
        return f"{isinstance(a, AcceptedElicitation)} {isinstance(b, AcceptedElicitation)}"

    @server.tool(task=True)
    async def progressing(ctx: Context) -> str:
        await ctx.report_progress(1, 3, "first third")
        await trio.sleep(10)
        return "done"

    @server.tool(task=2.0)
    async def maybe(seconds: float) -> str:
        await trio.sleep(seconds)
        return "finished"

    @server.tool(task=TaskSupport(after=None))
    async def asks_then_detaches(ctx: Context) -> str:
        outcome = await ctx.elicit("Name?", Confirm, key="first")
        detached = await ctx.become_task()
        await trio.sleep(1)
        return f"answered={isinstance(outcome, AcceptedElicitation)} task={detached} {ctx.is_task}"

    return server


async def call(
    peer: RawPeer, name: str, arguments: dict[str, Any] | None = None, **extra: Any
) -> Any:
    return await peer.call(name, arguments or {}, _meta=meta(), **extra)


async def tasks(peer: RawPeer, method: str, task_id: str, **params: Any) -> Any:
    return await peer.request(method, {"taskId": task_id, "_meta": meta(), **params})


async def settle(peer: RawPeer, task_id: str) -> dict[str, Any]:
    while True:
        got: dict[str, Any] = (await tasks(peer, "tasks/get", task_id))["result"]
        if got["status"] in ("completed", "failed", "cancelled"):
            return got
        await trio.sleep(got["pollIntervalMs"] / 1000)


async def until(peer: RawPeer, task_id: str, status: str) -> dict[str, Any]:
    while True:
        got: dict[str, Any] = (await tasks(peer, "tasks/get", task_id))["result"]
        if got["status"] == status:
            return got
        await trio.sleep(0.01)


async def test_extension_is_advertised_only_with_task_tools() -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        found = await peer.request("server/discover", {"_meta": meta()})
    assert found["result"]["capabilities"]["extensions"] == {TASKS: {}}
    assert "tasks" not in found["result"]["capabilities"]
    assert "extensions" not in Server("plain").capabilities()


async def test_a_task_call_answers_a_flat_create_task_result(autojump_clock: Any) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        created = (await call(peer, "slow", {"seconds": 5}))["result"]
        assert created["resultType"] == "task"
        assert created["status"] == "working"
        assert isinstance(created["ttlMs"], int)
        assert created["ttlMs"] == 3_600_000
        assert isinstance(created["pollIntervalMs"], int)
        assert created["pollIntervalMs"] == 1000
        assert created["createdAt"].endswith("Z")
        assert not {"task", "result", "error", "inputRequests", "requestState", "ttl"} & set(
            created
        )
        assert len(created["taskId"]) >= 22  # 128 random bits
        working = (await tasks(peer, "tasks/get", created["taskId"]))["result"]
        assert working["status"] == "working"
        assert "result" not in working
        assert "error" not in working
        done = await settle(peer, created["taskId"])
    assert done["status"] == "completed"
    assert done["result"] == {"content": [{"type": "text", "text": "slept 5"}]}
    assert done["resultType"] == "complete"


async def test_tool_errors_complete_and_protocol_errors_fail(autojump_clock: Any) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        failing = (await call(peer, "failing"))["result"]["taskId"]
        crashing = (await call(peer, "crashing"))["result"]["taskId"]
        tool_error = await settle(peer, failing)
        protocol_error = await settle(peer, crashing)
    assert tool_error["status"] == "completed"
    assert tool_error["result"]["isError"] is True
    assert tool_error["result"]["content"][0]["text"] == "it broke"
    assert protocol_error["status"] == "failed"
    assert protocol_error["error"] == {"code": -32603, "message": "Internal error: crashed"}
    assert "result" not in protocol_error


async def test_cancel_settles_cancelled_and_is_idempotent(autojump_clock: Any) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        task_id = (await call(peer, "slow", {"seconds": 60}))["result"]["taskId"]
        ack = await tasks(peer, "tasks/cancel", task_id)
        assert ack["result"] == {"resultType": "complete"}
        assert (await settle(peer, task_id))["status"] == "cancelled"
        await trio.sleep(120)  # the cancelled work never overwrites the status
        again = await tasks(peer, "tasks/cancel", task_id)
        final = (await tasks(peer, "tasks/get", task_id))["result"]
    assert again["result"] == {"resultType": "complete"}
    assert final["status"] == "cancelled"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel", "tasks/update"])
async def test_unknown_task_ids_are_invalid_params(method: str) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        got = await tasks(peer, method, "no-such-task", inputResponses={})
    assert got["error"]["code"] == -32602


async def test_removed_v1_methods_are_not_found() -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        result = await peer.request("tasks/result", {"taskId": "x", "_meta": meta()})
        listed = await peer.request("tasks/list", {"_meta": meta()})
    assert result["error"]["code"] == listed["error"]["code"] == -32601


async def test_clients_without_the_extension_get_plain_results_and_minus_32021() -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        plain = await peer.call("slow", {"seconds": 0}, _meta=meta({}))
        refused = await peer.request("tasks/get", {"taskId": "x", "_meta": meta({})})
        required = await peer.call("only_task", {}, _meta=meta({}))
        legacy_hint = await peer.call("greet", {"name": "a"}, _meta=meta(), task={"ttl": 1})
    assert plain["result"]["resultType"] == "complete"
    assert plain["result"]["content"] == [{"type": "text", "text": "slept 0"}]
    assert refused["error"]["code"] == -32021
    assert required["error"]["code"] == -32021
    assert required["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert legacy_hint["result"]["content"][0]["text"] == "Hello, a!"  # sync tools never tasks


async def test_questions_surface_as_input_required_and_update_resumes(autojump_clock: Any) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        task_id = (await call(peer, "confirm"))["result"]["taskId"]
        waiting = await until(peer, task_id, "input_required")
        ((key, asked),) = waiting["inputRequests"].items()
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["message"] == "Sure?"
        ack = await tasks(
            peer, "tasks/update", task_id,
            inputResponses={key: {"action": "accept", "content": {"confirm": True}}, "x": {}},
        )  # fmt: skip
        assert ack["result"] == {"resultType": "complete"}
        done = await settle(peer, task_id)
    assert done["result"]["content"][0]["text"] == "yes"


async def test_partial_answers_keep_the_rest_pending(autojump_clock: Any) -> None:
    answer = {"action": "accept", "content": {"confirm": True}}
    async with open_memory_peer(make_server(), initialize=False) as peer:
        task_id = (await call(peer, "two_questions"))["result"]["taskId"]
        waiting = await until(peer, task_id, "input_required")
        first, second = waiting["inputRequests"]
        await tasks(peer, "tasks/update", task_id, inputResponses={first: answer})
        partial = (await tasks(peer, "tasks/get", task_id))["result"]
        assert partial["status"] == "input_required"
        assert list(partial["inputRequests"]) == [second]
        await tasks(peer, "tasks/update", task_id, inputResponses={second: answer})
        done = await settle(peer, task_id)
    assert done["result"]["content"][0]["text"] == "True True"


async def test_progress_becomes_the_status_message(autojump_clock: Any) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        task_id = (await call(peer, "progressing"))["result"]["taskId"]
        await trio.sleep(1)
        got = (await tasks(peer, "tasks/get", task_id))["result"]
    assert got["statusMessage"] == "first third"


async def test_a_delay_policy_answers_fast_calls_at_once(autojump_clock: Any) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        fast = (await call(peer, "maybe", {"seconds": 1}))["result"]
        slow = (await call(peer, "maybe", {"seconds": 5}))["result"]
        done = await settle(peer, slow["taskId"])
    assert fast["resultType"] == "complete"
    assert fast["content"][0]["text"] == "finished"
    assert slow["resultType"] == "task"
    assert done["result"]["content"][0]["text"] == "finished"


async def test_input_required_rounds_then_a_task(autojump_clock: Any) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        round1 = (await call(peer, "asks_then_detaches"))["result"]
        assert round1["resultType"] == "input_required"
        assert "taskId" not in round1
        round2 = (
            await call(
                peer,
                "asks_then_detaches",
                inputResponses={"first": {"action": "accept", "content": {"confirm": True}}},
                requestState=round1["requestState"],
            )
        )["result"]
        assert round2["resultType"] == "task"
        assert "requestState" not in round2
        done = await settle(peer, round2["taskId"])
    assert done["result"]["content"][0]["text"] == "answered=True task=True True"


async def test_a_handshake_era_declaration_of_the_extension_counts_for_nothing(
    autojump_clock: Any,
) -> None:
    # SEP-2663, Backward Compatibility: the extension is not defined under 2025-11-25, whose
    # own tasks the requestor asks for with `params.task` (tests/features/test_task_utility.py).
    server = make_server()
    async with open_memory_peer(server, initialize=False) as peer:
        await peer.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        )
        await peer.notify("notifications/initialized")
        plain = await peer.call("slow", {"seconds": 1})
        opted = await peer.call(
            "slow", {"seconds": 1}, _meta={"io.modelcontextprotocol/clientCapabilities": DECLARED}
        )
    assert plain["result"]["content"][0]["text"] == "slept 1"
    assert "resultType" not in plain["result"]
    assert opted["result"] == plain["result"]


async def test_a_connection_that_ends_fails_its_running_tasks(autojump_clock: Any) -> None:
    server = make_server()
    async with open_memory_peer(server, initialize=False) as peer:
        task_id = (await call(peer, "slow", {"seconds": 60}))["result"]["taskId"]
    record = await server._task_runtime.get(task_id)
    assert record is not None
    assert record.status == "failed"
    assert record.error is not None
    assert "stopped" in record.error["message"]


async def test_a_full_store_runs_the_call_to_its_end(
    autojump_clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = make_server(task_store=MemoryTaskStore(max_tasks=1))
    full = "the task store is full (max_tasks=1): the call of 'slow' runs to its end instead"
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with open_memory_peer(server, initialize=False) as peer:
            first = (await call(peer, "slow", {"seconds": 600}))["result"]
            second = (await call(peer, "slow", {"seconds": 2}))["result"]
            # One warning for the refused call, though it was offered to the store twice
            # (at its start, `after=0`, and after its delay).
            assert [r.getMessage() for r in caplog.records] == [f"{full} of becoming a task"]
            await call(peer, "slow", {"seconds": 1})  # within the minute: not warned of
            assert len(caplog.records) == 1
            await trio.sleep(FULL_WARNING_INTERVAL)
            await call(peer, "slow", {"seconds": 1})
            assert [r.getMessage() for r in caplog.records][1:] == [
                f"{full} of becoming a task; 1 more call(s) ran to their end since the last warning"
            ]
    assert first["resultType"] == "task"
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"] == "slept 2"


# -- a store shared by workers: leases (`_features/tasks` Rule 2) ---------------------------------


def fleet_server(store: MemoryTaskStore, stopped: trio.Event, **runtime: Any) -> Server:
    """A worker of a fleet sharing `store`; its `forever` sets `stopped` when its work stops."""
    server = Server("worker", task_store=store)
    server._task_runtime.clock = runtime.get("clock", trio.current_time)

    @server.tool(task=True)
    async def forever(ctx: Context) -> str:
        await ctx.report_progress(1, message="started")
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()

    return server


async def test_another_worker_answers_for_a_task_and_cancels_it(autojump_clock: Any) -> None:
    store, stopped = MemoryTaskStore(lease=3), trio.Event()
    a, b = fleet_server(store, stopped), fleet_server(store, trio.Event())
    async with (
        open_memory_peer(a, initialize=False) as on_a,
        open_memory_peer(b, initialize=False) as on_b,
    ):
        task_id = (await call(on_a, "forever"))["result"]["taskId"]
        await trio.sleep(30)  # ten leases: the worker renews its own
        seen = (await tasks(on_b, "tasks/get", task_id))["result"]
        assert seen["status"] == "working"
        assert seen["statusMessage"] == "started"
        ack = await tasks(on_b, "tasks/cancel", task_id)
        assert ack["result"] == {"resultType": "complete"}
        with trio.fail_after(3):  # a's next renewal finds the task settled
            await stopped.wait()
        on_a_now = (await tasks(on_a, "tasks/get", task_id))["result"]
        await trio.sleep(30)
        later = (await tasks(on_b, "tasks/get", task_id))["result"]
    assert on_a_now["status"] == later["status"] == "cancelled"
    assert a._task_runtime.live_count == 0


async def test_a_task_whose_worker_stopped_renewing_fails_after_its_lease(
    autojump_clock: Any,
) -> None:
    store = MemoryTaskStore(lease=3)
    b = fleet_server(store, trio.Event())
    now = trio.current_time()
    orphan = TaskRecord("orphan", now, 60.0, 1.0, owner="gone:1:x", lease_until=now + 3)
    assert await store.add(orphan, now)
    async with open_memory_peer(b, initialize=False) as on_b:
        before = (await tasks(on_b, "tasks/get", "orphan"))["result"]
        await trio.sleep(3)
        after = (await tasks(on_b, "tasks/get", "orphan"))["result"]
        later = (await tasks(on_b, "tasks/get", "orphan"))["result"]
    assert before["status"] == "working"
    assert after["status"] == "failed"
    assert after["error"]["code"] == -32603
    assert after["error"]["message"].startswith(
        "The worker running this task stopped before the task finished (its lease ran out at "
    )
    assert after["error"]["data"] == {"worker": "gone:1:x"}
    assert later == after
    stored = await store.get("orphan", trio.current_time())
    assert stored is not None
    assert stored.status == "failed"  # saved, not only shown


async def test_a_worker_whose_lease_others_saw_run_out_stops_its_work(autojump_clock: Any) -> None:
    store, stopped = MemoryTaskStore(lease=3), trio.Event()
    a = fleet_server(store, stopped)
    late = fleet_server(store, trio.Event(), clock=lambda: trio.current_time() + 100)
    async with (
        open_memory_peer(a, initialize=False) as on_a,
        open_memory_peer(late, initialize=False) as on_late,
    ):
        task_id = (await call(on_a, "forever"))["result"]["taskId"]
        failed = (await tasks(on_late, "tasks/get", task_id))["result"]
        with trio.fail_after(3):
            await stopped.wait()
        on_a_now = (await tasks(on_a, "tasks/get", task_id))["result"]
    assert failed["status"] == "failed"
    assert on_a_now["status"] == "failed"  # settled is final: the worker's end changes nothing


async def test_a_worker_does_not_fail_its_own_running_task() -> None:
    store = MemoryTaskStore(lease=3)
    server = fleet_server(store, trio.Event())
    frozen = [0.0]
    server._task_runtime.clock = lambda: frozen[0]
    async with open_memory_peer(server, initialize=False) as peer:
        task_id = (await call(peer, "forever"))["result"]["taskId"]
        frozen[0] = 100.0  # as if its loop had been too busy to renew
        got = (await tasks(peer, "tasks/get", task_id))["result"]
    assert got["status"] == "working"


async def test_a_store_never_writes_over_a_settled_record() -> None:
    store = MemoryTaskStore()
    record = TaskRecord("t", 0.0, 10.0, 1.0, owner="w", lease_until=3.0)
    assert await store.add(record, 0.0)
    copy = TaskRecord.load(record.dump())
    assert copy.dump() == record.dump()
    record.status = "cancelled"
    assert await store.save(record)
    copy.status_message = "still going"
    assert not await store.save(copy)
    assert await store.get("t", 1.0) is record
    with pytest.raises(ValueError, match="not a task record"):
        TaskRecord.load({"v": 1, "status": "working"})
    with pytest.raises(ValueError, match="not a task record"):
        TaskRecord.load({**record.dump(), "status": "sleeping"})


async def test_the_memory_store_drops_expired_and_makes_room() -> None:
    store = MemoryTaskStore(max_tasks=2)
    old = TaskRecord("old", created_at=0.0, ttl=10.0, poll_interval=1.0, status="completed")
    live = TaskRecord("live", created_at=0.0, ttl=10.0, poll_interval=1.0)
    assert await store.add(old, 0.0)
    assert await store.add(live, 0.0)
    assert await store.get("old", 5.0) is old  # within its ttl
    newer = TaskRecord("newer", created_at=5.0, ttl=10.0, poll_interval=1.0)
    assert await store.add(newer, 5.0)  # the finished one made room
    assert await store.get("old", 5.0) is None
    assert not await store.add(TaskRecord("x", 6.0, 10.0, 1.0), 6.0)  # all live: no room
    newer.status = "completed"
    newer.updated_at = 6.0
    assert await store.get("newer", 15.9) is newer
    assert await store.get("newer", 16.0) is None  # expired ttl seconds after it settled


def test_task_options_are_checked_at_registration() -> None:
    server = Server("t")
    with pytest.raises(ToolDefinitionError, match="inline"):
        server.add_tool(lambda: 1, name="x", inline=True, task=True)
    with pytest.raises(ToolDefinitionError, match="task="):
        server.add_tool(lambda: 1, name="y", task="soon")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="ttl"):
        TaskSupport(ttl=0)
    assert server.add_tool(lambda: 1, name="z", task=1.5).task == TaskSupport(after=1.5)


async def test_over_streamable_http_with_routing_headers() -> None:
    server = make_server()
    async with serve(server) as served:
        client = served.client(MODERN)
        created = (await client.call("slow", {"seconds": 0.2}, **meta())).result
        task_id = created["taskId"]
        got = (await client.request("tasks/get", {"taskId": task_id, "_meta": meta()})).result
        wrong = await client.request(
            "tasks/get", {"taskId": task_id, "_meta": meta()}, **{"mcp-name": "other"}
        )
        with trio.fail_after(scaled(60)):
            while got["status"] != "completed":
                await trio.sleep(0.05)
                got = (
                    await client.request("tasks/get", {"taskId": task_id, "_meta": meta()})
                ).result
    assert created["resultType"] == "task"
    assert wrong.last["error"]["code"] == -32020
    assert got["result"]["content"][0]["text"] == "slept 0.2"
