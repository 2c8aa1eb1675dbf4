"""Entry points called from asyncio say that trio-mcp runs under trio, and how to get there.

Real event loops, no mocks: each test is a plain function that starts asyncio (or anyio on
either backend) itself and calls the public entry inside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
import trio

import trio_mcp.testing
from demo_tools import build_server
from tests.helpers import python_json
from trio_mcp import (
    Server,
    TrioMCPError,
    TrioRequiredError,
    open_client,
    serve_http,
    serve_stdio,
)


async def call_through_the_kit() -> str | None:
    async with trio_mcp.testing.connect(build_server()) as client:
        return (await client.call_tool("calculator.add", {"a": 1, "b": 2})).text


async def call_through_open_client() -> None:
    async with open_client(build_server()) as client:
        await client.ping()


def test_the_kit_under_asyncio_says_to_run_the_test_under_trio() -> None:
    with pytest.raises(TrioRequiredError) as caught:
        asyncio.run(call_through_the_kit())
    text = str(caught.value)
    assert text.startswith(
        "trio_mcp.testing.connect was called from asyncio (directly or through anyio's asyncio "
        "backend), but trio-mcp runs under trio."
    )
    for fix in ("trio_mode = true", "@pytest.mark.trio", "anyio_backend", "trio.run(main)"):
        assert fix in text
    # One error, not a group, and part of the library's tree (a RuntimeError too).
    assert isinstance(caught.value, TrioMCPError)
    assert isinstance(caught.value, RuntimeError)


def test_open_client_under_asyncio_names_itself() -> None:
    with pytest.raises(TrioRequiredError, match=r"^trio_mcp\.open_client was called from asyncio"):
        asyncio.run(call_through_open_client())


def test_anyio_on_asyncio_gets_the_same_error() -> None:
    with pytest.raises(TrioRequiredError, match="called from asyncio"):
        anyio.run(call_through_the_kit, backend="asyncio")


def test_anyio_on_trio_just_works() -> None:
    assert anyio.run(call_through_the_kit, backend="trio") == "3.0"


def test_trio_just_works() -> None:
    assert trio.run(call_through_the_kit) == "3.0"


def _serve_stdio() -> Awaitable[None]:
    return serve_stdio(Server("s"))


def _serve_http() -> Awaitable[None]:
    return serve_http(Server("s"), port=0)


async def _serve_connection() -> None:
    send, receive = trio.open_memory_channel[bytes](1)
    await Server("s").serve_connection(receive, send)


@pytest.mark.parametrize(
    ("entry", "start"),
    [
        ("trio_mcp.serve_stdio", _serve_stdio),
        ("trio_mcp.serve_http", _serve_http),
        ("Server.serve_connection", _serve_connection),
    ],
)
def test_serving_under_asyncio_is_refused_before_anything_starts(
    entry: str, start: Callable[[], Awaitable[Any]]
) -> None:
    async def main() -> None:
        await start()

    with pytest.raises(TrioRequiredError, match=rf"^{entry} was called from asyncio"):
        asyncio.run(main())


def test_outside_any_event_loop_the_error_says_so() -> None:
    # A coroutine driven by hand: no loop of any kind runs.
    manager = open_client(build_server())
    step = manager.__aenter__()
    try:
        with pytest.raises(TrioRequiredError, match="called from outside any trio run"):
            step.send(None)
    finally:
        step.close()


# Once trio_asyncio is imported, `asyncio.run` runs its coroutine on a loop that drives trio: a
# trio run is active there, but the caller is an asyncio task all the same. In a fresh process,
# because the import changes asyncio for the whole process.
_UNDER_TRIO_ASYNCIO = """
import asyncio, json
import trio_asyncio
import trio_mcp.testing
from trio_mcp import Server, TrioRequiredError

async def main():
    async with trio_mcp.testing.connect(Server("s")):
        pass

try:
    asyncio.run(main())
except TrioRequiredError as exc:
    print(json.dumps(str(exc)))
"""


def test_asyncio_run_is_asyncio_even_when_trio_asyncio_drives_it() -> None:
    message = python_json(_UNDER_TRIO_ASYNCIO)
    assert message.startswith("trio_mcp.testing.connect was called from asyncio")
