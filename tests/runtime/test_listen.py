"""`subscriptions/listen` (2026-07-28) over a channel connection, checked on the wire.

A listen is a request that stays in flight: the acknowledgement comes first, then only what its
filter asked for, every message tagged with the listen's id; it ends when the client cancels it
or its input ends, and a listener that does not read holds a bounded queue.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.helpers import MODERN, MODERN_META, RawPeer, open_memory_peer
from tests.schema_check import validate_server_message
from tests.timing import LONG_GRACE, scaled
from trio_mcp import Limits, Server, Timeouts
from trio_mcp._core.subscriptions import SubscriptionFilter
from trio_mcp._runtime.listening import Listener
from trio_mcp.transports import memory_channel_pair

TIMEOUT = scaled(60)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def _nothing() -> str:
    return "nothing"


def build_server(**options: Any) -> Server:
    """A server with one tool, one prompt and one resource: every kind can be listened to."""
    server = Server("listening", **options)
    server.add_tool(_nothing, name="first", inline=True)
    server.add_prompt(_nothing, name="greeting", inline=True)
    server.add_resource("test://watched", "watched contents")
    return server


async def listen(peer: RawPeer, **notifications: Any) -> tuple[int, Any]:
    """Open a listen stream; its id and its first message (checked against the schema)."""
    request_id = await peer.start_request(
        "subscriptions/listen", {"_meta": MODERN_META, "notifications": notifications}
    )
    first = await peer.receive()
    validate_server_message(first, MODERN)
    return request_id, first


async def settled(server: Server, count: int) -> None:
    """Wait until `count` listen streams are open (they end in the server's own time)."""
    while len(server._listening) != count:  # noqa: ASYNC110 - nothing to wait on from here
        await trio.sleep(0.01)


async def test_acknowledgement_comes_first_and_names_what_is_granted() -> None:
    server = Server("tools only")
    server.add_tool(_nothing, name="first", inline=True)
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server, initialize=False) as peer:
            request_id, ack = await listen(
                peer,
                toolsListChanged=True,
                promptsListChanged=True,  # no prompts here: not granted
                resourceSubscriptions=["test://nowhere"],  # no resources: not granted
            )
            assert ack == {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {
                    "_meta": {SUBSCRIPTION_ID: request_id},
                    "notifications": {"toolsListChanged": True},
                },
            }


async def test_changes_reach_the_listener_tagged_with_its_id() -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server, initialize=False) as peer:
            request_id, ack = await listen(
                peer, toolsListChanged=True, resourceSubscriptions=["test://watched"]
            )
            assert ack["params"]["notifications"] == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["test://watched"],
            }
            server.add_tool(_nothing, name="second", inline=True)
            changed = await peer.receive()
            assert changed == {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {SUBSCRIPTION_ID: request_id}},
            }
            assert await server.resource_updated("test://watched") == 1
            updated = await peer.receive()
            assert updated == {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "test://watched", "_meta": {SUBSCRIPTION_ID: request_id}},
            }
            for message in (changed, updated):
                validate_server_message(message, MODERN)


async def test_the_filter_is_honoured_and_streams_are_told_apart() -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server, initialize=False) as peer:
            prompts, _ = await listen(peer, promptsListChanged=True)
            watched, _ = await listen(peer, resourceSubscriptions=["test://watched"])
            server.add_tool(_nothing, name="second", inline=True)  # nobody asked
            assert await server.resource_updated("test://elsewhere") == 0
            server.add_prompt(_nothing, name="farewell", inline=True)
            assert await server.resource_updated("test://watched") == 1
            heard = [await peer.receive(), await peer.receive()]
            # One more, to flush out anything sent that was not asked for.
            assert await server.resource_updated("test://watched") == 1
            heard.append(await peer.receive())
            tagged = sorted((m["method"], m["params"]["_meta"][SUBSCRIPTION_ID]) for m in heard)
            assert tagged == [
                ("notifications/prompts/list_changed", prompts),
                ("notifications/resources/updated", watched),
                ("notifications/resources/updated", watched),
            ]


async def test_cancelling_ends_the_listen_unanswered_and_frees_it() -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server, initialize=False) as peer:
            request_id, _ = await listen(peer, toolsListChanged=True)
            assert len(server._listening) == 1
            await peer.notify("notifications/cancelled", {"requestId": request_id})
            await settled(server, 0)
            server.add_tool(_nothing, name="second", inline=True)
            listed = await peer.request("tools/list", {"_meta": MODERN_META})
            assert "result" in listed
            # Neither the change nor any answer to the cancelled listen came.
            assert [m for m in peer.log if m.get("id") == request_id] == []
            assert [m.get("method") for m in peer.log[1:-1]] == []


async def test_listens_count_against_the_in_flight_limit() -> None:
    server = build_server(limits=Limits(max_in_flight=1))
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server, initialize=False) as peer:
            first, _ = await listen(peer, toolsListChanged=True)
            params = {"_meta": MODERN_META, "notifications": {"toolsListChanged": True}}
            held = await peer.start_request("subscriptions/listen", params)  # waits its turn
            busy = await peer.request("subscriptions/listen", params)
            assert busy["error"]["message"].startswith("Server busy"), busy
            await peer.notify("notifications/cancelled", {"requestId": first})
            ack = await peer.receive()  # the held listen runs once the first one is gone
            assert ack["params"]["_meta"] == {SUBSCRIPTION_ID: held}
            assert len(server._listening) == 1


async def test_end_of_input_closes_the_listen_with_a_plain_result() -> None:
    server = build_server(timeouts=Timeouts(shutdown=LONG_GRACE))
    client, server_end = memory_channel_pair()
    with trio.fail_after(TIMEOUT):  # well under the grace: the listen does not hold it
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_connection, server_end.receive, server_end.send)
            peer = RawPeer(client.send, client.receive)
            request_id, _ = await listen(peer, toolsListChanged=True)
            await peer.close()
            closed = await peer.receive()
        assert closed == {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: request_id}},
        }
        validate_server_message(closed, MODERN, "subscriptions/listen")
        assert len(server._listening) == 0


async def test_only_2026_07_28_requests_listen() -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as handshake:
            response = await handshake.request(
                "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
            )
            assert response["error"]["code"] == -32601
            assert response["error"]["data"] == {"method": "subscriptions/listen"}
        async with open_memory_peer(server, initialize=False) as modern:
            _, ack = await listen(modern, toolsListChanged=True)
            assert ack["method"] == "notifications/subscriptions/acknowledged"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"notifications": []},
        {"notifications": {"toolsListChanged": "yes"}},
        {"notifications": {"resourceSubscriptions": "test://watched"}},
        {"notifications": {"resourceSubscriptions": [1]}},
    ],
)
async def test_a_malformed_filter_is_invalid_params(params: dict[str, Any]) -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server, initialize=False) as peer:
            response = await peer.request("subscriptions/listen", {**params, "_meta": MODERN_META})
    assert response["error"]["code"] == -32602
    assert len(server._listening) == 0


async def test_discover_announces_what_a_listen_delivers() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(build_server(), initialize=False) as peer:
            response = await peer.request("server/discover", {"_meta": MODERN_META})
    capabilities = response["result"]["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["prompts"] == {"listChanged": True}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}


@asynccontextmanager
async def narrow_peer(server: Server) -> AsyncIterator[RawPeer]:
    """A peer whose connection holds one frame towards the client: a client that stops reading
    soon blocks the server's writer."""
    client, server_end = memory_channel_pair(1)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_connection, server_end.receive, server_end.send)
        yield RawPeer(client.send, client.receive)
        nursery.cancel_scope.cancel()


async def test_a_listener_that_does_not_read_holds_a_bounded_queue(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = build_server()
    server._listening.max_bytes = 2_000
    uris = [f"test://item/{i}" for i in range(300)]
    with trio.fail_after(TIMEOUT), caplog.at_level(logging.WARNING, "trio_mcp"):
        async with narrow_peer(server) as peer:
            request_id, _ = await listen(peer, resourceSubscriptions=uris)
            (listener,) = server._listening
            assert isinstance(listener, Listener)
            for _ in range(3):  # an update already queued is not queued twice
                for uri in uris:
                    assert await server.resource_updated(uri) == 1
                    assert listener.queued_bytes <= 2_000
            await trio.sleep(0.05)
            assert listener.dropped > 0
            assert "not reading" in caplog.text
            assert listener.subscribed(uris[-1])
            assert not listener.subscribed("test://watched")
            queued = listener.queued_bytes
            assert await server.resource_updated(uris[-1]) == 1  # queued already: not again
            assert listener.queued_bytes == queued
            # The newest updates are what is left; they arrive once the client reads.
            heard: list[str] = []
            while not heard or heard[-1] != uris[-1]:
                message = await peer.receive()
                assert message["params"]["_meta"] == {SUBSCRIPTION_ID: request_id}
                heard.append(message["params"]["uri"])
            assert len(heard) < len(uris)
            assert listener.queued_bytes == 0
            # Nothing else was queued: the next message is the next update.
            assert await server.resource_updated(uris[0]) == 1
            assert (await peer.receive())["params"]["uri"] == uris[0]


async def test_a_tasks_newer_state_takes_the_place_of_the_one_queued() -> None:
    granted = SubscriptionFilter(task_ids=("t1", "t2"))
    listener = Listener(7, granted, max_bytes=1 << 20)
    assert listener.offer("notifications/tasks", {"taskId": "t1", "status": "working"})
    assert listener.offer("notifications/tasks", {"taskId": "t2", "status": "working"})
    assert listener.offer("notifications/tasks", {"taskId": "t1", "status": "completed"})
    assert not listener.offer("notifications/tasks", {"taskId": "t3", "status": "working"})
    listener.finish()
    sent: list[tuple[str, Any]] = []

    async def send(method: str, params: Any = None) -> None:
        sent.append((method, params))

    await listener.deliver(send)
    assert [(p["taskId"], p["status"]) for _, p in sent] == [("t1", "completed"), ("t2", "working")]
    assert all(p["_meta"] == {SUBSCRIPTION_ID: 7} for _, p in sent)
    assert listener.queued_bytes == 0
