"""The broker: notifications that reach the sessions of a fleet's other workers, in-process.

Two `Server`s of one process stand for two workers: their `InProcessBroker`s share a bus
(`peer()`). Each message must reach every other worker once, the publisher's own sessions
exactly once (directly, never back through the broker), and a registry change must stay on its
worker. Time is the `autojump_clock`'s where anything waits; no test sleeps to wait.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from tests.helpers import MODERN_META, RawPeer, open_memory_peer
from tests.timing import scaled
from trio_mcp import InProcessBroker, Server
from trio_mcp._runtime.broker import LIST_CHANGED, RESOURCE_UPDATED

TIMEOUT = scaled(60)
URI = "test://watched"
OTHER = "test://other"
UPDATED = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": URI}}


def _nothing() -> str:
    return "nothing"


def worker(broker: InProcessBroker) -> Server:
    """One worker of the fleet: the same tool, prompt and resource on every one."""
    server = Server("fleet", broker=broker)
    server.add_tool(_nothing, name="first", inline=True)
    server.add_prompt(_nothing, name="greeting", inline=True)
    server.add_resource(URI, "watched contents")
    server.add_resource(OTHER, "other contents")
    return server


@asynccontextmanager
async def fleet(count: int = 2) -> AsyncIterator[list[Server]]:
    """`count` workers on one bus, each relaying what the others publish."""
    first = InProcessBroker()
    servers = [worker(first)] + [worker(first.peer()) for _ in range(count - 1)]
    async with trio.open_nursery() as nursery:
        for server in servers:
            await nursery.start(server.relay)
        yield servers
        nursery.cancel_scope.cancel()


async def subscribed(peer: RawPeer, uri: str = URI) -> None:
    answer = await peer.request("resources/subscribe", {"uri": uri})
    assert answer["result"] == {}, answer


async def next_is_only(peer: RawPeer, expected: list[Any]) -> None:
    """The peer's next messages are `expected`, and nothing else came before a ping's answer."""
    for message in expected:
        assert await peer.receive() == message
    answer = await peer.request("ping")
    assert answer["result"] == {}, answer


# -- the broker itself ----------------------------------------------------------------------------


async def test_a_message_reaches_the_other_brokers_of_the_bus_and_not_its_publisher() -> None:
    first = InProcessBroker()
    second, third = first.peer(), first.peer()
    heard: dict[str, list[tuple[str, dict[str, Any]]]] = {"first": [], "second": [], "third": []}

    def to(name: str) -> Any:
        async def deliver(topic: str, payload: dict[str, Any]) -> None:
            heard[name].append((topic, payload))

        return deliver

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            for name, broker in (("first", first), ("second", second), ("third", third)):
                await nursery.start(broker.serve, to(name))
            await first.publish(RESOURCE_UPDATED, {"uri": URI})
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert heard == {
        "first": [],
        "second": [(RESOURCE_UPDATED, {"uri": URI})],
        "third": [(RESOURCE_UPDATED, {"uri": URI})],
    }


async def test_publishing_with_nobody_serving_goes_nowhere_and_fails_nothing() -> None:
    alone = InProcessBroker()
    await alone.publish(LIST_CHANGED, {"kind": "tools"})
    other = alone.peer()  # on the bus, not serving: nothing is kept for it
    await alone.publish(LIST_CHANGED, {"kind": "tools"})
    heard: list[str] = []

    async def deliver(topic: str, payload: dict[str, Any]) -> None:
        heard.append(topic)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(other.serve, deliver)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert heard == []


async def test_a_worker_that_does_not_keep_up_drops_past_its_bound_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    publisher = InProcessBroker(max_queue=2)
    slow = publisher.peer()
    release = trio.Event()
    heard: list[str] = []

    async def deliver(topic: str, payload: dict[str, Any]) -> None:
        await release.wait()
        heard.append(payload["uri"])

    with trio.fail_after(TIMEOUT), caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with trio.open_nursery() as nursery:
            await nursery.start(slow.serve, deliver)
            for n in range(6):
                await publisher.publish(RESOURCE_UPDATED, {"uri": f"test://{n}"})
                await trio.testing.wait_all_tasks_blocked()
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    # One in delivery, two queued; the rest dropped.
    assert heard == ["test://0", "test://1", "test://2"]
    warnings = [r for r in caplog.records if "dropping" in r.getMessage()]
    assert len(warnings) == 1


async def test_a_broker_serves_one_server() -> None:
    broker = InProcessBroker()

    async def deliver(topic: str, payload: dict[str, Any]) -> None:
        raise AssertionError("nothing is published")

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.serve, deliver)
            with pytest.raises(RuntimeError, match="one broker per server"):
                await broker.serve(deliver)
            nursery.cancel_scope.cancel()


# -- through servers ------------------------------------------------------------------------------


async def test_an_update_on_one_worker_reaches_the_subscribers_of_every_worker_once() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            fleet(3) as (a, b, c),
            open_memory_peer(a) as on_a,
            open_memory_peer(b) as on_b,
            open_memory_peer(c) as on_c,
        ):
            for peer in (on_a, on_b, on_c):
                await subscribed(peer)
            # Counted: the sessions of the publishing worker only.
            assert await b.resource_updated(URI) == 1
            for peer in (on_a, on_b, on_c):
                await next_is_only(peer, [UPDATED])


async def test_a_session_that_did_not_subscribe_hears_nothing_from_other_workers() -> None:
    with trio.fail_after(TIMEOUT):
        async with fleet() as (a, b), open_memory_peer(a) as on_a:
            await subscribed(on_a, OTHER)
            assert await b.resource_updated(URI) == 0
            await trio.testing.wait_all_tasks_blocked()
            await next_is_only(on_a, [])


async def test_a_listen_stream_hears_an_update_made_on_another_worker() -> None:
    with trio.fail_after(TIMEOUT):
        async with fleet() as (a, b), open_memory_peer(a, initialize=False) as on_a:
            listen_id = await on_a.start_request(
                "subscriptions/listen",
                {"_meta": MODERN_META, "notifications": {"resourceSubscriptions": [URI]}},
            )
            ack = await on_a.receive()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert await b.resource_updated(URI) == 0
            updated = await on_a.receive()
            assert updated["method"] == "notifications/resources/updated"
            assert updated["params"]["uri"] == URI
            assert updated["params"]["_meta"] == {
                "io.modelcontextprotocol/subscriptionId": listen_id
            }


async def test_a_registry_change_stays_on_its_worker() -> None:
    with trio.fail_after(TIMEOUT):
        async with fleet() as (a, b), open_memory_peer(a) as on_a, open_memory_peer(b) as on_b:
            b.add_tool(_nothing, name="second", inline=True)
            await trio.testing.wait_all_tasks_blocked()
            tools_changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            await next_is_only(on_b, [tools_changed])
            await next_is_only(on_a, [])  # a's tools did not change


async def test_an_announced_list_change_reaches_every_worker_once() -> None:
    with trio.fail_after(TIMEOUT):
        async with fleet() as (a, b), open_memory_peer(a) as on_a, open_memory_peer(b) as on_b:
            await b.announce_list_changed("prompts")
            await trio.testing.wait_all_tasks_blocked()
            changed = {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}
            await next_is_only(on_a, [changed])
            await next_is_only(on_b, [changed])


async def test_an_unknown_list_kind_is_refused_before_anything_is_sent() -> None:
    async with fleet() as (_a, b):
        with pytest.raises(ValueError, match="kind must be one of"):
            await b.announce_list_changed("widgets")  # type: ignore[arg-type]


async def test_a_message_a_worker_cannot_act_on_is_ignored() -> None:
    with trio.fail_after(TIMEOUT):
        async with fleet() as (a, _b), open_memory_peer(a) as on_a:
            # A newer worker's topic, and known topics with payloads that say nothing usable.
            other = a.broker
            assert isinstance(other, InProcessBroker)
            stranger = other.peer()
            await subscribed(on_a)
            await stranger.publish("tasks/updated", {"taskId": "1"})
            await stranger.publish(RESOURCE_UPDATED, {"uri": 7})
            await stranger.publish(LIST_CHANGED, {"kind": "widgets"})
            await trio.testing.wait_all_tasks_blocked()
            await next_is_only(on_a, [])


async def test_a_server_served_twice_relays_once() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            fleet() as (a, b),
            open_memory_peer(a) as on_a,
            trio.open_nursery() as nursery,
        ):
            await nursery.start(a.relay)  # a second relay of the same server
            await subscribed(on_a)
            await b.resource_updated(URI)
            await trio.testing.wait_all_tasks_blocked()
            await next_is_only(on_a, [UPDATED])
            nursery.cancel_scope.cancel()


async def test_a_server_alone_updates_its_sessions_as_before() -> None:
    server = worker(InProcessBroker())
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:  # not even relaying
            await subscribed(peer)
            assert await server.resource_updated(URI) == 1
            await next_is_only(peer, [UPDATED])
