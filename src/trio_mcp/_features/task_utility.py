"""The tasks of MCP 2025-11-25 (basic/utilities/tasks) on the wire, both sides, sans-IO.

The task engine is one (`_features/tasks`, `_runtime/tasks`): the same records, stores, leases,
principals and status announcements serve the tasks extension (SEP-2663) and these. What
differs is who decides and how it looks, and the revision table says which a session speaks
(`Revision.tasks`, "utility" here).

Rule 1: the requestor decides. A request becomes a task only when its params carry `task`
        (`asked_task`), for a receiver that declared the request type in its `tasks`
        capability (a server: `tools/call`, per tool `execution.taskSupport`); the task is
        made at once, and the request is answered with `CreateTaskResult` (`{"task": Task}`).
Rule 2: a `Task` shows a record as 2025-11-25 names it (`task_wire`): `ttl` and
        `pollInterval` in milliseconds, `createdAt` and `lastUpdatedAt` always, no result
        inlined. A completed tool call whose result has `isError` is shown `failed` (the
        page's Task Status: "this includes cases where the tool call result has isError"),
        and a failed task says why in `statusMessage` when nobody set one.
Rule 3: `tasks/result` answers what the request itself would have (`final_result`): the
        result with the `io.modelcontextprotocol/related-task` key in its `_meta`, or the
        protocol error it ended with. A task cancelled by request has neither: -32602.
Rule 4: listings are cut to the requestor (`requestor_of`): the principal of the request's
        token, else the session, which the server names with a random key of its own; a
        session without such a key (one that never ran `initialize`, as a stateless HTTP
        request's) and no token has no tasks to list. Cursors are opaque to the client
        (`page`): the creation time and id of the last task listed, so that a task that
        expired meanwhile does not break the next page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from .._core.auth import Principal
from .._core.client_records import TaskInfo
from .._core.jsonrpc import INVALID_PARAMS
from .._core.meta import TASKS_EXTENSION
from .._core.versions import revision
from .._exceptions import RemoteProtocolError
from .tasks import TERMINAL, TaskRecord, TaskSupport

__all__ = [
    "DEFAULT_TASK_PAGE",
    "MIN_TTL",
    "RELATED_TASK",
    "TaskAsked",
    "asked_task",
    "client_capabilities",
    "created_result",
    "final_result",
    "page",
    "related_task",
    "requestor_of",
    "server_capabilities",
    "support_for",
    "task_info_of",
    "task_wire",
    "tool_execution",
    "with_related_task",
]

#: The `_meta` key that ties a message to its task (2025-11-25, Related Task Metadata).
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
#: Tasks per `tasks/list` page, when the server sets no page size: a screenful; a requestor
#: holding a whole default store (10,000 tasks) pages through it in 200 requests.
DEFAULT_TASK_PAGE: Final = 50
#: Seconds a task is kept at the least, whatever `ttl` the requestor asked (the page lets a
#: receiver override it): a result fetched just after it settled is not lost to a tiny ttl.
MIN_TTL: Final = 1.0
#: Characters of a failed tool call's text that its task's `statusMessage` repeats.
_MESSAGE_CHARS: Final = 500


@dataclass(frozen=True, slots=True)
class TaskAsked:
    """What a request's `task` params asked for (Rule 1).

    Attributes:
        ttl: Seconds the requestor wants the task kept from its creation, or None.
    """

    ttl: float | None = None


def asked_task(params: Mapping[str, Any] | None) -> TaskAsked | None:
    """The `task` a request's params carry, or None for a request that asked for none.

    Raises:
        RemoteProtocolError: -32602 for a `task` that is no object, or a `ttl` that is no
            non-negative integer of milliseconds.
    """
    if not params or "task" not in params:
        return None
    task = params["task"]
    if not isinstance(task, Mapping):
        raise RemoteProtocolError(
            'Invalid params: "task" must be an object (TaskMetadata)', INVALID_PARAMS
        )
    ttl = task.get("ttl")
    if ttl is None:
        return TaskAsked()
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        raise RemoteProtocolError(
            'Invalid params: "task.ttl" must be a non-negative integer of milliseconds',
            INVALID_PARAMS,
        )
    return TaskAsked(ttl / 1000)


def support_for(support: TaskSupport, asked: TaskAsked) -> TaskSupport:
    """How a task the requestor asked for runs: a task at once, kept as asked (Rule 1).

    The tool's `ttl` is the most it is kept, and `MIN_TTL` the least.
    """
    ttl = support.ttl if asked.ttl is None else min(support.ttl, max(asked.ttl, MIN_TTL))
    return replace(support, after=0.0, ttl=ttl)


def tool_execution(support: TaskSupport | None, version: str) -> dict[str, Any] | None:
    """A tool's `execution` in `tools/list` under `version`, or None to leave it out."""
    if support is None or revision(version).tasks != "utility":
        return None
    return {"taskSupport": "required" if support.required else "optional"}


def server_capabilities(capabilities: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A server's capabilities as a session of `version` is told them.

    The server announces the tasks extension when it has a task tool; a 2025-11-25 session
    is told the `tasks` capability of its own revision instead (list, cancel, and
    task-augmented `tools/call`), an older one neither.
    """
    extensions = capabilities.get("extensions")
    if not isinstance(extensions, Mapping) or TASKS_EXTENSION not in extensions:
        return dict(capabilities)
    form = revision(version).tasks
    if form == "extension":
        return dict(capabilities)
    told = dict(capabilities)
    rest = {k: v for k, v in extensions.items() if k != TASKS_EXTENSION}
    if rest:
        told["extensions"] = rest
    else:
        del told["extensions"]
    if form == "utility":
        told["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    return told


def client_capabilities(sampling: bool, elicitation: bool) -> dict[str, Any]:
    """A 2025-11-25 client's `tasks` capability: the requests it runs as tasks when asked."""
    requests: dict[str, Any] = {}
    if sampling:
        requests["sampling"] = {"createMessage": {}}
    if elicitation:
        requests["elicitation"] = {"create": {}}
    return {"list": {}, "cancel": {}, "requests": requests}


def related_task(task_id: str) -> dict[str, Any]:
    """The `_meta` entry tying a message to the task `task_id`."""
    return {RELATED_TASK: {"taskId": task_id}}


def with_related_task(params: Mapping[str, Any] | None, task_id: str) -> dict[str, Any]:
    """`params` with the related-task key added to their `_meta`."""
    body = dict(params or {})
    meta = body.get("_meta")
    body["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), **related_task(task_id)}
    return body


def task_wire(detailed: Mapping[str, Any]) -> dict[str, Any]:
    """The 2025-11-25 `Task` of a task shown as SEP-2663's `DetailedTask` (Rule 2).

    Args:
        detailed: `TaskRecord.detailed_wire()`, or a status a worker told (`resultType` is
            ignored).
    """
    status = detailed["status"]
    message = detailed.get("statusMessage")
    result = detailed.get("result")
    error = detailed.get("error")
    if status == "completed" and isinstance(result, Mapping) and result.get("isError") is True:
        status = "failed"
        if message is None:
            message = _first_text(result)
    elif status == "failed" and message is None and isinstance(error, Mapping):
        text = error.get("message")
        message = text if isinstance(text, str) else None
    wire: dict[str, Any] = {
        "taskId": detailed["taskId"],
        "status": status,
        "createdAt": detailed["createdAt"],
        "lastUpdatedAt": detailed["lastUpdatedAt"],
        "ttl": detailed.get("ttlMs"),
    }
    interval = detailed.get("pollIntervalMs")
    if interval is not None:
        wire["pollInterval"] = interval
    if message is not None:
        wire["statusMessage"] = message
    return wire


def _first_text(result: Mapping[str, Any]) -> str:
    for block in result.get("content") or ():
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            text: str = block["text"]
            return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."
    return "The tool reported an error"


def created_result(record: TaskRecord) -> dict[str, Any]:
    """The `CreateTaskResult` answering the request that made the task (Rule 1)."""
    return {"task": task_wire(record.detailed_wire())}


def final_result(record: TaskRecord) -> dict[str, Any]:
    """What `tasks/result` answers for a settled task (Rule 3).

    Raises:
        RemoteProtocolError: the error the task failed with; -32602 for a cancelled task.
    """
    assert record.terminal
    if record.status == "completed" and record.result is not None:
        result = dict(record.result)
        meta = result.get("_meta")
        result["_meta"] = {
            **(meta if isinstance(meta, Mapping) else {}),
            **related_task(record.task_id),
        }
        return result
    if record.status == "failed" and record.error is not None:
        error = record.error
        raise RemoteProtocolError(str(error.get("message", "")), error["code"], error.get("data"))
    raise RemoteProtocolError(
        f"Invalid params: task {record.task_id} was {record.status} before it had a result",
        INVALID_PARAMS,
        {"taskId": record.task_id, "status": record.status},
    )


def requestor_of(principal: Principal | None, session_key: str | None) -> str | None:
    """Who asks (Rule 4): a key of the token's principal, else of the session; None: nobody."""
    if principal is not None:
        digest = hashlib.sha256(json.dumps(list(principal)).encode()).hexdigest()
        return f"principal:{digest[:32]}"
    return None if session_key is None else f"session:{session_key}"


def page(
    records: Sequence[TaskRecord], cursor: str | None, size: int
) -> tuple[list[TaskRecord], str | None]:
    """One page of a requestor's tasks, oldest first, and the cursor of the next (Rule 4).

    Raises:
        RemoteProtocolError: -32602 for a cursor this server did not give.
    """
    ordered = sorted(records, key=lambda record: (record.created_at, record.task_id))
    if cursor is not None:
        after = _read_cursor(cursor)
        ordered = [r for r in ordered if (r.created_at, r.task_id) > after]
    shown = ordered[:size]
    if len(ordered) <= size:
        return shown, None
    last = shown[-1]
    raw = json.dumps([last.created_at, last.task_id], separators=(",", ":")).encode()
    return shown, base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: str) -> tuple[float, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, task_id = json.loads(raw)
        if isinstance(created, int | float) and math.isfinite(created) and isinstance(task_id, str):
            return float(created), task_id
    except (binascii.Error, ValueError, TypeError):
        pass
    raise RemoteProtocolError(
        "Invalid params: unknown tasks/list cursor", INVALID_PARAMS, {"cursor": cursor[:100]}
    )


def task_info_of(wire: Any, method: str) -> TaskInfo:
    """A 2025-11-25 `Task` as the client's `TaskInfo`, its durations in seconds.

    A `tasks/get` or `tasks/cancel` result, a status notification, a created task's `task`.

    Raises:
        RemoteProtocolError: for an object without a string `taskId` or a known `status`.
    """
    if not isinstance(wire, Mapping) or not isinstance(wire.get("taskId"), str):
        raise RemoteProtocolError(f"malformed task in the {method} result: {str(wire)[:200]}")
    status = wire.get("status")
    if status not in (*TERMINAL, "working", "input_required"):
        raise RemoteProtocolError(f"{method} answered a task with unknown status {status!r}")
    text, created, updated = (wire.get(k) for k in ("statusMessage", "createdAt", "lastUpdatedAt"))
    return TaskInfo(
        task_id=wire["taskId"],
        status=status,
        status_message=text if isinstance(text, str) else None,
        created_at=created if isinstance(created, str) else None,
        last_updated_at=updated if isinstance(updated, str) else None,
        ttl=_seconds(wire.get("ttl")),
        poll_interval=_seconds(wire.get("pollInterval")),
        raw=dict(wire),
    )


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return value / 1000
