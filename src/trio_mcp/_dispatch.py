"""The method table and the one place where exceptions become wire messages.

Rule 1: validate, then invoke. Arguments are validated before the tool runs; an exception raised
        *by the tool* is never reported as bad arguments, and bad arguments never reach the tool.
Rule 2: this is the error boundary. `ToolError` -> `isError` result with its message verbatim;
        any other `Exception` from a tool -> `isError` "TypeName: message" (or a masked message),
        traceback to the log; `RemoteProtocolError` -> its JSON-RPC error; a bug of ours ->
        -32603. `BaseException`s that are not `Exception`s (Cancelled, KeyboardInterrupt) pass.
Rule 3: no I/O and no event loop here: running a tool (threads, limiters, timeouts) is the
        runtime's `Invoker`, handed in at construction; this module only awaits it.
Rule 4: one route per method (`Dispatcher.routes`): a method absent from it is -32601, and one
        that a request's revision lacks (2026-07-28 has no initialize, ping or setLevel) is
        refused by the session's `scope`, which asks the revision table. Routes that need no
        waiting (initialize, ping, tools/list, setLevel, discover, and calls of `inline=True`
        tools that take no Context) are answered by `respond_now` on the reader's own task,
        without spawning one; everything else goes through `respond`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ._core.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Request,
    error_response,
    result_response,
)
from ._core.server_session import RequestScope, ServerSession
from ._core.versions import Revision, revision
from ._exceptions import RemoteProtocolError, ToolError
from ._features.context import Context, NotificationSender, Requester
from ._features.schema import ArgumentsInvalid, ResultInvalid
from ._features.tools import Tool, ToolRegistry

__all__ = ["Dispatcher", "Invoker", "ToolTimedOut"]

logger = logging.getLogger("trio_mcp")

#: Answers a method at once: (session, the request's scope, params) -> the result object.
AnswerNow = Callable[[ServerSession, RequestScope, dict[str, Any] | None], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Route:
    """How one method is answered.

    Attributes:
        now: Answers it at once, on the reader's task; None for a method that may wait
            (`tools/call`: answered by `respond`, unless the tool is inline).
    """

    now: AnswerNow | None


class ToolTimedOut(Exception):  # noqa: N818 - an outcome, reported as a tool error result
    """A tool's own `timeout` expired before it returned (raised by an `Invoker`)."""

    def __init__(self, tool: Tool) -> None:
        super().__init__(tool.name)
        self.tool = tool


class Invoker(Protocol):
    """Runs a tool's function with validated arguments (the runtime's job: Rule 3)."""

    async def invoke(self, tool: Tool, kwargs: dict[str, Any]) -> Any:
        """Call `tool`; its return value. Raises what the tool raised, or `ToolTimedOut`."""
        ...


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Dispatcher:
    """Answers MCP requests against a tool registry.

    Args:
        registry: The tools to serve.
        invoker: Runs tool functions (threads, limiters, timeouts).
        page_size: Tools per `tools/list` page (None: all in one page).
        mask_error_details: Send "Internal error in tool X" instead of the exception's type and
            message for unexpected exceptions (the traceback is logged either way).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        invoker: Invoker,
        *,
        page_size: int | None = None,
        mask_error_details: bool = False,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be positive")
        self.registry = registry
        self.page_size = page_size
        self.mask_error_details = mask_error_details
        self.invoker = invoker
        #: Every method this dispatcher answers (Rule 4).
        self.routes: dict[str, Route] = {
            "initialize": Route(self._initialize),
            "ping": Route(self._ping),
            "logging/setLevel": Route(self._set_level),
            "server/discover": Route(self._discover),
            "tools/list": Route(self._tools_list),
            "tools/call": Route(None),
        }

    # -- entry points ---------------------------------------------------------------------------

    def respond_now(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        """The response, if the request can be answered without waiting; else None."""
        method = request.method
        route = self.routes.get(method)
        if route is None:
            return error_response(
                request.id, METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method}
            )
        tool = None
        if route.now is None:
            tool = self._inline_tool(request)
            if tool is None:
                return None
        try:
            scope = session.scope(method, request.params)
            if route.now is None:
                assert tool is not None
                return result_response(
                    request.id, self._finish(session, scope, self._call_inline(tool, request))
                )
            return result_response(request.id, route.now(session, scope, request.params))
        except RemoteProtocolError as exc:
            return error_response(request.id, exc.code, exc.message, exc.data)
        except Exception:
            logger.exception("internal error answering %s", method)
            return error_response(request.id, INTERNAL_ERROR, f"Internal error in {method}")

    async def respond(
        self,
        session: ServerSession,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None = None,
    ) -> dict[str, Any]:
        """Answer any request; waits for tools. Never raises an `Exception`.

        Args:
            session: The client's session.
            request: The request to answer.
            notify: Where the request's notifications go.
            requester: How a tool's `Context` sends requests to the client, if it can.
        """
        now = self.respond_now(session, request)
        if now is not None:
            return now
        try:
            scope = session.scope(request.method, request.params)
            tool, arguments = self._resolve_call(request.params)
            result = await self._call(tool, arguments, request, scope, notify, requester=requester)
            return result_response(request.id, self._finish(session, scope, result))
        except RemoteProtocolError as exc:
            return error_response(request.id, exc.code, exc.message, exc.data)
        except Exception:
            logger.exception("internal error answering %s", request.method)
            return error_response(request.id, INTERNAL_ERROR, f"Internal error in {request.method}")

    # -- immediate methods ------------------------------------------------------------------------

    @staticmethod
    def _initialize(
        session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        return session.initialize(params)  # handshake era only: no per-request fields

    @staticmethod
    def _ping(
        session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        return session.complete(scope, {})

    @staticmethod
    def _set_level(
        session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        session.set_log_level(params)
        return session.complete(scope, {})

    @staticmethod
    def _discover(
        session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        return session.complete(scope, session.discover())

    def _tools_list(
        self, session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        return session.complete(scope, self._list_tools(scope, params))

    def _list_tools(self, scope: RequestScope, params: dict[str, Any] | None) -> dict[str, Any]:
        cursor = (params or {}).get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise RemoteProtocolError('Invalid params: "cursor" must be a string', INVALID_PARAMS)
        tools, next_cursor = self.registry.page(cursor, self.page_size)
        result: dict[str, Any] = {"tools": [t.definition(scope.version) for t in tools]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return ServerSession.cacheable(scope, result)

    # -- tools/call -------------------------------------------------------------------------------

    def _resolve_call(self, params: dict[str, Any] | None) -> tuple[Tool, dict[str, Any]]:
        params = params or {}
        name = params.get("name")
        if not isinstance(name, str):
            raise RemoteProtocolError(
                'Invalid params: tools/call needs "name" (a string)', INVALID_PARAMS
            )
        tool = self.registry.get(name)
        if tool is None:
            raise RemoteProtocolError(f"Unknown tool: {name}", INVALID_PARAMS, {"name": name})
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise RemoteProtocolError(
                'Invalid params: "arguments" must be an object', INVALID_PARAMS
            )
        return tool, arguments

    def _inline_tool(self, request: Request) -> Tool | None:
        params = request.params
        name = params.get("name") if params else None
        tool = self.registry.get(name) if isinstance(name, str) else None
        if tool is not None and tool.inline and tool.context_param is None:
            return tool
        return None

    def _call_inline(self, tool: Tool, request: Request) -> dict[str, Any]:
        _, arguments = self._resolve_call(request.params)
        try:
            kwargs = tool.validate(arguments)
        except ArgumentsInvalid as exc:
            return self._invalid(tool, exc)
        try:
            # A raw tool takes the arguments dict itself (as in `_invoke`).
            value = tool.fn(kwargs) if tool.compiled is None else tool.fn(**kwargs)
        except Exception as exc:
            return self._tool_failed(tool, exc)
        return self._result(tool, value)

    async def _call(
        self,
        tool: Tool,
        arguments: dict[str, Any],
        request: Request,
        scope: RequestScope,
        notify: NotificationSender,
        *,
        requester: Requester | None,
    ) -> dict[str, Any]:
        try:
            kwargs = tool.validate(arguments)
        except ArgumentsInvalid as exc:
            return self._invalid(tool, exc)
        if tool.context_param is not None:
            kwargs[tool.context_param] = Context(
                request_id=request.id,
                tool_name=tool.name,
                scope=scope,
                send=notify,
                requester=requester,
            )
        try:
            value = await self.invoker.invoke(tool, kwargs)
        except ToolTimedOut:
            return _error_result(f"Tool {tool.name} timed out after {tool.timeout:g} s")
        except Exception as exc:
            return self._tool_failed(tool, exc)
        return self._result(tool, value)

    def _invalid(self, tool: Tool, exc: ArgumentsInvalid) -> dict[str, Any]:
        lines = "\n".join(f"- {line}" for line in exc.lines)
        return _error_result(f"Invalid arguments for tool {tool.name}:\n{lines}")

    def _tool_failed(self, tool: Tool, exc: Exception) -> dict[str, Any]:
        if isinstance(exc, ToolError):
            return _error_result(str(exc))
        logger.error("tool %s raised", tool.name, exc_info=exc)
        if self.mask_error_details:
            return _error_result(f"Internal error in tool {tool.name}")
        return _error_result(f"{type(exc).__name__}: {exc}")

    def _result(self, tool: Tool, value: Any) -> dict[str, Any]:
        try:
            return tool.to_result(value)
        except ResultInvalid as exc:
            logger.warning("tool %s: %s", tool.name, exc)
            return _error_result(f"Tool {tool.name} returned an invalid result: {exc}")
        except Exception as exc:
            logger.exception("tool %s returned a value that cannot be serialized", tool.name)
            return _error_result(
                f"Tool {tool.name} returned a value that does not match its declared result "
                f"type: {type(exc).__name__}"
            )

    @staticmethod
    def _finish(
        session: ServerSession, scope: RequestScope, result: dict[str, Any]
    ) -> dict[str, Any]:
        known = revision(scope.version)
        if not known.structured:
            result.pop("structuredContent", None)  # not part of the older revisions
            result["content"] = [_downgrade(block, known) for block in result["content"]]
        return session.complete(scope, result)


def _downgrade(block: dict[str, Any], known: Revision) -> dict[str, Any]:
    """A content block a client of revision `known` understands (older ones lack some types)."""
    kind = block.get("type")
    if kind == "resource_link" and not known.structured:
        return {"type": "text", "text": f"Resource {block.get('name', '')}: {block.get('uri', '')}"}
    if kind == "audio" and not known.audio:
        mime = block.get("mimeType", "audio")
        return {
            "type": "text",
            "text": f"[{mime} content not shown: protocol {known.name} has no audio]",
        }
    return block
