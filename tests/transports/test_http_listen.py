"""`subscriptions/listen` (2026-07-28) over Streamable HTTP on loopback.

The listen is a POST whose answer is an SSE stream that stays open: the acknowledgement first,
then only what the filter asked for, tagged with the listen's id. Closing the stream ends it
and frees its slot among the requests in flight.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio

from tests.helpers import LATEST, MODERN
from tests.http_helpers import POST_HEADERS, Served, serve
from tests.schema_check import validate_server_message
from tests.timing import scaled
from trio_mcp import Server
from trio_mcp.transports.http.headers import request_headers

TIMEOUT = scaled(60)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _nothing() -> str:
    return "nothing"


def build_server() -> Server:
    server = Server("listening")
    server.add_tool(_nothing, name="first", inline=True)
    server.add_prompt(_nothing, name="greeting", inline=True)
    server.add_resource("test://watched", "watched contents")
    return server


class Stream:
    """The SSE answer of one listen POST, read event by event."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def next(self) -> Any:
        """The next event's JSON-RPC message (comments and event names skipped)."""
        async for line in self._lines:
            if line.startswith("data: "):
                message = json.loads(line.removeprefix("data: "))
                validate_server_message(message, MODERN)
                return message
        raise AssertionError("the stream ended")

    async def rest(self) -> list[str]:
        """The lines left until the stream ends, blank ones aside."""
        return [line async for line in self._lines if line]


@asynccontextmanager
async def listening(served: Served, request_id: int, **notifications: Any) -> AsyncIterator[Stream]:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": notifications},
    }
    headers = {**POST_HEADERS, **request_headers(message, MODERN)}
    async with served.http.stream("POST", served.url, headers=headers, json=message) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Stream(response)


async def settled(server: Server, count: int) -> None:
    while len(server.listening) != count:  # noqa: ASYNC110 - the server ends it in its own time
        await trio.sleep(0.01)


async def test_listen_streams_the_acknowledgement_then_what_was_asked() -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with (
            serve(server) as served,
            listening(
                served, 7, toolsListChanged=True, resourceSubscriptions=["test://watched"]
            ) as stream,
        ):
            assert await stream.next() == {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {
                    "_meta": {SUBSCRIPTION_ID: 7},
                    "notifications": {
                        "toolsListChanged": True,
                        "resourceSubscriptions": ["test://watched"],
                    },
                },
            }
            server.add_tool(_nothing, name="second", inline=True)
            assert await stream.next() == {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {SUBSCRIPTION_ID: 7}},
            }
            server.add_prompt(_nothing, name="farewell", inline=True)  # not asked for
            assert await server.resource_updated("test://elsewhere") == 0
            assert await server.resource_updated("test://watched") == 1
            assert await stream.next() == {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "test://watched", "_meta": {SUBSCRIPTION_ID: 7}},
            }


async def test_closing_the_stream_ends_the_listen_and_frees_its_slot() -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with serve(server, max_in_flight_sessionless=1) as served:
            client = served.client(MODERN)
            async with listening(served, 1, promptsListChanged=True) as stream:
                ack = await stream.next()
                assert ack["params"]["notifications"] == {"promptsListChanged": True}
                assert len(server.listening) == 1
                # The listen holds the one slot: nothing else runs meanwhile.
                busy = await client.request("tools/list", {"_meta": META})
                assert busy.status == 503
            await settled(server, 0)
            listed = await client.request("tools/list", {"_meta": META})
            assert listed.status == 200, listed.response.text


async def test_a_handshake_era_session_has_no_listen() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(build_server()) as served:
            client = served.client(LATEST)
            assert (await client.initialize()).status == 200
            reply = await client.request(
                "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
            )
            assert reply.last["error"]["code"] == -32601
            # The same server listens to a 2026-07-28 request.
            async with listening(served, 2, toolsListChanged=True) as stream:
                ack = await stream.next()
                assert ack["method"] == "notifications/subscriptions/acknowledged"


async def test_the_server_shutting_down_closes_the_listen_with_a_plain_result() -> None:
    server = build_server()
    server.shutdown_grace = 60  # the listen does not wait for it: it has nothing to finish
    with trio.fail_after(TIMEOUT):
        async with (
            serve(server) as served,
            listening(served, 3, resourceSubscriptions=["test://watched"]) as stream,
        ):
            await stream.next()
            assert await server.resource_updated("test://watched") == 1
            served.stop.set()
            # What was queued goes out first, then the plain result.
            assert (await stream.next())["method"] == "notifications/resources/updated"
            closed = await stream.next()
            assert closed == {
                "jsonrpc": "2.0",
                "id": 3,
                "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: 3}},
            }
            validate_server_message(closed, MODERN, "subscriptions/listen")
            assert await stream.rest() == []
        assert len(server.listening) == 0


async def test_a_quiet_listen_outlives_the_keep_alive_timeout() -> None:
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with (
            serve(server, keep_alive_timeout=0.3) as served,
            listening(served, 4, toolsListChanged=True) as stream,
        ):
            await stream.next()
            await trio.sleep(1.2)  # four keep-alive timeouts with nothing on the stream
            server.add_tool(_nothing, name="second", inline=True)
            changed = await stream.next()
            assert changed["method"] == "notifications/tools/list_changed"
