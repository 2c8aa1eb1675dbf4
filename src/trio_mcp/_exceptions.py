"""The exception tree of trio-mcp. Every exception we raise derives from one root.

Grouped by who meets it and what they can do about it (the groups are headings, not classes):

    TrioMCPError
    │
    │   Setting up: fix the code or how it is run
    ├── ToolDefinitionError        a tool, resource or prompt cannot be registered (at registration)
    ├── LifespanError              server: its lifespan raised on entry; it did not start
    ├── TrioRequiredError          called where no trio run is active (e.g. from asyncio)
    │
    │   Server, raised by your functions: the client gets the answer they stand for
    ├── ToolError                  a tool's failure, reported to the model verbatim
    ├── ResourceNotFoundError      a resource template's function: no such resource
    │
    │   Server, raised in a tool when asking the client fails: catch it to carry on without
    ├── ClientCapabilityError      the client did not declare elicitation, sampling or roots
    ├── ClientTimeoutError         the client did not answer in time (`Timeouts.ask`)
    │
    │   Server, raised by token verifiers: the HTTP transport answers the challenge
    ├── InvalidTokenError          a bearer token failed verification (HTTP 401)
    ├── InsufficientScopeError     a valid bearer token lacks scopes (HTTP 403)
    │
    │   Client, about one call: read the result, or the task's end
    ├── ToolCallError              a tool's result had `isError` (with raise_on_error)
    ├── TaskCancelledError         the task running a call was cancelled
    ├── SkillVerificationError     a skill's file does not match its entry (size, digest...)
    │
    │   Either side, about one request: the peer refused it, or a rule was broken
    ├── RequestError               answered with a JSON-RPC error (client: raised; server:
    │                              raise it from middleware or a function to answer with one)
    ├── ProtocolError              a JSON-RPC / MCP rule was broken
    │   ├── LocalProtocolError     ... by us (a bug or misuse on this side)
    │   └── RemoteProtocolError    ... by the peer (carries the JSON-RPC error code to answer with)
    │
    │   Client, about the connection: reconnect, sign in again, or give up
    ├── TransportError             the byte stream itself failed (line too long, closed)
    │   ├── ConnectionClosed       the connection to the server ended (pending calls fail)
    │   ├── SessionExpiredError    the HTTP server no longer knows the session (404)
    │   └── AuthorizationError     OAuth could not authorize the request (or was refused)
    │
    │   Tests
    └── SchemaViolationError       trio_mcp.testing: a message broke its revision's JSON Schema

`BaseException`s that are not `Exception`s (trio.Cancelled, KeyboardInterrupt) are never
wrapped or caught by this library; they pass through untouched.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthorizationError",
    "ClientCapabilityError",
    "ClientTimeoutError",
    "ConnectionClosed",
    "InsufficientScopeError",
    "InvalidTokenError",
    "LifespanError",
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestError",
    "ResourceNotFoundError",
    "SchemaViolationError",
    "SessionExpiredError",
    "SkillVerificationError",
    "TaskCancelledError",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolError",
    "TransportError",
    "TrioMCPError",
    "TrioRequiredError",
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


class LifespanError(TrioMCPError):
    """The server's lifespan (`Server(lifespan=...)`) raised on entry: the server did not start.

    The lifespan's exception is its `__cause__`; nothing was served.
    """


class InvalidTokenError(TrioMCPError):
    """A token verifier refused a bearer token: expired, for another audience, badly signed...

    The HTTP transport answers 401 with `WWW-Authenticate: Bearer error="invalid_token"` and
    the message as `error_description`, so the message says what was wrong and never contains
    the token.
    """


class InsufficientScopeError(TrioMCPError):
    """A valid bearer token lacks scopes that the request needs.

    The HTTP transport answers 403 with `WWW-Authenticate: Bearer error="insufficient_scope"`
    naming the scopes.

    Attributes:
        scopes: The scopes needed.
    """

    def __init__(self, scopes: tuple[str, ...], message: str = "") -> None:
        super().__init__(message or f"The token lacks scope(s): {' '.join(scopes)}")
        self.scopes = scopes


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


class ClientCapabilityError(TrioMCPError):
    """A tool asked the client for something it did not declare it can do.

    Raised by `Context.elicit`, `Context.sample` and `Context.list_roots` before anything is
    sent. A tool may catch it and carry on without (the demo's battle report falls back to its
    template text); uncaught, the client gets -32021 (MissingRequiredClientCapability, with
    `data.requiredCapabilities`) under 2026-07-28 and an `isError` result (a JSON-RPC error
    for prompts and resources) under the handshake-era revisions.

    Attributes:
        capability: The capability that is missing, as the spec names it ("elicitation",
            "sampling", "roots"), or "elicitation.url" for URL-mode elicitation.
    """

    def __init__(self, capability: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"the client did not declare the {capability!r} capability, so the server "
            f"cannot ask it for that"
        )
        self.capability = capability


class ClientTimeoutError(TrioMCPError):
    """The client did not answer a request of the server's (sampling, elicitation, roots) in time.

    The request was cancelled (`notifications/cancelled`) when the time ran out.

    Attributes:
        method: The request's method.
        timeout: The seconds waited.
    """

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"the client did not answer {method} within {timeout:g} s")
        self.method = method
        self.timeout = timeout


class TransportError(TrioMCPError):
    """The byte stream failed: a message too large to frame, or a stream closed mid-message."""


class ConnectionClosed(TransportError):  # noqa: N818 - the name the issue gives it
    """The connection to the server ended; every call still waiting fails with this.

    The message says why, as far as it is known: for a server run as a subprocess, its exit
    code and the last lines it wrote to stderr; for HTTP, the network error after retries.
    """


class AuthorizationError(TransportError):
    """OAuth could not authorize a request to an HTTP server.

    Discovery found no usable metadata, metadata failed a check (a protected resource naming
    another server, an authorization server whose `issuer` is not the one asked for), the
    authorization response failed a check (`state`, `iss`), an endpoint refused (its `error`
    and `error_description` are in the message), or the server still refused the request
    after the bounded number of authorizations. Never carries a token or a secret.
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
    """A request answered with a JSON-RPC error.

    A client raises it when the server answered with one (an unknown tool, say); on the
    server, a middleware (or a resource or prompt function) raises it to answer its request
    with exactly that error.

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


class TaskCancelledError(TrioMCPError):
    """The task running a call settled `cancelled`, so the call has no result.

    By `tasks/cancel` from this or another client, or by the server.

    Attributes:
        task_id: The task's id.
        status_message: The task's last words, when it had any.
    """

    def __init__(self, task_id: str, status_message: str | None = None) -> None:
        detail = f": {status_message}" if status_message else ""
        super().__init__(f"task {task_id} was cancelled{detail}")
        self.task_id = task_id
        self.status_message = status_message


class SkillVerificationError(TrioMCPError):
    """A skill's file does not match the entry the client holds, so it is not used.

    Raised by `Client.load_skill` and `Client.read_skill_file` (SEP-2640, Integrity and
    Verification): the file may be corrupted, tampered with, or newer than the entry. Fetch the
    entry again (`Client.get_skill`) and load the skill from it, after asking the user again.

    Attributes:
        uri: The file's URI.
        reason: What did not match: "size", "digest", "frontmatter" (SKILL.md's differs from
            the entry's, or cannot be read), "unlisted" (a file the entry does not list, not
            read), "contents" (the read returned no contents for the URI), or "dynamic" (the
            server publishes no digests for the skill, and it was not allowed).
    """

    def __init__(self, message: str, *, uri: str, reason: str) -> None:
        super().__init__(message)
        self.uri = uri
        self.reason = reason


class SchemaViolationError(TrioMCPError, AssertionError):
    """A message does not match the official MCP JSON Schema of its revision.

    Raised by `trio_mcp.testing` (an `AssertionError` too, so that a test runner reports it
    as a failed check). The message names who sent what, the schema definition and the
    revision, where in the message the rule breaks, and the rule's place in the revision's
    `schema.json`.

    Attributes:
        message: The offending JSON-RPC message (decoded), when there is one.
        version: The protocol revision whose schema was applied.
        definition: The schema definition the message was checked against.
        schema_path: The broken rule as a JSON pointer into that revision's `schema.json`
            (e.g. `#/$defs/TextContent/required`), when known.
        instance_path: Where in the message the rule breaks (e.g. `result/content/0`).
    """

    def __init__(
        self,
        text: str,
        *,
        message: Any = None,
        version: str | None = None,
        definition: str | None = None,
        schema_path: str | None = None,
        instance_path: str | None = None,
    ) -> None:
        super().__init__(text)
        self.message = message
        self.version = version
        self.definition = definition
        self.schema_path = schema_path
        self.instance_path = instance_path


class TrioRequiredError(TrioMCPError, RuntimeError):
    """trio-mcp was called where no trio run is active, for example from an asyncio test.

    trio-mcp runs under trio. The message says which event loop was found instead and how to
    run the code under trio (pytest-trio, anyio's trio backend, or `trio.run`).
    """


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
