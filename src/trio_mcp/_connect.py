"""Composition root, client side: `open_client` picks a link for a target and runs a `Client`.

This module only wires: the client runtime (`_runtime/client`) and the links (`transports/`) do
not know each other, and neither knows `Server`; an in-process server is served here
(`open_in_process`), over memory channels, for the `async with` block. What `open_client`
starts ends with its `async with`, and a single error comes out as itself, however many
nurseries it crossed.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal
from urllib.parse import urlsplit

import trio

from ._core.framing import DEFAULT_MAX_LINE_BYTES
from ._core.versions import LATEST_HANDSHAKE_VERSION
from ._exceptions import reraise_lone
from ._runtime.client import Client, open_session
from ._runtime.guard import require_trio
from ._runtime.link import Link
from ._runtime.options import (
    CLIENT_MOVED,
    Asking,
    LogHandler,
    RequestMetaHook,
    SessionOptions,
    moved_keywords,
)
from ._runtime.server import Server
from .oauth.rules import OAuth
from .transports.http.client import RetryPolicy, open_sse_link, open_streamable_http_link
from .transports.links import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    ChannelLink,
    open_process_link,
)
from .transports.memory import TappedReceiveChannel, memory_channel_pair

__all__ = ["Tap", "open_client", "open_in_process"]

Transport = Literal["auto", "stdio", "streamable-http", "sse"]
#: Sees one frame on its way: `tap(sender, frame)`, sender "client" or "server".
Tap = Callable[[Literal["client", "server"], bytes], None]


@contextlib.asynccontextmanager
async def open_client(
    target: str | Sequence[str] | Server,
    *,
    transport: Transport = "auto",
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    headers: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
    auth: OAuth | None = None,
    client_info: Mapping[str, str] | None = None,
    protocol_version: str = LATEST_HANDSHAKE_VERSION,
    log_handler: LogHandler | None = None,
    validate_output: bool = True,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
    echo_stderr: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    asking: Asking | None = None,
    tasks: bool = False,
    request_meta: RequestMetaHook | None = None,
    **moved: Any,
) -> AsyncIterator[Client]:
    """Connect to an MCP server, initialize, and yield a `Client` for the `async with` block.

    ```python
    async with open_client(["python", "-m", "demo_tools"]) as client:
        result = await client.call_tool("calculator.add", {"a": 5, "b": 3})
    ```

    Args:
        target: What to connect to:
            a command and its arguments (a list): run as a subprocess, spoken to over stdio;
            an http(s) URL: Streamable HTTP, or the legacy HTTP+SSE transport when the path
            ends in `/sse`;
            a `Server`: served in this process over memory channels (for tests).
        transport: Force "stdio", "streamable-http" or "sse" instead of guessing ("auto").
        env: stdio: variables added to the environment the server inherits.
        cwd: stdio: the server's working directory.
        headers: HTTP: sent with every request (e.g. `{"Authorization": "Bearer ..."}`).
        retry: HTTP: how transient network failures are retried (`RetryPolicy`).
        auth: HTTP: authorize with OAuth 2.1 as the MCP spec says (`OAuth`): every request
            carries the access token, and a 401 runs discovery, registration and the grant.
        client_info: `{"name": ..., "version": ...}` sent to the server.
        protocol_version: The revision to ask for; the server may answer with an older one.
            "2026-07-28" speaks per-request metadata (no handshake) when the server does, and
            falls back to `initialize` when it does not.
        log_handler: Receives each `LogMessage` the server sends (sync or async). Without one,
            they go to the `trio_mcp.client.server` logger.
        validate_output: Check a tool's `structuredContent` against its output schema (needs
            the `jsonschema` package and a prior `list_tools()`).
        shutdown_timeout: stdio: seconds the server gets to exit after its stdin closes, and
            again after SIGTERM, before it is killed.
        echo_stderr: stdio: copy the server's stderr to ours (it is always kept for errors).
        max_line_bytes: stdio: the longest message accepted from the server.
        asking: How the client answers what the server asks (`Asking`): the elicitation
            and sampling handlers, the roots, the elicitation modes, and how many rounds of
            2026-07-28 input requests one call answers. Without it the client declares none
            of these capabilities, and the server's questions are refused with -32601.
        tasks: Declare the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): the
            server may then run a long call as a task, which `call_tool` follows to its end
            (polling, answering its questions, cancelling it when the caller stops waiting);
            `call_tool_as_task`, `wait_task`, `get_task`, `update_task` and `cancel_task`
            work with tasks directly. Off by default: the extension is a draft, and a task
            adds at least one poll interval to a call's latency. Under 2025-11-25, whose own
            tasks the client asks for, it asks for them for every task tool, declares that
            revision's `tasks` capability and runs the server's sampling and elicitation as
            tasks when asked; a tool that runs only as a task is a task without it too.
        request_meta: Called with the method of each request sent; what it returns is added
            to the request's `_meta` (keys the request already has there are kept).
            `trio_mcp.middleware.trace_context_meta` adds the caller's OpenTelemetry trace
            context (`traceparent`...), so that a server's spans join the caller's trace.
        **moved: The keywords `asking` replaced (`elicitation_handler=`,
            `sampling_handler=`, `roots=`, `elicitation_modes=`, `on_elicitation_complete=`,
            `max_input_rounds=`): still taken, with a `DeprecationWarning`.

    Yields:
        The connected, initialized client.

    Raises:
        ConnectionClosed: when the server cannot be reached or ends before answering.
        TransportError: when the server cannot be started or refuses the connection.
        AuthorizationError: when OAuth cannot authorize the connection (`auth`).
        RemoteProtocolError: when the server answers the handshake in a way this client
            cannot speak.
        ValueError: for a target that is neither a command, a URL nor a `Server`, an
            unknown elicitation mode, or a root that is not a `file://` URI.
        TypeError: for a keyword that does not exist.
        TrioRequiredError: when called where no trio run is active (e.g. under asyncio).
    """
    require_trio("trio_mcp.open_client")
    # The body runs as the `async with` enters: the warning points through `__aenter__` at it.
    asking = moved_keywords(
        "open_client", moved, CLIENT_MOVED, {"asking": asking or Asking()}, stacklevel=3
    )["asking"]
    options = SessionOptions(
        client_info=client_info,
        protocol_version=protocol_version,
        log_handler=log_handler,
        validate_output=validate_output,
        asking=asking,
        tasks=tasks,
        request_meta=request_meta,
    )
    session = functools.partial(open_session, options=options)
    try:
        if isinstance(target, Server):
            async with open_in_process(target, session) as client:
                yield client
            return
        if isinstance(target, str):
            if urlsplit(target).scheme not in ("http", "https"):
                raise ValueError(
                    f"{target!r} is not an http(s) URL; give a command as a list, e.g. "
                    '["python", "-m", "demo_tools"]'
                )
            sse = transport == "sse" or (
                transport == "auto" and urlsplit(target).path.rstrip("/").endswith("/sse")
            )
            if sse:
                async with (
                    open_sse_link(target, headers=headers, retry=retry, auth=auth) as sse_link,
                    session(sse_link) as client,
                ):
                    yield client
            else:
                # A client that answers the server's requests hears those tied to no call of
                # its own on the session's GET stream.
                async with (
                    open_streamable_http_link(
                        target, headers=headers, retry=retry, listen=asking.listens, auth=auth
                    ) as http_link,
                    session(http_link) as client,
                ):
                    yield client
            return
        async with (
            open_process_link(
                list(target),
                env=env,
                cwd=cwd,
                max_line_bytes=max_line_bytes,
                shutdown_timeout=shutdown_timeout,
                echo_stderr=echo_stderr,
            ) as process_link,
            session(process_link) as client,
        ):
            yield client
    except BaseExceptionGroup as group:
        reraise_lone(group)


@contextlib.asynccontextmanager
async def open_in_process(
    server: Server,
    session: Callable[[Link], AbstractAsyncContextManager[Client]],
    *,
    tap: Tap | None = None,
) -> AsyncIterator[Client]:
    """Serve `server` in this process over memory channels and run a client session on them.

    Args:
        server: The server, served in this task's nursery for the `async with` block.
        session: Opens the client over a link (`open_session` with its options).
        tap: Sees every frame as its receiver takes it, `tap("client", frame)` before the
            server reads what the client sent and `tap("server", frame)` before the client
            reads what the server sent; what it raises ends the connection and comes out of
            the `async with`.

    Yields:
        The connected client.
    """
    client_end, server_end = memory_channel_pair()
    to_client: trio.abc.ReceiveChannel[bytes] = client_end.receive
    to_server: trio.abc.ReceiveChannel[bytes] = server_end.receive
    if tap is not None:
        to_client = TappedReceiveChannel(client_end.receive, functools.partial(tap, "server"))
        to_server = TappedReceiveChannel(server_end.receive, functools.partial(tap, "client"))
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_connection, to_server, server_end.send)
            link = ChannelLink(client_end.send, to_client, f"in-process server {server.name}")
            async with session(link) as client:
                yield client
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        reraise_lone(group)
