"""The server-to-client stream of Streamable HTTP: `GET` at the endpoint, in a session.

What no call carries goes there: list changes, resource updates, log messages and requests to
the client outside a call (the roots handler's). It waits in a bounded queue while no stream is
open; one stream at a time; quiet streams carry keep-alive comments. Everything here is raw
httpx on a loopback port.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio

from tests.helpers import LATEST, init_params
from tests.http_helpers import POST_HEADERS, McpHttp, Served, serve
from tests.schema_check import validate_server_message
from tests.timing import LONG_GRACE, scaled
from trio_mcp import ConnectionClosed, Context, Server, Timeouts
from trio_mcp.transports.http.outbox import Outbox

TIMEOUT = scaled(60)


def small_server() -> Server:
    server = Server("streams")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    async def slow(ctx: Context) -> str:
        """Say so, then take a while."""
        await ctx.warning("working")
        await trio.sleep(0.3)
        return "done"

    @server.resource("test://watched", name="watched")
    def watched() -> str:
        return "now"

    return server


async def session(served: Served, capabilities: dict[str, Any] | None = None) -> McpHttp:
    """An initialized session whose client declares `capabilities`."""
    client = served.client()
    params = {**init_params(LATEST), "capabilities": capabilities or {}}
    message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    response = await served.http.post(served.url, headers=POST_HEADERS, json=message)
    assert response.status_code == 200, response.text
    client.session_id = response.headers["mcp-session-id"]
    assert (await client.notify("notifications/initialized")).status == 202
    return client


class Stream:
    """The events of a GET stream, read one at a time; comments are kept apart."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"] == "text/event-stream"
        self._lines = response.aiter_lines()
        self.comments: list[str] = []
        self.ids: list[str] = []
        self.retry = False

    async def next(self) -> Any:
        while True:
            line = await self._lines.__anext__()
            if line.startswith(":"):
                self.comments.append(line)
                assert await self._lines.__anext__() == ""
                continue
            lines = [line, await self._lines.__anext__()]
            while lines[-1]:
                lines.append(await self._lines.__anext__())
            if line.startswith("retry: "):  # a resumed stream's reconnection delay alone
                assert lines == ["retry: 1000", ""], lines
                self.retry = True
                continue
            if line.startswith("id: "):
                assert lines[1].startswith("retry: "), lines
                assert lines[2:] == ["data: ", ""], lines
                self.ids.append(line.removeprefix("id: "))
                continue
            assert len(lines) == 4, lines
            assert lines[1].startswith("id: "), lines
            self.ids.append(lines[1].removeprefix("id: "))
            data, blank = lines[2], lines[3]
            assert (line, blank) == ("event: message", ""), (line, blank)
            assert data.startswith("data: "), data
            message = json.loads(data.removeprefix("data: "))
            validate_server_message(message, LATEST)
            return message

    async def prime(self) -> None:
        """Read the priming event a stream of a 2025-11-25 session starts with (SEP-1699)."""
        lines = [await self._lines.__anext__() for _ in range(4)]
        assert lines[0].startswith("id: "), lines
        assert lines[1:] == ["retry: 1000", "data: ", ""], lines
        self.ids.append(lines[0].removeprefix("id: "))

    async def rest(self) -> list[str]:
        return [line async for line in self._lines]


@asynccontextmanager
async def listen(client: McpHttp) -> AsyncIterator[Stream]:
    headers = client.headers(accept="text/event-stream")
    async with client.http.stream("GET", client.url, headers=headers) as response:
        stream = Stream(response)
        await stream.prime()
        yield stream


async def test_list_changes_and_resource_updates_go_on_the_get_stream() -> None:
    server = small_server()
    async with serve(server) as served:
        client = await session(served)
        subscribed = await client.request("resources/subscribe", {"uri": "test://watched"})
        assert subscribed.status == 200, subscribed.messages
        with trio.fail_after(TIMEOUT):
            async with listen(client) as stream:

                @server.tool()
                def added() -> str:
                    """A tool that came later."""
                    return "late"

                message = await stream.next()
                assert message == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                assert await server.resource_updated("test://watched") == 1
                message = await stream.next()
                assert message["method"] == "notifications/resources/updated"
                assert message["params"] == {"uri": "test://watched"}


async def test_messages_wait_for_the_stream_and_the_oldest_are_dropped_past_the_bound() -> None:
    server = small_server()
    # Each log message below encodes to 111 bytes: 4 fit in 450.
    async with serve(server, max_unsent_bytes=450) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            for i in range(10):
                params = {"level": "info", "logger": "test", "data": f"message {i}"}
                assert await server._hub.notify_all("notifications/message", params) == 1
            async with listen(client) as stream:
                notice = await stream.next()
                kept = [(await stream.next())["params"]["data"] for _ in range(4)]
    assert notice["method"] == "notifications/message"
    assert notice["params"]["level"] == "warning"
    assert notice["params"]["data"].startswith("6 notification(s) of the server's were dropped")
    assert kept == ["message 6", "message 7", "message 8", "message 9"]


async def test_a_roots_change_runs_the_handler_which_asks_on_the_get_stream() -> None:
    server = small_server()
    seen: list[list[str]] = []
    handled = trio.Event()

    @server.on_roots_changed
    async def reread(ctx: Context) -> None:
        seen.append([root.uri for root in await ctx.list_roots()])
        handled.set()

    async with serve(server) as served:
        client = await session(served, {"roots": {"listChanged": True}})
        with trio.fail_after(TIMEOUT):
            async with listen(client) as stream:
                assert (await client.notify("notifications/roots/list_changed")).status == 202
                asked = await stream.next()
                assert asked["method"] == "roots/list"
                roots = {"roots": [{"uri": "file:///new"}]}
                answer = {"jsonrpc": "2.0", "id": asked["id"], "result": roots}
                assert (await client.post(answer)).status == 202
                await handled.wait()
    assert seen == [["file:///new"]]


async def test_a_request_that_cannot_be_queued_fails_the_task_that_asks() -> None:
    server = small_server()
    failed: list[str] = []
    handled = trio.Event()

    @server.on_roots_changed
    async def reread(ctx: Context) -> None:
        try:
            await ctx.list_roots()
        except ConnectionClosed as exc:
            failed.append(str(exc))
        handled.set()

    async with serve(server, max_unsent_bytes=20) as served:
        client = await session(served, {"roots": {"listChanged": True}})
        with trio.fail_after(TIMEOUT):
            assert (await client.notify("notifications/roots/list_changed")).status == 202
            await handled.wait()
    assert len(failed) == 1
    assert "max_unsent_bytes" in failed[0]
    assert "'roots/list'" in failed[0]


async def test_a_new_stream_replaces_the_open_one_and_the_refusals() -> None:
    server = small_server()
    async with serve(server) as served:
        client = await session(served)
        get = client.headers(accept="text/event-stream")
        with trio.fail_after(TIMEOUT):
            async with listen(client) as first, listen(client) as second:
                assert await first.rest() == []  # the first stream ended
                params = {"level": "info", "data": "to the new stream"}
                assert await server._hub.notify_all("notifications/message", params) == 1
                assert (await second.next())["params"] == params
            missing = {k: v for k, v in get.items() if k != "mcp-session-id"}
            no_session = await served.http.get(served.url, headers=missing)
            unknown = await served.http.get(served.url, headers={**get, "mcp-session-id": "x"})
            json_only = await served.http.get(
                served.url, headers={**get, "accept": "application/json"}
            )
    assert no_session.status_code == 400
    assert unknown.status_code == 404
    assert json_only.status_code == 406


async def test_a_quiet_stream_carries_keep_alive_comments_and_ends_with_its_session() -> None:
    async with serve(small_server(), keep_alive_interval=0.05) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with listen(client) as stream:
                lines = stream._lines
                assert await lines.__anext__() == ": keep-alive"
                assert await lines.__anext__() == ""
                assert (await client.delete()).status_code == 204
                rest = await stream.rest()
    assert set(rest) <= {": keep-alive", ""}


async def test_shutdown_ends_an_open_stream() -> None:
    server = small_server()
    # So that ending at all shows the stream did not hold it.
    server.timeouts = Timeouts(shutdown=LONG_GRACE)
    async with serve(server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with listen(client) as stream:
                served.stop.set()
                assert await stream.rest() == []
            await served.finished.wait()


async def test_a_stream_hung_up_at_shutdown_first_sends_what_was_queued() -> None:
    """What the server queued as it began to stop (its tasks' ends) is not dropped: the
    stream ends once it has taken it; a closed session's queue goes with the session."""
    outbox = Outbox(1 << 20)
    stream = outbox.listen()
    await outbox.put({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {}})
    outbox.hang_up()
    with trio.fail_after(TIMEOUT):
        assert b"notifications/tasks" in (await outbox.next(stream) or b"")
        assert await outbox.next(stream) is None
    closed = Outbox(1 << 20)
    stream = closed.listen()
    await closed.put({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {}})
    closed.close()
    assert await closed.next(stream) is None


async def test_a_quiet_post_stream_carries_keep_alive_comments() -> None:
    async with serve(small_server(), keep_alive_interval=0.05) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            reply = await client.call("slow")
    assert reply.kind == "text/event-stream"
    assert reply.result["content"][0]["text"] == "done"
    assert ": keep-alive\n\n" in reply.response.text


# -- event ids and the priming event (SEP-1699) -------------------------------------------------


async def test_without_an_event_store_a_post_stream_carries_no_ids_and_no_priming_event() -> None:
    # Nothing could resume it: a call whose stream broke is cancelled
    # (`transports/http/streamable` Rule 3).
    async with serve(small_server(), event_store=None) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            reply = await client.call("slow")
    assert reply.kind == "text/event-stream"
    assert reply.response.text.startswith("event: message\ndata: ")
    assert "id: " not in reply.response.text
    assert reply.result["content"][0]["text"] == "done"


async def test_the_get_stream_is_primed_and_its_ids_go_on_across_reconnections() -> None:
    server = small_server()
    async with serve(server) as served:
        client = await session(served)
        params = {"level": "info", "data": "hello"}
        with trio.fail_after(TIMEOUT):
            async with listen(client) as stream:
                assert await server._hub.notify_all("notifications/message", params) == 1
                await stream.next()
            async with listen(client) as again:
                assert await server._hub.notify_all("notifications/message", params) == 1
                await again.next()
    assert stream.ids == ["0-1", "0-2"]
    assert again.ids == ["0-3", "0-4"]


async def test_a_last_event_id_of_the_get_stream_reopens_it_an_unknown_one_is_refused() -> None:
    server = small_server()
    async with serve(server) as served:
        client = await session(served)
        get = client.headers(accept="text/event-stream")
        with trio.fail_after(TIMEOUT):
            async with served.http.stream("GET", served.url, headers=get) as response:
                first = Stream(response)
                await first.prime()
            async with served.http.stream(
                "GET", served.url, headers={**get, "last-event-id": "0-1"}
            ) as response:
                reopened = Stream(response)
                params = {"level": "info", "data": "hello"}
                assert await server._hub.notify_all("notifications/message", params) == 1
                fresh = await reopened.next()  # nothing replayed before it
            refused = {
                last: await served.http.get(served.url, headers={**get, "last-event-id": last})
                for last in ("1-2", "0", "x-1", "0-1-2", "9" * 50)
            }
    assert first.ids == ["0-1"]
    # Resumed: no new priming event (the client keeps its last id), nothing to replay, the next
    # event numbered on.
    assert reopened.ids == ["0-2"]
    assert fresh["params"] == params
    assert reopened.retry  # but the reconnection delay again
    for last, reply in refused.items():
        assert reply.status_code == 400, last
        assert "Unknown Last-Event-ID" in reply.json()["error"]["message"]


async def test_the_get_stream_of_an_older_revision_has_no_priming_event_and_no_ids() -> None:
    server = small_server()
    async with serve(server) as served:
        client = served.client("2025-06-18")
        assert (await client.initialize()).status == 200
        get = client.headers(accept="text/event-stream")
        with trio.fail_after(TIMEOUT):
            async with served.http.stream("GET", served.url, headers=get) as response:
                params = {"level": "info", "data": "hello"}
                assert await server._hub.notify_all("notifications/message", params) == 1
                lines = response.aiter_lines()
                first = [await lines.__anext__() for _ in range(3)]
    assert first[0] == "event: message"
    assert json.loads(first[1].removeprefix("data: "))["params"] == params
    assert first[2] == ""
