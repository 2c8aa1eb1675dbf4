"""Client-side links over frame channels: an in-process peer, and a server run as a subprocess.

A link is what the client runtime (`_runtime/client`) talks through (`_runtime/link.Link`):
`send` one message, read frames from `incoming`, and `close_reason` for why `incoming` ended.
A subprocess server runs in a session of its own (as the official SDKs start theirs), so the
terminal's Ctrl-C reaches the client only, which decides what it means.

Rule 1: a subprocess link owns its process for the `async with` block. On exit it closes the
        server's stdin (the stdio transport's "end of session"), waits `shutdown_timeout`
        seconds for it to exit, then terminates it, and kills it if that is not enough.
Rule 2: the server's stderr is always drained (a full pipe would block the server) and its
        last lines are kept, so that "the server died" comes with the server's own words.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

import trio

from .._core.framing import DEFAULT_MAX_LINE_BYTES, LineTooLong
from .._core.jsonrpc import dumps
from .._exceptions import TransportError
from .stdio import StdioFrames, open_stdio_frames

__all__ = ["ChannelLink", "ProcessLink", "open_process_link"]

# Seconds a server gets to exit by itself after its stdin is closed, then again after SIGTERM.
# Our server answers EOF at once when nothing is running; the official SDKs' stdio clients give
# a server about 2 s before terminating it.
DEFAULT_SHUTDOWN_TIMEOUT: Final = 2.0
# Lines of the server's stderr kept to explain its death: enough for a Python traceback's tail.
DEFAULT_STDERR_LINES: Final = 20
# Seconds to wait for a process whose stdout ended to report its exit code, and for the last
# of its stderr; past that the account says "still running" or shows what was read.
EXIT_WAIT: Final = 2.0


class ChannelLink:
    """A link over a pair of frame channels, e.g. to a `Server` in the same process.

    Args:
        send: Where frames to the server go.
        receive: Frames from the server.
        name: How to name the peer in messages.
    """

    def __init__(
        self,
        send: trio.abc.SendChannel[bytes],
        receive: trio.abc.ReceiveChannel[bytes],
        name: str = "in-process server",
    ) -> None:
        self._send = send
        self._receive = receive
        self.name = name

    @property
    def incoming(self) -> trio.abc.ReceiveChannel[bytes]:
        """Frames from the server."""
        return self._receive

    @property
    def session_id(self) -> str | None:
        """Channels have no sessions."""
        return None

    async def send(self, message: dict[str, Any], *, retry_safe: bool = False) -> None:
        """Send one message (retry_safe is moot: a channel either takes a frame or is broken)."""
        await self._send.send(dumps(message))

    def negotiated(self, version: str) -> None:
        """Nothing to do: channels carry no version."""

    def mirror_params(self, tools: Mapping[str, Mapping[str, tuple[str, ...]]]) -> bool:
        """Nothing to do: channels carry no headers, so annotations mean nothing here."""
        return False

    async def listen(self) -> None:
        """Nothing to do: every message from the server comes on the channel."""

    async def close_reason(self) -> str:
        """Why the frames ended."""
        return f"the {self.name} closed the connection"


class ProcessLink:
    """A link to a server run as a subprocess over its stdin and stdout (NDJSON lines).

    Create it with `open_process_link`.
    """

    def __init__(
        self, process: trio.Process, frames: StdioFrames, name: str, stderr_lines: int
    ) -> None:
        self.process = process
        self.name = name
        self._frames = frames
        #: The last lines the server wrote to stderr.
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self._stderr_done = trio.Event()

    @property
    def incoming(self) -> trio.abc.ReceiveChannel[list[bytes | LineTooLong]]:
        """Batches of lines from the server's stdout."""
        return self._frames.receive

    @property
    def session_id(self) -> str | None:
        """None: the stdio transport has no sessions."""
        return None

    async def send(self, message: dict[str, Any], *, retry_safe: bool = False) -> None:
        """Queue one message for the server's stdin.

        Raises:
            trio.BrokenResourceError: when the server no longer reads its stdin.
        """
        await self._frames.send.send(dumps(message))

    def negotiated(self, version: str) -> None:
        """Nothing to do: stdio carries no version."""

    def mirror_params(self, tools: Mapping[str, Mapping[str, tuple[str, ...]]]) -> bool:
        """Nothing to do: stdio carries no headers, so annotations mean nothing here."""
        return False

    async def listen(self) -> None:
        """Nothing to do: every message from the server comes on stdout."""

    async def close_reason(self) -> str:
        """The server's exit code and the last lines of its stderr."""
        with trio.move_on_after(EXIT_WAIT):
            await self.process.wait()
        with trio.move_on_after(EXIT_WAIT):
            await self._stderr_done.wait()
        code = self.process.returncode
        if code is None:
            text = f"the server process ({self.name}) closed its stdout but is still running"
        elif code < 0:
            try:
                how = signal.Signals(-code).name
            except ValueError:
                how = f"signal {-code}"
            text = f"the server process ({self.name}) was killed by {how} (exit code {code})"
        else:
            text = f"the server process ({self.name}) exited with code {code}"
        if self.stderr_tail:
            lines = "\n".join(f"  {line}" for line in self.stderr_tail)
            text += f"; the last lines of its stderr:\n{lines}"
        else:
            text += " and wrote nothing to stderr"
        return text

    async def _drain_stderr(self, echo: bool) -> None:
        stream = self.process.stderr
        assert stream is not None
        pending = b""
        try:
            while True:
                try:
                    chunk = await stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    chunk = b""
                if not chunk:
                    break
                if echo:
                    sys.stderr.write(chunk.decode("utf-8", "replace"))
                    sys.stderr.flush()
                *lines, pending = (pending + chunk).split(b"\n")
                self.stderr_tail.extend(
                    line.decode("utf-8", "replace").rstrip() for line in lines if line.strip()
                )
                # An unfinished line is kept to at most 64 KiB: the tail is for reading.
                pending = pending[-65536:]
            if pending.strip():
                self.stderr_tail.append(pending.decode("utf-8", "replace").rstrip())
        finally:
            self._stderr_done.set()


def _describe(command: Sequence[str]) -> str:
    text = " ".join(command)
    return text if len(text) <= 80 else text[:77] + "..."


@contextlib.asynccontextmanager
async def open_process_link(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
    stderr_lines: int = DEFAULT_STDERR_LINES,
    echo_stderr: bool = False,
) -> AsyncIterator[ProcessLink]:
    """Start `command` as a server and link to it over its stdin and stdout.

    Args:
        command: The program and its arguments.
        env: Variables added to (or replacing those of) this process's environment.
        cwd: The server's working directory.
        max_line_bytes: Longest line accepted from the server.
        shutdown_timeout: Seconds the server gets to exit after its stdin closes, and again
            after SIGTERM, before it is killed.
        stderr_lines: How many of the server's last stderr lines to keep.
        echo_stderr: Also copy the server's stderr to ours as it arrives.

    Yields:
        The link; `link.process` is the running process.

    Raises:
        TransportError: when the program cannot be started.
    """
    if not command:
        raise ValueError("command is empty: give the program to run and its arguments")
    full_env = {**os.environ, **env} if env is not None else None
    try:
        process = await trio.lowlevel.open_process(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            # Ctrl-C reaches the client only: a question put to the user is cancelled, or the
            # client ends, and Rule 1 stops the server.
            start_new_session=True,
        )
    except OSError as exc:
        raise TransportError(f"cannot start the server {_describe(command)!r}: {exc}") from exc
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        async with trio.open_nursery() as nursery:
            async with open_stdio_frames(
                process.stdout, process.stdin, max_line_bytes=max_line_bytes
            ) as frames:
                link = ProcessLink(process, frames, _describe(command), stderr_lines)
                nursery.start_soon(link._drain_stderr, echo_stderr)
                yield link
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await _stop(process, shutdown_timeout)


async def _stop(process: trio.Process, grace: float) -> None:
    # Rule 1: end of input first (a clean goodbye), then SIGTERM, then SIGKILL.
    if process.stdin is not None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await process.stdin.aclose()
    with trio.move_on_after(grace):
        await process.wait()
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        with trio.move_on_after(grace):
            await process.wait()
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                await stream.aclose()
