"""Composition root: wires a `Server` to a transport. The only module that knows both.

Rule: everything that spawns tasks is an `async def` that returns when its tasks have ended
(`serve_stdio`); `run` is the synchronous entry point that owns the event loop and the signals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Final

import trio

from ._jsonrpc import INVALID_REQUEST, dumps, error_response
from ._server import Server
from .transports.stdio import open_stdio_frames, stdout_guard

__all__ = ["run", "serve_stdio"]

_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _blocking_restored(*fds: int) -> Iterator[None]:
    # trio's FdStream makes its fd non-blocking, and a dup shares that flag with the original
    # (and with whatever else holds it, such as the parent's terminal): put it back afterwards.
    saved = [(fd, os.get_blocking(fd)) for fd in fds]
    try:
        yield
    finally:
        for fd, blocking in saved:
            with contextlib.suppress(OSError):
                os.set_blocking(fd, blocking)


async def serve_stdio(
    server: Server,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve one client over this process's stdin and stdout until stdin ends.

    While it runs, fd 1 and `sys.stdout` point at stderr so that nothing but protocol lines
    reaches the client (`print()` in a tool goes to stderr).

    Args:
        server: The server to serve.
        task_status: Reports when the server reads.
    """
    overflow = dumps(
        error_response(
            None,
            INVALID_REQUEST,
            f"Invalid Request: message longer than {server.max_line_bytes} bytes; skipped",
        )
    )
    with _blocking_restored(0, 1), stdout_guard() as out_fd:
        reader = trio.lowlevel.FdStream(os.dup(0))
        writer = trio.lowlevel.FdStream(out_fd)
        async with (
            reader,
            writer,
            open_stdio_frames(
                reader, writer, max_line_bytes=server.max_line_bytes, on_overflow=overflow
            ) as frames,
        ):
            await server.serve_connection(frames.receive, frames.send, task_status=task_status)


def run(server: Server, transport: str = "stdio") -> None:
    """Serve `server` until its input ends or SIGINT/SIGTERM arrives; returns normally then.

    Args:
        server: The server to run.
        transport: Only "stdio" for now.

    Raises:
        ValueError: for an unknown transport.
    """
    if transport != "stdio":
        raise ValueError(f"unknown transport {transport!r}; this version serves 'stdio'")
    trio.run(_run_stdio, server)


async def _run_stdio(server: Server) -> None:
    with trio.open_signal_receiver(*_STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for signum in signals:
                    print(f"trio-mcp: {signal.Signals(signum).name}, stopping", file=sys.stderr)
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            await serve_stdio(server)
            nursery.cancel_scope.cancel()
