"""Resumable call streams of Streamable HTTP: the event store, redelivery, SSE polling.

In a session under 2025-11-25 or later, with the default event store, a POST's SSE stream
starts with a priming event and numbers its events `<stream>-<n>`; when it breaks (the client
vanished, or the tool closed it with `ctx.close_sse_stream()`), the call runs on and a `GET`
with `Last-Event-ID` replays what followed that event and follows the call to its answer
(spec 2025-11-25, transports: resumability and redelivery; SEP-1699). Raw httpx on loopback.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trio_mcp
from tests.helpers import LATEST, MODERN
from tests.http_helpers import McpHttp, serve
from tests.timing import scaled
from tests.transports.test_http_stream import Stream, session
from trio_mcp import Context, Server
from trio_mcp.http import MemoryEventStore
from trio_mcp.transports.http.replay import parse_event_id

TIMEOUT = scaled(60)


class Held:
    """A server whose tools wait for the test: `held` logs, then waits; `closing` closes."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.finished = trio.Event()
        self.cancelled = trio.Event()
        self.closed: list[bool] = []
        self.server = Server("resume")
        held = self

        @self.server.tool()
        async def hold(ctx: Context) -> str:
            """Say so, wait for the test, answer."""
            try:
                await ctx.warning("started")
                await held.release.wait()
                await ctx.warning("released")
            except trio.Cancelled:
                held.cancelled.set()
                raise
            held.finished.set()
            return "finished"

        @self.server.tool()
        async def closing(ctx: Context) -> str:
            """Close the stream, then answer once the test says so."""
            held.closed.append(await ctx.close_sse_stream())
            await held.release.wait()
            held.finished.set()
            return f"closed={held.closed[-1]}"

        @self.server.tool()
        async def ask(ctx: Context) -> str:
            """Ask the client for a word."""
            answer = await ctx.elicit("A word?", {"type": "object", "properties": {}})
            held.finished.set()
            return type(answer).__name__


def get_headers(client: McpHttp, last: str) -> dict[str, str]:
    return {**client.headers(accept="text/event-stream"), "last-event-id": last}


async def call_until(client: McpHttp, tool: str, events: int) -> tuple[Any, Stream]:
    """Call `tool`, read its priming event and `events` events, then break the connection."""
    request = client.make_request("tools/call", {"name": tool, "arguments": {}})
    headers = client.headers()
    async with client.http.stream("POST", client.url, headers=headers, json=request) as response:
        stream = Stream(response)
        await stream.prime()
        for _ in range(events):
            await stream.next()
    return request, stream


async def resume(client: McpHttp, last: str) -> tuple[list[Any], Stream]:
    """GET with `Last-Event-ID: last`; the messages until the stream ends."""
    async with client.http.stream("GET", client.url, headers=get_headers(client, last)) as reply:
        stream = Stream(reply)
        messages = []
        try:
            while True:
                messages.append(await stream.next())
        except StopAsyncIteration:
            pass
    return messages, stream


async def test_a_call_whose_stream_broke_runs_on_and_its_result_is_replayed() -> None:
    held = Held()
    async with serve(held.server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            request, broken = await call_until(client, "hold", 1)
            held.release.set()
            await held.finished.wait()
            messages, resumed = await resume(client, broken.ids[-1])
    assert broken.ids == ["1-1", "1-2"]  # the priming event, the first log message
    assert not held.cancelled.is_set()
    assert [m.get("method") for m in messages] == ["notifications/message", None]
    assert messages[0]["params"]["data"] == "released"
    assert messages[1]["id"] == request["id"]
    assert messages[1]["result"]["content"][0]["text"] == "finished"
    assert resumed.ids == ["1-3", "1-4"]
    assert resumed.retry  # the reconnection delay comes first


async def test_a_resumed_stream_follows_the_call_until_its_answer() -> None:
    held = Held()
    async with serve(held.server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            request, broken = await call_until(client, "hold", 1)
            headers = get_headers(client, broken.ids[-1])
            async with client.http.stream("GET", client.url, headers=headers) as reply:
                stream = Stream(reply)
                held.release.set()  # the tool goes on only once the client has come back
                released = await stream.next()
                answer = await stream.next()
                rest = await stream.rest()
    assert released["params"]["data"] == "released"
    assert answer["id"] == request["id"]
    assert rest == []  # the stream ends with the answer
    assert stream.ids == ["1-3", "1-4"]


async def test_the_client_may_resume_again_from_any_event_it_saw() -> None:
    held = Held()
    async with serve(held.server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            await call_until(client, "hold", 1)
            held.release.set()
            await held.finished.wait()
            from_priming, _ = await resume(client, "1-1")
            from_released, _ = await resume(client, "1-3")
            after_answer = await client.http.get(client.url, headers=get_headers(client, "1-4"))
    assert [m.get("method") for m in from_priming] == [
        "notifications/message",
        "notifications/message",
        None,
    ]
    assert [m.get("method") for m in from_released] == [None]
    # Everything was delivered and nothing more will come: an error ends the client's retries.
    assert after_answer.status_code == 410
    assert "nothing follows" in after_answer.json()["error"]["message"]


async def test_close_sse_stream_ends_the_post_stream_and_the_answer_comes_on_resumption() -> None:
    held = Held()
    async with serve(held.server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            reply = await client.post(client.make_request("tools/call", {"name": "closing"}))
            held.release.set()
            await held.finished.wait()
            messages, _ = await resume(client, "1-1")
    # SEP-1699 polling: the stream is the priming event alone (an id, `retry:`, empty data).
    assert reply.status == 200
    assert reply.response.headers["content-type"] == "text/event-stream"
    assert reply.response.text == "id: 1-1\nretry: 1000\ndata: \n\n"
    assert held.closed == [True]
    assert messages[-1]["result"]["content"][0]["text"] == "closed=True"


async def test_close_sse_stream_after_events_ends_the_stream_where_it_is() -> None:
    server = Server("closing-late")
    proceed = trio.Event()

    @server.tool()
    async def late(ctx: Context) -> str:
        """Log, close, log again, answer."""
        await ctx.warning("before")
        assert await ctx.close_sse_stream()
        assert await ctx.close_sse_stream()  # closing twice is harmless
        await proceed.wait()
        await ctx.warning("after")
        return "late"

    async with serve(server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            reply = await client.post(client.make_request("tools/call", {"name": "late"}))
            proceed.set()
            messages, _ = await resume(client, "1-2")
    assert [m["params"]["data"] for m in reply.messages] == ["before"]
    assert [m.get("method") for m in messages] == ["notifications/message", None]
    assert messages[0]["params"]["data"] == "after"


@pytest.mark.parametrize("where", ["no-event-store", "stateless", "2025-06-18", "in-memory"])
async def test_close_sse_stream_does_nothing_where_no_resumption_is_possible(where: str) -> None:
    held = Held()
    held.release.set()
    if where == "in-memory":
        async with trio_mcp.testing.connect(held.server) as memory:
            result = await memory.call_tool("closing", {})
        assert result.text == "closed=False"
        return
    options: dict[str, Any] = {"event_store": None} if where == "no-event-store" else {}
    if where == "stateless":
        options["stateless"] = True
    async with serve(held.server, **options) as served:
        client = served.client("2025-06-18" if where == "2025-06-18" else LATEST)
        if where != "stateless":
            assert (await client.initialize()).status == 200
        with trio.fail_after(TIMEOUT):
            reply = await client.call("closing")
    assert reply.result["content"][0]["text"] == "closed=False"
    assert held.closed == [False]


async def test_close_sse_stream_in_a_2026_request_does_nothing() -> None:
    held = Held()
    held.release.set()
    async with serve(held.server) as served:
        client = served.client(MODERN)
        with trio.fail_after(TIMEOUT):
            meta: dict[str, Any] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            reply = await client.call("closing", None, **meta)
    # Its client takes a closed stream as the request's cancellation: nothing to resume.
    assert reply.result["content"][0]["text"] == "closed=False"


async def test_a_request_of_the_server_made_while_the_stream_was_broken_is_replayed() -> None:
    held = Held()
    async with serve(held.server) as served:
        client = await session(served, {"elicitation": {}})
        with trio.fail_after(TIMEOUT):
            request, broken = await call_until(client, "ask", 1)  # the question itself
            headers = get_headers(client, "1-1")  # as if the question never arrived
            async with client.http.stream("GET", client.url, headers=headers) as reply:
                stream = Stream(reply)
                question = await stream.next()
                answered = await client.post(
                    {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}
                )
                answer = await stream.next()
    assert broken.ids == ["1-1", "1-2"]
    assert question["method"] == "elicitation/create"
    assert stream.ids == ["1-2", "1-3"]  # the same event, under the same id
    assert answered.status == 202
    assert answer["id"] == request["id"]
    assert answer["result"]["content"][0]["text"] == "DeclinedElicitation"


async def test_a_cancelled_call_cannot_be_resumed() -> None:
    held = Held()
    async with serve(held.server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            request, broken = await call_until(client, "hold", 1)
            cancel = {"requestId": request["id"], "reason": "test"}
            assert (await client.notify("notifications/cancelled", cancel)).status == 202
            await held.cancelled.wait()
            reply = await client.http.get(client.url, headers=get_headers(client, "1-2"))
    assert broken.ids[-1] == "1-2"
    assert reply.status_code == 410


async def test_unknown_streams_and_other_sessions_streams_are_refused() -> None:
    held = Held()
    held.release.set()
    async with serve(held.server) as served:
        mine = await session(served)
        other = await session(served)
        with trio.fail_after(TIMEOUT):
            answered = await mine.post(mine.make_request("tools/call", {"name": "closing"}))
            await held.finished.wait()
            never = await mine.http.get(mine.url, headers=get_headers(mine, "7-1"))
            # Stream numbers belong to a session: the other session has no stream 1.
            foreign = await other.http.get(other.url, headers=get_headers(other, "1-1"))
    assert answered.status == 200
    for reply in (never, foreign):
        assert reply.status_code == 400
        assert "Unknown Last-Event-ID" in reply.json()["error"]["message"]


async def test_events_the_store_dropped_cannot_be_replayed() -> None:
    held = Held()
    store = MemoryEventStore(max_bytes=300)  # room for about two short events
    async with serve(held.server, event_store=store) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            _, broken = await call_until(client, "hold", 1)
            held.release.set()
            await held.finished.wait()
            gone = await client.http.get(client.url, headers=get_headers(client, "1-1"))
            messages, _ = await resume(client, "1-3")
    assert broken.ids == ["1-1", "1-2"]
    assert gone.status_code == 410
    assert "no longer kept" in gone.json()["error"]["message"]
    assert [m.get("method") for m in messages] == [None]  # the newest ones are still there
    assert store.kept_bytes <= store.max_bytes


async def test_the_get_stream_replays_what_followed_the_last_event_id() -> None:
    held = Held()
    server = held.server
    async with serve(server) as served:
        client = await session(served)
        params = {"level": "info", "data": "hello"}
        with trio.fail_after(TIMEOUT):
            headers = client.headers(accept="text/event-stream")
            async with client.http.stream("GET", client.url, headers=headers) as reply:
                first = Stream(reply)
                await first.prime()
                for n in range(3):
                    await server._hub.notify_all("notifications/message", {**params, "n": n})
                    await first.next()
            async with client.http.stream(
                "GET", client.url, headers=get_headers(client, first.ids[1])
            ) as reply:
                again = Stream(reply)
                replayed = [await again.next(), await again.next()]
                await server._hub.notify_all("notifications/message", {**params, "n": 3})
                fresh = await again.next()
    assert first.ids == ["0-1", "0-2", "0-3", "0-4"]
    assert [m["params"]["n"] for m in replayed] == [1, 2]
    assert fresh["params"]["n"] == 3
    assert again.ids == ["0-3", "0-4", "0-5"]


async def test_the_official_sdk_client_gets_the_answer_of_a_closed_stream() -> None:
    from mcp import ClientSession  # noqa: PLC0415 - the peer, only where it is used
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415

    held = Held()
    held.release.set()
    async with serve(held.server, retry_interval=0.05) as served:
        with trio.fail_after(TIMEOUT):
            async with (
                streamable_http_client(served.url) as (read, write, *_),
                ClientSession(read, write) as sdk,
            ):
                await sdk.initialize()
                result = await sdk.call_tool("closing", {})
    assert held.closed == [True]
    assert result.content[0].text == "closed=True"  # type: ignore[union-attr]


# -- the store ------------------------------------------------------------------------------


async def test_the_memory_store_numbers_each_stream_and_replays_after_a_number() -> None:
    store = MemoryEventStore()
    assert [await store.append("a", b"x%d" % n) for n in range(3)] == [1, 2, 3]
    assert await store.append("b", b"y") == 1
    assert await store.replay("a", 1) == [(2, b"x1"), (3, b"x2")]
    assert await store.replay("a", 3) == []
    assert await store.replay("a", 4) is None  # never given out
    assert await store.replay("c", 0) is None  # never kept
    assert store.kept_bytes == 4 * 64 + 7


async def test_the_memory_store_drops_oldest_events_of_the_least_recent_stream_first() -> None:
    store = MemoryEventStore(max_bytes=3 * (64 + 10))
    for stream in ("old", "new"):
        await store.append(stream, b"0123456789")
    await store.append("new", b"0123456789")
    await store.append("old", b"0123456789")  # "old" is now the most recently written
    # Over the bound: "new" (written least recently) lost its first event.
    assert await store.replay("new", 0) is None
    assert await store.replay("new", 1) == [(2, b"0123456789")]
    assert await store.replay("old", 0) == [(1, b"0123456789"), (2, b"0123456789")]
    assert store.kept_bytes <= store.max_bytes


async def test_the_memory_store_never_reuses_a_number_after_dropping_a_stream_s_events() -> None:
    store = MemoryEventStore(max_bytes=10)
    assert await store.append("s", b"x" * 100) == 1  # over the bound at once: dropped
    assert await store.replay("s", 0) is None
    assert await store.append("s", b"y") == 2
    assert store.kept_bytes == 0


async def test_the_memory_store_forgets_streams_not_written_for_max_age(
    autojump_clock: trio.abc.Clock,
) -> None:
    store = MemoryEventStore(max_age=60)
    await store.append("quiet", b"x")
    await trio.sleep(30)
    await store.append("busy", b"y")
    await trio.sleep(31)
    assert await store.replay("quiet", 0) is None
    assert await store.replay("busy", 0) == [(1, b"y")]
    assert store.kept_bytes == 64 + 1


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        (b"0-1", (0, 1)),
        (b"12-345", (12, 345)),
        (b"1-", None),
        (b"-1", None),
        (b"a-1", None),
        (b"1-2-3", None),
        (b"1_2", None),
        (b" 1-2", None),
        (b"1" * 30 + b"-" + b"1" * 30, None),
    ],
)
def test_event_ids_are_parsed_strictly(raw: bytes, parsed: tuple[int, int] | None) -> None:
    assert parse_event_id(raw) == parsed
