"""`Server`: the facade users fill with tools, and what all of its sessions share.

Rule 1: a `Server` holds what is the same for every client: its options, the tool registry, the
        dispatcher that answers requests and the hub of its live sessions. What belongs to one
        client lives in that client's `SessionRuntime` (`session`), never here.
Rule 2: it starts no task of its own: `serve_connection` runs one connection's tasks and returns
        when they have ended; HTTP serving is composed in `_run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import trio

from .._core.framing import DEFAULT_MAX_LINE_BYTES
from .._core.server_session import ServerSession
from .._core.types import ToolAnnotations
from .._core.versions import SUPPORTED_VERSIONS
from .._dispatch import Dispatcher
from .._features.tools import (
    RawHandler,
    Tool,
    ToolOptions,
    ToolRegistry,
    discover_tools,
    make_raw_tool,
    make_tool,
)
from .._version import __version__
from .connection import Frames, serve_frames
from .guard import require_trio
from .hub import SessionHub
from .invoke import TrioInvoker

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "Server"]

F = TypeVar("F", bound=Callable[..., Any])

# 1024 concurrent requests per connection: HTTP/2 servers commonly allow 100-250 concurrent
# streams per connection (nginx, Go net/http); MCP tools are often long-running I/O waits, so we
# allow more, while still bounding the tasks and memory one client can pin.
DEFAULT_MAX_IN_FLIGHT: Final = 1024
# Seconds that in-flight calls may still run after the input ended (stdio EOF), before they are
# cancelled. Kubernetes gives a terminating pod 30 s; a subprocess server is usually given less
# by the client that closed its stdin, so we pick a short bound.
DEFAULT_SHUTDOWN_GRACE: Final = 10.0


class Server:
    """An MCP server: a registry of tools plus how to serve them.

    Args:
        name: The server's name, sent as `serverInfo.name`.
        version: The server's version, sent as `serverInfo.version`.
        instructions: Text telling the model how to use this server.
        page_size: Tools per `tools/list` page; None lists all tools in one page.
        mask_error_details: Hide the type and message of unexpected tool exceptions from
            clients (they are still logged).
        max_line_bytes: Largest message accepted on line-framed transports.
        max_in_flight: Requests run at once per connection; as many more may wait for a
            slot, and a request past those is answered -32000 ("server busy") at once.
        shutdown_grace: Seconds in-flight calls may take to finish after the input ends; those
            still running then are answered -32000 ("server shutting down").
        versions: Protocol revisions accepted, newest first.
    """

    def __init__(
        self,
        name: str = "trio-mcp",
        version: str | None = None,
        *,
        instructions: str | None = None,
        page_size: int | None = None,
        mask_error_details: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
        versions: tuple[str, ...] = SUPPORTED_VERSIONS,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be positive")
        self.name = name
        self.version = version or __version__
        self.instructions = instructions
        self.max_line_bytes = max_line_bytes
        self.max_in_flight = max_in_flight
        self.shutdown_grace = shutdown_grace
        self.versions = versions
        self.registry = ToolRegistry()
        self.dispatcher = Dispatcher(
            self.registry,
            TrioInvoker(),
            page_size=page_size,
            mask_error_details=mask_error_details,
        )
        #: The sessions open now (not public API): where a broadcast to every client goes.
        self.hub = SessionHub(self.registry)

    # -- registration ---------------------------------------------------------------------------

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """Register one function as a tool; arguments override its `@tool` metadata.

        Returns:
            The registered tool.

        Raises:
            ToolDefinitionError: when the function cannot be a tool or the name is taken.
        """
        options = ToolOptions(name, description, title, annotations, inline, timeout)
        new = make_tool(fn, options)
        self.registry.add(new)
        return new

    def tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
    ) -> Callable[[F], F]:
        """Decorator registering a function as a tool on this server right away.

        Raises:
            ToolDefinitionError: when the function cannot be a tool or the name is taken.
        """
        options = ToolOptions(name, description, title, annotations, inline, timeout)

        def register(fn: F) -> F:
            self.registry.add(make_tool(fn, options))
            return fn

        return register

    def add_tools(self, obj: Any) -> list[Tool]:
        """Register every `@tool`-tagged function of a module, class or instance.

        Returns:
            The registered tools, in definition order.

        Raises:
            ToolDefinitionError: when one cannot be registered (none of them is, then).
        """
        tools = [make_tool(fn) for fn in discover_tools(obj)]
        # Register into a scratch registry first: a clash (within `obj` or with a tool already
        # registered) then raises before this server's registry has changed at all.
        trial = ToolRegistry()
        for existing in self.registry:
            trial.add(existing)
        for new in tools:
            trial.add(new)
        for new in tools:
            self.registry.add(new)
        return tools

    def add_raw_tool(
        self,
        name: str,
        input_schema: dict[str, Any],
        handler: RawHandler,
        *,
        description: str | None = None,
        title: str | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool = False,
        timeout: float | None = None,
    ) -> Tool:
        """Register a tool from a hand-written JSON Schema and a handler `(arguments) -> result`.

        The handler may be sync or async. Arguments get light checks only (required names,
        closed objects, top-level JSON types): the handler owns deeper validation.

        Raises:
            ToolDefinitionError: for a bad name, a non-object schema or a taken name.
        """
        options = ToolOptions(None, description, title, annotations, inline, timeout)
        new = make_raw_tool(name, input_schema, handler, options, output_schema=output_schema)
        self.registry.add(new)
        return new

    @property
    def tools(self) -> list[Tool]:
        """The registered tools, in registration order."""
        return list(self.registry)

    def new_session(self) -> ServerSession:
        """A fresh protocol session for one client connection."""
        return ServerSession(
            server_info={"name": self.name, "version": self.version},
            capabilities={"tools": {"listChanged": False}, "logging": {}},
            instructions=self.instructions,
            versions=self.versions,
        )

    # -- serving --------------------------------------------------------------------------------

    async def serve_connection(
        self,
        receive: Frames,
        send: trio.abc.SendChannel[bytes],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one client over a pair of frame channels until `receive` ends.

        Args:
            receive: Frames from the client (one JSON text each), or batches of them (a
                `LineTooLong` in a batch stands for a frame that was too long and is answered
                with -32600 in its place); the channel's end ends the session.
            send: Where response and notification frames go.
            task_status: Reports when the server is ready to read.

        Raises:
            TrioRequiredError: when called where no trio run is active (e.g. under asyncio).
        """
        require_trio("Server.serve_connection")
        await serve_frames(self, receive, send, task_status=task_status)
