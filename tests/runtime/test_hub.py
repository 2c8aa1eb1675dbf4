"""The hub of a server's live sessions (`Server._hub`): who is in it, and broadcasts.

Over memory channels, in-process: with `open_client(server)` and with a raw peer (tests/helpers)
where the wire itself is checked. Time is the `autojump_clock`'s, and no test sleeps to wait:
a test waits for an event, a response, or for every task to block.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio
import trio.testing

from tests.helpers import RawPeer, init_params
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import LogMessage, Server, open_client
from trio_mcp.transports import memory_channel_pair

# Virtual seconds (autojump_clock): far longer than anything here takes when it works.
TIMEOUT = scaled(60)
HELLO = {"level": "info", "data": "hello, everyone"}


def waiting_server() -> tuple[Server, trio.Event]:
    """A server whose `wait` tool runs until the returned event is set."""
    server = Server("hub")
    release = trio.Event()

    @server.tool()
    async def wait() -> str:
        """Wait for the test."""
        await release.wait()
        return "released"

    return server, release


@asynccontextmanager
async def raw_session(server: Server) -> AsyncIterator[tuple[RawPeer, trio.Nursery]]:
    """A raw peer in an initialized session; leaving waits for the server's loop to end."""
    client, server_end = memory_channel_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_connection, server_end.receive, server_end.send)
        peer = RawPeer(client.send, client.receive)
        await peer.initialize()
        yield peer, nursery


async def test_channel_sessions_are_counted_while_open() -> None:
    server = Server("hub")
    assert len(server._hub) == 0
    async with open_client(server):
        assert len(server._hub) == 1
        async with open_client(server):
            assert len(server._hub) == 2
        assert len(server._hub) == 1
    assert len(server._hub) == 0


async def test_a_client_that_vanishes_is_forgotten(autojump_clock: trio.abc.Clock) -> None:
    server, _release = waiting_server()  # never released: the call outlives its client
    with trio.fail_after(TIMEOUT):
        async with raw_session(server) as (peer, _):
            await peer.start_request("tools/call", {"name": "wait", "arguments": {}})
            await trio.testing.wait_all_tasks_blocked()
            assert len(server._hub) == 1
            # Gone without a word: both ends dropped, a call still running.
            await peer.close()
            await peer._receive.aclose()
        # The loop ended (after the shutdown grace, which cancelled the call).
        assert len(server._hub) == 0


async def test_a_broadcast_reaches_every_open_channel_session() -> None:
    server = Server("hub")
    heard: list[list[LogMessage]] = [[], [], []]
    got = [trio.Event() for _ in heard]

    def handler(i: int) -> Callable[[LogMessage], None]:
        def log(message: LogMessage) -> None:
            heard[i].append(message)
            got[i].set()

        return log

    with trio.fail_after(TIMEOUT):
        async with (
            open_client(server, log_handler=handler(0)),
            open_client(server, log_handler=handler(1)),
            open_client(server, log_handler=handler(2)),
        ):
            assert await server._hub.notify_all("notifications/message", HELLO) == 3
            for event in got:
                await event.wait()
    assert heard == [[LogMessage("info", "hello, everyone", None)]] * 3


async def test_a_broadcast_goes_on_the_wire_as_a_notification() -> None:
    server = Server("hub")
    with trio.fail_after(TIMEOUT):
        async with raw_session(server) as (peer, nursery):
            await server._hub.notify_all("notifications/tools/list_changed")
            assert await peer.receive() == {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
            }
            nursery.cancel_scope.cancel()


async def test_a_closed_session_is_not_written_to(autojump_clock: trio.abc.Clock) -> None:
    server, release = waiting_server()
    with trio.fail_after(TIMEOUT):
        async with raw_session(server) as (peer, _):
            call = await peer.start_request("tools/call", {"name": "wait", "arguments": {}})
            await peer.close()  # the input ends; the call runs on in the grace period
            await trio.testing.wait_all_tasks_blocked()
            assert len(server._hub) == 1  # still running a call...
            assert await server._hub.notify_all("notifications/message", HELLO) == 0  # ...closed
            release.set()
            answer = await peer.receive()  # the call's answer is the next thing on the wire
            assert answer["id"] == call
            assert "result" in answer
        assert len(server._hub) == 0


async def test_a_session_whose_client_stopped_reading_does_not_raise() -> None:
    server = Server("hub")
    with trio.fail_after(TIMEOUT):
        async with raw_session(server) as (peer, nursery):
            await peer._receive.aclose()  # the client reads no more; its input is still open
            assert await server._hub.notify_all("notifications/message", HELLO) == 1
            assert len(server._hub) == 1
            nursery.cancel_scope.cancel()
    assert len(server._hub) == 0


async def test_streamable_http_sessions_are_counted_and_sent_to_until_they_end() -> None:
    server = Server("hub")
    async with serve(server) as served:
        mcp = served.client()
        await mcp.initialize()
        assert len(server._hub) == 1
        # Queued for the session's GET stream (tests/transports/test_http_stream.py).
        assert await server._hub.notify_all("notifications/message", HELLO) == 1
        response = await served.http.delete(served.url, headers=mcp.headers())
        assert response.status_code == 204
        assert len(server._hub) == 0
        assert await server._hub.notify_all("notifications/message", HELLO) == 0


async def test_a_sessionless_request_is_not_counted() -> None:
    server = Server("hub")
    async with serve(server, stateless=True) as served:
        reply = await served.client().post(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()}
        )
        assert reply.status == 200
        assert len(server._hub) == 0


def test_the_hub_reads_the_registry_change_counter() -> None:
    server = Server("hub")
    before = server._hub.changes

    @server.tool()
    def noop() -> None:
        """Do nothing."""

    assert server._hub.changes == before + 1
    server._registry.remove("noop")
    assert server._hub.changes == before + 2
