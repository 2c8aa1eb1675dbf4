"""A small server for the observability middleware's tests, and a call cancelled on it."""

from __future__ import annotations

from typing import Any

import trio
from pydantic import BaseModel

from trio_mcp import Context, Server
from trio_mcp.middleware import CallNext, Middleware, ResolvedRequest
from trio_mcp.testing import connect

#: Bounds each test's connection.
TIMEOUT = 30


class Confirm(BaseModel):
    ok: bool


def make_server(*middleware: Any) -> Server:
    server = Server("observed", middleware=list(middleware))

    @server.tool(inline=True)
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def broken() -> str:
        raise ValueError("it broke")

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.resource("config://main")
    def config() -> str:
        return "main"

    @server.prompt()
    def greet(who: str) -> str:
        return f"Hello {who}"

    @server.tool()
    async def confirm(ctx: Context) -> str:  # asks once (a 2026-07-28 input round)
        await ctx.elicit("Sure?", Confirm)
        return "confirmed"

    return server


async def cancel_a_hanging_call(*middleware: Any) -> None:
    """Call a tool that never returns through `middleware`, cancel the call, and return once
    the middleware are done with it (an outermost one hears it)."""
    ended = trio.Event()
    started = trio.Event()

    class Ended(Middleware):
        async def on_call_tool(
            self, request: ResolvedRequest, call_next: CallNext
        ) -> dict[str, Any]:
            try:
                return await call_next(request)
            finally:
                ended.set()

    server = make_server(Ended(), *middleware)

    @server.tool()
    async def hang() -> str:
        started.set()
        await trio.sleep_forever()
        return "never"

    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "hang")
                await started.wait()
                nursery.cancel_scope.cancel()
            await ended.wait()
