"""The benchmark tools served by the official MCP SDK's high-level server over stdio.

    python benchmarks/servers/sdk_server.py

mcp 2.x calls it `mcp.server.mcpserver.MCPServer`; 1.x called it `FastMCP`
(`mcp.server.fastmcp`). Both run a sync tool in a worker thread. The resource template
`bench://items/{item_id}` and the prompt `greet(name)` match trio_mcp_server.py's.
"""

from __future__ import annotations

import importlib
from typing import Any

import anyio


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def add_async(a: float, b: float) -> float:
    """Add two numbers (async)."""
    return a + b


async def sleep() -> str:
    """Sleep 100 ms, then answer."""
    await anyio.sleep(0.1)
    return "slept"


def item(item_id: int) -> str:
    """One item, by number."""
    return f"item {item_id}"


def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


def server_class() -> Any:
    """`MCPServer` (mcp 2.x) or `FastMCP` (mcp 1.x)."""
    try:
        return importlib.import_module("mcp.server.mcpserver").MCPServer
    except ImportError:
        return importlib.import_module("mcp.server.fastmcp").FastMCP


def build() -> Any:
    server = server_class()("bench-sdk", log_level="WARNING")
    server.add_tool(add, name="calculator.add")
    server.add_tool(add_async, name="calculator.add_async")
    server.add_tool(sleep, name="sleep")
    server.resource("bench://items/{item_id}")(item)
    server.prompt(name="greet")(greet)
    return server


if __name__ == "__main__":
    build().run()
