"""trio-mcp: plain type-annotated Python functions become Model Context Protocol tools.

```python
from typing import Annotated
from trio_mcp import Param, Server, tool

@tool("calculator.add", "Add two numbers", inline=True)
def add(
    a: Annotated[float, Param("First number")],
    b: Annotated[float, Param("Second number")],
) -> float:
    return a + b
```
"""

from ._client import Client, LogMessage, Progress, ToolInfo, ToolParameter, ToolResult
from ._connect import open_client
from ._context import Context
from ._exceptions import (
    ConnectionClosed,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    RequestError,
    SessionExpiredError,
    ToolCallError,
    ToolDefinitionError,
    ToolError,
    TransportError,
    TrioMCPError,
)
from ._run import http_app, run, serve_http, serve_stdio
from ._server import Server
from ._session import SUPPORTED_VERSIONS
from ._signature import Param
from ._tools import Tool, tool
from ._types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolAnnotations,
)
from ._version import __version__ as __version__
from .transports.http import HttpOptions
from .transports.http_client import RetryPolicy

__all__ = [
    "SUPPORTED_VERSIONS",
    "AudioContent",
    "CallToolResult",
    "Client",
    "ConnectionClosed",
    "Context",
    "EmbeddedResource",
    "HttpOptions",
    "ImageContent",
    "LocalProtocolError",
    "LogMessage",
    "Param",
    "Progress",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestError",
    "ResourceLink",
    "RetryPolicy",
    "Server",
    "SessionExpiredError",
    "TextContent",
    "Tool",
    "ToolAnnotations",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolError",
    "ToolInfo",
    "ToolParameter",
    "ToolResult",
    "TransportError",
    "TrioMCPError",
    "http_app",
    "open_client",
    "run",
    "serve_http",
    "serve_stdio",
    "tool",
]
