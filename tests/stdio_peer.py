"""A raw JSON-RPC peer for a server running as a real subprocess over stdio (trio, async).

It speaks bytes and dicts (no trio-mcp client), keeps every line the server wrote to stdout, and
validates every message against the official schema of the session's protocol version when the
session finishes. Waiting is always bounded by `trio.fail_after`, never by sleeping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, BinaryIO, Final

import trio

from tests.helpers import MODERN, init_params
from tests.schema_check import validate_transcript
from tests.timing import scaled

ROOT: Final = Path(__file__).resolve().parent.parent
ECHO_TOOLS: Final = str(ROOT / "tests" / "fixtures" / "echo_tools.py")
#: Seconds any single wait on the subprocess may take before the test fails.
TIMEOUT: Final = scaled(60)
#: Handshake-era version assumed for a session that never initializes.
DEFAULT_VERSION: Final = "2025-11-25"
MODERN_META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def demo_command() -> list[str]:
    return [sys.executable, "-m", "demo_tools"]


def echo_command(attribute: str | None = None) -> list[str]:
    target = ECHO_TOOLS if attribute is None else f"{ECHO_TOOLS}:{attribute}"
    return [sys.executable, "-m", "trio_mcp", "run", target]


class ServerClosedOutputError(AssertionError):
    """The server closed its stdout while the test still expected a message."""


class ProcessPeer:
    """One client of one server subprocess; create it with `open_server`."""

    def __init__(self, process: trio.Process, stderr_file: BinaryIO) -> None:
        self.process = process
        self._stderr_file = stderr_file
        self._stderr_final = b""
        self.version = DEFAULT_VERSION
        self.sent: list[Any] = []  # every message sent (decoded), for schema checks
        self.received: list[Any] = []  # every message received, in order
        self.stdout_lines: list[bytes] = []  # every raw line of stdout
        self._buffer = bytearray()
        self._unclaimed: list[Any] = []  # received but not yet handed out
        self._eof = False
        self._next_id = 1000

    @property
    def stderr(self) -> bytes:
        """Everything the server wrote to stderr (so far, or until the process ended)."""
        if not self._stderr_file.closed:
            self._stderr_file.seek(0)
            self._stderr_final = self._stderr_file.read()
        return self._stderr_final

    # -- sending -----------------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (add the newline yourself)."""
        assert self.process.stdin is not None
        await self.process.stdin.send_all(data)

    async def send(self, message: Any) -> None:
        self.sent.append(message)
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def start(
        self, method: str, params: dict[str, Any] | None = None, request_id: Any = None
    ) -> Any:
        """Send a request and return its id (a fresh int unless given)."""
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return request_id

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()

    # -- receiving ---------------------------------------------------------------------------------

    async def _line(self) -> bytes | None:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            if self._eof:
                return None
            chunk = await self.process.stdout.receive_some(1 << 20)
            if not chunk:
                self._eof = True
                if self._buffer:  # a last line without its newline still counts (and fails)
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    self.stdout_lines.append(line)
                    return line
                return None
            self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        self.stdout_lines.append(line)
        return line

    async def receive(self) -> Any:
        """The next message: one skipped by `response`, else the next line of stdout."""
        if self._unclaimed:
            return self._unclaimed.pop(0)
        return await self._receive_new()

    async def _receive_new(self) -> Any:
        with trio.fail_after(TIMEOUT):
            line = await self._line()
        if line is None:
            raise ServerClosedOutputError(f"server closed stdout; stderr:\n{self.stderr.decode()}")
        message = json.loads(line)
        self.received.append(message)
        return message

    async def response(self, request_id: Any) -> Any:
        """The next response to `request_id` (exact type); messages skipped on the way stay
        queued for `receive`."""
        for i, message in enumerate(self._unclaimed):
            if _answers(message, request_id):
                return self._unclaimed.pop(i)
        while True:
            message = await self._receive_new()
            if _answers(message, request_id):
                return message
            self._unclaimed.append(message)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, request_id: Any = None
    ) -> Any:
        return await self.response(await self.start(method, params, request_id))

    async def ping_answers(self) -> None:
        """Assert that the server still answers (the check after every bad input).

        Handshake era: `ping`. 2026-07-28 has no `ping`; `server/discover` stands in.
        """
        if self.version == MODERN:
            pong = await self.request("server/discover", {"_meta": MODERN_META})
        else:
            pong = await self.request("ping")
        assert "result" in pong, pong

    async def initialize(self, version: str = DEFAULT_VERSION) -> Any:
        response = await self.request("initialize", init_params(version))
        self.version = response["result"]["protocolVersion"]
        await self.notify("notifications/initialized")
        return response

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if self.version == MODERN:
            params["_meta"] = MODERN_META
        return await self.request("tools/call", params)

    async def read_to_eof(self) -> list[Any]:
        """Every message not yet handed out, until the server closes stdout."""
        messages, self._unclaimed = self._unclaimed, []
        while True:
            with trio.fail_after(TIMEOUT):
                line = await self._line()
            if line is None:
                return messages
            message = json.loads(line)
            self.received.append(message)
            messages.append(message)

    async def finish(self) -> int:
        """Close stdin, read stdout to its end, wait for the exit; check every message.

        Returns:
            The exit code.
        """
        await self.close_stdin()
        await self.read_to_eof()
        with trio.fail_after(TIMEOUT):
            code = await self.process.wait()
        self.check_schema()
        return code

    def check_schema(self) -> int:
        """Validate all received messages against the session version's schema."""
        return validate_transcript(self.sent, self.received, self.version)


def _answers(message: Any, request_id: Any) -> bool:
    return (
        isinstance(message, dict)
        and "method" not in message
        and "id" in message
        and type(message["id"]) is type(request_id)
        and message["id"] == request_id
    )


@asynccontextmanager
async def open_server(command: list[str] | None = None) -> AsyncIterator[ProcessPeer]:
    """Start a server subprocess and yield a peer; the process never outlives the block.

    stderr goes to a temporary file (no reader task needed, nothing can fill a pipe).
    """
    env = dict(os.environ, TRIO_MCP_DEMO_SEED="40000", PYTHONUNBUFFERED="1")
    with tempfile.TemporaryFile() as stderr:
        process = await trio.lowlevel.open_process(
            command or demo_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=ROOT,
        )
        peer = ProcessPeer(process, stderr)
        try:
            yield peer
        finally:
            if process.returncode is None:
                process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
                peer.stderr  # noqa: B018 - keep what it wrote before the file closes
                for stream in (process.stdin, process.stdout):
                    if stream is not None:
                        await stream.aclose()
