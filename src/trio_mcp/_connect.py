"""Composition root, client side: `open_client` picks a link for a target and runs a `Client`.

Rule 1: this module only wires. The runtime (`_client`) and the links (`transports/`) do not
        know each other, and neither knows `Server`; an in-process server is served here, over
        memory channels, in the client's own nursery.
Rule 2: what `open_client` starts ends with its `async with`, and a single error comes out as
        itself, however many nurseries it crossed.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Literal
from urllib.parse import urlsplit

import trio

from ._core.answering import ELICITATION_MODES
from ._core.framing import DEFAULT_MAX_LINE_BYTES
from ._core.versions import LATEST_HANDSHAKE_VERSION
from ._exceptions import reraise_lone
from ._runtime.client import (
    DEFAULT_MAX_INPUT_ROUNDS,
    Client,
    ElicitationCompleteHandler,
    ElicitationHandler,
    LogHandler,
    RequestMetaHook,
    Roots,
    SamplingHandler,
    open_session,
)
from ._runtime.guard import require_trio
from ._runtime.link import Link
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
    elicitation_handler: ElicitationHandler | None = None,
    sampling_handler: SamplingHandler | None = None,
    roots: Roots | None = None,
    elicitation_modes: Collection[str] = ELICITATION_MODES,
    on_elicitation_complete: ElicitationCompleteHandler | None = None,
    max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
    tasks: bool = False,
    request_meta: RequestMetaHook | None = None,
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
        elicitation_handler: Answers the server's elicitations:
            `async handler(request: ElicitRequest) -> Accepted | Declined | Cancelled`, with
            `Accepted({...})` holding a form's values (fields left out get the schema's
            defaults) and `Accepted(None)` for a URL-mode elicitation the user agreed to
            open. Given, the `elicitation` capability is declared.
        sampling_handler: Answers the server's sampling requests:
            `async handler(request: SamplingRequest) -> SamplingResult`. Given, the
            `sampling` capability is declared.
        roots: The roots the client exposes: a list of `Root` (`file://` URIs), or a
            function (sync or async) that returns one when the server asks. Given (even
            empty), the `roots` capability is declared and `Client.set_roots` may change them.
        elicitation_modes: The elicitation modes the handler takes, "form" and "url" by
            default; revisions before 2025-11-25 know forms only.
        on_elicitation_complete: Called (sync or async) with the `elicitationId` of a
            URL-mode elicitation the server says is complete.
        max_input_rounds: 2026-07-28: how many rounds of input requests one call answers
            before it fails with `RemoteProtocolError`.
        tasks: Declare the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): the
            server may then run a long call as a task, which `call_tool` follows to its end
            (polling, answering its questions, cancelling it when the caller stops waiting);
            `call_tool_as_task`, `wait_task`, `get_task`, `update_task` and `cancel_task`
            work with tasks directly. Off by default: the extension is a draft, and a task
            adds at least one poll interval to a call's latency.
        request_meta: Called with the method of each request sent; what it returns is added
            to the request's `_meta` (keys the request already has there are kept).
            `trio_mcp.middleware.trace_context_meta` adds the caller's OpenTelemetry trace
            context (`traceparent`...), so that a server's spans join the caller's trace.

    Handlers run in tasks of their own (or, for 2026-07-28 input requests, in the calling
    task), concurrently, and may call the server. A handler that raises makes the server's
    request fail with -32603 and its message (a `RequestError` gives its own code), and under
    2026-07-28 ends the call that needed the answer, with that exception. Without a handler
    the capability is not declared and the server's request is refused with -32601.

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
        TrioRequiredError: when called where no trio run is active (e.g. under asyncio).
    """
    require_trio("trio_mcp.open_client")
    session = functools.partial(
        open_session,
        client_info=client_info,
        protocol_version=protocol_version,
        log_handler=log_handler,
        validate_output=validate_output,
        elicitation_handler=elicitation_handler,
        sampling_handler=sampling_handler,
        roots=roots,
        elicitation_modes=elicitation_modes,
        on_elicitation_complete=on_elicitation_complete,
        max_input_rounds=max_input_rounds,
        tasks=tasks,
        request_meta=request_meta,
    )
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
                listen = any(
                    handler is not None
                    for handler in (
                        elicitation_handler,
                        sampling_handler,
                        roots,
                        on_elicitation_complete,
                    )
                )
                async with (
                    open_streamable_http_link(
                        target, headers=headers, retry=retry, listen=listen, auth=auth
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
