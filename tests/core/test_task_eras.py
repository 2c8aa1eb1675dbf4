"""Which tasks each revision speaks: the revision table's `tasks`, and a server that follows it.

SEP-2663 (Backward Compatibility): the tasks extension applies from 2026-07-28; a 2025-11-25
session has that revision's own tasks and "requests proceed as if the client had declared no
task capability at all" for the extension; the revisions before have no tasks, and a call is
answered with its result. Each row is checked through a raw peer speaking that revision to a
server with task tools, so the wire itself is what is asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.helpers import MODERN, RawPeer, init_params, open_memory_peer
from trio_mcp import Server
from trio_mcp._core.versions import SUPPORTED_VERSIONS, TASK_METHODS, revision
from trio_mcp._features.task_utility import server_capabilities
from trio_mcp.tasks import TaskSupport

TASKS = "io.modelcontextprotocol/tasks"
EXTENSION: dict[str, Any] = {"extensions": {TASKS: {}}}
HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
ALL_TASK_METHODS = ["tasks/get", "tasks/update", "tasks/result", "tasks/list", "tasks/cancel"]


def test_the_table_names_each_revisions_tasks() -> None:
    assert {name: revision(name).tasks for name in SUPPORTED_VERSIONS} == {
        "2026-07-28": "extension",
        "2025-11-25": "utility",
        "2025-06-18": None,
        "2025-03-26": None,
        "2024-11-05": None,
    }
    assert TASK_METHODS["extension"] == {"tasks/get", "tasks/update", "tasks/cancel"}
    assert TASK_METHODS["utility"] == {"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}
    assert TASK_METHODS[None] == frozenset()


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_capabilities_told_are_the_revisions(version: str) -> None:
    announced: dict[str, Any] = {"tools": {}, "extensions": {TASKS: {}, "x.example/other": {}}}
    told = server_capabilities(announced, version)
    form = revision(version).tasks
    assert (TASKS in told.get("extensions", {})) == (form == "extension")
    assert ("tasks" in told) == (form == "utility")
    assert told["extensions"]["x.example/other"] == {}  # other extensions stay


def make_server() -> Server:
    server = Server("eras")

    @server.tool(task=True)
    async def campaign(battles: int) -> dict[str, int]:
        await trio.sleep(0.01)
        return {"battles": battles}

    @server.tool(task=TaskSupport(required=True))
    async def only_task() -> str:
        return "done"

    return server


def meta(version: str, capabilities: dict[str, Any]) -> dict[str, Any]:
    """A request's `_meta`: the 2026-07-28 per-request fields, or a handshake-era opt-in."""
    if version == MODERN:
        return {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
    return {"io.modelcontextprotocol/clientCapabilities": capabilities}


async def start(peer: RawPeer, version: str, capabilities: dict[str, Any]) -> dict[str, Any]:
    """Start a session of `version` (2026-07-28: discover); the capabilities it is told."""
    if version == MODERN:
        found = await peer.request("server/discover", {"_meta": meta(version, capabilities)})
        told: dict[str, Any] = found["result"]["capabilities"]
        return told
    answer = await peer.request(
        "initialize", {**init_params(version), "capabilities": capabilities}
    )
    await peer.notify("notifications/initialized")
    return dict(answer["result"]["capabilities"])


@pytest.mark.parametrize("version", [*HANDSHAKE, MODERN])
async def test_a_client_that_declared_the_extension_gets_a_handle_under_2026_07_28_only(
    version: str,
) -> None:
    # The Inspector CLI 2.12 declares the extension in its 2025-11-25 handshake: its call of a
    # tool with an output schema must come back as that CallToolResult, structured.
    async with open_memory_peer(make_server(), initialize=False) as peer:
        told = await start(peer, version, EXTENSION)
        listed = await peer.request("tools/list", {"_meta": meta(version, EXTENSION)})
        answer = await peer.call("campaign", {"battles": 3}, _meta=meta(version, EXTENSION))
    result = answer["result"]
    tool = listed["result"]["tools"][0]
    if version == MODERN:
        assert result["resultType"] == "task"
        assert TASKS in told["extensions"]
        return
    assert "resultType" not in result
    assert "taskId" not in result
    assert "extensions" not in told  # the extension is not the session's to use
    assert ("tasks" in told) == (version == "2025-11-25")
    assert ("execution" in tool) == (version == "2025-11-25")
    if revision(version).structured:
        assert result["structuredContent"] == {"battles": 3}
    assert result["content"] == [{"type": "text", "text": '{"battles":3}'}]


@pytest.mark.parametrize("version", [*HANDSHAKE, MODERN])
async def test_params_task_makes_a_task_under_2025_11_25_only(version: str) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        await start(peer, version, {})
        answer = await peer.call("campaign", {"battles": 3}, task={}, _meta=meta(version, {}))
    result = answer["result"]
    if version == "2025-11-25":
        assert set(result) == {"task"}
        assert result["task"]["status"] == "working"
    else:  # ignored as an unknown field (SEP-2663: "servers MUST ignore it")
        assert "task" not in result
        assert result["content"] == [{"type": "text", "text": '{"battles":3}'}]


@pytest.mark.parametrize("version", [*HANDSHAKE, MODERN])
@pytest.mark.parametrize("method", ALL_TASK_METHODS)
async def test_each_revision_answers_its_own_tasks_methods_only(version: str, method: str) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        await start(peer, version, EXTENSION)
        answer = await peer.request(
            method,
            {"taskId": "no-such-task", "inputResponses": {}, "_meta": meta(version, EXTENSION)},
        )
    if method == "tasks/list" and version == "2025-11-25":
        assert answer["result"] == {"tasks": []}
        return
    if method in TASK_METHODS[revision(version).tasks]:
        assert answer["error"]["code"] == -32602  # known method, unknown task
        return
    assert answer["error"]["code"] == -32601
    assert answer["error"]["message"] == (
        f"Method not found: {method} (protocol version {version} has no such method)"
    )


@pytest.mark.parametrize("version", HANDSHAKE)
async def test_a_required_task_tool_is_refused_where_no_task_can_be_made(version: str) -> None:
    async with open_memory_peer(make_server(), initialize=False) as peer:
        await start(peer, version, EXTENSION)
        answer = await peer.call("only_task", {}, _meta=meta(version, EXTENSION))
    # 2025-11-25 names the code (-32601); before it, no revision has tasks at all, and the
    # tool's refusal is the extension's own, naming what would make it work.
    assert answer["error"]["code"] == (-32601 if version == "2025-11-25" else -32021)
