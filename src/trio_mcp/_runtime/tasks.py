"""Running tool calls as tasks: the trio side of the tasks extension (`_features/tasks`).

Rule 1: a call that may become a task runs in a worker of its own from the start, in the
        widest nursery there is: the server's task host (`TaskRuntime.host`, run beside an
        HTTP server) or else the nursery of the connection serving the call (`lend`, set by
        `Server.serve_connection`), whose end stops its workers. Where neither exists the call
        simply runs to its end (a server may always answer at once).
Rule 2: the request waits for the first of: the call's end (its own result, or its
        input-required round, answered as usual), its `after` delay, or the tool's
        `Context.become_task`. At the latter two the record is stored *before* the
        `CreateTaskResult` is answered, so a `tasks/get` right after it finds the task. A
        request cancelled before that cancels its worker.
Rule 3: a task's questions are minted a key each and wait in `inputRequests` until
        `tasks/update` answers them (each key alone; unknown keys are ignored), or until the
        ask's timeout (`ClientTimeoutError` in the tool). The task is `input_required` while
        any is open.
Rule 4: the worker is the only writer of its record, apart from `tasks/cancel`, which settles
        it `cancelled` at once and then cancels the worker, whose outcome no longer counts. A
        worker stopped from outside (its host or connection ended) settles it `failed`.
Rule 5: a store may be shared by a fleet's workers (tasks Rule 5). A task's record names this
        runtime (`worker_id`) and its lease, renewed every third of the store's `lease` while
        the task runs. `tasks/get`, on any worker, settles `failed` a live task whose lease ran
        out (its worker died without settling it), unless the task runs here. `tasks/cancel`
        of a task another worker runs settles it `cancelled` in the store; that worker learns
        at its next write or renewal, when the store refuses to write over the settled record,
        and then cancels the work (as it does when others took its lease to have run out).
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from .._core.asking import ASK_METHODS
from .._core.jsonrpc import INTERNAL_ERROR
from .._exceptions import ClientTimeoutError, RemoteProtocolError
from .._features.context import AskWire, Context
from .._features.tasks import (
    CallBody,
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
    TaskSupport,
    new_task_id,
)

__all__ = ["TaskRuntime"]

logger = logging.getLogger("trio_mcp")

#: The nursery of the connection serving the current request, when one lends it (Rule 1).
_LENT: Final[ContextVar[trio.Nursery | None]] = ContextVar("trio_mcp_task_nursery", default=None)
#: Seconds a settling worker may spend writing its record after it was cancelled.
_SETTLE_SECONDS: Final = 5.0


@dataclass(eq=False, slots=True)
class _Question:
    answered: trio.Event = field(default_factory=trio.Event)
    answer: Any = None


@dataclass(eq=False, slots=True)
class _Call:
    """One call that may become a task, while its worker runs in this process."""

    support: TaskSupport
    context: Context | None
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
        #: Names this runtime in the records of the tasks it runs (Rule 5).
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"

    @property
    def live_count(self) -> int:
        """Tasks whose worker runs in this process now."""
        return len(self._live)

    # -- where workers run (Rule 1) --------------------------------------------------------------

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
        self, support: TaskSupport, body: CallBody, context: Context | None
    ) -> dict[str, Any]:
        """Run a call that may become a task (Rule 2): its result or its `CreateTaskResult`."""
        nursery = self._nursery()
        if nursery is None:
            return await body()
        call = _Call(support, context)
        if context is not None:
            context._detacher = functools.partial(self._detach, call)
        if support.after == 0:
            await self._detach(call)  # before the worker starts: its first question is a task's
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
        if call.record is not None:
            return call.record.created_wire()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task's record, or None for an unknown or expired id; a dead worker's `failed`."""
        now = self.clock()
        record = await self.store.get(task_id, now)
        if record is None or not record.lease_lapsed(now) or task_id in self._live:
            return record
        # Its worker stopped renewing (Rule 5): it died, or lost the store for a whole lease.
        record.settle_lapsed(now)
        if not await self.store.save(record):  # settled meanwhile, elsewhere: that stands
            return await self.store.get(task_id, now)
        return record

    async def update(self, task_id: str, responses: Mapping[str, Any]) -> bool:
        """Answer the task's open questions by key (Rule 3); False for an unknown task."""
        call = self._live.get(task_id)
        if call is None or call.record is None:
            return await self.get(task_id) is not None  # finished, or run by another worker
        record = call.record
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
        return True

    async def cancel(self, task_id: str) -> bool:
        """Settle a running task `cancelled` and stop its worker (Rule 4); False: unknown."""
        record = await self.get(task_id)
        if record is None:
            return False
        if record.terminal:
            return True
        record.status = "cancelled"
        record.input_requests.clear()
        await self._touch(record)
        call = self._live.pop(task_id, None)
        if call is not None:
            call.cancelled = True
            call.scope.cancel()
        return True

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
        await self._touch(record)

    async def _detach(self, call: _Call) -> bool:
        """Make the call a task (Rule 2); False when it already ended or the store is full."""
        async with call.lock:
            if call.record is not None:
                return True
            if call.done:
                return False
            now = self.clock()
            record = TaskRecord(
                new_task_id(),
                now,
                call.support.ttl,
                call.support.poll_interval,
                owner=self.worker_id,
                lease_until=now + self.store.lease,
            )
            if not await self.store.add(record, now):
                logger.warning("the task store is full: a call runs to its end instead")
                return False
            call.record = record
            self._live[record.task_id] = call
            if call.context is not None:
                call.context._run_as_task(
                    functools.partial(self._ask, call),
                    functools.partial(self._status, call),
                    functools.partial(self._ask_many, call),
                )
        call.changed.set()
        return True

    async def _ask(
        self,
        call: _Call,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Any:
        """A task's question (Rule 3): waits in `inputRequests` for `tasks/update`."""
        return (await self._ask_many(call, [(method, params or {}, timeout)]))[0]

    async def _ask_many(self, call: _Call, asks: Sequence[AskWire]) -> list[Any]:
        """Several questions, open at once (`Context.gather`); their answers, in order."""
        record = call.record
        assert record is not None
        if record.terminal:  # settled by another worker, through a shared record (Rule 5)
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
        answers = []
        try:
            for key, (method, _, timeout) in zip(keys, asks, strict=True):
                question = call.questions[key]
                try:
                    with trio.fail_after(math.inf if timeout is None else timeout):
                        await question.answered.wait()
                except trio.TooSlowError:
                    raise ClientTimeoutError(method, timeout or 0.0) from None
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

    async def _save(self, record: TaskRecord) -> None:
        if not await self.store.save(record):
            self._stop(record.task_id)  # the store holds it settled (Rule 5)

    async def _keep_lease(self, call: _Call) -> None:
        """Renew the task's lease while its call runs (Rule 5)."""
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
        """Cancel the work of a task that was settled elsewhere (Rule 5)."""
        call = self._live.pop(task_id, None)
        if call is not None:
            logger.info("task %s was settled by another worker; its work here stops", task_id)
            call.cancelled = True
            call.scope.cancel()
