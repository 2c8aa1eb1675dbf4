"""HTTP connections under hostile or careless clients, over real loopback sockets.

Request framing (smuggling), deadlines on what a client must send, the bound on open
connections, running out of file descriptors, and a legacy SSE client that does not read its
stream. Most clients here write raw bytes, since what they send is what no well-behaved HTTP
library would. Nothing waits on the clock to prove speed: a deadline shortened for the test is
awaited under a far longer `fail_after`, and a retry loop waits for what it waits for.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import demo_tools
from tests.helpers import LATEST, REPO_ROOT, init_params
from tests.http_helpers import (
    SERVE_TIMEOUT,
    Gate,
    host_port,
    parse_response,
    raw_ping,
    raw_post,
    read_response,
    read_to_eof,
    serve,
)
from trio_mcp import Timeouts
from trio_mcp.http import HttpOptions
from trio_mcp.transports.http.serving import client_key

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


# -- bounded connections, and running out of file descriptors -----------------------------------


async def test_past_max_connections_a_connection_is_answered_503_and_closed() -> None:
    async with serve(max_connections=2, keep_alive_timeout=60, stateless=True) as served:
        held = [await trio.open_tcp_stream(*host_port(served)) for _ in range(2)]
        with trio.fail_after(SERVE_TIMEOUT):
            for stream in held:
                await stream.send_all(raw_ping(served))
                assert (await read_response(stream)).status == 200
            async with await trio.open_tcp_stream(*host_port(served)) as extra:
                await extra.send_all(raw_ping(served))
                busy = parse_response(await read_to_eof(extra))
            # A held connection still serves its next request.
            await held[1].send_all(raw_ping(served))
            assert (await read_response(held[1])).status == 200
            # Once the server has seen one close, its place is free again.
            await held[0].aclose()
            status = 503
            while status == 503:
                async with await trio.open_tcp_stream(*host_port(served)) as again:
                    await again.send_all(raw_ping(served))
                    status = (await read_response(again)).status
                if status == 503:
                    await trio.sleep(0.05)
        await held[1].aclose()
    assert busy.status == 503
    assert busy.headers["retry-after"] == "1"
    assert busy.headers["connection"] == "close"
    assert json.loads(busy.body)["error"]["message"] == "Too many connections; try again later"
    assert (busy.rest, busy.closed) == (b"", True)
    assert status == 200


FD_LIMITED_SERVER = str(REPO_ROOT / "tests" / "fixtures" / "fd_limited_server.py")
SHORTAGE = "cannot accept connections"


class ServerLog:
    """The lines a subprocess writes to stderr, as they arrive."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = trio.Event()

    async def read(self, stream: trio.abc.ReceiveStream) -> None:
        pending = b""
        async for chunk in stream:
            pending += chunk
            *complete, pending = pending.split(b"\n")
            self.lines += [line.decode() for line in complete]
            self._changed.set()
            self._changed = trio.Event()

    async def wait_for(self, text: str) -> str:
        """The first line holding `text`, once it has arrived."""
        while not (found := [line for line in self.lines if text in line]):
            await self._changed.wait()
        return found[0]

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)


@asynccontextmanager
async def fd_limited_server(
    limit: int, max_connections: int = 0
) -> AsyncIterator[tuple[tuple[str, int], ServerLog]]:
    """`fd_limited_server.py` running: its address and its log, complete once this ends."""
    log = ServerLog()
    process = await trio.lowlevel.open_process(
        [sys.executable, FD_LIMITED_SERVER, str(limit), str(max_connections)],
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
    )
    assert process.stderr is not None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.read, process.stderr)
            with trio.fail_after(SERVE_TIMEOUT):
                line = await log.wait_for("serving MCP on http://")
            host, port = line.split("http://")[1].removesuffix("/mcp").split(":")
            yield (host, int(port)), log
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(SERVE_TIMEOUT):
                assert await process.wait() == 0, "\n".join(log.lines)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_by_default_connections_stay_below_the_open_files_limit() -> None:
    # 64 files, less an eighth of them but at least 32 kept for the rest: 32 connections.
    async with fd_limited_server(64) as (address, log):
        statuses: list[int] = []
        held: list[trio.SocketStream] = []
        with trio.fail_after(SERVE_TIMEOUT):
            for _ in range(48):
                stream = await trio.open_tcp_stream(*address)
                await stream.send_all(raw_ping(address))
                response = await read_response(stream)
                statuses.append(response.status)
                if response.status == 200:
                    held.append(stream)
                else:
                    assert await read_to_eof(stream) == b""  # closed after the 503
                    await stream.aclose()
            # Clients that neither send nor close: the server waits for a few (8 here) to
            # close after their 503, and answers the others in passing.
            silent = [await trio.open_tcp_stream(*address) for _ in range(12)]
            for stream in silent:
                busy = parse_response(await read_to_eof(stream))
                assert (busy.status, busy.headers["connection"]) == (503, "close")
            for stream in silent:
                await stream.aclose()
            for stream in held:
                await stream.aclose()
            while True:  # served again once the server has seen them close
                async with await trio.open_tcp_stream(*address) as stream:
                    await stream.send_all(raw_ping(address))
                    if (await read_response(stream)).status == 200:
                        break
                await trio.sleep(0.05)
    assert statuses == [200] * 32 + [503] * 16
    assert log.count(SHORTAGE) == 0
    assert not log.count("Traceback")


async def test_running_out_of_file_descriptors_is_logged_once_and_serving_goes_on() -> None:
    # A bound set above what the process may open: accepting fails for want of descriptors.
    async with fd_limited_server(64, max_connections=1000) as (address, log):
        with trio.fail_after(SERVE_TIMEOUT):
            # Connecting needs no accept (the kernel queues the connection in the listen
            # backlog), so the test opens more than the server can take.
            flood = [await trio.open_tcp_stream(*address) for _ in range(100)]
            await log.wait_for(SHORTAGE)
            # The connections taken are served all the while (the first was taken first).
            await flood[0].send_all(raw_ping(address))
            assert (await read_response(flood[0])).status == 200
            # The server keeps retrying (every 0.1 s) while its descriptors are short.
            for stream in flood:
                await stream.aclose()
            await log.wait_for("accepting connections again")
            while True:
                async with await trio.open_tcp_stream(*address) as stream:
                    await stream.send_all(raw_ping(address))
                    if (await read_response(stream)).status == 200:
                        break
                await trio.sleep(0.05)
    assert log.count(SHORTAGE) == 1
    assert "Too many open files" in (await log.wait_for(SHORTAGE))
    assert log.count("accepting connections again") == 1
    assert not log.count("Traceback")


CROWDED = "the most one client address may"


@pytest.mark.slow
async def test_one_address_cannot_take_the_connections_every_client_needs() -> None:
    """Defect 24.6: 1,100 connections from one address, each dribbling a request body, held
    every one of the 896 connections a server with 1,024 open files serves: every other client
    got 503 for as long as they were held (body deadlines are a minute long)."""
    async with fd_limited_server(1024) as (address, log):
        host, port = address
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        head = raw_post(address, b"", f"MCP-Protocol-Version: {LATEST}", "Content-Length: 1000")
        crowd: list[trio.SocketStream] = []
        try:
            with trio.fail_after(SERVE_TIMEOUT):
                for _ in range(1100):
                    stream = await trio.open_tcp_stream(host, port)
                    crowd.append(stream)
                    with contextlib.suppress(trio.BrokenResourceError):
                        await stream.send_all(head + body[:1])  # and the rest ever so slowly
                # Another address is served at once, while the crowd holds its connections.
                async with await trio.open_tcp_stream(
                    host, port, local_address="127.0.0.2"
                ) as other:
                    await other.send_all(raw_ping(address))
                    assert (await read_response(other)).status == 200
                await log.wait_for(CROWDED)
                # The crowd's own address is refused a new one: 429, then closed.
                async with await trio.open_tcp_stream(host, port) as more:
                    refused = parse_response(await read_to_eof(more))
        finally:
            for stream in crowd:
                await stream.aclose()
    assert refused.status == 429
    assert (refused.headers["connection"], refused.headers["retry-after"]) == ("close", "1")
    assert "from your address" in json.loads(refused.body)["error"]["message"]
    assert log.count(CROWDED) == 1  # one episode, however many were refused
    assert "127.0.0.1 holds 256 connections" in await log.wait_for(CROWDED)


async def test_the_cap_per_address_is_configurable_and_can_be_lifted() -> None:
    async with serve(
        max_connections_per_address=2, keep_alive_timeout=60, stateless=True
    ) as served:
        host, port = host_port(served)
        held = [await trio.open_tcp_stream(host, port) for _ in range(2)]
        with trio.fail_after(SERVE_TIMEOUT):
            for stream in held:
                await stream.send_all(raw_ping(served))
                assert (await read_response(stream)).status == 200
            async with await trio.open_tcp_stream(host, port) as third:
                assert parse_response(await read_to_eof(third)).status == 429
            async with await trio.open_tcp_stream(host, port, local_address="127.0.0.2") as other:
                await other.send_all(raw_ping(served))
                assert (await read_response(other)).status == 200
        for stream in held:
            await stream.aclose()
    async with serve(
        max_connections_per_address=None, keep_alive_timeout=60, stateless=True
    ) as served:
        with trio.fail_after(SERVE_TIMEOUT):
            many = [await trio.open_tcp_stream(*host_port(served)) for _ in range(300)]
            for stream in many:  # past the default 256: every one served
                await stream.send_all(raw_ping(served))
            statuses = {(await read_response(stream)).status for stream in many}
        for stream in many:
            await stream.aclose()
    assert statuses == {200}
    with pytest.raises(ValueError, match="max_connections_per_address"):
        HttpOptions(max_connections_per_address=0)


@pytest.mark.parametrize(
    ("address", "key"),
    [
        (("203.0.113.7", 4000), "203.0.113.7"),
        (("::ffff:203.0.113.7", 4000, 0, 0), "203.0.113.7"),
        (("2001:db8:1:2:aaaa::1", 4000, 0, 0), "2001:db8:1:2::/64"),
        (("2001:db8:1:2:bbbb::9", 4001, 0, 0), "2001:db8:1:2::/64"),
        (("fe80::1%eth0", 4000, 0, 2), "fe80::/64"),
        ("/run/mcp.sock", None),
    ],
)
def test_a_client_counts_as_its_address_and_an_ipv6_one_as_its_64(address: Any, key: str) -> None:
    assert client_key(address) == key


# -- a legacy SSE client that does not read its stream ------------------------------------------


async def read_sse_event(lines: Any) -> tuple[str, str]:
    """One SSE event `(name, data)` from an `aiter_lines` iterator."""
    event, data, blank = [await lines.__anext__() for _ in range(3)]
    assert (event[:7], data[:6], blank) == ("event: ", "data: ", "")
    return event.removeprefix("event: "), data.removeprefix("data: ")


async def test_legacy_unsent_answers_are_bounded_and_all_delivered() -> None:
    bound = 256 * 1024
    server = demo_tools.build_server()

    @server.tool("test.big", "A 64 KiB answer")
    def big(n: int) -> str:
        return f"{n}:" + "x" * 65536

    def call(n: int) -> dict[str, Any]:
        params = {"name": "test.big", "arguments": {"n": n}}
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}

    async with (
        serve(server, legacy_max_unsent_bytes=bound) as served,
        served.http.stream("GET", served.base + "/sse") as stream,
    ):
        lines = stream.aiter_lines()
        _, endpoint = await read_sse_event(lines)
        post_url = served.base + endpoint
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params()}
        assert (await served.http.post(post_url, json=init)).status_code == 202
        await read_sse_event(lines)
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await served.http.post(post_url, json=initialized)).status_code == 202
        # From here the client reads nothing: once the socket buffers are full, the answers
        # wait in the server, and past the bound a request is refused.
        taken = 0
        with trio.fail_after(SERVE_TIMEOUT):
            for n in range(1, 401):  # 400 POSTs: 25 MiB of answers, had none been refused
                refused = await served.http.post(post_url, json=call(n))
                if refused.status_code != 202:
                    break
                taken = n
            # A notification is still taken, and other clients are still served.
            assert (await served.http.post(post_url, json=initialized)).status_code == 202
            other = served.client()
            assert (await other.initialize()).status == 200
            # Reading the stream now brings every answer owed, each once (in the order the
            # calls finished: they run in threads).
            answers = [json.loads((await read_sse_event(lines))[1]) for _ in range(taken)]
            # With the answers read, requests are taken again.
            status = 429
            while status == 429:
                status = (await served.http.post(post_url, json=call(taken + 1))).status_code
                if status == 429:
                    await trio.sleep(0.05)
            last = json.loads((await read_sse_event(lines))[1])
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert "unsent" in refused.json()["error"]["message"]
    assert 0 < taken < 400
    assert sorted(a["id"] for a in answers) == list(range(1, taken + 1))
    assert all(a["result"]["content"][0]["text"].startswith(f"{a['id']}:") for a in answers)
    assert status == 202
    assert last["id"] == taken + 1


# -- a Streamable HTTP client that stops reading ---------------------------------------------------


@asynccontextmanager
async def _deaf_client(served: Any) -> AsyncIterator[trio.SocketStream]:
    """A client that calls `test.flood` (16 KiB progress events until cancelled) and then
    never reads a byte of the answer."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "test.flood", "_meta": {"progressToken": 1}},
    }
    body = json.dumps(call).encode()
    stream = await trio.open_tcp_stream(*host_port(served))
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        await stream.send_all(
            raw_post(
                served, body, f"MCP-Protocol-Version: {LATEST}", f"Content-Length: {len(body)}"
            )
        )
        yield stream
    finally:
        await trio.aclose_forcefully(stream)


async def test_a_client_that_stops_reading_is_cut_off_after_the_send_timeout() -> None:
    """Defect: Hypercorn's writes wait for ever for a client that does not read: the
    connection and the call that writes to it were held until the client went away."""
    gate = Gate()
    async with (
        serve(gate.server(), stateless=True, send_timeout=1.0) as served,
        _deaf_client(served),
    ):
        with trio.fail_after(SERVE_TIMEOUT):
            await gate.cancelled.wait()  # the connection closed, the call cancelled
        assert gate.flooded < 5000  # it did not run to its end
        await served_still(served)


@pytest.mark.slow
async def test_a_client_that_stops_reading_does_not_hold_a_shutdown() -> None:
    """Defect: SIGTERM never ended a server with a client not reading its stream."""
    gate = Gate()
    server = gate.server(timeouts=Timeouts(shutdown=0.2))
    async with (
        serve(server, stateless=True, send_timeout=3600.0) as served,
        _deaf_client(served),
    ):
        with trio.fail_after(SERVE_TIMEOUT):
            # A counter the server's task moves, not an event: poll it (the buffers are full
            # long before 50 events of 16 KiB).
            while gate.flooded < 50:  # noqa: ASYNC110
                await trio.sleep(0.05)
            served.stop.set()
            await served.finished.wait()  # grace, then the forced close at the deadline


async def served_still(served: Any) -> None:
    with trio.fail_after(SERVE_TIMEOUT):
        stream = await trio.open_tcp_stream(*host_port(served))
        async with stream:
            await stream.send_all(raw_ping(served))
            response = await read_response(stream)
    assert response.status == 200
