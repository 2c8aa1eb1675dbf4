"""A real `Client` over a real transport, every message both ways checked against its schema.

`trio_mcp.testing.connect` checks an in-process server's messages; a server of someone else's
(a subprocess, an HTTP endpoint) is checked here instead, on the client's link: what the
client sends before it goes, what the server sends as the client reads it, with the checker
`trio_mcp.testing` ships (`MessageChecker`). The first message that breaks its revision's
schema raises `SchemaViolationError` out of the `async with`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import trio

from tests.schema_check import MessageChecker
from trio_mcp import Asking, Client
from trio_mcp._exceptions import reraise_lone
from trio_mcp._runtime.client import open_session
from trio_mcp._runtime.link import Incoming, Link
from trio_mcp._runtime.options import SessionOptions
from trio_mcp.transports.http.client import open_streamable_http_link
from trio_mcp.transports.links import open_process_link


class _CheckedIncoming(trio.abc.ReceiveChannel[Any]):
    """What the server sends, each frame checked as the client takes it."""

    def __init__(self, inner: Incoming, checker: MessageChecker) -> None:
        self._inner = inner
        self._checker = checker

    async def receive(self) -> Any:
        item = await self._inner.receive()
        for frame in (item,) if isinstance(item, bytes | bytearray) else item:
            if isinstance(frame, bytes | bytearray):
                self._checker.check_frame("server", bytes(frame))
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()


class CheckedLink:
    """A `Link` whose messages both ways go through `checker`."""

    def __init__(self, link: Link, checker: MessageChecker) -> None:
        self._link = link
        self._checker = checker
        self._incoming = _CheckedIncoming(link.incoming, checker)

    @property
    def incoming(self) -> Any:
        return self._incoming

    @property
    def session_id(self) -> str | None:
        return self._link.session_id

    async def send(self, message: dict[str, Any], *, retry_safe: bool = False) -> None:
        self._checker.check("client", message)
        await self._link.send(message, retry_safe=retry_safe)

    def negotiated(self, version: str) -> None:
        self._link.negotiated(version)

    def mirror_params(self, tools: Mapping[str, Mapping[str, tuple[str, ...]]]) -> bool:
        return self._link.mirror_params(tools)

    async def listen(self) -> None:
        await self._link.listen()

    async def close_reason(self) -> str:
        return await self._link.close_reason()


@contextlib.asynccontextmanager
async def open_checked_client(
    target: str | Sequence[str],
    *,
    protocol_version: str = "2025-11-25",
    asking: Asking | None = None,
    tasks: bool = False,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[tuple[Client, MessageChecker]]:
    """A client of `target` (a command: stdio; a URL: Streamable HTTP) and its checker."""
    asking = asking or Asking()
    checker = MessageChecker(protocol_version)
    options = SessionOptions(protocol_version=protocol_version, asking=asking, tasks=tasks)
    link_cm: Any = (
        open_streamable_http_link(target, listen=asking.listens)
        if isinstance(target, str)
        else open_process_link(list(target), env=env)
    )
    try:
        async with (
            link_cm as link,
            open_session(CheckedLink(link, checker), options=options) as client,
        ):
            yield client, checker
    except BaseExceptionGroup as group:
        reraise_lone(group)
