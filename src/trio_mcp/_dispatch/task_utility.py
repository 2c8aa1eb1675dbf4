"""The `tasks/*` requests of MCP 2025-11-25 (basic/utilities/tasks), over the task engine.

The dispatcher routes every `tasks/` method of a session whose revision speaks these tasks
(`Revision.tasks` "utility") here; the engine is the one the tasks extension uses.

Rule 1: a task is its requestor's (`task_utility.requestor_of`): for anyone else, and for an
        unknown or expired id, `tasks/get`, `tasks/result` and `tasks/cancel` are -32602, and
        `tasks/list` lists the requestor's own tasks only.
Rule 2: `tasks/result` blocks until the task settles, asking the task's questions through its
        own request's stream meanwhile (each with the related-task key in its `_meta`), and
        answers what the task's request would have (`task_utility.final_result`).
Rule 3: `tasks/cancel` of a settled task is -32602, naming its status; otherwise the task is
        `cancelled` before the answer, which shows it so. A task that settled between the
        look and the cancel is refused the same way: its status stands.
"""

from __future__ import annotations

from typing import Any

from .._core.jsonrpc import INVALID_PARAMS
from .._core.server_session import ServerSession
from .._exceptions import RemoteProtocolError
from .._features.context import Requester
from .._features.task_utility import (
    DEFAULT_TASK_PAGE,
    final_result,
    page,
    requestor_of,
    task_wire,
    with_related_task,
)
from .._features.tasks import TaskEngine, TaskRecord
from .resolve import ResolvedRequest

__all__ = ["answer_task_request"]


async def answer_task_request(
    engine: TaskEngine,
    session: ServerSession,
    call: ResolvedRequest,
    requester: Requester | None,
    page_size: int | None,
) -> dict[str, Any]:
    """The result of a 2025-11-25 `tasks/get`, `tasks/result`, `tasks/list` or `tasks/cancel`.

    Raises:
        RemoteProtocolError: -32602 for an unknown task or cursor, a malformed `taskId`, the
            cancel of a settled task (Rules 1, 3); what `tasks/result` answers for a task that
            failed (Rule 2).
    """
    params = call.params or {}
    principal = call.principal
    requestor = requestor_of(principal, session.requestor_key)
    if call.method == "tasks/list":
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise RemoteProtocolError('Invalid params: "cursor" must be a string', INVALID_PARAMS)
        mine = [] if requestor is None else await engine.listed(requestor, principal=principal)
        shown, next_cursor = page(mine, cursor, page_size or DEFAULT_TASK_PAGE)
        result: dict[str, Any] = {"tasks": [task_wire(r.detailed_wire()) for r in shown]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise RemoteProtocolError('Invalid params: "taskId" must be a string', INVALID_PARAMS)
    if call.method == "tasks/get":
        record = _found(
            await engine.get(task_id, principal=principal, requestor=requestor), task_id
        )
        return task_wire(record.detailed_wire())
    if call.method == "tasks/result":
        ask = None
        if requester is not None:
            asker = requester

            async def ask(method: str, question: dict[str, Any]) -> Any:
                return await asker(method, with_related_task(question, task_id))

        settled = await engine.settled(task_id, principal=principal, requestor=requestor, ask=ask)
        return final_result(_found(settled, task_id))
    record = _found(await engine.get(task_id, principal=principal, requestor=requestor), task_id)
    if not record.terminal:
        await engine.cancel(task_id, principal=principal, requestor=requestor)
        record = _found(
            await engine.get(task_id, principal=principal, requestor=requestor), task_id
        )
        if record.status == "cancelled":
            return task_wire(record.detailed_wire())
    status = task_wire(record.detailed_wire())["status"]
    raise RemoteProtocolError(
        f"Cannot cancel task {task_id}: already in terminal status '{status}'",
        INVALID_PARAMS,
        {"taskId": task_id, "status": status},
    )


def _found(record: TaskRecord | None, task_id: str) -> TaskRecord:
    if record is None:
        raise RemoteProtocolError(
            f"Failed to retrieve task: Task not found: {task_id}",
            INVALID_PARAMS,
            {"taskId": task_id},
        )
    return record
