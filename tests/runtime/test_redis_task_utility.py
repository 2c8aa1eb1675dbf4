"""`RedisTaskStore` lists a requestor's tasks (2025-11-25 `tasks/list`) against a real Redis.

A requestor's index is a sorted set beside the records: two workers sharing the store list the
same tasks; a record that expired leaves the index when it is found gone, and the index itself
lives as long as the longest-lived record in it, its expiry renewed by every save. Then a
server on the store, spoken to through `trio_mcp.testing.connect` (every message checked
against the 2025-11-25 schema), lists a session's tasks. Skipped without `redis-server` or
redis-py.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import trio

import trio_mcp.testing
from tests.redis_helpers import NEEDS_REDIS_PACKAGE, RedisProcess
from tests.timing import scaled
from trio_mcp import Server
from trio_mcp.tasks import RedisTaskStore, TaskRecord, TaskSupport

pytestmark = [NEEDS_REDIS_PACKAGE, pytest.mark.slow]  # starts Redis

TIMEOUT = scaled(60)
PREFIX = "trio-mcp-test:tasks:"


def store(url: str) -> RedisTaskStore:
    return RedisTaskStore(url, key_prefix=PREFIX, timeout=1.0)


def record(task_id: str, requestor: str | None, **fields: Any) -> TaskRecord:
    return TaskRecord(
        task_id,
        fields.pop("created", 1000.0),
        fields.pop("ttl", 60.0),
        1.0,
        requestor=requestor,
        **fields,
    )


def index_ttl_ms(url: str, requestor: str) -> int:
    import redis  # noqa: PLC0415 - only with the package (NEEDS_REDIS_PACKAGE)

    digest = hashlib.sha256(requestor.encode()).hexdigest()[:32]
    with redis.Redis.from_url(url) as client:
        return int(client.pttl(f"{PREFIX}by:{digest}"))


async def test_two_workers_list_a_requestors_tasks_and_no_one_elses(
    redis_server: RedisProcess,
) -> None:
    a, b = store(redis_server.url), store(redis_server.url)
    assert await a.add(record("first", "session:x", created=1000.0), 1000.0)
    assert await b.add(record("second", "session:x", created=1001.0), 1001.0)
    assert await a.add(record("theirs", "session:y"), 1000.0)
    assert await a.add(record("extension", None), 1000.0)  # SEP-2663's: listed to nobody
    mine = await b.requested_by("session:x", 1002.0)
    theirs = await a.requested_by("session:y", 1002.0)
    nobody = await a.requested_by("session:z", 1002.0)
    assert sorted(r.task_id for r in mine) == ["first", "second"]
    assert [r.requestor for r in mine] == ["session:x", "session:x"]
    assert [r.task_id for r in theirs] == ["theirs"]
    assert nobody == []


async def test_an_expired_record_leaves_the_index_and_the_index_outlives_its_records(
    redis_server: RedisProcess,
) -> None:
    s = store(redis_server.url)
    short = record("short", "session:x", ttl=0.05)
    long = record("long", "session:x", ttl=600.0)
    assert await s.add(short, 1000.0)
    assert await s.add(long, 1000.0)
    short.status = "completed"
    assert await s.save(short)  # expires 50 ms from now
    with trio.fail_after(TIMEOUT):
        while await s.get("short", 1000.0) is not None:  # noqa: ASYNC110 - Redis's clock
            await trio.sleep(0.02)
    listed = await s.requested_by("session:x", 1000.0)
    left = index_ttl_ms(redis_server.url, "session:x")
    assert [r.task_id for r in listed] == ["long"]
    # The index lives at least as long as the longest-lived record (lease + ttl while live).
    assert left >= round((s.lease + 600.0) * 1000) - 5_000


def make_server(url: str) -> Server:
    server = Server("redis-utility", task_store=store(url))

    @server.tool(task=TaskSupport(required=True))
    async def only_task() -> str:
        return "done"

    return server


async def test_a_server_on_redis_lists_each_sessions_tasks(redis_server: RedisProcess) -> None:
    server = make_server(redis_server.url)
    with trio.fail_after(TIMEOUT):
        async with (
            trio_mcp.testing.connect(server) as mine,
            trio_mcp.testing.connect(server) as theirs,
        ):
            created = await mine.request(
                "tools/call", {"name": "only_task", "arguments": {}, "task": {}}
            )
            task_id = created["task"]["taskId"]
            result = await mine.request("tasks/result", {"taskId": task_id})
            my_list = await mine.request("tasks/list")
            their_list = await theirs.request("tasks/list")
    assert result["content"] == [{"type": "text", "text": "done"}]
    assert [task["taskId"] for task in my_list["tasks"]] == [task_id]
    assert my_list["tasks"][0]["status"] == "completed"
    assert their_list == {"tasks": []}
