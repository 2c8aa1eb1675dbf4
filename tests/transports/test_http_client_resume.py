"""The client resumes a request's event stream (spec 2025-11-25 Resumability, SEP-1699 polling).

A bare HTTP/1.1 server on loopback plays the server's part exactly: the POST's stream carries a
priming event (an id, a `retry` time, no data) and closes without the answer; the answer comes
on the GET that names the last event id.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from tests.http_helpers import json_response, read_request, response_head, serve, serve_bare
from tests.timing import scaled
from trio_mcp import Context, Progress, RemoteProtocolError, Server, open_client
from trio_mcp.transports.http.client import SseDecoder, SseEvent

TIMEOUT = scaled(60)
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}


def _json(message: Any) -> bytes:
    return json_response(message, "mcp-session-id: s1")


class PollingServer:
    """Closes each call's stream after a priming event; answers on GET with Last-Event-ID."""

    def __init__(self, *, priming: bytes, resume_status: str = "200 OK") -> None:
        self.priming = priming
        self.resume_status = resume_status
        self.pending: Any = None
        self.closed_at: float | None = None
        self.resumes: list[tuple[float, str]] = []

    async def handle(self, stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if request is None:
            return
        headers, body = request
        await self.handle_parsed(stream, headers, body)

    async def handle_parsed(
        self, stream: trio.SocketStream, headers: dict[str, str], body: bytes
    ) -> None:
        if not body:
            last = headers.get("last-event-id")
            if last is None:  # the DELETE that ends the session
                await stream.send_all(response_head("204 No Content"))
            else:
                self.resumes.append((trio.current_time(), last))
                if self.resume_status != "200 OK":
                    await stream.send_all(response_head(self.resume_status, "content-length: 0"))
                else:
                    answer = {
                        "jsonrpc": "2.0",
                        "id": self.pending["id"],
                        "result": {"content": [{"type": "text", "text": "resumed"}]},
                    }
                    await stream.send_all(
                        response_head("200 OK", "content-type: text/event-stream")
                        + f"id: e2\ndata: {json.dumps(answer)}\n\n".encode()
                    )
            await stream.aclose()
            return
        message = json.loads(body)
        if message.get("method") == "tools/call":
            self.pending = message
            await stream.send_all(
                response_head("200 OK", "content-type: text/event-stream", "mcp-session-id: s1")
                + self.priming
            )
            self.closed_at = trio.current_time()
        elif "id" in message:
            result = INIT if message["method"] == "initialize" else {}
            await stream.send_all(_json({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        else:
            await stream.send_all(response_head("202 Accepted", "content-length: 0"))
        await stream.aclose()


async def test_a_stream_closed_before_its_answer_is_resumed_after_the_retry_time() -> None:
    server = PollingServer(priming=b"id: e1\nretry: 300\ndata: \n\n")
    with trio.fail_after(TIMEOUT):
        async with serve_bare(server.handle) as url, open_client(url) as client:
            result = await client.call_tool("slow")
    assert result.text == "resumed"
    assert [last for _, last in server.resumes] == ["e1"]
    assert server.closed_at is not None
    assert server.resumes[0][0] - server.closed_at >= 0.25  # it waited for `retry: 300`


async def test_a_stream_without_an_event_id_cannot_be_resumed() -> None:
    server = PollingServer(priming=b": nothing to resume from\n\n")
    with trio.fail_after(TIMEOUT):
        async with serve_bare(server.handle) as url, open_client(url) as client:
            with pytest.raises(RemoteProtocolError, match="without answering"):
                await client.call_tool("slow")
    assert server.resumes == []


async def test_a_server_that_refuses_the_resume_fails_the_call_clearly() -> None:
    server = PollingServer(priming=b"id: e1\nretry: 10\ndata: \n\n", resume_status="405 Nope")
    with trio.fail_after(TIMEOUT):
        async with serve_bare(server.handle) as url, open_client(url) as client:
            with pytest.raises(RemoteProtocolError, match="could not resume") as caught:
                await client.call_tool("slow")
    assert "HTTP 405" in str(caught.value)
    assert len(server.resumes) == 1


class BreakingServer(PollingServer):
    """Breaks each call's stream mid-body, after a progress event; answers on GET."""

    def __init__(self) -> None:
        super().__init__(priming=b"")
        self.last_ids: list[str | None] = []

    async def handle(self, stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if request is None:
            return
        headers, body = request
        message = json.loads(body) if body else None
        if message is not None and message.get("method") == "tools/call":
            self.pending = message
            token = message["params"]["_meta"]["progressToken"]
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 2},
            }
            events = b"id: e1\nretry: 10\ndata: \n\n" + (
                f"id: e2\nevent: message\ndata: {json.dumps(progress)}\n\n".encode()
            )
            await stream.send_all(
                response_head(
                    "200 OK", "content-type: text/event-stream", "transfer-encoding: chunked"
                )
                + f"{len(events):x}\r\n".encode()
                + events
                + b"\r\nff\r\nid: e3\nda"  # cut short in the middle of the next event
            )
            await stream.aclose()
            return
        if message is None and headers.get("last-event-id") is not None:
            self.last_ids.append(headers.get("last-event-id"))
        await PollingServer.handle_parsed(self, stream, headers, body)


async def test_a_stream_broken_mid_call_is_resumed_from_the_last_event_id() -> None:
    server = BreakingServer()
    progress: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with serve_bare(server.handle) as url, open_client(url) as client:
            result = await client.call_tool("slow", progress=progress.append)
    assert result.text == "resumed"
    assert server.last_ids == ["e2"]
    assert [p.progress for p in progress] == [1]


def test_an_event_id_counts_once_its_event_is_whole() -> None:
    decoder = SseDecoder()
    assert decoder.line("id: e1") is None
    assert decoder.last_id != "e1"  # not yet: the event may still be cut short
    assert decoder.line("retry: 10") is None
    assert decoder.line("data: ") is None
    assert decoder.line("") == SseEvent("message", "")  # priming: an id, empty data
    assert (decoder.last_id, decoder.retry_ms) == ("e1", 10)
    for line in ("id: e2", "data: {}"):
        decoder.line(line)
    assert decoder.line("") == SseEvent("message", "{}")
    decoder.line("id: e3")
    decoder.line("data: {cut")
    decoder.reconnected()  # the connection broke: e3 was never received whole
    assert decoder.last_id == "e2"
    decoder.line("data: []")
    assert decoder.line("") == SseEvent("message", "[]")
    assert decoder.last_id == "e2"  # an event without an id keeps the last one


async def test_trio_mcp_s_own_server_closes_the_stream_mid_call_and_the_client_follows() -> None:
    # SEP-1699 polling against the event store: what the call says after its stream closed,
    # progress and the result, comes on the GET that resumes it.
    server = Server("closing")
    proceed = trio.Event()

    @server.tool()
    async def long(ctx: Context) -> str:
        """Report, close the stream, report again, answer."""
        await ctx.report_progress(1, 2)
        assert await ctx.close_sse_stream()
        await proceed.wait()
        await ctx.report_progress(2, 2)
        return "long done"

    progress: list[Progress] = []

    def on_progress(update: Progress) -> None:
        progress.append(update)
        if len(progress) == 1:
            proceed.set()

    with trio.fail_after(TIMEOUT):
        async with serve(server, retry_interval=0.05) as served, open_client(served.url) as client:
            result = await client.call_tool("long", progress=on_progress)
    assert result.text == "long done"
    assert [(p.progress, p.total) for p in progress] == [(1, 2), (2, 2)]
