"""The tasks of MCP 2025-11-25 on the client, as requestor and as receiver.

As requestor of `tools/call`, as receiver of the server's sampling and elicitation. The wire
forms are `_features/task_utility`'s; the revision table says when they apply (`Revision.tasks`
"utility"); under 2026-07-28 the tasks extension (`tasks`) serves instead.

Rule 1: a `tools/call` asks to run as a task (`task` in its params) when the server declared
        `tasks.requests.tools.call` and the tool's `execution.taskSupport` lets it: always for a
        `required` tool (it runs no other way), for an `optional` one when the caller asks
        (`call_tool_as_task`, or a client opened with `tasks=True`). A tool the client has
        not listed yet is looked up with one `tools/list` first (`wants_task`).
Rule 2: a task is followed to its end (`follow`): `tasks/get` at the interval the server asks,
        bounded as the extension's polls are (`tasks.poll_interval`), a pushed
        `notifications/tasks/status` standing for the poll it replaces; at `input_required`
        or at a settled status, `tasks/result`, which the server holds until the task
        settles and on which it asks the task's questions (answered by the client's usual
        handlers), and whose answer is the call's: its result, or its error raised as a
        `RequestError`. A task seen `cancelled` raises `TaskCancelledError`. Whatever ends the
        following before the task settled sends `tasks/cancel`, as the extension's does.
Rule 3: a client opened with `tasks=True` declares the `tasks` capability of 2025-11-25
        (`ClientSession`) for the requests it answers (sampling, elicitation), and runs such a
        request as a task when the server asks (`task` in its params): the request is answered
        at once with `CreateTaskResult`, the handler runs in a task of the client's, and the
        server reads it with `tasks/get`, `tasks/result` (held until it settles), `tasks/list`
        and `tasks/cancel`. At most `MAX_HOSTED_TASKS` are kept, each `ttl` after it settled
        (what the server asked, at most `DEFAULT_TASK_TTL`); the client tells the server when
        one settles (`notifications/tasks/status`). A request the server did not ask to
        augment, or that the client did not declare, is answered as usual.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from ..._core.client_records import TaskInfo
from ..._core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from ..._core.versions import revision
from ..._dispatch import error_answer
from ..._exceptions import RemoteProtocolError, RequestError, TaskCancelledError, TrioMCPError
from ..._features.task_utility import (
    asked_task,
    final_result,
    page,
    support_for,
    task_info_of,
    task_wire,
)
from ..._features.tasks import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TASK_TTL,
    MemoryTaskStore,
    TaskRecord,
    TaskSupport,
    new_task_id,
)
from .connection import ServerConnection, ServerRequestHandler, call_handler
from .tasks import CANCEL_SECONDS, TaskStatusHandler, poll_interval

__all__ = ["MAX_HOSTED_TASKS", "STATUS", "UtilityTasks", "created_task", "task_support_of"]

logger = logging.getLogger("trio_mcp.client")

#: 2025-11-25's status notification (either way).
STATUS: Final = "notifications/tasks/status"
#: Tasks a client keeps for the server at once (Rule 3): more than any server runs side by
#: side, few enough that a server asking without end cannot grow the client's memory.
MAX_HOSTED_TASKS: Final = 256
#: The server requests a client runs as tasks when asked, by capability category.
_HOSTED: Final = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}
#: Tasks whose pushed state is kept until somebody follows them (Rule 2): the few a client
#: starts at once; states of tasks it never follows (another caller's) are dropped oldest first.
MAX_EARLY_STATES: Final = 64
#: Who asks for the tasks a client runs: its one server.
_SERVER: Final = "server"
#: The `tasks/` requests a server sends to a client that hosts tasks.
_TASK_REQUESTS: Final = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")


def task_support_of(tool: Mapping[str, Any] | None) -> str:
    """A listed tool's `execution.taskSupport`: "forbidden" when it says nothing."""
    execution = tool.get("execution") if tool is not None else None
    support = execution.get("taskSupport") if isinstance(execution, Mapping) else None
    return support if support in ("optional", "required") else "forbidden"


def created_task(result: Any) -> TaskInfo | None:
    """The task of a 2025-11-25 `CreateTaskResult`, or None for any other result.

    Raises:
        RemoteProtocolError: for a `task` that is no task.
    """
    if not isinstance(result, dict) or "task" not in result or "content" in result:
        return None
    return task_info_of(result["task"], "tools/call")


@dataclass(eq=False, slots=True)
class _Followed:
    """A task followed now: the last state the server pushed, not yet taken (Rule 2)."""

    state: TaskInfo | None = None
    told: trio.Event = field(default_factory=trio.Event)


@dataclass(eq=False, slots=True)
class _Hosted:
    """A request of the server's that the client runs as a task (Rule 3)."""

    record: TaskRecord
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    settled: trio.Event = field(default_factory=trio.Event)


class UtilityTasks:
    """The 2025-11-25 tasks of one client's connection (both rules' sides).

    Args:
        connection: The client's connection.
        enabled: Whether the client was opened with `tasks=True`.
    """

    def __init__(self, connection: ServerConnection, *, enabled: bool) -> None:
        self.enabled = enabled
        self._connection = connection
        self._session = connection.session
        self._followed: dict[str, _Followed] = {}
        # States pushed for tasks nobody follows yet: a task's first may come before the
        # answer that made it is read on (oldest first, bounded).
        self._early: dict[str, TaskInfo] = {}
        self._store = MemoryTaskStore(MAX_HOSTED_TASKS)
        self._hosted: dict[str, _Hosted] = {}
        #: Whether the tools were listed to learn a tool's task support (Rule 1): once.
        self.looked_up = False
        connection.notices[STATUS] = self._pushed_state
        if enabled:
            for method in _HOSTED:
                inner = connection.handlers.get(method)
                if inner is not None:
                    connection.handlers[method] = functools.partial(self._maybe_host, method, inner)
            for method in _TASK_REQUESTS:
                connection.handlers[method] = functools.partial(self._answer, method)

    @property
    def active(self) -> bool:
        """Whether the revision in use has these tasks."""
        return revision(self._session.protocol_version).tasks == "utility"

    # -- the requestor (Rules 1, 2) -----------------------------------------------------------

    def wants_task(self, tool: Mapping[str, Any] | None, *, asked: bool) -> bool:
        """Whether a call of `tool` (as listed) goes as a task (Rule 1)."""
        if not self.active or not self._server_runs_tool_tasks():
            return False
        support = task_support_of(tool)
        return support == "required" or (support == "optional" and asked)

    def offers_tasks(self) -> bool:
        """Whether the server may run tool calls as tasks in this session."""
        return self.active and self._server_runs_tool_tasks()

    def _server_runs_tool_tasks(self) -> bool:
        tasks = self._session.server_capabilities.get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, Mapping) else None
        tools = requests.get("tools") if isinstance(requests, Mapping) else None
        return isinstance(tools, Mapping) and "call" in tools

    async def follow(
        self, task: TaskInfo, on_status: TaskStatusHandler | None = None, *, cancel: bool = True
    ) -> dict[str, Any]:
        """Follow `task` to its end (Rule 2): the result object of its request.

        Raises:
            RequestError: the request's error (the task failed with it).
            TaskCancelledError: the task was cancelled.
        """
        last = [task]
        try:
            with self._following(task.task_id):
                return await self._follow(task, on_status, last)
        except BaseException:
            if cancel and not last[0].terminal:
                await self._cancel_quietly(last[0].task_id)
            raise

    async def _follow(
        self, task: TaskInfo, on_status: TaskStatusHandler | None, last: list[TaskInfo]
    ) -> dict[str, Any]:
        seen: tuple[Any, ...] | None = None

        async def tell(now: TaskInfo) -> None:
            nonlocal seen
            state = (now.status, now.status_message)
            if on_status is not None and state != seen:
                seen = state
                await call_handler(on_status, now, "a task status handler")

        while not task.terminal and task.status != "input_required":
            await tell(task)
            told = await self._pushed(task.task_id, poll_interval(task))
            task = last[0] = told if told is not None else await self.get(task.task_id)
        await tell(task)
        if task.status == "cancelled":
            raise TaskCancelledError(task.task_id, task.status_message)
        async with trio.open_nursery() as nursery:
            # While `tasks/result` is held, the states the server pushes are still told.
            async def watch() -> None:
                while True:
                    told = await self._pushed(task.task_id, MAX_WAIT_FOR_PUSH)
                    if told is not None:
                        last[0] = told
                        await tell(told)

            nursery.start_soon(watch)
            failure: Exception | None = None
            try:
                result = await self.result(task.task_id)
            except Exception as exc:  # raised below, out of the nursery: not as a group
                failure = exc
            finally:
                nursery.cancel_scope.cancel()
        if failure is not None:
            if isinstance(failure, RequestError):  # the call's own error: the task settled
                data = failure.data if isinstance(failure.data, Mapping) else {}
                if failure.code == INVALID_PARAMS and data.get("status") == "cancelled":
                    last[0] = _settled_as(last[0], "cancelled")  # cancelled meanwhile
                    raise TaskCancelledError(task.task_id) from None
                last[0] = _settled_as(last[0], "failed")
            raise failure
        last[0] = _settled_as(last[0], "completed")
        if on_status is not None and not (seen is not None and seen[0] in ("completed", "failed")):
            with contextlib.suppress(TrioMCPError):  # only for the display: the result stands
                await tell(await self.get(task.task_id))
        return result

    async def get(self, task_id: str) -> TaskInfo:
        """The task's state now (`tasks/get`)."""
        return task_info_of(await self.send("tasks/get", {"taskId": task_id}), "tasks/get")

    async def result(self, task_id: str) -> dict[str, Any]:
        """The result of the task's request (`tasks/result`: held until the task settles).

        Raises:
            RequestError: the request's error, or the server's refusal.
        """
        result = await self.send("tasks/result", {"taskId": task_id})
        if not isinstance(result, dict):
            raise RemoteProtocolError(f"malformed tasks/result result: {str(result)[:200]}")
        return result

    async def cancel(self, task_id: str) -> TaskInfo:
        """Cancel the task (`tasks/cancel`): its state, `cancelled`.

        Raises:
            RequestError: -32602 for a task that settled already, or an unknown one.
        """
        return task_info_of(await self.send("tasks/cancel", {"taskId": task_id}), "tasks/cancel")

    async def send(self, method: str, params: dict[str, Any]) -> Any:
        """Send a `tasks/` request of the requestor's."""
        # get and cancel may go twice without harm; a second tasks/result waits as the first.
        return await self._connection.request(method, params, retry_safe=True)

    async def _cancel_quietly(self, task_id: str) -> None:
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + CANCEL_SECONDS
            try:
                await self.send("tasks/cancel", {"taskId": task_id})
            except Exception as exc:
                logger.debug("could not cancel task %s: %s", task_id, exc)

    @contextlib.contextmanager
    def _following(self, task_id: str) -> Iterator[None]:
        if task_id in self._followed:  # followed twice at once: the first one takes them
            yield
            return
        followed = self._followed[task_id] = _Followed(self._early.pop(task_id, None))
        if followed.state is not None:
            followed.told.set()
        try:
            yield
        finally:
            del self._followed[task_id]

    async def _pushed(self, task_id: str, timeout: float) -> TaskInfo | None:  # noqa: ASYNC109
        followed = self._followed.get(task_id)
        if followed is None:
            await trio.sleep(timeout)
            return None
        with trio.move_on_after(timeout):
            await followed.told.wait()
        state, followed.state = followed.state, None
        followed.told = trio.Event()
        return state

    def _pushed_state(self, params: dict[str, Any]) -> None:
        try:
            state = task_info_of(params, STATUS)
        except RemoteProtocolError as exc:
            logger.debug("ignored a malformed %s: %s", STATUS, exc)
            return
        followed = self._followed.get(state.task_id)
        if followed is not None:
            followed.state = state
            followed.told.set()
            return
        self._early.pop(state.task_id, None)
        self._early[state.task_id] = state
        while len(self._early) > MAX_EARLY_STATES:
            del self._early[next(iter(self._early))]

    # -- the receiver (Rule 3) ----------------------------------------------------------------

    async def _maybe_host(
        self, method: str, inner: ServerRequestHandler, params: dict[str, Any]
    ) -> Any:
        """Answer the server's `method` request: as a task if it asks and may (Rule 3)."""
        asked = asked_task(params) if self.active and self._declares(method) else None
        if asked is None:
            return await inner(params)
        nursery = self._connection.nursery
        assert nursery is not None  # handlers run only while the session is open
        support = support_for(TaskSupport(ttl=DEFAULT_TASK_TTL), asked)
        now = time.time()
        record = TaskRecord(
            new_task_id(), now, support.ttl, DEFAULT_POLL_INTERVAL, requestor=_SERVER
        )
        if not await self._store.add(record, now):
            raise RequestError(
                f"Internal error: this client runs {MAX_HOSTED_TASKS} tasks already",
                INTERNAL_ERROR,
            )
        hosted = self._hosted[record.task_id] = _Hosted(record)
        body = {k: v for k, v in params.items() if k != "task"}
        nursery.start_soon(self._run_hosted, hosted, method, inner, body)
        return {"task": task_wire(record.detailed_wire())}

    def _declares(self, method: str) -> bool:
        tasks = self._session.declared.get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, Mapping) else None
        category = requests.get(_HOSTED[method]) if isinstance(requests, Mapping) else None
        return isinstance(category, Mapping) and bool(category)

    async def _run_hosted(
        self, hosted: _Hosted, method: str, inner: ServerRequestHandler, params: dict[str, Any]
    ) -> None:
        record = hosted.record
        try:
            with hosted.scope:
                try:
                    result = await inner(params)
                except Exception as exc:
                    error = error_answer(0, method, exc, detail=True)["error"]
                    if not record.terminal:  # a task cancelled stays cancelled
                        record.status, record.error = "failed", error
                else:
                    if not record.terminal:
                        record.status, record.result = "completed", result
        finally:
            record.updated_at = time.time()
            hosted.settled.set()
            self._hosted.pop(record.task_id, None)
        with contextlib.suppress(TrioMCPError, trio.BrokenResourceError, trio.ClosedResourceError):
            await self._connection.notify(STATUS, task_wire(record.detailed_wire()))

    async def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer the server's `tasks/` request about the tasks this client runs (Rule 3)."""
        now = time.time()
        if method == "tasks/list":
            cursor = params.get("cursor")
            if cursor is not None and not isinstance(cursor, str):
                raise RequestError('Invalid params: "cursor" must be a string', INVALID_PARAMS)
            try:
                shown, next_cursor = page(
                    await self._store.requested_by(_SERVER, now), cursor, MAX_HOSTED_TASKS
                )
            except RemoteProtocolError as exc:
                raise RequestError(exc.message, exc.code, exc.data) from None
            listed: dict[str, Any] = {"tasks": [task_wire(r.detailed_wire()) for r in shown]}
            if next_cursor is not None:
                listed["nextCursor"] = next_cursor
            return listed
        task_id = params.get("taskId")
        record = await self._store.get(task_id, now) if isinstance(task_id, str) else None
        if record is None:
            raise RequestError(
                f"Failed to retrieve task: Task not found: {task_id}",
                INVALID_PARAMS,
                {"taskId": task_id},
            )
        hosted = self._hosted.get(record.task_id)
        if method == "tasks/get":
            return task_wire(record.detailed_wire())
        if method == "tasks/result":
            if hosted is not None:
                await hosted.settled.wait()
            try:
                return final_result(record)
            except RemoteProtocolError as exc:
                raise RequestError(exc.message, exc.code, exc.data) from None
        if record.terminal or hosted is None:
            raise RequestError(
                f"Cannot cancel task {record.task_id}: already in terminal status "
                f"'{record.status}'",
                INVALID_PARAMS,
                {"taskId": record.task_id, "status": record.status},
            )
        record.status = "cancelled"
        record.updated_at = now
        hosted.scope.cancel()
        return task_wire(record.detailed_wire())


#: Seconds between two looks for a pushed state while `tasks/result` is held: only bounds the
#: wait of a watcher that is cancelled when the result comes.
MAX_WAIT_FOR_PUSH: Final = 30.0


def _settled_as(task: TaskInfo, status: str) -> TaskInfo:
    """`task` as settled, when `tasks/result` answered (its own states may lag)."""
    if task.terminal:
        return task
    return TaskInfo(task.task_id, status, raw=task.raw)
