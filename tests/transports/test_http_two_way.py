"""The server asks the client over HTTP: requests on the call's POST stream, answers POSTed.

Streamable HTTP (handshake era, with sessions): a request a tool sends while its call runs goes
on that call's SSE stream, and the client's answer comes back as a POST of its own (202). Legacy
HTTP+SSE carries the request on its one event stream and takes the answer at its messages
endpoint. Where nothing can carry the answer back (stateless mode, 2026-07-28) the tool gets a
`LocalProtocolError` saying why. Everything here is raw httpx on a loopback port: the wire is
what is checked, not a client's reading of it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx
import pytest
import trio

from tests.helpers import LATEST, init_params
from tests.http_helpers import McpHttp, Served, serve
from tests.schema_check import validate_server_message
from tests.timing import scaled
from trio_mcp import ClientTimeoutError, ConnectionClosed, Context, RequestError, Server, Timeouts
from trio_mcp._exceptions import LocalProtocolError
from trio_mcp._runtime.session import SessionRuntime

TIMEOUT = scaled(60)
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


class Watch:
    """What the tools of `asking_server` saw: a call cancelled, a call that ended."""

    def __init__(self) -> None:
        self.cancelled = trio.Event()
        self.ended = trio.Event()


def asking_server(watch: Watch | None = None) -> Server:
    """Tools that send `roots/list` to the client: plain, reporting errors, with a timeout."""
    server = Server("two-way")
    seen = watch or Watch()

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for its roots; note a cancellation."""
        try:
            return json.dumps(await ctx._request("roots/list", {}))
        except trio.Cancelled:
            seen.cancelled.set()
            raise
        finally:
            seen.ended.set()

    @server.tool()
    async def catching(ctx: Context) -> dict[str, Any]:
        """Ask; report the error the request met, field by field."""
        try:
            await ctx._request("roots/list", {})
        except RequestError as exc:
            return {"type": "RequestError", "code": exc.code, "message": exc.message}
        except LocalProtocolError as exc:
            return {"type": "LocalProtocolError", "message": str(exc)}
        return {"type": None}

    @server.tool()
    async def impatient(ctx: Context, seconds: float) -> str:
        """Ask, giving the client `seconds` to answer (the runtime's requester's timeout)."""
        requester = ctx._requester
        assert requester is not None
        try:
            await requester("roots/list", {}, timeout=seconds)
        except ClientTimeoutError as exc:
            return f"timed out: {exc}"
        return "answered"

    @server.tool()
    async def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


async def session(served: Served) -> McpHttp:
    client = served.client()
    reply = await client.initialize()
    assert reply.status == 200, reply.response.text
    return client


class Events:
    """The JSON-RPC messages of one SSE response, read one event at a time."""

    def __init__(
        self,
        response: httpx.Response,
        lines: AsyncIterator[str] | None = None,
        version: str = LATEST,
    ) -> None:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        self._lines = lines or response.aiter_lines()
        self._version = version
        self.read: list[Any] = []

    async def next(self) -> Any:
        lines = [await self._lines.__anext__()]
        while lines[-1]:
            lines.append(await self._lines.__anext__())
        if lines[0].startswith("id: ") and lines[-2] == "data: ":  # the priming event
            return await self.next()
        event, data, blank = lines[0], lines[-2], lines[-1]
        assert (event, blank) == ("event: message", ""), (event, blank)
        assert len(lines) == 3 or lines[1].startswith("id: "), lines
        assert data.startswith("data: "), data
        message = json.loads(data.removeprefix("data: "))
        validate_server_message(message, self._version)
        self.read.append(message)
        return message

    async def rest(self) -> list[str]:
        """The lines left until the stream ends."""
        return [line async for line in self._lines]


@asynccontextmanager
async def call_stream(
    client: McpHttp, name: str, arguments: dict[str, Any] | None = None
) -> AsyncIterator[tuple[dict[str, Any], Events]]:
    """POST a tools/call and hold its answer open: an event stream, once a request comes first."""
    request = client.make_request("tools/call", {"name": name, "arguments": arguments or {}})
    async with client.http.stream(
        "POST", client.url, headers=client.headers(), json=request
    ) as response:
        yield request, Events(response)


async def answer(client: McpHttp, asked: dict[str, Any], result: Any) -> None:
    """POST the client's answer to a request of the server's: accepted, nothing in return."""
    reply = await client.post({"jsonrpc": "2.0", "id": asked["id"], "result": result})
    assert reply.status == 202
    assert reply.response.content == b""


def assert_asks_for_roots(message: dict[str, Any]) -> None:
    assert message["method"] == "roots/list"
    assert message["params"] == {}
    assert type(message["id"]) is int


# -- Streamable HTTP, with sessions ---------------------------------------------------------------


async def test_a_request_of_the_server_goes_on_the_calls_stream_before_its_result() -> None:
    async with serve(asking_server()) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with call_stream(client, "ask") as (call, events):
                asked = await events.next()
                assert_asks_for_roots(asked)
                await answer(client, asked, ROOTS)
                result = await events.next()
                assert result["id"] == call["id"]
                assert json.loads(result["result"]["content"][0]["text"]) == ROOTS
                assert await events.rest() == []  # the result ends the stream
            # The session goes on.
            echoed = await client.call("echo", {"text": "after"})
    assert echoed.kind == "application/json"
    assert echoed.result["content"][0]["text"] == "after"


async def test_two_calls_asking_at_once_each_get_their_own_answer() -> None:
    async with serve(asking_server()) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with (
                call_stream(client, "ask") as (first_call, first),
                call_stream(client, "ask") as (second_call, second),
            ):
                first_asked, second_asked = await first.next(), await second.next()
                assert first_asked["id"] != second_asked["id"]
                # Answered in the other order: routed by id, not by arrival.
                await answer(client, second_asked, {"roots": [{"uri": "file:///second"}]})
                await answer(client, first_asked, {"roots": [{"uri": "file:///first"}]})
                first_result, second_result = await first.next(), await second.next()
    assert first_result["id"] == first_call["id"]
    assert second_result["id"] == second_call["id"]
    assert json.loads(first_result["result"]["content"][0]["text"]) == {
        "roots": [{"uri": "file:///first"}]
    }
    assert json.loads(second_result["result"]["content"][0]["text"]) == {
        "roots": [{"uri": "file:///second"}]
    }


async def test_an_error_answer_raises_request_error_in_the_tool() -> None:
    async with serve(asking_server()) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with call_stream(client, "catching") as (call, events):
                asked = await events.next()
                error = {"code": -32042, "message": "no roots here"}
                reply = await client.post({"jsonrpc": "2.0", "id": asked["id"], "error": error})
                assert reply.status == 202
                result = await events.next()
    assert result["id"] == call["id"]
    assert result["result"]["structuredContent"] == {
        "type": "RequestError",
        "code": -32042,
        "message": "no roots here",
    }


async def test_a_timeout_raises_in_the_tool_and_cancels_the_request_on_the_stream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serve(asking_server()) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with call_stream(client, "impatient", {"seconds": 0.2}) as (call, events):
                asked = await events.next()
                cancelled = await events.next()
                result = await events.next()
                assert await events.rest() == []
            # An answer that comes too late is accepted and dropped.
            await answer(client, asked, ROOTS)
    assert cancelled == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": asked["id"], "reason": "cancelled by the server"},
    }
    assert result["id"] == call["id"]
    text = result["result"]["content"][0]["text"]
    assert text.startswith("timed out: ")
    assert "roots/list" in text
    assert f"ignored a response to unknown request id {asked['id']}" in caplog.text


async def test_without_an_event_store_closing_the_stream_cancels_the_tool_and_its_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # With a store the call would run on for the client to resume (test_http_resume.py).
    watch = Watch()
    server = asking_server(watch)
    async with serve(server, event_store=None) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with call_stream(client, "ask") as (call, events):
                asked = await events.next()
            # Leaving the block closed the stream before its end: the call is cancelled.
            await watch.ended.wait()
            assert watch.cancelled.is_set()
            runtime = cast(SessionRuntime, next(iter(server._hub)))
            assert runtime.peer.waiting == 0  # the server's request is forgotten
            assert runtime.in_flight == 0
            caplog.clear()
            await answer(client, asked, ROOTS)  # too late: dropped
            # The session lives on, and the cancelled call's id is free again.
            again = await client.post(
                {**call, "params": {"name": "echo", "arguments": {"text": "again"}}}
            )
    assert again.result["content"][0]["text"] == "again"
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warned if r.name.startswith("trio_mcp")] == [
        f"ignored a response to unknown request id {asked['id']}"
    ]


async def test_shutdown_while_the_tool_waits_answers_the_call_once() -> None:
    server = asking_server()
    server.timeouts = Timeouts(shutdown=0.2)
    async with serve(server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            async with call_stream(client, "ask") as (call, events):
                asked = await events.next()
                served.stop.set()
                cancelled = await events.next()
                final = await events.next()
                assert await events.rest() == []
            await served.finished.wait()
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == asked["id"]
    assert final["id"] == call["id"]
    assert final["error"]["code"] == -32000
    assert final["error"]["message"].startswith("Server shutting down")
    assert [m for m in events.read if m.get("id") == call["id"]] == [final]


async def test_a_request_in_a_batch_goes_on_the_batchs_stream() -> None:
    async with serve(asking_server()) as served:
        client = served.client("2025-03-26")  # the one revision with batches
        assert (await client.initialize()).status == 200
        batch = [
            client.make_request("tools/call", {"name": "ask", "arguments": {}}),
            client.make_request("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        ]
        with trio.fail_after(TIMEOUT):
            async with client.http.stream(
                "POST", client.url, headers=client.headers(), json=batch
            ) as response:
                events = Events(response, version="2025-03-26")
                asked = await events.next()
                assert_asks_for_roots(asked)
                await answer(client, asked, ROOTS)
                answers = await events.next()
                assert await events.rest() == []
    by_id = {a["id"]: a["result"]["content"][0]["text"] for a in answers}
    assert json.loads(by_id[batch[0]["id"]]) == ROOTS
    assert by_id[batch[1]["id"]] == "hi"


async def test_a_context_kept_beyond_its_call_cannot_ask() -> None:
    server = Server("two-way")
    kept: list[Context] = []

    @server.tool()
    async def keep(ctx: Context) -> str:
        """Hand the test this call's context."""
        kept.append(ctx)
        await trio.lowlevel.checkpoint()
        return "kept"

    async with serve(server) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            assert (await client.call("keep")).result["content"][0]["text"] == "kept"
            with pytest.raises(ConnectionClosed, match="stream of the request"):
                await kept[0]._request("roots/list", {})
        runtime = cast(SessionRuntime, next(iter(server._hub)))
        assert runtime.peer.waiting == 0


# -- where nothing can carry the answer back -----------------------------------------------------


async def test_stateless_mode_refuses_and_says_why() -> None:
    async with serve(asking_server(), stateless=True) as served:
        client = await session(served)
        with trio.fail_after(TIMEOUT):
            reply = await client.call("catching")
    assert reply.kind == "application/json"  # nothing went before the result
    found = reply.result["structuredContent"]
    assert found["type"] == "LocalProtocolError"
    assert "stateless mode" in found["message"]
    assert "could never reach it" in found["message"]
    assert "serve with sessions" in found["message"]


# -- legacy HTTP+SSE -----------------------------------------------------------------------------


async def test_over_legacy_sse_the_request_comes_on_the_stream_and_the_answer_is_posted() -> None:
    async with (
        serve(asking_server()) as served,
        served.http.stream("GET", served.base + "/sse") as stream,
    ):
        with trio.fail_after(TIMEOUT):
            lines = stream.aiter_lines()
            event, data, _ = [await lines.__anext__() for _ in range(3)]
            assert event == "event: endpoint"
            endpoint = served.base + data.removeprefix("data: ")
            events = Events(stream, lines)

            async def post(message: dict[str, Any]) -> None:
                assert (await served.http.post(endpoint, json=message)).status_code == 202

            await post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()})
            assert (await events.next())["id"] == 1
            await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
            await post({**call, "params": {"name": "ask", "arguments": {}}})
            asked = await events.next()
            assert_asks_for_roots(asked)
            await post({"jsonrpc": "2.0", "id": asked["id"], "result": ROOTS})
            result = await events.next()
    assert result["id"] == 2
    assert json.loads(result["result"]["content"][0]["text"]) == ROOTS
