"""The demo tools plus two probe tools, as a CLI target for `benchmarks/reliability.py`.

    python -m trio_mcp run benchmarks/servers/probe_server.py [--transport http --port 0]

The demo's slowest tool takes half a second, too short to be sure a call is still running when
a client vanishes or the server is told to stop; `probe.sleep` runs as long as it is asked to,
and says when it has started (a progress notification, when the request asked for progress).
`probe.flood` writes progress notifications as fast as its client takes them, to see what the
server does with a client that never reads. The grace period after the end of the input (or
SIGTERM over HTTP) is 2 s instead of 10 s, so that the probe does not wait 10 s to see calls
cut short; everything else is the demo server as `python -m demo_tools` serves it.
"""

from __future__ import annotations

from typing import Annotated

import trio
from pydantic import Field

import demo_tools
from trio_mcp import Context, Param, Timeouts

#: Seconds calls may still take after the input ends (or SIGTERM over HTTP).
SHUTDOWN_GRACE = 2.0

server = demo_tools.build_server()
server.timeouts = Timeouts(shutdown=SHUTDOWN_GRACE)


@server.tool("probe.sleep", "Report progress 0 at once, then sleep; returns the seconds slept")
async def sleep(
    ctx: Context, seconds: Annotated[float, Param("How long to sleep"), Field(ge=0)]
) -> float:
    await ctx.report_progress(0, message="started")
    await trio.sleep(seconds)
    return seconds


@server.tool("probe.flood", "Send `count` progress notifications of `size` characters each")
async def flood(
    ctx: Context,
    count: Annotated[int, Param("How many notifications"), Field(ge=0)],
    size: Annotated[int, Param("Characters in each one's message"), Field(ge=0, le=1 << 20)],
) -> int:
    text = "x" * size
    for sent in range(count):
        await ctx.report_progress(sent, count, text)
    return count
