"""The exception tree of trio-mcp. Every exception we raise derives from one root.

    TrioMCPError
    ├── ToolDefinitionError        a tool cannot be registered (raised at registration)
    ├── ToolError                  raised *by a tool* to report a failure to the model verbatim
    ├── ProtocolError              a JSON-RPC / MCP rule was broken
    │   ├── LocalProtocolError     ... by us (a bug or misuse on this side)
    │   └── RemoteProtocolError    ... by the peer (carries the JSON-RPC error code to answer with)
    └── TransportError             the byte stream itself failed (line too long, closed)

Rule: `BaseException`s that are not `Exception`s (trio.Cancelled, KeyboardInterrupt) are never
wrapped or caught by this library; they pass through untouched.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "ToolDefinitionError",
    "ToolError",
    "TransportError",
    "TrioMCPError",
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
