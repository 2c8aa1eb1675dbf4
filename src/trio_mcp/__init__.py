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

from ._context import Context
from ._exceptions import (
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
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
from .transports.http import HttpOptions

__version__ = "0.1.0"

__all__ = [
    "SUPPORTED_VERSIONS",
    "AudioContent",
    "CallToolResult",
    "Context",
    "EmbeddedResource",
    "HttpOptions",
    "ImageContent",
    "LocalProtocolError",
    "Param",
    "ProtocolError",
    "RemoteProtocolError",
    "ResourceLink",
    "Server",
    "TextContent",
    "Tool",
    "ToolAnnotations",
    "ToolDefinitionError",
    "ToolError",
    "TransportError",
    "TrioMCPError",
    "http_app",
    "run",
    "serve_http",
    "serve_stdio",
    "tool",
]
