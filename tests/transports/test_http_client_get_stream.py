"""The client reopens the session's GET stream when it ends or breaks (spec 2025-11-25).

Bare HTTP/1.1 servers on loopback script the GET streams byte by byte: one that breaks mid-body
(a chunked body cut short), one that ends after each priming event (SEP-1699 polling), one that
always fails, one that forgets the session. The client listens because it has a roots handler;
what the server says after a break must still reach the list-change handler.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from tests.helpers import LATEST
from tests.http_helpers import json_response, read_request, response_head, serve, serve_bare
from tests.timing import scaled
from tests.transports.test_http_stream import small_server
from trio_mcp import Asking, Root, open_client
from trio_mcp.http import RetryPolicy
from trio_mcp.transports.http import client as http_client
from trio_mcp.transports.http.client import GET_ATTEMPTS

TIMEOUT = scaled(60)
INIT = {
    "protocolVersion": LATEST,
    "capabilities": {"tools": {"listChanged": True}},
    "serverInfo": {"name": "bare"},
}
ROOTS = [Root("file:///work")]
# Fast failures: the waits between attempts stay short.
QUICK = RetryPolicy(base_delay=0.001, max_delay=0.01)
CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def _json(message: Any) -> bytes:
    return json_response(message, "mcp-session-id: s1")


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _event(event_id: str, message: Any) -> bytes:
    return f"id: {event_id}\nevent: message\ndata: {json.dumps(message)}\n\n".encode()


def _priming(event_id: str) -> bytes:
    return f"id: {event_id}\nretry: 10\ndata: \n\n".encode()


SSE_HEAD = response_head("200 OK", "content-type: text/event-stream", "transfer-encoding: chunked")

#: Writes the answer to the n-th GET (0 first) on the stream.
GetScript = Callable[[int, trio.SocketStream], Awaitable[None]]


class BareServer:
    """Answers initialize and notifications; each GET as `script` says; DELETE with 204."""

    def __init__(self, script: GetScript) -> None:
        self.script = script
        #: The Last-Event-ID of each GET, in order (None when it had none).
        self.gets: list[str | None] = []
        self.got = trio.Event()

    async def handle(self, stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if request is None:
            return
        headers, body = request
        if not body:
            if headers.get("accept") == "text/event-stream":
                assert headers["mcp-session-id"] == "s1"
                assert headers["mcp-protocol-version"] == LATEST
                self.gets.append(headers.get("last-event-id"))
                self.got.set()
                await self.script(len(self.gets) - 1, stream)
            else:  # the DELETE that ends the session
                await stream.send_all(response_head("204 No Content"))
            await stream.aclose()
            return
        message = json.loads(body)
        if "id" in message:
            result = INIT if message["method"] == "initialize" else {}
            await stream.send_all(_json({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        else:
            await stream.send_all(response_head("202 Accepted", "content-length: 0"))
        await stream.aclose()

    async def until_the_tools_change(self) -> None:
        """Serve a client that listens (it has a roots handler) until it hears the tools change."""
        heard = trio.Event()
        with trio.fail_after(TIMEOUT):
            async with (
                serve_bare(self.handle) as url,
                open_client(url, asking=Asking(roots=ROOTS)) as client,
            ):
                client.on_list_changed("tools", lambda kind: heard.set())
                await heard.wait()

    async def until_the_client_gives_up(self, caplog: pytest.LogCaptureFixture, said: str) -> None:
        """Serve a client that listens until it logs that it gave up on the GET stream (`said`);
        its connection, unharmed, still answers a ping."""
        caplog.set_level(logging.DEBUG, "trio_mcp")
        with trio.fail_after(TIMEOUT):
            async with (
                serve_bare(self.handle) as url,
                open_client(url, asking=Asking(roots=ROOTS), retry=QUICK) as client,
            ):
                await _gave_up(caplog, said)
                await client.ping()

    async def wait_gets(self, count: int) -> None:
        while len(self.gets) < count:
            self.got = trio.Event()
            await self.got.wait()


async def _gave_up(caplog: pytest.LogCaptureFixture, text: str) -> None:
    while not any(text in record.message for record in caplog.records):  # noqa: ASYNC110
        await trio.sleep(0.01)


async def test_a_broken_get_stream_is_reopened_from_the_last_event_id() -> None:
    async def script(n: int, stream: trio.SocketStream) -> None:
        if n == 0:
            # Primed, one event, then the connection drops in the middle of the body.
            await stream.send_all(
                SSE_HEAD + _chunk(_priming("0-1") + _event("0-2", {**CHANGED, "id": None}))
            )
            await stream.send_all(b"ff\r\nid: 0-")
        else:
            await stream.send_all(SSE_HEAD + _chunk(_priming("0-3") + _event("0-4", CHANGED)))
            await trio.sleep_forever()

    server = BareServer(script)
    await server.until_the_tools_change()
    assert server.gets == [None, "0-2"]


async def test_each_reopening_that_brings_an_event_id_starts_the_count_again() -> None:
    # SEP-1699 polling: the server ends every stream after its priming event. Past
    # GET_ATTEMPTS such reopenings the client still comes back, as each made progress.
    polls = GET_ATTEMPTS + 2

    async def script(n: int, stream: trio.SocketStream) -> None:
        body = _priming(f"0-{n + 1}")
        if n == polls:
            body += _event(f"0-{n + 2}", CHANGED)
        await stream.send_all(SSE_HEAD + _chunk(body) + b"0\r\n\r\n")

    server = BareServer(script)
    await server.until_the_tools_change()
    assert server.gets == [None] + [f"0-{n}" for n in range(1, polls + 1)]


@pytest.mark.parametrize("how", ["refused", "empty", "dropped"])
async def test_reopening_without_progress_stops_after_a_bounded_number_of_attempts(
    how: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_client, "DEFAULT_RETRY", 0.01)  # these servers name no `retry`

    async def script(n: int, stream: trio.SocketStream) -> None:
        if how == "refused":
            await stream.send_all(response_head("500 Oops", "content-length: 0"))
        elif how == "empty":
            await stream.send_all(SSE_HEAD + b"0\r\n\r\n")
        # "dropped": the connection closes before any answer

    server = BareServer(script)
    await server.until_the_client_gives_up(caplog, "gave up on the GET stream")
    assert server.gets == [None] * GET_ATTEMPTS
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.message for r in warnings]


@pytest.mark.parametrize(("status", "text"), [("404 Not Found", "no longer knows"), ("405 No", "")])
async def test_a_404_or_405_ends_the_get_stream_at_once(
    status: str, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def script(n: int, stream: trio.SocketStream) -> None:
        await stream.send_all(response_head(status, "content-length: 0"))

    server = BareServer(script)
    await server.until_the_client_gives_up(caplog, text or "offers no GET stream")
    assert server.gets == [None]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_trio_mcp_s_own_server_hears_the_client_come_back() -> None:
    # Another GET of the session takes the client's stream's place (one GET stream at a time:
    # `transports/http/streamable`); the client reopens it, and a list change made meanwhile
    # still reaches its handler.
    server = small_server()
    heard = trio.Event()
    with trio.fail_after(TIMEOUT):
        async with (
            serve(server, retry_interval=0.05) as served,
            open_client(
                served.url,
                asking=Asking(roots=ROOTS),
            ) as client,
        ):
            client.on_list_changed("tools", lambda kind: heard.set())
            headers = {
                "accept": "text/event-stream",
                "mcp-session-id": client.session_id or "",
                "mcp-protocol-version": LATEST,
            }
            async with served.http.stream("GET", served.url, headers=headers) as taken:
                assert taken.status_code == 200
                lines = taken.aiter_lines()
                assert (await lines.__anext__()).startswith("id: 0-")
            # Only the client's stream can carry it now, once the client is back.
            server.add_tool(lambda: "new", name="new", description="New")
            await heard.wait()


async def test_a_client_without_handlers_listens_once_it_registers_a_callback() -> None:
    # Handshake era: the list-change callback opens the GET stream; what the server said
    # meanwhile waited in the session's queue.
    server = small_server()
    heard = trio.Event()
    with trio.fail_after(TIMEOUT):
        async with serve(server) as served, open_client(served.url) as client:
            client.on_list_changed("tools", lambda kind: heard.set())
            server.add_tool(lambda: "new", name="new", description="New")
            await heard.wait()
