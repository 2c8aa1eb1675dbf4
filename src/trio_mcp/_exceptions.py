"""The exception tree of trio-mcp. Every exception we raise derives from one root.

    TrioMCPError
    ├── ToolDefinitionError        a tool cannot be registered (raised at registration)
    ├── ToolError                  raised *by a tool* to report a failure to the model verbatim
    ├── ResourceNotFoundError      raised by a resource template's function: no such resource
    ├── ToolCallError              client: a tool's result had `isError` (with raise_on_error)
    ├── RequestError               client: the server answered a request with a JSON-RPC error
    ├── ProtocolError              a JSON-RPC / MCP rule was broken
    │   ├── LocalProtocolError     ... by us (a bug or misuse on this side)
    │   └── RemoteProtocolError    ... by the peer (carries the JSON-RPC error code to answer with)
    └── TransportError             the byte stream itself failed (line too long, closed)
        ├── ConnectionClosed       client: the connection to the server ended (pending calls fail)
        └── SessionExpiredError    client: the HTTP server no longer knows the session (404)

Rule: `BaseException`s that are not `Exception`s (trio.Cancelled, KeyboardInterrupt) are never
wrapped or caught by this library; they pass through untouched.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConnectionClosed",
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestError",
    "ResourceNotFoundError",
    "SessionExpiredError",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolError",
    "TransportError",
    "TrioMCPError",
    "lone_exception",
    "reraise_lone",
]


class TrioMCPError(Exception):
    """Root of every exception raised by trio-mcp."""


class ToolDefinitionError(TrioMCPError, TypeError):
    """A function cannot become a tool: raised at registration, never at call time.

    The message names the function (and the parameter, where one is at fault) and says how to
    fix it.
    """


class ToolError(TrioMCPError):
    """Raise inside a tool to report a failure; the message reaches the client verbatim.

    The result is a `tools/call` result with `isError: true` whose text is `str(error)`.
    """


class ResourceNotFoundError(TrioMCPError):
    """Raise inside a resource (template) function: the URI names nothing that exists.

    The client gets the protocol's resource-not-found error for the URI it read (-32002 up to
    2025-11-25, -32602 from 2026-07-28), as if no template had matched.
    """


class ProtocolError(TrioMCPError):
    """A JSON-RPC or MCP rule was broken.

    Attributes:
        code: The JSON-RPC error code that describes the failure.
        data: Optional structured detail for the error response.
    """

    def __init__(self, message: str, code: int = -32600, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


class LocalProtocolError(ProtocolError):
    """This side tried to break the protocol (for example, answering an unknown request)."""


class RemoteProtocolError(ProtocolError):
    """The peer broke the protocol; `code` is what to answer it with."""


class TransportError(TrioMCPError):
    """The byte stream failed: a message too large to frame, or a stream closed mid-message."""


class ConnectionClosed(TransportError):  # noqa: N818 - the name the issue gives it
    """The connection to the server ended; every call still waiting fails with this.

    The message says why, as far as it is known: for a server run as a subprocess, its exit
    code and the last lines it wrote to stderr; for HTTP, the network error after retries.
    """


class SessionExpiredError(TransportError):
    """The HTTP server answered 404 for the session: it ended or forgot it.

    The client re-initializes once and sends the request again (a 404 means the request never
    reached a session, so sending it again cannot run it twice); this error reaches the caller
    only when the new session is refused too.

    Attributes:
        session_id: The session the server no longer knows.
    """

    def __init__(self, message: str, session_id: str | None = None) -> None:
        super().__init__(message)
        self.session_id = session_id


class RequestError(TrioMCPError):
    """The server answered a request with a JSON-RPC error (for example, an unknown tool).

    Attributes:
        message: The error's message, as the server wrote it.
        code: The JSON-RPC error code (-32602 invalid params, -32601 unknown method, ...).
        data: The error's optional structured detail.
    """

    def __init__(self, message: str, code: int, data: Any = None) -> None:
        super().__init__(f"{message} (JSON-RPC error {code})")
        self.message = message
        self.code = code
        self.data = data


class ToolCallError(TrioMCPError):
    """A tool call's result was marked `isError` and the caller asked for it to raise.

    Attributes:
        tool: The tool's name.
        result: The whole result (a `trio_mcp.ToolResult`), content blocks included.
    """

    def __init__(self, tool: str, message: str, result: Any) -> None:
        super().__init__(f"tool {tool!r} failed: {message}")
        self.tool = tool
        self.result = result


def lone_exception(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The single exception inside nested one-member groups, or None when there are more."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        if len(exc.exceptions) != 1:
            return None
        exc = exc.exceptions[0]
    return exc


def reraise_lone(group: BaseExceptionGroup[BaseException]) -> None:
    """Raise the lone exception of `group` as itself (traceback and context kept), else `group`."""
    lone = lone_exception(group)
    if lone is None:
        raise group
    context = lone.__context__
    try:
        raise lone
    finally:
        lone.__context__ = context  # not the group we unwrapped
