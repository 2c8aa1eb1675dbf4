"""The method table, the middleware chain, and the one place where exceptions become wire messages.

Every request a server routes is answered here: its route's handler is run (through the
middleware chain when it has one) and what it returns or raises becomes the request's result or
JSON-RPC error.

Rule 1: validate, then invoke. Arguments are validated at resolution (`resolve`), before the
        function runs; an exception raised *by the function* is never reported as bad
        arguments, and bad arguments never reach it.
Rule 2: this is the error boundary. For a tool, `ToolError` is an `isError` result with its
        message verbatim, any other `Exception` an `isError` "TypeName: message" (or a masked
        message) with the traceback logged; for a resource or prompt the same become -32603
        (their results have no `isError`); `RemoteProtocolError` and `RequestError` are their
        JSON-RPC error; a bug of ours is -32603. `BaseException`s that are not `Exception`s
        (Cancelled, KeyboardInterrupt) pass. Middleware raise into the same boundary, and so
        do a client's handlers of the server's requests (`error_answer`, the one mapping). The
        result or error of an unexpected exception is marked (`UnexpectedErrorResult`,
        `UnexpectedError`: same wire form, the exception kept) so middleware can mask it.
Rule 3: no I/O and no event loop here: running a function (threads, limiters, timeouts) is the
        runtime's `Invoker`, handed in at construction; this module only awaits it.

How a request goes through (the record is `ResolvedRequest`, made once):

    resolve(request) -> record            the route's resolver: target, arguments, scopes, now
    answer_now(session, record)           record.now: on the reader's own task, no waiting
    await answer(session, record, ...)    everything else: in a task of the runtime's, through
                                          the middleware chain to the route's handler

A route answers its method: `now` (a handler that never waits) and/or `later` (one that may).
With middleware that may wait in a family's chain nothing of the family is answered `now`,
and a route with only `now` runs inside the chain; middleware that never wait
(`Middleware.inline`) run around `now` answers too, awaited on the reader's own task
(`chained`). A method absent from the routes is -32601; one that a
request's revision lacks (2026-07-28 has no initialize, ping, setLevel or resources/subscribe)
is refused by the session's `scope`, which asks the revision table.

Tasks: which a session speaks is its revision's (`Revision.tasks`): 2025-11-25's own utility
(`params.task`, its `tasks/*` handlers in `_dispatch/task_utility`), or under 2026-07-28 the
extension (SEP-2663), below. A tool registered with `task=` may become an extension task for a
client that declared the extension: its call runs through the runtime's `TaskEngine`
(`tasks`), which answers the call's own result or a `CreateTaskResult`; `tasks/get`,
`tasks/update` and `tasks/cancel` are refused (-32021) for a request that did not declare the
extension, and an unknown task id is -32602, as is the id of another principal's task. A
`required` task tool refuses such a client's call (-32021) before its function runs. A
task-capable tool that raises `RemoteProtocolError` reports a protocol error (a JSON-RPC error,
or a `failed` task).

Authorization: over HTTP with token verification, the transport refuses (403) a request whose
record names scopes the token lacks, before it reaches here; the lists leave out what the
token lacks the scopes for unless `hide_unauthorized` is False, and a list so cut says
`cacheScope: "private"` (2026-07-28). Without a token (stdio, memory) everything is listed, and
a function's `Context.auth` is None.

Resources and prompts have no `isError` result: an unknown URI is the revision's
resource-not-found error with `data.uri`, and arguments or template variables that fail
validation or the value rules (a decoded `{name}` holding "/", say) are -32602, one line per
problem, as is a URI longer than the server's `max_uri_length` (checked before anything else,
`data.maxUriLength`). Slow steps of ours run in a worker thread, through the invoker: matching
a URI longer than `resolve.LONG_URI` against the templates, walking a directory for
`resources/list`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from .._core.auth import AuthInfo
from .._core.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Notification,
    Request,
    RequestId,
    error_response,
    result_response,
)
from .._core.meta import SUBSCRIPTION_ID
from .._core.request_state import StateSeal, StateTooLarge, binding
from .._core.server_session import CACHE_HINTS, RequestScope, ServerSession
from .._core.subscriptions import LISTEN, SubscriptionFilter
from .._core.types import CacheHint
from .._core.versions import MISSING_CLIENT_CAPABILITY, TASK_METHODS, Revision, revision
from .._exceptions import (
    ClientCapabilityError,
    ClientTimeoutError,
    RemoteProtocolError,
    RequestError,
    ResourceNotFoundError,
    ToolError,
)
from .._features.asking import AnswerInvalidError, AskBook, InputRequired
from .._features.completion import Completer, completion_result
from .._features.context import Context, NotificationSender, Requester
from .._features.prompts import Prompt, PromptRegistry, messages_of
from .._features.registry import Registry, page_of
from .._features.resources import Resource, ResourceRegistry, ResourceTemplate
from .._features.schema import ArgumentsInvalid, ResultInvalid
from .._features.task_utility import (
    asked_task,
    created_result,
    requestor_of,
    server_capabilities,
    support_for,
)
from .._features.tasks import TASKS_EXTENSION, TaskEngine, declares_tasks
from .._features.tools import Tool, ToolRegistry
from .middleware import Chain, MiddlewareLike, NotifyNext
from .resolve import Kind, ResolvedRequest, Targets, unknown_method
from .task_utility import answer_task_request

__all__ = [
    "DEFAULT_ASK_TIMEOUT",
    "LIST_METHODS",
    "Callee",
    "Dispatcher",
    "Invoker",
    "ToolTimedOut",
    "UnexpectedError",
    "UnexpectedErrorResult",
    "error_answer",
]

logger = logging.getLogger("trio_mcp")

#: Answers a method without waiting: (session, the record, the scope it runs under) -> the
#: result object. The scope comes apart from the record: binding a record costs a copy, which
#: the requests answered at once (the fast path) do without.
AnswerNow = Callable[[ServerSession, ResolvedRequest, RequestScope], dict[str, Any]]
#: Answers a method that may wait: (session, bound record, scope, notify, requester) -> result.
AnswerLater = Callable[
    [ServerSession, ResolvedRequest, RequestScope, NotificationSender, "Requester | None"],
    Awaitable[dict[str, Any]],
]
#: Resolves a method's request (step 1): (request, its verified token, may it be answered
#: now) -> the record.
Resolver = Callable[[Request, AuthInfo | None, bool], ResolvedRequest]
#: Serves one `subscriptions/listen` stream until it is cancelled, or returns when the server
#: closes it: (its request's id, what the server grants, where the stream's messages go, its
#: verified token).
Listen = Callable[
    [RequestId, SubscriptionFilter, NotificationSender, AuthInfo | None], Awaitable[None]
]


@dataclass(frozen=True, slots=True)
class Route:
    """How one method is resolved and answered.

    Attributes:
        kind: The family of the method (`ResolvedRequest.kind`): which middleware hooks run.
        resolve: Step 1 of resolution (`resolve`).
        now: Answers it without waiting, when the record says it can (`ResolvedRequest.now`);
            for a method that never waits, always.
        later: Answers it when it may wait (None: `now` answers every request of the method).
    """

    kind: Kind
    resolve: Resolver
    now: AnswerNow | None
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


class UnexpectedErrorResult(dict[str, Any]):
    """The `isError` result of a tool that raised an unexpected exception (not a `ToolError`).

    A plain result on the wire; the middleware chain can tell it from a tool's own error
    result by its type (`ErrorMasking` does).

    Attributes:
        exception: What the tool raised.
        where: What raised it, as the masked message names it ("tool search").
    """

    __slots__ = ("exception", "where")

    def __init__(self, result: dict[str, Any], exception: Exception, where: str) -> None:
        super().__init__(result)
        self.exception = exception
        self.where = where


class UnexpectedError(RemoteProtocolError):
    """-32603 for an unexpected exception of a resource, prompt or completer function.

    Attributes:
        exception: What the function raised.
        where: What raised it, as the masked message names it ("resource note://x").
    """

    def __init__(self, message: str, data: Any, exception: Exception, where: str) -> None:
        super().__init__(message, INTERNAL_ERROR, data)
        self.exception = exception
        self.where = where


def error_answer(
    request_id: RequestId, method: str, exc: Exception, *, detail: bool = False
) -> dict[str, Any]:
    """The JSON-RPC error answering a request whose handler raised `exc` (Rule 2).

    `RemoteProtocolError` and `RequestError` are their own error; anything else is -32603,
    its traceback logged here and kept off the wire.

    Args:
        request_id: The request's id.
        method: Its method, for the message and the log.
        exc: What the handler raised.
        detail: Name the exception's type and text in the message (a client telling the
            server what failed in its own handler), rather than only the method (a server
            keeps its internals to itself).
    """
    if isinstance(exc, RemoteProtocolError | RequestError):
        return error_response(request_id, exc.code, exc.message, exc.data)
    logger.error("internal error answering %s", method, exc_info=exc)
    message = f"Internal error in {method}"
    if detail:
        message = f"{message}: {type(exc).__name__}: {exc}"
    return error_response(request_id, INTERNAL_ERROR, message)


#: Seconds a tool waits for the client's answer to one question (handshake era), unless the
#: ask says otherwise: a person may be reading a form.
DEFAULT_ASK_TIMEOUT: Final = 600.0


@dataclass(frozen=True, slots=True)
class _InputRound:
    """What `_run` returns for an attempt that ended at unanswered questions: its result."""

    result: dict[str, Any]


#: The lists a client pages through, by method: what `cache_hints` is keyed by.
LIST_METHODS: Final = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


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
            scopes for; False lists everything.
        middleware: Runs around every request (`middleware` module), outermost first.
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
        middleware: Sequence[MiddlewareLike] = (),
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
        #: The middleware, outermost first (`add_middleware`).
        self.chain = Chain(middleware)
        #: Whether there is any (read on every request: a plain attribute, not a call).
        self.has_middleware = bool(self.chain)
        #: What the server's lifespan yielded, for every `Context` (None without one).
        self.lifespan_value: Any = None
        #: Step 1 of resolution over the registries; its `base_scopes` are the server's.
        self.targets = Targets(self.registry, self.resources, self.prompts)
        #: Caching hints of each list method (2026-07-28); unset ones send `CACHE_HINTS`.
        self.cache_hints: dict[str, CacheHint] = {}
        plain = self._plain
        #: Every method this dispatcher answers.
        self.routes: dict[str, Route] = {
            # The handshake fixes the revision every later request is checked against: always
            # answered at once, in order, without the middleware (which may wait).
            "initialize": Route("protocol", self._handshake, self._initialize),
            "ping": Route("protocol", plain("protocol"), self._ping),
            "logging/setLevel": Route("protocol", plain("protocol"), self._set_level),
            "server/discover": Route("protocol", plain("protocol"), self._discover),
            "tools/list": Route("list", plain("list"), self._tools_list),
            "tools/call": Route("tool", self.targets.tool, self._tool_now, self._tool_later),
            "resources/list": Route(
                "list",
                self._resources_list_target,
                self._resources_list,
                self._resources_list_later,
            ),
            "resources/templates/list": Route("list", plain("list"), self._templates_list),
            "resources/read": Route(
                "resource", self.targets.resource, self._read_now, self._read_later
            ),
            "resources/subscribe": Route("subscribe", self.targets.resource, self._subscribe),
            "resources/unsubscribe": Route("subscribe", self.targets.resource, self._unsubscribe),
            "prompts/list": Route("list", plain("list"), self._prompts_list),
            "prompts/get": Route(
                "prompt", self.targets.prompt, self._prompt_now, self._prompt_later
            ),
            "completion/complete": Route(
                "completion", self.targets.completion, self._complete_now, self._complete_later
            ),
            LISTEN: Route("listen", plain("listen", now=False), None, self._listen),
            "tasks/get": Route("task", self._task_target, None, self._tasks),
            "tasks/update": Route("task", self._task_target, None, self._tasks),
            "tasks/cancel": Route("task", self._task_target, None, self._tasks),
            "tasks/result": Route("task", self._task_target, None, self._tasks),
            "tasks/list": Route("task", self._task_target, None, self._tasks),
        }
        #: Runs calls that may become tasks, and keeps the tasks: the runtime's; None runs
        #: every call to its end and answers the `tasks/*` methods -32601.
        self.tasks: TaskEngine | None = None
        #: Serves `subscriptions/listen` (2026-07-28): the runtime's, since a stream waits;
        #: None answers it -32601.
        self.listen: Listen | None = None

    @property
    def base_scopes(self) -> tuple[str, ...]:
        """The OAuth scopes every request needs (a `Server`'s `required_scopes`)."""
        return self.targets.base_scopes

    @base_scopes.setter
    def base_scopes(self, scopes: tuple[str, ...]) -> None:
        self.targets.base_scopes = scopes

    def add_middleware(self, middleware: MiddlewareLike) -> None:
        """Add a middleware, innermost of those there."""
        self.chain.add(middleware)
        self.has_middleware = True

    # -- step 1 -----------------------------------------------------------------------------

    def resolve(self, request: Request, auth: AuthInfo | None = None) -> ResolvedRequest:
        """The record of `request` (step 1 of resolution; see `resolve`). Never raises."""
        route = self.routes.get(request.method)
        if route is None:
            return unknown_method(request, auth)
        # What needs no waiting is answered on the reader's task, through the chain when no
        # middleware of the family may wait (`Middleware.inline`).
        return route.resolve(
            request, auth, not self.has_middleware or self.chain.never_waits(route.kind)
        )

    def _plain(self, kind: Kind, *, now: bool = True) -> Resolver:
        """The resolver of a method that names nothing: it needs the server's scopes only."""

        def resolve(request: Request, auth: AuthInfo | None, inline_ok: bool) -> ResolvedRequest:
            return ResolvedRequest(
                request, kind, scopes=self.targets.base_scopes, auth=auth, now=now and inline_ok
            )

        return resolve

    def _handshake(
        self, request: Request, auth: AuthInfo | None, inline_ok: bool
    ) -> ResolvedRequest:
        return ResolvedRequest(
            request, "protocol", scopes=self.targets.base_scopes, auth=auth, now=True
        )

    def _resources_list_target(
        self, request: Request, auth: AuthInfo | None, inline_ok: bool
    ) -> ResolvedRequest:
        # A template that lists resources (a directory) is walked in a worker thread.
        walks = any(template.listing is not None for template in self.resources.templates)
        return ResolvedRequest(
            request, "list", scopes=self.targets.base_scopes, auth=auth,
            now=inline_ok and not walks,
        )  # fmt: skip

    def _task_target(
        self, request: Request, auth: AuthInfo | None, inline_ok: bool
    ) -> ResolvedRequest:
        # The scopes of a task are its tool's: known from its record, which the runtime looks
        # up (the store may be remote): `Server.scopes_of`.
        task_id = (request.params or {}).get("taskId")
        return ResolvedRequest(
            request, "task", name=task_id if isinstance(task_id, str) else None,
            scopes=self.targets.base_scopes, auth=auth,
        )  # fmt: skip

    # -- entry points ---------------------------------------------------------------------------

    def answer_now(
        self, session: ServerSession, call: ResolvedRequest, session_id: str | None = None
    ) -> dict[str, Any]:
        """The response of a request its record says needs no waiting (`call.now`).

        No middleware runs around it: one that goes through middleware that never wait is
        answered by `answer`, awaited on the caller's task (`chained`).
        """
        request = call.request
        scope = None
        try:
            # The record is not bound (a copy of it): its handler takes the scope apart.
            scope = session.scope(request.method, request.params)
            if call.error is not None:
                raise call.error  # noqa: TRY301 - `_now`, inlined: this is the fast path
            now = self.routes[request.method].now
            assert now is not None
            return result_response(request.id, now(session, call, scope))
        except Exception as exc:
            return self._failure(session, call, scope, exc)

    async def answer(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        notify: NotificationSender,
        requester: Requester | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Answer any request; waits for functions. Never raises an `Exception`.

        Args:
            session: The client's session.
            call: The request's record (`resolve`).
            notify: Where the request's notifications go.
            requester: How a function's `Context` sends requests to the client, if it can.
            session_id: The id of the session (`ResolvedRequest.session_id`).
        """
        route = self.routes.get(call.method)
        if route is None or (call.now and not self.chained(call)):
            return self.answer_now(session, call, session_id)
        scope = None
        try:
            scope = session.scope(call.method, call.params)
            if not call.matched:  # a long URI: matched off the event loop
                work = _Work(call.method, functools.partial(self.targets.matched, call))
                call = await self.invoker.invoke(work, {})
            if not self.has_middleware:  # the record goes to the handler as it is
                if call.error is not None or route.later is None:
                    return result_response(call.id, self._now(session, call, scope))
                result = await route.later(session, call, scope, notify, requester)
                return result_response(call.id, result)
            call = call.bound(scope, session_id)  # middleware read the revision off it

            async def innermost(call: ResolvedRequest) -> dict[str, Any]:
                assert scope is not None
                if call.now or route.later is None or call.error is not None:
                    return self._now(session, call, scope)
                return await route.later(session, call, scope, notify, requester)

            if call.kind == "tool" and self._may_become_task(call, scope):
                result = await innermost(call)  # the chain runs inside the task (`_tool_later`)
            else:
                result = await self.chain.around(call.kind, innermost)(call)
            return result_response(call.id, result)
        except Exception as exc:
            return self._failure(session, call, scope, exc)

    def _failure(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope | None,
        exc: Exception,
    ) -> dict[str, Any]:
        """The response to a request whose answer (or a middleware) raised `exc` (Rule 2)."""
        if isinstance(exc, ToolError):  # raised by a middleware
            if call.kind == "tool" and scope is not None:
                return result_response(
                    call.id, self._finish(session, call, scope, _error_result(str(exc)))
                )
            return error_response(call.id, INTERNAL_ERROR, str(exc))  # no `isError` there
        return error_answer(call.id, call.method, exc)

    def chained(self, call: ResolvedRequest) -> bool:
        """Whether a record answered without waiting goes through middleware (all `inline`).

        Its answer is then `answer`'s, awaited on the caller's task: nothing in it waits.
        """
        return (
            self.has_middleware
            and call.request.method != "initialize"
            and self.chain.wraps(call.kind)
        )

    def _now(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        """The result of a record answered without waiting (or what is wrong with it)."""
        if call.error is not None:
            raise call.error
        now = self.routes[call.request.method].now
        assert now is not None
        return now(session, call, scope)

    async def notified(self, notification: Notification, handle: NotifyNext) -> None:
        """Run the client's `notification` through the middleware, `handle` innermost."""
        if not self.chain.sees_notifications:
            await handle(notification)
            return
        try:
            await self.chain.around_notification(handle)(notification)
        except Exception:
            logger.exception("a middleware raised handling %s", notification.method)

    # -- methods that never wait ----------------------------------------------------------------

    @staticmethod
    def _initialize(
        session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        result = session.initialize(call.params)  # handshake era only: no per-request fields
        # The tasks a session is told of are its revision's (the revision table's `tasks`).
        result["capabilities"] = server_capabilities(
            result["capabilities"], result["protocolVersion"]
        )
        return result

    @staticmethod
    def _ping(session: ServerSession, call: ResolvedRequest, scope: RequestScope) -> dict[str, Any]:
        return session.complete(scope, {})

    @staticmethod
    def _set_level(
        session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        session.set_log_level(call.params)
        return session.complete(scope, {})

    @staticmethod
    def _discover(
        session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        return session.complete(scope, session.discover())

    def _tools_list(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        return session.complete(scope, self._list("tools", self.registry, call, scope))

    def _resources_list(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        result = self._list("resources", self.resources.static, call, scope)
        return session.complete(scope, result)

    async def _resources_list_later(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        listing = [t for t in self.resources.templates if t.listing is not None]
        if not listing:
            return self._resources_list(session, call, scope)
        cursor = _cursor(call.params)
        work = _Work("resources/list", functools.partial(_listed_by, listing))
        found: list[_Listed] = await self.invoker.invoke(work, {})
        items, next_cursor = page_of(
            "resources", [*self.resources.static, *found], cursor, self.page_size
        )
        return session.complete(scope, self._page("resources", items, next_cursor, call, scope))

    def _templates_list(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        result = self._list("resourceTemplates", self.resources.templates, call, scope)
        return session.complete(scope, result)

    def _prompts_list(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        return session.complete(scope, self._list("prompts", self.prompts, call, scope))

    def _list(
        self, key: str, registry: Registry[Any], call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        items, next_cursor = registry.page(_cursor(call.params), self.page_size)
        return self._page(key, items, next_cursor, call, scope)

    def _page(
        self,
        key: str,
        items: Iterable[Any],
        next_cursor: str | None,
        call: ResolvedRequest,
        scope: RequestScope,
    ) -> dict[str, Any]:
        auth = call.auth
        if auth is not None and self.hide_unauthorized:
            # A page may come out shorter than `page_size`; cursors stay the registry's.
            items = [item for item in items if auth.has_scopes(item.scopes)]
        result: dict[str, Any] = {key: [item.definition(scope.version) for item in items]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        hint = self.cache_hints.get(call.method)
        hints = hint.to_wire() if hint else None
        if auth is not None and self.hide_unauthorized:
            # A list cut to this token's scopes is this user's: no cache may share it.
            hints = {**(hints or CACHE_HINTS), "cacheScope": "private"}
        return ServerSession.cacheable(scope, result, hints)

    def _subscribe(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        assert call.name is not None
        session.subscriptions.check(call.name)  # past a bound: refused first, nothing kept
        if call.target is None:
            raise self._not_found(call, scope)  # only what exists can be watched
        if call.invalid is not None:
            raise self._invalid_variables(call, call.invalid)
        session.subscriptions.add(call.name)
        return session.complete(scope, {})

    def _unsubscribe(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        assert call.name is not None
        session.subscriptions.discard(call.name)
        return session.complete(scope, {})

    # -- resources --------------------------------------------------------------------------------

    @staticmethod
    def _not_found(call: ResolvedRequest, scope: RequestScope) -> RemoteProtocolError:
        uri = call.name
        return RemoteProtocolError(
            f"Resource not found: {uri}",
            revision(scope.version).resource_not_found,
            {"uri": uri},
        )

    @staticmethod
    def _invalid_variables(call: ResolvedRequest, exc: ArgumentsInvalid) -> RemoteProtocolError:
        lines = "\n".join(f"- {line}" for line in exc.lines)
        return RemoteProtocolError(
            f"Invalid params: {call.name} matches a resource template, but:\n{lines}",
            INVALID_PARAMS,
            {"uri": call.name},
        )

    def _readable(self, call: ResolvedRequest, scope: RequestScope) -> Resource | ResourceTemplate:
        """What a read's record names, or the revision's error for it."""
        if call.target is None:
            raise self._not_found(call, scope)
        if call.invalid is not None:
            raise self._invalid_variables(call, call.invalid)
        target: Resource | ResourceTemplate = call.target
        return target

    def _read_now(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        target = self._readable(call, scope)
        if target.fn is None:
            assert isinstance(target, Resource)
            value = target.value
        else:
            try:
                value = target.fn(**(call.kwargs or {}))
            except Exception as exc:
                raise self._failed("resource", call, scope, exc) from None
        return self._read_result(session, call, scope, target, value)

    async def _read_later(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        target = self._readable(call, scope)
        if target.fn is None:
            assert isinstance(target, Resource)
            return self._read_result(session, call, scope, target, target.value)
        uri = call.name
        kwargs, book = self._prepared(call, scope, notify, requester, self._invalid_variables)
        try:
            value = await self._run(target, kwargs, book)
        except ToolTimedOut:
            raise RemoteProtocolError(
                f"Reading {uri} timed out after {target.timeout:g} s", INTERNAL_ERROR, {"uri": uri}
            ) from None
        except Exception as exc:
            raise self._failed("resource", call, scope, exc) from None
        if isinstance(value, _InputRound):
            return value.result
        return self._read_result(session, call, scope, target, value)

    def _read_result(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        target: Resource | ResourceTemplate,
        value: Any,
    ) -> dict[str, Any]:
        uri = call.name
        assert uri is not None
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
        self, kind: str, call: ResolvedRequest, scope: RequestScope, exc: Exception
    ) -> RemoteProtocolError:
        """The JSON-RPC error for an exception raised by a resource, prompt or completer."""
        name = call.name if kind == "resource" else getattr(call.target, "name", call.name)
        data = {"uri": name} if kind == "resource" else {"name": name}
        if isinstance(exc, (ClientCapabilityError, AnswerInvalidError, ClientTimeoutError)):
            return _asking_failed(exc, scope, data)
        if isinstance(exc, ResourceNotFoundError) and kind == "resource":
            return self._not_found(call, scope)
        if isinstance(exc, RequestError):
            return RemoteProtocolError(exc.message, exc.code, exc.data)
        if isinstance(exc, ToolError):
            return RemoteProtocolError(str(exc), INTERNAL_ERROR, data)
        logger.error("%s %s raised", kind, name, exc_info=exc)
        where = f"{kind} {name}"
        if self.mask_error_details:
            return UnexpectedError(f"Internal error in {where}", data, exc, where)
        return UnexpectedError(
            f"Internal error in {where}: {type(exc).__name__}: {exc}", data, exc, where
        )

    # -- subscriptions/listen (2026-07-28) ---------------------------------------------------

    async def _listen(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        # A handshake-era request is refused (that revision has no such method: its sessions
        # subscribe with resources/subscribe), and so is a bad filter.
        if not scope.modern or self.listen is None:
            raise RemoteProtocolError(
                f"Method not found: {LISTEN} (protocol version {scope.version} has no such method)",
                METHOD_NOT_FOUND,
                {"method": LISTEN},
            )
        asked = SubscriptionFilter.parse(call.params)
        if asked.task_ids and not declares_tasks(scope, call.params):
            raise _missing_tasks("task status notifications are part of the tasks extension")
        await self.listen(call.id, asked.granted(session.discover_capabilities), notify, call.auth)
        # The server closed the stream (spec 2026-07-28, Subscriptions: Graceful Closure).
        return session.complete(scope, {"_meta": {SUBSCRIPTION_ID: call.id}})

    # -- prompts ----------------------------------------------------------------------------------

    @staticmethod
    def _invalid_prompt(call: ResolvedRequest, exc: ArgumentsInvalid) -> RemoteProtocolError:
        lines = "\n".join(f"- {line}" for line in exc.lines)
        return RemoteProtocolError(
            f"Invalid arguments for prompt {call.name}:\n{lines}",
            INVALID_PARAMS,
            {"name": call.name},
        )

    def _gettable(self, call: ResolvedRequest) -> Prompt:
        if call.invalid is not None:
            raise self._invalid_prompt(call, call.invalid)
        found: Prompt = call.target
        return found

    def _prompt_now(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        found = self._gettable(call)
        try:
            value = found.fn(**(call.kwargs or {}))
        except Exception as exc:
            raise self._failed("prompt", call, scope, exc) from None
        return self._prompt_result(session, call, scope, found, value)

    async def _prompt_later(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        found = self._gettable(call)
        kwargs, book = self._prepared(call, scope, notify, requester, self._invalid_prompt)
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
            raise self._failed("prompt", call, scope, exc) from None
        return self._prompt_result(session, call, scope, found, value)

    def _prompt_result(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        found: Prompt,
        value: Any,
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

    def _complete_now(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        completer: Completer | None = call.target
        if completer is None:
            return session.complete(scope, completion_result(()))
        result = completer.immediate(call.arguments["value"])
        assert result is not None  # a completer that runs a function is never `now`
        return session.complete(scope, result)

    async def _complete_later(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        completer: Completer | None = call.target
        if completer is None or completer.fn is None:
            return self._complete_now(session, call, scope)
        value, chosen = call.arguments["value"], call.arguments["arguments"]
        try:
            values = await self.invoker.invoke(completer, completer.call_args(value, chosen))
            result = completion_result(values)
        except ToolTimedOut:
            raise RemoteProtocolError(
                f"Completing {completer.name} timed out", INTERNAL_ERROR
            ) from None
        except Exception as exc:
            raise self._failed("completer", call, scope, exc) from None
        return session.complete(scope, result)

    # -- tools/call -------------------------------------------------------------------------------

    def _tool_now(
        self, session: ServerSession, call: ResolvedRequest, scope: RequestScope
    ) -> dict[str, Any]:
        tool: Tool = call.target
        params = call.params
        if params is not None and "task" in params:
            self._refuse_task(tool, scope)
        if call.invalid is not None:
            return self._finish(session, call, scope, self._invalid(tool, call.invalid))
        kwargs = call.kwargs or {}
        try:
            # A raw tool takes the arguments dict itself (as the invoker calls it).
            value = tool.fn(kwargs) if tool.compiled is None else tool.fn(**kwargs)
        except Exception as exc:
            return self._finish(session, call, scope, self._tool_failed(tool, exc))
        return self._finish(session, call, scope, self._result(tool, value))

    def _may_become_task(self, call: ResolvedRequest, scope: RequestScope) -> bool:
        tool: Tool | None = call.target
        return (
            tool is not None
            and call.error is None
            and tool.task is not None
            and self.tasks is not None
            and (declares_tasks(scope, call.params) or _asks_task(call, scope))
        )

    def _refuse_task(self, tool: Tool, scope: RequestScope) -> None:
        """Refuse `params.task` for a tool that is never a task, where the server offers tasks.

        2025-11-25 (tasks, Tool-Level Negotiation): -32601 for a `forbidden` tool; a server
        that declares no tasks processes the request normally, ignoring the field.
        """
        if (
            revision(scope.version).tasks == "utility"
            and self.tasks is not None
            and any(each.task is not None for each in self.registry)
        ):
            raise RemoteProtocolError(
                f"Method not found: tool {tool.name} does not run as a task (its "
                'execution.taskSupport is "forbidden"); call it without "task"',
                METHOD_NOT_FOUND,
                {"method": "tools/call", "tool": tool.name},
            )

    async def _tool_later(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        tool: Tool = call.target
        if tool.task is not None:
            if self._may_become_task(call, scope):
                return await self._task_call(session, call, scope, notify, requester)
            if tool.task.required and revision(scope.version).tasks == "utility":
                raise RemoteProtocolError(  # 2025-11-25, tasks: Tool-Level Negotiation
                    f"Method not found: tool {tool.name} requires task augmentation "
                    '(execution.taskSupport is "required"): call it with "task" in its params',
                    METHOD_NOT_FOUND,
                    {"method": "tools/call", "tool": tool.name},
                )
            if tool.task.required:
                raise _missing_tasks(f"tool {tool.name} runs only as a task")
        elif call.params is not None and "task" in call.params:
            self._refuse_task(tool, scope)
        book = self._book(call, scope)
        context = self._context(
            tool.context_param, call, scope, notify=notify, requester=requester, book=book
        )
        return await self._call(session, call, scope, book, context)

    async def _call(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        book: AskBook | None,
        context: Context | None,
        *,
        protocol_errors: bool = False,
    ) -> dict[str, Any]:
        """Run a tool's call: its `CallToolResult`, or an input-required round's result."""
        tool: Tool = call.target
        try:
            kwargs = self._kwargs(call)
        except ArgumentsInvalid as exc:
            return self._finish(session, call, scope, self._invalid(tool, exc))
        if context is not None:
            kwargs = {**kwargs, tool.context_param: context}  # type: ignore[dict-item]
        result = await self._outcome(
            tool, kwargs, book, call, scope, protocol_errors=protocol_errors
        )
        if result.get("resultType") == "input_required":
            return result
        return self._finish(session, call, scope, result)

    async def _task_call(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        """A call that may become a task: its result, or the task's handle.

        The middleware chain runs around the call's work, inside the task when it becomes one.
        """
        assert self.tasks is not None
        tool: Tool = call.target
        assert tool.task is not None
        asking = _asks_task(call, scope)  # 2025-11-25: then a task, whatever its arguments
        if call.invalid is not None and not self.chain.wraps("tool") and not asking:
            return self._finish(session, call, scope, self._invalid(tool, call.invalid))
        book = self._book(call, scope)
        # The task runtime needs the call's Context before the work starts (to detach it).
        context = self._context(
            tool.context_param, call, scope, notify=notify, requester=requester, book=book
        )

        async def innermost(call: ResolvedRequest) -> dict[str, Any]:
            return await self._call(session, call, scope, book, context, protocol_errors=True)

        chained = self.chain.around("tool", innermost)

        async def body() -> dict[str, Any]:
            # What a middleware raises: as `answer` maps it, but for the task's outcome.
            try:
                return await chained(call)
            except ToolError as exc:
                return self._finish(session, call, scope, _error_result(str(exc)))
            except RequestError as exc:
                raise RemoteProtocolError(exc.message, exc.code, exc.data) from None

        # The handshake era has no listen stream: the session hears of its own tasks.
        follow = None if scope.modern else session.follow_task
        # 2025-11-25: the requestor asked for a task (`params.task`): one at once, its own.
        asked = asked_task(call.params) if asking else None
        return await self.tasks.run(
            tool.task if asked is None else support_for(tool.task, asked),
            body,
            context,
            created=follow,
            principal=call.principal,
            scopes=sorted(tool.scopes),
            tool=tool.name,
            requestor=None
            if asked is None
            else requestor_of(call.principal, session.requestor_key),
            asked=None if asked is None else created_result,
        )

    # -- tasks/get, tasks/update, tasks/cancel --------------------------------------------------

    async def _tasks(
        self,
        session: ServerSession,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
    ) -> dict[str, Any]:
        if self.tasks is None:
            raise RemoteProtocolError(
                f"Method not found: {call.method} (this server runs no tasks)",
                METHOD_NOT_FOUND,
                {"method": call.method},
            )
        form = revision(scope.version).tasks
        if call.method not in TASK_METHODS[form]:
            raise RemoteProtocolError(
                f"Method not found: {call.method} (protocol version {scope.version} has no "
                "such method)",
                METHOD_NOT_FOUND,
                {"method": call.method},
            )
        if form == "utility":
            return await answer_task_request(self.tasks, session, call, requester, self.page_size)
        if not declares_tasks(scope, call.params):
            raise _missing_tasks(f"{call.method} is part of the tasks extension")
        task_id = _task_id(call.params)
        # Another principal's task is answered as an unknown one.
        principal = call.principal
        if call.method == "tasks/get":
            record = await self.tasks.get(task_id, principal=principal)
            if record is None:
                raise _unknown_task(task_id)
            return record.detailed_wire()
        if call.method == "tasks/update":
            responses = (call.params or {}).get("inputResponses")
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

    # -- running a function ------------------------------------------------------------------

    @staticmethod
    def _kwargs(call: ResolvedRequest) -> dict[str, Any]:
        """The record's validated arguments; validated now if a middleware changed them.

        Raises:
            ArgumentsInvalid: when they fail validation.
        """
        if call.kwargs is not None:
            return call.kwargs
        if call.invalid is not None:
            raise call.invalid
        validated: dict[str, Any] = call.target.validate(dict(call.arguments))
        return validated

    async def _outcome(
        self,
        tool: Tool,
        kwargs: dict[str, Any],
        book: AskBook | None,
        call: ResolvedRequest,
        scope: RequestScope,
        *,
        protocol_errors: bool = False,
    ) -> dict[str, Any]:
        """Run a validated call: its `CallToolResult` or input-required round's result.

        Args:
            tool: The tool.
            kwargs: Its validated arguments (with its `Context`, if it takes one).
            book: The 2026-07-28 attempt's answers, or None.
            call: The request's record.
            scope: The scope it runs under.
            protocol_errors: Let a `RemoteProtocolError` the tool raised through, as the
                protocol error it names (task-capable tools).
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

    def _book(self, call: ResolvedRequest, scope: RequestScope) -> AskBook | None:
        """Under 2026-07-28, the answers this attempt starts with; None in the handshake era.

        Raises:
            RemoteProtocolError: -32602 for `inputResponses` that is not an object, and for a
                `requestState` that fails its checks (`StateSeal.open`).
        """
        if not scope.modern:
            return None
        params = call.params or {}
        # Bound to the request as the client sent it (its arguments, not a middleware's), and
        # to its user: a state minted for one user's request is no other's.
        arguments = params.get("arguments") if call.kind in ("tool", "prompt") else None
        bound = binding(
            call.method,
            call.name or "",
            arguments if isinstance(arguments, dict) else None,
            call.principal,
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

    def _prepared(
        self,
        call: ResolvedRequest,
        scope: RequestScope,
        notify: NotificationSender,
        requester: Requester | None,
        invalid: Callable[[ResolvedRequest, ArgumentsInvalid], RemoteProtocolError],
    ) -> tuple[dict[str, Any], AskBook | None]:
        """A read's or prompt's arguments (with its `Context`, if it takes one), and answers.

        Raises:
            RemoteProtocolError: `invalid`'s error for arguments that fail validation, and
                `_book`'s.
        """
        try:
            kwargs = self._kwargs(call)
        except ArgumentsInvalid as exc:
            raise invalid(call, exc) from None
        book = self._book(call, scope)
        param: str | None = call.target.context_param
        context = self._context(param, call, scope, notify=notify, requester=requester, book=book)
        if context is not None:
            kwargs = {**kwargs, param: context}  # type: ignore[dict-item]
        return kwargs, book

    def _context(
        self,
        param: str | None,
        call: ResolvedRequest,
        scope: RequestScope,
        *,
        notify: NotificationSender,
        requester: Requester | None,
        book: AskBook | None,
    ) -> Context | None:
        """The call's `Context`, for a function that declares one (None otherwise).

        It reports the callee as the record's `name`: a tool's or prompt's name, or a URI.
        """
        if param is None:
            return None
        return Context(
            request_id=call.id,
            tool_name=call.name or "",
            scope=scope,
            send=notify,
            requester=None if book is not None else requester,
            book=book,
            ask_timeout=self.ask_timeout,
            auth=call.auth,
            lifespan=self.lifespan_value,
        )

    def _invalid(self, tool: Tool, exc: ArgumentsInvalid) -> dict[str, Any]:
        lines = "\n".join(f"- {line}" for line in exc.lines)
        return _error_result(f"Invalid arguments for tool {tool.name}:\n{lines}")

    def _tool_failed(self, tool: Tool, exc: Exception) -> dict[str, Any]:
        if isinstance(exc, ToolError):
            return _error_result(str(exc))
        logger.error("tool %s raised", tool.name, exc_info=exc)
        where = f"tool {tool.name}"
        if self.mask_error_details:
            return UnexpectedErrorResult(_error_result(f"Internal error in {where}"), exc, where)
        return UnexpectedErrorResult(_error_result(f"{type(exc).__name__}: {exc}"), exc, where)

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
        session: ServerSession, call: ResolvedRequest, scope: RequestScope, result: dict[str, Any]
    ) -> dict[str, Any]:
        known = revision(scope.version)
        if not known.structured:
            result.pop("structuredContent", None)  # not part of the older revisions
            result["content"] = [_downgrade(block, known) for block in result["content"]]
        return session.complete(scope, result)


def _scope(call: ResolvedRequest) -> RequestScope:
    """The scope of a bound record (every handler gets one bound)."""
    scope = call.scope
    assert scope is not None
    return scope


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


def _asks_task(call: ResolvedRequest, scope: RequestScope) -> bool:
    """Whether a `tools/call` asks to run as a task where the revision lets it (2025-11-25)."""
    params = call.params
    return params is not None and "task" in params and revision(scope.version).tasks == "utility"


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
