"""Composition root, server side: wires a `Server` to a transport. The only module that knows both.

`serve_stdio`, `serve_http` and `http_app` serve a server in a trio program of one's own; `run`
(and `run_stdio`, `run_http`) is the synchronous entry point that owns the event loop and the
signals. Everything that spawns tasks is an `async def` that returns when its tasks have ended.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Final

import trio

from ._core.auth import AuthInfo
from ._core.jsonrpc import Request
from ._core.subscriptions import LISTEN
from ._core.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS
from ._dispatch import ResolvedRequest
from ._exceptions import reraise_lone
from ._runtime.connection import FINAL_ANSWER_SECONDS
from ._runtime.guard import require_trio
from ._runtime.server import Server
from ._runtime.session import SessionRuntime
from .transports.stdio import open_stdio_frames, stdout_guard

if TYPE_CHECKING:  # HTTP code loads when HTTP is used: a stdio server starts sooner without it
    from .transports.http.app import HttpOptions, McpHttpApp

__all__ = ["http_app", "run", "run_http", "run_stdio", "serve_http", "serve_stdio"]

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
    reaches the client (`print()` in a tool goes to stderr). The server's broker relays what
    other workers publish meanwhile (`Server.relay`).

    Args:
        server: The server to serve.
        task_status: Reports when the server reads.

    Raises:
        TrioRequiredError: when called where no trio run is active (e.g. under asyncio).
    """
    require_trio("trio_mcp.serve_stdio")
    with _blocking_restored(0, 1), stdout_guard() as out_fd:
        reader = trio.lowlevel.FdStream(os.dup(0))
        writer = trio.lowlevel.FdStream(out_fd)
        try:
            async with (
                server.running(),  # the lifespan: entered before anything is read
                reader,
                writer,
                open_stdio_frames(
                    reader, writer, max_line_bytes=server.limits.max_line_bytes
                ) as frames,
                trio.open_nursery() as nursery,
            ):
                await nursery.start(server.relay)
                await server.serve_connection(frames.receive, frames.send, task_status=task_status)
                nursery.cancel_scope.cancel()  # served to the end: stop relaying
        except BaseExceptionGroup as group:  # a lone failure comes out as itself
            reraise_lone(group)


class _HttpBackend:
    """Adapts a `Server` to what the HTTP transport needs (`HttpBackend`)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.versions = server.versions
        self.sessionless_versions = tuple(v for v in server.versions if v in MODERN_VERSIONS)

    def new_session(self, assumed_version: str | None = None) -> SessionRuntime:
        runtime = SessionRuntime(self.server)
        if assumed_version in HANDSHAKE_VERSIONS and assumed_version in self.server.versions:
            runtime.session.adopt(assumed_version)
        return runtime

    def param_headers(self, tool: str) -> Mapping[str, tuple[str, ...]]:
        found = self.server._registry.get(tool)
        return {} if found is None else found.param_headers

    def base_scopes(self) -> tuple[str, ...]:
        return self.server._required_scopes

    def stays_open(self, request: Request) -> bool:
        return request.method == LISTEN

    async def resolve(
        self, request: Request, auth: AuthInfo | None, peer: str | None = None
    ) -> ResolvedRequest:
        return await self.server._resolve(request, auth, peer)

    async def serve_channels(
        self,
        receive: trio.MemoryReceiveChannel[bytes],
        send: trio.abc.SendChannel[bytes],
        *,
        auth: AuthInfo | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self.server.serve_connection(receive, send, auth=auth, task_status=task_status)


def http_app(server: Server, options: HttpOptions | None = None) -> McpHttpApp:
    """The ASGI application serving `server` over Streamable HTTP and legacy HTTP+SSE.

    For use under any ASGI server that runs on trio; run `await app.run()` beside it so that
    idle sessions expire. `serve_http` does all of that with Hypercorn.
    """
    from .transports.http.app import McpHttpApp  # noqa: PLC0415 - HTTP code loads only when used

    return McpHttpApp(_HttpBackend(server), options)


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    options: HttpOptions | None = None,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `server` over HTTP with Hypercorn until `shutdown_trigger` returns or cancelled.

    Each connection is served by Hypercorn's HTTP/1.1 and HTTP/2 code under trio-mcp's own
    accept loop, which bounds the connections (`HttpOptions.max_connections`) and answers 503
    past the bound. On shutdown, the server stops accepting connections and gives requests in
    flight `server.timeouts.shutdown` seconds to finish. The server's broker relays what other
    workers publish while it serves (`Server.relay`).

    Args:
        server: The server to serve.
        host: Address to bind; the default keeps the server local to this machine.
        port: Port to bind; 0 picks a free one.
        options: Limits and security settings (`HttpOptions`).
        shutdown_trigger: Awaited; when it returns, the server shuts down gracefully.
        task_status: Reports the bound URLs (e.g. ["http://127.0.0.1:8000"]).

    Raises:
        RuntimeError: when Hypercorn is not installed (pip install "trio-mcp[http]").
        TrioRequiredError: when called where no trio run is active (e.g. under asyncio).
        ValueError: for a wildcard `host` (0.0.0.0, ::) without `options.allowed_hosts`.
    """
    require_trio("trio_mcp.serve_http")
    await _serve_http(
        server,
        host=host,
        port=port,
        options=options,
        shutdown_trigger=shutdown_trigger,
        task_status=task_status,
    )


async def _serve_http(
    server: Server,
    *,
    host: str,
    port: int,
    options: HttpOptions | None,
    shutdown_trigger: Callable[[], Awaitable[None]] | None,
    listen_fd: int | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    # `serve_http`, and for a worker process (`listen_fd`) the socket it inherited.
    try:
        from .transports.http.serving import (  # noqa: PLC0415 - loads only when used
            check_bind,
            serve_app,
        )
    except ImportError as exc:
        raise RuntimeError('HTTP serving needs Hypercorn: pip install "trio-mcp[http]"') from exc
    app = http_app(server, options)
    check_bind(host, app.options)  # before the nursery: the error is not wrapped in a group
    async with server.running(), trio.open_nursery() as nursery:
        await nursery.start(app.run)
        await nursery.start(server._task_runtime.host)  # calls that become tasks run there
        await nursery.start(server.relay)  # what the fleet's other workers publish
        trigger = None
        if shutdown_trigger is not None:
            trigger = functools.partial(_shut_down_app, shutdown_trigger, app, server, nursery)

        async def serve_then_stop(task_status: trio.TaskStatus[list[str]]) -> None:
            await serve_app(
                app,
                app.options,
                host=host,
                port=port,
                # Its deadline comes after ours: at `Timeouts.shutdown` the requests still
                # running are answered "server shutting down" (`cut_short`), and those
                # answers need time to go out.
                graceful_timeout=server.timeouts.shutdown + FINAL_ANSWER_SECONDS,
                shutdown_trigger=trigger,
                listen_fd=listen_fd,
                task_status=task_status,
            )
            nursery.cancel_scope.cancel()  # served to the end: stop the session reaper too

        task_status.started(await nursery.start(serve_then_stop))


async def _shut_down_app(
    trigger: Callable[[], Awaitable[None]], app: McpHttpApp, server: Server, nursery: trio.Nursery
) -> None:
    await trigger()
    nursery.start_soon(_cut_short_after, app, server.timeouts.shutdown)
    # Tasks still running are settled and their ends told while the streams that follow them
    # are open; then subscriptions/listen streams (2026-07-28), which have no work to finish,
    # end with their plain result instead of holding the shutdown for the grace period.
    await server.wind_down()
    # Legacy SSE streams never end by themselves: without this, Hypercorn would hold them (and
    # so the shutdown) open until its graceful_timeout. GET streams end once they have sent
    # what was queued for them (the tasks' ends among it).
    app.begin_shutdown()


async def _cut_short_after(app: McpHttpApp, grace: float) -> None:
    # Cancelled with the nursery when serving ends first (every request answered in time).
    await trio.sleep(grace)
    app.cut_short()


def run(
    server: Server,
    transport: str = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    options: HttpOptions | None = None,
) -> None:
    """Serve `server` until its input ends (stdio) or SIGINT/SIGTERM arrives.

    Args:
        server: The server to run.
        transport: "stdio" or "http" (Streamable HTTP at /mcp plus legacy SSE at /sse).
        host: For "http": the address to bind.
        port: For "http": the port to bind.
        options: For "http": limits and security settings.

    Raises:
        ValueError: for an unknown transport, or "http" on a wildcard `host` (0.0.0.0, ::)
            without `options.allowed_hosts`.
        OSError: when the address cannot be bound.
        LifespanError: when the server's lifespan raised on entry (nothing was served).
    """
    if transport == "stdio":
        run_stdio(server)
    elif transport == "http":
        run_http(server, host=host, port=port, options=options)
    else:
        raise ValueError(f"unknown transport {transport!r}; use 'stdio' or 'http'")


def run_http(
    server: Server,
    *,
    host: str,
    port: int,
    options: HttpOptions | None,
    listen_fd: int | None = None,
    on_serving: Callable[[trio.Event], Awaitable[None]] | None = None,
) -> None:
    """`run(server, "http", ...)`: serve until SIGINT or SIGTERM, then shut down gracefully.

    A failure to start (port taken, a wildcard address without allowed hosts, a lifespan that
    raised) comes out as the error itself.

    Args:
        server: The server to run.
        host: The address to bind, or that `listen_fd` is bound to (checked alike).
        port: The port to bind.
        options: Limits and security settings.
        listen_fd: A listening socket to serve instead of binding one (a worker process's,
            inherited from the process that bound it).
        on_serving: Started once the server serves, in place of the line on stderr that says
            where; it is given the event that stops the server, as a signal does.
    """
    serve = functools.partial(
        _run_http,
        server,
        host=host,
        port=port,
        options=options,
        listen_fd=listen_fd,
        on_serving=on_serving,
    )
    _run_trio(serve)


async def _run_http(
    server: Server,
    *,
    host: str,
    port: int,
    options: HttpOptions | None,
    listen_fd: int | None,
    on_serving: Callable[[trio.Event], Awaitable[None]] | None,
) -> None:
    stop = trio.Event()
    with trio.open_signal_receiver(*_STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for signum in signals:
                    print(f"trio-mcp: {signal.Signals(signum).name}, stopping", file=sys.stderr)
                    stop.set()

            nursery.start_soon(stop_on_signal)
            async with trio.open_nursery() as serving:
                binds = await serving.start(
                    functools.partial(
                        _serve_http,
                        server,
                        host=host,
                        port=port,
                        options=options,
                        shutdown_trigger=stop.wait,
                        listen_fd=listen_fd,
                    )
                )
                if on_serving is None:
                    path = options.path if options is not None else _default_path()
                    urls = ", ".join(bind + path for bind in binds)
                    print(f"trio-mcp: serving MCP on {urls}", file=sys.stderr)
                else:
                    nursery.start_soon(on_serving, stop)
            nursery.cancel_scope.cancel()  # served to the end: stop watching for signals


def run_stdio(server: Server, *, try_with: str | None = None) -> None:
    """`run(server)` over stdio, with the command that tries it for the note on a terminal.

    A stdio server waits for a client to write JSON-RPC to its stdin. Started by hand in a
    terminal, that looks like a hang: when stdin is a terminal, one line on stderr says what
    it waits for, how to stop it, and how to try its tools (`try_with`; by default
    `trio-mcp tools -- ` and this process's own command line).
    """
    if os.isatty(0):
        command = try_with or "trio-mcp tools -- " + shlex.join(sys.orig_argv)
        print(
            f"trio-mcp: serving {server.name} over stdio; it waits for an MCP client to write "
            f"to stdin (Ctrl-D or Ctrl-C to stop). To try its tools: {command}",
            file=sys.stderr,
            flush=True,
        )
    _run_trio(functools.partial(_run_stdio, server))


async def _run_stdio(server: Server) -> None:
    with trio.open_signal_receiver(*_STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                async for signum in signals:
                    print(f"trio-mcp: {signal.Signals(signum).name}, stopping", file=sys.stderr)
                    # The client hears how its tasks end before the connection does.
                    await server.wind_down()
                    nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            await serve_stdio(server)
            nursery.cancel_scope.cancel()


def _run_trio(fn: Callable[[], Awaitable[None]]) -> None:
    """`trio.run(fn)`, with a lone failure coming out as itself, not in a group."""
    try:
        trio.run(fn)
    except BaseExceptionGroup as group:
        reraise_lone(group)


def _default_path() -> str:
    from .transports.http.app import HttpOptions  # noqa: PLC0415 - HTTP code loads only when used

    return HttpOptions().path
