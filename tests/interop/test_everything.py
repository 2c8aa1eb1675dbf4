"""Interop: trio-mcp's client and command line against the reference `server-everything`.

The pinned npm package `@modelcontextprotocol/server-everything` (built on the TypeScript SDK
1.x) has a tool that runs only as a 2025-11-25 task (`simulate-research-query`,
`execution.taskSupport: "required"`): a client that calls it without `params.task` gets
-32601. trio-mcp's client and command line call it over stdio and Streamable HTTP, and follow
the task to its report; with `ambiguous`, the task asks its question on `tasks/result`. The
server also asks a client that declares it to run sampling and elicitation as tasks
(`trigger-sampling-request-async`, `trigger-elicitation-request-async`): trio-mcp's client does.
Every message of the client's flows is checked against the 2025-11-25 schema on its link
(`tests/checked_client.py`), and the command line's through a recording of its stdio.
Skipped, saying why, without npm (`tests/npm_tools.py`).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.checked_client import open_checked_client
from tests.npm_tools import NpmInstall, npm_install
from tests.redis_helpers import free_port
from tests.schema_check import MessageChecker
from tests.timing import scaled
from trio_mcp import (
    AcceptedElicitation,
    Asking,
    ElicitRequest,
    SamplingRequest,
    SamplingResult,
)
from trio_mcp.tasks import TaskInfo

pytestmark = pytest.mark.slow  # starts Node servers; each task takes a few seconds

#: Bounds each test: the research task alone takes four one-second stages.
TIMEOUT = scaled(120)
VERSION = "2025-11-25"
TOOL = "simulate-research-query"
RECORDER = Path(__file__).resolve().parents[1] / "fixtures" / "stdio_recorder.py"


@pytest.fixture(scope="module")
def everything() -> NpmInstall:
    return npm_install("server-everything")


def stdio_command(install: NpmInstall) -> list[str]:
    entry = install.module("@modelcontextprotocol", "server-everything", "dist", "index.js")
    return [str(install.node), str(entry), "stdio"]


@asynccontextmanager
async def over_http(install: NpmInstall) -> AsyncIterator[str]:
    """The server over Streamable HTTP on a free loopback port; its endpoint's URL."""
    port = free_port()
    command = [*stdio_command(install)[:-1], "streamableHttp"]
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                command,
                env={**os.environ, "PORT": str(port)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                check=False,
            )
        )
        assert process.stderr is not None
        said = b""
        with trio.fail_after(TIMEOUT):
            while b"listening on port" not in said:
                chunk = await process.stderr.receive_some()
                if not chunk:
                    raise RuntimeError(f"server-everything ended: {said.decode()}")
                said += chunk
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


async def choose(request: ElicitRequest) -> AcceptedElicitation[Any]:
    return AcceptedElicitation({"interpretation": "programming"})


@asynccontextmanager
async def target(install: NpmInstall, kind: str) -> AsyncIterator[Any]:
    if kind == "stdio":
        yield stdio_command(install)
    else:
        async with over_http(install) as url:
            yield url


@pytest.mark.parametrize("kind", ["stdio", "streamable-http"])
async def test_our_client_runs_the_task_required_tool(everything: NpmInstall, kind: str) -> None:
    seen: list[TaskInfo] = []
    asked: list[str] = []

    async def answer(request: ElicitRequest) -> AcceptedElicitation[Any]:
        asked.append(request.message)
        return await choose(request)

    with trio.fail_after(TIMEOUT):
        async with (
            target(everything, kind) as where,
            open_checked_client(where, asking=Asking(elicitation=answer)) as (client, checker),
        ):
            result = await client.call_tool(
                TOOL, {"topic": "python", "ambiguous": True}, on_task_status=seen.append
            )
    assert client.protocol_version == VERSION
    assert not result.is_error
    assert "# Research Report: python (programming)" in result.text
    assert len(asked) == 1  # on the tasks/result stream, once
    assert "python" in asked[0]
    assert seen[0].status == "working"
    assert seen[-1].status == "completed"
    assert checker.checked > 10


@pytest.mark.parametrize("kind", ["stdio", "streamable-http"])
async def test_the_command_line_runs_the_task_required_tool(
    everything: NpmInstall, kind: str, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcript.jsonl"
    cli = [sys.executable, "-m", "trio_mcp", "call"]
    with trio.fail_after(TIMEOUT):
        async with target(everything, kind) as where:
            if kind == "stdio":
                # Recorded on its way, so that every message can be checked afterwards.
                server = [sys.executable, str(RECORDER), str(transcript), "--", *where]
                command = [*cli, TOOL, "topic=python", "--", *server]
            else:
                command = [*cli, where, TOOL, "topic=python"]
            done = await trio.run_process(
                command, capture_stdout=True, capture_stderr=True, check=False
            )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "# Research Report: python" in out
    assert "task working" in err  # the task's status, as it changed
    if kind == "stdio":
        checker = MessageChecker(VERSION)
        for line in transcript.read_text().splitlines():
            entry = json.loads(line)
            checker.check_frame(entry["from"], entry["frame"].encode())
        assert checker.checked > 5


async def test_our_client_runs_the_servers_sampling_as_a_task(everything: NpmInstall) -> None:
    async def sample(request: SamplingRequest) -> SamplingResult:
        return SamplingResult({"type": "text", "text": "a sample"}, model="test-model")

    with trio.fail_after(TIMEOUT):
        async with open_checked_client(
            stdio_command(everything), tasks=True, asking=Asking(sampling=sample)
        ) as (client, _):
            caps = client.server_capabilities
            result = await client.call_tool("trigger-sampling-request-async", {"prompt": "hi"})
    assert "tasks" in caps
    assert "[COMPLETED] Async sampling completed" in result.text, result.text
    assert "test-model" in result.text
    assert "a sample" in result.text


async def test_our_client_runs_the_servers_elicitation_as_a_task(everything: NpmInstall) -> None:
    async def answer(request: ElicitRequest) -> AcceptedElicitation[Any]:
        return AcceptedElicitation({"name": "Ada", "favoriteColor": "Blue"})

    with trio.fail_after(TIMEOUT):
        async with open_checked_client(
            stdio_command(everything), tasks=True, asking=Asking(elicitation=answer)
        ) as (client, _):
            result = await client.call_tool("trigger-elicitation-request-async")
    assert "Ada" in result.text, result.text
    assert not result.is_error
