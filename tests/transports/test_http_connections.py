"""HTTP connections under hostile or careless clients, over real loopback sockets.

Request framing (smuggling), deadlines on what a client must send, the bound on open
connections and running out of file descriptors. The clients here write raw bytes, since what
they send is what no well-behaved HTTP library would. Nothing waits on the clock to prove speed:
a deadline shortened for the test is awaited under a far longer `fail_after`.
"""

from __future__ import annotations

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
