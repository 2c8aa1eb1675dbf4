"""The `calculator.add` tool served by trio-mcp, as a CLI target for `benchmarks/http_bench.py`.

    python -m trio_mcp run benchmarks/servers/trio_mcp_http.py --transport http --port 0

The tool is `inline=True`: it runs on the event loop, not in a worker thread.
"""

from __future__ import annotations

from trio_mcp import Server, tool


@tool("calculator.add", inline=True)
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


server = Server(name="bench-trio-mcp-http")
server.add_tool(add)  # name and inline come from its @tool metadata
