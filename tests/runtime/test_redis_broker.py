"""`RedisBroker` against a real `redis-server` on loopback, and a fleet of two HTTP workers.

Each test starts its own `redis-server` on a free loopback port, in a temporary directory, with
nothing saved. Without the `redis-server` binary or the `redis` package the tests are skipped,
each saying which is missing. The fleet tests run two `trio-mcp run` processes of one server
module (`tests/fixtures/broker_worker.py`): an update made by a tool call on one worker reaches a
client subscribed on the other, through a Redis that is killed and started again meanwhile.
What waits for another process (Redis answering, a worker subscribing, a line in its log)
polls for that condition under a deadline: no test asserts how long anything takes.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from tests.helpers import LATEST, MODERN, python_json
from tests.http_helpers import POST_HEADERS, McpHttp, Reply
from tests.redis_helpers import NEEDS_REDIS_PACKAGE, RedisProcess, Worker
from tests.redis_helpers import fleet as redis_fleet
from tests.timing import scaled
from trio_mcp import RedisBroker
from trio_mcp._runtime.broker import RESOURCE_UPDATED
from trio_mcp.transports.http.headers import request_headers

pytestmark = [NEEDS_REDIS_PACKAGE, pytest.mark.slow]  # starts Redis and workers

WATCHED = "test://watched"
#: Bounds each test: two worker processes start on 2 shared cores in a few seconds.
TIMEOUT = scaled(60)
UPDATED = {
    "jsonrpc": "2.0",
    "method": "notifications/resources/updated",
    "params": {"uri": WATCHED},
}
STATE_KEY = "6b" * 32


def broker(url: str) -> RedisBroker:
    return RedisBroker(
        url, channel_prefix="trio-mcp-test:", timeout=1.0, min_backoff=0.02, max_backoff=0.2
    )


class Heard:
    """What one broker delivered, with an event for each arrival."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self._arrived = trio.Event()

    async def deliver(self, topic: str, payload: dict[str, Any]) -> None:
        self.messages.append((topic, payload))
        self._arrived.set()
        self._arrived = trio.Event()

    async def until(self, count: int) -> None:
        while len(self.messages) < count:
            await self._arrived.wait()


async def until_heard(heard: Heard, publish: Any, *args: Any) -> None:
    """Publish again and again until one arrives (a publisher in its backoff drops them)."""
    async with trio.open_nursery() as nursery:

        async def keep_publishing() -> None:
            while True:
                await publish(*args)
                await trio.sleep(0.05)

        nursery.start_soon(keep_publishing)
        await heard.until(1)
        nursery.cancel_scope.cancel()


# -- one process, two brokers ---------------------------------------------------------------------


async def test_a_message_reaches_the_other_worker_and_never_comes_back(
    redis_server: RedisProcess,
) -> None:
    a, b = broker(redis_server.url), broker(redis_server.url)
    heard_a, heard_b = Heard(), Heard()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(a.serve, heard_a.deliver)
            await nursery.start(b.serve, heard_b.deliver)
            await redis_server.until_subscribers(2)
            await a.publish(RESOURCE_UPDATED, {"uri": WATCHED})
            await heard_b.until(1)
            # One channel, in order: had `a` taken back its own message, it would come first.
            await b.publish(RESOURCE_UPDATED, {"uri": "test://second"})
            await heard_a.until(1)
            nursery.cancel_scope.cancel()
    assert heard_b.messages == [(RESOURCE_UPDATED, {"uri": WATCHED})]
    assert heard_a.messages == [(RESOURCE_UPDATED, {"uri": "test://second"})]


async def test_a_message_that_is_not_trio_mcps_is_dropped_with_a_warning(
    redis_server: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = broker(redis_server.url), broker(redis_server.url)
    heard = Heard()
    with trio.fail_after(TIMEOUT), caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with trio.open_nursery() as nursery:
            await nursery.start(b.serve, heard.deliver)
            await redis_server.until_subscribers(1)
            for junk in (b"not json", b"[1, 2]", json.dumps({"topic": 1}).encode()):
                await trio.to_thread.run_sync(redis_server.publish_raw, junk)
            await a.publish(RESOURCE_UPDATED, {"uri": WATCHED})
            await heard.until(1)
            nursery.cancel_scope.cancel()
    assert heard.messages == [(RESOURCE_UPDATED, {"uri": WATCHED})]
    dropped = [r for r in caplog.records if "not trio-mcp's" in r.getMessage()]
    assert len(dropped) == 3


async def test_redis_unreachable_fails_nothing_and_the_subscription_comes_back(
    redis_server: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    redis_server.stop()
    a, b = broker(redis_server.url), broker(redis_server.url)
    heard = Heard()
    with trio.fail_after(TIMEOUT), caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with trio.open_nursery() as nursery:
            await nursery.start(b.serve, heard.deliver)
            for _ in range(3):  # never raises; warns once
                await a.publish(RESOURCE_UPDATED, {"uri": "test://lost"})
            publish_warnings = [r for r in caplog.records if "cannot publish" in r.getMessage()]
            assert len(publish_warnings) == 1
            assert "test://lost" not in str(heard.messages)
            # Logged from the subscription's thread: nothing to wait on here.
            while not any("no subscription" in r.getMessage() for r in caplog.records):  # noqa: ASYNC110
                await trio.sleep(0.02)
            await trio.to_thread.run_sync(redis_server.start)
            await redis_server.until_subscribers(1)
            # Published again once the backoff since the last failure has passed.
            await until_heard(heard, a.publish, RESOURCE_UPDATED, {"uri": WATCHED})
            nursery.cancel_scope.cancel()
    assert heard.messages[0] == (RESOURCE_UPDATED, {"uri": WATCHED})
    said = [r.getMessage() for r in caplog.records]
    assert sum("no subscription to Redis" in line for line in said) == 1, said
    assert sum("subscribed to Redis" in line and "again" in line for line in said) == 1, said
    assert sum("publishing to Redis" in line and "again" in line for line in said) == 1, said


async def test_cancelling_serve_ends_its_thread(redis_server: RedisProcess) -> None:
    import threading  # noqa: PLC0415

    before = threading.active_count()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(broker(redis_server.url).serve, Heard().deliver)
            await redis_server.until_subscribers(1)
            nursery.cancel_scope.cancel()
    # The subscription thread returned (a worker thread of trio's cache may stay, idle).
    await redis_server.until_subscribers(0)
    assert threading.active_count() <= before + 1


def test_neither_the_import_nor_a_broker_loads_redis() -> None:
    loaded = python_json(
        "import json, sys, trio_mcp\n"
        "server = trio_mcp.Server(broker=trio_mcp.RedisBroker('redis://127.0.0.1:1/0'))\n"
        "print(json.dumps('redis' in sys.modules))"
    )
    assert loaded is False


def test_a_broker_without_the_redis_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "redis" else real(name, *a)
    )
    with pytest.raises(RuntimeError, match=r"pip install \"trio-mcp\[redis\]\""):
        RedisBroker()


# -- a fleet of two HTTP workers ------------------------------------------------------------------


def fleet(redis_url: str, **env: str) -> AbstractAsyncContextManager[list[Worker]]:
    """Two workers of `broker_worker.py` on `redis_url` (tests/redis_helpers.fleet)."""
    return redis_fleet("tests/fixtures/broker_worker.py", redis_url, env=env)


class SseStream:
    """An open SSE answer, read message by message."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def next(self) -> Any:
        async for line in self._lines:
            if line.startswith("data: ") and line != "data: ":
                return json.loads(line.removeprefix("data: "))
        raise AssertionError("the stream ended")


@asynccontextmanager
async def get_stream(session: McpHttp) -> AsyncIterator[SseStream]:
    """The session's GET stream, where a handshake-era session's notifications come."""
    headers = {"accept": "text/event-stream", "mcp-protocol-version": session.version}
    assert session.session_id is not None
    headers["mcp-session-id"] = session.session_id
    async with session.http.stream("GET", session.url, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        yield SseStream(response)


@asynccontextmanager
async def listen_stream(http: httpx.AsyncClient, url: str) -> AsyncIterator[SseStream]:
    """A 2026-07-28 `subscriptions/listen` stream asking for updates of `WATCHED`."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            "notifications": {"resourceSubscriptions": [WATCHED]},
        },
    }
    headers = {**POST_HEADERS, **request_headers(message, MODERN)}
    async with http.stream("POST", url, headers=headers, json=message) as response:
        assert response.status_code == 200
        stream = SseStream(response)
        ack = await stream.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        yield stream


async def touch(session: McpHttp) -> int:
    reply = await session.call("touch", {"uri": WATCHED})
    result = reply.result
    assert result.get("isError") is not True, result
    told: int = result["structuredContent"]["result"]
    return told


async def test_an_update_on_one_worker_reaches_subscribers_on_another_through_redis(
    redis_server: RedisProcess,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            fleet(redis_server.url) as (a, b),
            httpx.AsyncClient(timeout=TIMEOUT) as http,
        ):
            await redis_server.until_subscribers(2)
            on_a = McpHttp(http, a.url, LATEST)
            assert (await on_a.initialize()).status == 200
            subscribed = await on_a.request("resources/subscribe", {"uri": WATCHED})
            assert subscribed.result == {}
            on_b = McpHttp(http, b.url, LATEST)
            assert (await on_b.initialize()).status == 200
            async with get_stream(on_a) as updates, listen_stream(http, a.url) as listened:
                assert await touch(on_b) == 0  # b's own clients: none subscribed
                assert await updates.next() == UPDATED
                heard = await listened.next()
                assert heard["method"] == UPDATED["method"]
                assert heard["params"]["uri"] == WATCHED

                # Redis gone: both workers go on serving, and say what they miss.
                mark_a, mark_b = len(a.log), len(b.log)
                redis_server.stop()
                assert await touch(on_b) == 0
                await b.logged("cannot publish to Redis", after=mark_b)
                await a.logged("no subscription to Redis", after=mark_a)
                assert (await on_a.request("resources/read", {"uri": WATCHED})).status == 200

                # Redis back: both resubscribe, and updates flow again.
                await trio.to_thread.run_sync(redis_server.start)
                await redis_server.until_subscribers(2)
                await a.logged("subscribed to Redis", after=mark_a)
                # b publishes again once the backoff since its last failure has passed.
                async with trio.open_nursery() as nursery:

                    async def keep_touching() -> None:
                        while True:
                            assert await touch(on_b) == 0
                            await trio.sleep(0.05)

                    nursery.start_soon(keep_touching)
                    assert await updates.next() == UPDATED
                    heard = await listened.next()
                    nursery.cancel_scope.cancel()
                assert heard["params"]["uri"] == WATCHED
                await b.logged("publishing to Redis", after=mark_b)


async def asked_on_a_answered_on_b(a: Worker, b: Worker) -> tuple[dict[str, Any], Reply]:
    """Call `name` on worker a (it asks for a name: an input round), then send the retry with
    Ada's answer and a's requestState to worker b: a's result and b's reply."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        on_a, on_b = McpHttp(http, a.url, MODERN), McpHttp(http, b.url, MODERN)
        first = await on_a.request("tools/call", {"name": "name", "arguments": {}, "_meta": meta})
        retry = await on_b.request(
            "tools/call",
            {
                "name": "name",
                "arguments": {},
                "_meta": meta,
                "inputResponses": {
                    "elicitation-1": {"action": "accept", "content": {"name": "Ada"}}
                },
                "requestState": first.result["requestState"],
            },
        )
    return first.result, retry


async def test_workers_sharing_the_state_key_continue_each_others_calls(
    redis_server: RedisProcess,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with fleet(redis_server.url, TRIO_MCP_REQUEST_STATE_KEY=STATE_KEY) as (a, b):
            round_one, retry = await asked_on_a_answered_on_b(a, b)
    assert round_one["resultType"] == "input_required", round_one
    assert list(round_one["inputRequests"]) == ["elicitation-1"]
    done = retry.result
    assert done["resultType"] == "complete", done
    assert done["content"] == [{"type": "text", "text": "Ada on B"}]


async def test_workers_with_keys_of_their_own_refuse_each_others_state(
    redis_server: RedisProcess,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with fleet(redis_server.url) as (a, b):
            _, retry = await asked_on_a_answered_on_b(a, b)
    assert retry.last["error"]["code"] == -32602, retry.last
    assert "requestState" in retry.last["error"]["message"]
