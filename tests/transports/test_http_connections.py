"""HTTP connections under hostile or careless clients, over real loopback sockets.

Request framing (smuggling), deadlines on what a client must send, the bound on open
connections and running out of file descriptors. The clients here write raw bytes, since what
they send is what no well-behaved HTTP library would. Nothing waits on the clock to prove speed:
a deadline shortened for the test is awaited under a far longer `fail_after`.
"""

from __future__ import annotations

import contextlib
import json

import pytest
import trio

import demo_tools
from tests.helpers import LATEST
from tests.http_helpers import (
    SERVE_TIMEOUT,
    host_port,
    parse_response,
    raw_post,
    read_to_eof,
    serve,
)

# -- request smuggling ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "length"),
    [("1.1", True), ("1.0", False)],
    ids=["cl-te", "1.0-te"],
)
async def test_ambiguous_framing_is_refused_and_the_connection_closed(
    version: str, length: bool
) -> None:
    # A front proxy that frames by Content-Length forwards this as one request; a server that
    # frames it as chunked (as RFC 9112 6.1 says it must) would see a second request in the
    # rest of the body, and run it unless it closes the connection after answering. In an
    # HTTP/1.0 request, Transfer-Encoding alone is as suspect (same section): the server's
    # HTTP parser (h11) refuses that one before the application sees it.
    ran: list[str] = []
    server = demo_tools.build_server()

    @server.tool("test.record", "Record that the call ran")
    def record() -> str:
        ran.append("record")
        return "ran"

    async with serve(server, stateless=True) as served:
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "test.record"},
        }
        smuggled = raw_post(
            served,
            json.dumps(call).encode(),
            f"MCP-Protocol-Version: {LATEST}",
            f"Content-Length: {len(json.dumps(call))}",
        )
        first = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(first), first) + smuggled
        framing = [f"Content-Length: {len(body)}"] if length else []
        request = raw_post(
            served,
            body,
            f"MCP-Protocol-Version: {LATEST}",
            *framing,
            "Transfer-Encoding: chunked",
            version=version,
        )
        with trio.fail_after(SERVE_TIMEOUT):
            stream = await trio.open_tcp_stream(*host_port(served))
            async with stream:
                await stream.send_all(request)
                data = await read_to_eof(stream)
        # The server still serves a well-formed request.
        calm = await served.http.post(
            served.url,
            headers={
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
                "mcp-protocol-version": LATEST,
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
    response = parse_response(data)
    assert response.status == 400
    assert response.headers["connection"] == "close"
    if length:
        assert "Transfer-Encoding" in json.loads(response.body)["error"]["message"]
    assert (response.rest, response.closed) == (b"", True)  # one answer, then the end
    assert ran == []
    assert calm.status_code == 200


# -- deadlines on what a client sends ------------------------------------------------------------


async def test_a_stalled_body_is_answered_408_and_closed_and_others_are_served() -> None:
    async with serve(body_idle_timeout=1) as served:
        # Each sends its head and one byte of a 100-byte body, then nothing: a slow-loris
        # client that would hold its connection, and its file descriptor, for ever.
        stalled = [await trio.open_tcp_stream(*host_port(served)) for _ in range(3)]
        for stream in stalled:
            await stream.send_all(raw_post(served, b"{", "Content-Length: 100"))
        client = served.client()
        assert (await client.initialize()).status == 200
        added = await client.call("calculator.add", {"a": 1, "b": 2})
        answers = []
        for stream in stalled:
            async with stream:
                with trio.fail_after(SERVE_TIMEOUT):
                    answers.append(parse_response(await read_to_eof(stream)))
    assert added.result["structuredContent"] == {"result": 3}
    for answer in answers:
        assert answer.status == 408
        assert answer.headers["connection"] == "close"
        assert "stalled" in json.loads(answer.body)["error"]["message"]
        assert (answer.rest, answer.closed) == (b"", True)


async def test_a_trickling_body_is_cut_at_the_whole_body_deadline() -> None:
    # One byte at a time, each well inside the stall deadline: only the whole-body one ends it.
    async with serve(body_timeout=1, body_idle_timeout=60) as served:
        stream = await trio.open_tcp_stream(*host_port(served))
        async with stream:
            await stream.send_all(raw_post(served, b"", "Content-Length: 100000"))
            data = b""
            with trio.fail_after(SERVE_TIMEOUT):
                while not data:
                    with contextlib.suppress(trio.BrokenResourceError):
                        await stream.send_all(b" ")
                    with trio.move_on_after(0.05):
                        data = await stream.receive_some(65536)
                data += await read_to_eof(stream)
    answer = parse_response(data)
    assert answer.status == 408
    assert "not received within 1 s" in json.loads(answer.body)["error"]["message"]
    assert (answer.rest, answer.closed) == (b"", True)


async def test_a_slow_request_head_and_an_idle_connection_are_closed() -> None:
    async with serve(keep_alive_timeout=0.5, stateless=True) as served:
        half = await trio.open_tcp_stream(*host_port(served))
        idle = await trio.open_tcp_stream(*host_port(served))
        async with half, idle:
            await half.send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
            await idle.send_all(
                raw_post(
                    served,
                    ping,
                    f"MCP-Protocol-Version: {LATEST}",
                    f"Content-Length: {len(ping)}",
                )
            )
            with trio.fail_after(SERVE_TIMEOUT):
                unanswered = await read_to_eof(half)
                answered = parse_response(await read_to_eof(idle))
    assert unanswered == b""  # no answer to a request that never arrived whole
    assert answered.status == 200  # answered, then closed once idle
    assert (answered.rest, answered.closed) == (b"", True)
