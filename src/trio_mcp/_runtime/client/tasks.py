"""Following a task to its end: the client side of the tasks extension (SEP-2663).

Which tasks a session speaks is its revision's (`Revision.tasks`): the extension under
2026-07-28, here; 2025-11-25's own utility in `_runtime/client/task_utility`; none before. A
client opened with `tasks=True` declares the extension where the server looks for it: in the
capabilities every request carries (`ClientSession`), and in a handshake-era revision that
spoke the extension in the `_meta` capabilities of each `tools/call` and `tasks/*` request (the
per-request opt-in of SEP-2575, `opt_in`), never in `initialize`, whose schema has no
extensions. Without it a server
never makes a task of a call. A call answered with a task is followed (`follow`) with
`tasks/get`: `completed` gives the inlined result, `failed` raises its JSON-RPC error as a
`RequestError`, `cancelled` raises `TaskCancelledError`. At `input_required` every question
not answered yet is answered at once with the handlers of the input rounds (`Answers`), in one
`tasks/update`, and the next `tasks/get` follows without waiting; a task seen `input_required`
without its questions (a `CreateTaskResult` carries none) is polled at once.

`Tasks` follows the tasks of one client's connection and keeps, for each follower, the last
state the server pushed (`notifications/tasks`): in the handshake era the server sends them on
the session unasked; under 2026-07-28 the listen stream (`_runtime/client/listen`) asks for
the ids of the tasks followed, if the server announces the extension, and a follower's first
wait is for that stream's acknowledgement. A pushed state ends the wait early and stands for
the poll it replaces: a task that settles is seen as soon as the server says so.

Rule 1: polls come after each `pollIntervalMs` the server asks for, bounded to
        [`MIN_POLL_INTERVAL`, `MAX_POLL_INTERVAL`] seconds: a server cannot make a client spin,
        nor stall it past any sensible progress bar.
Rule 2: a question's key is answered once, so a poll that still shows it (the server has not
        taken the answer in yet) asks nobody twice.
Rule 3: whatever ends the following before the task settled (the caller cancelled, Ctrl-C, a
        handler's exception) sends `tasks/cancel`, under a short shielded scope, then goes on:
        the server is not left running work nobody waits for. Looking at a task
        (`Client.get_task`) never cancels it.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from ..._core.answering import InputRound, input_round
from ..._core.client_records import TaskInfo, task_info
from ..._core.client_session import ClientSession
from ..._core.meta import CAPABILITIES
from ..._core.subscriptions import TASK_STATUS
from ..._core.versions import revision
from ..._exceptions import (
    LocalProtocolError,
    RemoteProtocolError,
    RequestError,
    TaskCancelledError,
    TrioMCPError,
)
from ..._features.tasks import TASKS_EXTENSION
from ..peer import CANCEL_NOTICE_SECONDS
from .connection import ServerConnection, call_handler
from .listen import Listening, subscription_of

__all__ = [
    "DEFAULT_POLL_INTERVAL",
    "MAX_POLL_INTERVAL",
    "MIN_POLL_INTERVAL",
    "TASKS_EXTENSION",
    "PushedState",
    "TaskSender",
    "TaskStatusHandler",
    "Tasks",
    "follow",
    "is_task",
    "opt_in",
    "poll_interval",
    "settled",
]

logger = logging.getLogger("trio_mcp.client")

#: Seconds between polls when the server names no interval (the server side's default).
DEFAULT_POLL_INTERVAL: Final = 1.0
#: The shortest wait between polls: 20 polls a second is the most a server may ask of a client.
MIN_POLL_INTERVAL: Final = 0.05
#: The longest: a status (and a cancellation noticed) at least every half minute.
MAX_POLL_INTERVAL: Final = 30.0
#: Seconds a cancelled follower may spend sending `tasks/cancel` (as for `notifications/cancelled`).
CANCEL_SECONDS: Final = CANCEL_NOTICE_SECONDS

#: Sends one `tasks/*` request: `await send(method, params)` returns its `result`.
TaskSender = Callable[[str, dict[str, Any]], Awaitable[Any]]
#: Answers one round of questions: key -> answer (Rule 2).
RoundAnswerer = Callable[[InputRound], Awaitable[dict[str, Any]]]
#: Called with each new state of a task a call waits for (may be async).
TaskStatusHandler = Callable[[TaskInfo], Awaitable[None] | None]
#: Waits at most `timeout` seconds for a state of the task the server pushes: it, or None.
PushedState = Callable[[str, float], Awaitable[TaskInfo | None]]


def is_task(result: Any) -> bool:
    """Whether a `tools/call` result is a `CreateTaskResult`."""
    return isinstance(result, dict) and result.get("resultType") == "task"


def opt_in(params: dict[str, Any], session: ClientSession) -> dict[str, Any]:
    """`params` declaring the extension for this request in the handshake era.

    The request's `_meta` capabilities are those declared at `initialize` plus the extension.
    Under 2026-07-28 every request declares it already (the session's capabilities), so
    `params` come back as they are, and so they do where the revision table says the session
    does not speak the extension (`Revision.tasks`).
    """
    if session.per_request or revision(session.protocol_version).tasks != "extension":
        return params
    meta = dict(params.get("_meta") or {})
    meta[CAPABILITIES] = {**session.declared, "extensions": {TASKS_EXTENSION: {}}}
    return {**params, "_meta": meta}


def poll_interval(task: TaskInfo) -> float:
    """Seconds to wait before the next poll of `task` (Rule 1)."""
    asked = task.poll_interval
    if asked is None or not math.isfinite(asked):
        asked = DEFAULT_POLL_INTERVAL
    return min(max(asked, MIN_POLL_INTERVAL), MAX_POLL_INTERVAL)


async def get(send: TaskSender, task_id: str) -> TaskInfo:
    """The task's state now (`tasks/get`)."""
    return task_info(await send("tasks/get", {"taskId": task_id}), "tasks/get")


async def follow(
    task: TaskInfo,
    send: TaskSender,
    answer: RoundAnswerer,
    on_status: TaskStatusHandler | None = None,
    *,
    cancel: bool = True,
    pushed: PushedState | None = None,
) -> dict[str, Any]:
    """Follow `task` to its end (Rules 1-3): the `CallToolResult` object of a completed task.

    Args:
        task: The task as last seen (a `CreateTaskResult`, or a `tasks/get`).
        send: Sends a `tasks/*` request.
        answer: Answers the task's questions.
        on_status: Called with the task at the start and each time its status, status
            message or questions change.
        cancel: Send `tasks/cancel` when the following ends before the task settled.
        pushed: Waits for a state the server pushes, in place of the sleep between polls.

    Raises:
        RequestError: the task failed: its JSON-RPC error.
        TaskCancelledError: the task was cancelled.
        RemoteProtocolError: a malformed task, or a completed one without a result.
    """
    last = [task]
    try:
        return await _follow(task, send, answer, on_status, last, pushed=pushed)
    except BaseException:
        if cancel and not last[0].terminal:
            await _cancel_quietly(send, last[0].task_id)
        raise


async def _follow(
    task: TaskInfo,
    send: TaskSender,
    answer: RoundAnswerer,
    on_status: TaskStatusHandler | None,
    last: list[TaskInfo],
    *,
    pushed: PushedState | None,
) -> dict[str, Any]:
    # The loop of `follow`; `last[0]` is the task as last seen, for the cancellation.
    answered: set[str] = set()
    seen: tuple[Any, ...] | None = None
    while not task.terminal:
        state = (task.status, task.status_message, tuple(task.input_requests))
        if on_status is not None and state != seen:
            await call_handler(on_status, task, "a task status handler")
        seen = state
        waiting = {k: v for k, v in task.input_requests.items() if k not in answered}
        if task.status == "input_required" and waiting:
            round_ = input_round(
                {"resultType": "input_required", "inputRequests": waiting}, "tasks/get"
            )
            assert round_ is not None
            responses = await answer(round_)
            await send("tasks/update", {"taskId": task.task_id, "inputResponses": responses})
            answered.update(waiting)
        elif task.status == "input_required" and not task.input_requests:
            pass  # a CreateTaskResult names no questions: `tasks/get` does, now
        elif pushed is not None:
            told = await pushed(task.task_id, poll_interval(task))
            if told is not None:
                task = last[0] = told
                continue
        else:
            await trio.sleep(poll_interval(task))
        task = last[0] = await get(send, task.task_id)
    if on_status is not None:
        await call_handler(on_status, task, "a task status handler")
    if task.result is None and task.error is None and task.status != "cancelled":
        # A task created settled carries neither result nor error: tasks/get inlines them.
        task = last[0] = await get(send, task.task_id)
    return settled(task)


def settled(task: TaskInfo) -> dict[str, Any]:
    """A settled task's `CallToolResult` object.

    Raises:
        RequestError: the task failed: its JSON-RPC error.
        TaskCancelledError: the task was cancelled.
        RemoteProtocolError: a completed task without its result, a failed one without its
            error.
    """
    if task.status == "failed":
        if task.error is None:
            raise RemoteProtocolError(f"failed task {task.task_id} came without its error")
        error = task.error
        raise RequestError(str(error.get("message", "")), error["code"], error.get("data"))
    if task.status == "cancelled":
        raise TaskCancelledError(task.task_id, task.status_message)
    if task.result is None:
        raise RemoteProtocolError(f"completed task {task.task_id} came without its result")
    return task.result


async def _cancel_quietly(send: TaskSender, task_id: str) -> None:
    # Rule 3: shielded from the cancellation that brought us here, and bounded.
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + CANCEL_SECONDS
        try:
            await send("tasks/cancel", {"taskId": task_id})
        except Exception as exc:
            logger.debug("could not cancel task %s: %s", task_id, exc)
    if scope.cancelled_caught:
        logger.debug("the cancellation of task %s was not answered in time", task_id)


@dataclass(eq=False, slots=True)
class _Followed:
    """A task followed now: the last state the server pushed and nobody took yet."""

    state: TaskInfo | None = None
    told: trio.Event = field(default_factory=trio.Event)
    #: Whether a listen stream asking for it was waited for (2026-07-28).
    heard: bool = False


class Tasks:
    """The tasks one client follows, and its `tasks/*` requests.

    Args:
        connection: The client's connection.
        listening: The client's listen stream (2026-07-28).
        answer: Answers a round of a task's questions (the client's input rounds).
        enabled: Whether the client declared the extension (`open_client(tasks=True)`).
    """

    def __init__(
        self,
        connection: ServerConnection,
        listening: Listening,
        answer: RoundAnswerer,
        *,
        enabled: bool,
    ) -> None:
        self.enabled = enabled
        self._connection = connection
        self._session = connection.session
        self._listening = listening
        self._answer = answer
        #: The tasks followed now, each with the last state pushed and not yet taken.
        self.followed: dict[str, _Followed] = {}
        connection.notices[TASK_STATUS] = self._pushed_state

    def require(self, method: str) -> None:
        """Refuse `method` of a client opened without the extension.

        Raises:
            LocalProtocolError: when the client was opened without `tasks=True`.
        """
        if not self.enabled:
            raise LocalProtocolError(
                f"{method} needs the tasks extension: open the client with tasks=True"
            )

    def opt_in(self, params: dict[str, Any]) -> dict[str, Any]:
        """A `tools/call`'s params, declaring the extension if the client does."""
        return opt_in(params, self._session) if self.enabled else params

    async def follow(
        self,
        task: TaskInfo,
        on_status: TaskStatusHandler | None = None,
        *,
        cancel: bool = True,
    ) -> dict[str, Any]:
        """`follow` the task on this connection, taking the states it pushes (Rules 1-3)."""
        with self._following(task.task_id):
            return await follow(
                task, self.send, self._answer, on_status, cancel=cancel, pushed=self._pushed
            )

    async def get(self, task_id: str) -> TaskInfo:
        """The state of a task now (`tasks/get`)."""
        return await get(self.send, task_id)

    async def update(self, task_id: str, responses: Mapping[str, Any]) -> None:
        """Answer some of a task's questions (`tasks/update`)."""
        await self.send("tasks/update", {"taskId": task_id, "inputResponses": dict(responses)})

    async def cancel(self, task_id: str) -> None:
        """Ask the server to cancel a task (`tasks/cancel`)."""
        await self.send("tasks/cancel", {"taskId": task_id})

    async def send(self, method: str, params: dict[str, Any]) -> Any:
        """Send a `tasks/*` request (a `TaskSender`)."""
        # get, update and cancel may all be sent twice: an answer given twice is ignored.
        return await self._connection.request(
            method, opt_in(params, self._session), retry_safe=True
        )

    @contextlib.contextmanager
    def _following(self, task_id: str) -> Iterator[None]:
        """Take the states pushed for the task while the block runs."""
        if task_id in self.followed:  # followed twice at once: the first one takes them
            yield
            return
        self.followed[task_id] = _Followed()
        if self._session.per_request:
            self._listening.changed()
        try:
            yield
        finally:
            del self.followed[task_id]
            if self._session.per_request:
                self._listening.poke()

    async def _pushed(self, task_id: str, timeout: float) -> TaskInfo | None:  # noqa: ASYNC109
        """The task's state the server pushed within `timeout` seconds, if any."""
        followed = self.followed.get(task_id)
        if followed is None:
            await trio.sleep(timeout)
            return None
        if not followed.heard and self._session.per_request and self._listening.opened:
            # Under 2026-07-28, first the listen stream that asks for it: what the task did
            # before its acknowledgement was told to nobody, so a poll follows it at once.
            followed.heard = True
            with trio.move_on_after(timeout):
                try:
                    await self._listening.settled()
                except TrioMCPError as exc:
                    logger.debug("task %s is polled only: %s", task_id, exc)
                    await trio.sleep_forever()  # until the poll is due
            return None
        with trio.move_on_after(timeout):
            await followed.told.wait()
        state, followed.state = followed.state, None
        followed.told = trio.Event()
        return state

    def _pushed_state(self, params: dict[str, Any]) -> None:
        if not self._listening.delivers(subscription_of(params)):
            return
        try:
            state = task_info(params, TASK_STATUS)
        except RemoteProtocolError as exc:
            logger.debug("ignored a malformed %s: %s", TASK_STATUS, exc)
            return
        followed = self.followed.get(state.task_id)
        if followed is not None:
            followed.state = state
            followed.told.set()
