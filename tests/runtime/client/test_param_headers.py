"""The client's half of `x-mcp-header` (spec 2026-07-28, Streamable HTTP: Custom Headers from
Tool Parameters): which tools it lists, which `Mcp-Param-*` headers its calls carry, and how
it answers HeaderMismatch; and that nothing changes in the handshake era or off HTTP.

The peer is `tests/fixtures/header_server.py`, a scripted server (not trio-mcp's), behind a bare
HTTP/1.1 server on a loopback port that keeps each request's headers, behind an in-memory
channel, or run as a stdio subprocess. Waits are bounded by `trio.fail_after`.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.fixtures import header_server
from tests.fixtures.header_server import HEADER_MISMATCH, MODERN, HeaderServer
from tests.helpers import scripted
from tests.http_helpers import read_request, serve_bare
from tests.timing import scaled
from trio_mcp import RequestError, open_client

#: Bounds any one test's waits on a socket or a subprocess.
TIMEOUT = scaled(60)
HANDSHAKE = "2025-11-25"
REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request"}


def http_answer(status: int, message: Any) -> bytes:
    body = b"" if message is None else json.dumps(message).encode()
    lines = [f"HTTP/1.1 {status} {REASONS[status]}", "connection: close"]
    if body:
        lines.append("content-type: application/json")
    lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def handle(server: HeaderServer, stream: trio.SocketStream) -> None:
    """One request per connection: read it, let `server` answer, close."""
    request = await read_request(stream)
    if request is None:
        return
    headers, body = request
    if body:
        status, message = server.answer(json.loads(body), headers)
    else:  # a DELETE ending a session (none here: the server names no session)
        status, message = 204, None
    await stream.send_all(http_answer(status, message))
    await stream.aclose()


@asynccontextmanager
async def bare_http() -> AsyncIterator[tuple[str, HeaderServer]]:
    server = HeaderServer()
    async with serve_bare(functools.partial(handle, server)) as url:
        yield url, server


def param_headers(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name.startswith("mcp-param-")}


def last_call_headers(server: HeaderServer) -> dict[str, str]:
    calls = [headers for headers, message in server.seen if message.get("method") == "tools/call"]
    return param_headers(calls[-1])


# Arguments of `route` -> the Mcp-Param-* headers of its call. Encoded values are the spec's
# own examples (Streamable HTTP, Value Encoding).
CALLS: list[tuple[dict[str, Any], dict[str, str]]] = [
    (
        {"region": "us-west1", "count": 42, "dry": True, "where": {"zone": "b"}, "query": "q"},
        {
            "mcp-param-region": "us-west1",
            "mcp-param-count": "42",
            "mcp-param-dry-run": "true",
            "mcp-param-zone": "b",
        },
    ),
    ({"region": "Hello, 世界"}, {"mcp-param-region": "=?base64?SGVsbG8sIOS4lueVjA==?="}),
    ({"region": " padded "}, {"mcp-param-region": "=?base64?IHBhZGRlZCA=?="}),
    ({"region": "line1\nline2"}, {"mcp-param-region": "=?base64?bGluZTEKbGluZTI=?="}),
    ({"region": "=?base64?literal?="}, {"mcp-param-region": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="}),
    ({"count": -7, "dry": False}, {"mcp-param-count": "-7", "mcp-param-dry-run": "false"}),
    ({"count": 42.0}, {"mcp-param-count": "42"}),  # JSON Schema counts 42.0 as an integer
    ({"count": 2**60}, {"mcp-param-count": str(2**60)}),  # the server judges the argument
    ({"count": 4.5, "region": ["r"]}, {}),  # no header form: left to argument validation
    ({"region": None, "count": None, "where": {"zone": None}}, {}),  # null: no header
    ({"query": "only unmarked"}, {}),  # absent: no header
    ({"where": "not an object"}, {}),  # nothing at the path
]


async def test_streamable_http_calls_carry_the_marked_arguments_as_headers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_mcp.client")
    with trio.fail_after(TIMEOUT):
        async with (
            bare_http() as (url, server),
            open_client(url, protocol_version=MODERN) as client,
        ):
            tools = await client.list_tools()
            # The tool marking a number is left out, with a warning naming it and why.
            assert [tool.name for tool in tools] == ["route", "plain"]
            warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert len(warnings) == 1, warnings
            assert "'bad.number'" in warnings[0]
            assert "ratio" in warnings[0]
            assert "not of type integer, string or boolean" in warnings[0]

            for arguments, expected in CALLS:
                result = await client.call_tool("route", arguments)
                assert json.loads(result.text) == arguments
                assert last_call_headers(server) == expected, arguments
            # The standard headers are still there, and an unmarked tool gets no parameter header.
            await client.call_tool("plain", {"region": "us-west1"})
            headers = server.seen[-1][0]
            assert headers["mcp-method"] == "tools/call"
            assert headers["mcp-name"] == "plain"
            assert param_headers(headers) == {}


async def test_a_header_mismatch_lists_the_tools_again_and_retries_once() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            bare_http() as (url, server),
            open_client(url, protocol_version=MODERN) as client,
        ):
            # Listed before the server marked `region`: the first call sends no header for it.
            unmarked = HeaderServer().tools[2]
            server.tools = [{**unmarked, "name": "route"}]
            await client.list_tools()
            server.tools = HeaderServer().tools
            server.refuse = "region-header"
            before = len(server.seen)

            result = await client.call_tool("route", {"region": "eu"})
            assert json.loads(result.text) == {"region": "eu"}
            calls = server.seen[before:]
            assert [message["method"] for _, message in calls] == [
                "tools/call",
                "tools/list",
                "tools/call",
            ]
            assert param_headers(calls[0][0]) == {}
            assert param_headers(calls[2][0]) == {"mcp-param-region": "eu"}

            # A second mismatch is the caller's to hear: one list, one retry, no more.
            server.refuse = "always"
            before = len(server.seen)
            with pytest.raises(RequestError) as info:
                await client.call_tool("route", {"region": "eu"})
            assert info.value.code == HEADER_MISMATCH
            assert server.methods()[before:] == ["tools/call", "tools/list", "tools/call"]


async def test_the_handshake_era_over_http_ignores_the_annotations(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_mcp.client")
    with trio.fail_after(TIMEOUT):
        async with (
            bare_http() as (url, server),
            open_client(url, protocol_version=HANDSHAKE) as client,
        ):
            assert client.protocol_version == HANDSHAKE
            tools = await client.list_tools()
            assert [tool.name for tool in tools] == ["route", "bad.number", "plain"]
            await client.call_tool("route", {"region": "us-west1", "count": 1})
            assert last_call_headers(server) == {}
            # HeaderMismatch belongs to 2026-07-28: here it is raised at once.
            server.refuse = "always"
            before = len(server.seen)
            with pytest.raises(RequestError):
                await client.call_tool("route", {"region": "us-west1"})
            assert server.methods()[before:] == ["tools/call"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@asynccontextmanager
async def in_memory(**options: Any) -> AsyncIterator[Any]:
    server = HeaderServer()

    async def answer(message: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        _, reply = server.answer(message, {})
        if reply is not None:
            await send(reply)

    async with scripted(answer, **options) as client:
        yield client


@asynccontextmanager
async def over(kind: str) -> AsyncIterator[Any]:
    if kind == "memory":
        async with in_memory(protocol_version=MODERN) as client:
            yield client
    else:
        command = [sys.executable, header_server.__file__]
        async with open_client(command, protocol_version=MODERN) as client:
            yield client


@pytest.mark.parametrize("kind", ["memory", "stdio"])
async def test_off_http_the_annotations_change_nothing(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_mcp.client")
    with trio.fail_after(TIMEOUT):
        async with over(kind) as client:
            assert client.protocol_version == MODERN
            tools = await client.list_tools()
            assert [tool.name for tool in tools] == ["route", "bad.number", "plain"]
            result = await client.call_tool("bad.number", {"ratio": 0.5})
            assert json.loads(result.text) == {"ratio": 0.5}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
