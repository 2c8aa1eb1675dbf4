"""Interop: the MCP Inspector's command line calls `wh40k.campaign` on the demo and gets it.

The pinned npm package `@modelcontextprotocol/inspector` 2.12 speaks the legacy era by default
(an `initialize` handshake settling on 2025-11-25) and declares the tasks extension there.
Before each era kept to its own tasks, the demo answered its task tool with a task handle,
which 2025-11-25 does not allow, and the Inspector reported "declares an output schema but
returned no structured content". Here it calls the tool over stdio (through a recorder, every
message then checked against the 2025-11-25 schema), Streamable HTTP and legacy SSE (each
result the server sent checked against its revision's schema by a middleware), and prints the
structured result. Skipped, saying why, without npm (`tests/npm_tools.py`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import demo_tools
import trio_mcp
from tests.http_helpers import serve
from tests.npm_tools import NpmInstall, npm_install
from tests.schema_check import RESULTS, MessageChecker, validate_definition
from tests.timing import scaled
from trio_mcp._dispatch.resolve import ResolvedRequest
from trio_mcp.middleware import Middleware

pytestmark = pytest.mark.slow  # a Node process and a Python server

TIMEOUT = scaled(120)
RECORDER = Path(__file__).resolve().parents[1] / "fixtures" / "stdio_recorder.py"
ROOT = Path(__file__).resolve().parents[2]
#: Where this checkout's package lives: the Inspector starts a stdio server with a clean
#: environment, so the server is told where to import trio_mcp from (`-e PYTHONPATH=`).
PACKAGE_ROOT = Path(trio_mcp.__file__).resolve().parent.parent
TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture(scope="module")
def inspector() -> NpmInstall:
    return npm_install("inspector")


async def run_cli(install: NpmInstall, *target: str) -> dict[str, Any]:
    """Call `wh40k.campaign` with the Inspector's CLI; what it printed, decoded."""
    cli = install.module("@modelcontextprotocol", "inspector", "clients", "launcher", "build")
    command = [
        str(install.node),
        str(cli / "index.js"),
        "--cli",
        "--tool-arg",  # first: it takes every word up to the next option
        "battles=2",
        "--method",
        "tools/call",
        "--tool-name",
        "wh40k.campaign",
        *target,
    ]
    with trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.strip(), done.stderr.decode()
    printed: dict[str, Any] = json.loads(done.stdout)
    return printed


def assert_campaign(printed: dict[str, Any]) -> None:
    assert "error" not in printed, printed
    report = printed["structuredContent"]
    assert len(report["battles"]) == 2
    assert report["imperial_victories"] + report["enemy_victories"] == 2
    assert report["verdict"] in printed["content"][0]["text"]
    assert "resultType" not in printed


async def test_over_stdio_every_message_checked(inspector: NpmInstall, tmp_path: Path) -> None:
    transcript = tmp_path / "transcript.jsonl"
    server = [sys.executable, str(RECORDER), str(transcript), "--", sys.executable, "-m"]
    printed = await run_cli(
        inspector,
        "-e",
        f"PYTHONPATH={PACKAGE_ROOT}",
        "--cwd",
        str(ROOT),  # where `-m demo_tools` is found
        "--",
        *server,
        "demo_tools",
    )
    assert_campaign(printed)
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    initialize = json.loads(entries[0]["frame"])
    assert initialize["method"] == "initialize"
    assert TASKS in initialize["params"]["capabilities"]["extensions"]  # the legacy handshake
    checker = MessageChecker(initialize["params"]["protocolVersion"])
    for entry in entries:
        checker.check_frame(entry["from"], entry["frame"].encode())
    assert checker.version == "2025-11-25"
    assert checker.checked == len(entries)


class Results(Middleware):
    """Checks each result the server sends against its revision's schema."""

    inline = True

    def __init__(self) -> None:
        self.checked: list[str] = []

    async def on_request(self, request: ResolvedRequest, call_next: Any) -> dict[str, Any]:
        result: dict[str, Any] = await call_next(request)
        name = RESULTS.get(request.method)
        if name is not None and request.version is not None:
            validate_definition(result, request.version, name)
            self.checked.append(request.method)
        return result


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
async def test_over_http_and_legacy_sse(inspector: NpmInstall, path: str) -> None:
    server = demo_tools.build_server()
    checked = Results()
    server.add_middleware(checked)
    async with serve(server) as served:
        printed = await run_cli(inspector, served.base + path)
    assert_campaign(printed)
    assert "tools/call" in checked.checked
