"""Running tool calls as tasks: the trio side of the tasks extension.

`_features/tasks` holds the records, the stores and the wire forms; this module runs the work.
`TaskRuntime` is the server's `TaskEngine`: it starts a call that may become a task in a worker
of its own, makes it a task at the first of the call's end, its `after` delay or the tool's
`Context.become_task`, keeps the task's record in the store while the worker runs, answers
`tasks/get`, `tasks/update` and `tasks/cancel`, and tells each new state to `on_status` (which
the server turns into `notifications/tasks` for whoever listens, on any worker).

Workers run in the widest nursery there is: the server's task host (`TaskRuntime.host`, run
beside an HTTP server), or else the nursery the connection serving the call lends (`lend`, set
by `Server.serve_connection`), whose end stops its workers; where neither exists the call
simply runs to its end (a server may always answer at once), as it does when the store has no
room (warned of at most once per `FULL_WARNING_INTERVAL`). A task's questions wait in
`inputRequests`, a key each, until `tasks/update` answers them or the ask's timeout passes
(`ClientTimeoutError` in the tool). In a store shared by a fleet (`_features/tasks` Rule 2) a
record names its runtime (`worker_id`) and a lease the worker renews every third of the
store's `lease`; a `tasks/get` on any worker settles `failed` a live task whose lease ran out
(its worker died), unless it runs there.

Rule 1: a task's record is stored *before* its `CreateTaskResult` is answered, so a
        `tasks/get` right after it finds the task; a request cancelled before that cancels
        its worker.
Rule 2: the worker is the only writer of its task's record, apart from `tasks/cancel`, which
        settles it `cancelled` at once, and the server's shutdown (`stop_all`), which settles
        it `failed` ("Server shutting down") while sessions and streams can still be told;
        either then cancels the worker, whose outcome no longer counts. A settled record is
        final: a worker whose write the store refuses (the task was settled elsewhere) stops
        its work, and one stopped from outside otherwise (its host or connection ended)
        settles its record `failed` itself.
Rule 3: an answer is delivered once or refused, never dropped. `tasks/update` for a task
        another worker runs puts the answers in the store's mailbox, which that worker reads
        while the task has questions open (every `MAIL_POLL` seconds, and at once on a
        `signal` through the broker), or refuses them with -32603 when the store has no
        mailbox or it is full. `tasks/cancel` there signals the worker too.
Rule 4: each new state of a task run here is told by one announcer, in order, never the same
        state twice: a change of status or questions at once, of the status message alone at
        most once per poll interval (a tool reporting every step floods no one). A settled
        state is told once, by whoever settled it.
Rule 5: a task belongs to the principal of the call that made it (`_features/tasks` Rule 5):
        `get`, `update` and `cancel` for another principal find nothing, as for an unknown id,
        and a told state names its principal (`StatusSink`), so only that principal hears it.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import math
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from .._core.asking import ASK_METHODS
from .._core.auth import Principal
from .._core.jsonrpc import INTERNAL_ERROR, SERVER_UNAVAILABLE
from .._exceptions import ClientTimeoutError, RemoteProtocolError, RequestError, reraise_lone
from .._features.context import AskWire, Context
from .._features.tasks import (
    CallBody,
    MemoryTaskStore,
    TaskLister,
    TaskMailbox,
    TaskRecord,
    TaskStore,
    TaskSupport,
    new_task_id,
)

__all__ = [
    "MAIL_POLL",
    "MAX_WAIT",
    "MIN_WAIT",
    "QuestionSender",
    "StatusSink",
    "TaskRuntime",
    "TaskSignal",
]

logger = logging.getLogger("trio_mcp")

#: The nursery of the connection serving the current request, when one lends it (`lend`).
_LENT: Final[ContextVar[trio.Nursery | None]] = ContextVar("trio_mcp_task_nursery", default=None)
#: Seconds a settling worker may spend writing its record after it was cancelled.
_SETTLE_SECONDS: Final = 5.0
#: Seconds between two looks in the mailbox of a task with questions open (Rule 3), when no
#: signal says mail came: answers through a worker without a broker wait at most this long.
MAIL_POLL: Final = 1.0
#: Seconds between two looks of a `tasks/result` at a task another worker runs, at the least
#: and at the most, whatever poll interval the task names: as a client's polls are bounded.
MIN_WAIT: Final = 0.05
MAX_WAIT: Final = 30.0
#: The status message of a task the server stopped as it shut down (Rule 2).
SHUTTING_DOWN: Final = "Server shutting down"
#: Seconds between two warnings that the task store is full: a busy server refusing
#: every call would otherwise log one line per call.
FULL_WARNING_INTERVAL: Final = 60.0

#: Told each new state of a task (Rule 4): its `DetailedTask`, as `tasks/get` shows it, and
#: whose task it is (Rule 5: None, anyone's).
StatusSink = Callable[[dict[str, Any], Principal | None], Awaitable[None]]
#: Asks the requestor one of a task's questions (2025-11-25): (method, params) -> the answer.
QuestionSender = Callable[[str, dict[str, Any]], Awaitable[Any]]
#: Tells the worker running a task that mail came or that it was cancelled (Rule 3):
#: `{"taskId": ..., "owner": ..., "kind": "answers" | "cancel"}`.
TaskSignal = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(eq=False, slots=True)
class _Question:
    answered: trio.Event = field(default_factory=trio.Event)
    answer: Any = None
    #: The requestor's error answer (2025-11-25: the question went as a request), raised in
    #: the tool as the handshake era's requests raise it.
    error: Exception | None = None


@dataclass(eq=False, slots=True)
class _Call:
    """One call that may become a task, while its worker runs in this process."""

    support: TaskSupport
    context: Context | None
    #: Whose task it becomes (Rule 5).
    principal: Principal | None = None
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    lock: trio.Lock = field(default_factory=trio.Lock)
    #: Set when the call ended or became a task.
    changed: trio.Event = field(default_factory=trio.Event)
    #: Set when the call ended (the lease is no longer renewed).
    ended: trio.Event = field(default_factory=trio.Event)
    record: TaskRecord | None = None
    done: bool = False
    result: dict[str, Any] | None = None
    error: RemoteProtocolError | None = None
    cancelled: bool = False
    questions: dict[str, _Question] = field(default_factory=dict)
    #: Where its announcer and mail reader run (Rules 3, 4).
    nursery: trio.Nursery | None = None
    #: Called with the task's id when the call becomes one.
    created: Callable[[str], None] | None = None
    #: Set at each change of the record (Rule 4); replaced by the announcer.
    dirty: trio.Event = field(default_factory=trio.Event)
    #: Set when mail may have come, or a question opened (Rule 3); replaced by the reader.
    mail: trio.Event = field(default_factory=trio.Event)
    #: Held while a state is told, so states are told in order (Rule 4).
    telling: trio.Lock = field(default_factory=trio.Lock)
    #: The tool's OAuth scopes, for its record.
    scopes: tuple[str, ...] = ()
    #: The tool called, for messages.
    tool: str = ""
    #: The store had no room for it: it runs to its end, and is not offered again.
    refused: bool = False
    #: Who asked for it (2025-11-25 tasks), for its record.
    requestor: str | None = None
    #: Set and replaced at each change of the record and when the call ends (`_wake`): what a
    #: 2025-11-25 `tasks/result` waits on.
    moved: trio.Event = field(default_factory=trio.Event)
    #: The questions a `tasks/result` is asking now (2025-11-25), each with its scope.
    asking: dict[str, trio.CancelScope] = field(default_factory=dict)


class TaskRuntime:
    """The server's `TaskEngine`: runs calls that may become tasks and answers for the tasks.

    Args:
        store: Where records live (default: a bounded in-memory store).
        clock: Wall-clock seconds, for the records' times and expiry.
    """

    def __init__(
        self, store: TaskStore | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.clock = clock
        self._live: dict[str, _Call] = {}
        self._host: trio.Nursery | None = None
        self._keys = itertools.count(1)
        #: Names this runtime in the records of the tasks it runs, as their lease's holder.
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        #: Told each new state of a task (Rule 4); set by the server.
        self.on_status: StatusSink | None = None
        #: Signals the worker running a task (Rule 3); set by a server with a broker.
        self.signal: TaskSignal | None = None
        # The last warning of a full store (trio time), and the refusals not warned of since.
        self._full_warned: float | None = None
        self._full_unwarned = 0

    @property
    def live_count(self) -> int:
        """Tasks whose worker runs in this process now."""
        return len(self._live)

    # -- where workers run -----------------------------------------------------------------------

    async def host(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host task workers until cancelled (run beside an HTTP server); they end with it."""
        async with trio.open_nursery() as nursery:
            self._host = nursery
            try:
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._host = None
                nursery.cancel_scope.cancel()

    @staticmethod
    @contextlib.contextmanager
    def lend(nursery: trio.Nursery) -> Iterator[None]:
        """Let calls started in this block (their tasks inherit it) run workers in `nursery`."""
        token = _LENT.set(nursery)
        try:
            yield
        finally:
            _LENT.reset(token)

    def _nursery(self) -> trio.Nursery | None:
        return self._host if self._host is not None else _LENT.get()

    # -- TaskEngine ------------------------------------------------------------------------------

    async def run(
        self,
        support: TaskSupport,
        body: CallBody,
        context: Context | None,
        *,
        created: Callable[[str], None] | None = None,
        principal: Principal | None = None,
        scopes: Iterable[str] = (),
        tool: str = "",
        requestor: str | None = None,
        asked: Callable[[TaskRecord], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Run a call that may become a task (Rule 1): its result or its `CreateTaskResult`.

        `created` is called with the task's id when the call becomes one, before any of its
        states is told (Rule 4); the task belongs to `principal` (Rule 5), and `scopes` (the
        tool's) are kept in its record; `tool` (its name) is for messages.

        A task the requestor asked for (2025-11-25) is its `requestor`'s alone, and `asked`
        makes its `CreateTaskResult`, of the task as it was made (`working`); such a call is
        a task from the start (`support.after` 0) or is refused, -32603, before anything ran:
        its request may not be answered with the call's own result.
        """
        nursery = self._nursery()
        if nursery is None:
            if asked is not None:
                raise RemoteProtocolError(
                    "Internal error: this server cannot run tasks here", INTERNAL_ERROR
                )
            return await body()
        call = _Call(
            support,
            context,
            principal,
            nursery=nursery,
            created=created,
            scopes=tuple(scopes),
            tool=tool,
            requestor=requestor,
        )
        if context is not None:
            context._detacher = functools.partial(self._detach, call)
        # Before the worker starts: its first question is a task's.
        if support.after == 0 and not await self._detach(call) and asked is not None:
            raise RemoteProtocolError(
                "Internal error: the task store is full; try again later", INTERNAL_ERROR
            )
        made = asked(call.record) if asked is not None and call.record is not None else None
        nursery.start_soon(self._work, call, body)
        nursery.start_soon(self._keep_lease, call)
        try:
            with trio.move_on_after(math.inf if support.after is None else support.after):
                await call.changed.wait()
            if not call.done and not await self._detach(call):
                await call.changed.wait()  # no room for a task: the call runs to its end
            while call.record is None and not call.done:
                await call.changed.wait()
        except BaseException:
            if call.record is None:
                call.scope.cancel()  # the request went away before the call became a task
            raise
        if made is not None:
            return made
        if call.record is not None:
            return call.record.created_wire()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

    async def get(
        self, task_id: str, *, principal: Principal | None = None, requestor: str | None = None
    ) -> TaskRecord | None:
        """The task's record, or None for an unknown or expired id; a dead worker's `failed`.

        Another principal's task is None too (Rule 5), and so is another requestor's.
        """
        now = self.clock()
        record = await self.store.get(task_id, now)
        if record is None or not record.visible_to(principal, requestor):
            return None
        if not record.lease_lapsed(now) or task_id in self._live:
            return record
        # Its worker stopped renewing its lease: it died, or lost the store for a whole lease.
        record.settle_lapsed(now)
        if not await self.store.save(record):  # settled meanwhile, elsewhere: that stands
            return await self.store.get(task_id, now)
        await self._tell(record)
        return record

    async def update(
        self,
        task_id: str,
        responses: Mapping[str, Any],
        *,
        principal: Principal | None = None,
    ) -> bool:
        """Answer the task's open questions by key (Rule 3); False for an unknown task.

        Another principal's task is unknown (Rule 5).

        Raises:
            RemoteProtocolError: -32603 when the task runs on another worker and its answers
                cannot reach it (the store has no mailbox, or the task's is full).
        """
        call = self._live.get(task_id)
        if call is not None and call.record is not None and call.record.visible_to(principal):
            await self._answer(call, responses)
            return True
        record = await self.get(task_id, principal=principal)
        if record is None:
            return False
        if record.terminal or not responses or record.owner in (None, self.worker_id):
            return True  # nothing waits for them: it settled, or its worker here just ended
        mailbox = self.store if isinstance(self.store, TaskMailbox) else None
        if mailbox is None:
            raise RemoteProtocolError(
                f"Internal error: task {task_id} runs on another worker, and this server's "
                "task store cannot carry answers to it",
                INTERNAL_ERROR,
                {"taskId": task_id},
            )
        if not await mailbox.post_answers(task_id, dict(responses), self.clock()):
            raise RemoteProtocolError(
                f"Internal error: too many answers for task {task_id} wait for the worker "
                "running it; send them again later",
                INTERNAL_ERROR,
                {"taskId": task_id},
            )
        await self._signal(record, "answers")
        return True

    async def cancel(
        self, task_id: str, *, principal: Principal | None = None, requestor: str | None = None
    ) -> bool:
        """Settle a running task `cancelled` and stop its worker (Rules 2, 3); False: unknown.

        Another principal's task is unknown (Rule 5), and so is another requestor's.
        """
        record = await self.get(task_id, principal=principal, requestor=requestor)
        if record is None:
            return False
        if record.terminal:
            return True
        call = self._live.get(task_id)
        async with call.telling if call is not None else trio.Lock():
            record.status = "cancelled"
            record.input_requests.clear()
            record.updated_at = self.clock()
            if not await self._save(record):
                return True  # settled meanwhile, elsewhere: that stands, and was told
            await self._tell(record)
        call = self._live.pop(task_id, None)
        if call is not None:
            call.cancelled = True
            call.scope.cancel()
        elif record.owner not in (None, self.worker_id):
            await self._signal(record, "cancel")
        return True

    # -- the 2025-11-25 tasks: tasks/result and tasks/list ------------------------------------

    async def settled(
        self,
        task_id: str,
        *,
        principal: Principal | None = None,
        requestor: str | None = None,
        ask: QuestionSender | None = None,
    ) -> TaskRecord | None:
        """Wait until the task settles: its settled record; None for no such task (`get`).

        What a 2025-11-25 `tasks/result` waits for. While the task runs here its open
        questions are asked through `ask` (the waiting request's stream), each by one waiter
        at a time: the answer goes to the question as `tasks/update` would give it, an error
        answer is raised in the tool, and a question a waiter left unanswered (it went away)
        is asked again by the next. A task another worker runs is looked at every poll
        interval it names (bounded to [`MIN_WAIT`, `MAX_WAIT`]).
        """
        try:
            async with trio.open_nursery() as nursery:
                try:
                    return await self._settled(task_id, principal, requestor, ask, nursery)
                finally:
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # a question that could not be sent: as itself
            reraise_lone(group)
            raise  # pragma: no cover - reraise_lone always raises

    async def _settled(
        self,
        task_id: str,
        principal: Principal | None,
        requestor: str | None,
        ask: QuestionSender | None,
        nursery: trio.Nursery,
    ) -> TaskRecord | None:
        while True:
            call = self._live.get(task_id)
            wake = call.moved if call is not None else None
            record = await self.get(task_id, principal=principal, requestor=requestor)
            if record is None or record.terminal:
                return record
            if call is not None and call.record is not None and ask is not None:
                self._ask_open(call, call.record, ask, nursery)
            with trio.move_on_after(min(max(record.poll_interval, MIN_WAIT), MAX_WAIT)):
                if wake is not None:
                    await wake.wait()
                else:
                    await trio.sleep_forever()

    def _ask_open(
        self, call: _Call, record: TaskRecord, ask: QuestionSender, nursery: trio.Nursery
    ) -> None:
        for key, scope in list(call.asking.items()):
            if key not in record.input_requests:  # it timed out in the tool: stop asking
                scope.cancel()
        for key, question in list(record.input_requests.items()):
            if key not in call.asking:
                scope = call.asking[key] = trio.CancelScope()
                nursery.start_soon(self._put, call, key, question, ask, scope)

    async def _put(
        self,
        call: _Call,
        key: str,
        question: Mapping[str, Any],
        ask: QuestionSender,
        scope: trio.CancelScope,
    ) -> None:
        """Ask one open question through a waiter's stream; its answer to the task."""
        answered = False
        try:
            with scope:
                try:
                    answer = await ask(question["method"], dict(question.get("params") or {}))
                except (RequestError, RemoteProtocolError) as exc:
                    waiting = call.questions.get(key)
                    if waiting is not None and not waiting.answered.is_set():
                        waiting.error = exc
                        waiting.answered.set()
                    answered = True
                else:
                    await self._answer(call, {key: answer})
                    answered = True
        finally:
            if call.asking.get(key) is scope:
                del call.asking[key]
            if not answered:
                self._wake(call)  # another waiter may ask it now

    async def listed(
        self, requestor: str, *, principal: Principal | None = None
    ) -> list[TaskRecord]:
        """The requestor's tasks (2025-11-25 `tasks/list`), a dead worker's shown `failed`.

        Raises:
            RemoteProtocolError: -32603 when the store cannot list tasks (`TaskLister`).
        """
        if not isinstance(self.store, TaskLister):
            raise RemoteProtocolError(
                "Internal error: this server's task store cannot list tasks", INTERNAL_ERROR
            )
        now = self.clock()
        found = []
        for stored in await self.store.requested_by(requestor, now):
            record: TaskRecord | None = stored
            if not stored.visible_to(principal, requestor):
                continue
            if stored.lease_lapsed(now) and stored.task_id not in self._live:
                record = await self.get(stored.task_id, principal=principal, requestor=requestor)
            if record is not None:
                found.append(record)
        return found

    async def stop_all(self, where: trio.Nursery | None = None) -> int:
        """Settle the tasks running here `failed`, "Server shutting down", and stop them (Rule 2).

        For the server's shutdown, before its sessions and streams end: each task's record is
        saved settled (in a shared store too: other workers and a later `tasks/get` see why it
        ended), its final state told (Rule 4), and then its work cancelled.

        Args:
            where: Only the tasks whose workers run in this nursery (a connection's, `lend`);
                None: every task running in this process.

        Returns:
            How many tasks were settled.
        """
        calls = [
            call for call in list(self._live.values()) if where is None or call.nursery is where
        ]
        async with trio.open_nursery() as nursery:
            for call in calls:
                nursery.start_soon(self._stop_for_shutdown, call)
        return len(calls)

    async def _stop_for_shutdown(self, call: _Call) -> None:
        record = call.record
        assert record is not None
        try:
            async with call.telling:
                if record.terminal or self._live.get(record.task_id) is not call:
                    return  # settled meanwhile, and told by whoever settled it
                record.status = "failed"
                record.status_message = SHUTTING_DOWN
                record.error = {
                    "code": SERVER_UNAVAILABLE,
                    "message": f"{SHUTTING_DOWN}: the task was stopped before it finished",
                }
                record.input_requests.clear()
                record.updated_at = self.clock()
                if await self._save(record):
                    await self._tell(record)
        except RemoteProtocolError as exc:  # the store is out of reach: the lease path remains
            logger.warning("could not settle task %s at shutdown: %s", record.task_id, exc)
        finally:
            if self._live.get(record.task_id) is call:
                del self._live[record.task_id]
            call.cancelled = True  # its outcome no longer counts
            call.scope.cancel()

    async def signalled(self, payload: Mapping[str, Any]) -> None:
        """Act on a signal another worker sent about a task run here (Rule 3)."""
        task_id = payload.get("taskId")
        call = self._live.get(task_id) if isinstance(task_id, str) else None
        if call is None or call.record is None:
            return
        if payload.get("kind") == "answers":
            call.mail.set()
        elif payload.get("kind") == "cancel":
            try:
                stored = await self.store.get(call.record.task_id, self.clock())
            except RemoteProtocolError:  # the store is unreachable: the lease path remains
                return
            if stored is None or stored.terminal:  # as the signal says: it settled there
                self._stop(call.record.task_id)

    async def _answer(self, call: _Call, responses: Mapping[str, Any]) -> None:
        record = call.record
        assert record is not None
        for key, answer in responses.items():
            question = call.questions.get(key)
            if question is None or question.answered.is_set():
                continue
            question.answer = answer
            question.answered.set()
            record.input_requests.pop(key, None)
        if record.status == "input_required" and not record.input_requests:
            record.status = "working"
        await self._touch(record)

    async def _signal(self, record: TaskRecord, kind: str) -> None:
        if self.signal is not None:
            await self.signal({"taskId": record.task_id, "owner": record.owner, "kind": kind})

    # -- the worker ------------------------------------------------------------------------------

    async def _work(self, call: _Call, body: CallBody) -> None:
        result: dict[str, Any] | None = None
        error: RemoteProtocolError | None = None
        try:
            with call.scope:
                try:
                    result = await body()
                except RemoteProtocolError as exc:
                    error = exc
                except Exception:
                    logger.exception("a task's call failed")
                    error = RemoteProtocolError(
                        "Internal error while running the task", INTERNAL_ERROR
                    )
        finally:
            with trio.move_on_after(_SETTLE_SECONDS) as settling:
                settling.shield = True
                await self._settle(call, result, error)

    async def _settle(
        self, call: _Call, result: dict[str, Any] | None, error: RemoteProtocolError | None
    ) -> None:
        async with call.lock:
            call.done = True
            call.result = result
            call.error = error
            record = call.record
        call.changed.set()
        call.ended.set()
        if record is None:
            return
        self._live.pop(record.task_id, None)
        try:
            await self._settle_record(call, record, result, error)
        finally:
            self._wake(call)

    async def _settle_record(
        self,
        call: _Call,
        record: TaskRecord,
        result: dict[str, Any] | None,
        error: RemoteProtocolError | None,
    ) -> None:
        if record.terminal or call.cancelled:
            return
        if error is not None:
            record.status = "failed"
            record.error = {"code": error.code, "message": error.message}
            if error.data is not None:
                record.error["data"] = error.data
        elif result is None:
            record.status = "failed"
            record.error = {
                "code": INTERNAL_ERROR,
                "message": "The task's worker stopped before the task finished",
            }
        elif result.get("resultType") == "input_required":
            record.status = "failed"
            record.error = {
                "code": INTERNAL_ERROR,
                "message": "The task ended at a question it could no longer ask",
            }
        else:
            record.status = "completed"
            record.result = {k: v for k, v in result.items() if k != "resultType"}
        record.input_requests.clear()
        async with call.telling:
            record.updated_at = self.clock()
            if await self._save(record):
                await self._tell(record)

    async def _detach(self, call: _Call) -> bool:
        """Make the call a task (Rule 1); False when it already ended or the store is full."""
        async with call.lock:
            if call.record is not None:
                return True
            if call.done or call.refused:
                return False
            now = self.clock()
            record = TaskRecord(
                new_task_id(),
                now,
                call.support.ttl,
                call.support.poll_interval,
                owner=self.worker_id,
                lease_until=now + self.store.lease,
                principal=call.principal,
                scopes=call.scopes,
                requestor=call.requestor,
            )
            if not await self.store.add(record, now):
                call.refused = True
                self._warn_full(call)
                return False
            call.record = record
            self._live[record.task_id] = call
            if call.created is not None:
                call.created(record.task_id)
            if call.nursery is not None:  # told from here on: what the CreateTaskResult says
                call.nursery.start_soon(self._attend, call, _shown(record))
            if call.context is not None:
                call.context._run_as_task(
                    functools.partial(self._ask, call),
                    functools.partial(self._status, call),
                    functools.partial(self._ask_many, call),
                )
        call.changed.set()
        return True

    def _warn_full(self, call: _Call) -> None:
        """One warning per refused call, at most one per `FULL_WARNING_INTERVAL`."""
        now = trio.current_time()
        if self._full_warned is not None and now - self._full_warned < FULL_WARNING_INTERVAL:
            self._full_unwarned += 1
            return
        tool = call.tool or (call.context.tool_name if call.context is not None else "a tool")
        limit = getattr(self.store, "max_tasks", None)
        held = f" (max_tasks={limit})" if isinstance(limit, int) else ""
        also = (
            f"; {self._full_unwarned} more call(s) ran to their end since the last warning"
            if self._full_unwarned
            else ""
        )
        logger.warning(
            "the task store is full%s: the call of %r runs to its end instead of becoming a task%s",
            held,
            tool,
            also,
        )
        self._full_warned, self._full_unwarned = now, 0

    async def _ask(
        self,
        call: _Call,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Any:
        """A task's question: waits in `inputRequests` for `tasks/update`."""
        return (await self._ask_many(call, [(method, params or {}, timeout)]))[0]

    async def _ask_many(self, call: _Call, asks: Sequence[AskWire]) -> list[Any]:
        """Several questions, open at once (`Context.gather`); their answers, in order."""
        record = call.record
        assert record is not None
        if record.terminal:  # settled by another worker, through a shared record (Rule 2)
            self._stop(record.task_id)
            await trio.lowlevel.checkpoint()  # raises Cancelled: the call's scope is cancelled
        keys = []
        for method, params, _ in asks:
            key = f"{ASK_METHODS.get(method, 'input')}-{next(self._keys)}"
            call.questions[key] = _Question()
            record.input_requests[key] = {"method": method, "params": params}
            keys.append(key)
        record.status = "input_required"
        await self._touch(record)
        call.mail.set()  # a question is open: the mailbox is worth a look (Rule 3)
        answers = []
        try:
            for key, (method, _, timeout) in zip(keys, asks, strict=True):
                question = call.questions[key]
                try:
                    with trio.fail_after(math.inf if timeout is None else timeout):
                        await question.answered.wait()
                except trio.TooSlowError:
                    raise ClientTimeoutError(method, timeout or 0.0) from None
                if question.error is not None:
                    raise question.error
                answers.append(question.answer)
        finally:
            opened = False
            for key in keys:
                call.questions.pop(key, None)
                opened |= record.input_requests.pop(key, None) is not None
            if opened and not record.terminal:
                if not record.input_requests:
                    record.status = "working"
                with trio.CancelScope(shield=True):
                    await self._touch(record)
        return answers

    async def _status(self, call: _Call, message: str) -> None:
        record = call.record
        if record is not None and not record.terminal:
            record.status_message = message
            await self._touch(record)

    async def _touch(self, record: TaskRecord) -> None:
        record.updated_at = self.clock()
        await self._save(record)
        call = self._live.get(record.task_id)
        if call is not None:
            call.dirty.set()  # its announcer tells the new state (Rule 4)
            self._wake(call)

    @staticmethod
    def _wake(call: _Call) -> None:
        """Wake whoever waits for the call's next change (a 2025-11-25 `tasks/result`)."""
        moved, call.moved = call.moved, trio.Event()
        moved.set()

    async def _save(self, record: TaskRecord) -> bool:
        if not await self.store.save(record):
            self._stop(record.task_id)  # the store holds it settled (Rule 2)
            return False
        return True

    async def _tell(self, record: TaskRecord) -> None:
        """Tell the task's state now (Rule 4); a sink's failure costs the task nothing."""
        if self.on_status is None:
            return
        wire = record.detailed_wire()
        del wire["resultType"]
        try:
            await self.on_status(wire, record.principal)
        except Exception:
            logger.exception("telling the status of task %s failed", record.task_id)

    async def _attend(self, call: _Call, told: tuple[Any, ...]) -> None:
        """Run the task's announcer and mail reader until its call ends (Rules 3, 4)."""
        mailbox = self.store if isinstance(self.store, TaskMailbox) else None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._announce, call, told)
            if mailbox is not None:
                nursery.start_soon(self._read_mail, call, mailbox)
            await call.ended.wait()
            nursery.cancel_scope.cancel()

    async def _announce(self, call: _Call, told: tuple[Any, ...]) -> None:
        """Tell each new state of a live task after `told`, status changes at once (Rule 4)."""
        record = call.record
        assert record is not None
        told_at = -math.inf
        while not record.terminal:
            call.dirty = trio.Event()  # before looking: a change from now on wakes us
            shown = _shown(record)
            if shown == told:
                await call.dirty.wait()
                continue
            quiet_until = told_at + record.poll_interval
            if shown[::2] == told[::2] and trio.current_time() < quiet_until:
                with trio.move_on_at(quiet_until):  # only the message changed: not yet
                    await call.dirty.wait()
                continue
            async with call.telling:
                if record.terminal:  # told by whoever settled it
                    return
                told, told_at = _shown(record), trio.current_time()
                await self._tell(record)

    async def _read_mail(self, call: _Call, mailbox: TaskMailbox) -> None:
        """Take the answers other workers left for the task, and apply them (Rule 3)."""
        record = call.record
        assert record is not None
        while True:
            call.mail = trio.Event()
            if call.questions:
                with trio.move_on_after(MAIL_POLL):
                    await call.mail.wait()
            else:
                await call.mail.wait()
            for responses in await mailbox.take_answers(record.task_id):
                if not record.terminal:
                    await self._answer(call, responses)

    async def _keep_lease(self, call: _Call) -> None:
        """Renew the task's lease while its call runs."""
        lease = self.store.lease
        while True:
            with trio.move_on_after(lease / 3):
                await call.ended.wait()
                return
            record = call.record
            if record is None:
                continue
            if record.terminal:  # settled by another worker, through a shared record
                self._stop(record.task_id)
                return
            record.lease_until = self.clock() + lease
            await self._save(record)

    def _stop(self, task_id: str) -> None:
        """Cancel the work of a task that was settled elsewhere (Rule 2)."""
        call = self._live.pop(task_id, None)
        if call is not None:
            logger.info("task %s was settled by another worker; its work here stops", task_id)
            call.cancelled = True
            call.scope.cancel()


def _shown(record: TaskRecord) -> tuple[Any, ...]:
    """What a status notification would say that the last one did not (Rule 4)."""
    return (record.status, record.status_message, tuple(record.input_requests))
