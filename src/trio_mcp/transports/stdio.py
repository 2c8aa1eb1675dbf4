r"""stdio transport: NDJSON frames over a pair of file descriptors, with no tasks of its own.

Input is read in large chunks, on the task that asks for it, and split by a bounded
`LineBuffer`; each read's lines come out as one batch (`receive_nowait` reads what is already
waiting without a trip through the scheduler). Output frames are queued by `send_nowait` and
written together, one line each ending in b"\n", by the next `flush` (`send` queues and
flushes): whoever flushes writes everything queued in one system call, and a flush that finds
a write under way leaves its frames to it. A server answers a whole batch of input with one
write this way, and a lone request's response goes out from the task that made it, with no
hand-over. (Not a `trio.StrictFIFOLock`: taking even a free one is a trip through the
scheduler, and a task that finds a write under way has nothing to wait for.)

Rule 1: frames stay whole and in order. An over-long input line stands as a `LineTooLong`
        marker in its batch (its bytes skipped, the stream in sync), so the receiver answers
        it in its place; a write interrupted by cancellation keeps its unsent bytes first in
        line, so a line is never cut in two on the wire.
Rule 2: while serving, only protocol lines reach the real stdout. `stdout_guard` moves the
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

from .._core.framing import DEFAULT_MAX_LINE_BYTES, LineBuffer, LineTooLong

__all__ = ["FrameReader", "FrameWriter", "StdioFrames", "open_stdio_frames", "stdout_guard"]

# 64 KiB reads: the pipe buffer size on Linux, so one read usually drains what is waiting.
READ_CHUNK: Final = 65536
# Bytes of queued output past which `send_nowait` refuses and `send` waits for the writer.
OUT_LIMIT: Final = 1 << 20
# Seconds queued output may take to go out when the transport closes.
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


def _fd_of(stream: object) -> int | None:
    # A trio FdStream's fd is non-blocking and ours to read or write directly (skipping its
    # checkpoint per call); any other stream is used through its own methods.
    return stream.fileno() if isinstance(stream, trio.lowlevel.FdStream) else None


class FrameReader(trio.abc.ReceiveChannel[list[bytes | LineTooLong]]):
    """Batches of lines from a byte stream (Rule 1); ends at the stream's end."""

    def __init__(self, stream: trio.abc.ReceiveStream, max_line_bytes: int) -> None:
        self._stream = stream
        self._fd = _fd_of(stream)
        self._buffer = LineBuffer(max_line_bytes)
        self._ended = False
        self._closed = False
        # The last read found nothing waiting: the next `receive` waits before reading.
        self._empty = False

    def _lines(self, chunk: bytes | bytearray) -> list[bytes | LineTooLong]:
        if not chunk:
            self._ended = True
            raise trio.EndOfChannel
        self._empty = False
        return self._buffer.feed(chunk)

    def _check(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if self._ended:
            raise trio.EndOfChannel

    def receive_nowait(self) -> list[bytes | LineTooLong]:
        """The lines already waiting to be read.

        Raises:
            trio.WouldBlock: nothing complete is waiting (or the stream is not an fd).
            trio.EndOfChannel: the stream ended.
        """
        self._check()
        if self._fd is None:
            raise trio.WouldBlock
        while True:
            try:
                chunk = os.read(self._fd, READ_CHUNK)
            except BlockingIOError:
                self._empty = True
                raise trio.WouldBlock from None
            except OSError:
                chunk = b""  # e.g. the other end vanished (ECONNRESET on a socket): the end
            batch = self._lines(chunk)
            if batch:
                return batch

    async def receive(self) -> list[bytes | LineTooLong]:
        """The next batch of lines, waiting for them.

        Raises:
            trio.EndOfChannel: the stream ended.
        """
        self._check()
        if self._fd is None:
            return await self._receive_stream()
        if not self._empty:
            try:
                batch = self.receive_nowait()
            except trio.WouldBlock:
                pass
            else:
                await trio.lowlevel.checkpoint()
                return batch
        while True:
            try:
                await trio.lowlevel.wait_readable(self._fd)
            except trio.ClosedResourceError:
                self._ended = True  # the stream was closed under us
                raise trio.EndOfChannel from None
            try:
                return self.receive_nowait()
            except trio.WouldBlock:
                continue

    async def _receive_stream(self) -> list[bytes | LineTooLong]:
        while True:
            try:
                chunk = await self._stream.receive_some(READ_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            batch = self._lines(chunk)
            if batch:
                return batch

    async def aclose(self) -> None:
        """Stop reading (the stream itself is its owner's to close)."""
        self._closed = True
        await trio.lowlevel.checkpoint()


class FrameWriter(trio.abc.SendChannel[bytes]):
    """Frames to a byte stream, one line each, queued frames written together (Rule 1)."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self._stream = stream
        self._fd = _fd_of(stream)
        self._queue: list[bytes] = []
        self._queued = 0  # bytes in `_queue`, newlines included
        self._unsent = b""  # the rest of an interrupted write; goes first (Rule 1)
        self._writing = False
        self._progress = trio.lowlevel.ParkingLot()  # woken when queued output is taken
        self._closed = False
        self._broken = False

    def _check(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if self._broken:
            raise trio.BrokenResourceError("the reader of this stream is gone")

    def send_nowait(self, value: bytes) -> None:
        """Queue one frame for the next `flush`.

        Raises:
            trio.WouldBlock: more than `OUT_LIMIT` bytes are queued already.
            trio.BrokenResourceError: the reader of the stream is gone.
        """
        self._check()
        if self._queued >= OUT_LIMIT:
            raise trio.WouldBlock
        self._queue.append(value)
        self._queued += len(value) + 1

    async def send(self, value: bytes) -> None:
        """Queue one frame and write out everything queued.

        Raises:
            trio.BrokenResourceError: the reader of the stream is gone.
        """
        while True:
            try:
                self.send_nowait(value)
            except trio.WouldBlock:
                if self._writing:
                    await self._progress.park()
                else:
                    await self.flush()
            else:
                break
        await self.flush()

    async def flush(self) -> None:
        """Write everything queued; returns at once if another task is writing (it takes it).

        A reader that is gone is remembered (`send` raises `BrokenResourceError`); queued
        output is then dropped.
        """
        if self._writing or not (self._queue or self._unsent) or self._broken:
            return
        self._writing = True
        try:
            while (self._queue or self._unsent) and not self._broken:
                data = self._unsent
                self._unsent = b""
                if self._queue:
                    self._queue.append(b"")
                    data += b"\n".join(self._queue)
                    self._queue.clear()
                    self._queued = 0
                    self._progress.unpark_all()
                try:
                    await self._write_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self._broken = True
                    self._queue.clear()
                    self._queued = 0
        finally:
            self._writing = False
            self._progress.unpark_all()

    async def _write_all(self, data: bytes) -> None:
        if self._fd is None:
            await self._stream.send_all(data)  # a stream of another kind: its own send_all
            return
        sent = 0
        try:
            with memoryview(data) as view:
                while sent < len(data):
                    try:
                        sent += os.write(self._fd, view[sent:])
                    except BlockingIOError:
                        await trio.lowlevel.wait_writable(self._fd)
                    except OSError as exc:  # EPIPE: the reader is gone
                        raise trio.BrokenResourceError(str(exc)) from exc
        except trio.Cancelled:
            self._unsent = data[sent:]
            raise

    async def drain(self) -> None:
        """Wait until everything queued has been written (or the reader is gone)."""
        while (self._queue or self._unsent or self._writing) and not self._broken:
            if self._writing:
                await self._progress.park()
            else:
                await self.flush()

    async def aclose(self) -> None:
        """Refuse further frames (the stream itself is its owner's to close)."""
        self._closed = True
        await trio.lowlevel.checkpoint()


class StdioFrames:
    """The two frame channels over a pair of streams; use through `open_stdio_frames`."""

    def __init__(self, receive: FrameReader, send: FrameWriter) -> None:
        self.receive = receive
        self.send = send


@contextlib.asynccontextmanager
async def open_stdio_frames(
    read_stream: trio.abc.ReceiveStream,
    write_stream: trio.abc.SendStream,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> AsyncIterator[StdioFrames]:
    """Frame channels over two byte streams for the `async with` block.

    Args:
        read_stream: Where frames come from (for a server, its stdin).
        write_stream: Where frames go (for a server, the guarded stdout).
        max_line_bytes: Longest line accepted.

    Yields:
        `StdioFrames` with `receive`, a channel of line batches (ends at the stream's end), and
        `send`, a channel of frames (`flush` writes what `send_nowait` queued).

    On exit, queued output gets `FLUSH_TIMEOUT` seconds to go out: a peer that stopped reading
    our output gets no more.
    """
    frames = StdioFrames(FrameReader(read_stream, max_line_bytes), FrameWriter(write_stream))
    try:
        yield frames
    finally:
        with trio.move_on_after(FLUSH_TIMEOUT) as scope:
            scope.shield = True
            await frames.send.drain()
        await frames.receive.aclose()
        await frames.send.aclose()
