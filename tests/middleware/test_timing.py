"""`Timing`: per-method and per-target statistics in bounded memory, readable from any thread."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio

from tests.http_helpers import serve
from trio_mcp import RequestError, Server
from trio_mcp.middleware import CallNext, ResolvedRequest, Timing, TimingStats
from trio_mcp.testing import connect

TIMEOUT = 30


class FakeClock:
    """The time Timing reads: tools move it on by what they say they took."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make_server(timing: Timing, clock: FakeClock | None = None, *outer: Any) -> Server:
    server = Server("timed", middleware=[*outer, timing])

    @server.tool()
    def take(seconds: float) -> str:
        if clock is not None:
            clock.now += seconds
        return "took"

    @server.tool()
    def fail() -> str:
        raise ValueError("no")

    @server.resource("doc://{name}")
    def doc(name: str) -> str:
        return f"doc {name}"

    return server


def row(rows: list[TimingStats], method: str, target: str | None = None) -> TimingStats:
    (found,) = [r for r in rows if r.method == method and r.target == target]
    return found


async def test_counts_errors_and_percentiles_per_method_and_target() -> None:
    clock = FakeClock()
    timing = Timing(clock=clock)
    async with connect(make_server(timing, clock)) as client:
        timing.reset()  # the handshake's requests went through too
        for ms in range(1, 401):  # 1 ms .. 400 ms, each once
            await client.call_tool("take", {"seconds": ms / 1000})
        await client.call_tool("fail")
        with pytest.raises(RequestError):
            await client.call_tool("nothing.here")
        await client.read_resource("doc://a")
        await client.read_resource("doc://b")
        await client.list_tools()
    rows = timing.stats()
    take = row(rows, "tools/call", "take")
    assert (take.count, take.errors, take.cancelled) == (400, 0, 0)
    assert take.min == pytest.approx(0.001)
    assert take.max == pytest.approx(0.4)
    assert take.total == pytest.approx(sum(range(1, 401)) / 1000)
    assert take.mean == pytest.approx(take.total / 400)
    # Fixed logarithmic buckets: within 2% of the true percentiles.
    for got, true in ((take.p50, 0.2), (take.p95, 0.38), (take.p99, 0.396)):
        assert math.isclose(got, true, rel_tol=0.02), (got, true)
    calls = row(rows, "tools/call")
    assert (calls.count, calls.errors) == (402, 2)  # isError and the unknown tool's -32602
    assert row(rows, "tools/call", "fail").errors == 1
    assert row(rows, "tools/call", "(unknown)").errors == 1
    # Every URI of a template is one series: the template's.
    assert row(rows, "resources/read", "doc://{name}").count == 2
    assert row(rows, "tools/list").count == 1
    assert [r.target for r in rows if r.method == "tools/list"] == [None]
    # Sorted: each method, then its targets.
    methods = [r.method for r in rows]
    assert methods == sorted(methods)


async def test_targets_past_the_bound_share_other_and_snapshot_starts_afresh() -> None:
    timing = Timing(max_targets=1)
    server = make_server(timing)
    async with connect(server) as client:
        timing.reset()
        await client.call_tool("take", {"seconds": 0})
        await client.call_tool("fail")
        await client.read_resource("doc://a")
        first = timing.snapshot()
        await client.call_tool("take", {"seconds": 0})
    assert row(first, "tools/call", "take").count == 1
    assert row(first, "tools/call", "(other)").count == 1
    assert row(first, "resources/read", "(other)").count == 1
    assert [(r.method, r.target, r.count) for r in timing.stats()] == [
        ("tools/call", None, 1),
        ("tools/call", "take", 1),
    ]


async def test_concurrent_calls_while_another_thread_reads_lose_nothing() -> None:
    timing = Timing()
    server = make_server(timing)
    calls = 300
    reads: list[int] = []
    async with connect(server) as client:
        timing.reset()
        done = trio.Event()

        def reader() -> None:
            # Read while the calls run; every read is consistent (method == sum of targets).
            while not done.is_set():
                rows = timing.stats()
                method = sum(r.count for r in rows if r.method == "tools/call" and r.target is None)
                targets = sum(r.count for r in rows if r.method == "tools/call" and r.target)
                assert method == targets
                reads.append(method)

        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, reader)
                async with trio.open_nursery() as callers:
                    for _ in range(calls):
                        callers.start_soon(client.call_tool, "take", {"seconds": 0})
                done.set()
    assert row(timing.stats(), "tools/call", "take").count == calls
    assert reads  # the reader ran


async def test_cancelled_calls_are_counted_apart_from_the_times() -> None:
    timing = Timing()
    recorded = trio.Event()

    async def outside(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        try:
            return await call_next(request)
        finally:
            if request.name == "wait":
                recorded.set()  # Timing, inside, has seen the call end

    server = make_server(timing, None, outside)
    started = trio.Event()

    @server.tool()
    async def wait() -> str:
        started.set()
        await trio.sleep_forever()
        return "never"

    async with connect(server) as client:
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "wait")
                await started.wait()
                nursery.cancel_scope.cancel()
            await recorded.wait()
    waited = row(timing.stats(), "tools/call", "wait")
    assert (waited.count, waited.cancelled, waited.total) == (0, 1, 0.0)


async def test_over_streamable_http() -> None:
    timing = Timing()
    with trio.fail_after(TIMEOUT):
        async with serve(make_server(timing)) as served:
            client = served.client()
            await client.initialize()
            for _ in range(3):
                reply = await client.call("take", {"seconds": 0})
                assert reply.result["content"][0]["text"] == "took"
    took = row(timing.stats(), "tools/call", "take")
    assert took.count == 3
    assert 0 <= took.min <= took.p50 <= took.p95 <= took.p99 <= took.max


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="max_targets"):
        Timing(max_targets=-1)
