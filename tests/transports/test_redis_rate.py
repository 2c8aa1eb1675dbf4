"""`RedisRateStore` against a real `redis-server`: workers share one limit.

The store alone: two stores (two workers) take from one bucket, counted on Redis's clock,
under a digest of its key, expiring once full again; a script Redis lost is loaded again;
Redis unreachable (open: each worker limits alone, warning at most once a minute; closed:
refused, told when to retry). Then two servers in one process, and a fleet of two
`trio-mcp run --transport http --stateless` processes of `tests/fixtures/rate_worker.py` spoken
to with sessionless 2026-07-28 requests from one address. Skipped without `redis-server` or
redis-py; what waits for Redis to drop a key polls under a deadline.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.helpers import MODERN, open_memory_peer, python_json
from tests.http_helpers import McpHttp
from tests.redis_helpers import NEEDS_REDIS_PACKAGE, REDIS_SERVER, RedisProcess, fleet
from trio_mcp import Server
from trio_mcp.middleware import (
    Rate,
    RateLimiter,
    RedisRateStore,
    by_target,
)
from trio_mcp.middleware._rate_redis import RETRY_SECONDS, WARN_EVERY
from trio_mcp.testing import connect

pytestmark = NEEDS_REDIS_PACKAGE

#: Bounds each test: two worker processes start on 2 shared cores in a few seconds.
TIMEOUT = 60
PREFIX = "trio-mcp-test:rate:"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Clock:
    """A fake clock for the outage's bookkeeping: seconds pass only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def store(url: str, **options: Any) -> RedisRateStore:
    return RedisRateStore(url, key_prefix=PREFIX, **options)


def redis_client(server: RedisProcess) -> Any:
    import redis  # noqa: PLC0415 - the module is skipped without it

    return redis.Redis(port=server.port, socket_timeout=5)


def make_server(store_: RedisRateStore, **options: Any) -> Server:
    server = Server("limited", middleware=[RateLimiter(Rate(2, per=3600), store=store_, **options)])

    @server.tool(inline=True)
    def add(a: int, b: int) -> int:
        return a + b

    return server


# -- the store alone ------------------------------------------------------------------------------


async def test_two_workers_take_from_one_bucket(redis_server: RedisProcess) -> None:
    a, b = store(redis_server.url), store(redis_server.url)
    rate = Rate(3, per=3600)
    taken = [await s.take("client", rate) for s in (a, b, a, b)]
    other = await b.take("another client", rate)
    assert [d.allowed for d in taken] == [True, True, True, False]
    assert [d.remaining for d in taken[:3]] == pytest.approx([2, 1, 0], abs=0.01)
    refused = taken[-1]
    assert not refused.unavailable
    assert 1100 < refused.retry_after <= 1200  # a token every 1200 s, some time already passed
    assert other.allowed


async def test_a_bucket_in_redis_keeps_redis_time_and_expires_when_full_again(
    redis_server: RedisProcess,
) -> None:
    # The store's own clock is for outages only: a bucket is counted on Redis's.
    slow = store(redis_server.url, clock=lambda: 0.0)
    client = redis_client(redis_server)
    await slow.take('principal:["https://as.example", "alice", null]', Rate(1, per=3600, burst=2))
    (key,) = client.keys(PREFIX + "*")
    seconds, micros = client.time()
    stored = client.hgetall(key)
    ttl = client.pttl(key)
    assert key.decode()[len(PREFIX) :].isalnum()  # a digest: nobody's name in clear
    assert b"alice" not in key
    assert float(stored[b"tokens"]) == 1.0
    assert abs(float(stored[b"at"]) - (seconds + micros / 1e6)) < 5
    assert 0 < ttl <= 3600 * 1000  # full again after an hour: gone then
    client.flushdb()

    await slow.take("quick", Rate(1000, burst=1))  # full again within a millisecond
    with trio.fail_after(TIMEOUT):
        # Another process's state: nothing here could wake us when it changes.
        while client.keys(PREFIX + "*"):  # noqa: ASYNC110
            await trio.sleep(0.01)
    client.close()


async def test_a_script_redis_lost_is_loaded_again(redis_server: RedisProcess) -> None:
    s = store(redis_server.url)
    rate = Rate(2, per=3600)
    assert (await s.take("client", rate)).allowed
    client = redis_client(redis_server)
    client.script_flush()  # as after a restart of Redis: EVALSHA finds no script
    assert (await s.take("client", rate)).allowed
    assert not (await s.take("client", rate)).allowed
    assert client.script_exists(s._take_script(client).sha) == [True]
    client.close()


async def test_redis_unreachable_each_worker_limits_alone_warning_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    later = RedisProcess(tmp_path)  # its port: nothing listens there yet
    clock = Clock()
    s = store(later.url, clock=clock)
    tried = 0
    run = s._redis.run

    async def counted(command: Any) -> Any:
        nonlocal tried
        tried += 1
        return await run(command)

    s._redis.run = counted  # type: ignore[method-assign]
    rate = Rate(2, per=3600)
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        first = [await s.take("client", rate) for _ in range(3)]
        assert tried == 1  # then no try for RETRY_SECONDS: no timeout a request
        clock.now += RETRY_SECONDS
        assert not (await s.take("client", rate)).allowed  # tried again, still down
        assert tried == 2
        clock.now += WARN_EVERY
        await s.take("client", rate)  # a minute on: warned again
        await trio.to_thread.run_sync(later.start)
        try:
            clock.now += RETRY_SECONDS
            back = await s.take("client", rate)
        finally:
            later.stop()
    assert [d.allowed for d in first] == [True, True, False]  # this worker's own buckets
    assert not any(d.unavailable for d in first)
    assert back.allowed  # Redis's bucket, full
    said = [r.getMessage() for r in caplog.records]
    assert sum("cannot be reached" in line for line in said) == 2, said
    assert "each worker limits alone" in said[0]
    assert sum("answers again" in line for line in said) == 1, said


async def test_redis_unreachable_failing_closed_refuses_saying_when_to_retry(
    tmp_path: Path,
) -> None:
    clock = Clock()
    nowhere = RedisProcess(tmp_path)  # never started
    s = store(nowhere.url, fail_open=False, clock=clock)
    decision = await s.take("client", Rate(5))
    clock.now += 0.25
    after = await s.take("client", Rate(5))
    assert (decision.allowed, decision.unavailable) == (False, True)
    assert decision.retry_after == RETRY_SECONDS
    assert after.retry_after == pytest.approx(RETRY_SECONDS - 0.25)

    async with open_memory_peer(make_server(store(nowhere.url, fail_open=False))) as peer:
        reply = await peer.call("add", {"a": 1, "b": 1})
    assert reply["result"]["isError"] is True
    assert reply["result"]["content"][0]["text"] == (
        "Rate limit of tools/call cannot be checked now (its store cannot be reached); "
        "retry in 1.0 s"
    )


def test_neither_the_import_nor_a_store_loads_redis() -> None:
    loaded = python_json(
        "import json, sys\n"
        "from trio_mcp.middleware import Rate, RateLimiter, RedisRateStore\n"
        "RateLimiter(Rate(1), store=RedisRateStore('redis://127.0.0.1:1/0'))\n"
        "print(json.dumps('redis' in sys.modules))"
    )
    assert loaded is False


# -- two servers, one limit -----------------------------------------------------------------------


async def test_two_servers_in_one_process_share_one_limit(redis_server: RedisProcess) -> None:
    # One bucket per tool, whoever calls: each server has its own store, as workers do.
    a = make_server(store(redis_server.url), key=by_target)
    b = make_server(store(redis_server.url), key=by_target)
    async with connect(a) as on_a, connect(b) as on_b:
        results = [
            await on_a.call_tool("add", {"a": 1, "b": 1}),
            await on_b.call_tool("add", {"a": 1, "b": 1}),
            await on_a.call_tool("add", {"a": 1, "b": 1}),
            await on_b.call_tool("add", {"a": 1, "b": 1}),
        ]
    assert [r.is_error for r in results] == [False, False, True, True]
    assert results[2].text.startswith(
        "Rate limit exceeded for tools/call (2 per hour, bursts of up to 2); retry in "
    )


async def test_a_fleet_limits_a_sessionless_client_by_its_address_across_workers(
    redis_server: RedisProcess,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            fleet(
                "tests/fixtures/rate_worker.py", redis_server.url, args=["--stateless"]
            ) as workers,
            httpx.AsyncClient(timeout=TIMEOUT) as http,
        ):
            on = [McpHttp(http, worker.url, MODERN) for worker in workers]
            replies = [(await on[n % 2].call("where", {}, **META)).result for n in range(5)]
    texts = [reply["content"][0]["text"] for reply in replies]
    assert texts[:3] == ["served by A", "served by B", "served by A"]  # 3 an hour, fleet-wide
    for refused in replies[3:]:
        assert refused["isError"] is True
        assert refused["content"][0]["text"].startswith(
            "Rate limit exceeded for tools/call (3 per hour, bursts of up to 3); retry in "
        )
