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

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from tests.helpers import MODERN, MODERN_META, open_memory_peer, python_json
from tests.http_helpers import McpHttp
from tests.redis_helpers import NEEDS_REDIS_PACKAGE, REDIS_SERVER, RedisProcess, fleet
from tests.timing import scaled
from trio_mcp import Server
from trio_mcp.middleware import Rate, RateDecision, RateLimiter, RedisRateStore, by_target
from trio_mcp.middleware._rate import Bucket, take
from trio_mcp.middleware._rate_redis import RETRY_SECONDS, WARN_EVERY
from trio_mcp.testing import connect

pytestmark = NEEDS_REDIS_PACKAGE

#: Bounds each test: two worker processes start on 2 shared cores in a few seconds.
TIMEOUT = scaled(60)
PREFIX = "trio-mcp-test:rate:"


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

    return redis.Redis(port=server.port, socket_timeout=TIMEOUT)


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


async def test_concurrent_takes_go_in_batches_and_no_token_is_taken_twice(
    redis_server: RedisProcess,
) -> None:
    a, b = store(redis_server.url), store(redis_server.url)
    rate = Rate(20, per=3600)
    sent = 0
    decisions: list[RateDecision] = []
    for s in (a, b):
        run = s._redis.run

        async def counted(command: Any, run: Any = run) -> Any:
            nonlocal sent
            sent += 1
            return await run(command)

        s._redis.run = counted  # type: ignore[method-assign]

    async def taker(s: RedisRateStore) -> None:
        decisions.append(await s.take("client", rate))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            for n in range(50):
                nursery.start_soon(taker, (a, b)[n % 2])
    assert sum(d.allowed for d in decisions) == 20
    assert len(decisions) == 50
    assert sent <= 4  # each worker: its first take alone, the rest together


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


# -- batches (with a Redis of Python's, whose answers the test holds back) ------------------------


class FakeRedis:
    """Runs the store's batches on buckets of its own; `hold` keeps the first calls waiting."""

    def __init__(self, hold: int) -> None:
        self.buckets: dict[str, Bucket] = {}
        self.batches: list[list[str]] = []  # the keys of each batch that went
        self.hold = [trio.Event() for _ in range(hold)]  # the n-th call waits for the n-th
        self.calls = 0
        self.sent = trio.Event()  # set at each call, then replaced
        self.down = False  # each call fails as when Redis cannot be reached

    def script(self, keys: list[str], args: list[float], client: Any) -> list[Any]:
        self.batches.append(list(keys))
        answers: list[Any] = []
        for n, key in enumerate(keys):
            rate = Rate(round(args[2 * n] * 3600), per=3600, burst=int(args[2 * n + 1]))
            self.buckets[key], decision = take(self.buckets.get(key), 0.0, rate)
            answers += (int(decision.allowed), str(decision.retry_after), "0")
        return answers

    async def run(self, command: Callable[[Any], Any]) -> Any:
        await trio.lowlevel.checkpoint_if_cancelled()  # as trio.to_thread.run_sync does
        call, self.calls = self.calls, self.calls + 1
        self.sent.set()
        self.sent = trio.Event()
        if call < len(self.hold):
            await self.hold[call].wait()  # cancellable here, unlike a thread: "not yet sent"
        if self.down:
            raise OSError("Connection refused")
        return command(SimpleNamespace(register_script=lambda script: self.script))


def faked(hold: int) -> tuple[RedisRateStore, FakeRedis]:
    s = store("redis://127.0.0.1:1/0")
    fake = FakeRedis(hold)
    s._redis = fake  # type: ignore[assignment]
    return s, fake


class Takers:
    """Requests taking tokens from a store, each in a cancel scope of its own."""

    def __init__(self, s: RedisRateStore, rate: Rate) -> None:
        self.store = s
        self.rate = rate
        self.scopes: dict[str, trio.CancelScope] = {}
        self.decisions: dict[str, RateDecision] = {}

    async def take(self, name: str, key: str | None = None) -> None:
        with self.scopes.setdefault(name, trio.CancelScope()):
            self.decisions[name] = await self.store.take(key or name, self.rate)


async def test_takes_that_come_while_a_batch_is_under_way_go_together_in_the_next() -> None:
    s, fake = faked(hold=1)
    takers = Takers(s, Rate(3, per=3600))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(takers.take, "first", "client")
            await fake.sent.wait()  # the first batch is under way: the rest wait for it
            for n in range(5):
                nursery.start_soon(takers.take, f"then {n}", "client")
            await trio.testing.wait_all_tasks_blocked()
            fake.hold[0].set()
    assert [len(batch) for batch in fake.batches] == [1, 5]
    assert sum(d.allowed for d in takers.decisions.values()) == 3
    assert takers.decisions["first"].allowed
    assert not s._sending
    assert not s._queue


async def test_a_request_that_goes_away_holds_up_no_other() -> None:
    s, fake = faked(hold=2)
    takers = Takers(s, Rate(100, per=3600))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(takers.take, "first")
            await fake.sent.wait()
            for name in "abcd":  # queued in this order
                nursery.start_soon(takers.take, name)
                await trio.testing.wait_all_tasks_blocked()
            takers.scopes["d"].cancel()  # waiting for a batch: it leaves the queue
            await trio.testing.wait_all_tasks_blocked()
            fake.hold[0].set()  # the first batch comes back: "a" sends the next
            await fake.sent.wait()
            takers.scopes["a"].cancel()  # before its batch went: b and c go in the next
    assert fake.calls == 3
    went = [sorted(batch) for batch in fake.batches]  # the tasks started in trio's order
    assert went == [
        [s.key_prefix + digest("first")],
        sorted(s.key_prefix + digest(k) for k in "bc"),
    ]
    assert sorted(takers.decisions) == ["b", "c", "first"]
    assert not s._sending


async def test_takes_waiting_when_redis_fails_are_decided_without_trying_again() -> None:
    s, fake = faked(hold=1)
    fake.down = True
    takers = Takers(s, Rate(2, per=3600))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(takers.take, "first", "client")
            await fake.sent.wait()
            for n in range(3):
                nursery.start_soon(takers.take, f"then {n}", "client")
            await trio.testing.wait_all_tasks_blocked()
            fake.hold[0].set()
    assert fake.calls == 1  # the rest waited for the failed batch: decided in memory
    assert sorted(d.allowed for d in takers.decisions.values()) == [False, False, True, True]


@pytest.mark.parametrize("attempt", range(10))  # which of two woken tasks runs first: trio's
async def test_the_request_woken_to_send_the_next_batch_may_go_away_too(attempt: int) -> None:
    s, fake = faked(hold=1)
    takers = Takers(s, Rate(100, per=3600))
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(takers.take, "first")
            await fake.sent.wait()
            for name in "ab":  # queued in this order
                nursery.start_soon(takers.take, name)
                await trio.testing.wait_all_tasks_blocked()
            takers.scopes["a"].cancel()  # as its turn to send comes
            fake.hold[0].set()
    assert sorted(takers.decisions) == ["b", "first"]
    assert not s._sending


def digest(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


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


@pytest.mark.slow
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
            replies = [(await on[n % 2].call("where", {}, **MODERN_META)).result for n in range(5)]
    texts = [reply["content"][0]["text"] for reply in replies]
    assert texts[:3] == ["served by A", "served by B", "served by A"]  # 3 an hour, fleet-wide
    for refused in replies[3:]:
        assert refused["isError"] is True
        assert refused["content"][0]["text"].startswith(
            "Rate limit exceeded for tools/call (3 per hour, bursts of up to 3); retry in "
        )
