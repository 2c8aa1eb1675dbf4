"""Interop over HTTP: the official `mcp` SDK's clients against `trio-mcp run ... --transport http`.

The server is the real CLI in a subprocess (`python -m trio_mcp run demo_tools --transport http
--port 0`); it announces its bound URL on stderr, which is how the test learns the port and
knows it is ready (no guessed free port, no sleeping). Each test ends it with SIGTERM, the
graceful stop, and checks the exit code and that no traceback reached stderr.

The SDK (2.x) runs on anyio; these are plain sync tests that drive it with `asyncio.run`, so
the client side also runs on the event loop most SDK users have. Both SDK transports are
covered: Streamable HTTP (`streamable_http_client`, also what `Client(url)` picks) and the
legacy HTTP+SSE client (`sse_client`).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent

from tests.helpers import DEMO_TOOLS, init_params
from tests.http_helpers import POST_HEADERS, parse_sse
from tests.interop.test_sdk import PRIMITIVES, exercise_demo_codex, exercise_primitives
from tests.stdio_peer import ROOT
from tests.timing import scaled

#: Bounds the server's start, one SDK session, and the server's stop, each.
TIMEOUT = scaled(60)
pytestmark = [
    pytest.mark.slow,  # every test here runs a peer's process
    pytest.mark.filterwarnings("ignore:ping is removed as of 2026-07-28"),
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
]


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    base: str = ""
    stderr: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)

    def drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            found = re.search(r"serving MCP on (http://\S+)/mcp", line)
            if found:
                self.base = found.group(1)
                self.ready.set()
        self.ready.set()  # the process ended: stop waiting either way

    def stop(self) -> int:
        """SIGTERM, then the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=TIMEOUT)


@contextmanager
def trio_mcp_http(
    *args: str, env: dict[str, str] | None = None, target: str = "demo_tools"
) -> Iterator[ServerProcess]:
    """`trio-mcp run <target> --transport http --port 0 <args>` in a subprocess."""
    command = [sys.executable, "-m", "trio_mcp", "run", target, "--transport", "http"]
    process = subprocess.Popen(
        [*command, "--port", "0", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = ServerProcess(process)
    drainer = threading.Thread(target=server.drain, daemon=True)
    drainer.start()
    try:
        assert server.ready.wait(TIMEOUT), "the server did not announce its URL"
        assert server.base, "".join(server.stderr)
        yield server
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        drainer.join(TIMEOUT)


def assert_stopped_cleanly(server: ServerProcess) -> None:
    code = server.stop()
    text = "".join(server.stderr)
    assert code == 0, text
    assert "Traceback" not in text, text
    assert "SIGTERM, stopping" in text


def only_text(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def list_and_add(client: Client) -> None:
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == DEMO_TOOLS
    added = await client.call_tool("calculator.add", {"a": 5, "b": 3})
    assert not added.is_error
    assert added.structured_content == {"result": 8}
    assert float(only_text(added)) == 8


async def exercise(client: Client) -> None:
    await list_and_add(client)
    divided = await client.call_tool("calculator.divide", {"a": 5, "b": 0})
    assert divided.is_error
    assert only_text(divided) == "Cannot divide by zero"
    updates: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total))

    battle = await client.call_tool(
        "wh40k.battle_simulation", {"imperial_force": "Cadian 8th"}, progress_callback=on_progress
    )
    assert not battle.is_error
    assert battle.structured_content is not None
    assert battle.structured_content["imperial_force"] == "Cadian 8th"
    assert updates == [(1, 3), (2, 3), (3, 3)]  # progress arrived on the call's SSE stream


def run_async(main: Any) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(TIMEOUT):
            await main()

    asyncio.run(bounded())


def test_sdk_streamable_http_client() -> None:
    with trio_mcp_http() as server:
        url = server.base + "/mcp"

        async def main() -> None:
            async with Client(streamable_http_client(url), mode="legacy") as client:
                assert client.protocol_version == "2025-11-25"
                assert client.server_info is not None
                assert client.server_info.name == "trio-mcp-demo"
                await exercise(client)
                await client.send_ping()
            # The SDK's default probes server/discover and settles on 2026-07-28, as over stdio.
            async with Client(url) as client:
                assert client.protocol_version == "2026-07-28"
                await list_and_add(client)
            async with Client(url, mode="2026-07-28") as client:
                await exercise(client)

        run_async(main)
        assert_stopped_cleanly(server)


def test_sdk_sse_client() -> None:
    with trio_mcp_http() as server:

        async def main() -> None:
            async with Client(sse_client(server.base + "/sse"), mode="legacy") as client:
                assert client.protocol_version == "2025-11-25"
                await exercise(client)

        run_async(main)
        assert_stopped_cleanly(server)


def test_sdk_modern_client_against_stateless_server_with_token() -> None:
    token = "interop-token"
    with trio_mcp_http("--stateless", env={"TRIO_MCP_BEARER_TOKEN": token}) as server:
        url = server.base + "/mcp"

        async def main() -> None:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with (
                http,
                Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client,
            ):
                assert client.protocol_version == "2026-07-28"
                await exercise(client)
            anonymous = Client(streamable_http_client(url), mode="2026-07-28")
            with pytest.raises(ExceptionGroup) as refused:
                async with anonymous as client:
                    await client.list_tools()
            # The SDK surfaces the JSON-RPC error body of the 401.
            assert refused.group_contains(MCPError, match="bearer token")

        run_async(main)
        assert_stopped_cleanly(server)


def test_sigterm_lets_a_call_in_flight_finish() -> None:
    with trio_mcp_http() as server, httpx.Client(base_url=server.base, timeout=TIMEOUT) as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()}
        session_id = http.post("/mcp", headers=POST_HEADERS, json=init).headers["mcp-session-id"]
        headers = {**POST_HEADERS, "mcp-session-id": session_id}
        battle = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "wh40k.battle_simulation", "_meta": {"progressToken": 1}},
        }
        text = ""
        with http.stream("POST", "/mcp", headers=headers, json=battle) as stream:
            for chunk in stream.iter_text():
                if not text:  # the battle (0.5 s) is under way
                    server.process.send_signal(signal.SIGTERM)
                text += chunk
        assert server.process.wait(timeout=TIMEOUT) == 0
    messages = parse_sse(text)
    assert messages[-1]["id"] == 2
    assert "structuredContent" in messages[-1]["result"]
    assert "Traceback" not in "".join(server.stderr)


def test_sdk_reads_resources_gets_prompts_and_completes_over_streamable_http() -> None:
    async def main(url: str) -> None:
        async with Client(streamable_http_client(url), mode="legacy") as client:
            await exercise_primitives(client, "2025-11-25")
        async with Client(streamable_http_client(url), mode="auto") as client:
            await exercise_primitives(client, "2026-07-28")

    with trio_mcp_http(target=PRIMITIVES) as server:
        asyncio.run(asyncio.wait_for(main(f"{server.base}/mcp"), TIMEOUT))
        assert_stopped_cleanly(server)


def test_sdk_reads_the_demo_codex_over_streamable_http() -> None:
    async def main(url: str) -> None:
        async with Client(streamable_http_client(url), mode="legacy") as client:
            await exercise_demo_codex(client)
        async with Client(streamable_http_client(url), mode="auto") as client:
            await exercise_demo_codex(client)

    with trio_mcp_http() as server:
        asyncio.run(asyncio.wait_for(main(f"{server.base}/mcp"), TIMEOUT))
        assert_stopped_cleanly(server)
