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

Where a `tools/call` goes, over stdio (the package's layers, imports pointing down):

1. `_run.serve_stdio` enters the server's lifespan (`Server.running`) and opens
   `transports/stdio`: the reader takes what stdin has ready as one batch of lines;
   `_runtime/connection._Connection` reads the batches.
2. `_core/jsonrpc.parse` classifies each line (request, notification, response, or an invalid
   message that is still answered; a response is never answered).
3. `_dispatch/resolve` turns the request into one `ResolvedRequest`, once: the tool it names,
   its arguments validated, the scopes it needs, the caller's token, and whether it can be
   answered without waiting. Everything below reads that record; nothing looks it up again.
4. `_runtime/session.SessionRuntime.start` admits it (`_core/server_session` checks its
   revision, from `_core/versions`, and marks its id in flight). A record that needs no
   waiting (an `inline=True` tool, a list, a ping) is answered right there, on the reader's
   task; any other runs in a task of its own (`answer`), in the cancel scope the session's
   peer engine (`_runtime/peer`, the one both sides stand on) gave it.
5. `_dispatch/dispatcher.Dispatcher.answer` runs the middleware chain (`_dispatch/middleware`,
   the user's, outermost first) around the route's handler, which calls the function through
   `_runtime/invoke` (worker thread, limiter, timeout) and turns its value or exception into
   the result: the one error boundary.
6. The response (`_core/jsonrpc` encodes) goes back to `_Connection`, which writes everything
   answered for one read of input in one write to stdout.

Streamable HTTP enters at `transports/http/app` instead: the token is verified (the gate,
`transports/http/gate`, asks a verifier of `auth/`), each POSTed request resolved once
(`HttpBackend.resolve`), its scopes checked against the token (403) from that record, which then
goes to the same `SessionRuntime.start`. The client half is `_runtime/client` (its public API,
its connection, a module per feature) over `transports/`, on the same `_runtime/peer` engine,
authorized by `oauth/`.
"""

from typing import TYPE_CHECKING, Any

from ._core.asking import (
    Accepted,
    Cancelled,
    Declined,
    ElicitOutcome,
    ElicitRequest,
    Root,
    SamplingMessage,
    SamplingRequest,
    SamplingResult,
)
from ._core.auth import AuthInfo
from ._core.types import (
    Annotations,
    AudioContent,
    CacheHint,
    CallToolResult,
    EmbeddedResource,
    Icon,
    ImageContent,
    PromptMessage,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolAnnotations,
)
from ._core.versions import SUPPORTED_VERSIONS
from ._exceptions import (
    AuthorizationError,
    ClientCapabilityError,
    ClientTimeoutError,
    ConnectionClosed,
    InsufficientScopeError,
    InvalidTokenError,
    LifespanError,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    RequestError,
    ResourceNotFoundError,
    SessionExpiredError,
    TaskCancelledError,
    ToolCallError,
    ToolDefinitionError,
    ToolError,
    TransportError,
    TrioMCPError,
    TrioRequiredError,
)
from ._features.asking import Choices
from ._features.context import Context
from ._features.prompts import Prompt, prompt
from ._features.resources import Resource, ResourceTemplate, resource
from ._features.signature import Param
from ._features.tasks import MemoryTaskStore, TaskRecord, TaskStore, TaskSupport
from ._features.tools import Tool, tool
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._connect import open_client
    from ._core.client_records import (
        Completion,
        LogMessage,
        Progress,
        PromptArgument,
        PromptInfo,
        PromptResult,
        ResourceInfo,
        ResourceResult,
        ResourceTemplateInfo,
        TaskInfo,
        ToolInfo,
        ToolParameter,
        ToolResult,
    )
    from ._dispatch.middleware import CallNext, Middleware
    from ._dispatch.resolve import ResolvedRequest
    from ._run import http_app, run, serve_http, serve_stdio
    from ._runtime.broker import Broker, InProcessBroker
    from ._runtime.client import Client
    from ._runtime.redis_broker import RedisBroker
    from ._runtime.redis_tasks import RedisTaskStore
    from ._runtime.server import Server
    from ._runtime.session import SessionInfo
    from .auth.resource import ProtectedResource, TokenVerifier
    from .auth.verifiers import IntrospectionVerifier, JwtVerifier, StaticTokenVerifier
    from .oauth.flow import AutoRedirect, id_jag_assertion
    from .oauth.loopback import LoopbackCallback, open_browser, open_loopback_callback
    from .oauth.rules import (
        AssertionRequest,
        AuthorizationResponse,
        ClientRegistration,
        MemoryTokenStorage,
        OAuth,
        OAuthTokens,
        TokenStorage,
    )
    from .oauth.storage import FileTokenStorage
    from .transports.http.app import HttpOptions
    from .transports.http.client import RetryPolicy
    from .transports.http.replay import EventStore, MemoryEventStore

# What needs trio loads on first use of its name. `import trio_mcp` brings in the declaration
# API only (tool, Param, ToolError, content blocks), so a module that merely defines tools imports
# in a third of the time; `Server` and `run` load the runtime and trio. The client half and the
# HTTP code load later still: a server started over stdio never needs them.
_LAZY = {
    "Server": "._runtime.server",
    "SessionInfo": "._runtime.session",
    "CallNext": "._dispatch.middleware",
    "Middleware": "._dispatch.middleware",
    "ResolvedRequest": "._dispatch.resolve",
    "Broker": "._runtime.broker",
    "InProcessBroker": "._runtime.broker",
    "RedisBroker": "._runtime.redis_broker",
    "RedisTaskStore": "._runtime.redis_tasks",
    "http_app": "._run",
    "run": "._run",
    "serve_http": "._run",
    "serve_stdio": "._run",
    "Client": "._runtime.client",
    "Completion": "._core.client_records",
    "PromptArgument": "._core.client_records",
    "PromptInfo": "._core.client_records",
    "PromptResult": "._core.client_records",
    "ResourceInfo": "._core.client_records",
    "ResourceResult": "._core.client_records",
    "ResourceTemplateInfo": "._core.client_records",
    "LogMessage": "._core.client_records",
    "Progress": "._core.client_records",
    "TaskInfo": "._core.client_records",
    "ToolInfo": "._core.client_records",
    "ToolParameter": "._core.client_records",
    "ToolResult": "._core.client_records",
    "open_client": "._connect",
    "HttpOptions": ".transports.http.app",
    # The verifiers load PyJWT (the `auth` extra) only when a `JwtVerifier` is made.
    "IntrospectionVerifier": ".auth.verifiers",
    "JwtVerifier": ".auth.verifiers",
    "ProtectedResource": ".auth.resource",
    "StaticTokenVerifier": ".auth.verifiers",
    "TokenVerifier": ".auth.resource",
    "RetryPolicy": ".transports.http.client",
    "AssertionRequest": ".oauth.rules",
    "AuthorizationResponse": ".oauth.rules",
    "ClientRegistration": ".oauth.rules",
    "MemoryTokenStorage": ".oauth.rules",
    "OAuth": ".oauth.rules",
    "OAuthTokens": ".oauth.rules",
    "TokenStorage": ".oauth.rules",
    "AutoRedirect": ".oauth.flow",
    "id_jag_assertion": ".oauth.flow",
    "LoopbackCallback": ".oauth.loopback",
    "open_browser": ".oauth.loopback",
    "open_loopback_callback": ".oauth.loopback",
    "FileTokenStorage": ".oauth.storage",
    "EventStore": ".transports.http.replay",
    "MemoryEventStore": ".transports.http.replay",
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
    "Accepted",
    "Annotations",
    "AssertionRequest",
    "AudioContent",
    "AuthInfo",
    "AuthorizationError",
    "AuthorizationResponse",
    "AutoRedirect",
    "Broker",
    "CacheHint",
    "CallNext",
    "CallToolResult",
    "Cancelled",
    "Choices",
    "Client",
    "ClientCapabilityError",
    "ClientRegistration",
    "ClientTimeoutError",
    "Completion",
    "ConnectionClosed",
    "Context",
    "Declined",
    "ElicitOutcome",
    "ElicitRequest",
    "EmbeddedResource",
    "EventStore",
    "FileTokenStorage",
    "HttpOptions",
    "Icon",
    "ImageContent",
    "InProcessBroker",
    "InsufficientScopeError",
    "IntrospectionVerifier",
    "InvalidTokenError",
    "JwtVerifier",
    "LifespanError",
    "LocalProtocolError",
    "LogMessage",
    "LoopbackCallback",
    "MemoryEventStore",
    "MemoryTaskStore",
    "MemoryTokenStorage",
    "Middleware",
    "OAuth",
    "OAuthTokens",
    "Param",
    "Progress",
    "Prompt",
    "PromptArgument",
    "PromptInfo",
    "PromptMessage",
    "PromptResult",
    "ProtectedResource",
    "ProtocolError",
    "RedisBroker",
    "RedisTaskStore",
    "RemoteProtocolError",
    "RequestError",
    "ResolvedRequest",
    "Resource",
    "ResourceContents",
    "ResourceInfo",
    "ResourceLink",
    "ResourceNotFoundError",
    "ResourceResult",
    "ResourceTemplate",
    "ResourceTemplateInfo",
    "RetryPolicy",
    "Root",
    "SamplingMessage",
    "SamplingRequest",
    "SamplingResult",
    "Server",
    "SessionExpiredError",
    "SessionInfo",
    "StaticTokenVerifier",
    "TaskCancelledError",
    "TaskInfo",
    "TaskRecord",
    "TaskStore",
    "TaskSupport",
    "TextContent",
    "TokenStorage",
    "TokenVerifier",
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
    "TrioRequiredError",
    "http_app",
    "id_jag_assertion",
    "open_browser",
    "open_client",
    "open_loopback_callback",
    "prompt",
    "resource",
    "run",
    "serve_http",
    "serve_stdio",
    "tool",
]
