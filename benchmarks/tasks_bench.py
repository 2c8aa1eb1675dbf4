"""What the tasks extension costs: 1,000 concurrent calls that become tasks, beside plain calls.

    python benchmarks/tasks_bench.py [--calls N] [--rounds N] [--work SECONDS]

In-process (memory channels, trio-mcp's own client with `tasks=True`, under 2026-07-28), so
the transport does not hide the work. Each round makes N concurrent calls of a tool that
sleeps `--work` seconds, once as plain calls and once as tasks (the call answers a
`CreateTaskResult`, the client polls `tasks/get` every 50 ms until the inlined result), and
reports the CPU time per call (the process's, so the client's and the server's) and its ratio
to the plain calls measured in the same run: the task machinery's overhead per call. Then the
memory per live call (tracemalloc): N tasks created and still working (the client holds only
their handles) beside N plain calls in flight, each as bytes per call and as a ratio.
Absolute numbers depend on the machine; the ratios are the result.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from typing import Any

import trio

from trio_mcp import Server, open_client
from trio_mcp.tasks import TaskInfo, TaskSupport

MODERN = "2026-07-28"
#: The tasks ask to be polled every 50 ms: the client's shortest interval.
POLL = 0.05


def build(release: trio.Event) -> Server:
    server = Server("tasks-bench")

    @server.tool()
    async def plain(seconds: float) -> str:
        """A call that runs to its end."""
        await trio.sleep(seconds)
        return "done"

    @server.tool(task=TaskSupport(poll_interval=POLL))
    async def job(seconds: float) -> str:
        """The same, as a task."""
        await trio.sleep(seconds)
        return "done"

    @server.tool()
    async def hold() -> str:
        """A plain call that waits for the benchmark (memory)."""
        await release.wait()
        return "done"

    @server.tool(task=TaskSupport(poll_interval=60))
    async def hold_task() -> str:
        """A task that waits for the benchmark (memory)."""
        await release.wait()
        return "done"

    return server


async def cpu_per_call(tool: str, calls: int, work: float) -> tuple[float, float]:
    """CPU and wall microseconds per call for `calls` concurrent calls of `tool`."""
    server = build(trio.Event())
    async with open_client(server, protocol_version=MODERN, tasks=True) as client:
        await client.call_tool(tool, {"seconds": 0})  # warm: schemas compiled

        async def one() -> None:
            result = await client.call_tool(tool, {"seconds": work})
            assert result.text == "done", result

        cpu, wall = time.process_time(), time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(calls):
                nursery.start_soon(one)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu / calls * 1e6, wall / calls * 1e6


async def bytes_per_live_call(calls: int, as_tasks: bool) -> float:
    """Bytes allocated and still held per call while `calls` calls are live."""
    release = trio.Event()
    server = build(release)
    async with open_client(server, protocol_version=MODERN, tasks=True) as client:
        await client.call_tool("plain", {"seconds": 0})
        handles: list[Any] = []
        async with trio.open_nursery() as nursery:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            if as_tasks:
                for _ in range(calls):
                    handles.append(await client.call_tool_as_task("hold_task"))
                assert all(isinstance(h, TaskInfo) for h in handles)
            else:
                for _ in range(calls):
                    nursery.start_soon(client.call_tool, "hold")
                while client.in_flight < calls:  # noqa: ASYNC110 - a benchmark's wait, no hook
                    await trio.sleep(0.01)
            await trio.sleep(0.05)  # every call or task is parked now
            held = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
            release.set()
    return held / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=float, default=0.2, help="seconds each call's tool sleeps")
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {"plain": [], "job": []}
    wall: dict[str, list[float]] = {"plain": [], "job": []}
    for _ in range(args.rounds):
        for tool in ("plain", "job"):
            spent, elapsed = trio.run(cpu_per_call, tool, args.calls, args.work)
            cpu[tool].append(spent)
            wall[tool].append(elapsed)
    base = statistics.median(cpu["plain"])
    print(
        f"{args.calls} concurrent calls of a {args.work:g} s tool x {args.rounds} rounds, "
        f"in-process, {MODERN}; median CPU us per call (client and server):"
    )
    for tool, label in (("plain", "plain calls"), ("job", f"tasks, polled every {POLL:g} s")):
        median = statistics.median(cpu[tool])
        low, high = min(cpu[tool]), max(cpu[tool])
        elapsed = statistics.median(wall[tool]) * args.calls / 1e6
        print(
            f"  {label:<30} {median:8.1f} us  ({low:.1f}-{high:.1f})  {median / base:.2f}x"
            f"   wall {elapsed:.2f} s for all"
        )
    print(f"  overhead of a task: {statistics.median(cpu['job']) - base:.1f} us CPU per call")
    plain_bytes = trio.run(bytes_per_live_call, args.calls, False)
    task_bytes = trio.run(bytes_per_live_call, args.calls, True)
    print(f"memory per live call, {args.calls} at once (tracemalloc):")
    print(f"  {'plain call in flight':<30} {plain_bytes / 1024:8.1f} KiB")
    print(
        f"  {'task working (handle held)':<30} {task_bytes / 1024:8.1f} KiB  "
        f"{task_bytes / plain_bytes:.2f}x"
    )


if __name__ == "__main__":
    main()
