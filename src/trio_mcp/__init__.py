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

What the package offers, by who uses it:

- The server: `Server` (with its option records `Limits` and `Timeouts`), the declarations
  `tool`, `resource`, `prompt`, `Param`, `Choices`, the `Context` a function may take, and
  `run`, `serve_stdio`, `serve_http`, `http_app` to serve it; `SessionInfo`, `AuthInfo`, the
  brokers of a fleet (`Broker`, `InProcessBroker`, `RedisBroker`).
- The client: `open_client` (with `Asking`, how it answers what a server asks), `Client`, and
  the records its calls return (`ToolInfo`, `ToolResult`, `ResourceResult`, `PromptResult`...).
- Both: the content blocks (`TextContent`, `ImageContent`, `AudioContent`, `EmbeddedResource`,
  `ResourceLink`, ...), the records of what a server asks a client (`ElicitRequest` and its
  outcomes `AcceptedElicitation`, `DeclinedElicitation`, `CancelledElicitation`; sampling;
  `Root`), and the exceptions, one tree under `TrioMCPError` (drawn in `_exceptions`).
- Subpackages: `trio_mcp.http` (HTTP options: `HttpOptions`, `RetryPolicy`, event stores),
  `trio_mcp.tasks` (task stores and records), `trio_mcp.middleware` (the middleware API and
  its built-ins), `trio_mcp.testing` (in-process clients that check every message). The
  authorization names (token verifiers, OAuth) are at the top level for now.

Where a `tools/call` goes, over stdio (the package's layers, imports pointing down):

1. `_run.serve_stdio` (where `run` and `trio-mcp run`, `cli/_serve`, end up) enters the
   server's lifespan (`Server.running`) and opens `transports/stdio`: the reader takes what
   stdin has ready as one batch of lines; `_runtime/connection._Connection` reads the batches.
2. `_core/jsonrpc.parse` classifies each line (request, notification, response, or an invalid
   message that is still answered; a response is never answered).
3. `Dispatcher.resolve` (`_dispatch/dispatcher`, with the resolvers of `_dispatch/resolve`)
   turns the request into one `ResolvedRequest`, once: the tool it names, its arguments
   validated, the scopes it needs, the caller's token, and whether it can be answered without
   waiting. Everything below reads that record; nothing looks it up again.
4. `_runtime/session.SessionRuntime.start` admits it: its id in flight in the session's
   `_core/peer` tables (a duplicate is refused). A record that needs no waiting (an
   `inline=True` tool, a list, a ping) is answered right there, on the reader's task; any other
   runs in a task of its own (`SessionRuntime.answer`), in the cancel scope the session's peer
   engine (`_runtime/peer`, the one both sides stand on) gave it.
5. `_dispatch/dispatcher.Dispatcher.answer` checks the request's revision (`_core/server_session`,
   asking `_core/versions`), then runs the middleware chain (`_dispatch/middleware`, the user's,
   outermost first) around the route's handler, which calls the function through
   `_runtime/invoke` (worker thread, limiter, timeout) and turns its value or exception into
   the result: the one error boundary.
6. The response (`_core/jsonrpc` encodes) goes back to `_Connection`, which writes it to stdout:
   what the reader's task answered for one read of input goes out in one write, a task's
   answer at once.

Streamable HTTP enters at `transports/http/app` instead: the token is verified (the gate,
`transports/http/gate`, asks a verifier of `auth/`), each POSTed request resolved once
(`HttpBackend.resolve`, which `_run` gives the transport), its scopes checked against the token
(403) from that record, which then goes to the same `SessionRuntime.start`. The client half is
`_runtime/client` (its public API, its connection, a module per feature) on the same
`_runtime/peer` engine, over a link of `transports/` that `_connect.open_client` picks,
authorized by `oauth/`; `cli/` is the command line over both.
"""

from typing import TYPE_CHECKING, Any

from ._core.asking import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitOutcome,
    ElicitRequest,
    Root,
    SamplingMessage,
    SamplingRequest,
    SamplingResult,
)
from ._core.auth import AuthInfo

# Content: what tools, resources and prompts return, and what a client reads back.
from ._core.types import (
    Annotations,
    AudioContent,
    CacheHint,
    EmbeddedResource,
    Icon,
    ImageContent,
    PromptMessage,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolAnnotations,
    ToolResult,
)
from ._core.versions import SUPPORTED_VERSIONS

# Errors: one tree, drawn in `_exceptions`'s docstring.
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
    SkillVerificationError,
    TaskCancelledError,
    ToolCallError,
    ToolDefinitionError,
    ToolError,
    TransportError,
    TrioMCPError,
    TrioRequiredError,
)
from ._exports import lazy_attribute, publish

# The server's declarations: enough to define tools without loading the runtime.
from ._features.asking import Choices
from ._features.context import Context
from ._features.prompts import Prompt, prompt
from ._features.resources import Resource, ResourceTemplate, resource
from ._features.signature import Param
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
        ToolInfo,
        ToolParameter,
    )
    from ._features.skills import LoadedSkill, SkillFile, SkillInfo
    from ._run import http_app, run, serve_http, serve_stdio
    from ._runtime.broker import Broker, InProcessBroker
    from ._runtime.client import Client
    from ._runtime.options import Asking, Limits, Timeouts
    from ._runtime.redis_broker import RedisBroker
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

# What needs trio loads on first use of its name. `import trio_mcp` brings in the declaration
# API only (tool, Param, ToolError, content blocks), so a module that merely defines tools imports
# in a third of the time; `Server` and `run` load the runtime and trio. The client half and the
# HTTP code load later still: a server started over stdio never needs them.
_LAZY = {
    # The server: serving, its option records, sessions, the brokers of a fleet.
    "Server": "._runtime.server",
    "Limits": "._runtime.options",
    "Timeouts": "._runtime.options",
    "SessionInfo": "._runtime.session",
    "http_app": "._run",
    "run": "._run",
    "serve_http": "._run",
    "serve_stdio": "._run",
    "Broker": "._runtime.broker",
    "InProcessBroker": "._runtime.broker",
    "RedisBroker": "._runtime.redis_broker",
    # The client, how it answers a server's questions, and the records its calls return.
    "open_client": "._connect",
    "Client": "._runtime.client",
    "Asking": "._runtime.options",
    "Completion": "._core.client_records",
    "LogMessage": "._core.client_records",
    "Progress": "._core.client_records",
    "PromptArgument": "._core.client_records",
    "PromptInfo": "._core.client_records",
    "PromptResult": "._core.client_records",
    "ResourceInfo": "._core.client_records",
    "ResourceResult": "._core.client_records",
    "ResourceTemplateInfo": "._core.client_records",
    "ToolInfo": "._core.client_records",
    "ToolParameter": "._core.client_records",
    # The skills extension (SEP-2640): the entries `list_skills` returns, a loaded skill.
    "LoadedSkill": "._features.skills",
    "SkillFile": "._features.skills",
    "SkillInfo": "._features.skills",
    # Authorization, both sides. The verifiers load PyJWT (the `auth` extra) only when a
    # `JwtVerifier` is made.
    "IntrospectionVerifier": ".auth.verifiers",
    "JwtVerifier": ".auth.verifiers",
    "ProtectedResource": ".auth.resource",
    "StaticTokenVerifier": ".auth.verifiers",
    "TokenVerifier": ".auth.resource",
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
}

# Names of earlier versions: renamed, or moved to a subpackage. They still work, with a
# DeprecationWarning naming the replacement.
_DEPRECATED = {
    "Accepted": ("._core.asking", "AcceptedElicitation", "trio_mcp.AcceptedElicitation"),
    "Declined": ("._core.asking", "DeclinedElicitation", "trio_mcp.DeclinedElicitation"),
    "Cancelled": ("._core.asking", "CancelledElicitation", "trio_mcp.CancelledElicitation"),
    "CallToolResult": (
        "._core.types",
        "LegacyCallToolResult",
        "trio_mcp.ToolResult (structured= in place of structured_content=)",
    ),
    **{
        name: (f".{package}", name, f"trio_mcp.{package}.{name}")
        for package, names in (
            ("http", ("EventStore", "HttpOptions", "MemoryEventStore", "RetryPolicy")),
            (
                "tasks",
                (
                    "MemoryTaskStore",
                    "RedisTaskStore",
                    "TaskInfo",
                    "TaskRecord",
                    "TaskStore",
                    "TaskSupport",
                ),
            ),
            ("middleware", ("CallNext", "Middleware", "ResolvedRequest")),
        )
        for name in names
    },
}


#: The public subpackages, which `trio_mcp.http` (say) imports on first use.
_SUBPACKAGES = frozenset({"http", "middleware", "tasks", "testing"})


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        __import__(f"{__name__}.{name}")  # sets the attribute
        return globals()[name]
    return lazy_attribute(__name__, globals(), _LAZY, _DEPRECATED, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBPACKAGES})


__all__ = [
    "SUPPORTED_VERSIONS",
    "AcceptedElicitation",
    "Annotations",
    "Asking",
    "AssertionRequest",
    "AudioContent",
    "AuthInfo",
    "AuthorizationError",
    "AuthorizationResponse",
    "AutoRedirect",
    "Broker",
    "CacheHint",
    "CancelledElicitation",
    "Choices",
    "Client",
    "ClientCapabilityError",
    "ClientRegistration",
    "ClientTimeoutError",
    "Completion",
    "ConnectionClosed",
    "Context",
    "DeclinedElicitation",
    "ElicitOutcome",
    "ElicitRequest",
    "EmbeddedResource",
    "FileTokenStorage",
    "Icon",
    "ImageContent",
    "InProcessBroker",
    "InsufficientScopeError",
    "IntrospectionVerifier",
    "InvalidTokenError",
    "JwtVerifier",
    "LifespanError",
    "Limits",
    "LoadedSkill",
    "LocalProtocolError",
    "LogMessage",
    "LoopbackCallback",
    "MemoryTokenStorage",
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
    "RemoteProtocolError",
    "RequestError",
    "Resource",
    "ResourceContents",
    "ResourceInfo",
    "ResourceLink",
    "ResourceNotFoundError",
    "ResourceResult",
    "ResourceTemplate",
    "ResourceTemplateInfo",
    "Root",
    "SamplingMessage",
    "SamplingRequest",
    "SamplingResult",
    "Server",
    "SessionExpiredError",
    "SessionInfo",
    "SkillFile",
    "SkillInfo",
    "SkillVerificationError",
    "StaticTokenVerifier",
    "TaskCancelledError",
    "TextContent",
    "Timeouts",
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

# Every public class and function says `trio_mcp`, not the private module it lives in; the
# lazy ones when they load.
publish(__name__, globals(), __all__)
