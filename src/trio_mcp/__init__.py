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

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from ._client import Client, LogMessage, Progress, ToolInfo, ToolParameter, ToolResult
    from ._connect import open_client
    from ._run import http_app, run, serve_http, serve_stdio
    from ._server import Server
    from .transports.http import HttpOptions
    from .transports.http_client import RetryPolicy

# What needs trio loads on first use of its name. `import trio_mcp` brings in the declaration
# API only (tool, Param, ToolError, content blocks), so a module that merely defines tools imports
# in a third of the time; `Server` and `run` load the runtime and trio. The client half and the
# HTTP code load later still: a server started over stdio never needs them.
_LAZY = {
    "Server": "._server",
    "http_app": "._run",
    "run": "._run",
    "serve_http": "._run",
    "serve_stdio": "._run",
    "Client": "._client",
    "LogMessage": "._client",
    "Progress": "._client",
    "ToolInfo": "._client",
    "ToolParameter": "._client",
    "ToolResult": "._client",
    "open_client": "._connect",
    "HttpOptions": ".transports.http",
    "RetryPolicy": ".transports.http_client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # The import statement's own machinery (not importlib.import_module), so that
    # `python -X importtime` shows these modules like any other when people profile start-up.
    value = getattr(__import__(module[1:], globals(), None, [name], 1), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
