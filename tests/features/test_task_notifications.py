"""Task status notifications (`notifications/tasks`) and the tasks of a fleet's other workers.

In memory through raw peers, trio's autojump clock standing in for the time tools sleep: a
2026-07-28 listen stream that asks for task ids hears each new state of those tasks; a
handshake-era session hears of the tasks its calls became; a status message that changes at
every step is told at most once per poll interval. Two servers sharing one store (and, where
said, one in-process broker bus) stand for two workers: a task's states reach a listener on the
other worker, answers sent there reach the task (with a broker at once, without one by the
worker's own look in the mailbox), and a cancel there stops the work long before a lease
renewal would have (tests/runtime/test_redis_tasks.py does the same across processes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from tests.helpers import MODERN, RawPeer, open_memory_peer
from trio_mcp import AcceptedElicitation, Context, InProcessBroker, RemoteProtocolError, Server
from trio_mcp._features.tasks import DEFAULT_MAILBOX
from trio_mcp.tasks import MemoryTaskStore, TaskRecord, TaskSupport

TASKS = "io.modelcontextprotocol/tasks"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS: {}}}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": DECLARED,
}
TERMINAL = ("completed", "failed", "cancelled")


class Confirm(BaseModel):
    confirm: bool


class Worker(Server):
    """A server whose `forever` sets `stopped` when its work stops."""

    stopped: trio.Event


def make_server(
    store: MemoryTaskStore | None = None, broker: InProcessBroker | None = None
) -> Worker:
    server = Worker("notify", task_store=store, broker=broker)
    server.stopped = trio.Event()

    @server.tool(task=True)
    async def confirm(ctx: Context) -> str:
        await trio.sleep(1)  # time for a listen stream to open before it asks
        outcome = await ctx.elicit("Sure?", Confirm)
        await trio.sleep(1)
        return "yes" if isinstance(outcome, AcceptedElicitation) and outcome.data.confirm else "no"

    @server.tool(task=True)
    async def asks_at_once(ctx: Context) -> str:
        outcome = await ctx.elicit("Sure?", Confirm)
        return "yes" if isinstance(outcome, AcceptedElicitation) and outcome.data.confirm else "no"

    @server.tool(task=TaskSupport(poll_interval=1.0))
    async def chatty(ctx: Context) -> str:
        for step in range(100):
            await ctx.report_progress(step, 100, f"step {step}")
            await trio.sleep(0.01)
        return "said a lot"

    @server.tool(task=True)
    async def forever(ctx: Context) -> str:
        await ctx.report_progress(0, message="started")
        try:
            await trio.sleep_forever()
        finally:
            server.stopped.set()

    return server


async def call(peer: RawPeer, name: str) -> dict[str, Any]:
    result: dict[str, Any] = (await peer.call(name, {}, _meta=META))["result"]
    assert result["resultType"] == "task", result
    return result


async def tasks(peer: RawPeer, method: str, task_id: str, **params: Any) -> Any:
    return await peer.request(method, {"taskId": task_id, "_meta": META, **params})


async def listen(peer: RawPeer, *task_ids: str) -> tuple[int, dict[str, Any]]:
    """Open a listen stream for `task_ids`; its id and its acknowledgement's params."""
    request_id = await peer.start_request(
        "subscriptions/listen", {"_meta": META, "notifications": {"taskIds": list(task_ids)}}
    )
    while True:
        message = await peer.receive()
        if message.get("method") == "notifications/subscriptions/acknowledged":
            return request_id, message["params"]


async def told(peer: RawPeer, task_id: str) -> list[dict[str, Any]]:
    """Read on until a settled state of the task is told; every state told, in order."""
    states = []
    for message in peer.log:
        if message.get("method") == "notifications/tasks":
            states.append(message["params"])
    while not states or states[-1]["status"] not in TERMINAL:
        message = await peer.receive()
        if message.get("method") == "notifications/tasks":
            states.append(message["params"])
    assert {state["taskId"] for state in states} == {task_id}
    return states


async def until_input_required(peer: RawPeer, task_id: str) -> dict[str, Any]:
    while True:
        got: dict[str, Any] = (await tasks(peer, "tasks/get", task_id))["result"]
        if got["status"] == "input_required":
            return got
        await trio.sleep(0.01)


async def test_a_listen_stream_hears_each_state_of_the_tasks_it_asked_for(
    autojump_clock: Any,
) -> None:
    server = make_server()
    async with open_memory_peer(server, initialize=False) as peer:
        task_id = (await call(peer, "confirm"))["taskId"]
        other = (await call(peer, "forever"))["taskId"]
        listen_id, ack = await listen(peer, task_id)
        asked = await until_input_required(peer, task_id)
        (key,) = asked["inputRequests"]
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        await tasks(peer, "tasks/update", task_id, inputResponses=answer)
        states = await told(peer, task_id)
        tagged = [m for m in peer.log if m.get("method") == "notifications/tasks"]
    assert ack["notifications"] == {"taskIds": [task_id]}
    assert ack["_meta"] == {SUBSCRIPTION_ID: listen_id}
    statuses = [state["status"] for state in states]
    assert statuses == ["input_required", "working", "completed"], statuses
    assert states[0]["inputRequests"] == asked["inputRequests"]
    assert states[-1]["result"]["content"] == [{"type": "text", "text": "yes"}]
    assert all(m["params"]["_meta"] == {SUBSCRIPTION_ID: listen_id} for m in tagged)
    assert other not in {m["params"]["taskId"] for m in tagged}
    for state in states:  # a DetailedTask, as tasks/get shows it
        assert {"createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= set(state)
        assert "resultType" not in state


async def test_asking_for_task_ids_needs_the_extension() -> None:
    server = make_server()
    async with open_memory_peer(server, initialize=False) as peer:
        plain = {**META, "io.modelcontextprotocol/clientCapabilities": {}}
        refused = await peer.request(
            "subscriptions/listen", {"_meta": plain, "notifications": {"taskIds": ["x"]}}
        )
        lists_only = await peer.start_request(
            "subscriptions/listen", {"_meta": plain, "notifications": {"toolsListChanged": True}}
        )
        ack = await peer.receive()
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert ack["params"]["_meta"] == {SUBSCRIPTION_ID: lists_only}


async def test_a_status_message_changing_at_every_step_is_told_at_most_once_a_poll(
    autojump_clock: Any,
) -> None:
    server = make_server()
    async with open_memory_peer(server, initialize=False) as peer:
        task_id = (await call(peer, "chatty"))["taskId"]
        await listen(peer, task_id)
        states = await told(peer, task_id)
    working = [state for state in states if state["status"] == "working"]
    # 100 steps over one second, the task's poll interval: a message or two, not a hundred.
    assert 1 <= len(working) <= 2, [state.get("statusMessage") for state in working]
    assert all(state["statusMessage"].startswith("step ") for state in working)
    assert states[-1]["status"] == "completed"
    assert states[-1]["result"]["content"] == [{"type": "text", "text": "said a lot"}]


async def test_a_handshake_era_session_hears_of_the_tasks_its_calls_became(
    autojump_clock: Any,
) -> None:
    # Handshake-era tasks are 2025-11-25's own: asked for with `params.task`, their questions
    # asked on `tasks/result`, their states told as `notifications/tasks/status`.
    server = make_server()
    async with open_memory_peer(server, initialize=False) as peer:
        await peer.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "t", "version": "0"},
            },
        )
        await peer.notify("notifications/initialized")
        created = (await peer.call("asks_at_once", {}, task={}))["result"]
        task_id = created["task"]["taskId"]
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
            elif message.get("id") == result_id:
                result = message["result"]
        (session,) = server._hub
        followed = dict(session.session.followed_tasks)  # type: ignore[attr-defined]
    # It asked at once: the session followed the task before any state was told. (It ends at
    # once after the answer: `working` may be told, or be overtaken by `completed`.)
    assert [state["status"] for state in states if state["status"] != "working"] == [
        "input_required",
        "completed",
    ]
    assert {state["taskId"] for state in states} == {task_id}
    assert result["content"] == [{"type": "text", "text": "no"}]
    assert asked is not None
    assert asked["params"]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    assert all("_meta" not in state for state in states)  # the task id says it already
    assert followed == {}  # forgotten once settled


# -- two workers ----------------------------------------------------------------------------------


@asynccontextmanager
async def two_workers(
    *, broker: bool, lease: float = 600.0
) -> AsyncIterator[tuple[Worker, Worker, RawPeer, RawPeer]]:
    """Workers A and B on one store (and one broker bus if `broker`), a peer on each."""
    store = MemoryTaskStore(lease=lease)
    bus = InProcessBroker()
    a = make_server(store, bus if broker else None)
    b = make_server(store, bus.peer() if broker else None)
    async with trio.open_nursery() as nursery:
        for server in (a, b):
            await nursery.start(server.relay)
        async with (
            open_memory_peer(a, initialize=False) as on_a,
            open_memory_peer(b, initialize=False) as on_b,
        ):
            yield a, b, on_a, on_b
        nursery.cancel_scope.cancel()


async def test_a_task_on_one_worker_is_told_to_a_listener_on_another(autojump_clock: Any) -> None:
    async with two_workers(broker=True) as (_, _, on_a, on_b):
        task_id = (await call(on_a, "confirm"))["taskId"]
        await listen(on_b, task_id)
        asked = await until_input_required(on_b, task_id)
        (key,) = asked["inputRequests"]
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        ack = await tasks(on_b, "tasks/update", task_id, inputResponses=answer)
        states = await told(on_b, task_id)
    assert ack["result"] == {"resultType": "complete"}
    assert [state["status"] for state in states][-2:] == ["working", "completed"]
    assert states[-1]["result"]["content"] == [{"type": "text", "text": "yes"}]


async def test_answers_sent_to_another_worker_reach_the_task_without_a_broker(
    autojump_clock: Any,
) -> None:
    async with two_workers(broker=False) as (a, _, on_a, on_b):
        task_id = (await call(on_a, "confirm"))["taskId"]
        asked = await until_input_required(on_b, task_id)
        (key,) = asked["inputRequests"]
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        ack = await tasks(on_b, "tasks/update", task_id, inputResponses=answer)
        again = await tasks(on_b, "tasks/update", task_id, inputResponses=answer)
        while True:
            done = (await tasks(on_b, "tasks/get", task_id))["result"]
            if done["status"] in TERMINAL:
                break
            await trio.sleep(0.1)
        store = a._task_runtime.store
        assert isinstance(store, MemoryTaskStore)
        left = await store.take_answers(task_id)
    assert ack["result"] == again["result"] == {"resultType": "complete"}
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "yes"}]  # answered once
    assert left == []  # both batches were taken: the second one's key was answered already


async def test_a_cancel_on_another_worker_stops_the_work_at_once(autojump_clock: Any) -> None:
    async with two_workers(broker=True) as (a, _, on_a, on_b):
        task_id = (await call(on_a, "forever"))["taskId"]
        await listen(on_a, task_id)
        ack = await tasks(on_b, "tasks/cancel", task_id)
        # The lease (600 s) is renewed every 200 s: only the broker's signal stops it sooner.
        with trio.fail_after(100):
            await a.stopped.wait()
        states = await told(on_a, task_id)
        on_a_now = (await tasks(on_a, "tasks/get", task_id))["result"]
    assert ack["result"] == {"resultType": "complete"}
    assert [state["status"] for state in states][-1] == "cancelled"
    assert on_a_now["status"] == "cancelled"
    assert a._task_runtime.live_count == 0


class PlainStore:
    """A store that keeps records and carries no answers (no mailbox)."""

    def __init__(self) -> None:
        self._inner = MemoryTaskStore(lease=600)
        self.lease = self._inner.lease

    async def add(self, record: TaskRecord, now: float) -> bool:
        return await self._inner.add(record, now)

    async def get(self, task_id: str, now: float) -> TaskRecord | None:
        return await self._inner.get(task_id, now)

    async def save(self, record: TaskRecord) -> bool:
        return await self._inner.save(record)


async def test_answers_that_cannot_reach_the_worker_are_refused(autojump_clock: Any) -> None:
    store = PlainStore()
    a, b = Server("a", task_store=store), Server("b", task_store=store)
    for server in (a, b):

        @server.tool(task=True)
        async def confirm(ctx: Context) -> str:
            await ctx.elicit("Sure?", Confirm)
            return "answered"

    async with (
        open_memory_peer(a, initialize=False) as on_a,
        open_memory_peer(b, initialize=False) as on_b,
    ):
        task_id = (await call(on_a, "confirm"))["taskId"]
        asked = await until_input_required(on_b, task_id)
        (key,) = asked["inputRequests"]
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        refused = await tasks(on_b, "tasks/update", task_id, inputResponses=answer)
        on_a_ack = await tasks(on_a, "tasks/update", task_id, inputResponses=answer)
    assert refused["error"]["code"] == -32603
    assert "runs on another worker" in refused["error"]["message"]
    assert refused["error"]["data"] == {"taskId": task_id}
    assert on_a_ack["result"] == {"resultType": "complete"}


async def test_a_task_mailbox_is_bounded_and_taken_once() -> None:
    store = MemoryTaskStore()
    record = TaskRecord("t", 0.0, 60.0, 1.0)
    assert await store.add(record, 0.0)
    posted = [await store.post_answers("t", {"k": n}, 0.0) for n in range(DEFAULT_MAILBOX + 1)]
    taken = await store.take_answers("t")
    again = await store.take_answers("t")
    unknown = await store.post_answers("nope", {"k": 1}, 0.0)
    assert posted == [True] * DEFAULT_MAILBOX + [False]
    assert taken == [{"k": n} for n in range(DEFAULT_MAILBOX)]
    assert again == []
    assert unknown is False


async def test_the_runtime_refuses_answers_a_full_mailbox_cannot_take() -> None:
    store = MemoryTaskStore()
    server = Server("b", task_store=store)
    record = TaskRecord("busy", 0.0, 60.0, 1.0, owner="elsewhere:1:x", lease_until=1e12)
    assert await store.add(record, 0.0)
    for n in range(DEFAULT_MAILBOX):
        assert await server._task_runtime.update("busy", {"k": n})
    with pytest.raises(RemoteProtocolError) as refused:
        await server._task_runtime.update("busy", {"k": "one too many"})
    assert refused.value.code == -32603
    assert "too many answers" in refused.value.message
