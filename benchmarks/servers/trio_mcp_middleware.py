"""`calculator.add` (inline) and `calculator.add_async` served by trio-mcp with or without
middleware, for `benchmarks/middleware_bench.py`.

    python benchmarks/servers/trio_mcp_middleware.py --middleware none|noop|timing|logging+timing
        --transport stdio|http [--log PATH]

Middleware: "none"; "noop" (one `Middleware` whose `on_request` only calls on, with the
default `waits = True`: what a chain that may wait costs, since the server then answers every
request in a task of its own); "timing" (`Timing()`); "logging+timing" (`RequestLogging()`
outermost, then `Timing()`); the built-ins never wait, so inline calls stay on the reader.
`RequestLogging`'s lines go to `--log` (default: the null device) through a `FileHandler`
with a timestamped format, at INFO: formatting and writing a line are in the cost, as in a
server that logs to a file. Over HTTP it prints `serving MCP on <url>` on stderr once it
listens.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

import trio

from trio_mcp import HttpOptions, Server, serve_http, serve_stdio, tool
from trio_mcp.middleware import CallNext, Middleware, RequestLogging, ResolvedRequest, Timing

MODES = ("none", "noop", "timing", "logging+timing")


@tool("calculator.add", inline=True)
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool("calculator.add_async")
async def add_async(a: float, b: float) -> float:
    """Add two numbers (async: every call runs in a task of its own, middleware or not)."""
    return a + b


class Noop(Middleware):
    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        return await call_next(request)


def build(mode: str, log: str) -> Server:
    middleware: list[Middleware] = []
    if mode == "noop":
        middleware.append(Noop())
    if mode == "logging+timing":
        logger = logging.getLogger("trio_mcp.requests")
        handler = logging.FileHandler(log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        middleware.append(RequestLogging())
    if mode in ("timing", "logging+timing"):
        middleware.append(Timing())
    server = Server(name="bench-trio-mcp-middleware", middleware=middleware)
    server.add_tool(add)
    server.add_tool(add_async)
    return server


async def main(server: Server, transport: str) -> None:
    if transport == "stdio":
        await serve_stdio(server)
        return
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            lambda task_status: serve_http(
                server, host="127.0.0.1", port=0, options=HttpOptions(), task_status=task_status
            )
        )
        print(f"serving MCP on {listeners[0]}/mcp", file=sys.stderr, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--middleware", choices=MODES, required=True)
    parser.add_argument("--transport", choices=("stdio", "http"), required=True)
    parser.add_argument("--log", default=os.devnull)
    args = parser.parse_args()
    trio.run(main, build(args.middleware, args.log), args.transport)
