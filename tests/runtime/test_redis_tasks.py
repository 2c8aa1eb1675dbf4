"""`RedisTaskStore` against a real `redis-server`, and a fleet of two workers sharing it.

The store alone: records round-trip as JSON, expire with their ttl, are never written over once
settled, and the per-worker bound; a task's mailbox; Redis unreachable. The fleet: two
`trio-mcp run --transport http --stateless` processes of `tests/fixtures/task_worker.py` on one
Redis, spoken to with sessionless 2026-07-28 requests: a task made on worker A is read on B (its
progress, its result), answered on B (through its mailbox; with a broker A is told at once),
cancelled on B (A's work stops: at its next lease renewal, or at once with a broker), and when A
is killed, B shows it `working` until its lease runs out and then `failed`, saying why. Skipped
without `redis-server` or redis-py; what waits for another process polls under a deadline, and
no test asserts how long anything takes.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio

from tests.helpers import MODERN, python_json
from tests.http_helpers import McpHttp
from tests.processes import cli
from tests.redis_helpers import NEEDS_REDIS_PACKAGE, RedisProcess, Worker, fleet
from tests.timing import scaled
from trio_mcp import RemoteProtocolError
from trio_mcp.tasks import RedisTaskStore, TaskRecord

pytestmark = [NEEDS_REDIS_PACKAGE, pytest.mark.slow]  # starts Redis and workers

#: Bounds each test: two worker processes start on 2 shared cores in a few seconds.
TIMEOUT = scaled(60)
TASKS = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
}

#: A client that declares the tasks extension and can answer elicitations.
ASKING = {
    **META,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
}


def store(url: str, **options: Any) -> RedisTaskStore:
    return RedisTaskStore(url, key_prefix="trio-mcp-test:tasks:", timeout=1.0, **options)


def record(task_id: str, **fields: Any) -> TaskRecord:
    return TaskRecord(task_id, 1000.0, fields.pop("ttl", 60.0), 1.0, **fields)


# -- the store alone ------------------------------------------------------------------------------


async def test_records_round_trip_and_a_settled_one_is_final(redis_server: RedisProcess) -> None:
    a, b = store(redis_server.url), store(redis_server.url)  # two workers
    mine = record(
        "t1",
        owner="a",
        lease_until=1003.0,
        status_message="half way",
        principal=("https://as.example", "alice", "app"),
    )
    assert await a.add(mine, 1000.0)
    theirs = await b.get("t1", 1000.0)
    assert theirs is not None
    assert theirs is not mine
    assert theirs.dump() == mine.dump()
    assert theirs.principal == ("https://as.example", "alice", "app")  # whose task it is
    theirs.status = "cancelled"
    assert await b.save(theirs)
    mine.status_message = "still going"
    assert not await a.save(mine)  # refused: a learns its task was settled elsewhere
    got = await a.get("t1", 1000.0)
    assert got is not None
    assert got.status == "cancelled"
    assert got.status_message == "half way"
    assert await a.get("no-such-task", 1000.0) is None


async def test_a_workers_saves_of_one_record_land_in_order(redis_server: RedisProcess) -> None:
    s = store(redis_server.url)
    mine = record("t")
    assert await s.add(mine, 1000.0)

    async def save_as(message: str) -> None:
        mine.status_message = message
        assert await s.save(mine)

    async with trio.open_nursery() as nursery:
        for n in range(40):  # more at once than the store has threads
            nursery.start_soon(save_as, f"change {n}")
            await trio.lowlevel.checkpoint()
    got = await s.get("t", 1000.0)
    assert got is not None
    assert got.status_message == "change 39"


async def test_a_settled_record_expires_with_its_ttl(redis_server: RedisProcess) -> None:
    s = store(redis_server.url)
    live = record("live", ttl=0.05)
    done = record("done", ttl=0.05)
    assert await s.add(live, 1000.0)
    assert await s.add(done, 1000.0)
    done.status = "completed"
    assert await s.save(done)
    with trio.fail_after(TIMEOUT):
        while await s.get("done", 1000.0) is not None:  # noqa: ASYNC110 - Redis's clock
            await trio.sleep(0.02)
    assert await s.get("live", 1000.0) is not None  # lease + ttl: 15 s away


async def test_the_bound_counts_this_workers_live_tasks(redis_server: RedisProcess) -> None:
    a, b = store(redis_server.url, max_tasks=1), store(redis_server.url, max_tasks=1)
    first = record("first")
    assert await a.add(first, 1000.0)
    assert not await a.add(record("second"), 1000.0)  # a's one live task is running
    assert await b.add(record("elsewhere"), 1000.0)  # b counts its own
    settled = await b.get("first", 1000.0)
    assert settled is not None
    settled.status = "cancelled"  # settled on another worker: a reads it back when full
    assert await b.save(settled)
    assert await a.add(record("third"), 1000.0)
    assert a.live_count == 1


async def test_a_tasks_mailbox_is_bounded_and_each_batch_taken_once(
    redis_server: RedisProcess,
) -> None:
    a, b = store(redis_server.url, mailbox=2), store(redis_server.url, mailbox=2)
    posted = [await b.post_answers("t", {"k": n}, 1000.0) for n in range(3)]
    taken = await a.take_answers("t")
    again = await a.take_answers("t")
    after = await b.post_answers("t", {"k": "later"}, 1000.0)
    redis_server.stop()
    with pytest.raises(RemoteProtocolError) as unreachable:
        await b.post_answers("t", {"k": "lost?"}, 1000.0)
    nothing = await a.take_answers("t")
    assert posted == [True, True, False]
    assert taken == [{"k": 0}, {"k": 1}]
    assert again == []
    assert after is True
    assert unreachable.value.code == -32603  # refused, so the client knows it did not go
    assert nothing == []


async def test_redis_unreachable(
    redis_server: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    s = store(redis_server.url)
    live = record("t")
    assert await s.add(live, 1000.0)
    redis_server.stop()
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        assert not await s.add(record("u"), 1000.0)  # the call runs to its end instead
        assert await s.save(live)  # nothing known to have settled
        with pytest.raises(RemoteProtocolError) as raised:
            await s.get("t", 1000.0)
        await trio.to_thread.run_sync(redis_server.start)
        assert await s.get("t", 1000.0) is None  # that Redis kept nothing
        assert await s.save(live)  # the worker's next write brings it back
        assert await s.get("t", 1000.0) is not None
    assert raised.value.code == -32603
    assert "task store cannot be reached" in raised.value.message
    said = [r.getMessage() for r in caplog.records]
    assert sum("cannot be reached" in line for line in said) == 1, said
    assert sum("answers again" in line for line in said) == 1, said


def test_neither_the_import_nor_a_store_loads_redis() -> None:
    loaded = python_json(
        "import json, sys, trio_mcp\n"
        "server = trio_mcp.Server(task_store=trio_mcp.tasks.RedisTaskStore('redis://127.0.0.1:1/0'))\n"
        "print(json.dumps('redis' in sys.modules))"
    )
    assert loaded is False


# -- a fleet of two stateless HTTP workers --------------------------------------------------------


class Fleet:
    """Sessionless 2026-07-28 requests to the workers of a fleet."""

    def __init__(self, http: httpx.AsyncClient, workers: list[Worker]) -> None:
        self.workers = workers
        self.on = {w: McpHttp(http, w.url, MODERN) for w in workers}

    async def call(self, worker: Worker, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = (await self.on[worker].call(name, arguments, **META)).result
        assert created["resultType"] == "task", created
        return created

    async def tasks(
        self, worker: Worker, method: str, task_id: str, **params: Any
    ) -> dict[str, Any]:
        reply = await self.on[worker].request(method, {"taskId": task_id, "_meta": META, **params})
        result: dict[str, Any] = reply.result
        return result

    async def get(self, worker: Worker, task_id: str) -> dict[str, Any]:
        return await self.tasks(worker, "tasks/get", task_id)


@asynccontextmanager
async def task_fleet(
    redis_url: str, *args: str, **env: str
) -> AsyncIterator[tuple[Fleet, Worker, Worker]]:
    async with (
        fleet(
            "tests/fixtures/task_worker.py", redis_url, args=["--stateless", *args], env=env
        ) as workers,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        a, b = workers
        yield Fleet(http, workers), a, b


async def test_any_worker_answers_for_a_task_another_runs(redis_server: RedisProcess) -> None:
    with trio.fail_after(TIMEOUT):
        async with task_fleet(redis_server.url) as (fleet_, a, b):
            created = await fleet_.call(a, "count", {"steps": 20})
            task_id = created["taskId"]
            seen = [await fleet_.get(b, task_id)]  # stored before the CreateTaskResult
            while seen[-1]["status"] == "working":
                await trio.sleep(0.02)
                seen.append(await fleet_.get(b, task_id))
    done = seen[-1]
    assert done["status"] == "completed", done
    assert done["result"]["content"] == [{"type": "text", "text": "counted 20 on A"}]
    messages = [got["statusMessage"] for got in seen[:-1] if "statusMessage" in got]
    assert messages, seen
    assert all(m.startswith("step ") and m.endswith(" of 20") for m in messages), messages
    assert {got["taskId"] for got in seen} == {task_id}


async def test_cancel_on_another_worker_stops_the_work(redis_server: RedisProcess) -> None:
    with trio.fail_after(TIMEOUT):
        async with task_fleet(redis_server.url) as (fleet_, a, b):
            task_id = (await fleet_.call(a, "forever", {}))["taskId"]
            working = await fleet_.get(b, task_id)
            ack = await fleet_.tasks(b, "tasks/cancel", task_id)
            await a.logged("forever stopped on A")  # at a's next lease renewal
            on_a = await fleet_.get(a, task_id)
            on_b = await fleet_.get(b, task_id)
    assert working["status"] == "working"
    assert ack == {"resultType": "complete"}
    assert on_a["status"] == on_b["status"] == "cancelled"


async def test_a_killed_workers_task_fails_when_its_lease_runs_out(
    redis_server: RedisProcess,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with task_fleet(redis_server.url) as (fleet_, a, b):
            task_id = (await fleet_.call(a, "forever", {}))["taskId"]
            started = await fleet_.get(b, task_id)
            while started.get("statusMessage") != "started on A":
                await trio.sleep(0.02)
                started = await fleet_.get(b, task_id)
            a.kill()
            await a.process.wait()
            seen = [await fleet_.get(b, task_id)]
            while seen[-1]["status"] == "working":  # never for ever: the test's deadline
                await trio.sleep(0.05)
                seen.append(await fleet_.get(b, task_id))
            again = await fleet_.get(b, task_id)
    statuses = [got["status"] for got in seen]
    # Working until the lease (3 s, renewed each second) ran out, then failed.
    assert statuses[0] == "working", statuses
    assert statuses[-1] == "failed", statuses
    failed = seen[-1]
    assert failed["error"]["code"] == -32603
    assert failed["error"]["message"].startswith(
        "The worker running this task stopped before the task finished"
    )
    assert f":{a.process.pid}:" in failed["error"]["data"]["worker"]
    assert again == failed  # settled for good, and saved


async def test_a_worker_stopped_by_sigterm_leaves_its_tasks_failed_saying_why(
    redis_server: RedisProcess,
) -> None:
    """Defect 24.5 with a shared store: a worker told to stop settles the tasks it runs in
    Redis before it exits, so the fleet sees at once why they ended (not a lapsed lease)."""
    with trio.fail_after(TIMEOUT):
        async with task_fleet(redis_server.url) as (fleet_, a, b):
            task_id = (await fleet_.call(a, "forever", {}))["taskId"]
            assert (await fleet_.get(b, task_id))["status"] == "working"
            a.process.terminate()
            assert await a.process.wait() == 0
            seen = await fleet_.get(b, task_id)  # at once: long before the 3 s lease runs out
    assert seen["status"] == "failed", seen
    assert seen["statusMessage"] == "Server shutting down"
    assert seen["error"]["code"] == -32000
    assert seen["error"]["message"].startswith("Server shutting down")


async def until_status(fleet_: Fleet, worker: Worker, task_id: str, *statuses: str) -> Any:
    """Poll `worker` until the task shows one of `statuses` (another process: nothing to wake)."""
    while True:
        got = await fleet_.get(worker, task_id)
        if got["status"] in statuses:
            return got
        await trio.sleep(0.02)


def confirmed(key: str) -> dict[str, Any]:
    return {key: {"action": "accept", "content": {"confirm": True}}}


async def test_answers_sent_to_another_worker_reach_the_task_once(
    redis_server: RedisProcess,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with task_fleet(redis_server.url) as (fleet_, a, b):
            created = await fleet_.on[a].call("confirm", {}, **ASKING)
            task_id = created.result["taskId"]
            asked = await until_status(fleet_, b, task_id, "input_required")
            (key,) = asked["inputRequests"]
            update = {"inputResponses": confirmed(key)}
            ack = await fleet_.tasks(b, "tasks/update", task_id, **update)
            again = await fleet_.tasks(b, "tasks/update", task_id, **update)  # a key answered
            done = await until_status(fleet_, b, task_id, "completed", "failed", "cancelled")
    assert ack == again == {"resultType": "complete"}
    assert done["status"] == "completed", done
    assert done["result"]["content"] == [{"type": "text", "text": "confirm=True on A"}]


async def test_with_a_broker_answers_and_a_cancel_reach_the_worker_at_once(
    redis_server: RedisProcess,
) -> None:
    # A lease of ten minutes, renewed every 200 s: within the test's deadline only the broker's
    # signal can stop the work on A.
    with trio.fail_after(TIMEOUT):
        async with task_fleet(redis_server.url, TASK_TEST_BROKER="1", TASK_TEST_LEASE="600") as (
            fleet_,
            a,
            b,
        ):
            await redis_server.until_subscribers(2)
            created = await fleet_.on[a].call("confirm", {}, **ASKING)
            asking_id = created.result["taskId"]
            asked = await until_status(fleet_, b, asking_id, "input_required")
            (key,) = asked["inputRequests"]
            update = {"inputResponses": confirmed(key)}
            ack = await fleet_.tasks(b, "tasks/update", asking_id, **update)
            done = await until_status(fleet_, b, asking_id, "completed", "failed")
            task_id = (await fleet_.call(a, "forever", {}))["taskId"]
            started = await fleet_.get(b, task_id)
            while started.get("statusMessage") != "started on A":
                await trio.sleep(0.02)
                started = await fleet_.get(b, task_id)
            cancelled = await fleet_.tasks(b, "tasks/cancel", task_id)
            await a.logged("forever stopped on A")
            on_a = await fleet_.get(a, task_id)
    assert ack == cancelled == {"resultType": "complete"}
    assert done["result"]["content"] == [{"type": "text", "text": "confirm=True on A"}]
    assert on_a["status"] == "cancelled"


# -- the command line -----------------------------------------------------------------------------


async def test_the_command_line_gives_a_server_redis_for_its_tasks_and_its_broker(
    redis_server: RedisProcess,
) -> None:
    url = redis_server.url
    with trio.fail_after(TIMEOUT):
        async with task_fleet(url, "--task-store", url, "--broker", url, TASK_TEST_STORE="cli") as (
            fleet_,
            a,
            b,
        ):
            await redis_server.until_subscribers(2, channel="trio-mcp:notifications")
            task_id = (await fleet_.call(a, "count", {"steps": 3}))["taskId"]
            done = await fleet_.get(b, task_id)
            while done["status"] == "working":
                await trio.sleep(0.02)
                done = await fleet_.get(b, task_id)
    assert done["result"]["content"] == [{"type": "text", "text": "counted 3 on A"}]


def test_the_command_line_refuses_a_store_that_is_not_redis() -> None:
    store = ["--task-store", "http://user:secret@example.com/"]
    done = cli("run", "tests/fixtures/echo_tools.py", *store, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "--task-store takes a redis://, rediss:// or unix:// URL" in done.stderr
    assert "secret" not in done.stderr
