"""`calculator.add` (inline) and `calculator.add_async` served by trio-mcp with or without
middleware, for `benchmarks/middleware_bench.py`.

    python benchmarks/servers/trio_mcp_middleware.py --middleware none|noop|timing|logging+timing
        --transport stdio|http|inprocess [--log PATH]

Middleware: "none"; "noop" (one `Middleware` whose `on_request` only calls on, with the
default `waits = True`: what a chain that may wait costs, since the server then answers every
request in a task of its own); "timing" (`Timing()`); "logging+timing" (`RequestLogging()`
outermost, then `Timing()`); the built-ins never wait, so inline calls stay on the reader.
`RequestLogging`'s lines go to `--log` (default: the null device) through a `FileHandler`
with a timestamped format, at INFO: formatting and writing a line are in the cost, as in a
server that logs to a file. Over HTTP it prints `serving MCP on <url>` on stderr once it
listens. "inprocess" serves nothing: it times the dispatcher alone (resolve and answer
`calculator.add` calls on a handshake-era session, no transport, no event loop), 30 batches
of 2,000 calls, and prints the best batch's microseconds per call as a JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from typing import Any

import trio

from trio_mcp import Server, serve_http, serve_stdio, tool
from trio_mcp._core.jsonrpc import Request
from trio_mcp.http import HttpOptions
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


def inprocess(server: Server, batches: int = 30, calls: int = 2000) -> float:
    """The best batch's microseconds per call through the dispatcher alone (module docstring)."""
    session = server._new_session()
    session.initialize(
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "v": ""}}
    )
    dispatcher = server._dispatcher
    requests = [
        Request(i, "tools/call", {"name": "calculator.add", "arguments": {"a": i, "b": 0.5}})
        for i in range(calls)
    ]
    best = float("inf")
    for _ in range(batches):
        started = time.perf_counter()
        for request in requests:
            answer = dispatcher.answer_now(session, dispatcher.resolve(request), "bench")
        best = min(best, time.perf_counter() - started)
        if answer["result"]["structuredContent"] != {"result": calls - 1 + 0.5}:
            raise SystemExit(f"wrong answer: {answer!r:.300}")
    return best / calls * 1e6


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
    parser.add_argument("--transport", choices=("stdio", "http", "inprocess"), required=True)
    parser.add_argument("--log", default=os.devnull)
    args = parser.parse_args()
    built = build(args.middleware, args.log)
    if args.transport == "inprocess":
        print(json.dumps({"us_per_call": inprocess(built)}))
    else:
        trio.run(main, built, args.transport)
