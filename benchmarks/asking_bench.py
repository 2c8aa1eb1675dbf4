"""What asking the client costs: a call that elicits, beside a plain call, in one run.

    python benchmarks/asking_bench.py [--calls N] [--rounds N]

In-process (memory channels, trio-mcp's own client with handlers), so the transport does not
hide the work: a plain async tool call; the same call when the tool asks one question in the
handshake era (a request to the client and its answer); and under 2026-07-28 (an
`input_required` result with a sealed `requestState`, the client's answer, the call sent again
and run again from the start). Reported as microseconds per call (median of the rounds) and as
ratios to the plain call measured in the same run: absolute numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from typing import Any

import trio

from trio_mcp import AcceptedElicitation, Asking, Context, ElicitRequest, Server, open_client


@dataclass
class Name:
    name: str = "Ada"


def build() -> Server:
    server = Server("asking-bench")

    @server.tool()
    async def plain(ctx: Context) -> str:
        """No question."""
        return "Hello"

    @server.tool()
    async def greet(ctx: Context) -> str:
        """One question."""
        outcome = await ctx.elicit("Name?", Name)
        return f"Hello {outcome.data.name}" if isinstance(outcome, AcceptedElicitation) else "Hello"

    return server


async def answer(request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
    return AcceptedElicitation({"name": "Ada"})


async def per_call(server: Server, tool: str, version: str, calls: int) -> float:
    async with open_client(
        server,
        protocol_version=version,
        asking=Asking(elicitation=answer),
    ) as client:
        await client.call_tool(tool)  # warm: schemas compiled, first allocations made
        started = time.perf_counter()
        for _ in range(calls):
            result = await client.call_tool(tool)
            assert not result.is_error, result.text
        return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    server = build()
    cases = [
        ("plain call, 2025-11-25", "plain", "2025-11-25"),
        ("one elicitation, 2025-11-25 (a request)", "greet", "2025-11-25"),
        ("plain call, 2026-07-28", "plain", "2026-07-28"),
        ("one elicitation, 2026-07-28 (two rounds)", "greet", "2026-07-28"),
    ]
    samples: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for _ in range(args.rounds):
        for label, tool, version in cases:
            samples[label].append(trio.run(per_call, server, tool, version, args.calls))
    medians = {label: statistics.median(values) for label, values in samples.items()}
    print(f"{args.calls} calls x {args.rounds} rounds, in-process, median us per call:")
    for label, _, version in cases:
        base = medians[f"plain call, {version}"]
        low, high = min(samples[label]), max(samples[label])
        ratio = medians[label] / base
        print(f"  {label:<44} {medians[label]:8.1f} us  ({low:.1f}-{high:.1f})  {ratio:.2f}x")


if __name__ == "__main__":
    main()
