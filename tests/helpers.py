"""Test helpers: a raw JSON-RPC peer for in-memory connections and for subprocess servers.

They speak bytes and dicts only (no trio-mcp client), so the tests check the wire itself.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import trio

from tests.schema_check import validate_server_message
from tests.timing import scaled
from trio_mcp import AuthInfo, Client, Server
from trio_mcp._exceptions import reraise_lone
from trio_mcp._runtime.client import open_session
from trio_mcp._runtime.options import SessionOptions
from trio_mcp.transports import memory_channel_pair
from trio_mcp.transports.links import ChannelLink

#: The repository's root folder.
REPO_ROOT = Path(__file__).resolve().parent.parent

#: The newest handshake-era revision and the per-request one: the two the tests speak most.
LATEST = "2025-11-25"
MODERN = "2026-07-28"
#: The `_meta` of a 2026-07-28 request from a client that declares no capabilities.
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
#: Bounds one in-memory session of a test (`session`): its handshake, requests and end.
SESSION_TIMEOUT = scaled(60)
#: The demo server's tools, in registration order.
DEMO_TOOLS = [
    "calculator.add",
    "calculator.subtract",
    "calculator.multiply",
    "calculator.divide",
    "calculator.power",
    "wh40k.inquisitor_name",
    "wh40k.roll_dice",
    "wh40k.battle_simulation",
    "wh40k.wager",
    "wh40k.battle_report",
    "wh40k.campaign",
]


def init_params(version: str = LATEST) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "tests", "version": "0"},
    }


class RawPeer:
    """Sends frames, receives decoded messages; every received message is also kept in `log`."""

    def __init__(
        self, send: trio.abc.SendChannel[bytes], receive: trio.abc.ReceiveChannel[bytes]
    ) -> None:
        self._send = send
        self._receive = receive
        self._ids = itertools.count(1)
        self.log: list[Any] = []

    async def send_raw(self, frame: bytes) -> None:
        await self._send.send(frame)

    async def send(self, message: Any) -> None:
        await self._send.send(json.dumps(message).encode())

    async def receive(self) -> Any:
        message = json.loads(await self._receive.receive())
        self.log.append(message)
        return message

    async def start_request(self, method: str, params: dict[str, Any] | None = None) -> int:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return request_id

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its response, skipping notifications."""
        request_id = await self.start_request(method, params)
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def initialize(self, version: str = LATEST) -> Any:
        response = await self.request("initialize", init_params(version))
        await self.notify("notifications/initialized")
        return response

    async def call(self, name: str, arguments: dict[str, Any] | None = None, **params: Any) -> Any:
        return await self.request(
            "tools/call", {"name": name, "arguments": arguments or {}, **params}
        )

    async def close(self) -> None:
        await self._send.aclose()


@asynccontextmanager
async def open_memory_peer(
    server: Server, *, initialize: bool = True, auth: AuthInfo | None = None
) -> AsyncIterator[RawPeer]:
    """Serve `server` in-process and yield a raw peer connected to it.

    With `auth`, the connection is one whose transport verified that token (as HTTP's are).
    """
    client, server_end = memory_channel_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(
            functools.partial(server.serve_connection, auth=auth),
            server_end.receive,
            server_end.send,
        )
        peer = RawPeer(client.send, client.receive)
        if initialize:
            await peer.initialize()
        yield peer
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def session(server: Server, version: str) -> AsyncIterator[RawPeer]:
    """A raw peer of `server` in memory speaking `version`: it has shaken hands under a
    handshake-era revision, and shakes none under 2026-07-28 (`ask` sends the `_meta`)."""
    with trio.fail_after(SESSION_TIMEOUT):
        async with open_memory_peer(server, initialize=False) as peer:
            if version != MODERN:
                await peer.initialize(version)
            yield peer


async def ask(peer: RawPeer, method: str, params: dict[str, Any] | None, version: str) -> Any:
    """Send a request (with `MODERN_META` under 2026-07-28); check the response against the
    official schema of `version` and return it."""
    if version == MODERN:
        params = {**(params or {}), "_meta": MODERN_META}
    response = await peer.request(method, params)
    validate_server_message(response, version, method)
    return response


def python_json(script: str, *args: str) -> Any:
    """Run `script` in a fresh interpreter (`python -c script args...`); decode what it prints.

    For what only a new process can show: which modules an import loads.
    """
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=scaled(60),
    )
    return json.loads(proc.stdout)


def run_pytest(folder: Path, *args: str) -> dict[str, tuple[str, str]]:
    """Run pytest on `folder` in a fresh interpreter, as a user's suite would run.

    Returns:
        "module::test" -> (outcome, message): "passed", "failed", "error" or "skipped",
        with the failure's message ("" when it passed).
    """
    report = folder / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}", *args],
        cwd=folder,
        capture_output=True,
        check=False,
        timeout=scaled(120),
    )
    outcomes: dict[str, tuple[str, str]] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = child.get("message", "")
                break
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = (outcome, message)
    return outcomes


def demo_command() -> list[str]:
    return [sys.executable, "-m", "demo_tools"]


def spawn_demo(*extra_env: tuple[str, str]) -> subprocess.Popen[bytes]:
    """Start the demo server as a real subprocess over stdio (blocking pipes, for sync tests)."""
    env = dict(os.environ, TRIO_MCP_DEMO_SEED="40000", **dict(extra_env))
    return subprocess.Popen(
        demo_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def exchange(lines: list[bytes], *, timeout: float = 30) -> tuple[list[Any], bytes, int]:
    """Send lines to a fresh demo server, close stdin, return (messages, stderr, exit code)."""
    proc = spawn_demo()
    out, err = proc.communicate(b"".join(line + b"\n" for line in lines), timeout=timeout)
    messages = [json.loads(line) for line in out.splitlines()]
    return messages, err, proc.returncode


ScriptedServer = Callable[[Any, Callable[[Any], Awaitable[None]]], Awaitable[None]]


@asynccontextmanager
async def scripted(answer: ScriptedServer, **options: Any) -> AsyncIterator[Client]:
    """A client whose server is `answer(message, send)`, called for each message received.

    For what well-behaved servers never do, and for servers a test scripts message by message.
    """
    client_end, server_end = memory_channel_pair()

    async def serve() -> None:
        async with server_end.send:
            async for frame in server_end.receive:
                message = json.loads(frame)

                async def send(reply: Any) -> None:
                    await server_end.send.send(json.dumps(reply).encode())

                await answer(message, send)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            link = ChannelLink(client_end.send, client_end.receive)
            async with open_session(link, SessionOptions(**options)) as client:
                yield client
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        reraise_lone(group)
