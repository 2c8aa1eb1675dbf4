"""The wire forms of the 2025-11-25 tasks, sans-IO and table-driven (`_features/task_utility`).

`params.task` read; the ttl within the server's bounds; a record shown as a 2025-11-25 `Task`
(a tool's error result is `failed`); what `tasks/result` answers; cursors; who a requestor is;
and what a client declares per revision.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.schema_check import validate_definition
from trio_mcp import RemoteProtocolError
from trio_mcp._core.answering import Answerable
from trio_mcp._core.client_session import ClientSession
from trio_mcp._core.versions import SUPPORTED_VERSIONS, revision
from trio_mcp._features.task_utility import (
    MIN_TTL,
    RELATED_TASK,
    TaskAsked,
    asked_task,
    final_result,
    page,
    requestor_of,
    support_for,
    task_info_of,
    task_wire,
)
from trio_mcp.tasks import TaskRecord, TaskSupport

TASKS = "io.modelcontextprotocol/tasks"


@pytest.mark.parametrize(
    ("params", "asked"),
    [
        (None, None),
        ({"name": "x"}, None),
        ({"task": {}}, TaskAsked()),
        ({"task": {"ttl": 60_000}}, TaskAsked(60.0)),
        ({"task": {"ttl": 0}}, TaskAsked(0.0)),
    ],
)
def test_params_task_is_read(params: dict[str, Any] | None, asked: TaskAsked | None) -> None:
    assert asked_task(params) == asked


@pytest.mark.parametrize("task", [[], "soon", {"ttl": -1}, {"ttl": 1.5}, {"ttl": True}])
def test_a_malformed_task_is_invalid_params(task: Any) -> None:
    with pytest.raises(RemoteProtocolError) as refused:
        asked_task({"task": task})
    assert refused.value.code == -32602


@pytest.mark.parametrize(
    ("asked", "kept"), [(None, 120.0), (60.0, 60.0), (3600.0, 120.0), (0.0, MIN_TTL)]
)
def test_a_task_asked_for_starts_at_once_and_is_kept_within_bounds(
    asked: float | None, kept: float
) -> None:
    support = support_for(TaskSupport(after=None, ttl=120.0, required=True), TaskAsked(asked))
    assert support.after == 0
    assert support.ttl == kept
    assert support.required


def settled(status: str, **fields: Any) -> TaskRecord:
    return TaskRecord("t1", 1000.0, 60.0, 0.5, status=status, updated_at=1002.0, **fields)  # type: ignore[arg-type]


ERROR_RESULT = {"content": [{"type": "text", "text": "it broke"}], "isError": True}
ERROR = {"code": -32603, "message": "Internal error: crashed", "data": {"why": "test"}}


@pytest.mark.parametrize(
    ("record", "status", "message"),
    [
        (settled("working"), "working", None),
        (settled("working", status_message="halfway"), "working", "halfway"),
        (settled("completed", result={"content": []}), "completed", None),
        (settled("completed", result=ERROR_RESULT), "failed", "it broke"),
        (settled("failed", error=ERROR), "failed", "Internal error: crashed"),
        (
            settled("failed", error=ERROR, status_message="Server shutting down"),
            "failed",
            "Server shutting down",
        ),
        (settled("cancelled"), "cancelled", None),
    ],
)
def test_a_record_is_shown_as_a_2025_11_25_task(
    record: TaskRecord, status: str, message: str | None
) -> None:
    wire = task_wire(record.detailed_wire())
    validate_definition(wire, "2025-11-25", "Task")
    assert wire["status"] == status
    assert wire.get("statusMessage") == message
    assert wire["ttl"] == 60_000
    assert wire["pollInterval"] == 500
    assert wire["createdAt"] == "1970-01-01T00:16:40.000Z"
    assert wire["lastUpdatedAt"] == "1970-01-01T00:16:42.000Z"
    assert not {"result", "error", "inputRequests", "ttlMs", "resultType"} & set(wire)
    info = task_info_of(wire, "tasks/get")
    assert (info.task_id, info.status, info.ttl, info.poll_interval) == ("t1", status, 60.0, 0.5)


def test_tasks_result_answers_what_the_call_would_have() -> None:
    done = final_result(settled("completed", result={"content": [], "_meta": {"k": 1}}))
    tool_error = final_result(settled("completed", result=ERROR_RESULT))
    with pytest.raises(RemoteProtocolError) as failed:
        final_result(settled("failed", error=ERROR))
    with pytest.raises(RemoteProtocolError) as cancelled:
        final_result(settled("cancelled"))
    assert done == {"content": [], "_meta": {"k": 1, RELATED_TASK: {"taskId": "t1"}}}
    assert tool_error["isError"] is True
    assert (failed.value.code, failed.value.message, failed.value.data) == (
        -32603,
        "Internal error: crashed",
        {"why": "test"},
    )
    assert cancelled.value.code == -32602
    assert cancelled.value.data == {"taskId": "t1", "status": "cancelled"}


def test_cursors_page_oldest_first_and_survive_a_task_that_went_away() -> None:
    records = [TaskRecord(f"t{n}", 1000.0 + n, 60.0, 1.0) for n in range(5)]
    first, cursor = page(records[::-1], None, 2)
    assert [r.task_id for r in first] == ["t0", "t1"]
    assert cursor is not None
    rest = [r for r in records if r.task_id != "t1"]  # the last one shown expired meanwhile
    second, cursor = page(rest, cursor, 2)
    assert [r.task_id for r in second] == ["t2", "t3"]
    third, cursor = page(rest, cursor, 2)
    assert [r.task_id for r in third] == ["t4"]
    assert cursor is None
    for bad in ("", "not-a-cursor", "bnVsbA"):
        with pytest.raises(RemoteProtocolError):
            page(records, bad, 2)


def test_a_requestor_is_a_principal_else_a_session_else_nobody() -> None:
    alice = ("https://issuer.example", "alice", "app")
    assert requestor_of(alice, "s1") == requestor_of(alice, "s2")  # any session of hers
    assert requestor_of(alice, None) != requestor_of(("https://issuer.example", "bob", "app"), None)
    assert requestor_of(None, "s1") == "session:s1"
    assert requestor_of(None, None) is None


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_a_client_that_does_tasks_declares_its_revisions(version: str) -> None:
    session = ClientSession(
        version,
        {"name": "t", "version": "0"},
        answerable=Answerable(("form",), sampling=True),
        extensions={TASKS: {}},
    )
    declared = session.capabilities_for(version)
    form = revision(version).tasks
    assert (TASKS in declared.get("extensions", {})) == (form == "extension")
    if form == "utility":
        assert declared["tasks"] == {
            "list": {},
            "cancel": {},
            "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
        }
        validate_definition(declared, version, "ClientCapabilities")
    else:
        assert "tasks" not in declared
