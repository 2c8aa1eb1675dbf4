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
        that a request's revision lacks (2026-07-28 has no initialize, ping, setLevel or
        resources/subscribe) is refused by the session's `scope`, which asks the revision
        table. Routes that need no waiting (initialize, ping, the lists, setLevel, discover,
        subscriptions, static resources, fixed completions, and calls of `inline=True` tools,
        resources and prompts that take no Context) are answered by `respond_now` on the
        reader's own task, without spawning one; everything else goes through `respond`, and
        so do slow steps of ours, run in a worker thread: matching a URI longer than
        `LONG_URI` against the templates, walking a directory for `resources/list`.
        `subscriptions/listen` (2026-07-28 only; -32601 in the handshake era) is served by the
        runtime's `listen` until the request is cancelled, or answered with a plain result
        when the server closes the stream.
Rule 6: a tool registered with `task=` may become a task (`_features/tasks`) for a client that
        declared the extension: its call runs through the runtime's `TaskEngine` (`tasks`),
        which answers either the call's own result or a `CreateTaskResult`; `tasks/get`,
        `tasks/update` and `tasks/cancel` are refused (-32021) for a request that did not
        declare the extension, and an unknown task id is -32602, as is the id of a task of
        another principal (a task made under a verified token is its principal's: tasks Rule
        7). A `required` task tool refuses such a client's call (-32021) before its function
        runs. A task-capable tool that raises `RemoteProtocolError` reports a protocol error (a
        JSON-RPC error, or a `failed` task). A task's status changes (`notifications/tasks`)
        reach a 2026-07-28 client on a listen stream of its principal that asked for its id
        (`taskIds`: -32021 without the extension declared), and a handshake-era session whose
        call became the task on its own stream (it follows it).
Rule 7: what a request's verified OAuth token (`_core/auth.current_auth`, set by the HTTP
        transport) may use: the transport refuses (403) a call, read or get needing scopes the
        token lacks, before it reaches here; the lists leave such items out unless
        `hide_unauthorized` is False, and a list so cut says `cacheScope: "private"` (2026-07-28).
        Without a token (stdio, memory) everything is listed, and a tool's `Context.auth` is
        None.
Rule 5: resources and prompts have no `isError` result: a failure in their function is a
        JSON-RPC error (-32603, with a `ToolError`'s message verbatim, other exceptions as for
        tools), an unknown URI is the revision's resource-not-found error with `data.uri`, and
        arguments or template variables that fail validation or the value rules (a decoded
        `{name}` holding "/", say) are -32602, one line per problem, as is a URI longer than
        the server's `max_uri_length` (checked before anything else, `data.maxUriLength`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from ._core.auth import current_auth, current_principal
from ._core.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Request,
    RequestId,
    error_response,
    result_response,
)
from ._core.meta import SUBSCRIPTION_ID
from ._core.request_state import StateSeal, StateTooLarge, binding
from ._core.server_session import CACHE_HINTS, RequestScope, ServerSession
from ._core.subscriptions import LISTEN, SubscriptionFilter
from ._core.types import CacheHint
from ._core.versions import MISSING_CLIENT_CAPABILITY, Revision, revision
from ._exceptions import (
    ClientCapabilityError,
    ClientTimeoutError,
    RemoteProtocolError,
    ResourceNotFoundError,
    ToolError,
)
from ._features.asking import AnswerInvalidError, AskBook, InputRequired
from ._features.completion import Completer, completion_result
from ._features.context import Context, NotificationSender, Requester
from ._features.prompts import Prompt, PromptRegistry, messages_of
from ._features.registry import Registry, page_of
from ._features.resources import Resource, ResourceRegistry, ResourceTemplate
from ._features.schema import ArgumentsInvalid, ResultInvalid
from ._features.tasks import TASKS_EXTENSION, TaskEngine, declares_tasks
from ._features.tools import Tool, ToolRegistry

__all__ = [
    "DEFAULT_ASK_TIMEOUT",
    "Callee",
    "Dispatcher",
    "Invoker",
    "ToolTimedOut",
]

T = TypeVar("T")
logger = logging.getLogger("trio_mcp")

#: Answers a method at once: (session, the request's scope, params) -> the result object.
AnswerNow = Callable[[ServerSession, RequestScope, dict[str, Any] | None], dict[str, Any]]
#: Answers a method at once if it can: the result object, or None when it must wait.
AnswerQuick = Callable[[ServerSession, RequestScope, Request], dict[str, Any] | None]
#: Answers a method that may wait: (session, scope, request, notify, requester) -> result.
AnswerLater = Callable[
    [ServerSession, RequestScope, Request, NotificationSender, "Requester | None"],
    Awaitable[dict[str, Any]],
]
#: Serves one `subscriptions/listen` stream until it is cancelled, or returns when the server
#: closes it: (its request's id, what the server grants, where the stream's messages go).
Listen = Callable[[RequestId, SubscriptionFilter, NotificationSender], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Route:
    """How one method is answered.

    Attributes:
        now: Answers it at once, on the reader's task; None for a method that may wait.
        quick: For a method that may wait: answers at once when it can (an inline tool), else
            returns None.
        later: For a method that may wait: answers it in a task of its own (`respond`).
    """

    now: AnswerNow | None
    quick: AnswerQuick | None = None
    later: AnswerLater | None = None


class Callee(Protocol):
    """What an `Invoker` runs: a tool, a resource, a template, a prompt or a completer."""

    @property
    def name(self) -> str:
        """Its name (threads are limited per name)."""
        ...

    @property
    def fn(self) -> Callable[..., Any] | None:
        """The function to call."""
        ...

    @property
    def is_async(self) -> bool:
        """Whether it must be awaited on the event loop."""
        ...

    @property
    def inline(self) -> bool:
        """Whether a sync function runs on the event loop instead of a worker thread."""
        ...

    @property
    def timeout(self) -> float | None:
        """Seconds after which the call is cancelled, or None."""
        ...


class ToolTimedOut(Exception):  # noqa: N818 - an outcome, reported as a tool error result
    """A callee's own `timeout` expired before it returned (raised by an `Invoker`)."""

    def __init__(self, tool: Callee) -> None:
        super().__init__(tool.name)
        self.tool = tool


class Invoker(Protocol):
    """Runs a callee's function with validated arguments (the runtime's job: Rule 3)."""

    async def invoke(self, tool: Callee, kwargs: dict[str, Any]) -> Any:
        """Call `tool`; its return value. Raises what the tool raised, or `ToolTimedOut`."""
        ...


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


#: Seconds a tool waits for the client's answer to one question (handshake era), unless the
#: ask says otherwise: a person may be reading a form.
DEFAULT_ASK_TIMEOUT: Final = 600.0


@dataclass(frozen=True, slots=True)
class _InputRound:
    """What `_run` returns for an attempt that ended at unanswered questions: its result."""

    result: dict[str, Any]


#: The lists a client pages through, by method: what `cache_hints` is keyed by.
LIST_METHODS: Final = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
#: Characters of a URI past which it is matched against the templates in a worker thread, not
#: on the event loop: up to 4 KiB a match costs some microseconds a template; a 64 KiB one (the
#: default cap) up to a few milliseconds a template, which a server of many templates must not
#: make every other client wait for.
LONG_URI: Final = 4096


@dataclass(frozen=True, slots=True)
class _Work:
    """A slow step of ours (a long URI matched, a directory walked), as a `Callee`.

    The invoker runs it as it runs a sync function: in a worker thread, off the event loop.
    """

    name: str
    fn: Callable[..., Any]
    is_async: bool = False
    inline: bool = False
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class _Listed:
    """A resource a template lists (a directory's file): its list entry, the template's scopes."""

    wire: dict[str, Any]
    scopes: frozenset[str]

    def definition(self, version: str) -> dict[str, Any]:
        """Its `resources/list` entry (the same in every revision)."""
        return self.wire


def _listed_by(templates: list[ResourceTemplate]) -> list[_Listed]:
    """What the templates with a `listing` list (blocking: run as `_Work`)."""
    return [
        _Listed(entry, template.scopes)
        for template in templates
        if template.listing is not None
        for entry in template.listing()
    ]


def _cursor(params: dict[str, Any] | None) -> str | None:
    cursor = (params or {}).get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise RemoteProtocolError('Invalid params: "cursor" must be a string', INVALID_PARAMS)
    return cursor


class Dispatcher:
    """Answers MCP requests against a server's registries.

    Args:
        registry: The tools to serve.
        invoker: Runs tool, resource, prompt and completer functions (threads, limiters,
            timeouts).
        page_size: Items per page of every list (None: all in one page).
        mask_error_details: Send "Internal error in tool X" instead of the exception's type and
            message for unexpected exceptions (the traceback is logged either way).
        resources: The resources and templates to serve (default: none).
        prompts: The prompts to serve (default: none).
        state_seal: Seals the `requestState` of 2026-07-28 input-required results (default:
            a random key of this process).
        ask_timeout: Seconds a function waits for the client's answer to one question in the
            handshake era, unless the question says otherwise.
        hide_unauthorized: Leave out of the lists what the request's verified token lacks the
            scopes for (Rule 7); False lists everything.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        invoker: Invoker,
        *,
        page_size: int | None = None,
        mask_error_details: bool = False,
        resources: ResourceRegistry | None = None,
        prompts: PromptRegistry | None = None,
        state_seal: StateSeal | None = None,
        ask_timeout: float | None = DEFAULT_ASK_TIMEOUT,
        hide_unauthorized: bool = True,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be positive")
        self.registry = registry
        self.resources = resources if resources is not None else ResourceRegistry()
        self.prompts = prompts if prompts is not None else PromptRegistry()
        self.page_size = page_size
        self.mask_error_details = mask_error_details
        self.invoker = invoker
        self.state_seal = state_seal if state_seal is not None else StateSeal()
        self.ask_timeout = ask_timeout
        self.hide_unauthorized = hide_unauthorized
        #: Caching hints of each list method (2026-07-28); unset ones send `CACHE_HINTS`.
        self.cache_hints: dict[str, CacheHint] = {}
        #: Every method this dispatcher answers (Rule 4).
        self.routes: dict[str, Route] = {
            "initialize": Route(self._initialize),
            "ping": Route(self._ping),
            "logging/setLevel": Route(self._set_level),
            "server/discover": Route(self._discover),
            "tools/list": Route(self._tools_list),
            "tools/call": Route(None, self._tools_call_quick, self._tools_call),
            "resources/list": Route(None, self._resources_list_quick, self._resources_list_later),
            "resources/templates/list": Route(self._templates_list),
            "resources/read": Route(None, self._read_quick, self._read),
            "resources/subscribe": Route(None, self._subscribe_quick, self._subscribe_later),
            "resources/unsubscribe": Route(self._unsubscribe),
            "prompts/list": Route(self._prompts_list),
            "prompts/get": Route(None, self._get_prompt_quick, self._get_prompt),
            "completion/complete": Route(None, self._complete_quick, self._complete),
            LISTEN: Route(None, self._listen_quick, self._listen),
            "tasks/get": Route(None, self._tasks_quick, self._tasks),
            "tasks/update": Route(None, self._tasks_quick, self._tasks),
            "tasks/cancel": Route(None, self._tasks_quick, self._tasks),
        }
        #: Runs calls that may become tasks, and keeps the tasks (Rule 6): the runtime's;
        #: None runs every call to its end and answers the `tasks/*` methods -32601.
        self.tasks: TaskEngine | None = None
        #: Serves `subscriptions/listen` (2026-07-28): the runtime's, since a stream waits;
        #: None answers it -32601.
        self.listen: Listen | None = None

    # -- entry points ---------------------------------------------------------------------------

    def respond_now(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        """The response, if the request can be answered without waiting; else None."""
        method = request.method
        route = self.routes.get(method)
        if route is None:
            return error_response(
                request.id, METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method}
            )
        try:
            scope = session.scope(method, request.params)
            if route.now is None:
                assert route.quick is not None
                result = route.quick(session, scope, request)
                return None if result is None else result_response(request.id, result)
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
            later = self.routes[request.method].later
            assert later is not None
            result = await later(session, scope, request, notify, requester)
            return result_response(request.id, result)
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
        return self._list("tools/list", "tools", self.registry, scope, params)

    def _list(
        self,
        method: str,
        key: str,
        registry: Registry[Any],
        scope: RequestScope,
        params: dict[str, Any] | None,
    ) -> dict[str, Any]:
        items, next_cursor = registry.page(_cursor(params), self.page_size)
        return self._page(method, key, items, next_cursor, scope)

    def _page(
        self,
        method: str,
        key: str,
        items: Iterable[Any],
        next_cursor: str | None,
        scope: RequestScope,
    ) -> dict[str, Any]:
        auth = current_auth.get()
        if auth is not None and self.hide_unauthorized:
            # Rule 7: a page may come out shorter than `page_size`; cursors stay the registry's.
            items = [item for item in items if auth.has_scopes(item.scopes)]
        result: dict[str, Any] = {key: [item.definition(scope.version) for item in items]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        hint = self.cache_hints.get(method)
        hints = hint.to_wire() if hint else None
        if auth is not None and self.hide_unauthorized:
            # A list cut to this token's scopes is this user's: no cache may share it.
            hints = {**(hints or CACHE_HINTS), "cacheScope": "private"}
        return ServerSession.cacheable(scope, result, hints)

    def _resources_list_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        if any(template.listing is not None for template in self.resources.templates):
            _cursor(request.params)  # a malformed cursor is refused at once
            return None  # a directory is walked in a worker thread
        result = self._list(
            "resources/list", "resources", self.resources.static, scope, request.params
        )
        return session.complete(scope, result)

    async def _resources_list_later(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        cursor = _cursor(request.params)
        listing = [t for t in self.resources.templates if t.listing is not None]
        work = _Work("resources/list", functools.partial(_listed_by, listing))
        found: list[_Listed] = await self.invoker.invoke(work, {})
        items, next_cursor = page_of(
            "resources", [*self.resources.static, *found], cursor, self.page_size
        )
        return session.complete(
            scope, self._page("resources/list", "resources", items, next_cursor, scope)
        )

    def _templates_list(
        self, session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        result = self._list(
            "resources/templates/list",
            "resourceTemplates",
            self.resources.templates,
            scope,
            params,
        )
        return session.complete(scope, result)

    def _prompts_list(
        self, session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        result = self._list("prompts/list", "prompts", self.prompts, scope, params)
        return session.complete(scope, result)

    # -- resources --------------------------------------------------------------------------------

    def _uri_of(self, params: dict[str, Any] | None) -> str:
        uri = (params or {}).get("uri")
        if not isinstance(uri, str):
            raise RemoteProtocolError('Invalid params: "uri" must be a string', INVALID_PARAMS)
        self.resources.check_length(uri)
        return uri

    @staticmethod
    def _not_found(scope: RequestScope, uri: str) -> RemoteProtocolError:
        return RemoteProtocolError(
            f"Resource not found: {uri}", revision(scope.version).resource_not_found, {"uri": uri}
        )

    async def _resolve_later(
        self, scope: RequestScope, uri: str
    ) -> tuple[Resource | ResourceTemplate, dict[str, Any]]:
        """`_resolve_resource`, in a worker thread for a long URI (see `LONG_URI`)."""
        if len(uri) <= LONG_URI or self.resources.static.get(uri) is not None:
            return self._resolve_resource(scope, uri)
        work = _Work("resources/read", functools.partial(self._resolve_resource, scope, uri))
        found: tuple[Resource | ResourceTemplate, dict[str, Any]] = await self.invoker.invoke(
            work, {}
        )
        return found

    def _resolve_resource(
        self, scope: RequestScope, uri: str
    ) -> tuple[Resource | ResourceTemplate, dict[str, Any]]:
        try:
            found = self.resources.resolve(uri)
        except ArgumentsInvalid as exc:
            lines = "\n".join(f"- {line}" for line in exc.lines)
            raise RemoteProtocolError(
                f"Invalid params: {uri} matches a resource template, but:\n{lines}",
                INVALID_PARAMS,
                {"uri": uri},
            ) from None
        if found is None:
            raise self._not_found(scope, uri)
        return found

    def _read_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        uri = self._uri_of(request.params)
        static = self.resources.static.get(uri)
        if static is not None and static.fn is None:
            return self._read_result(session, scope, static, static.value, uri)
        if static is None:
            if len(uri) > LONG_URI:
                return None  # matched in a worker thread (`_read`)
            target, kwargs = self._resolve_resource(scope, uri)
        else:
            target, kwargs = static, {}
        if not target.inline or target.context_param is not None:
            return None
        assert target.fn is not None
        try:
            value = target.fn(**kwargs)
        except Exception as exc:
            raise self._failed("resource", uri, exc, scope) from None
        return self._read_result(session, scope, target, value, uri)

    async def _read(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        uri = self._uri_of(request.params)
        target, kwargs = await self._resolve_later(scope, uri)
        book = self._book(scope, request, uri, None)
        self._inject(
            target.context_param, kwargs, name=uri, request=request, scope=scope, notify=notify,
            requester=requester, book=book,
        )  # fmt: skip
        try:
            value = await self._run(target, kwargs, book)
        except ToolTimedOut:
            raise RemoteProtocolError(
                f"Reading {uri} timed out after {target.timeout:g} s", INTERNAL_ERROR, {"uri": uri}
            ) from None
        except Exception as exc:
            raise self._failed("resource", uri, exc, scope) from None
        if isinstance(value, _InputRound):
            return value.result
        return self._read_result(session, scope, target, value, uri)

    def _read_result(
        self,
        session: ServerSession,
        scope: RequestScope,
        target: Resource | ResourceTemplate,
        value: Any,
        uri: str,
    ) -> dict[str, Any]:
        try:
            contents = target.contents(value, uri)
        except Exception as exc:
            logger.exception("resource %s produced a value that cannot be sent", uri)
            raise RemoteProtocolError(
                f"Internal error: resource {uri} produced a value with no JSON form "
                f"({type(exc).__name__})",
                INTERNAL_ERROR,
                {"uri": uri},
            ) from None
        result = ServerSession.cacheable(
            scope, {"contents": contents}, target.cache.to_wire() if target.cache else None
        )
        return session.complete(scope, result)

    def _failed(
        self, kind: str, name: str, exc: Exception, scope: RequestScope
    ) -> RemoteProtocolError:
        """The JSON-RPC error for an exception raised by a resource or prompt (Rule 5)."""
        data = {"uri": name} if kind == "resource" else {"name": name}
        if isinstance(exc, (ClientCapabilityError, AnswerInvalidError, ClientTimeoutError)):
            return _asking_failed(exc, scope, data)
        if isinstance(exc, ResourceNotFoundError) and kind == "resource":
            return self._not_found(scope, name)
        if isinstance(exc, ToolError):
            return RemoteProtocolError(str(exc), INTERNAL_ERROR, data)
        logger.error("%s %s raised", kind, name, exc_info=exc)
        if self.mask_error_details:
            return RemoteProtocolError(f"Internal error in {kind} {name}", INTERNAL_ERROR, data)
        return RemoteProtocolError(
            f"Internal error in {kind} {name}: {type(exc).__name__}: {exc}", INTERNAL_ERROR, data
        )

    def _subscribe_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        uri = self._uri_of(request.params)
        session.subscriptions.check(uri)  # past a bound: refused before any work
        if len(uri) > LONG_URI and self.resources.static.get(uri) is None:
            return None  # matched in a worker thread
        self._resolve_resource(scope, uri)  # only what exists can be watched
        session.subscriptions.add(uri)
        return session.complete(scope, {})

    async def _subscribe_later(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        uri = self._uri_of(request.params)
        session.subscriptions.check(uri)
        await self._resolve_later(scope, uri)
        session.subscriptions.add(uri)
        return session.complete(scope, {})

    def _unsubscribe(
        self, session: ServerSession, scope: RequestScope, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        session.subscriptions.discard(self._uri_of(params))
        return session.complete(scope, {})

    # -- subscriptions/listen (2026-07-28) ---------------------------------------------------

    def _listen_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        # Refused at once when it cannot be served: a handshake-era request (that revision
        # has no such method, its sessions subscribe with resources/subscribe) or a bad filter.
        if not scope.modern or self.listen is None:
            raise RemoteProtocolError(
                f"Method not found: {LISTEN} (protocol version {scope.version} has no such method)",
                METHOD_NOT_FOUND,
                {"method": LISTEN},
            )
        asked = SubscriptionFilter.parse(request.params)
        if asked.task_ids and not declares_tasks(scope, request.params):
            raise _missing_tasks("task status notifications are part of the tasks extension")
        return None

    async def _listen(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        assert self.listen is not None  # `_listen_quick` refused it otherwise
        asked = SubscriptionFilter.parse(request.params)
        await self.listen(request.id, asked.granted(session.discover_capabilities), notify)
        # The server closed the stream (spec 2026-07-28, Subscriptions: Graceful Closure).
        return session.complete(scope, {"_meta": {SUBSCRIPTION_ID: request.id}})

    # -- prompts ----------------------------------------------------------------------------------

    def _resolve_prompt(self, params: dict[str, Any] | None) -> tuple[Prompt, dict[str, Any]]:
        found, arguments = _named(params, "prompts/get", "prompt", self.prompts.get)
        try:
            return found, found.validate(arguments)
        except ArgumentsInvalid as exc:
            lines = "\n".join(f"- {line}" for line in exc.lines)
            raise RemoteProtocolError(
                f"Invalid arguments for prompt {found.name}:\n{lines}",
                INVALID_PARAMS,
                {"name": found.name},
            ) from None

    def _get_prompt_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        params = request.params
        name = params.get("name") if params else None
        found = self.prompts.get(name) if isinstance(name, str) else None
        if found is not None and (not found.inline or found.context_param is not None):
            return None
        found, kwargs = self._resolve_prompt(params)  # an unknown prompt is answered now
        try:
            value = found.fn(**kwargs)
        except Exception as exc:
            raise self._failed("prompt", found.name, exc, scope) from None
        return self._prompt_result(session, scope, found, value)

    async def _get_prompt(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        found, kwargs = self._resolve_prompt(request.params)
        arguments = (request.params or {}).get("arguments")
        book = self._book(scope, request, found.name, arguments)
        self._inject(
            found.context_param, kwargs, name=found.name, request=request, scope=scope,
            notify=notify, requester=requester, book=book,
        )  # fmt: skip
        try:
            value = await self._run(found, kwargs, book)
            if isinstance(value, _InputRound):
                return value.result
        except ToolTimedOut:
            raise RemoteProtocolError(
                f"Prompt {found.name} timed out after {found.timeout:g} s",
                INTERNAL_ERROR,
                {"name": found.name},
            ) from None
        except Exception as exc:
            raise self._failed("prompt", found.name, exc, scope) from None
        return self._prompt_result(session, scope, found, value)

    def _prompt_result(
        self, session: ServerSession, scope: RequestScope, found: Prompt, value: Any
    ) -> dict[str, Any]:
        try:
            messages = messages_of(value)
        except TypeError as exc:
            logger.exception("prompt %s returned %r", found.name, value)
            raise RemoteProtocolError(
                f"Internal error in prompt {found.name}: {exc}",
                INTERNAL_ERROR,
                {"name": found.name},
            ) from None
        known = revision(scope.version)
        if not known.structured:
            for message in messages:
                message["content"] = _downgrade(message["content"], known)
        result: dict[str, Any] = {}
        if found.description:
            result["description"] = found.description
        result["messages"] = messages
        return session.complete(scope, result)

    # -- completion -------------------------------------------------------------------------------

    def _resolve_completion(
        self, params: dict[str, Any] | None
    ) -> tuple[Completer | None, str, dict[str, str]]:
        """The completer asked for (None: nothing to complete with), the value, the context."""
        params = params or {}
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise RemoteProtocolError(
                'Invalid params: completion/complete needs "ref" and "argument" objects',
                INVALID_PARAMS,
            )
        name, value = argument.get("name"), argument.get("value")
        if not isinstance(name, str) or not isinstance(value, str):
            raise RemoteProtocolError(
                'Invalid params: "argument" needs "name" and "value" (strings)', INVALID_PARAMS
            )
        context = params.get("context")
        chosen = context.get("arguments") if isinstance(context, dict) else None
        chosen = (
            {k: v for k, v in chosen.items() if isinstance(v, str)}
            if isinstance(chosen, dict)
            else {}
        )
        owner: Prompt | ResourceTemplate | Resource | None
        if ref.get("type") == "ref/prompt":
            label = ref.get("name")
            owner = self.prompts.get(label) if isinstance(label, str) else None
            if owner is None:
                raise RemoteProtocolError(
                    f"Unknown prompt: {label}", INVALID_PARAMS, {"name": label}
                )
            known = [a["name"] for a in owner.arguments]
        elif ref.get("type") == "ref/resource":
            label = ref.get("uri")
            owner = None
            if isinstance(label, str):
                owner = self.resources.template_by_uri(label) or self.resources.static.get(label)
            if owner is None:
                raise RemoteProtocolError(
                    f"Unknown resource template: {label}", INVALID_PARAMS, {"uri": label}
                )
            if isinstance(owner, Resource):
                return None, value, chosen  # a plain resource has no variables to complete
            known = [v.name for v in owner.template.variables]
        else:
            raise RemoteProtocolError(
                'Invalid params: "ref" must be of type "ref/prompt" or "ref/resource"',
                INVALID_PARAMS,
            )
        if name not in known:
            raise RemoteProtocolError(
                f"Invalid params: {label} has no argument {name!r} "
                f"(it has: {', '.join(known) or 'none'})",
                INVALID_PARAMS,
            )
        return owner.completers.get(name), value, chosen

    def _complete_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        completer, value, _ = self._resolve_completion(request.params)
        if completer is None:
            return session.complete(scope, completion_result(()))
        result = completer.immediate(value)
        return None if result is None else session.complete(scope, result)

    async def _complete(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        completer, value, chosen = self._resolve_completion(request.params)
        assert completer is not None
        assert completer.fn is not None
        try:
            values = await self.invoker.invoke(completer, completer.call_args(value, chosen))
            result = completion_result(values)
        except ToolTimedOut:
            raise RemoteProtocolError(
                f"Completing {completer.name} timed out", INTERNAL_ERROR
            ) from None
        except Exception as exc:
            raise self._failed("completer", completer.name, exc, scope) from None
        return session.complete(scope, result)

    # -- tools/call -------------------------------------------------------------------------------

    def _tools_call_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        tool = self._inline_tool(request)
        if tool is None:
            return None
        return self._finish(session, scope, self._call_inline(tool, request))

    async def _tools_call(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        tool, arguments = self._resolve_call(request.params)
        if tool.task is not None:
            declared = declares_tasks(scope, request.params)
            if declared and self.tasks is not None:
                return await self._task_call(
                    session, scope, tool, arguments, request=request, notify=notify,
                    requester=requester,
                )  # fmt: skip
            if tool.task.required:
                raise _missing_tasks(f"tool {tool.name} runs only as a task")
        result = await self._call(tool, arguments, request, scope, notify, requester=requester)
        if result.get("resultType") == "input_required":
            return result
        return self._finish(session, scope, result)

    async def _task_call(
        self,
        session: ServerSession,
        scope: RequestScope,
        tool: Tool,
        arguments: dict[str, Any],
        *,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        """A call that may become a task (Rule 6): its result, or the task's handle."""
        assert self.tasks is not None
        assert tool.task is not None
        try:
            kwargs = tool.validate(arguments)
        except ArgumentsInvalid as exc:
            return self._finish(session, scope, self._invalid(tool, exc))
        book = self._book(scope, request, tool.name, arguments)
        context = self._inject(
            tool.context_param, kwargs, name=tool.name, request=request, scope=scope,
            notify=notify, requester=requester, book=book,
        )  # fmt: skip

        async def body() -> dict[str, Any]:
            result = await self._outcome(tool, kwargs, book, scope, protocol_errors=True)
            if result.get("resultType") == "input_required":
                return result
            return self._finish(session, scope, result)

        # The handshake era has no listen stream: the session hears of its own tasks.
        follow = None if scope.modern else session.follow_task
        return await self.tasks.run(
            tool.task,
            body,
            context,
            created=follow,
            principal=current_principal(),
            scopes=sorted(tool.scopes),
            tool=tool.name,
        )

    # -- tasks/get, tasks/update, tasks/cancel (Rule 6) ---------------------------------------

    def _tasks_quick(
        self, session: ServerSession, scope: RequestScope, request: Request
    ) -> dict[str, Any] | None:
        if self.tasks is None:
            raise RemoteProtocolError(
                f"Method not found: {request.method} (this server runs no tasks)",
                METHOD_NOT_FOUND,
                {"method": request.method},
            )
        if not declares_tasks(scope, request.params):
            raise _missing_tasks(f"{request.method} is part of the tasks extension")
        _task_id(request.params)
        return None

    async def _tasks(
        self,
        session: ServerSession,
        scope: RequestScope,
        request: Request,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        assert self.tasks is not None  # `_tasks_quick` refused it otherwise
        task_id = _task_id(request.params)
        # Another principal's task is answered as an unknown one (tasks Rule 7).
        principal = current_principal()
        if request.method == "tasks/get":
            record = await self.tasks.get(task_id, principal=principal)
            if record is None:
                raise _unknown_task(task_id)
            return record.detailed_wire()
        if request.method == "tasks/update":
            responses = (request.params or {}).get("inputResponses")
            if not isinstance(responses, dict):
                raise RemoteProtocolError(
                    'Invalid params: tasks/update needs "inputResponses" (an object of answers '
                    "by key)",
                    INVALID_PARAMS,
                )
            found = await self.tasks.update(task_id, responses, principal=principal)
        else:
            found = await self.tasks.cancel(task_id, principal=principal)
        if not found:
            raise _unknown_task(task_id)
        return {"resultType": "complete"}

    def _resolve_call(self, params: dict[str, Any] | None) -> tuple[Tool, dict[str, Any]]:
        return _named(params, "tools/call", "tool", self.registry.get)

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
        book = self._book(scope, request, tool.name, arguments)
        self._inject(
            tool.context_param, kwargs, name=tool.name, request=request, scope=scope,
            notify=notify, requester=requester, book=book,
        )  # fmt: skip
        return await self._outcome(tool, kwargs, book, scope)

    async def _outcome(
        self,
        tool: Tool,
        kwargs: dict[str, Any],
        book: AskBook | None,
        scope: RequestScope,
        *,
        protocol_errors: bool = False,
    ) -> dict[str, Any]:
        """Run a validated call: its `CallToolResult` or input-required round's result.

        Args:
            tool: The tool.
            kwargs: Its validated arguments (with its `Context`, if it takes one).
            book: The 2026-07-28 attempt's answers, or None.
            scope: The request's scope.
            protocol_errors: Let a `RemoteProtocolError` the tool raised through, as the
                protocol error it names (task-capable tools, Rule 6).
        """
        try:
            value = await self._run(tool, kwargs, book)
        except ToolTimedOut:
            return _error_result(f"Tool {tool.name} timed out after {tool.timeout:g} s")
        except (ClientCapabilityError, AnswerInvalidError, ClientTimeoutError) as exc:
            # The tool's question could not be asked or answered: a plain error result (no
            # traceback, no masking), or the protocol error 2026-07-28 has for it.
            if scope.modern:
                raise _asking_failed(exc, scope, None) from None
            return _error_result(str(exc))
        except RemoteProtocolError as exc:
            if protocol_errors:
                raise
            return self._tool_failed(tool, exc)
        except Exception as exc:
            return self._tool_failed(tool, exc)
        if isinstance(value, _InputRound):
            return value.result
        return self._result(tool, value)

    # -- asking the client (see _features/asking) -------------------------------------------

    def _book(
        self, scope: RequestScope, request: Request, target: str, arguments: Any
    ) -> AskBook | None:
        """Under 2026-07-28, the answers this attempt starts with; None in the handshake era.

        Raises:
            RemoteProtocolError: -32602 for `inputResponses` that is not an object, and for a
                `requestState` that fails its checks (`StateSeal.open`).
        """
        if not scope.modern:
            return None
        params = request.params or {}
        bound = binding(
            request.method,
            target,
            arguments if isinstance(arguments, dict) else None,
            current_principal(),  # a state minted for one user's request is no other's
        )
        responses = params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise RemoteProtocolError(
                'Invalid params: "inputResponses" must be an object of answers by key',
                INVALID_PARAMS,
            )
        answers: dict[str, Any] = {}
        if "requestState" in params:
            answers = self.state_seal.open(params["requestState"], bound, time.time())
        answers.update(responses or {})
        return AskBook(answers, bound)

    def _input_required(self, book: AskBook) -> _InputRound:
        """The `input_required` result of an attempt that ended at unanswered questions."""
        try:
            state = self.state_seal.seal(book.bound, book.used, time.time())
        except StateTooLarge as exc:
            raise RemoteProtocolError(f"Internal error: {exc}", INTERNAL_ERROR) from None
        return _InputRound(
            {"resultType": "input_required", "inputRequests": book.pending, "requestState": state}
        )

    async def _run(self, callee: Callee, kwargs: dict[str, Any], book: AskBook | None) -> Any:
        """Invoke `callee`; its value, or an `_InputRound` when a 2026-07-28 attempt needs answers.

        A function that caught `InputRequired` and went on still left its questions unanswered.
        """
        try:
            value = await self.invoker.invoke(callee, kwargs)
        except InputRequired:
            assert book is not None  # only a book raises it
            return self._input_required(book)
        except BaseExceptionGroup as group:  # asked from a task of a nursery of its own
            if book is not None and book.pending and group.subgroup(InputRequired) is not None:
                return self._input_required(book)
            raise
        if book is not None and book.pending:
            return self._input_required(book)
        return value

    def _inject(
        self,
        param: str | None,
        kwargs: dict[str, Any],
        *,
        name: str,
        request: Request,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
        book: AskBook | None,
    ) -> Context | None:
        """Put the call's `Context` in `kwargs` under `param`, for a function that declares one.

        `name` is what the context reports as the callee (a tool's or prompt's name, or a URI).

        Returns:
            The context, or None when the function takes none.
        """
        if param is None:
            return None
        kwargs[param] = context = Context(
            request_id=request.id,
            tool_name=name,
            scope=scope,
            send=notify,
            requester=None if book is not None else requester,
            book=book,
            ask_timeout=self.ask_timeout,
            auth=current_auth.get(),
        )
        return context

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


def _named(
    params: dict[str, Any] | None, method: str, kind: str, lookup: Callable[[str], T | None]
) -> tuple[T, dict[str, Any]]:
    """The registered item a `tools/call` or `prompts/get` names, and its arguments object.

    Raises:
        RemoteProtocolError: -32602 for a missing name, an unknown one (`data.name`), or
            arguments that are not an object.
    """
    params = params or {}
    name = params.get("name")
    if not isinstance(name, str):
        raise RemoteProtocolError(
            f'Invalid params: {method} needs "name" (a string)', INVALID_PARAMS
        )
    found = lookup(name)
    if found is None:
        raise RemoteProtocolError(f"Unknown {kind}: {name}", INVALID_PARAMS, {"name": name})
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        raise RemoteProtocolError('Invalid params: "arguments" must be an object', INVALID_PARAMS)
    return found, arguments


def _task_id(params: dict[str, Any] | None) -> str:
    task_id = (params or {}).get("taskId")
    if not isinstance(task_id, str):
        raise RemoteProtocolError('Invalid params: "taskId" must be a string', INVALID_PARAMS)
    return task_id


def _unknown_task(task_id: str) -> RemoteProtocolError:
    return RemoteProtocolError(f"Unknown task: {task_id}", INVALID_PARAMS, {"taskId": task_id})


def _missing_tasks(why: str) -> RemoteProtocolError:
    """-32021 naming the tasks extension (SEP-2575, Missing Required Capabilities)."""
    return RemoteProtocolError(
        f"Missing required client capability: {why}; declare the {TASKS_EXTENSION} extension",
        MISSING_CLIENT_CAPABILITY,
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _asking_failed(
    exc: ClientCapabilityError | AnswerInvalidError | ClientTimeoutError,
    scope: RequestScope,
    data: dict[str, Any] | None,
) -> RemoteProtocolError:
    """The JSON-RPC error of a function whose question could not be asked or answered.

    A malformed answer is -32602 as it is; a capability the client lacks is -32021 with the
    capability under 2026-07-28, and -32603 with the message before (no code of its own there).
    """
    if isinstance(exc, AnswerInvalidError):
        return exc
    if not scope.modern or isinstance(exc, ClientTimeoutError):
        return RemoteProtocolError(str(exc), INTERNAL_ERROR, data)
    name = exc.capability.split(".")[0]
    needed: dict[str, Any] = {name: {}}
    if "." in exc.capability:
        needed[name] = {exc.capability.split(".")[1]: {}}
    return RemoteProtocolError(
        f"Missing required client capability: {exc}",
        MISSING_CLIENT_CAPABILITY,
        {"requiredCapabilities": needed},
    )
