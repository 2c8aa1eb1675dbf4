"""Test helpers for the HTTP transports: a served app on a loopback port and a raw MCP client.

`serve(...)` runs `serve_http` with port 0 in its own nursery and yields the bound URL with an
httpx client; leaving it sets the shutdown trigger and waits for the server to end. `McpHttp`
speaks Streamable HTTP with plain httpx (no trio-mcp client), decodes JSON and SSE answers,
checks the SSE framing strictly, and keeps every message sent and received so a whole session
can be validated against the official schema (`tests/schema_check.py`). Like a conforming client
it sends a 2026-07-28 request's metadata headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name);
a header given to `post` overrides them. The raw helpers at the end (`raw_post`, `read_response`,
`parse_response`) write and read the bytes of requests no HTTP library would send, and check
that exactly one response came before the server closed.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import h11
import httpx
import trio

import demo_tools
from tests.helpers import LATEST, init_params
from tests.timing import scaled
from trio_mcp import Context, Server
from trio_mcp._core.server_session import requested_version
from trio_mcp._run import serve_http
from trio_mcp.transports.http.app import HttpOptions
from trio_mcp.transports.http.headers import request_headers

ACCEPT = "application/json, text/event-stream"
POST_HEADERS = {"accept": ACCEPT, "content-type": "application/json"}
#: Bounds a test's whole time with a server: starting it, the test's requests, its shutdown.
SERVE_TIMEOUT = scaled(120)


@dataclass
class Served:
    """A running server: `base` is http://127.0.0.1:PORT, `url` its Streamable HTTP endpoint."""

    base: str
    url: str
    http: httpx.AsyncClient
    stop: trio.Event
    #: Set when `serve_http` has returned (after `stop`, once its connections have ended).
    finished: trio.Event

    def client(self, version: str = LATEST, **headers: str) -> McpHttp:
        return McpHttp(self.http, self.url, version, headers)


@asynccontextmanager
async def serve(server: Server | None = None, **options: Any) -> AsyncIterator[Served]:
    """Serve `server` (the demo tools by default) with `HttpOptions(**options)` on port 0."""
    stop = trio.Event()
    finished = trio.Event()

    async def run(task_status: trio.TaskStatus[list[str]]) -> None:
        await serve_http(
            server or demo_tools.build_server(),
            host="127.0.0.1",
            port=0,
            options=HttpOptions(**options),
            shutdown_trigger=stop.wait,
            task_status=task_status,
        )
        finished.set()

    with trio.fail_after(SERVE_TIMEOUT):
        async with trio.open_nursery() as nursery:
            base = (await nursery.start(run))[0]
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
            async with httpx.AsyncClient(timeout=SERVE_TIMEOUT, limits=limits) as http:
                yield Served(base, base + options.get("path", "/mcp"), http, stop, finished)
            stop.set()


def parse_sse(text: str) -> list[Any]:
    """Decode an SSE body of `event: message` events, asserting the exact framing.

    Each event is `event: message`, an optional `id: <id>`, `data: <one line of JSON>` and a
    blank line; a block of one SSE comment line (`: ...`, which clients ignore) is allowed and
    skipped, and so is a priming event (`id:`, `retry:` and empty `data:`) as the first block.
    """
    assert text.endswith("\n\n"), repr(text[-100:])
    messages = []
    for i, block in enumerate(text[:-2].split("\n\n")):
        lines = block.split("\n")
        if len(lines) == 1 and lines[0].startswith(":"):
            continue
        if i == 0 and len(lines) == 3 and lines[0].startswith("id: ") and lines[2] == "data: ":
            assert lines[1].startswith("retry: "), lines
            continue
        if len(lines) == 3:
            assert lines.pop(1).startswith("id: "), block[:200]
        assert len(lines) == 2, f"an event must be two or three lines: {block[:200]!r}"
        assert lines[0] == "event: message", lines[0]
        assert lines[1].startswith("data: "), lines[1][:100]
        messages.append(json.loads(lines[1].removeprefix("data: ")))
    return messages


def decode(response: httpx.Response) -> list[Any]:
    """The JSON-RPC messages an HTTP answer carries (none for an empty body)."""
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("text/event-stream"):
        return parse_sse(response.text)
    if not response.content:
        return []
    assert content_type == "application/json", content_type
    return [json.loads(response.content)]


@dataclass
class Reply:
    """An HTTP answer and the JSON-RPC messages it carried, in order."""

    response: httpx.Response
    messages: list[Any]

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def kind(self) -> str:
        return str(self.response.headers.get("content-type", "")).split(";")[0]

    @property
    def last(self) -> Any:
        return self.messages[-1]

    @property
    def result(self) -> Any:
        assert "result" in self.last, self.last
        return self.last["result"]


@dataclass
class McpHttp:
    """A raw Streamable HTTP client session; `sent` and `received` keep the JSON-RPC traffic."""

    http: httpx.AsyncClient
    url: str
    version: str = LATEST
    extra: dict[str, str] = field(default_factory=dict)
    session_id: str | None = None
    sent: list[Any] = field(default_factory=list)
    received: list[Any] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def headers(self, **more: str) -> dict[str, str]:
        headers = {**POST_HEADERS, "mcp-protocol-version": self.version, **self.extra}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        headers.update(more)
        return headers

    async def post(self, message: Any, **headers: str) -> Reply:
        self.sent.append(message)
        if isinstance(message, dict) and "id" in message and "method" in message:
            # A 2026-07-28 request mirrors its version, method and name into headers.
            version = requested_version(message.get("params"))
            if isinstance(version, str):
                headers = {**request_headers(message, version), **headers}
        response = await self.http.post(self.url, headers=self.headers(**headers), json=message)
        messages = decode(response)
        self.received.extend(messages)
        return Reply(response, messages)

    async def initialize(self) -> Reply:
        message = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "initialize",
            "params": init_params(self.version),
        }
        self.sent.append(message)
        # No MCP-Protocol-Version and no session yet on the initialize request.
        headers = {**POST_HEADERS, **self.extra}
        response = await self.http.post(self.url, headers=headers, json=message)
        reply = Reply(response, decode(response))
        self.received.extend(reply.messages)
        self.session_id = response.headers.get("mcp-session-id")
        if reply.status == 200:
            initialized = await self.notify("notifications/initialized")
            assert initialized.status == 202, initialized.response.text
        return reply

    def make_request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            message["params"] = params
        return message

    async def request(
        self, method: str, params: dict[str, Any] | None = None, **headers: str
    ) -> Reply:
        return await self.post(self.make_request(method, params), **headers)

    async def call(self, name: str, arguments: dict[str, Any] | None = None, **meta: Any) -> Reply:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        return await self.request("tools/call", params)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return await self.post(message)

    async def delete(self) -> httpx.Response:
        return await self.http.delete(self.url, headers=self.headers())


class Gate:
    """Test tools that wait for the test: `test.wait` blocks until `release` is set.

    `started` is set when a call enters, `cancelled` when one is cancelled; `entered` counts
    calls, and `all_in` is set when `expected` calls are inside at once.
    """

    def __init__(self, expected: int = 1) -> None:
        self.started = trio.Event()
        self.release = trio.Event()
        self.cancelled = trio.Event()
        self.all_in = trio.Event()
        self.expected = expected
        self.entered = 0
        self.inside = 0
        self.flooded = 0
        self.flood_ended = trio.Event()

    def server(self, **server_options: Any) -> Server:
        """The demo tools plus `test.wait` and `test.flood`."""
        server = demo_tools.build_server()
        for name, value in server_options.items():
            setattr(server, name, value)
        gate = self

        @server.tool("test.wait", "Wait until the test releases the gate")
        async def wait() -> str:
            gate.entered += 1
            gate.inside += 1
            gate.started.set()
            if gate.inside >= gate.expected:
                gate.all_in.set()
            try:
                await gate.release.wait()
            except trio.Cancelled:
                gate.cancelled.set()
                raise
            finally:
                gate.inside -= 1
            return "released"

        @server.tool("test.flood", "Send 16 KiB progress notifications until cancelled")
        async def flood(ctx: Context, limit: int = 5000) -> int:
            chunk = "x" * 16384
            try:
                while gate.flooded < limit:
                    gate.flooded += 1
                    await ctx.report_progress(gate.flooded, message=chunk)
            except trio.Cancelled:
                gate.cancelled.set()
                raise
            gate.flood_ended.set()
            return gate.flooded

        return server


# -- a bare HTTP/1.1 peer, for servers a test scripts byte by byte ---------------------------------


async def read_request(stream: trio.SocketStream) -> tuple[dict[str, str], bytes] | None:
    """Read one HTTP/1.1 request: its headers (names lower-cased) and its Content-Length body.

    Returns None when the peer closes before a whole head arrived.
    """
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    headers: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode()] = value.strip().decode("latin-1")
    while len(body) < int(headers.get("content-length", "0")):
        body += await stream.receive_some(65536)
    return headers, body


@asynccontextmanager
async def serve_bare(handler: Callable[[trio.SocketStream], Awaitable[None]]) -> AsyncIterator[str]:
    """Serve `handler` (one call per connection) on a free loopback port; yields its /mcp URL."""
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


def response_head(status: str, *headers: str) -> bytes:
    """The head of an HTTP/1.1 response (`status` as "200 OK") that closes its connection."""
    return (
        "\r\n".join([f"HTTP/1.1 {status}", *headers, "connection: close"]) + "\r\n\r\n"
    ).encode()


def http_response(status: str, body: bytes = b"", *headers: str) -> bytes:
    """A whole response: its head, with `headers` and the body's length, then `body`."""
    return response_head(status, *headers, f"content-length: {len(body)}") + body


def json_response(message: Any, *headers: str) -> bytes:
    """A 200 whose body is `message` as JSON."""
    body = json.dumps(message).encode()
    return http_response("200 OK", body, "content-type: application/json", *headers)


# -- raw HTTP/1.1 from the client side, for malformed or stalled requests -------------------------


def host_port(served: Served) -> tuple[str, int]:
    """The served address as (host, port)."""
    host, _, port = served.base.removeprefix("http://").rpartition(":")
    return host, int(port)


def raw_post(
    served: Served | tuple[str, int],
    body: bytes,
    *extra: str,
    path: str = "/mcp",
    version: str = "1.1",
) -> bytes:
    """A POST head with the usual MCP headers and `extra` header lines, then `body`."""
    host, port = host_port(served) if isinstance(served, Served) else served
    lines = [
        f"POST {path} HTTP/{version}",
        f"Host: {host}:{port}",
        f"Accept: {ACCEPT}",
        "Content-Type: application/json",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def raw_ping(served: Served | tuple[str, int]) -> bytes:
    """A whole ping request, as a client of a stateless server sends it."""
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    return raw_post(served, ping, f"MCP-Protocol-Version: {LATEST}", f"Content-Length: {len(ping)}")


async def read_to_eof(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := await stream.receive_some(65536):
        data += chunk
    return data


@dataclass
class RawResponse:
    """One HTTP/1.1 response parsed from raw bytes, and what followed it on the connection."""

    status: int
    headers: dict[str, str]
    body: bytes
    #: Bytes after the response's end (a second response, if any).
    rest: bytes
    #: Whether the server closed the connection right after this response.
    closed: bool


def parse_response(data: bytes) -> RawResponse:
    """The first response in `data`, all the server sent until it closed the connection."""
    response = _parse(data, eof=True)
    assert response is not None, f"no whole response: {data[:200]!r}"
    return response


async def read_response(stream: trio.SocketStream) -> RawResponse:
    """Read one whole response from `stream`, leaving the connection open."""
    data = b""
    while True:
        chunk = await stream.receive_some(65536)
        data += chunk
        response = _parse(data, eof=not chunk)
        if response is not None:
            return response
        assert chunk, f"no whole response: {data[:200]!r}"


def _parse(data: bytes, *, eof: bool) -> RawResponse | None:
    # The first response in `data` as h11 frames it; None while it is not whole yet.
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    if eof:
        conn.receive_data(b"")
    status, headers, body = 0, {}, b""
    event = conn.next_event()
    while not isinstance(event, h11.EndOfMessage):
        if event is h11.NEED_DATA:
            return None
        assert isinstance(event, h11.Response | h11.Data), f"no whole response: {data[:200]!r}"
        if isinstance(event, h11.Response):
            status = event.status_code
            headers = {k.decode(): v.decode("latin-1") for k, v in event.headers}
        else:
            body += event.data
        event = conn.next_event()
    rest, closed = conn.trailing_data
    return RawResponse(status, headers, body, rest, closed)
