"""The official MCP SDK's servers of tests/fixtures/sdk_*.py, as peers of the client tests.

Each fixture serves stdio when run as it is, and Streamable HTTP at /mcp on a free loopback
port with `--http`, writing `listening on <url>` to stderr once it is bound
(tests/fixtures/sdk_serving.py). `sdk_server(script, kind)` yields what `open_client` takes to
reach one: the command for "stdio"; for "http" the URL that line names, read from the running
subprocess (no guessed port, no sleeping), which is terminated when the block ends.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from tests.helpers import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"
#: Tools, resources, a template, a prompt and completion (`sdk-peer`).
SDK_SERVER = str(FIXTURES / "sdk_server.py")
#: Tools that elicit, sample and list roots, in both eras (`sdk-asking-peer`).
SDK_ASKING_SERVER = str(FIXTURES / "sdk_asking_server.py")
#: A tool that announces a resource update and a tools list change (2026-07-28).
SDK_LISTEN_SERVER = str(FIXTURES / "sdk_listen_server.py")

LISTENING = "listening on "


@asynccontextmanager
async def sdk_server(script: str, kind: str) -> AsyncIterator[str | list[str]]:
    """The SDK server `script` over `kind` ("stdio" or "http"): its command, or its URL."""
    if kind == "stdio":
        yield [sys.executable, script]
        return
    async with sdk_http_server(script) as url:
        yield url


@asynccontextmanager
async def sdk_http_server(script: str) -> AsyncIterator[str]:
    """Run the SDK server `script` over Streamable HTTP in a subprocess; yields its URL."""
    process = await trio.lowlevel.open_process(
        [sys.executable, script, "--http"], stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        seen = b""
        while b"\n" not in seen:
            chunk = await process.stderr.receive_some(4096)
            assert chunk, f"{script} ended before listening"
            seen += chunk
        line = seen.split(b"\n")[0].decode()
        assert line.startswith(LISTENING), f"{script} said {line!r} before listening"
        yield line.removeprefix(LISTENING)
    finally:
        process.terminate()
        await process.wait()
