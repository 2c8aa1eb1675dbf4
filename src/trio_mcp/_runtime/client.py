"""`Client`: the trio runtime of one connection to an MCP server, whatever carries it.

Rule 1: the client never sees bytes of a transport, sockets or subprocesses. It talks to a
        `Link` (`_runtime/link`), which sends one message and delivers incoming frames on a channel;
        links live in `transports/` and the composition root (`_connect`) picks one.
Rule 2: responses are matched to requests by id. The client's `Peer` gives each request its id
        and matches answers to it; the caller's waiter is in `_pending` from the moment it is
        sent until the caller returns, however it returns (answer, error, cancellation), so many
        calls share one connection and a finished call frees its id. Nothing the server sends
        that is not a request is answered (`jsonrpc` Rule 4): a malformed answer is logged and
        dropped, and the call whose id it carries fails at once with `RemoteProtocolError`.
Rule 3: timeouts belong to the caller (`with trio.fail_after(...)` around a call). A call that
        is cancelled after it was sent tells the server with `notifications/cancelled`, under a
        short shielded scope, and its late response (if any) is dropped.
Rule 4: when the incoming frames end, every waiting call fails with `ConnectionClosed`, whose
        message is the link's account of why (exit code, last stderr lines, network error).
Rule 5: a request is sent once. It is sent again only when it cannot have run: the link says so
        (connection refused), the HTTP server refused the session (404, after which the client
        initializes a new session) or, under 2026-07-28, a tools/call's headers (HeaderMismatch,
        after which the client lists the tools again, once), or the caller marked it
        `retry_safe`.
Rule 6: the tasks are the reader and one per server request being handled, all in the nursery of
        `open_session` and ended with its `async with`; a single error raised in the block comes
        out as itself, not as an ExceptionGroup.
Rule 7: under 2026-07-28, `list_tools` hands the link each tool's `x-mcp-header` parameters
        (`_param_headers`). A link that mirrors them into headers (Streamable HTTP) makes a tool
        with an invalid annotation unusable: such a tool is left out of the list, with a
        warning naming it and the reason. Over other links the annotations mean nothing.
Rule 8: a request from the server never runs on the reader (a slow handler would hold every
        other answer, and a handler that calls the server would wait for itself): `ping` and
        methods without a handler are answered at once, the rest run in tasks of their own,
        tracked in the client's `Peer`. A `notifications/cancelled` for one cancels its task,
        and a cancelled request gets no answer (spec 2025-11-25, cancellation); a handler that
        raises is answered with -32603 (`RequestError` gives its own code).
Rule 9: what a server asks (elicitation, sampling, roots) is answered by the user's handlers
        through `Answers` (`_runtime/answering`), whichever way it comes: as a request on the
        connection (Rule 8; a question that cannot be answered gets its JSON-RPC error), or,
        under 2026-07-28, as the `inputRequests` of an `input_required` result of
        `tools/call`, `prompts/get` or `resources/read`. Then every input request is answered
        at once, concurrently, in the caller's task, and the request is sent again with a new
        id, the answers and the `requestState` as received (`_core/answering`), for at most
        `Asking.max_input_rounds` rounds. There a question that cannot be answered is the server's
        protocol error, and a handler's exception ends the call: the server is not waiting
        for an answer that could carry it.
Rule 10: under 2026-07-28 the callbacks of `on_list_changed` and `subscribe` are served by a
        `subscriptions/listen` stream (`_runtime/subscribing`) that asks for what they want and
        the server announces, over any link: opened when they first want something, opened
        anew when what they want changes, reopened when it breaks. Its notifications reach
        the callbacks like the handshake era's, once the stream is acknowledged; those of a
        stream being replaced do not. `subscribe` waits for the acknowledgement.
Rule 11: a client opened with `tasks=True` declares the tasks extension (SEP-2663), and a
        `tools/call` the server answers with a task is followed to its end by `_runtime/
        task_client` (polls, answers to its questions, `tasks/cancel` when the caller stops
        waiting); `call_tool` returns the final result as if the call had been plain.
        `call_tool_as_task`, `wait_task`, `get_task`, `update_task` and `cancel_task` expose
        the task itself. While a task is followed, the states the server pushes
        (`notifications/tasks`) take the place of polls: in the handshake era the server sends
        them on the session unasked, under 2026-07-28 the listen stream (Rule 10) asks for the
        ids of the tasks followed, if the server announces the extension.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import trio

from .._core.answering import InputRound, input_round, retry_params
from .._core.client_records import (
    Completion,
    LogMessage,
    Progress,
    PromptInfo,
    PromptResult,
    ResourceInfo,
    ResourceResult,
    ResourceTemplateInfo,
    TaskInfo,
    ToolInfo,
    ToolResult,
    completion,
    list_page,
    prompt_info,
    prompt_result,
    resource_info,
    resource_result,
    resource_template_info,
    task_info,
    tool_info,
    tool_result,
)
from .._core.client_session import ClientSession, Next
from .._core.framing import LineTooLong
from .._core.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    Response,
    dumps,
    error_response,
    parse,
    result_response,
)
from .._core.param_headers import InvalidHeaderAnnotation, header_params
from .._core.peer import CANCELLED, Peer
from .._core.subscriptions import (
    ACKNOWLEDGED,
    LISTEN,
    RESOURCE_UPDATED,
    TASK_STATUS,
    SubscriptionFilter,
)
from .._core.versions import (
    HEADER_MISMATCH,
)
from .._exceptions import (
    ConnectionClosed,
    LocalProtocolError,
    RemoteProtocolError,
    RequestError,
    SessionExpiredError,
    ToolCallError,
    TrioMCPError,
    reraise_lone,
)
from .._version import __version__
from . import task_client
from .answering import Answers, Roots, Unanswerable
from .link import Link
from .options import LogHandler, RequestMetaHook, SessionOptions
from .subscribing import Subscriptions, subscription_of
from .task_client import TASKS_EXTENSION, TaskStatusHandler

__all__ = [
    "Client",
    "ListChangedHandler",
    "ListKind",
    "LogHandler",
    "ProgressHandler",
    "RequestMetaHook",
    "ServerRequestHandler",
    "UpdateHandler",
    "open_session",
]

logger = logging.getLogger("trio_mcp.client")
#: Where a server's log notifications go when no `log_handler` is given.
server_logger = logging.getLogger("trio_mcp.client.server")

# Seconds a cancelled call may spend telling the server (shielded from the cancellation that
# caused it): long enough for a loopback or LAN round trip, short enough that a stalled peer
# cannot hold a caller that asked to stop. The official SDKs send the notice without waiting.
CANCEL_NOTICE_SECONDS: Final = 2.0
# Seconds a failed send waits for the reader to learn why the connection ended (a subprocess's
# exit code and stderr), so that the caller gets that account rather than "broken pipe".
CLOSE_REASON_SECONDS: Final = 5.0
# Pages `list_tools` follows before deciding the server's cursors go round in circles.
MAX_PAGES: Final = 10_000


_LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


ProgressHandler = Callable[[Progress], Awaitable[None] | None]
#: Called with the URI of a subscribed resource that changed (`Client.subscribe`).
UpdateHandler = Callable[[str], Awaitable[None] | None]
#: The lists whose changes a server announces.
ListKind = Literal["tools", "resources", "prompts"]
LIST_KINDS: Final = ("tools", "resources", "prompts")
#: Called with the kind of list that changed (`Client.on_list_changed`).
ListChangedHandler = Callable[[str], Awaitable[None] | None]
#: Answers one kind of server request: `await handler(params)` returns the `result`, or raises
#: `RequestError` to answer with that error.
ServerRequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]


class _Pending:
    __slots__ = ("answer", "done", "malformed", "progress")

    def __init__(self, progress: ProgressHandler | None) -> None:
        self.done = trio.Event()
        self.answer: Response | ErrorResponse | None = None
        self.malformed: str | None = None  # why the answer that came was no valid response
        self.progress = progress


def _wire_string(value: Any) -> str:
    # Prompt arguments are strings on the wire; booleans and None as JSON writes them.
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return dumps(value).decode()
    return str(value)


async def _call_handler(handler: Callable[[Any], Awaitable[None] | None], arg: Any) -> None:
    # A handler's bug must not stop the reader (every other call would hang): log it instead.
    try:
        value = handler(arg)
        if inspect.isawaitable(value):
            await value
    except Exception:
        logger.exception("a progress, log, update or list-change handler failed")


class Client:
    """A connection to one MCP server; create it with `trio_mcp.open_client`.

    Every method may be called from many tasks at once: calls share the connection and are
    matched to their answers by id. Wrap a call in `trio.fail_after(...)` to bound it.

    Attributes:
        protocol_version: The revision in use.
        server_info: The server's `{"name": ..., "version": ...}`.
        server_capabilities: What the server said it can do.
        instructions: The server's advice on how to use it, when given.
    """

    def __init__(self, link: Link, options: SessionOptions | None = None) -> None:
        # ClientSession refuses a revision this package does not speak (ValueError), Answers
        # unknown elicitation modes and roots that are not file:// URIs.
        options = options or SessionOptions()
        asking = options.asking
        self._link = link
        self._answers = Answers(
            elicitation=asking.elicitation,
            sampling=asking.sampling,
            roots=asking.roots,
            elicitation_modes=asking.elicitation_modes,
            on_elicitation_complete=asking.on_elicitation_complete,
        )
        self._max_input_rounds = asking.max_input_rounds
        self._session = ClientSession(
            options.protocol_version,
            dict(options.client_info or {"name": "trio-mcp", "version": __version__}),
            answerable=self._answers.answerable,
            extensions={TASKS_EXTENSION: {}} if options.tasks else None,
        )
        self._tasks = options.tasks
        self._request_meta = options.request_meta
        self._log_handler = options.log_handler
        self._validate_output = options.validate_output
        self._pending: dict[RequestId, _Pending] = {}
        # Requests in flight both ways: ours (ids, answers, cancellation notices) and the
        # server's, whose handler tasks' scopes are kept beside.
        self._peer = Peer()
        self._handler_scopes: dict[RequestId, trio.CancelScope] = {}
        #: Method -> handler of the server's requests (Rule 8): those the user's handlers answer
        #: (Rule 9); tests may add others.
        self._handlers: dict[str, ServerRequestHandler] = {
            method: functools.partial(self._answer_request, method)
            for method in self._answers.methods
        }
        self._nursery: trio.Nursery | None = None  # set by `open_session`: handlers run there
        self._closed: str | None = None
        self._closed_event = trio.Event()
        self._reinit_lock = trio.Lock()
        self._tools: dict[str, ToolInfo] = {}
        self._validators: dict[str, Any] = {}
        self._updates: dict[str, UpdateHandler] = {}
        self._list_handlers: dict[str, ListChangedHandler] = {}
        # Rule 10: the subscriptions/listen stream, once a callback under 2026-07-28 wants it.
        self._subscriptions: Subscriptions | None = None
        # Rule 11: the tasks followed now, each with the last state pushed and not yet taken.
        self._followed: dict[str, _Followed] = {}

    # -- public API ---------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered (ids in use)."""
        return len(self._pending)

    @property
    def closed(self) -> bool:
        """Whether the connection has ended."""
        return self._closed is not None

    @property
    def session_id(self) -> str | None:
        """The HTTP session id, or None for transports without sessions."""
        return self._link.session_id

    @property
    def protocol_version(self) -> str:
        """The revision in use (the one asked for, until the start has settled it)."""
        return self._session.protocol_version

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's `{"name": ..., "version": ...}`."""
        return self._session.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """What the server said it can do."""
        return self._session.server_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's advice on how to use it, when given."""
        return self._session.instructions

    @property
    def _modern(self) -> bool:
        return self._session.per_request

    async def ping(self) -> None:
        """Check that the server answers.

        Sends `ping`; under 2026-07-28, which has no ping, `server/discover`.

        Raises:
            ConnectionClosed: when the connection has ended.
            RequestError: when the server answers with an error.
        """
        await self.request("server/discover" if self._modern else "ping", retry_safe=True)

    async def list_tools(self) -> list[ToolInfo]:
        """Every tool the server offers, following `nextCursor` through all pages.

        The tools are remembered, so that `call_tool` can check results against their output
        schemas. Under 2026-07-28 over Streamable HTTP, a tool whose `x-mcp-header`
        annotations break the specification's rules is left out, with a warning that names it
        and the reason; the others' annotated arguments go into headers from now on.

        Raises:
            ConnectionClosed: when the connection has ended.
            RequestError: when the server answers with an error.
            RemoteProtocolError: when the answer is malformed or its cursors loop.
        """
        tools = [tool_info(tool) for tool in await self._list_all("tools/list", "tools")]
        if self._modern:
            tools = self._mirror_params(tools)
        self._tools = {tool.name: tool for tool in tools}
        self._validators.clear()
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressHandler | None = None,
        raise_on_error: bool = False,
        retry_safe: bool = False,
        on_task_status: TaskStatusHandler | None = None,
    ) -> ToolResult:
        """Call a tool and return its result.

        When the tool was listed by `list_tools` with an output schema, its `structuredContent`
        is checked against that schema (if the `jsonschema` package is installed; without it,
        no check is made). Pass `validate_output=False` to `open_client` to skip the check.

        Args:
            name: The tool's name.
            arguments: Its arguments (a JSON object).
            progress: Called with each `Progress` the server reports for this call (may be
                async; it runs on the connection's reader, so keep it quick).
            raise_on_error: Raise `ToolCallError` when the result has `isError`.
            retry_safe: The call may run twice without harm: a transport may send it again
                after a network error that leaves unknown whether it arrived.
            on_task_status: When the server runs the call as a task, called (sync or async)
                with its `TaskInfo` when it starts and each time its status or status
                message changes.

        With `open_client(tasks=True)`, a server may run the call as a task (the tasks
        extension): the call then polls the task at the interval the server asks (bounded to
        0.05-30 s), answers its questions with the handlers given to `open_client`, and
        returns its result. Cancelling the call cancels the task (`tasks/cancel`).

        Under 2026-07-28 a tool that needs input (an elicitation, a sample, the roots) answers
        `input_required`; the call then answers each input request with the handlers given to
        `open_client` and is sent again, for at most `Asking.max_input_rounds` rounds.

        Returns:
            The result; `is_error` tells whether the tool reported a failure.

        Raises:
            ToolCallError: when `raise_on_error` and the tool reported a failure.
            RequestError: when the server refuses the call (unknown tool: -32602; under
                2026-07-28, headers that do not match the arguments: -32020, after one fresh
                `list_tools` and one retry).
            RemoteProtocolError: when the result is malformed or breaks its output schema;
                under 2026-07-28, when the server asks for input this client did not declare,
                or still asks after `Asking.max_input_rounds` rounds.
            RequestError: when the task running the call failed (its JSON-RPC error).
            TaskCancelledError: when the task running the call was cancelled elsewhere.
            ConnectionClosed: when the connection ends before the answer.
            Exception: under 2026-07-28, what a handler raised while answering an input
                request (the call ends there).
        """
        raw = await self._call_raw(name, arguments, progress=progress, retry_safe=retry_safe)
        if task_client.is_task(raw):
            task = task_info(raw, "tools/call")
            with self._following(task.task_id):
                raw = await task_client.follow(
                    task, self._task_send, self._answer_task, on_task_status, pushed=self._pushed
                )
        return self._tool_result(name, raw, raise_on_error=raise_on_error)

    async def call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressHandler | None = None,
        raise_on_error: bool = False,
        retry_safe: bool = False,
    ) -> TaskInfo | ToolResult:
        """Call a tool, and return the task the server runs it as, without waiting for it.

        The server alone decides whether a call becomes a task: a call it answers at once
        comes back as its `ToolResult`, as from `call_tool`. Follow a task with `wait_task`,
        or look at it with `get_task`; answer its questions with `update_task`; stop it with
        `cancel_task`.

        Args:
            name: The tool's name.
            arguments: Its arguments.
            progress: Called with each `Progress` reported before the call became a task.
            raise_on_error: Raise `ToolCallError` for a result the server answered at once
                that has `isError`.
            retry_safe: The call may run twice without harm.

        Raises:
            LocalProtocolError: when the client was opened without `tasks=True`.
            The errors of `call_tool` for what happens before a task exists.
        """
        self._require_tasks("call_tool_as_task")
        raw = await self._call_raw(name, arguments, progress=progress, retry_safe=retry_safe)
        if task_client.is_task(raw):
            return task_info(raw, "tools/call")
        return self._tool_result(name, raw, raise_on_error=raise_on_error)

    async def wait_task(
        self,
        task: TaskInfo | str,
        *,
        on_status: TaskStatusHandler | None = None,
        raise_on_error: bool = False,
        cancel: bool = True,
    ) -> ToolResult:
        """Follow a task to its end and return the result of the call it runs.

        Polls at the interval the server asks (bounded to 0.05-30 s) and answers the task's
        questions with the handlers given to `open_client`, like `call_tool`.

        Args:
            task: The task (from `call_tool_as_task` or `get_task`) or its id.
            on_status: Called (sync or async) with the task now and each time its status or
                status message changes.
            raise_on_error: Raise `ToolCallError` when the result has `isError`.
            cancel: Cancelling the wait (or an error in a handler) cancels the task too; with
                False the task runs on and may be waited for again.

        Raises:
            RequestError: the task failed (its JSON-RPC error), or the server refused to
                show it (an unknown id is -32602).
            TaskCancelledError: the task was cancelled.
            ToolCallError: when `raise_on_error` and the tool reported a failure.
            LocalProtocolError: when the client was opened without `tasks=True`.
        """
        self._require_tasks("wait_task")
        info = task if isinstance(task, TaskInfo) else await self.get_task(task)
        with self._following(info.task_id):
            raw = await task_client.follow(
                info, self._task_send, self._answer_task, on_status, cancel=cancel,
                pushed=self._pushed,
            )  # fmt: skip
        result = tool_result(raw)
        if result.is_error and raise_on_error:
            raise ToolCallError(f"(task {info.task_id})", result.text or "(no message)", result)
        return result

    async def get_task(self, task_id: str) -> TaskInfo:
        """The state of a task now (`tasks/get`).

        Its status, and its result, error or questions when it has them.

        Raises:
            RequestError: when the server refuses (an unknown or expired id: -32602).
            LocalProtocolError: when the client was opened without `tasks=True`.
        """
        self._require_tasks("get_task")
        return await task_client.get(self._task_send, task_id)

    async def update_task(self, task_id: str, responses: Mapping[str, Any]) -> None:
        """Answer some of a task's questions (`tasks/update`); the others stay open.

        `responses` maps keys of the task's `input_requests` to their answers (wire form).

        Raises:
            RequestError: when the server refuses (an unknown id: -32602).
            LocalProtocolError: when the client was opened without `tasks=True`.
        """
        self._require_tasks("update_task")
        await self._task_send(
            "tasks/update", {"taskId": task_id, "inputResponses": dict(responses)}
        )

    async def cancel_task(self, task_id: str) -> None:
        """Ask the server to cancel a task (`tasks/cancel`); a settled task stays as it is.

        Raises:
            RequestError: when the server refuses (an unknown id: -32602).
            LocalProtocolError: when the client was opened without `tasks=True`.
        """
        self._require_tasks("cancel_task")
        await self._task_send("tasks/cancel", {"taskId": task_id})

    async def _call_raw(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        progress: ProgressHandler | None,
        retry_safe: bool,
    ) -> Any:
        # A tools/call through its input rounds: the final result, or a CreateTaskResult.
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if self._tasks:
            params = task_client.opt_in(params, self._session)

        async def send(body: dict[str, Any]) -> Any:
            try:
                return await self.request(
                    "tools/call", body, progress=progress, retry_safe=retry_safe
                )
            except RequestError as exc:
                if not (self._modern and exc.code == HEADER_MISMATCH):
                    raise
                # spec 2026-07-28, Streamable HTTP (Client Behavior): the tool's schema may have
                # changed since it was listed; list again, then retry once (Rule 5: the server
                # checks the headers before the tool runs).
                logger.info("call of tool %r refused (%s); listing the tools again", name, exc)
                await self.list_tools()
                return await self.request(
                    "tools/call", body, progress=progress, retry_safe=retry_safe
                )

        return await self._with_input("tools/call", params, send)

    def _tool_result(self, name: str, raw: Any, *, raise_on_error: bool) -> ToolResult:
        result = tool_result(raw)
        if result.is_error:
            if raise_on_error:
                raise ToolCallError(name, result.text or "(no message)", result)
        elif self._validate_output:
            self._check_output(name, result)
        return result

    async def list_resources(self) -> list[ResourceInfo]:
        """Every resource the server lists, following `nextCursor` through all pages.

        Raises:
            ConnectionClosed: when the connection has ended.
            RequestError: when the server answers with an error (-32601 without resources).
            RemoteProtocolError: when the answer is malformed or its cursors loop.
        """
        return [resource_info(item) for item in await self._list_all("resources/list", "resources")]

    async def list_resource_templates(self) -> list[ResourceTemplateInfo]:
        """Every resource template the server lists, following `nextCursor` through all pages.

        Raises:
            ConnectionClosed: when the connection has ended.
            RequestError: when the server answers with an error.
            RemoteProtocolError: when the answer is malformed or its cursors loop.
        """
        items = await self._list_all("resources/templates/list", "resourceTemplates")
        return [resource_template_info(item) for item in items]

    async def read_resource(self, uri: str) -> ResourceResult:
        """Read one resource: a listed URI, or an expansion of a template.

        Args:
            uri: The resource's URI.

        Returns:
            Its contents (text, or blob decoded to bytes) and, under 2026-07-28, the caching
            hint.

        Raises:
            RequestError: when the server refuses: an unknown resource is -32002 before
                2026-07-28 and -32602 with `data["uri"]` from 2026-07-28; a template variable
                that fails validation is -32602 naming it.
            RemoteProtocolError: when the result is malformed, or its input requests are
                (as for `call_tool`, whose input rounds a read goes through too).
            ConnectionClosed: when the connection ends before the answer.
        """
        raw = await self._with_input("resources/read", {"uri": uri}, self._sender("resources/read"))
        return resource_result(raw)

    async def subscribe(self, uri: str, on_update: UpdateHandler) -> None:
        """Ask to hear of changes to a resource.

        `on_update(uri)` runs on each `notifications/resources/updated` for it until
        `unsubscribe(uri)` or the end of the connection: an async handler in a task of its
        own (so it may call the server, e.g. `read_resource(uri)`), a plain function at once,
        before the messages that follow (keep it quick). Subscribing again to the same URI
        replaces the handler.

        Handshake era: sends `resources/subscribe`. Over Streamable HTTP the updates come on
        the session's GET stream, which this opens (if no handler opened it) before it
        subscribes; stdio, in-process and legacy SSE connections carry them anyway.
        2026-07-28: opens (or opens again, with this URI added) the client's
        `subscriptions/listen` stream, and returns once the server has acknowledged it; the
        stream is reopened when it breaks.

        Raises:
            RequestError: when the server refuses (handshake era: no `subscribe` capability,
                unknown URI; 2026-07-28: -32601 when the server announces no resource
                subscriptions, -32602 when its acknowledgement leaves the URI out, or the
                error it answered subscriptions/listen with).
            ConnectionClosed: when the connection has ended, or (2026-07-28) the stream
                could not be opened after several attempts.
        """
        if self._modern:
            await self._listen_for(uri, on_update)
            return
        self._updates[uri] = on_update
        try:
            await self._link.listen()
            await self.request("resources/subscribe", {"uri": uri}, retry_safe=True)
        except BaseException:
            self._updates.pop(uri, None)
            raise

    async def unsubscribe(self, uri: str) -> None:
        """Stop hearing of changes to a resource (see `subscribe`).

        Under 2026-07-28 the listen stream is opened again without the URI (or closed, when
        nothing else is wanted); it returns once the old stream has ended.

        Raises:
            RequestError: when the server refuses (handshake era).
            ConnectionClosed: when the connection has ended.
        """
        self._updates.pop(uri, None)
        if self._modern:
            try:
                await self._listening_changed().settled()
            except TrioMCPError:
                if self._closed is not None:
                    raise
                # What is still wanted was refused or given up on: the URI is gone either way.
        else:
            await self.request("resources/unsubscribe", {"uri": uri}, retry_safe=True)

    def on_list_changed(self, kind: ListKind, handler: ListChangedHandler | None) -> None:
        """Run `handler(kind)` when the server says its list of `kind` changed.

        The handler runs on each `notifications/<kind>/list_changed`: an async one in a task of
        its own, so it may list again; a plain function at once (keep it quick). Pass None to
        stop. Servers send these to handshake-era sessions unasked (over Streamable HTTP, on
        the session's GET stream, which this opens in the background if no handler did). Under
        2026-07-28 this opens (or opens again, with this kind added) the client's
        `subscriptions/listen` stream, in the background: a change made before the server has
        acknowledged it is not heard (`subscribe` waits for the acknowledgement). A server
        that announces no `listChanged` for `kind` is not asked.

        Args:
            kind: "tools", "resources" or "prompts".
            handler: Called with `kind` (may be async); None removes the handler.

        Raises:
            ValueError: for another kind.
        """
        if kind not in LIST_KINDS:
            raise ValueError(f"unknown list kind {kind!r}; choose one of {', '.join(LIST_KINDS)}")
        if handler is None:
            self._list_handlers.pop(kind, None)
        else:
            self._list_handlers[kind] = handler
        if self._modern:
            self._listening_changed()
        elif handler is not None and self._nursery is not None:
            self._nursery.start_soon(self._link.listen)

    async def list_prompts(self) -> list[PromptInfo]:
        """Every prompt the server offers, following `nextCursor` through all pages.

        Raises:
            ConnectionClosed: when the connection has ended.
            RequestError: when the server answers with an error (-32601 without prompts).
            RemoteProtocolError: when the answer is malformed or its cursors loop.
        """
        return [prompt_info(item) for item in await self._list_all("prompts/list", "prompts")]

    async def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> PromptResult:
        """Get a prompt's messages for some arguments.

        Args:
            name: The prompt's name.
            arguments: Its arguments; the wire carries strings, so other values are sent as
                their `str()` (JSON for booleans).

        Raises:
            RequestError: when the server refuses (unknown prompt, invalid or missing
                arguments: -32602).
            RemoteProtocolError: when the result is malformed, or its input requests are
                (as for `call_tool`, whose input rounds a prompt goes through too).
            ConnectionClosed: when the connection ends before the answer.
        """
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {key: _wire_string(value) for key, value in arguments.items()}
        return prompt_result(
            await self._with_input("prompts/get", params, self._sender("prompts/get"))
        )

    async def complete(
        self,
        ref: PromptInfo | ResourceTemplateInfo | Mapping[str, Any],
        argument: str,
        value: str = "",
        *,
        context_arguments: Mapping[str, str] | None = None,
    ) -> Completion:
        """Ask for the values an argument of a prompt or a template variable may take.

        Args:
            ref: The prompt or template, as listed, or its wire form
                (`{"type": "ref/prompt", "name": ...}`,
                `{"type": "ref/resource", "uri": <template>}`).
            argument: The argument's (or variable's) name.
            value: What is typed so far.
            context_arguments: The values already chosen for the other arguments.

        Raises:
            RequestError: when the server refuses (unknown prompt or template: -32602; no
                completions capability: -32601).
            RemoteProtocolError: when the result is malformed.
            ConnectionClosed: when the connection ends before the answer.
        """
        if isinstance(ref, PromptInfo):
            wire_ref: dict[str, Any] = {"type": "ref/prompt", "name": ref.name}
        elif isinstance(ref, ResourceTemplateInfo):
            wire_ref = {"type": "ref/resource", "uri": ref.uri_template}
        else:
            wire_ref = dict(ref)
        params: dict[str, Any] = {"ref": wire_ref, "argument": {"name": argument, "value": value}}
        if context_arguments:
            params["context"] = {"arguments": dict(context_arguments)}
        return completion(await self.request("completion/complete", params, retry_safe=True))

    async def set_log_level(self, level: str) -> None:
        """Ask the server to send log notifications at `level` and above.

        Handshake era: one `logging/setLevel` request (the server's default is its own; info
        for trio-mcp). 2026-07-28 has no such method: every later request names the level in
        its `_meta` (info until this is called), so nothing is sent here.

        Raises:
            RequestError: when the server refuses the level.
            ValueError: under 2026-07-28, for a level the specification does not name.
        """
        if self._modern:
            self._session.set_log_level(level)
        else:
            await self.request("logging/setLevel", {"level": level}, retry_safe=True)
            self._session.log_level = level

    async def set_roots(self, roots: Roots) -> None:
        """Change the roots this client exposes, and tell the server they changed.

        Handshake era: sends `notifications/roots/list_changed`, after which a server asks
        `roots/list` again. 2026-07-28 has no such notice: a server asks for the roots in each
        call that needs them, and gets the new ones.

        Args:
            roots: A list of `Root` (each a `file://` URI), or a function (sync or async)
                that returns one when the server asks.

        Raises:
            LocalProtocolError: when the client was opened without `roots` (it did not
                declare the capability; open it with `asking=Asking(roots=[])` to set them
                later).
            ValueError: for a root that is not a `file://` URI.
            ConnectionClosed: when the connection has ended.
        """
        if not self._answers.answerable.roots:
            raise LocalProtocolError(
                "this client declared no roots: open it with asking=Asking(roots=[...]) (an "
                "empty list will do) to change them later"
            )
        self._answers.set_roots(roots)
        if not self._modern:
            await self.notify("notifications/roots/list_changed")

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        progress: ProgressHandler | None = None,
        retry_safe: bool = False,
    ) -> Any:
        """Send any request and return its `result`.

        Args:
            method: The JSON-RPC method.
            params: Its parameters.
            progress: Called with each `Progress` the server reports for this request.
            retry_safe: The request may be sent again after an ambiguous network error.

        Returns:
            The response's `result`.

        Raises:
            RequestError: when the server answers with a JSON-RPC error.
            ConnectionClosed: when the connection ends before the answer.
        """
        return await self._request(method, params, progress=progress, retry_safe=retry_safe)

    async def _request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        progress: ProgressHandler | None = None,
        retry_safe: bool = False,
        on_id: Callable[[RequestId], None] | None = None,
    ) -> Any:
        # `request`; `on_id` learns the request's id before it is sent.
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        body = dict(params or {})
        meta = dict(body.get("_meta") or {})
        if self._request_meta is not None:  # before the id is taken: the hook may raise
            for key, value in self._request_meta(method).items():
                meta.setdefault(key, value)  # what the caller put there stays
        request_id = self._peer.start_request(method).id
        if on_id is not None:
            on_id(request_id)
        if progress is not None:
            meta["progressToken"] = request_id
        meta = self._session.request_meta(meta)
        if meta:
            body["_meta"] = meta
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if body or params is not None:
            message["params"] = body
        pending = _Pending(progress)
        self._pending[request_id] = pending
        try:
            try:
                await self._send_request(message, retry_safe)
                await pending.done.wait()
            except trio.Cancelled:
                # None for an initialize (spec, lifecycle: never cancelled) or an answered call.
                notice = self._peer.cancel_outbound(request_id, "cancelled by the client")
                if notice is not None:
                    await self._send_cancel(request_id, notice.params)
                raise
        finally:
            del self._pending[request_id]
            self._peer.cancel_outbound(request_id)  # a send that failed: forget the id
        return self._outcome(method, pending)

    def _outcome(self, method: str, pending: _Pending) -> Any:
        """The result of an answered request, or what its answer (or its absence) raises."""
        answer = pending.answer
        if pending.malformed is not None:
            raise RemoteProtocolError(
                f"the server answered {method} with a malformed response ({pending.malformed})"
            )
        if answer is None:
            raise ConnectionClosed(self._closed or "connection closed")
        if isinstance(answer, ErrorResponse):
            raise RequestError(answer.message, answer.code, answer.data)
        return answer.result

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (no answer is expected).

        Raises:
            ConnectionClosed: when the connection has ended.
        """
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send(message, retry_safe=False)

    # -- what the server asks (Rule 9) ---------------------------------------------------------

    def _sender(self, method: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        async def send(body: dict[str, Any]) -> Any:
            return await self.request(method, body, retry_safe=True)

        return send

    async def _with_input(
        self,
        method: str,
        params: dict[str, Any],
        send: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        # Rule 9: send, and while the result asks for input (2026-07-28 only: the revisions of
        # the handshake have no resultType, and their records refuse one), answer and send again.
        result = await send(params)
        rounds = 0
        while self._modern:
            round_ = input_round(result, method)
            if round_ is None:
                break
            if rounds >= self._max_input_rounds:
                raise RemoteProtocolError(
                    f"{method} still asked for input after {rounds} round(s) of answers "
                    f"(max_input_rounds={self._max_input_rounds})"
                )
            rounds += 1
            responses = await self._answer_round(method, round_)
            result = await send(retry_params(params, round_, responses))
        return result

    async def _answer_round(self, method: str, round_: InputRound) -> dict[str, Any]:
        # Every input request at once; the first failure cancels the others and ends the call.
        answers: dict[str, Any] = {}
        failures: list[Exception] = []

        async def answer(key: str, asked: str, params: dict[str, Any]) -> None:
            try:
                answers[key] = await self._answer_input(method, key, asked, params)
            except Exception as exc:
                failures.append(exc)
                nursery.cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            for key, (asked, params) in round_.requests.items():
                nursery.start_soon(answer, key, asked, params)
        if failures:
            raise failures[0]
        return {key: answers[key] for key in round_.requests}

    async def _answer_input(
        self, method: str, key: str, asked: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        try:
            return await self._answers.answer(asked, params, self._session.declared)
        except Unanswerable as exc:
            # spec 2026-07-28, multi round-trip requests: a server MUST NOT ask for what the
            # client did not declare; nor may it ask malformed questions.
            raise RemoteProtocolError(
                f"{method} asked for input {key!r} ({asked}) that this client cannot give: "
                f"{exc.message}"
            ) from None

    async def _answer_request(self, method: str, params: dict[str, Any]) -> Any:
        # Rule 8's handler for what the user's handlers answer.
        try:
            return await self._answers.answer(method, params, self._session.declared)
        except Unanswerable as exc:
            raise RequestError(exc.message, exc.code) from None

    # -- subscriptions/listen (Rule 10) -------------------------------------------------------

    def _wanted(self) -> SubscriptionFilter:
        # What the callbacks and the tasks followed want, as far as the server announces it.
        wanted = SubscriptionFilter(
            frozenset(self._list_handlers), tuple(self._updates), tuple(self._followed)
        )
        return wanted.granted(self.server_capabilities)

    # -- the states of the tasks followed (Rule 11) -------------------------------------------

    @contextlib.contextmanager
    def _following(self, task_id: str) -> Iterator[None]:
        """Take the states pushed for the task while the block runs."""
        if task_id in self._followed:  # followed twice at once: the first one takes them
            yield
            return
        self._followed[task_id] = _Followed()
        if self._session.per_request:
            self._listening_changed()
        try:
            yield
        finally:
            del self._followed[task_id]
            if self._session.per_request and self._subscriptions is not None:
                self._subscriptions.poke()

    async def _pushed(self, task_id: str, timeout: float) -> TaskInfo | None:  # noqa: ASYNC109
        """The task's state the server pushed within `timeout` seconds, if any (Rule 11)."""
        followed = self._followed.get(task_id)
        if followed is None:
            await trio.sleep(timeout)
            return None
        if not followed.heard and self._session.per_request and self._subscriptions is not None:
            # Under 2026-07-28, first the listen stream that asks for it: what the task did
            # before its acknowledgement was told to nobody, so a poll follows it at once.
            followed.heard = True
            with trio.move_on_after(timeout):
                try:
                    await self._subscriptions.settled()
                except TrioMCPError as exc:
                    logger.debug("task %s is polled only: %s", task_id, exc)
                    await trio.sleep_forever()  # until the poll is due
            return None
        with trio.move_on_after(timeout):
            await followed.told.wait()
        state, followed.state = followed.state, None
        followed.told = trio.Event()
        return state

    def _task_pushed(self, params: dict[str, Any]) -> None:
        tag = subscription_of(params)
        if not (tag is None or self._subscriptions is None or self._subscriptions.delivers(tag)):
            return
        try:
            state = task_info(params, TASK_STATUS)
        except RemoteProtocolError as exc:
            logger.debug("ignored a malformed %s: %s", TASK_STATUS, exc)
            return
        followed = self._followed.get(state.task_id)
        if followed is not None:
            followed.state = state
            followed.told.set()

    def _listening_changed(self) -> Subscriptions:
        if self._subscriptions is None:
            self._subscriptions = Subscriptions(
                self._listen, self._wanted, lambda: self._closed is not None
            )
            if self._nursery is not None:
                self._nursery.start_soon(self._subscriptions.run)
        self._subscriptions.poke()
        return self._subscriptions

    async def _listen(self, params: dict[str, Any], on_id: Callable[[RequestId], None]) -> Any:
        # Not retry_safe: a broken stream is the supervisor's to reopen, at its own pace.
        return await self._request(LISTEN, params, on_id=on_id)

    async def _listen_for(self, uri: str, on_update: UpdateHandler) -> None:
        if uri not in SubscriptionFilter(uris=(uri,)).granted(self.server_capabilities).uris:
            raise RequestError(
                "the server announces no resource subscriptions (capabilities.resources.subscribe)",
                METHOD_NOT_FOUND,
            )
        replaced = self._updates.get(uri)
        self._updates[uri] = on_update
        try:
            granted = await self._listening_changed().settled()
            if uri not in granted.uris:
                raise RequestError(  # noqa: TRY301 - undone below like any other failure
                    f"the server did not acknowledge updates of {uri}", INVALID_PARAMS
                )
        except BaseException:
            if replaced is None:
                self._updates.pop(uri, None)
            else:
                self._updates[uri] = replaced
            self._listening_changed()
            raise

    # -- tasks (Rule 11) ----------------------------------------------------------------------

    async def _task_send(self, method: str, params: dict[str, Any]) -> Any:
        # get, update and cancel may all be sent twice: an answer given twice is ignored.
        return await self.request(
            method, task_client.opt_in(params, self._session), retry_safe=True
        )

    async def _answer_task(self, round_: InputRound) -> dict[str, Any]:
        return await self._answer_round("tools/call", round_)

    def _require_tasks(self, method: str) -> None:
        if not self._tasks:
            raise LocalProtocolError(
                f"{method} needs the tasks extension: open the client with tasks=True"
            )

    # -- lists ------------------------------------------------------------------------------

    async def _list_all(self, method: str, field_name: str) -> list[Any]:
        # Every page of a list, in order; a cursor that comes back means the server loops.
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            result = await self.request(
                method, {"cursor": cursor} if cursor is not None else None, retry_safe=True
            )
            page, cursor = list_page(result, method, field_name)
            items.extend(page)
            if cursor is None:
                return items
            if cursor in seen:
                raise RemoteProtocolError(f"{method} cursor {cursor!r} came back twice")
            seen.add(cursor)
        raise RemoteProtocolError(f"{method} went on for more than {MAX_PAGES} pages")

    # -- handshake ----------------------------------------------------------------------------

    async def _start(self) -> None:
        # The decisions are the session's (_core/client_session, Rule 1); here only the I/O.
        # Over HTTP the revision travels in the MCP-Protocol-Version header too, which is how a
        # server that speaks both eras tells a modern request from one missing its session.
        session = self._session
        if session.probes:
            while True:
                session.begin_discover()
                self._link.negotiated(session.wanted_version)
                try:
                    result = await self.request("server/discover", retry_safe=True)
                except RequestError as exc:
                    step = session.discover_failed(exc.code, exc.data)
                    if step is Next.RAISE:
                        raise
                    if step is Next.INITIALIZE:
                        logger.info("server/discover failed (%s): falling back to initialize", exc)
                        break
                    continue
                if session.discovered(result):
                    self._link.negotiated(session.protocol_version)
                    return
                break
        await self._initialize()

    async def _initialize(self) -> None:
        session = self._session
        result = await self.request("initialize", session.initialize_params(), retry_safe=True)
        session.initialized(result)
        self._link.negotiated(session.protocol_version)
        await self.notify("notifications/initialized")

    def _mirror_params(self, tools: list[ToolInfo]) -> list[ToolInfo]:
        # Rule 7: the link learns every valid tool's headers; if it mirrors them, a tool whose
        # annotations are invalid cannot be called as the specification requires: left out.
        mirrored: dict[str, dict[str, tuple[str, ...]]] = {}
        invalid: dict[str, str] = {}
        for tool in tools:
            try:
                params = header_params(tool.input_schema)
            except InvalidHeaderAnnotation as exc:
                invalid[tool.name] = str(exc)
            else:
                if params:
                    mirrored[tool.name] = params
        if not self._link.mirror_params(mirrored) or not invalid:
            return tools
        for name, reason in invalid.items():
            logger.warning("left out tool %r, whose definition is invalid: %s", name, reason)
        return [tool for tool in tools if tool.name not in invalid]

    # -- sending ------------------------------------------------------------------------------

    async def _send_request(self, message: dict[str, Any], retry_safe: bool) -> None:
        try:
            await self._send(message, retry_safe=retry_safe)
        except SessionExpiredError as expired:
            if message["method"] == "initialize" or self._modern:
                raise
            # The session is gone (server restarted, or the session ended or expired): start a
            # new one, once for all the calls that learn of it together, then send again. The
            # 404 came before the request reached a session, so it cannot run twice.
            async with self._reinit_lock:
                if self._link.session_id in (expired.session_id, None):
                    logger.info("session %s expired; initializing a new one", expired.session_id)
                    await self._initialize()
            await self._send(message, retry_safe=retry_safe)

    async def _send(self, message: dict[str, Any], *, retry_safe: bool) -> None:
        try:
            await self._link.send(message, retry_safe=retry_safe)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # The stream broke under us: the reader is about to learn why; wait for its account.
            with trio.move_on_after(CLOSE_REASON_SECONDS):
                await self._closed_event.wait()
            raise ConnectionClosed(self._closed or "connection closed") from None

    async def _send_cancel(self, request_id: RequestId, notice: dict[str, Any] | None) -> None:
        if self._closed is not None:
            return
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + CANCEL_NOTICE_SECONDS
            try:
                await self.notify(CANCELLED, notice)
            except Exception as exc:
                logger.debug("could not send the cancellation of request %s: %s", request_id, exc)

    # -- receiving ----------------------------------------------------------------------------

    async def _read(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            async for item in self._link.incoming:
                for frame in (item,) if isinstance(item, bytes | bytearray) else item:
                    if isinstance(frame, LineTooLong):
                        logger.warning("dropped a message longer than %d bytes", frame.limit)
                    else:
                        await self._frame(frame)
            reason = await self._link.close_reason()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            reason = await self._link.close_reason()
        self._close(reason)

    def _close(self, reason: str) -> None:
        self._closed = reason
        self._closed_event.set()
        for scope in self._handler_scopes.values():
            scope.cancel()  # their answers could go nowhere
        self._peer.close(reason)
        for pending in self._pending.values():
            pending.done.set()  # no answer: the caller raises ConnectionClosed
        if self._pending:
            logger.info("%s; %d call(s) failed", reason, len(self._pending))

    async def _frame(self, frame: bytes) -> None:
        messages, _ = parse(frame)
        for message in messages:
            if isinstance(message, Response | ErrorResponse):
                self._answer(message)
            elif isinstance(message, Notification):
                await self._notification(message)
            elif isinstance(message, Request):
                await self._server_request(message)
            else:  # never answered (Rule 2)
                self._invalid(message)

    def _invalid(self, message: InvalidMessage) -> None:
        # A malformed answer fails the call it names at once (Rule 2); nothing is answered.
        outcome = (
            self._peer.receive_malformed(message.error.id, message.reason)
            if message.response
            else None
        )
        pending = self._pending.get(outcome.request_id) if outcome is not None else None
        if outcome is None or pending is None:
            logger.warning("ignored an invalid message from the server: %s", message.error.message)
            return
        logger.warning(
            "dropped a malformed answer to %s (id %r), which fails: %s",
            outcome.method,
            outcome.request_id,
            message.reason,
        )
        pending.malformed = message.reason
        pending.done.set()

    def _answer(self, answer: Response | ErrorResponse) -> None:
        # The peer drops what no request of ours awaits: unknown ids, second answers, answers
        # after a cancellation or the end, and ids of the wrong type.
        outcome = self._peer.receive_response(answer)
        pending = self._pending.get(outcome.request_id) if outcome is not None else None
        if pending is None:
            if isinstance(answer, ErrorResponse) and answer.id is None:
                logger.warning("the server reported an error: %s", answer.message)
            else:
                logger.debug("dropped an answer to request %r, which no call awaits", answer.id)
            return
        pending.answer = answer
        pending.done.set()

    async def _notification(self, message: Notification) -> None:
        params = message.params or {}
        if message.method == "notifications/progress":
            await self._progress(params)
        elif message.method == "notifications/message":
            await self._log(params)
        elif message.method == RESOURCE_UPDATED or message.method.endswith("/list_changed"):
            self._announcement(message.method, params)
        elif message.method == TASK_STATUS:
            self._task_pushed(params)
        elif message.method == ACKNOWLEDGED:
            if self._subscriptions is not None:
                self._subscriptions.acknowledged(params)
        elif message.method == "notifications/elicitation/complete":
            handler = self._answers.on_elicitation_complete
            elicitation_id = params.get("elicitationId")
            # Rule 4 of `answering`: only an elicitation this client was asked, and only once.
            if self._answers.completed(elicitation_id) and handler is not None:
                self._run_handler(handler, elicitation_id)
        elif message.method == CANCELLED:
            request_id = self._peer.receive_cancelled(message.params)
            scope = self._handler_scopes.get(request_id) if request_id is not None else None
            if scope is not None:
                scope.cancel()
            else:
                logger.debug("ignored a cancellation of no server request in flight")
        else:
            logger.debug("ignored notification %s", message.method)

    async def _log(self, params: dict[str, Any]) -> None:
        level = params.get("level")
        name = params.get("logger")
        record = LogMessage(
            level if isinstance(level, str) else "info",
            params.get("data"),
            name if isinstance(name, str) else None,
        )
        if self._log_handler is not None:
            await _call_handler(self._log_handler, record)
        else:
            server_logger.log(
                _LOG_LEVELS.get(record.level, logging.INFO),
                "%s%s",
                f"[{record.logger}] " if record.logger else "",
                record.data,
            )

    async def _progress(self, params: dict[str, Any]) -> None:
        token = params.get("progressToken")
        pending = self._pending.get(token) if type(token) is int else None
        progress = params.get("progress")
        if pending is None or pending.progress is None or not isinstance(progress, int | float):
            return
        total = params.get("total")
        text = params.get("message")
        update = Progress(
            progress,
            total if isinstance(total, int | float) else None,
            text if isinstance(text, str) else None,
        )
        await _call_handler(pending.progress, update)

    def _announcement(self, method: str, params: dict[str, Any]) -> None:
        # A resource update or a list change. An async handler runs in a task of its own
        # (Rule 8): it may read the resource or list again, whose answers this reader must be
        # free to deliver. A plain function runs at once, before the messages that follow.
        # Rule 10: on a listen stream, only the current one's are delivered.
        tag = subscription_of(params)
        if not (tag is None or self._subscriptions is None or self._subscriptions.delivers(tag)):
            logger.debug("ignored %s of listen stream %r", method, tag)
            return
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            if not isinstance(uri, str):
                return
            handler = self._updates.get(uri)
            arg = uri
        else:
            arg = method.removeprefix("notifications/").removesuffix("/list_changed")
            handler = self._list_handlers.get(arg)
        if handler is not None:
            self._run_handler(handler, arg)

    def _run_handler(self, handler: Callable[[Any], Awaitable[None] | None], arg: Any) -> None:
        if self._nursery is None:
            return
        if inspect.iscoroutinefunction(handler):
            self._nursery.start_soon(_call_handler, handler, arg)
        else:
            # A plain function cannot wait for the server: it runs here, in message order.
            try:
                handler(arg)
            except Exception:
                logger.exception("an update, list-change or elicitation-complete handler failed")

    async def _server_request(self, request: Request) -> None:
        # Rule 8. JSON-RPC requires an answer to every request: what has no handler is refused.
        handler = self._handlers.get(request.method)
        if request.method == "ping":
            answer = result_response(request.id, {})
        elif handler is None or self._nursery is None:
            answer = error_response(
                request.id, METHOD_NOT_FOUND, f"Method not found: {request.method}"
            )
        else:
            try:
                self._peer.begin_inbound(request.id)
            except RemoteProtocolError as exc:
                answer = error_response(request.id, exc.code, exc.message)
            else:
                # The scope exists before the task starts, so a cancellation read next finds it.
                scope = self._handler_scopes[request.id] = trio.CancelScope()
                self._nursery.start_soon(self._handle, request, handler, scope)
                return
        await self._reply(answer)

    async def _handle(
        self, request: Request, handler: ServerRequestHandler, scope: trio.CancelScope
    ) -> None:
        try:
            with scope:
                try:
                    answer = result_response(request.id, await handler(request.params or {}))
                except RequestError as exc:
                    answer = error_response(request.id, exc.code, exc.message, exc.data)
                except Exception as exc:
                    # The traceback stays here; the server learns what failed, not where.
                    logger.exception("the handler of the server's %s failed", request.method)
                    answer = error_response(
                        request.id,
                        INTERNAL_ERROR,
                        f"Internal error in {request.method}: {type(exc).__name__}: {exc}",
                    )
            # A handler can return without a checkpoint after its cancellation: no answer still.
            if not scope.cancel_called:
                await self._reply(answer)
        finally:
            del self._handler_scopes[request.id]
            self._peer.end_inbound(request.id)

    async def _reply(self, answer: dict[str, Any]) -> None:
        # Every server request gets exactly one answer: one whose result has no JSON form
        # becomes an internal error here, before the send (where it would fail unanswered).
        try:
            dumps(answer)
        except ValueError as exc:
            logger.error(  # noqa: TRY400 - the reason is enough; the handler's code is not at fault here
                "the answer to the server's request %r has no JSON form: %s", answer["id"], exc
            )
            answer = error_response(
                answer["id"], INTERNAL_ERROR, f"Internal error: the answer has no JSON form ({exc})"
            )
        # An answer to a server that has gone has nowhere to go: the reader reports the end.
        with contextlib.suppress(TrioMCPError, trio.BrokenResourceError, trio.ClosedResourceError):
            await self._link.send(answer)

    # -- output schemas -----------------------------------------------------------------------

    def _check_output(self, name: str, result: ToolResult) -> None:
        tool = self._tools.get(name)
        if tool is None or tool.output_schema is None:
            return
        if result.structured is None:
            raise RemoteProtocolError(
                f"tool {name!r} declares an output schema but returned no structuredContent"
            )
        validator = self._validators.get(name)
        if validator is None:
            try:
                import jsonschema  # noqa: PLC0415 - optional: checks run only when installed
            except ImportError:
                self._validate_output = False
                return
            cls = jsonschema.validators.validator_for(tool.output_schema)
            validator = self._validators[name] = cls(tool.output_schema)
        error = next(iter(validator.iter_errors(result.structured)), None)
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "(root)"
            raise RemoteProtocolError(
                f"tool {name!r} returned structuredContent that breaks its output schema "
                f"at {where}: {error.message}"
            )


@contextlib.asynccontextmanager
async def open_session(link: Link, options: SessionOptions | None = None) -> AsyncIterator[Client]:
    """Run a `Client` over `link` for the `async with` block, after the handshake.

    Args:
        link: The transport.
        options: What the session is opened with (see `open_client`).

    Yields:
        The connected client.
    """
    client = Client(link, options)
    try:
        async with trio.open_nursery() as nursery:
            client._nursery = nursery
            await nursery.start(client._read)
            await client._start()
            try:
                yield client
            finally:
                # Calls still waiting in tasks that outlive the block (another nursery's) would
                # wait forever for a reader that is gone: they fail now.
                if not client.closed:
                    client._close("the client was closed")
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        reraise_lone(group)


@dataclass(eq=False, slots=True)
class _Followed:
    """A task followed now: the last state the server pushed and nobody took yet (Rule 11)."""

    state: TaskInfo | None = None
    told: trio.Event = field(default_factory=trio.Event)
    #: Whether a listen stream asking for it was waited for (2026-07-28).
    heard: bool = False
