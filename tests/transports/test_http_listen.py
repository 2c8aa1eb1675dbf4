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

from tests.helpers import LATEST, MODERN, MODERN_META
from tests.http_helpers import POST_HEADERS, Served, serve
from tests.schema_check import validate_server_message
from tests.timing import scaled
from trio_mcp import AuthInfo, Server, Timeouts
from trio_mcp.transports.http.headers import request_headers

TIMEOUT = scaled(60)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


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
async def listening(
    served: Served,
    request_id: int,
    *,
    headers: dict[str, str] | None = None,
    **notifications: Any,
) -> AsyncIterator[Stream]:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {"_meta": MODERN_META, "notifications": notifications},
    }
    headers = {**POST_HEADERS, **request_headers(message, MODERN), **(headers or {})}
    async with served.http.stream("POST", served.url, headers=headers, json=message) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Stream(response)


async def settled(server: Server, count: int) -> None:
    while len(server._listening) != count:  # noqa: ASYNC110 - the server ends it in its own time
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
        async with serve(server, max_listens=1) as served:
            async with listening(served, 1, promptsListChanged=True) as stream:
                ack = await stream.next()
                assert ack["params"]["notifications"] == {"promptsListChanged": True}
                assert len(server._listening) == 1
                # The listen holds the one listen slot: another waits for it.
                busy = await post_listen(served.http, served.url, 2)
                assert busy.status_code == 503
            await settled(server, 0)
            async with listening(served, 3, promptsListChanged=True) as stream:
                assert (await stream.next())["params"]["notifications"]


async def test_a_listen_takes_no_slot_of_the_requests_in_flight() -> None:
    """Defect (issue 24): idle listens filled `max_in_flight_sessionless`, and every other
    2026-07-28 request got 503."""
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with serve(server, max_in_flight_sessionless=1) as served:
            client = served.client(MODERN)
            async with (
                listening(served, 1, promptsListChanged=True) as first,
                listening(served, 2, toolsListChanged=True) as second,
            ):
                await first.next()
                await second.next()
                listed = await client.request("tools/list", {"_meta": MODERN_META})
                assert listed.status == 200, listed.response.text


def listen_message(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {"_meta": MODERN_META, "notifications": {"toolsListChanged": True}},
    }


async def post_listen(
    http: httpx.AsyncClient, url: str, request_id: int, **headers: str
) -> httpx.Response:
    """A listen refused at once (its status and body), or one accepted: then only its head."""
    message = listen_message(request_id)
    all_headers = {**POST_HEADERS, **request_headers(message, MODERN), **headers}
    async with http.stream("POST", url, headers=all_headers, json=message) as response:
        if response.status_code != 200:
            await response.aread()
        return response


@asynccontextmanager
async def from_address(address: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose connections come from `address` (a loopback address of its own)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, timeout=10) as http:
        yield http


async def test_listens_are_bounded_per_client_and_other_clients_are_served() -> None:
    """One client's idle listens reach its own bound (429); another client (another address)
    still opens its own and is served."""
    server = build_server()
    with trio.fail_after(TIMEOUT):
        async with (
            serve(server, max_listens_per_client=2) as served,
            from_address("127.0.0.2") as other,
        ):
            async with (
                listening(served, 1, toolsListChanged=True) as first,
                listening(served, 2, toolsListChanged=True) as second,
            ):
                await first.next()
                await second.next()
                refused = await post_listen(served.http, served.url, 3)
                assert refused.status_code == 429
                assert refused.headers["retry-after"] == "1"
                error = refused.json()
                assert error["id"] == 3
                assert "max_listens_per_client=2" in error["error"]["message"]
                message = listen_message(4)
                headers = {**POST_HEADERS, **request_headers(message, MODERN)}
                async with other.stream("POST", served.url, headers=headers, json=message) as ok:
                    assert ok.status_code == 200
                    ack = await Stream(ok).next()
                    assert ack["method"] == "notifications/subscriptions/acknowledged"
                listed = await served.client(MODERN).request("tools/list", {"_meta": MODERN_META})
                assert listed.status == 200
            await settled(server, 0)
            async with listening(served, 5, toolsListChanged=True) as again:
                await again.next()  # the client's streams ended: room again


async def test_listens_are_bounded_per_principal_when_tokens_are_verified() -> None:
    """Behind one address, each verified user and client has a bound of its own."""
    server = build_server()
    tokens = {"alice-token": "alice", "bob-token": "bob"}
    with trio.fail_after(TIMEOUT):
        async with serve(server, auth=_Subjects(tokens), max_listens_per_client=1) as served:
            alice = {"authorization": "Bearer alice-token"}
            bob = {"authorization": "Bearer bob-token"}
            async with listening(served, 1, toolsListChanged=True, headers=alice) as first:
                await first.next()
                again = await post_listen(served.http, served.url, 2, **alice)
                assert again.status_code == 429
                async with listening(served, 3, toolsListChanged=True, headers=bob) as hers:
                    await hers.next()


class _Subjects:
    """A token verifier for tests: each known token stands for its subject."""

    def __init__(self, subjects: dict[str, str]) -> None:
        self.subjects = subjects

    async def verify(self, token: str) -> AuthInfo | None:
        subject = self.subjects.get(token)
        return None if subject is None else AuthInfo(subject=subject, client_id="test")


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
    # The listen does not wait for the grace: it has nothing to finish.
    server.timeouts = Timeouts(shutdown=60)
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
        assert len(server._listening) == 0


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
