"""The stdio transport's frame reader and writer (transports/stdio.py), over real pipes and files.

What matters here: a burst of input is answered with one write; a response made by a request
task goes out at once; a write cut short by cancellation never leaves half a line behind; a
reader that is gone is reported, not raised into the server; stdin may be a regular file.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tests.helpers import demo_command
from tests.timing import scaled
from trio_mcp import Server, tool
from trio_mcp._core.framing import LineTooLong
from trio_mcp.transports.stdio import FrameReader, FrameWriter, open_stdio_frames

TIMEOUT = scaled(60)
F_SETPIPE_SZ = 1031  # Linux fcntl: set a pipe's capacity


@contextmanager
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    try:
        yield read_fd, write_fd
    finally:
        for fd in (read_fd, write_fd):
            with suppress(OSError):
                os.close(fd)


class RecordingStream(trio.abc.SendStream):
    """A send stream that keeps every `send_all` it gets, one entry each."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.wrote = trio.Event()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        self.writes.append(bytes(data))
        self.wrote.set()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


def lines_of(writes: list[bytes]) -> list[dict[str, Any]]:
    data = b"".join(writes)
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]


def init_line(request_id: int = 0) -> bytes:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    return json.dumps(message).encode() + b"\n"


def request_line(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[tuple[trio.abc.SendStream, RecordingStream]]:
    """The server over stdio frames: write input to the first stream; output is recorded."""
    input_send, input_receive = trio.testing.memory_stream_one_way_pair()
    output = RecordingStream()
    async with trio.open_nursery() as nursery, open_stdio_frames(input_receive, output) as frames:
        await nursery.start(server.serve_connection, frames.receive, frames.send)
        yield input_send, output
        await input_send.aclose()


async def test_a_burst_of_requests_is_answered_with_one_write() -> None:
    server = Server("burst")
    async with serving(server) as (stdin, stdout):
        await stdin.send_all(init_line())
        await stdout.wrote.wait()
        stdout.writes.clear()
        stdout.wrote = trio.Event()
        burst = b"".join(request_line(i, "ping") for i in range(1, 51))
        await stdin.send_all(burst)
        await stdout.wrote.wait()
        await trio.testing.wait_all_tasks_blocked()
    assert len(stdout.writes) == 1
    assert [m["id"] for m in lines_of(stdout.writes)] == list(range(1, 51))


async def test_a_request_task_answers_without_waiting_for_more_input() -> None:
    server = Server("async")
    release = trio.Event()

    @tool("wait_then_answer", "Answers when released")
    async def wait_then_answer() -> str:
        await release.wait()
        return "done"

    server.add_tool(wait_then_answer)
    async with serving(server) as (stdin, stdout):
        await stdin.send_all(init_line())
        await stdout.wrote.wait()
        await stdin.send_all(request_line(1, "tools/call", {"name": "wait_then_answer"}))
        await trio.testing.wait_all_tasks_blocked()
        answered = len(stdout.writes)
        stdout.wrote = trio.Event()
        release.set()  # no further input arrives: the task's own flush must send the answer
        with trio.fail_after(TIMEOUT):
            await stdout.wrote.wait()
        (response,) = lines_of(stdout.writes[answered:])
        assert response["id"] == 1
        assert response["result"]["content"] == [{"type": "text", "text": "done"}]


async def test_a_write_cut_short_by_cancellation_leaves_no_half_line() -> None:
    with pipe() as (read_fd, write_fd):
        fcntl.fcntl(write_fd, F_SETPIPE_SZ, 4096)
        async with trio.lowlevel.FdStream(write_fd) as stream:
            writer = FrameWriter(stream)
            big = b"x" * 100_000
            with trio.move_on_after(0.05) as scope:
                await writer.send(b'"' + big + b'"')  # blocks: nobody reads the pipe yet
            assert scope.cancelled_caught
            writer.send_nowait(b'"after"')

            received = bytearray()

            async def read_all() -> None:
                async with trio.lowlevel.FdStream(os.dup(read_fd)) as reader:
                    while received.count(b"\n") < 2:
                        received.extend(await reader.receive_some(65536))

            with trio.fail_after(TIMEOUT):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(read_all)
                    await writer.drain()
    assert bytes(received).splitlines() == [b'"' + big + b'"', b'"after"']


async def test_a_vanished_reader_is_reported_by_send_and_swallowed_by_flush() -> None:
    with pipe() as (read_fd, write_fd):
        async with trio.lowlevel.FdStream(write_fd) as stream:
            writer = FrameWriter(stream)
            os.close(read_fd)
            writer.send_nowait(b"{}")
            await writer.flush()  # the pipe is broken: remembered, not raised
            with pytest.raises(trio.BrokenResourceError):
                await writer.send(b"{}")
            with pytest.raises(trio.BrokenResourceError):
                writer.send_nowait(b"{}")


async def test_the_reader_takes_what_is_waiting_without_blocking_and_ends_at_eof() -> None:
    with pipe() as (read_fd, write_fd):
        async with trio.lowlevel.FdStream(read_fd) as stream:
            reader = FrameReader(stream, 16)
            with pytest.raises(trio.WouldBlock):
                reader.receive_nowait()
            os.write(write_fd, b'{"a":1}\n' + b"y" * 40 + b'\n{"b"')
            assert reader.receive_nowait() == [b'{"a":1}', LineTooLong(16)]
            os.write(write_fd, b":2}\n")
            with trio.fail_after(TIMEOUT):
                assert await reader.receive() == [b'{"b":2}']
            os.close(write_fd)
            with trio.fail_after(TIMEOUT), pytest.raises(trio.EndOfChannel):
                await reader.receive()
            with pytest.raises(trio.EndOfChannel):
                reader.receive_nowait()


def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    # A script driving the server from a file: regular files cannot be polled, only read.
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        init_line()
        + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        + request_line(1, "tools/call", {"name": "calculator.add", "arguments": {"a": 2, "b": 3}})
        + request_line(2, "ping")
    )
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            demo_command(),
            check=False,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
        )
    assert done.returncode == 0, done.stderr.decode()
    messages = [json.loads(line) for line in answers.read_bytes().splitlines()]
    assert [m["id"] for m in messages] == [0, 1, 2]
    assert messages[1]["result"]["structuredContent"] == {"result": 5}
    assert messages[2]["result"] == {}
