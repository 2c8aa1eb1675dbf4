"""Interop: the TypeScript SDK 1.x client runs trio-mcp tools as 2025-11-25 tasks.

The pinned npm package `@modelcontextprotocol/sdk` (1.x) has an experimental client task API
(`client.experimental.tasks`). `tests/fixtures/ts_task_client.mjs` drives it against
`python -m trio_mcp run tests/fixtures/task_tools.py` over stdio: a task-augmented call to its
result, a task whose question the SDK answers on the `tasks/result` stream, a task's status,
its cancellation, the list, and a result fetched again. The SDK validates every answer with
its own schemas; the script records every message both ways, which are checked here against
the 2025-11-25 JSON Schema too. Skipped, saying why, without npm (`tests/npm_tools.py`).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fixtures import task_tools
from tests.npm_tools import npm_install
from tests.schema_check import MessageChecker
from tests.timing import scaled

pytestmark = pytest.mark.slow  # a Node process and a Python server process

TIMEOUT = scaled(120)
SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "ts_task_client.mjs"


async def test_the_typescript_sdk_runs_our_tool_as_a_2025_11_25_task(tmp_path: Path) -> None:
    sdk = npm_install("sdk-v1")
    script = sdk.home / SCRIPT.name  # beside its node_modules, where Node resolves the SDK
    shutil.copyfile(SCRIPT, script)
    report_path = tmp_path / "report.json"
    server = [sys.executable, "-m", "trio_mcp", "run", task_tools.__file__]
    with trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            [str(sdk.node), str(script), str(report_path), "--", *server],
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    report: dict[str, Any] = json.loads(report_path.read_text())
    assert "failure" not in report, report["failure"]

    assert report["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    support = {tool["name"]: tool.get("execution") for tool in report["tools"]}
    assert support["slow"] == {"taskSupport": "optional"}

    # The augmented call: created, its statuses, its result through tasks/result.
    slow = report["slow"]
    assert slow[0]["type"] == "taskCreated"
    assert slow[0]["task"]["status"] == "working"
    assert slow[-2]["type"] == "taskStatus"
    assert slow[-2]["task"]["status"] == "completed"
    assert slow[-1]["type"] == "result"
    task_id = slow[0]["task"]["taskId"]
    assert slow[-1]["result"]["content"] == [{"type": "text", "text": "slept 0.3"}]
    assert slow[-1]["result"]["_meta"] == {
        "io.modelcontextprotocol/related-task": {"taskId": task_id}
    }
    assert {"started", "halfway"} & {s["task"].get("statusMessage") for s in slow[1:-1]}

    # A question, answered on the tasks/result stream.
    confirm = report["confirm"]
    assert confirm[-1]["type"] == "result"
    assert confirm[-1]["result"]["content"] == [{"type": "text", "text": "yes"}]

    # Status, cancel, the list, a result fetched again.
    assert report["created"]["ttl"] == 60_000
    assert report["status"]["status"] == "working"
    assert report["cancelled"]["status"] == report["after"]["status"] == "cancelled"
    listed = {task["taskId"]: task["status"] for task in report["listed"]["tasks"]}
    assert listed[task_id] == "completed"
    assert listed[report["created"]["taskId"]] == "cancelled"
    assert report["again"]["content"] == [{"type": "text", "text": "slept 0.3"}]

    checker = MessageChecker("2025-11-25")
    for entry in report["log"]:
        checker.check(entry["from"], entry["message"])
    assert checker.checked == len(report["log"]) > 20
