"""A trio-mcp Streamable HTTP server for `benchmarks/sse_bench.py`: a tool that streams events.

    python benchmarks/servers/trio_mcp_sse.py [--no-store]

`events(n)` reports `n` progress notifications, then answers: each call is one SSE stream of
`n + 1` events. With the default event store every event is numbered and kept before it is
sent (2025-11-25 sessions); `--no-store` serves with `HttpOptions(event_store=None)`. It prints
`serving MCP on <url>` on stderr once it listens.
"""

from __future__ import annotations

import argparse
import sys

import trio

from trio_mcp import Context, Server, serve_http
from trio_mcp.http import HttpOptions

server = Server("bench-trio-mcp-sse")


@server.tool()
async def events(ctx: Context, n: int) -> int:
    """Report `n` progress notifications, then answer `n`."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
    return n


async def main(store: bool) -> None:
    options = HttpOptions() if store else HttpOptions(event_store=None)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            lambda task_status: serve_http(
                server, host="127.0.0.1", port=0, options=options, task_status=task_status
            )
        )
        print(f"serving MCP on {listeners[0]}/mcp", file=sys.stderr, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-store", action="store_true")
    trio.run(main, not parser.parse_args().no_store)
