r"""stdio transport: NDJSON frames over a pair of file descriptors.

Rule 1: fd 0 is read in large chunks and split by a bounded `LineBuffer`; each read's lines
        travel on as one batch, in which an over-long line stands as a `LineTooLong` marker
        (its bytes skipped; the stream stays in sync), so the receiver answers it in order.
Rule 2: one writer task owns the output. It takes every frame that is ready and writes them in
        one `send_all` (coalescing), each frame one line ending in b"\n".
Rule 3: while serving, only protocol lines reach the real stdout. `stdout_guard` moves the
        original fd 1 aside for our writer and points fd 1 (and `sys.stdout`) at stderr, so a
        stray `print()` in a tool, or a C extension writing to fd 1, cannot corrupt the stream.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Final

import trio

from .._exceptions import reraise_lone
from .._framing import DEFAULT_MAX_LINE_BYTES, LineBuffer, LineTooLong

__all__ = ["StdioFrames", "open_stdio_frames", "stdout_guard"]

# 64 KiB reads: the pipe buffer size on Linux, so one read usually drains what is waiting.
READ_CHUNK: Final = 65536
# Outgoing frames queued before a sender waits for the writer.
OUT_BUFFER: Final = 1024
# Seconds the writer may take to flush queued frames when the transport closes.
FLUSH_TIMEOUT: Final = 5.0


@contextlib.contextmanager
def stdout_guard() -> Iterator[int]:
    """Reserve the process's stdout for protocol frames.

    Yields:
        A duplicate of the original fd 1, for the frame writer. Meanwhile fd 1 and `sys.stdout`
        point at stderr. Both are restored on exit.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    saved_fd = os.dup(1)
    saved_stdout = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield protocol_fd
    finally:
        sys.stdout = saved_stdout
        os.dup2(saved_fd, 1)
        os.close(saved_fd)


class StdioFrames:
    """Frame channels over two streams; use through `open_stdio_frames`."""

    def __init__(
        self,
        receive: trio.MemoryReceiveChannel[list[bytes | LineTooLong]],
        send: trio.MemorySendChannel[bytes],
        overflows: list[int],
    ) -> None:
        self.receive = receive
        self.send = send
        self.overflows = overflows


@contextlib.asynccontextmanager
async def open_stdio_frames(
    read_stream: trio.abc.ReceiveStream,
    write_stream: trio.abc.SendStream,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> AsyncIterator[StdioFrames]:
    """Run a reader and a writer task over two byte streams for the `async with` block.

    Args:
        read_stream: Where frames come from (for a server, its stdin).
        write_stream: Where frames go (for a server, the guarded stdout).
        max_line_bytes: Longest line accepted.

    Yields:
        `StdioFrames` with `receive`, a channel of line batches (ends at EOF), and `send`, a
        channel of frames.
    """
    # Lines travel in batches, one per read: handing each line over on its own would cost a
    # trip through the scheduler per message. One batch may wait while the next is read, so
    # at most two reads' worth of lines (each line bounded by max_line_bytes) are held.
    in_send, in_receive = trio.open_memory_channel[list[bytes | LineTooLong]](1)
    out_send, out_receive = trio.open_memory_channel[bytes](OUT_BUFFER)
    overflows: list[int] = []

    async def reader() -> None:
        buffer = LineBuffer(max_line_bytes)
        async with in_send:
            while True:
                try:
                    chunk = await read_stream.receive_some(READ_CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    chunk = b""
                if not chunk:
                    return
                batch = buffer.feed(chunk)
                if batch:
                    overflows.extend(item.limit for item in batch if isinstance(item, LineTooLong))
                    await in_send.send(batch)

    async def writer() -> None:
        async with out_receive:
            async for frame in out_receive:
                frames = [frame]
                while True:
                    try:
                        frames.append(out_receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                frames.append(b"")
                try:
                    await write_stream.send_all(b"\n".join(frames))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return  # the reader of our output is gone; nothing more can be delivered

    reader_scope = trio.CancelScope()

    async def read_until_cancelled() -> None:
        with reader_scope:
            await reader()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_until_cancelled)
            nursery.start_soon(writer)
            try:
                yield StdioFrames(in_receive, out_send, overflows)
            finally:
                # Stop reading (stdin may never end), then let the writer flush what is queued; a
                # peer that stopped reading our output gets FLUSH_TIMEOUT seconds, no more.
                reader_scope.cancel()
                out_send.close()
                nursery.cancel_scope.deadline = trio.current_time() + FLUSH_TIMEOUT
    except BaseExceptionGroup as group:
        reraise_lone(group)  # a lone error in the block comes out as itself, not as a group
