"""`Server`: the facade users fill with tools, resources and prompts; what its sessions share.

The lists live: adding, removing, enabling or disabling a tool, resource or prompt while
serving tells every live session (the hub's list watchers) and every open
`subscriptions/listen` stream that asked (`_runtime/listening`); the capabilities a session is
given are derived from what is registered when it starts. A fleet's workers share
notifications through the server's broker (`_runtime/broker`): `resource_updated` and
`announce_list_changed` tell this worker's clients at once and publish to the others, and
`relay` (run by whatever serves the server: `serve_http`, `serve_stdio`) delivers what the
others publish here; a registry change stays on its worker. A task's new state
(`notifications/tasks`) goes to this worker's listeners of that task and through the broker to
the others'; the task runtime signals the worker running a task through it.

Rule 1: a `Server` holds only what is the same for every client: its options, the registries
        (tools, resources and templates, prompts), the dispatcher that answers requests and
        the hub of its live sessions. What belongs to one client lives in that client's
        `SessionRuntime` (`_runtime/session`), never here.
Rule 2: it starts no task of its own: `serve_connection` runs one connection's tasks and returns
        when they have ended; HTTP serving is composed in `_run`.

What the runtime modules of this package read of a server (`_runtime/session`'s `SessionOwner`
protocol, `_run`'s HTTP backend, the command line) has a leading underscore: it is the
package's, not the user's.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar, overload

import trio

from .._core.auth import AuthInfo, Principal, principal_from
from .._core.jsonrpc import Request
from .._core.request_state import StateSeal
from .._core.server_session import ServerSession
from .._core.types import Annotations, CacheHint, Icon, ToolAnnotations
from .._core.versions import SUPPORTED_VERSIONS
from .._dispatch import (
    LIST_METHODS,
    Dispatcher,
    MiddlewareLike,
    ResolvedRequest,
)
from .._exceptions import LifespanError, ToolDefinitionError
from .._features.context import Context
from .._features.directories import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_LISTED, make_directory
from .._features.prompts import (
    Prompt,
    PromptMeta,
    PromptRegistry,
    discover_prompts,
    make_prompt,
)
from .._features.reflect import check_scopes
from .._features.resources import (
    Resource,
    ResourceMeta,
    ResourceRegistry,
    ResourceTemplate,
    discover_resources,
    make_resource,
)
from .._features.tasks import TASKS_EXTENSION, TaskStore, TaskSupport
from .._features.tools import (
    RawHandler,
    Tool,
    ToolOptions,
    ToolRegistry,
    discover_tools,
    make_raw_tool,
    make_tool,
)
from .._version import __version__
from .broker import (
    LIST_CHANGED,
    RESOURCE_UPDATED,
    TASK_SIGNAL,
    TASK_STATUS,
    Broker,
    InProcessBroker,
)
from .connection import FINAL_ANSWER_SECONDS, Frames, serve_frames
from .guard import require_trio
from .hub import SessionHub
from .invoke import TrioInvoker
from .listening import Listening
from .options import SERVER_MOVED, Limits, Timeouts, moved_keywords
from .session import SessionInfo
from .tasks import TaskRuntime

if TYPE_CHECKING:
    from .._features.skills import SkillCatalog, SkillInfo

logger = logging.getLogger("trio_mcp")

__all__ = ["Lifespan", "Server", "SessionHook", "SessionInfo"]

F = TypeVar("F", bound=Callable[..., Any])
_MISSING: Final[Any] = object()
PrimitiveKind = Literal["tool", "resource", "prompt"]
#: `Server(lifespan=...)`: called with the server, the async context manager it enters.
Lifespan = Callable[["Server"], AbstractAsyncContextManager[Any]]


#: What `Server.on_session_start` and `on_session_end` register.
SessionHook = Callable[[SessionInfo], Awaitable[None]]
H = TypeVar("H", bound=SessionHook)


#: What `Server.on_roots_changed` registers.
RootsHandler = TypeVar("RootsHandler", bound=Callable[[Context], Awaitable[None]])

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class _Adds(Protocol[T_contra]):
    """A registry (or the resources' pair of them) as `_add_all` fills it."""

    def add(self, new: T_contra) -> None: ...


class Server:
    """An MCP server: registries of tools, resources and prompts, plus how to serve them.

    `Server("name")` is a complete server; the keywords people set often are plain
    (`Server("name", page_size=50, lifespan=db_pool)`), the bounds and the waits most leave
    alone come as records (`Server("name", limits=Limits(max_in_flight=64))`).

    Args:
        name: The server's name, sent as `serverInfo.name`.
        version: The server's version, sent as `serverInfo.version`.
        instructions: Text telling the model how to use this server.
        page_size: Tools per `tools/list` page; None lists all tools in one page.
        mask_error_details: Hide the type and message of unexpected tool exceptions from
            clients (they are still logged).
        versions: Protocol revisions accepted, newest first.
        list_cache: Caching hints (2026-07-28 `ttlMs`, `cacheScope`) of the list results, by
            method ("tools/list", "resources/list", "resources/templates/list",
            "prompts/list"); a list not named here is sent with a TTL of 0, public.
        request_state_key: The HMAC key sealing 2026-07-28 `requestState` (bytes, a hex
            string, or any string of 16+ bytes). Give every worker of a fleet the same key
            (or set `TRIO_MCP_REQUEST_STATE_KEY`) so any of them can continue a call another
            began; default: a random key of this process.
        task_store: Where the tasks of `task=` tools are kept (default: in memory, bounded);
            `RedisTaskStore` lets any worker of a fleet answer for a task another runs.
        broker: Carries resource updates, announced list changes and task states to the other
            workers of a fleet, and tells the worker running a task of answers and cancels
            sent to another (`RedisBroker`); one broker object per server. Default: an
            `InProcessBroker` of its own, which reaches nothing beyond this server.
        required_scopes: OAuth scopes every request needs, over HTTP with
            `HttpOptions(auth=...)` (403 insufficient_scope without them; 401 challenges name
            them); tools, resources and prompts may need more of their own (`scopes=`).
            Nothing is enforced over stdio or in memory, where there is no token.
        hide_unauthorized: List only the tools, resources, templates and prompts the
            request's token has the scopes for (True, the default), or list everything and
            refuse the calls (False). Over stdio or in memory everything is listed.
        middleware: Run around every request, outermost first (`Middleware`, or a plain
            `async def mw(request, call_next)`); `add_middleware` adds more.
        lifespan: `lifespan(server)`, an async context manager entered once before the server
            serves and exited once it stops (after the requests in flight ended, within
            `Timeouts.shutdown`): open a database pool there. What it yields is every
            `Context.lifespan` (`Context[AppState]` types it). If it raises, the server does
            not start.
        limits: How much one client may make the server hold (`Limits`: requests in flight,
            message size, subscriptions, URI length, `requestState` size).
        timeouts: How long the server waits (`Timeouts`: a client's answer, the calls still
            running at shutdown, a `requestState`'s validity).
        **moved: The keywords `limits` and `timeouts` replaced (`max_in_flight=`,
            `max_line_bytes=`, `max_subscriptions=`, `max_subscription_bytes=`,
            `max_uri_length=`, `request_state_max_bytes=`, `ask_timeout=`,
            `shutdown_grace=`, `request_state_ttl=`): still taken, with a
            `DeprecationWarning`.

    Attributes:
        name: The server's name.
        version: The server's version.
        instructions: The instructions sent to clients.
        versions: The protocol revisions accepted.
        limits: The `Limits` it was made with.
        timeouts: The `Timeouts` it was made with.
        broker: Where notifications for the other workers go, and come from.

    Raises:
        ValueError: for a `list_cache` naming something that is not a list method.
        TypeError: for a keyword that does not exist.
    """

    def __init__(
        self,
        name: str = "trio-mcp",
        version: str | None = None,
        *,
        instructions: str | None = None,
        page_size: int | None = None,
        mask_error_details: bool = False,
        versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        list_cache: Mapping[str, CacheHint] | None = None,
        request_state_key: bytes | str | None = None,
        task_store: TaskStore | None = None,
        broker: Broker | None = None,
        required_scopes: Iterable[str] = (),
        hide_unauthorized: bool = True,
        middleware: Sequence[MiddlewareLike] = (),
        lifespan: Lifespan | None = None,
        limits: Limits | None = None,
        timeouts: Timeouts | None = None,
        **moved: Any,
    ) -> None:
        records: dict[str, Any] = {"limits": limits or Limits(), "timeouts": timeouts or Timeouts()}
        records = moved_keywords("Server", moved, SERVER_MOVED, records, stacklevel=2)
        self.limits: Limits = records["limits"]
        self.timeouts: Timeouts = records["timeouts"]
        unknown = sorted(set(list_cache or ()) - set(LIST_METHODS))
        if unknown:
            raise ValueError(f"list_cache names {unknown}; the lists are {list(LIST_METHODS)}")
        self.name = name
        self.version = version or __version__
        self.instructions = instructions
        self.versions = versions
        self._registry = ToolRegistry()
        #: The handler `on_roots_changed` registered.
        self._roots_changed: Callable[[Context], Awaitable[None]] | None = None
        #: The resources and resource templates (the public view: `resources`).
        self._resource_registry = ResourceRegistry(self.limits.max_uri_length)
        #: The prompts (the public view: `prompts`).
        self._prompt_registry = PromptRegistry()
        #: The skills `add_skills` serves (None before the first: their module loads then).
        self._skills: SkillCatalog | None = None
        self._dispatcher = Dispatcher(
            self._registry,
            TrioInvoker(),
            page_size=page_size,
            mask_error_details=mask_error_details,
            resources=self._resource_registry,
            prompts=self._prompt_registry,
            state_seal=StateSeal(
                request_state_key,
                ttl=self.timeouts.request_state,
                max_bytes=self.limits.max_request_state_bytes,
            ),
            ask_timeout=self.timeouts.ask,
            hide_unauthorized=hide_unauthorized,
            middleware=middleware,
        )
        self._lifespan = lifespan
        # `running`: how many serve it now; the first enters the lifespan, the last leaves it.
        self._running = 0
        self._stopped = trio.Event()
        self._hooks: trio.Nursery | None = None
        self._hooks_running = 0
        self._hooks_done = trio.Event()
        self._session_hooks: dict[str, list[SessionHook]] = {"start": [], "end": []}
        given = required_scopes if isinstance(required_scopes, str) else tuple(required_scopes)
        check_scopes(given, "Server(required_scopes=...)")
        self._required_scopes = tuple(dict.fromkeys(given))
        self._dispatcher.cache_hints.update(list_cache or {})
        #: The sessions open now: where a broadcast to every client goes.
        self._hub = SessionHub(
            self._registry,
            {
                "tools": self._registry,
                "resources": self._resource_registry,
                "prompts": self._prompt_registry,
            },
        )
        #: Called with the URI of each resource update told here, this worker's or another's
        #: (`ResponseCache` forgets its reads of that URI).
        self._update_watchers: list[Callable[[str], None]] = []
        #: The `subscriptions/listen` streams open now.
        self._listening = Listening(self._hub)
        self._dispatcher.listen = self._listening.listen
        #: Runs the calls that become tasks, and keeps the tasks.
        self._task_runtime = TaskRuntime(task_store)
        self._dispatcher.tasks = self._task_runtime
        #: Where notifications for the other workers go, and come from (`_runtime/broker`).
        self.broker: Broker = broker if broker is not None else InProcessBroker()
        self._relaying = False
        self._task_runtime.on_status = self._task_status
        self._task_runtime.signal = self._task_signal

    # -- registration ---------------------------------------------------------------------------

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        task: bool | float | TaskSupport | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Tool:
        """Register one function as a tool; arguments override its `@tool` metadata.

        `task` says whether a call may become a task, `scopes` which OAuth scopes a token
        must grant to call it (see `@tool`).

        Returns:
            The registered tool.

        Raises:
            ToolDefinitionError: when the function cannot be a tool or the name is taken.
        """
        options = ToolOptions(name, description, title, annotations, inline, timeout, task, scopes)
        new = make_tool(fn, options)
        self._registry.add(new)
        return new

    @property
    def _required_scopes(self) -> tuple[str, ...]:
        """OAuth scopes every request needs over HTTP with token verification."""
        return self._dispatcher.base_scopes

    @_required_scopes.setter
    def _required_scopes(self, scopes: tuple[str, ...]) -> None:
        self._dispatcher.base_scopes = scopes

    def add_middleware(self, middleware: MiddlewareLike) -> None:
        """Add a middleware, innermost of those there (see `Middleware`).

        Raises:
            TypeError: for something that is neither a `Middleware` nor a callable.
        """
        self._dispatcher.add_middleware(middleware)

    def on_session_start(self, hook: H) -> H:
        """Register `async hook(session)`, run when a client's session starts.

        A session starts when its `initialize` is answered (over stdio, in memory, legacy SSE
        and Streamable HTTP with sessions) and ends with its connection or HTTP session; a
        2026-07-28 request has no session, and runs neither hook. `session` is a `SessionInfo`
        (its id, revision, client, token). The hook runs in a task of the server's, beside
        the session; what it raises is logged. Usable as a decorator.
        """
        self._session_hooks["start"].append(hook)
        return hook

    def on_session_end(self, hook: H) -> H:
        """Register `async hook(session)`, run once a started session ended (see above).

        Hooks of sessions that end as the server stops get `Timeouts.shutdown` to finish.
        """
        self._session_hooks["end"].append(hook)
        return hook

    def _session_started(self, info: SessionInfo) -> None:
        """Run the start hooks for a session that just started."""
        self._run_hooks("start", info)

    def _session_ended(self, info: SessionInfo) -> None:
        """Run the end hooks for a started session that just ended."""
        self._run_hooks("end", info)

    def _run_hooks(self, which: str, info: SessionInfo) -> None:
        hooks = self._session_hooks[which]
        if not hooks:
            return
        if self._hooks is None:
            logger.warning(
                "session %s hooks not run for session %s: the server is not running "
                "(serve it with serve_stdio, serve_http, run, or inside `async with "
                "server.running()`)",
                which,
                info.id,
            )
            return
        for hook in hooks:
            self._hooks_running += 1
            self._hooks.start_soon(self._run_hook, hook, info, which)

    async def _run_hook(self, hook: SessionHook, info: SessionInfo, which: str) -> None:
        try:
            await hook(info)
        except Exception:
            logger.exception("a session %s hook raised (session %s)", which, info.id)
        finally:
            self._hooks_running -= 1
            if not self._hooks_running:
                self._hooks_done.set()
                self._hooks_done = trio.Event()

    @property
    def _has_session_hooks(self) -> bool:
        """Whether any session hook is registered."""
        return bool(self._session_hooks["start"] or self._session_hooks["end"])

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Any]:
        """Enter the server's lifespan for as long as the block runs; yields its value.

        `serve_stdio`, `serve_http`, `run`, `serve_connection` and `trio_mcp.testing.connect`
        enter it themselves: call it to serve the server another way (an ASGI app under
        another server, connections of your own). Nested and concurrent uses share one
        lifespan: the first enters it, the last out leaves it, once the session end hooks
        ran; the hooks and the lifespan's exit get `Timeouts.shutdown` each, even when the block
        was cancelled.

        Raises:
            LifespanError: when the lifespan raised on entry (the server must not serve then).
        """
        if self._running:
            self._running += 1
            try:
                yield self._dispatcher.lifespan_value
            finally:
                self._left()
            return
        self._running = 1
        self._stopped = trio.Event()
        lifespan = self._lifespan(self) if self._lifespan is not None else None
        try:
            if lifespan is not None:
                try:
                    self._dispatcher.lifespan_value = await lifespan.__aenter__()
                except Exception as exc:
                    raise LifespanError(
                        f"the lifespan of server {self.name!r} failed to start: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(self._hook_runner)
                    try:
                        yield self._dispatcher.lifespan_value
                    finally:
                        self._left()
                        with trio.CancelScope(shield=True):
                            await self._stopped.wait()  # the last of those serving it
                            with trio.move_on_after(self.timeouts.shutdown):
                                while self._hooks_running:
                                    await self._hooks_done.wait()
                            assert self._hooks is not None
                            self._hooks.cancel_scope.cancel()
            finally:
                if lifespan is not None:
                    with trio.CancelScope(shield=True) as scope:
                        scope.deadline = trio.current_time() + self.timeouts.shutdown
                        await lifespan.__aexit__(None, None, None)
        finally:
            self._dispatcher.lifespan_value = None
            self._running = 0

    async def _hook_runner(self, *, task_status: trio.TaskStatus[None]) -> None:
        """Hold the nursery session hooks run in, shielded, until `running` ends it."""
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as hooks:
                self._hooks = hooks
                task_status.started()
                await trio.sleep_forever()  # until `running` cancels this nursery
        self._hooks = None

    def _left(self) -> None:
        self._running -= 1
        if self._running == 0:
            self._stopped.set()

    def on_roots_changed(self, handler: RootsHandler) -> RootsHandler:
        """Register `async handler(ctx)`, run when a client says its roots changed.

        The client sends `notifications/roots/list_changed`; the handler runs in a task of its
        own for that client's session, and may `await ctx.list_roots()` to read the new roots
        (over Streamable HTTP the request goes on the session's GET stream, or waits for it in
        the session's bounded queue; in stateless mode the handler is not run). Its exceptions
        are logged. Usable as a decorator; one handler per server (a new one replaces it).
        """
        self._roots_changed = handler
        return handler

    @overload
    def tool(self, name: F, /) -> F: ...
    @overload
    def tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        task: bool | float | TaskSupport | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Callable[[F], F]: ...
    def tool(
        self,
        name: Any = None,
        description: str | None = None,
        *,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        task: bool | float | TaskSupport | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Any:
        """Decorator registering a function as a tool on this server right away.

        Usable bare (`@server.tool`), empty (`@server.tool()`) or with arguments
        (`@server.tool("calculator.add", "Add two numbers", inline=True)`), like `@tool`; the
        function is returned unchanged.

        Args:
            name: The tool's name; defaults to the function's `@tool` name, then its own name.
            description: What the tool does; defaults to the `@tool` description, then the
                docstring.
            title: A human-readable display name.
            annotations: Behaviour hints (read-only, destructive, ...).
            inline: Run a sync function on the event loop instead of in a worker thread.
            timeout: Seconds after which a call is cancelled and reported as an error.
            task: Whether a call may become a task (see `@tool`).
            scopes: OAuth scopes a token must grant to call it (see `@tool`).

        Returns:
            The function (bare use), or a decorator that registers one and returns it.

        Raises:
            ToolDefinitionError: when the function cannot be a tool or the name is taken.
        """
        if callable(name) and not isinstance(name, str):
            # Bare `@server.tool`: the function came in the name's place. Without this it was
            # taken for a name, and the decorator returned in place of the function.
            return self.tool()(name)
        options = ToolOptions(name, description, title, annotations, inline, timeout, task, scopes)

        def register(fn: F) -> F:
            self._registry.add(make_tool(fn, options))
            return fn

        return register

    def add_tools(self, obj: Any) -> list[Tool]:
        """Register every `@tool`-tagged function of a module, class or instance.

        Returns:
            The registered tools, in definition order.

        Raises:
            ToolDefinitionError: when one cannot be registered (none of them is, then).
        """
        tools = [make_tool(fn) for fn in discover_tools(obj)]
        return _add_all(self._registry, ToolRegistry(), self._registry.registered(), tools)

    def add_raw_tool(
        self,
        name: str,
        input_schema: dict[str, Any],
        handler: RawHandler,
        *,
        description: str | None = None,
        title: str | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool = False,
        timeout: float | None = None,
        task: bool | float | TaskSupport | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Tool:
        """Register a tool from a hand-written JSON Schema and a handler `(arguments) -> result`.

        The handler may be sync or async. Arguments get light checks only (required names,
        closed objects, top-level JSON types): the handler owns deeper validation.

        Raises:
            ToolDefinitionError: for a bad name, a non-object schema or a taken name.
        """
        options = ToolOptions(None, description, title, annotations, inline, timeout, task, scopes)
        new = make_raw_tool(name, input_schema, handler, options, output_schema=output_schema)
        self._registry.add(new)
        return new

    @property
    def tools(self) -> list[Tool]:
        """The registered tools, in registration order."""
        return list(self._registry)

    # -- resources --------------------------------------------------------------------------------

    def add_resource(
        self,
        target: Any,
        value: Any = _MISSING,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        annotations: Annotations | Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        cache: CacheHint | None = None,
        completions: Mapping[str, Callable[..., Any]] | None = None,
        scopes: Iterable[str] | None = None,
        verbatim: Iterable[str] | None = None,
    ) -> Resource | ResourceTemplate:
        """Register a resource or a resource template.

        `add_resource(uri, value)`: `value` is a function (called at each read; a template when
        `uri` has variables), a `pathlib.Path` (the file, read at each read, its MIME type
        guessed from its name) or any other value (static contents: `str` is text, `bytes` a
        blob, anything else JSON). `add_resource(fn)`: a function tagged `@resource(uri)`.
        Keyword arguments override what `@resource` says (see `@resource` for each).

        Returns:
            The registered resource or template.

        Raises:
            ToolDefinitionError: when it cannot be a resource, or its URI is taken.
        """
        options = ResourceMeta(
            None, name, title, description, mime_type, size, icons, annotations, meta, inline,
            timeout, cache, completions, scopes, verbatim,
        )  # fmt: skip
        if value is _MISSING:
            if isinstance(target, str):
                raise ToolDefinitionError(
                    f"add_resource({target!r}) needs the value: add_resource(uri, value)"
                )
            new = make_resource(target, options)
        else:
            if not isinstance(target, str):
                raise ToolDefinitionError(
                    f"add_resource(uri, value) takes the URI first, not {target!r}"
                )
            new = make_resource(value, ResourceMeta(uri=target).over(options))
        self._resource_registry.add(new)
        return new

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        annotations: Annotations | Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        cache: CacheHint | None = None,
        completions: Mapping[str, Callable[..., Any]] | None = None,
        scopes: Iterable[str] | None = None,
        verbatim: Iterable[str] | None = None,
    ) -> Callable[[F], F]:
        """Decorator registering a function as a resource (or template) on this server now.

        Takes the arguments of `@resource`.

        Raises:
            ToolDefinitionError: when the function cannot be a resource or the URI is taken.
        """

        def register(fn: F) -> F:
            self.add_resource(
                uri, fn, name=name, title=title, description=description,
                mime_type=mime_type, size=size, icons=icons, annotations=annotations,
                meta=meta, inline=inline, timeout=timeout, cache=cache,
                completions=completions, scopes=scopes, verbatim=verbatim,
            )  # fmt: skip
            return fn

        return register

    def add_directory(
        self,
        uri: str,
        root: str | os.PathLike[str],
        *,
        glob: str | Sequence[str] | None = None,
        hidden: bool = False,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_listed: int = DEFAULT_MAX_LISTED,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        annotations: Annotations | Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        cache: CacheHint | None = None,
        scopes: Iterable[str] | None = None,
    ) -> ResourceTemplate:
        """Serve the files under a folder as resources, each read confined to the folder.

        `server.add_directory("file:///docs/", "docs")` serves `docs/guide/intro.md` as
        `file:///docs/guide/intro.md`: one resource template (`file:///docs/{+path}`) reads
        any file under the folder, and `resources/list` lists them. Every read is resolved
        (symlinks and ".." included) and refused as not found when it lands outside the
        folder, on a hidden name, on something not a regular file or not matched by `glob`.
        MIME types are guessed from the names; a file is text when its type is textual (or
        unknown and its bytes are UTF-8), else a blob.

        Args:
            uri: A URI prefix (`{+path}` is added to it), or a template with one path variable:
                `{+path}` or `{/path*}` (any depth), `{name}` (top-level files only).
            root: The folder.
            glob: Globs of the files served, relative to the folder (`"*.md"`,
                `"docs/**/*.txt"`: `**` spans folders); default: every file.
            hidden: Serve names starting with "." (`.git`, `.env`) too; default: never.
            max_bytes: Larger files are refused (-32603) and not listed; default 10 MiB.
            max_listed: The most files `resources/list` names; default 10,000.
            name: The template's name (default: the folder's name).
            title: A human-readable display name.
            description: What the folder holds.
            icons: Icons for user interfaces.
            annotations: Audience, priority and last-modified hints.
            meta: `_meta` of its listing entry.
            timeout: Seconds after which a read is cancelled and answered with an error.
            cache: Caching hints of its reads (2026-07-28 `ttlMs`, `cacheScope`).
            scopes: OAuth scopes a caller's token must grant to read its files (see
                `add_resource`).

        Returns:
            The registered template.

        Raises:
            ToolDefinitionError: for a root that is not a folder, a URI that cannot name its
                files, or a template already registered.
        """
        options = ResourceMeta(
            None, name, title, description, None, None, icons, annotations, meta, None,
            timeout, cache, None, scopes,
        )  # fmt: skip
        new = make_directory(
            uri, root, glob=glob, hidden=hidden, max_bytes=max_bytes, max_listed=max_listed,
            options=options,
        )  # fmt: skip
        self._resource_registry.add(new)
        return new

    def add_skills(
        self,
        folder: str | os.PathLike[str],
        *,
        prefix: str = "",
        hidden: bool = False,
        cache: CacheHint | None = None,
        scopes: Iterable[str] | None = None,
    ) -> list[SkillInfo]:
        """Serve Agent Skills: a skill's folder, or a folder of skill folders (SEP-2640).

        A skill is a folder with a `SKILL.md` (YAML front matter with at least `name`, which
        is the folder's name, and `description`; then the instructions) and any files it
        refers to. `server.add_skills("skills")` serves each subfolder of `skills` that has a
        `SKILL.md` (or `skills` itself, if it has one): every file as a resource
        `skill://<name>/<path>` (SKILL.md listed by `resources/list` with the skill's name and
        description, as `text/markdown`), and the `io.modelcontextprotocol/skills` extension
        for clients that know it: `skills/list` and `skills/get` send each skill's front matter
        and every file's SHA-256 digest and size, `resources/directory/read` lists a skill's
        folders. The files are read now, once, and served from memory: the digests always
        describe what a read returns.

        Args:
            folder: A skill's folder, or a folder of them.
            prefix: Path segments before each skill's name in its URIs ("acme/billing" serves
                `skill://acme/billing/refunds/SKILL.md`).
            hidden: Serve names starting with "." too; default: never.
            cache: Caching hints of the files' reads (2026-07-28 `ttlMs`, `cacheScope`).
            scopes: OAuth scopes a caller's token must grant to see the skills and read their
                files (see `add_resource`).

        Returns:
            The entries of the skills now served, as a client receives them.

        Raises:
            ToolDefinitionError: for a folder that holds no skill; a skill whose front matter
                is missing, unreadable or breaks the Agent Skills rules (name, description,
                reserved `metadata` keys), that holds more than 512 files or 16 MiB (the
                extension's limits), or that reaches outside its folder (a symlink leading
                out, a symlinked folder); a URI already served. Nothing is served then.
        """
        # Loaded by the first call: a server without skills never imports them.
        from .._dispatch.skills import skill_routes  # noqa: PLC0415
        from .._features.skills import (  # noqa: PLC0415
            SKILL_FILE,
            SkillCatalog,
            read_skills,
            skill_info,
        )

        if scopes is not None:
            check_scopes(scopes, "add_skills(scopes=...)")
        skills = read_skills(folder, prefix=prefix, hidden=hidden, scopes=scopes or ())
        catalog = self._skills if self._skills is not None else SkillCatalog()
        catalog.check(skills)
        made = [
            make_resource(
                file.value,
                ResourceMeta(
                    uri=file.uri,
                    name=skill.name if file.path == SKILL_FILE else file.path,
                    description=skill.description if file.path == SKILL_FILE else None,
                    mime_type=file.mime_type,
                    size=len(file.data),
                    cache=cache,
                    scopes=scopes,
                ),
            )
            for skill in skills
            for file in skill.files
        ]
        trial = ResourceRegistry()  # a URI taken fails before this server's registry changed
        for existing in (*self._resource_registry.static, *self._resource_registry.templates):
            trial.add(existing)
        for new in made:
            trial.add(new)
        for new in made:
            self._resource_registry.add(new)
        catalog.add(skills)
        if self._skills is None:
            self._skills = catalog
            self._dispatcher.routes.update(skill_routes(self._dispatcher, catalog))
        return [skill_info(skill.entry()) for skill in skills]

    def add_resources(self, obj: Any) -> list[Resource | ResourceTemplate]:
        """Register every `@resource`-tagged function of a module, class or instance.

        Returns:
            The registered resources and templates, in definition order.

        Raises:
            ToolDefinitionError: when one cannot be registered (none of them is, then).
        """
        made = [make_resource(fn) for fn in discover_resources(obj)]
        registry = self._resource_registry
        return _add_all(
            registry,
            ResourceRegistry(),
            (*registry.static.registered(), *registry.templates.registered()),
            made,
        )

    @property
    def resources(self) -> list[Resource]:
        """The registered resources (not templates), in registration order."""
        return list(self._resource_registry.static)

    @property
    def resource_templates(self) -> list[ResourceTemplate]:
        """The registered resource templates, in registration order."""
        return list(self._resource_registry.templates)

    async def resource_updated(self, uri: str) -> int:
        """Tell the clients subscribed to `uri` that it changed (`notifications/resources/updated`).

        Call it from a tool, a background task or wherever the change is made; clients that
        did not subscribe to `uri` hear nothing. A handshake-era client subscribes with
        `resources/subscribe`, a 2026-07-28 one with the `resourceSubscriptions` of a
        `subscriptions/listen` stream. The broker carries it to the clients of the fleet's
        other workers; a broker that cannot be reached logs a warning and fails nothing.

        Returns:
            How many sessions and listen streams of this worker were told.
        """
        told = await self._resource_updated_here(uri)
        await self.broker.publish(RESOURCE_UPDATED, {"uri": uri})
        return told

    async def _resource_updated_here(self, uri: str) -> int:
        for watcher in self._update_watchers:
            watcher(uri)
        return await self._hub.resource_updated(uri) + self._listening.resource_updated(uri)

    async def _task_status(self, task: dict[str, Any], principal: Principal | None) -> None:
        # A task's new state (`_runtime/tasks` Rule 4): here at once, the other workers' through
        # the broker, with whose task it is beside it (never inside it: the task goes out as it
        # is).
        await self._task_status_here(task, principal)
        await self.broker.publish(
            TASK_STATUS, {"task": task, "principal": None if principal is None else list(principal)}
        )

    async def _task_status_here(self, task: dict[str, Any], principal: Principal | None) -> int:
        return await self._hub.task_status(task) + self._listening.task_status(task, principal)

    async def _task_signal(self, signal: dict[str, Any]) -> None:
        await self.broker.publish(TASK_SIGNAL, signal)

    # -- prompts ----------------------------------------------------------------------------------

    def add_prompt(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        completions: Mapping[str, Callable[..., Any]] | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Prompt:
        """Register one function as a prompt; arguments override its `@prompt` metadata.

        Returns:
            The registered prompt.

        Raises:
            ToolDefinitionError: when the function cannot be a prompt or the name is taken.
        """
        options = PromptMeta(
            name, description, title, icons, meta, inline, timeout, completions, scopes
        )  # fmt: skip
        new = make_prompt(fn, options)
        self._prompt_registry.add(new)
        return new

    @overload
    def prompt(self, name: F, /) -> F: ...
    @overload
    def prompt(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        title: str | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        completions: Mapping[str, Callable[..., Any]] | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Callable[[F], F]: ...
    def prompt(
        self,
        name: Any = None,
        description: str | None = None,
        *,
        title: str | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
        completions: Mapping[str, Callable[..., Any]] | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Any:
        """Decorator registering a function as a prompt on this server right away.

        Usable bare (`@server.prompt`), empty (`@server.prompt()`) or with arguments, like
        `@server.tool`; the function is returned unchanged.

        Raises:
            ToolDefinitionError: when the function cannot be a prompt or the name is taken.
        """
        if callable(name) and not isinstance(name, str):  # bare: the function came as the name
            return self.prompt()(name)

        def register(fn: F) -> F:
            self.add_prompt(
                fn, name=name, description=description, title=title, icons=icons, meta=meta,
                inline=inline, timeout=timeout, completions=completions, scopes=scopes,
            )  # fmt: skip
            return fn

        return register

    def add_prompts(self, obj: Any) -> list[Prompt]:
        """Register every `@prompt`-tagged function of a module, class or instance.

        Returns:
            The registered prompts, in definition order.

        Raises:
            ToolDefinitionError: when one cannot be registered (none of them is, then).
        """
        made = [make_prompt(fn) for fn in discover_prompts(obj)]
        return _add_all(
            self._prompt_registry, PromptRegistry(), self._prompt_registry.registered(), made
        )

    @property
    def prompts(self) -> list[Prompt]:
        """The registered prompts, in registration order."""
        return list(self._prompt_registry)

    # -- living lists -----------------------------------------------------------------------------

    def remove_tool(self, name: str) -> Tool:
        """Unregister a tool; live sessions are told the list changed.

        Raises:
            KeyError: when no tool has that name.
        """
        return self._registry.remove(name)

    def remove_resource(self, uri: str) -> Resource | ResourceTemplate:
        """Unregister a resource (by URI) or a template (by its URI template, as written).

        Raises:
            KeyError: when neither is registered.
        """
        removed: Resource | ResourceTemplate = self._resource_registry.registry_of(uri).remove(uri)
        return removed

    def remove_prompt(self, name: str) -> Prompt:
        """Unregister a prompt; live sessions are told the list changed.

        Raises:
            KeyError: when no prompt has that name.
        """
        return self._prompt_registry.remove(name)

    def set_enabled(self, kind: PrimitiveKind, key: str, enabled: bool) -> bool:
        """Enable or disable a registered tool, resource (or template) or prompt.

        A disabled one is neither listed nor callable (it is unknown to clients) until it is
        enabled again; live sessions are told the list changed.

        Args:
            kind: "tool", "resource" (a URI or a URI template) or "prompt".
            key: Its name, URI or URI template.
            enabled: Whether it is to be served.

        Returns:
            Whether anything changed.

        Raises:
            KeyError: when nothing of that kind is registered under `key`.
        """
        if kind == "tool":
            return self._registry.set_enabled(key, enabled)
        if kind == "prompt":
            return self._prompt_registry.set_enabled(key, enabled)
        return self._resource_registry.registry_of(key).set_enabled(key, enabled)

    async def announce_list_changed(self, kind: Literal["tools", "resources", "prompts"]) -> None:
        """Tell every client of every worker that the list `kind` changed (`list_changed`).

        A registry change (add, remove, enable, disable) is announced without this, to the
        clients of the worker where it was made: the other workers' registries did not change.
        Call this where the list changed on every worker (each applied the same change, or
        what it lists depends on state they share): the sessions and listen streams of this
        worker are told at once, the others' through the broker.

        Args:
            kind: "tools", "resources" (the resources and templates) or "prompts".

        Raises:
            ValueError: for another kind.
        """
        if kind not in self._hub.kinds:
            raise ValueError(f"kind must be one of {list(self._hub.kinds)}, not {kind!r}")
        self._hub.announce(kind)
        await self.broker.publish(LIST_CHANGED, {"kind": kind})

    async def relay(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Deliver what the fleet's other workers publish to this server's clients, until cancelled.

        `serve_http` and `serve_stdio` run it; run it beside `serve_connection` or `http_app`
        when serving them yourself. While one runs, another only waits: a message is
        delivered once however many run.

        Args:
            task_status: Reports when the broker takes messages.
        """
        if self._relaying:
            task_status.started()
            await trio.sleep_forever()
        self._relaying = True
        try:
            await self.broker.serve(self._delivered, task_status=task_status)
        finally:
            self._relaying = False

    async def wind_down(self) -> None:
        """Tell every follower how its tasks end, and end the listen streams: the server stops.

        Each task still running in this process is settled `failed` with the status message
        "Server shutting down" (in its store too, shared or not) and its final state told to
        the sessions and `subscriptions/listen` streams that follow it; then every listen
        stream ends once what it has queued has gone out, answered with its plain result.
        Takes at most two seconds: a client that does not read cannot hold it.

        `run`, `serve_http` and `trio-mcp run` call it on SIGINT and SIGTERM, before they end
        their connections; call it yourself before you stop connections you serve with
        `serve_connection` or `http_app`. (A connection that ends by itself settles and tells
        the tasks it hosts without it.)
        """
        deadline = trio.current_time() + FINAL_ANSWER_SECONDS
        with trio.move_on_at(deadline):
            await self._task_runtime.stop_all()
        self._listening.close()
        with trio.move_on_at(deadline):
            await self._listening.wait_closed()

    async def _delivered(self, topic: str, payload: dict[str, Any]) -> None:
        # What another worker published: told here, never again published (`_runtime/broker`
        # Rule 1).
        if topic == RESOURCE_UPDATED:
            uri = payload.get("uri")
            if isinstance(uri, str):
                await self._resource_updated_here(uri)
                return
        elif topic == LIST_CHANGED:
            kind = payload.get("kind")
            if kind in self._hub.kinds:
                self._hub.announce(kind)
                return
        elif topic == TASK_STATUS:
            task = payload.get("task")
            try:
                principal = principal_from(payload.get("principal"))
            except ValueError:
                task = None  # a message this worker cannot read
            if isinstance(task, dict) and isinstance(task.get("taskId"), str):
                await self._task_status_here(task, principal)
                return
        elif topic == TASK_SIGNAL:
            await self._task_runtime.signalled(payload)
            return
        # A newer worker's message, in a rolling upgrade: nothing this one can act on.
        logger.debug("broker: ignoring %r %r from another worker", topic, payload)

    def capabilities(self, *, notifications: bool = True) -> dict[str, Any]:
        """The capabilities a new session announces: what is registered now.

        Args:
            notifications: Whether list changes and resource updates reach the client
                (`listChanged`, `subscribe`). They do in both eras: in the handshake era on the
                session, in 2026-07-28 on a `subscriptions/listen` stream.
        """
        capabilities: dict[str, Any] = {}
        if len(self._registry):
            capabilities["tools"] = {"listChanged": True} if notifications else {}
        if len(self._resource_registry):
            capabilities["resources"] = (
                {"subscribe": True, "listChanged": True} if notifications else {}
            )
        if len(self._prompt_registry):
            capabilities["prompts"] = {"listChanged": True} if notifications else {}
        if len(self._prompt_registry) or len(self._resource_registry.templates):
            capabilities["completions"] = {}
        capabilities["logging"] = {}
        if any(tool.task is not None for tool in self._registry):
            capabilities["extensions"] = {TASKS_EXTENSION: {}}
        if self._skills:  # the skills extension (SEP-2640), with its directory reads
            from .._features.skills import SKILLS_EXTENSION  # noqa: PLC0415 - loaded by now

            capabilities.setdefault("extensions", {})[SKILLS_EXTENSION] = {"directoryRead": True}
        return capabilities

    def _new_session(self) -> ServerSession:
        """A fresh protocol session for one client connection."""
        return ServerSession(
            server_info={"name": self.name, "version": self.version},
            capabilities=self.capabilities(),
            instructions=self.instructions,
            versions=self.versions,
            # 2026-07-28 hears of changes on subscriptions/listen streams: the same announcement.
            discover_capabilities=self.capabilities(),
            max_subscriptions=self.limits.max_subscriptions,
            max_subscription_bytes=self.limits.max_subscription_bytes,
        )

    async def _resolve(
        self, request: Request, auth: AuthInfo | None = None, peer: str | None = None
    ) -> ResolvedRequest:
        """The record of `request` (`_dispatch.resolve`), with the scopes of a task's tool.

        `peer` is the client's address, when the transport knows it (`ResolvedRequest.peer`).

        A `tasks/*` request needs the scopes of the tool its task runs: a token that could not
        call the tool cannot read, answer or cancel its task (none for an unknown task). The
        task's record may live in a remote store, hence the wait.
        """
        call = self._dispatcher.resolve(request, auth)
        if not call.matched:  # a long URI, matched off the event loop
            call = await trio.to_thread.run_sync(self._dispatcher.targets.matched, call)
        if peer is not None:
            call = call._replace(peer=peer)
        if call.kind == "task" and call.name is not None:
            runtime = self._task_runtime
            record = await runtime.store.get(call.name, runtime.clock())
            if record is not None:
                own = frozenset(record.scopes)
                call = call.replace(scopes=self._dispatcher.targets.scopes(own))
        return call

    # -- serving --------------------------------------------------------------------------------

    async def serve_connection(
        self,
        receive: Frames,
        send: trio.abc.SendChannel[bytes],
        *,
        auth: AuthInfo | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one client over a pair of frame channels until `receive` ends.

        Args:
            receive: Frames from the client (one JSON text each), or batches of them (a
                `LineTooLong` in a batch stands for a frame that was too long and is answered
                with -32600 in its place); the channel's end ends the session.
            send: Where response and notification frames go.
            auth: The verified token of the client, when the transport authenticated the
                connection: its requests see it (`Context.auth`, the lists it may see, the
                tasks it owns). None over stdio and in memory.
            task_status: Reports when the server is ready to read.

        Raises:
            TrioRequiredError: when called where no trio run is active (e.g. under asyncio).
        """
        require_trio("Server.serve_connection")
        # The connection's calls that become tasks run here, and end with the connection.
        async with self.running(), trio.open_nursery() as tasks:
            with self._task_runtime.lend(tasks):
                await serve_frames(
                    self,
                    receive,
                    send,
                    auth=auth,
                    stop_tasks=functools.partial(self._stop_hosted_tasks, tasks),
                    task_status=task_status,
                )
            tasks.cancel_scope.cancel()

    async def _stop_hosted_tasks(self, nursery: trio.Nursery) -> None:
        # A connection's end: the tasks it hosts are settled, and their ends told on the
        # session and on every listen stream that follows them before the streams end.
        if await self._task_runtime.stop_all(nursery):
            await self._listening.sent_all()


def _add_all(registry: _Adds[T], trial: _Adds[T], existing: Iterable[T], made: list[T]) -> list[T]:
    """Register all of `made` in `registry`, or none of them; returns `made`.

    They go into the empty `trial` first, after what `registry` holds (`existing`, disabled
    items too): a clash (among them, or with one registered) then raises before `registry` has
    changed at all.
    """
    for item in (*existing, *made):
        trial.add(item)
    for new in made:
        registry.add(new)
    return made
