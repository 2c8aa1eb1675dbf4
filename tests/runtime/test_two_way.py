"""Two-way requests: a server session asks the client and awaits the answer.

The server side (`SessionRuntime.request`, reached by a tool through the private
`Context._request`) and the client side (handlers in `Client._connection.handlers`, run in tasks
of their own), both on the one peer engine (`_runtime/peer`, tested alone in `test_peer`), over
memory channels, in-process. Time is the `autojump_clock`'s: a test that would
deadlock fails at its `fail_after` instead of hanging, and no test sleeps to wait for anything.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from tests.helpers import open_memory_peer, scripted
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import (
    Client,
    ClientTimeoutError,
    ConnectionClosed,
    Context,
    Limits,
    RemoteProtocolError,
    RequestError,
    Server,
    open_client,
)
from trio_mcp._core.jsonrpc import Request
from trio_mcp._core.peer import CANCELLED
from trio_mcp._core.server_session import RequestScope
from trio_mcp._exceptions import LocalProtocolError, reraise_lone
from trio_mcp._runtime.client import open_session
from trio_mcp._runtime.session import SessionRuntime
from trio_mcp.transports import memory_channel_pair
from trio_mcp.transports.links import ChannelLink

# Virtual seconds (autojump_clock): far longer than anything here takes when it works.
TIMEOUT = scaled(60)
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


def asking_server() -> Server:
    """A server whose `ask` tool sends `roots/list` to the client and returns what it got."""
    server = Server("two-way")

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for its roots."""
        return json.dumps(await ctx._request("roots/list", {}))

    @server.tool()
    async def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


class _TappedLink(ChannelLink):
    """A channel link that keeps every message the client sends."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.sent: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any], *, retry_safe: bool = False) -> None:
        self.sent.append(message)
        await super().send(message, retry_safe=retry_safe)


@asynccontextmanager
async def tapped(server: Server) -> AsyncIterator[tuple[Client, _TappedLink]]:
    """What `open_client(server)` does, with a tap on the client's side of the wire."""
    client_end, server_end = memory_channel_pair()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_connection, server_end.receive, server_end.send)
            link = _TappedLink(client_end.send, client_end.receive)
            async with open_session(link) as client:
                yield client, link
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        reraise_lone(group)


def answers_to(link: _TappedLink, request_id: Any) -> list[dict[str, Any]]:
    """What the client answered a server request with (its replies carry no method)."""
    return [m for m in link.sent if "method" not in m and m.get("id") == request_id]


# -- a: a tool asks, the client answers --------------------------------------------------------


async def test_a_tool_gets_the_clients_answer(autojump_clock: trio.testing.MockClock) -> None:
    asked: list[Any] = []

    async def roots(params: dict[str, Any]) -> Any:
        asked.append(params)
        return ROOTS

    with trio.fail_after(TIMEOUT):
        async with open_client(asking_server()) as client:
            client._connection.handlers["roots/list"] = roots
            result = await client.call_tool("ask")
    assert not result.is_error, result.text
    assert json.loads(result.text) == ROOTS
    assert asked == [{}]


# -- b: error answers ---------------------------------------------------------------------------


def catching_server() -> Server:
    """A server whose `ask` tool reports the RequestError its request met, field by field."""
    server = Server("two-way")

    @server.tool()
    async def ask(ctx: Context) -> dict[str, Any]:
        """Ask the client for its roots; report the error it answers with."""
        try:
            await ctx._request("roots/list")
        except RequestError as exc:
            return {"code": exc.code, "message": exc.message, "data": exc.data}
        return {"code": None}

    return server


async def caught_by_the_tool(handler: Callable[[dict[str, Any]], Awaitable[Any]] | None) -> Any:
    """Call `ask` on `catching_server()`, `handler` answering its roots/list (none: the method
    has no handler): what the tool reports of the error it met."""
    with trio.fail_after(TIMEOUT):
        async with open_client(catching_server()) as client:
            if handler is not None:
                client._connection.handlers["roots/list"] = handler
            result = await client.call_tool("ask")
    return result.structured


async def test_an_error_answer_raises_request_error_in_the_tool(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def refuse(params: dict[str, Any]) -> Any:
        raise RequestError("no roots here", -32042, {"why": "test"})

    caught = await caught_by_the_tool(refuse)
    assert caught == {
        "code": -32042,
        "message": "no roots here",
        "data": {"why": "test"},
    }


async def test_a_failing_handler_is_answered_with_an_internal_error(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(params: dict[str, Any]) -> Any:
        raise ValueError("the disk is gone")

    caught = await caught_by_the_tool(broken)
    assert caught is not None
    assert caught["code"] == -32603
    message = caught["message"]
    assert message == "Internal error in roots/list: ValueError: the disk is gone"
    assert "Traceback" not in message
    assert "Traceback" in caplog.text  # the traceback stays on the client's side, in its log


async def test_a_handler_raising_a_protocol_error_is_answered_with_its_code(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # One error boundary for both sides (`_dispatch.error_answer`): a `RemoteProtocolError` is
    # its own JSON-RPC error on the client too, as it is on the server.
    async def strict(params: dict[str, Any]) -> Any:
        raise RemoteProtocolError("Invalid params: no cursor here", -32602)

    caught = await caught_by_the_tool(strict)
    assert caught == {
        "code": -32602,
        "message": "Invalid params: no cursor here",
        "data": None,
    }


async def test_an_answer_with_no_json_form_is_answered_with_an_internal_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Found in review: the send of such an answer failed inside the client and the server's
    # request got no answer at all, so the tool waited for ever.
    async def odd(params: dict[str, Any]) -> Any:
        return {"roots": object()}

    caught = await caught_by_the_tool(odd)
    assert caught is not None
    assert caught["code"] == -32603
    assert "no JSON form" in caught["message"]


async def test_methods_without_a_handler_are_still_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    caught = await caught_by_the_tool(None)
    assert caught is not None
    assert caught["code"] == -32601


# -- c: cancellation ---------------------------------------------------------------------------


class _Stuck:
    """A client handler that never answers, and notes how it ended."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.ended = trio.Event()
        self.cancelled = False
        self.params: dict[str, Any] | None = None

    async def __call__(self, params: dict[str, Any]) -> Any:
        self.params = params
        self.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled = True
            raise
        finally:
            self.ended.set()


async def test_a_tool_that_stops_waiting_cancels_the_clients_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("two-way")
    stuck = _Stuck()

    @server.tool()
    async def impatient(ctx: Context) -> str:
        """Ask, but give up after a second."""
        with trio.move_on_after(1):
            await ctx._request("roots/list")
        return "gave up"

    with trio.fail_after(TIMEOUT):
        async with tapped(server) as (client, link):
            seen = _watch_cancellations(client)
            client._connection.handlers["roots/list"] = stuck
            result = await client.call_tool("impatient")
            assert result.text == "gave up"
            await stuck.ended.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert stuck.cancelled
            assert len(seen) == 1
            assert seen[0]["reason"] == "cancelled by the server"
            assert answers_to(link, seen[0]["requestId"]) == []  # spec: no response
            # The connection is fine afterwards, and the server forgot the request.
            await client.ping()
            assert client._connection.engine.peer.inbound_count == 0


def _watch_cancellations(client: Client) -> list[dict[str, Any]]:
    """Record the params of each `notifications/cancelled` the client reads, as it reads it."""
    seen: list[dict[str, Any]] = []
    original = client._connection._notification

    async def notification(message: Any) -> None:
        if message.method == CANCELLED:
            seen.append(message.params)
        await original(message)

    client._connection._notification = notification  # type: ignore[method-assign]
    return seen


async def test_a_cancelled_call_cancels_the_server_request_it_waits_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stuck = _Stuck()
    with trio.fail_after(TIMEOUT):
        async with tapped(asking_server()) as (client, link):
            seen = _watch_cancellations(client)
            client._connection.handlers["roots/list"] = stuck
            with trio.move_on_after(1) as scope:
                await client.call_tool("ask")
            assert scope.cancelled_caught
            await stuck.ended.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert stuck.cancelled
            # The client told the server (its call), the server told the client (its request).
            told_server = [m for m in link.sent if m.get("method") == CANCELLED]
            assert len(told_server) == 1
            assert len(seen) == 1
            assert answers_to(link, seen[0]["requestId"]) == []
            assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"


# -- d: a slow handler delays nothing else -----------------------------------------------------


async def test_a_slow_handler_does_not_delay_other_answers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started = trio.Event()
    finished: list[float] = []

    async def slow_roots(params: dict[str, Any]) -> Any:
        started.set()
        await trio.sleep(1)
        finished.append(trio.current_time())
        return ROOTS

    with trio.fail_after(TIMEOUT):
        async with open_client(asking_server()) as client:
            client._connection.handlers["roots/list"] = slow_roots
            async with trio.open_nursery() as nursery:
                slow: list[Any] = []

                async def ask() -> None:
                    slow.append(await client.call_tool("ask"))

                nursery.start_soon(ask)
                await started.wait()
                before = trio.current_time()
                assert (await client.call_tool("echo", {"text": "quick"})).text == "quick"
                assert trio.current_time() == before  # answered while the handler sleeps
                assert finished == []
    assert finished == [before + 1]
    assert json.loads(slow[0].text) == ROOTS


# -- e: a handler may call the server ----------------------------------------------------------


async def test_a_handler_may_call_the_server(autojump_clock: trio.testing.MockClock) -> None:
    async def roots(params: dict[str, Any]) -> Any:
        inner = await client.call_tool("echo", {"text": "file:///inner"})
        return {"roots": [{"uri": inner.text}]}

    with trio.fail_after(TIMEOUT):
        async with open_client(asking_server()) as client:
            client._connection.handlers["roots/list"] = roots
            result = await client.call_tool("ask")
    assert json.loads(result.text) == {"roots": [{"uri": "file:///inner"}]}


# -- f: the connection ends under a waiting request --------------------------------------------


async def test_the_connection_ending_fails_the_waiting_tool(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("two-way")
    outcome: list[BaseException] = []
    tool_done = trio.Event()

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask, and note how it went."""
        try:
            await ctx._request("roots/list")
        except ConnectionClosed as exc:
            outcome.append(exc)
            raise
        finally:
            tool_done.set()
        return "answered"

    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:
            await peer.start_request("tools/call", {"name": "ask", "arguments": {}})
            asked = await peer.receive()
            assert asked["method"] == "roots/list"
            assert type(asked["id"]) is int
            start = trio.current_time()
            await peer.close()
            await tool_done.wait()
            assert trio.current_time() == start  # at once, not after the shutdown grace
    assert len(outcome) == 1
    assert "closed the connection" in str(outcome[0])


async def test_a_request_after_the_end_fails_at_once() -> None:
    runtime = SessionRuntime(Server(), _never)
    runtime.close("gone")
    with pytest.raises(ConnectionClosed, match="gone"):
        await runtime.request("roots/list")


async def test_a_session_that_ends_fails_what_still_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Found in review: a session ended by cancellation or a crash (not by end of input) left a
    # request to the client waiting for ever, e.g. from a Context kept beyond its call.
    sent: list[dict[str, Any]] = []

    async def record(message: dict[str, Any]) -> None:
        sent.append(message)

    runtime = SessionRuntime(Server(), record)
    outcome: list[BaseException] = []

    async def ask() -> None:
        try:
            await runtime.request("roots/list")
        except ConnectionClosed as exc:
            outcome.append(exc)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            assert [message["method"] for message in sent] == ["roots/list"]
            runtime.end()
    assert len(outcome) == 1
    assert "the session ended" in str(outcome[0])


async def _never(message: dict[str, Any]) -> None:
    raise AssertionError(f"nothing may be sent: {message}")


# -- carriers: what the transport gives ---------------------------------------------------------


async def test_a_carrier_that_refuses_says_why_and_leaves_nothing_pending() -> None:
    # Where the client's answer could not come back (stateless Streamable HTTP), the transport
    # gives a carrier that refuses: its reason is the tool's error.
    async def refuse(message: dict[str, Any]) -> None:
        raise LocalProtocolError(f"cannot send {message['method']!r}: no way back")

    runtime = SessionRuntime(Server())
    with pytest.raises(LocalProtocolError, match="no way back"):
        await runtime.request("roots/list", carrier=refuse)
    assert runtime.peer.waiting == 0
    assert runtime.session.peer.pending_count == 0


async def test_a_session_without_an_outbox_asks_only_on_a_carrier() -> None:
    runtime = SessionRuntime(Server())  # as a Streamable HTTP session with an id, not attached
    runtime.open()
    try:
        with pytest.raises(LocalProtocolError, match="only on the stream of a request"):
            await runtime.request("roots/list")
    finally:
        runtime.end()
    assert runtime.peer.waiting == 0


async def test_a_request_that_could_not_be_sent_is_not_cancelled() -> None:
    # The stream of a call that has ended, say: the client never saw the request, so it is
    # told nothing more (and nothing raises but the reason the request failed).
    tried: list[dict[str, Any]] = []

    async def gone(message: dict[str, Any]) -> None:
        tried.append(message)
        raise ConnectionClosed("the stream has ended")

    runtime = SessionRuntime(Server())
    runtime.open()
    try:
        with pytest.raises(ConnectionClosed, match="the stream has ended"):
            await runtime.request("roots/list", carrier=gone)
    finally:
        runtime.end()
    assert [message["method"] for message in tried] == ["roots/list"]
    assert runtime.peer.waiting == 0


@pytest.mark.parametrize("send", [_never, None])
async def test_a_2026_07_28_request_may_not_ask_the_client(send: Any) -> None:
    runtime = SessionRuntime(Server(), send)
    runtime.open()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    request = Request(1, "tools/call", {"name": "ask", "_meta": meta})
    try:
        requester = runtime.requester(request, _never)
        with pytest.raises(LocalProtocolError, match="input-required result"):
            await requester("roots/list", {})
    finally:
        runtime.end()
    assert runtime.peer.waiting == 0


async def test_over_streamable_http_a_tool_gets_the_clients_answer() -> None:
    async def roots(params: dict[str, Any]) -> Any:
        return ROOTS

    with trio.fail_after(TIMEOUT):
        async with serve(asking_server()) as served, open_client(served.url) as client:
            client._connection.handlers["roots/list"] = roots
            result = await client.call_tool("ask")
            again = await client.call_tool("ask")  # the session asks as often as it needs
    assert json.loads(result.text) == ROOTS
    assert json.loads(again.text) == ROOTS


async def test_over_streamable_http_a_timeout_cancels_the_clients_handler() -> None:
    server = Server("two-way")
    stuck = _Stuck()

    @server.tool()
    async def impatient(ctx: Context) -> str:
        """Ask, giving the client a fifth of a second."""
        assert ctx._requester is not None
        try:
            await ctx._requester("roots/list", {}, timeout=0.2)
        except ClientTimeoutError:
            return "gave up"
        return "answered"

    with trio.fail_after(TIMEOUT):
        async with serve(server) as served, open_client(served.url) as client:
            client._connection.handlers["roots/list"] = stuck
            result = await client.call_tool("impatient")
            # The cancellation came on the call's stream, before its result.
            await stuck.ended.wait()
    assert result.text == "gave up"
    assert stuck.cancelled


async def test_over_stateless_http_a_tool_learns_why_it_cannot_ask() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            serve(asking_server(), stateless=True) as served,
            open_client(served.url) as client,
        ):
            client._connection.handlers["roots/list"] = _unreachable
            result = await client.call_tool("ask")
    assert result.is_error
    assert "LocalProtocolError" in result.text
    assert "stateless mode" in result.text


async def test_over_legacy_sse_a_tool_gets_the_clients_answer() -> None:
    async def roots(params: dict[str, Any]) -> Any:
        return ROOTS

    async with serve(asking_server()) as served, open_client(served.base + "/sse") as client:
        client._connection.handlers["roots/list"] = roots
        result = await client.call_tool("ask")
    assert json.loads(result.text) == ROOTS


async def _unreachable(params: dict[str, Any]) -> Any:
    raise AssertionError("no request may reach the client")


def test_a_context_without_a_requester_cannot_ask() -> None:
    scope = RequestScope("2025-11-25", None, {}, None, None)
    ctx = Context(request_id=1, tool_name="t", scope=scope, send=_no_notification)
    with pytest.raises(LocalProtocolError, match="no way to reach the client"):
        trio.run(ctx._request, "roots/list")


async def _no_notification(method: str, params: dict[str, Any]) -> None:
    raise AssertionError(method)


# -- the wire: ids, late and stray answers -----------------------------------------------------


async def test_answers_are_routed_by_id_and_strays_dropped(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("two-way")

    @server.tool()
    async def ask_twice(ctx: Context) -> list[Any]:
        """Two requests at once; each gets its own answer."""
        results: list[Any] = [None, None]

        async def one(i: int) -> None:
            results[i] = await ctx._request("roots/list", {"n": i})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, 0)
            nursery.start_soon(one, 1)
        return results

    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:
            call = await peer.start_request("tools/call", {"name": "ask_twice", "arguments": {}})
            first, second = await peer.receive(), await peer.receive()
            assert first["id"] != second["id"]
            # Answer out of order, and throw in an answer nobody waits for.
            await peer.send({"jsonrpc": "2.0", "id": 4242, "result": {}})
            for asked in (second, first):
                reply = {"roots": [{"uri": f"file:///{asked['params']['n']}"}]}
                await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": reply})
            answer = await peer.receive()
    assert answer["id"] == call
    assert answer["result"]["structuredContent"] == {
        "result": [{"roots": [{"uri": "file:///0"}]}, {"roots": [{"uri": "file:///1"}]}]
    }
    assert "ignored a response to unknown request id 4242" in caplog.text


async def test_a_duplicate_server_request_id_is_refused_by_the_client(
    autojump_clock: trio.testing.MockClock,
) -> None:
    answers: list[Any] = []
    stuck = _Stuck()
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}

    async def answer(message: Any, send: Callable[[Any], Any]) -> None:
        if message.get("method") == "initialize":
            await send({"jsonrpc": "2.0", "id": message["id"], "result": init})
        elif message.get("method") == "tools/list":
            await send({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
            await send({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
            # Cancellations of nothing in flight are ignored (spec: unknown ids, wrong types).
            for stray in ("s2", 1, True, None):
                await send({"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": stray}})
            await send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
        elif "id" in message and "method" not in message:
            answers.append(message)

    with trio.fail_after(TIMEOUT):
        async with scripted(answer) as client:
            client._connection.handlers["roots/list"] = stuck
            await client.list_tools()
            await stuck.started.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert client._connection.engine.peer.inbound_in_flight("s1")
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": "s1",
            "error": {
                "code": -32600,
                "message": "Invalid Request: id 's1' is already in use by a request in flight",
            },
        }
    ]
    assert stuck.cancelled  # the client's end cancelled the handler still running


async def test_a_tool_waiting_on_the_client_at_the_in_flight_limit_still_gets_its_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Defect: the reader stopped at `max_in_flight`, so the answer that would free the slot
    was never read (a deadlock). Now only new requests wait; the answer gets through."""
    server = asking_server()
    server.limits = Limits(max_in_flight=1)
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:
            asking = await peer.start_request("tools/call", {"name": "ask", "arguments": {}})
            waiting = await peer.start_request(
                "tools/call", {"name": "echo", "arguments": {"text": "after"}}
            )
            question = await peer.receive()
            assert question["method"] == "roots/list"
            await peer.send({"jsonrpc": "2.0", "id": question["id"], "result": ROOTS})
            answers: dict[Any, str] = {}
            while len(answers) < 2:
                message = await peer.receive()
                answers[message["id"]] = message["result"]["content"][0]["text"]
    assert json.loads(answers[asking]) == ROOTS
    assert answers[waiting] == "after"


# -- d: malformed answers (never answered; the waiter fails at once) ---------------------------

#: An answer carrying both `result` and `error`: no valid response (JSON-RPC 2.0).
BOTH: dict[str, Any] = {"result": ROOTS, "error": {"code": 1, "message": "m"}}


def patient_server() -> Server:
    """A server whose `ask` tool would wait 600 s for the client, and reports what it met."""
    server = Server("two-way")

    @server.tool()
    async def ask(ctx: Context) -> dict[str, Any]:
        """Ask for the roots with the default ask timeout; report what happened."""
        assert ctx._requester is not None
        started = trio.current_time()
        try:
            await ctx._requester("roots/list", {}, timeout=600)
        except RemoteProtocolError as exc:
            return {"error": str(exc), "waited": trio.current_time() - started}
        return {"error": None, "waited": trio.current_time() - started}

    return server


async def test_a_malformed_answer_is_never_answered_and_fails_the_asking_tool_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Defect: the server answered a response carrying both result and error with -32600 (an
    answer in the client's own id space), and the asking tool waited out its whole timeout."""
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(patient_server()) as peer:
            call = await peer.start_request("tools/call", {"name": "ask", "arguments": {}})
            question = await peer.receive()
            assert question["method"] == "roots/list"
            # One malformed answer to nothing of the server's, one to its question.
            await peer.send({"jsonrpc": "2.0", "id": 777, **BOTH})
            await peer.send({"jsonrpc": "2.0", "id": question["id"], **BOTH})
            await peer.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            replies = [await peer.receive(), await peer.receive()]
    by_id = {reply["id"]: reply for reply in replies}
    assert set(by_id) == {"p", call}  # nothing answers 777 nor the question's id
    assert by_id["p"]["result"] == {}
    outcome = by_id[call]["result"]["structuredContent"]
    assert outcome["waited"] == 0  # at once, not after 600 s
    assert "malformed response" in outcome["error"]
    assert "both result and error" in outcome["error"]
    assert "roots/list" in outcome["error"]


async def test_over_streamable_http_a_malformed_answer_is_400_and_fails_the_tool_at_once() -> None:
    """A POSTed malformed response: 400, its error naming no request, and the tool that asked
    fails at once (spec 2025-11-25, Streamable HTTP: a response the server cannot accept)."""
    with trio.fail_after(TIMEOUT):
        async with serve(patient_server()) as served:
            session = served.client()
            assert (await session.initialize()).status == 200
            call = session.make_request("tools/call", {"name": "ask", "arguments": {}})
            async with served.http.stream(
                "POST", served.url, headers=session.headers(), json=call
            ) as stream:
                lines = stream.aiter_lines()
                question = await _next_event(lines)
                assert question["method"] == "roots/list"
                refused = await served.http.post(
                    served.url,
                    headers=session.headers(),
                    json={"jsonrpc": "2.0", "id": question["id"], **BOTH},
                )
                answer = await _next_event(lines)
            stray = await served.http.post(
                served.url, headers=session.headers(), json={"jsonrpc": "2.0", "id": 777, **BOTH}
            )
    assert refused.status_code == 400
    body = refused.json()
    assert "id" not in body
    assert body["error"]["code"] == -32600
    assert "both result and error" in body["error"]["message"]
    assert answer["id"] == call["id"]
    outcome = answer["result"]["structuredContent"]
    assert "malformed response" in outcome["error"]
    assert outcome["waited"] < 10
    assert stray.status_code == 400
    assert "id" not in stray.json()


async def _next_event(lines: AsyncIterator[str]) -> Any:
    async for line in lines:
        if line.startswith("data: ") and line != "data: ":
            return json.loads(line.removeprefix("data: "))
    raise AssertionError("the stream ended")


async def test_a_client_call_answered_malformed_fails_at_once_and_is_not_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The client side: a malformed answer fails the call it names, and the server gets no
    answer to it (the client answers requests only)."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}
    seen: list[Any] = []

    async def answer(message: Any, send: Callable[[Any], Any]) -> None:
        seen.append(message)
        if message.get("method") == "initialize":
            await send({"jsonrpc": "2.0", "id": message["id"], "result": init})
        elif message.get("method") == "tools/list":
            await send({"jsonrpc": "2.0", "id": 777, **BOTH})  # to nothing of the client's
            await send({"jsonrpc": "2.0", "id": message["id"], **BOTH})
        elif message.get("method") == "ping":
            await send({"jsonrpc": "2.0", "id": message["id"], "result": {}})

    with trio.fail_after(TIMEOUT):
        async with scripted(answer) as client:
            started = trio.current_time()
            with pytest.raises(RemoteProtocolError, match="malformed response") as info:
                await client.list_tools()
            assert trio.current_time() == started
            assert "both result and error" in str(info.value)
            await client.ping()
    assert [m.get("method") for m in seen] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "ping",
    ]
