"""Tools that may run as tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663), sans-IO.

What a task is and where it is kept: a tool's `TaskSupport`, the task's record (`TaskRecord`,
what `tasks/get` shows), the stores that keep records (`TaskStore`, `MemoryTaskStore`) and what
the dispatcher asks of the runtime that runs them (`TaskEngine`, `_runtime/tasks`). A call of a
task-capable tool starts like any call (its first questions are asked as usual); it becomes a
task when its `after` delay passes, or when the tool says so (`Context.become_task`). From then
on the `tools/call` is answered with a `CreateTaskResult` and the work goes on, owned by the
server; its questions surface as `input_required` with `inputRequests`.

Rule 1: a tool declares that it *may* become a task (`TaskSupport`). Which tasks a session
        speaks is its revision's (`_core/versions` `Revision.tasks`): under 2026-07-28 the
        extension, where the server alone decides, per call, and only for a client that
        declared the extension for that request (`declares_tasks`); under 2025-11-25 that
        revision's own utility, where the client asks (`params.task`, `_features/task_utility`);
        before it, none. A tool that declares nothing never becomes a task; a `required` one
        refuses other calls (-32021 under the extension, -32601 under 2025-11-25).
Rule 2: a settled task is final: `completed`, `cancelled` and `failed` never change again, and a
        store refuses to write a live record over a settled one (`save` answers False), which
        is how a worker learns that another settled its task (`tasks/cancel` there, or a lease
        it let lapse). A store may be shared by the workers of a fleet, so a record names its
        worker (`owner`) and holds that worker's lease (`lease_until`, wall-clock seconds),
        which the worker renews while the task runs; a live task whose lease has passed is a
        dead worker's, and whoever reads it next settles it `failed`.
Rule 3: ids are unguessable (128 random bits), and stores are bounded. The in-memory store keeps
        a finished task `ttl` seconds after it settled; when it is full the oldest finished
        task makes room, and if every slot holds live work no new task is made (the call simply
        runs to its end).
Rule 4: a shared store may carry answers to the worker running a task (`TaskMailbox`): each task
        has a bounded mailbox; `post_answers` adds one batch (False, adding nothing, when it is
        full) and `take_answers` takes every batch waiting, so each is taken once. A mailbox
        outlives no task: it expires with the task's record.
Rule 5: a task made for a request with a verified token belongs to the token's principal
        (`_core/auth` Rule 3), kept in its record (`principal`). For any other principal it
        does not exist: `tasks/get`, `tasks/update`, `tasks/cancel` and a listen stream's
        `taskIds` fare exactly as with an unknown id, so a leaked task id is no credential. The
        same principal may use it from any session or worker, with a refreshed token too. A
        task made without a token (stdio, memory, an open HTTP server) belongs to no one, as
        does a record written before records named one.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

from .._core.auth import Principal, principal_from
from .._core.jsonrpc import INTERNAL_ERROR
from .._core.meta import CAPABILITIES as _META_CAPABILITIES
from .._core.meta import TASKS_EXTENSION
from .._core.versions import revision
from .._exceptions import ToolDefinitionError

if TYPE_CHECKING:
    from .._core.server_session import RequestScope
    from .context import Context

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_MAILBOX",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_POLL_INTERVAL",
    "DEFAULT_TASK_TTL",
    "TASKS_EXTENSION",
    "TERMINAL",
    "MemoryTaskStore",
    "TaskEngine",
    "TaskLister",
    "TaskMailbox",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "TaskSupport",
    "check_lease",
    "declares_tasks",
    "new_task_id",
    "task_support",
]

#: Seconds a finished task stays readable: an hour, as long as a person may take to come back
#: to a long job's result (the 2025-11-25 tasks had no default; FastMCP keeps results an hour).
DEFAULT_TASK_TTL: Final = 3600.0
#: Seconds a client is asked to wait between polls: once a second, like a progress bar.
DEFAULT_POLL_INTERVAL: Final = 1.0
#: Tasks one store keeps at once: 10,000 records of a few KB each stay within tens of MB.
DEFAULT_MAX_TASKS: Final = 10_000
#: Seconds a worker's claim on a running task lasts unless renewed (Rule 2); the worker renews
#: it every third of that. A task whose worker died is `failed` at most this long after: long
#: enough for a busy worker and clocks a few seconds apart, short next to a task's minutes.
DEFAULT_LEASE: Final = 15.0

#: Batches of answers one task's mailbox holds untaken (Rule 4): far more than a client sends
#: between two looks of the worker, few enough that a runaway client cannot fill the store.
DEFAULT_MAILBOX: Final = 64

TaskStatus = Literal["working", "input_required", "completed", "cancelled", "failed"]
TERMINAL: Final = frozenset({"completed", "cancelled", "failed"})
_STATUSES: Final = frozenset({"working", "input_required", *TERMINAL})


@dataclass(frozen=True, slots=True)
class TaskSupport:
    """How a tool may run as a task: `@tool(..., task=TaskSupport(...))` (`task=True`: defaults).

    Attributes:
        after: Seconds the call may run before it becomes a task (0: a task from the start;
            None: only when the tool calls `Context.become_task`).
        required: Refuse clients that did not declare the extension (-32021) instead of
            running the call to its end for them.
        ttl: Seconds a finished task's result stays readable.
        poll_interval: Seconds the client is asked to wait between `tasks/get` polls.
    """

    after: float | None = 0.0
    required: bool = False
    ttl: float = DEFAULT_TASK_TTL
    poll_interval: float = DEFAULT_POLL_INTERVAL

    def __post_init__(self) -> None:
        if self.after is not None and not self.after >= 0:  # `not >=` also refuses NaN
            raise ToolDefinitionError(
                f"TaskSupport.after must be 0 or more seconds, not {self.after!r}"
            )
        for name in ("ttl", "poll_interval"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ToolDefinitionError(
                    f"TaskSupport.{name} must be positive seconds, not {value!r}"
                )


def task_support(value: bool | float | TaskSupport | None, where: str) -> TaskSupport | None:
    """What a tool's `task=` option means: None (never a task) or its `TaskSupport`.

    `True` is a task from the start; a number is a task when the call has not finished
    within that many seconds.

    Raises:
        ToolDefinitionError: for anything else, naming `where`.
    """
    if value is None or value is False:
        return None
    if value is True:
        return TaskSupport()
    if isinstance(value, TaskSupport):
        return value
    if isinstance(value, int | float):
        return TaskSupport(after=float(value))
    raise ToolDefinitionError(
        f"task= of {where} must be True, seconds, or a TaskSupport; got {value!r}"
    )


def declares_tasks(scope: RequestScope, params: Mapping[str, Any] | None) -> bool:
    """Whether the client declared the extension for this request (Rule 1).

    Under 2026-07-28 the scope's capabilities are the request's own; in the handshake era a
    request may still add the extension for itself in `_meta` (SEP-2575 per-request opt-in).
    Only where the revision table says the session speaks the extension: elsewhere a
    declaration counts for nothing (`Revision.tasks`).
    """
    if revision(scope.version).tasks != "extension":
        return False
    if _has_tasks(scope.client_capabilities):
        return True
    meta = params.get("_meta") if params else None
    return isinstance(meta, Mapping) and _has_tasks(meta.get(_META_CAPABILITIES))


def _has_tasks(capabilities: Any) -> bool:
    if not isinstance(capabilities, Mapping):
        return False
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def new_task_id() -> str:
    """An unguessable task id: 128 random bits, URL-safe (Rule 3)."""
    return secrets.token_urlsafe(16)


def _iso(when: float) -> str:
    return (
        datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


@dataclass(slots=True, eq=False)
class TaskRecord:
    """One task as a store keeps it; times are wall-clock seconds (`time.time()`).

    Its states are `working`, `input_required`, `completed` (the tool's result, an error result
    included), `cancelled` and `failed` (a protocol error, inlined as a JSON-RPC error object);
    the last three are terminal (Rule 2). On the wire (`detailed_wire`) durations are integer
    milliseconds (`ttlMs`, `pollIntervalMs`) and times ISO 8601 UTC; a task carries no
    `requestState`, ever.
    """

    task_id: str
    created_at: float
    ttl: float
    poll_interval: float
    status: TaskStatus = "working"
    updated_at: float = 0.0
    status_message: str | None = None
    #: The tool's `CallToolResult` (completed).
    result: dict[str, Any] | None = None
    #: The JSON-RPC error object (failed).
    error: dict[str, Any] | None = None
    #: Questions waiting for the client, by the key `tasks/update` answers them under.
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The worker running the task (Rule 2), None for a record that names none.
    owner: str | None = None
    #: Until when the owner's claim holds, unless renewed (0: the record has no lease).
    lease_until: float = 0.0
    #: Whose task it is (Rule 5): the principal of the token of the call that made it; None
    #: for a task made without a token, which anyone may use.
    principal: Principal | None = None
    #: The OAuth scopes of the tool it runs: reading, answering or cancelling the task over
    #: HTTP needs them too (the call did).
    scopes: tuple[str, ...] = ()
    #: Who asked for it, for a task of the 2025-11-25 tasks (`task_utility` Rule 4): only
    #: that requestor sees it, and it is listed to them; None for the extension's tasks.
    requestor: str | None = None

    def __post_init__(self) -> None:
        if not self.updated_at:
            self.updated_at = self.created_at

    def visible_to(self, principal: Principal | None, requestor: str | None = None) -> bool:
        """Whether a request of `principal` may see and use the task (Rule 5).

        A task made for a requestor (2025-11-25) is seen by that requestor only.
        """
        return (self.principal is None or self.principal == principal) and (
            self.requestor is None or self.requestor == requestor
        )

    @property
    def terminal(self) -> bool:
        """Whether the task has settled for good."""
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        """Whether a finished task has outlived its ttl (live tasks never expire)."""
        return self.terminal and now >= self.updated_at + self.ttl

    def lease_lapsed(self, now: float) -> bool:
        """Whether a live task's worker failed to renew its lease in time (Rule 2)."""
        return not self.terminal and 0 < self.lease_until <= now

    def settle_lapsed(self, now: float) -> None:
        """Settle a task whose lease ran out `failed`, saying its worker stopped (Rule 2)."""
        self.status = "failed"
        self.error = {
            "code": INTERNAL_ERROR,
            "message": "The worker running this task stopped before the task finished "
            f"(its lease ran out at {_iso(self.lease_until)})",
            "data": {"worker": self.owner},
        }
        self.input_requests.clear()
        self.updated_at = now

    def dump(self) -> dict[str, Any]:
        """The record as a JSON object, for a store that keeps text (`load` reads it back)."""
        return {
            "v": 1,
            "taskId": self.task_id,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "ttl": self.ttl,
            "pollInterval": self.poll_interval,
            "status": self.status,
            "statusMessage": self.status_message,
            "result": self.result,
            "error": self.error,
            "inputRequests": self.input_requests,
            "owner": self.owner,
            "leaseUntil": self.lease_until,
            "principal": None if self.principal is None else list(self.principal),
            # Only when set: a record without scopes reads the same to an older `load`.
            **({"scopes": list(self.scopes)} if self.scopes else {}),
            **({"requestor": self.requestor} if self.requestor is not None else {}),
        }

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> TaskRecord:
        """The record `dump` wrote (one written before records named a principal: none).

        Raises:
            ValueError: for anything else.
        """
        try:
            status = data["status"]
            if data.get("v") != 1 or status not in _STATUSES:
                raise ValueError(f"not a task record: {dict(data)!r:.200}")
            return cls(
                task_id=str(data["taskId"]),
                created_at=float(data["createdAt"]),
                ttl=float(data["ttl"]),
                poll_interval=float(data["pollInterval"]),
                status=status,
                updated_at=float(data["updatedAt"]),
                status_message=data.get("statusMessage"),
                result=data.get("result"),
                error=data.get("error"),
                input_requests=dict(data.get("inputRequests") or {}),
                owner=data.get("owner"),
                lease_until=float(data.get("leaseUntil") or 0.0),
                principal=principal_from(data.get("principal")),
                scopes=tuple(str(scope) for scope in data.get("scopes") or ()),
                requestor=str(data["requestor"]) if data.get("requestor") else None,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a task record: {exc}") from None

    def task_wire(self) -> dict[str, Any]:
        """The `Task` fields every task answer carries (a `CreateTaskResult` adds the type)."""
        wire: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _iso(self.created_at),
            "lastUpdatedAt": _iso(self.updated_at),
            "ttlMs": max(1, round(self.ttl * 1000)),
            "pollIntervalMs": max(1, round(self.poll_interval * 1000)),
        }
        if self.status_message is not None:
            wire["statusMessage"] = self.status_message
        return wire

    def created_wire(self) -> dict[str, Any]:
        """The `CreateTaskResult` answering the `tools/call` that made this task."""
        return {"resultType": "task", **self.task_wire()}

    def detailed_wire(self) -> dict[str, Any]:
        """The `DetailedTask` of `tasks/get`: the result, error or questions inlined."""
        wire = {"resultType": "complete", **self.task_wire()}
        if self.status == "completed" and self.result is not None:
            wire["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            wire["error"] = self.error
        elif self.status == "input_required":
            wire["inputRequests"] = dict(self.input_requests)
        return wire


class TaskStore(Protocol):
    """Where task records live: in memory by default; a shared store serves a fleet (Rules 2, 3).

    A store hands out records and takes them back; the worker running a task writes its
    record (`save` after each change) until it settles, and a settled record is never written
    over (Rule 2), so a store needs no transactions beyond that one check.
    """

    @property
    def lease(self) -> float:
        """Seconds a worker's claim on a running task lasts unless renewed (Rule 2)."""
        ...

    async def add(self, record: TaskRecord, now: float) -> bool:
        """Keep a new record; False when the store is full of live tasks."""
        ...

    async def get(self, task_id: str, now: float) -> TaskRecord | None:
        """The record, or None for an unknown or expired id."""
        ...

    async def save(self, record: TaskRecord) -> bool:
        """Write a changed record back; False (and nothing written) over a settled one."""
        ...


@runtime_checkable
class TaskMailbox(Protocol):
    """A store that carries answers to the worker running a task (Rule 4)."""

    async def post_answers(self, task_id: str, responses: dict[str, Any], now: float) -> bool:
        """Leave one batch of answers (`inputResponses`) for the task; False when full."""
        ...

    async def take_answers(self, task_id: str) -> list[dict[str, Any]]:
        """Take every batch waiting for the task, oldest first (each is taken once)."""
        ...


@runtime_checkable
class TaskLister(Protocol):
    """A store that lists the tasks of one requestor (2025-11-25 `tasks/list`)."""

    async def requested_by(self, requestor: str, now: float) -> list[TaskRecord]:
        """The requestor's tasks not expired (`TaskRecord.requestor`), in any order."""
        ...


class MemoryTaskStore:
    """A bounded in-memory `TaskStore` (Rule 3), for the servers of one process.

    Args:
        max_tasks: Records kept at once.
        lease: Seconds a worker's claim on a running task lasts unless renewed (Rule 2).
    """

    def __init__(self, max_tasks: int = DEFAULT_MAX_TASKS, *, lease: float = DEFAULT_LEASE) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be positive")
        self.max_tasks = max_tasks
        self.lease = check_lease(lease)
        self._records: dict[str, TaskRecord] = {}  # insertion order: oldest first
        self._mail: dict[str, list[dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def add(self, record: TaskRecord, now: float) -> bool:
        """Keep a new record, making room by dropping finished ones; False when full of live."""
        if len(self._records) >= self.max_tasks:
            self._drop_expired(now)
        if len(self._records) >= self.max_tasks:
            oldest = next((r for r in self._records.values() if r.terminal), None)
            if oldest is None:
                return False
            del self._records[oldest.task_id]
            self._mail.pop(oldest.task_id, None)
        self._records[record.task_id] = record
        return True

    async def get(self, task_id: str, now: float) -> TaskRecord | None:
        """The record, or None for an unknown id or an expired one (then dropped)."""
        record = self._records.get(task_id)
        if record is not None and record.expired(now):
            del self._records[task_id]
            self._mail.pop(task_id, None)
            return None
        return record

    async def save(self, record: TaskRecord) -> bool:
        """Keep `record` (unless it was dropped); False over another, settled record (Rule 2).

        Usually nothing to write: the store holds the record object itself.
        """
        stored = self._records.get(record.task_id)
        if stored is None:
            return True
        if stored is not record and stored.terminal:
            return False
        self._records[record.task_id] = record
        return True

    async def post_answers(self, task_id: str, responses: dict[str, Any], now: float) -> bool:
        """Leave answers for the task (Rule 4); False when its mailbox is full (or it is gone)."""
        if await self.get(task_id, now) is None:
            return False
        mail = self._mail.setdefault(task_id, [])
        if len(mail) >= DEFAULT_MAILBOX:
            return False
        mail.append(responses)
        return True

    async def take_answers(self, task_id: str) -> list[dict[str, Any]]:
        """Take the answers waiting for the task (Rule 4)."""
        return self._mail.pop(task_id, [])

    async def requested_by(self, requestor: str, now: float) -> list[TaskRecord]:
        """The requestor's tasks not expired (a `TaskLister`).

        A walk over every record: at the default bound, 10,000 comparisons, a millisecond.
        """
        self._drop_expired(now)
        return [record for record in self._records.values() if record.requestor == requestor]

    def _drop_expired(self, now: float) -> None:
        for task_id in [k for k, r in self._records.items() if r.expired(now)]:
            del self._records[task_id]
            self._mail.pop(task_id, None)


def check_lease(lease: float) -> float:
    """`lease` if it is positive finite seconds.

    Raises:
        ValueError: otherwise.
    """
    if not (lease > 0 and math.isfinite(lease)):
        raise ValueError(f"lease must be positive seconds, not {lease!r}")
    return float(lease)


#: The work of one call: its final `CallToolResult` (or an input-required round's result);
#: raises `RemoteProtocolError` for a protocol error.
CallBody = Callable[[], Awaitable[dict[str, Any]]]


class TaskEngine(Protocol):
    """What the dispatcher asks of the runtime that runs tasks (`_runtime/tasks`)."""

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
        """Run a call that may become a task: its own result, or the `CreateTaskResult`.

        `created` is called with the task's id when the call becomes one, before any of its
        states is told; the task belongs to `principal` (Rule 5), and `scopes` (the tool's)
        are kept in its record; `tool` (its name) is for messages. A task the requestor
        asked for (2025-11-25) is `requestor`'s, made at once, answered with `asked`.
        """
        ...

    async def get(
        self, task_id: str, *, principal: Principal | None = None, requestor: str | None = None
    ) -> TaskRecord | None:
        """The task's record, or None for an unknown id or another principal's task (Rule 5).

        A 2025-11-25 task is another `requestor`'s too.
        """
        ...

    async def update(
        self,
        task_id: str,
        responses: Mapping[str, Any],
        *,
        principal: Principal | None = None,
    ) -> bool:
        """Deliver answers to the task's questions (unknown keys are ignored); False: no task.

        Another principal's task is no task (Rule 5).
        """
        ...

    async def cancel(
        self, task_id: str, *, principal: Principal | None = None, requestor: str | None = None
    ) -> bool:
        """Cancel the task if it still runs; False: no such task (or another principal's)."""
        ...

    async def settled(
        self,
        task_id: str,
        *,
        principal: Principal | None = None,
        requestor: str | None = None,
        ask: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None,
    ) -> TaskRecord | None:
        """Wait for the task to settle (2025-11-25 `tasks/result`): its settled record.

        None for no such task; its questions are asked through `ask` meanwhile.
        """
        ...

    async def listed(
        self, requestor: str, *, principal: Principal | None = None
    ) -> list[TaskRecord]:
        """The tasks of `requestor` (2025-11-25 `tasks/list`)."""
        ...
