"""The benchmark tools served by trio-mcp over stdio.

    python benchmarks/servers/trio_mcp_server.py [--inline]

Tools: `calculator.add` (sync: in a worker thread by default, on the event loop with
`--inline`), `calculator.add_async`, and `sleep` (async, 100 ms). A resource template
`bench://items/{item_id}` and a prompt `greet(name)`, sync functions run like `calculator.add`.
"""

from __future__ import annotations

import sys

import trio

import trio_mcp


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def add_async(a: float, b: float) -> float:
    """Add two numbers (async)."""
    return a + b


async def sleep() -> str:
    """Sleep 100 ms, then answer."""
    await trio.sleep(0.1)
    return "slept"


def item(item_id: int) -> str:
    """One item, by number."""
    return f"item {item_id}"


def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


def build(*, inline: bool) -> trio_mcp.Server:
    server = trio_mcp.Server(name="bench-trio-mcp")
    server.add_tool(add, name="calculator.add", inline=inline)
    server.add_tool(add_async, name="calculator.add_async")
    server.add_tool(sleep, name="sleep")
    server.add_resource("bench://items/{item_id}", item, inline=inline)
    server.add_prompt(greet, name="greet", inline=inline)
    return server


if __name__ == "__main__":
    trio_mcp.run(build(inline="--inline" in sys.argv[1:]))
