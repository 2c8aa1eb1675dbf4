"""The benchmark tools served by the standalone FastMCP package (`pip install fastmcp`).

    python benchmarks/servers/fastmcp_server.py

Used only when `fastmcp` is importable; `run.py` skips it otherwise.
"""

from __future__ import annotations

import anyio
from fastmcp import FastMCP  # type: ignore[import-not-found, unused-ignore]


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


if __name__ == "__main__":
    server = FastMCP("bench-fastmcp")
    server.tool(add, name="calculator.add")
    server.tool(add_async, name="calculator.add_async")
    server.tool(sleep, name="sleep")
    server.run(show_banner=False)
