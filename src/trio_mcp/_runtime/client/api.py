"""`Client`: the public API of one connection to an MCP server, whatever carries it.

The methods are here; what carries them is the connection (`_runtime/client/connection`: the
link, the reader, the peer engine), and each feature is a module of this package that the
client is composed of: `asking` (what the server asks), `subscriptions` (resource updates and
list changes), `listen` (the 2026-07-28 `subscriptions/listen` stream they and the tasks are
served by), `tasks` (following a call that became a task) and `skills` (the skills
extension's checked reads). Under 2026-07-28 `list_tools` hands the link each tool's
`x-mcp-header` parameters (`_core/param_headers`), and a `tools/call` refused for headers that
do not match its arguments lists the tools again, once, and is sent again.

`open_session` runs the connection's reader and every task of the client in one nursery, ended
with its `async with`; a single error raised in the block comes out as itself, not as an
ExceptionGroup.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from ..._core.client_records import (
    Completion,
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
from ..._core.client_session import ClientSession
from ..._core.jsonrpc import dumps
from ..._core.param_headers import InvalidHeaderAnnotation, header_params
from ..._core.subscriptions import SubscriptionFilter
from ..._core.versions import HEADER_MISMATCH
from ..._exceptions import (
    LocalProtocolError,
    RemoteProtocolError,
    RequestError,
    ToolCallError,
    reraise_lone,
)
from ..._version import __version__
from ..link import Link
from ..options import Roots, SessionOptions
from .asking import Answers, Questions, Send
from .connection import ProgressHandler, ServerConnection
from .listen import Listening
from .subscriptions import ListChangedHandler, ListKind, Subscriptions, UpdateHandler
from .task_utility import UtilityTasks, created_task
from .tasks import TASKS_EXTENSION, Tasks, TaskStatusHandler, is_task

if TYPE_CHECKING:
    from ..._core.types import ResourceContents
    from ..._features.skills import LoadedSkill, SkillInfo
    from .skills import Skills

__all__ = ["MAX_PAGES", "Client", "open_session"]

logger = logging.getLogger("trio_mcp.client")

# Pages `list_tools` follows before deciding the server's cursors go round in circles.
MAX_PAGES: Final = 10_000


def _wire_string(value: Any) -> str:
    # Prompt arguments are strings on the wire; booleans and None as JSON writes them.
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return dumps(value).decode()
    return str(value)


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
        answers = Answers(
            elicitation=asking.elicitation,
            sampling=asking.sampling,
            roots=asking.roots,
            elicitation_modes=asking.elicitation_modes,
            on_elicitation_complete=asking.on_elicitation_complete,
        )
        self._session = ClientSession(
            options.protocol_version,
            dict(options.client_info or {"name": "trio-mcp", "version": __version__}),
            answerable=answers.answerable,
            extensions={TASKS_EXTENSION: {}} if options.tasks else None,
        )
        self._link = link
        self._connection = ServerConnection(
            link, self._session, log_handler=options.log_handler, request_meta=options.request_meta
        )
        # The features, each on the connection (its handlers and notices are theirs).
        self._asking = Questions(self._connection, answers, asking.max_input_rounds)
        self._listening = Listening(self._connection, self._wanted)
        self._subscriptions = Subscriptions(self._connection, self._listening)
        self._tasks = Tasks(
            self._connection,
            self._listening,
            functools.partial(self._asking.answer_round, "tools/call"),
            enabled=options.tasks,
        )
        self._skill_methods: Skills | None = None  # made (and its module loaded) on first use
        # 2025-11-25's own tasks (`Revision.tasks`), both ways.
        self._utility = UtilityTasks(self._connection, enabled=options.tasks)
        self._validate_output = options.validate_output
        self._tools: dict[str, ToolInfo] = {}
        self._validators: dict[str, Any] = {}

    # -- public API ---------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered (ids in use)."""
        return self._connection.engine.waiting

    @property
    def closed(self) -> bool:
        """Whether the connection has ended."""
        return self._connection.closed is not None

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

    def _wanted(self) -> SubscriptionFilter:
        # What the callbacks and the tasks followed want of the listen stream, as far as the
        # server announces it.
        wanted = SubscriptionFilter(
            frozenset(self._subscriptions.list_handlers),
            tuple(self._subscriptions.updates),
            tuple(self._tasks.followed),
        )
        return wanted.granted(self.server_capabilities)

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
        raw = await self._call_raw(
            name, arguments, progress=progress, retry_safe=retry_safe, as_task=self._tasks.enabled
        )
        if is_task(raw):
            raw = await self._tasks.follow(task_info(raw, "tools/call"), on_task_status)
        elif (made := self._created(raw)) is not None:  # 2025-11-25
            raw = await self._utility.follow(made, on_task_status)
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
        self._tasks.require("call_tool_as_task")
        raw = await self._call_raw(
            name, arguments, progress=progress, retry_safe=retry_safe, as_task=True
        )
        if is_task(raw):
            return task_info(raw, "tools/call")
        made = self._created(raw)  # 2025-11-25
        if made is not None:
            return made
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
        self._tasks.require("wait_task")
        info = task if isinstance(task, TaskInfo) else await self.get_task(task)
        if self._utility.active:  # 2025-11-25
            raw = await self._utility.follow(info, on_status, cancel=cancel)
        else:
            raw = await self._tasks.follow(info, on_status, cancel=cancel)
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
        self._tasks.require("get_task")
        if self._utility.active:  # 2025-11-25
            return await self._utility.get(task_id)
        return await self._tasks.get(task_id)

    async def update_task(self, task_id: str, responses: Mapping[str, Any]) -> None:
        """Answer some of a task's questions (`tasks/update`); the others stay open.

        `responses` maps keys of the task's `input_requests` to their answers (wire form).

        Raises:
            RequestError: when the server refuses (an unknown id: -32602).
            LocalProtocolError: when the client was opened without `tasks=True`.
        """
        self._tasks.require("update_task")
        if self._utility.active:
            raise LocalProtocolError(
                f"MCP {self.protocol_version} has no tasks/update: its tasks ask their questions "
                "while wait_task holds tasks/result, and the client's handlers answer them"
            )
        await self._tasks.update(task_id, responses)

    async def cancel_task(self, task_id: str) -> None:
        """Ask the server to cancel a task (`tasks/cancel`); a settled task stays as it is.

        Raises:
            RequestError: when the server refuses (an unknown id: -32602; under 2025-11-25, a
                settled task too).
            LocalProtocolError: when the client was opened without `tasks=True`.
        """
        self._tasks.require("cancel_task")
        if self._utility.active:  # 2025-11-25
            await self._utility.cancel(task_id)
            return
        await self._tasks.cancel(task_id)

    async def _call_raw(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        progress: ProgressHandler | None,
        retry_safe: bool,
        as_task: bool = False,
    ) -> Any:
        # A tools/call through its input rounds: the final result, or a CreateTaskResult.
        params = self._tasks.opt_in({"name": name, "arguments": dict(arguments or {})})
        if self._utility.offers_tasks():
            # 2025-11-25: the client asks for a task, as the tool's listing allows.
            if name not in self._tools and not self._utility.looked_up:
                self._utility.looked_up = True
                await self.list_tools()
            listed = self._tools.get(name)
            if self._utility.wants_task(listed.raw if listed else None, asked=as_task):
                params["task"] = {}

        async def send(body: dict[str, Any]) -> Any:
            try:
                return await self.request(
                    "tools/call", body, progress=progress, retry_safe=retry_safe
                )
            except RequestError as exc:
                if not (self._modern and exc.code == HEADER_MISMATCH):
                    raise
                # spec 2026-07-28, Streamable HTTP (Client Behavior): the tool's schema may have
                # changed since it was listed, and the server checks the headers before the tool
                # runs: list again, then retry once.
                logger.info("call of tool %r refused (%s); listing the tools again", name, exc)
                await self.list_tools()
                return await self.request(
                    "tools/call", body, progress=progress, retry_safe=retry_safe
                )

        return await self._asking.with_input("tools/call", params, send)

    def _created(self, raw: Any) -> TaskInfo | None:
        """The task of a 2025-11-25 `CreateTaskResult`, or None."""
        return created_task(raw) if self._utility.active else None

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
        raw = await self._asking.with_input(
            "resources/read", {"uri": uri}, self._sender("resources/read")
        )
        return resource_result(raw)

    # -- the skills extension (SEP-2640; `skills`) ----------------------------------------------

    @property
    def _skills(self) -> Skills:
        if self._skill_methods is None:
            from .skills import Skills  # noqa: PLC0415 - only clients that use skills load it

            self._skill_methods = Skills(
                self._list_all,
                functools.partial(self.request, retry_safe=True),
                self.read_resource,
                lambda: self.server_capabilities,
            )
        return self._skill_methods

    async def list_skills(self) -> list[SkillInfo]:
        """Every skill the server lists (`skills/list`), following `nextCursor` through all pages.

        Each entry names the skill's URI, its front matter and every file with its digest and
        size; nothing of the skill is fetched (`load_skill` does, when the skill is used). A
        server that does not declare the skills extension has none: the list is empty and
        nothing is sent. A listing may leave skills out: `get_skill` finds any by its URI.

        Raises:
            RequestError: when the server answers with an error.
            RemoteProtocolError: when an entry is malformed, or the cursors loop.
        """
        return await self._skills.list()

    async def get_skill(self, uri: str) -> SkillInfo:
        """The entry of the skill whose SKILL.md is at `uri` (`skills/get`).

        Raises:
            LocalProtocolError: when the server does not declare the skills extension.
            RequestError: when the server serves no such skill (-32602).
            RemoteProtocolError: when the entry is malformed.
        """
        return await self._skills.get(uri)

    async def load_skill(
        self, skill: SkillInfo | str, *, allow_dynamic: bool = False
    ) -> LoadedSkill:
        """Fetch a skill's SKILL.md and check it against its entry before handing it out.

        The file's length and SHA-256 digest must be the entry's, and its front matter the
        entry's, field by field (SEP-2640, Integrity and Verification).

        Args:
            skill: The entry (from `list_skills` or `get_skill`), or a SKILL.md URI, whose
                entry is fetched first (`skills/get`).
            allow_dynamic: Load a skill whose server publishes no digests (`"dynamic"`) too;
                only its front matter is checked then.

        Returns:
            The checked skill: its text, front matter and body, and the entry to read its
            other files with (`read_skill_file`).

        Raises:
            SkillVerificationError: the file differs from the entry (size, digest, front
                matter), or the skill is dynamic and `allow_dynamic` is False. Nothing of it
                is returned.
            LocalProtocolError: when the server does not declare the skills extension.
            RequestError: when the server refuses the read.
        """
        return await self._skills.load(skill, allow_dynamic=allow_dynamic)

    async def read_skill_file(
        self, skill: SkillInfo | LoadedSkill, path: str, *, allow_dynamic: bool = False
    ) -> ResourceContents:
        """Read one file of a skill, checked against the skill's entry.

        Args:
            skill: The entry the skill was loaded from (or the loaded skill).
            path: The file's path in the skill's folder ("references/forms.md"), or its URI.
            allow_dynamic: Read a file of a dynamic skill (no digest to check it against).

        Returns:
            The file's contents (`text`, or `blob` as bytes).

        Raises:
            SkillVerificationError: the entry does not list the file (it is not read), or
                what was read differs from the entry (size, digest).
            LocalProtocolError: when the server does not declare the skills extension.
            RequestError: when the server refuses the read.
        """
        return await self._skills.read_file(skill, path, allow_dynamic=allow_dynamic)

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
        await self._subscriptions.subscribe(uri, on_update)

    async def unsubscribe(self, uri: str) -> None:
        """Stop hearing of changes to a resource (see `subscribe`).

        Under 2026-07-28 the listen stream is opened again without the URI (or closed, when
        nothing else is wanted); it returns once the old stream has ended.

        Raises:
            RequestError: when the server refuses (handshake era).
            ConnectionClosed: when the connection has ended.
        """
        await self._subscriptions.unsubscribe(uri)

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
        self._subscriptions.on_list_changed(kind, handler)

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
            await self._asking.with_input("prompts/get", params, self._sender("prompts/get"))
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
                declare the capability; open it with `roots=[]` to set them later).
            ValueError: for a root that is not a `file://` URI.
            ConnectionClosed: when the connection has ended.
        """
        await self._asking.set_roots(roots)

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
        return await self._connection.request(
            method, params, progress=progress, retry_safe=retry_safe
        )

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (no answer is expected).

        Raises:
            ConnectionClosed: when the connection has ended.
        """
        await self._connection.notify(method, params)

    # -- the input rounds of what the server asks (`asking`) -------------------------------------

    def _sender(self, method: str) -> Send:
        async def send(body: dict[str, Any]) -> Any:
            return await self.request(method, body, retry_safe=True)

        return send

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

    def _mirror_params(self, tools: list[ToolInfo]) -> list[ToolInfo]:
        # The link learns every valid tool's headers; if it mirrors them (Streamable HTTP), a
        # tool whose annotations are invalid cannot be called as the specification requires:
        # it is left out, with a warning naming it. Over other links they mean nothing.
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
    connection = client._connection
    try:
        async with trio.open_nursery() as nursery:
            connection.nursery = nursery
            await nursery.start(connection.read)
            await connection.start()
            try:
                yield client
            finally:
                # Calls still waiting in tasks that outlive the block (another nursery's) would
                # wait forever for a reader that is gone: they fail now.
                if not client.closed:
                    connection.close("the client was closed")
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        reraise_lone(group)
