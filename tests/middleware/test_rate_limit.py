"""Rate limiting (`trio_mcp.middleware.RateLimiter`): the bucket's arithmetic, then a server.

The arithmetic and the in-memory store run on a fake clock (no sleeping); the server tests run
in process (`trio_mcp.testing.connect`, a raw memory peer) in both eras, and over Streamable
HTTP for the keys only HTTP has (a token's principal, the client's address). The Redis store is
tested against a real Redis in tests/middleware/test_redis_rate.py.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio

from tests.helpers import LATEST, MODERN, MODERN_META, open_memory_peer
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import AuthInfo, RequestError, Server
from trio_mcp._core.jsonrpc import Request
from trio_mcp.middleware import (
    DEFAULT_EXEMPT,
    CallNext,
    MemoryRateStore,
    Rate,
    RateDecision,
    RateLimiter,
    ResolvedRequest,
    by_client,
    by_session,
    by_target,
)
from trio_mcp.middleware._rate import Bucket, full_at, take
from trio_mcp.testing import connect

#: Bounds each HTTP test (a server starts on a loopback port).
TIMEOUT = scaled(30)


class Clock:
    """A fake clock: seconds that pass only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- the bucket's arithmetic ----------------------------------------------------------------------


def test_a_new_bucket_is_full_and_empties_one_token_a_request() -> None:
    rate = Rate(2, burst=3)  # 2 a second, 3 at once
    bucket: Bucket | None = None
    decisions = []
    for _ in range(4):
        bucket, decision = take(bucket, 10.0, rate)
        decisions.append(decision)
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2.0, 1.0, 0.0, 0.0]
    assert decisions[-1].retry_after == pytest.approx(0.5)  # one token comes back in 1/2 s


def test_tokens_come_back_at_the_rate_up_to_the_burst() -> None:
    rate = Rate(10, per=60, burst=5)  # one token every 6 s
    bucket, _ = take(None, 0.0, rate)  # 4 left
    for _ in range(4):
        bucket, _ = take(bucket, 0.0, rate)
    assert bucket.tokens == 0
    bucket, refused = take(bucket, 3.0, rate)  # half a token back: refused, takes nothing
    assert not refused.allowed
    assert refused.retry_after == pytest.approx(3.0)
    assert bucket.tokens == pytest.approx(0.5)
    bucket, allowed = take(bucket, 6.0, rate)  # exactly when it was told: a whole token
    assert allowed.allowed
    bucket, _ = take(bucket, 6000.0, rate)  # a long quiet spell fills it to the burst only
    assert bucket.tokens == pytest.approx(4.0)


def test_a_client_that_waits_exactly_the_time_it_was_told_is_let_in() -> None:
    for rate in (Rate(3), Rate(7, per=0.1), Rate(1, per=3), Rate(5, per=60, burst=1)):
        now = 123.456
        bucket, _ = take(None, now, rate)
        while True:
            bucket, decision = take(bucket, now, rate)
            if not decision.allowed:
                break
        now += decision.retry_after
        assert take(bucket, now, rate)[1].allowed, rate


def test_a_clock_that_goes_back_refills_nothing() -> None:
    rate = Rate(1)
    bucket, _ = take(None, 100.0, rate)
    bucket, decision = take(bucket, 50.0, rate)  # earlier than the bucket was counted
    assert not decision.allowed
    assert bucket == Bucket(0.0, 100.0)
    assert full_at(bucket, rate) == 101.0


def test_a_rate_says_itself_in_words_and_on_the_wire() -> None:
    assert Rate(10).describe() == "10 per second, bursts of up to 10"
    assert Rate(100, per=60, burst=20).describe() == "100 per minute, bursts of up to 20"
    assert Rate(3, per=7.5).describe() == "3 per 7.5 s, bursts of up to 3"
    assert Rate(100, per=3600, burst=5).to_wire() == {
        "requests": 100,
        "perSeconds": 3600,
        "burst": 5,
    }


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((0,), ValueError),
        ((1.5,), TypeError),
        ((True,), TypeError),
        ((1, 0), ValueError),
        ((1, math.inf), ValueError),
        ((1, 1.0, 0), ValueError),
        ((1, 1.0, 2.5), ValueError),
    ],
)
def test_a_rate_that_makes_no_sense_is_refused(args: tuple[Any, ...], error: type) -> None:
    with pytest.raises(error, match="Rate"):
        Rate(*args)


# -- the memory store -----------------------------------------------------------------------------


async def test_the_memory_store_keeps_a_bucket_per_key() -> None:
    clock = Clock()
    store = MemoryRateStore(clock=clock)
    rate = Rate(1, per=10)
    assert (await store.take("a", rate)).allowed
    assert not (await store.take("a", rate)).allowed
    assert (await store.take("b", rate)).allowed  # another key, a bucket of its own
    clock.now += 10
    assert (await store.take("a", rate)).allowed


def test_idle_buckets_are_forgotten_once_full_again() -> None:
    clock = Clock()
    store = MemoryRateStore(clock=clock)
    rate = Rate(1, per=10, burst=2)
    for n in range(50):
        store.take_now(f"client {n}", rate)
    assert len(store) == 50
    clock.now += 10  # every one of them is full again: the same as no bucket
    for _ in range(30):
        store.take_now("busy", rate)
        clock.now += 0.001
    assert len(store) == 1  # two forgotten per take, oldest first
    assert not store.take_now("busy", rate).allowed  # a live bucket is kept


def test_the_memory_store_is_bounded() -> None:
    clock = Clock()
    store = MemoryRateStore(max_keys=3, clock=clock)
    rate = Rate(1, per=3600)
    for key in "abcd":
        store.take_now(key, rate)
    assert len(store) == 3
    assert store.take_now("a", rate).allowed  # the least recently used went: a full bucket
    assert not store.take_now("d", rate).allowed
    with pytest.raises(ValueError, match="max_keys"):
        MemoryRateStore(max_keys=0)


# -- which requests a limiter limits, and whose ---------------------------------------------------


def record(method: str, kind: Any, name: str | None = None, **fields: Any) -> ResolvedRequest:
    return ResolvedRequest(Request(1, method, None), kind, name=name, **fields)


def test_what_is_limited_by_default_and_what_methods_changes() -> None:
    limiter = RateLimiter(Rate(5))
    assert limiter.exempt == DEFAULT_EXEMPT == {"protocol", "list", "task"}
    assert limiter.rule(record("tools/call", "tool")) == ("*", Rate(5))
    assert limiter.rule(record("resources/read", "resource")) == ("*", Rate(5))
    for method, kind in [("ping", "protocol"), ("tools/list", "list"), ("tasks/get", "task")]:
        assert limiter.rule(record(method, kind)) is None, method

    tuned = RateLimiter(
        Rate(5),
        methods={"tool": Rate(1), "prompts/get": None, "tools/list": Rate(2), "prompt": Rate(9)},
    )
    assert tuned.rule(record("tools/call", "tool")) == ("tool", Rate(1))  # by family
    assert tuned.rule(record("prompts/get", "prompt")) is None  # the method wins: exempt
    assert tuned.rule(record("tools/list", "list")) == ("tools/list", Rate(2))  # over exempt
    assert tuned.rule(record("prompts/list", "list")) is None
    only = RateLimiter(None, methods={"tools/call": Rate(1)})
    assert only.rule(record("resources/read", "resource")) is None
    assert only.rule(record("tools/call", "tool")) == ("tools/call", Rate(1))


def test_the_keys() -> None:
    alice = AuthInfo(subject="alice", issuer="https://as.example", client_id="app")
    assert by_client(record("tools/call", "tool", auth=alice, peer="10.0.0.1")) == (
        'principal:["https://as.example", "alice", "app"]'
    )
    assert by_client(record("tools/call", "tool", peer="10.0.0.1", session_id="s1")) == (
        "peer:10.0.0.1"
    )
    assert by_client(record("tools/call", "tool", session_id="s1")) == "session:s1"
    # An IPv6 client by its /64, as the connection cap counts it: its privacy addresses vary.
    for peer in ("2001:db8:1:2::7", "2001:db8:1:2:aaaa:bbbb:cccc:dddd"):
        assert by_client(record("tools/call", "tool", peer=peer)) == "peer:2001:db8:1:2::/64"
    assert by_client(record("tools/call", "tool", peer="::ffff:10.0.0.1")) == "peer:10.0.0.1"
    assert by_client(record("tools/call", "tool", peer="not an ip")) == "peer:not an ip"
    assert by_session(record("tools/call", "tool", peer="10.0.0.1", session_id="s1")) == (
        "session:s1"
    )
    assert by_target(record("tools/call", "tool", "add")) == "tool:add"
    assert by_target(record("resources/read", "resource", "note://x")) == "resource:note://x"
    assert by_target(record("tasks/get", "task", "t-1")) == "tasks/get"
    assert by_target(record("ping", "protocol")) == "ping"


def test_a_limiter_refuses_what_is_not_a_rate_or_a_key_function() -> None:
    with pytest.raises(TypeError, match="Rate or None"):
        RateLimiter(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Rate or None"):
        RateLimiter(Rate(5), methods={"tool": 3})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="key"):
        RateLimiter(Rate(5), key="client")  # type: ignore[arg-type]


# -- a server with a limiter ----------------------------------------------------------------------


def make_server(*middleware: Any) -> tuple[Server, list[str]]:
    ran: list[str] = []
    server = Server("limited", middleware=list(middleware))

    @server.tool(inline=True)
    def add(a: int, b: int) -> int:
        ran.append("add")
        return a + b

    @server.tool()
    async def echo(text: str) -> str:
        ran.append("echo")
        return text

    @server.resource("note://{name}")
    def note(name: str) -> str:
        ran.append(f"note {name}")
        return f"note {name}"

    @server.prompt()
    def greet(who: str) -> str:
        return f"Hello {who}"

    return server, ran


@pytest.mark.parametrize("version", [LATEST, MODERN])
async def test_a_call_past_the_limit_is_a_tool_error_saying_when_to_retry(version: str) -> None:
    clock = Clock()
    limiter = RateLimiter(Rate(2, per=60), store=MemoryRateStore(clock=clock))
    server, ran = make_server(limiter)
    async with connect(server, protocol_version=version) as client:  # checks the schema too
        first = await client.call_tool("add", {"a": 1, "b": 1})
        second = await client.call_tool("echo", {"text": "hi"})
        clock.now += 12  # two fifths of a token back
        refused = await client.call_tool("add", {"a": 1, "b": 2})
        for _ in range(5):  # pings and lists are never limited
            await client.ping()
            await client.list_tools()
        clock.now += 18  # a whole token
        again = await client.call_tool("add", {"a": 2, "b": 2})
    assert first.structured == {"result": 2}
    assert second.text == "hi"
    assert refused.is_error
    assert refused.text == (
        "Rate limit exceeded for tools/call (2 per minute, bursts of up to 2); retry in 18.0 s"
    )
    assert again.structured == {"result": 4}
    assert ran == ["add", "echo", "add"]  # the refused call never ran


async def test_other_requests_and_calls_with_tool_errors_off_get_a_json_rpc_error() -> None:
    clock = Clock()
    limiter = RateLimiter(
        Rate(1, per=10, burst=1), store=MemoryRateStore(clock=clock), tool_errors=False
    )
    server, ran = make_server(limiter)
    async with open_memory_peer(server) as peer:
        assert "result" in await peer.call("add", {"a": 1, "b": 1})
        call = await peer.call("add", {"a": 1, "b": 1})
        clock.now += 2.5
        read = await peer.request("resources/read", {"uri": "note://x"})
        prompt = await peer.request("prompts/get", {"name": "greet", "arguments": {"who": "a"}})
    limit = {"requests": 1, "perSeconds": 10, "burst": 1}
    assert call["error"] == {
        "code": -32000,
        "message": (
            "Rate limit exceeded for tools/call (1 per 10 s, bursts of up to 1); retry in 10.0 s"
        ),
        "data": {"retryAfterSeconds": 10.0, "limit": limit},
    }
    assert read["error"]["code"] == -32000
    assert read["error"]["message"].startswith("Rate limit exceeded for resources/read")
    assert read["error"]["data"] == {"retryAfterSeconds": 7.5, "limit": limit}
    assert prompt["error"]["data"]["retryAfterSeconds"] == 7.5
    assert ran == ["add"]


async def test_each_connection_is_a_client_of_its_own_and_by_target_shares_one_bucket() -> None:
    per_client, _ = make_server(RateLimiter(Rate(1, per=3600)))
    async with connect(per_client) as one, connect(per_client) as two:
        assert not (await one.call_tool("add", {"a": 1, "b": 1})).is_error
        assert (await one.call_tool("add", {"a": 1, "b": 1})).is_error
        assert not (await two.call_tool("add", {"a": 1, "b": 1})).is_error  # its own bucket

    per_tool, _ = make_server(RateLimiter(Rate(1, per=3600), key=by_target))
    async with connect(per_tool) as one, connect(per_tool) as two:
        assert not (await one.call_tool("add", {"a": 1, "b": 1})).is_error
        assert not (await two.call_tool("echo", {"text": "x"})).is_error  # another tool
        assert (await two.call_tool("add", {"a": 1, "b": 1})).is_error  # one bucket for add


async def test_families_have_buckets_of_their_own() -> None:
    limiter = RateLimiter(Rate(1, per=3600), methods={"tools/call": Rate(2, per=3600)})
    server, _ = make_server(limiter)
    async with connect(server) as client:
        calls = [await client.call_tool("add", {"a": 1, "b": 1}) for _ in range(3)]
        read = await client.read_resource("note://x")  # the default rule's bucket: still full
        with pytest.raises(RequestError, match="Rate limit exceeded for resources/read"):
            await client.read_resource("note://x")
    assert [c.is_error for c in calls] == [False, False, True]
    assert "2 per hour" in calls[2].text
    assert read.text == "note x"


async def test_a_key_function_leaves_unlimited_what_it_gives_no_key() -> None:
    only_echo = RateLimiter(
        Rate(1, per=3600), key=lambda request: "echo" if request.name == "echo" else None
    )
    server, ran = make_server(only_echo)
    async with connect(server) as client:
        adds = [await client.call_tool("add", {"a": 1, "b": 1}) for _ in range(3)]
        echoes = [await client.call_tool("echo", {"text": "x"}) for _ in range(2)]
    assert [a.is_error for a in adds] == [False, False, False]
    assert [e.is_error for e in echoes] == [False, True]
    assert ran == ["add", "add", "add", "echo"]
    assert only_echo.name == "<lambda>"


async def test_a_token_is_a_client_wherever_it_connects_from() -> None:
    alice = AuthInfo(subject="alice", issuer="https://as.example")
    bob = AuthInfo(subject="bob", issuer="https://as.example")
    server, _ = make_server(RateLimiter(Rate(1, per=3600)))
    async with (
        open_memory_peer(server, auth=alice) as first,
        open_memory_peer(server, auth=alice) as second,
        open_memory_peer(server, auth=bob) as third,
    ):
        assert "isError" not in (await first.call("add", {"a": 1, "b": 1}))["result"]
        assert (await second.call("add", {"a": 1, "b": 1}))["result"]["isError"]
        assert "isError" not in (await third.call("add", {"a": 1, "b": 1}))["result"]


async def test_a_refused_call_of_a_task_tool_is_answered_at_once() -> None:
    limiter = RateLimiter(Rate(1, per=3600))
    server, _ = make_server(limiter)
    started: list[str] = []

    @server.tool(task=True)
    async def slow() -> str:
        return "done"

    @server.tool(task=0)  # a task before its function (and the chain) runs
    async def at_once() -> str:
        started.append("at_once")
        return "done"

    async with connect(server, tasks=True) as client:
        done = await client.call_tool("slow")
        refused = await client.call_tool("slow")  # no task: refused before it could be one
        in_task = await client.call_tool("at_once")  # the task's result is the refusal
    assert done.text == "done"
    assert refused.is_error
    assert refused.text.startswith("Rate limit exceeded for tools/call")
    assert in_task.is_error
    assert in_task.text.startswith("Rate limit exceeded for tools/call")
    assert started == []


class Spy(MemoryRateStore):
    """A memory store that keeps the keys it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []

    async def take(self, key: str, rate: Rate) -> RateDecision:
        self.keys.append(key)
        return await super().take(key, rate)


async def test_over_http_a_client_without_a_token_is_its_address() -> None:
    seen: list[str | None] = []

    async def watch(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        seen.append(request.peer)
        return await call_next(request)

    spy = Spy()
    server, _ = make_server(watch, RateLimiter(Rate(3, per=3600), store=spy))
    with trio.fail_after(TIMEOUT):
        async with serve(server) as served:
            sessionless = served.client(MODERN)  # a session of its own for every request
            replies = [
                await sessionless.call("add", {"a": 1, "b": 1}, **MODERN_META) for _ in range(3)
            ]
            old = served.client(LATEST)
            await old.initialize()
            await old.call("add", {"a": 1, "b": 1})
    refused = old.received[-1]["result"]
    assert [r.result.get("isError", False) for r in replies] == [False, False, False]
    assert refused["isError"] is True  # a session of its own, but the same address
    assert set(seen) == {"127.0.0.1"}
    assert spy.keys == ["by_client|*|peer:127.0.0.1"] * 4


async def test_over_http_a_client_with_a_token_is_its_principal() -> None:
    server, _ = make_server(RateLimiter(Rate(1, per=3600)))
    with trio.fail_after(TIMEOUT):
        async with serve(server, bearer_token="s3cret") as served:
            results = []
            for _ in range(2):  # two sessions of one token
                client = served.client(authorization="Bearer s3cret")
                await client.initialize()
                results.append((await client.call("add", {"a": 1, "b": 1})).result)
    assert "isError" not in results[0]
    assert results[1]["isError"] is True
