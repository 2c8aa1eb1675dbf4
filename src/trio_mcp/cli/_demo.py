"""`trio-mcp demo`: the demo server started and toured, each of its tools called in turn.

The tour itself (which calls, with which arguments, and the answers to what the server asks)
belongs to the demo package, `demo_tools.tour`, which ships in the same wheel: nothing here
names a demo tool or resource. This module starts the server (a stdio subprocess, or with
`--http` a `trio-mcp run` on a free port) and shows each call as it goes (`walkthrough`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TextIO

import trio

from .._connect import open_client
from .._core.client_records import Progress, TaskInfo
from .._exceptions import TrioMCPError
from .._runtime.client import Client
from ._output import format_progress, format_task, render_result
from ._parse import EXIT_OK, EXIT_USAGE

__all__ = ["demo", "walkthrough"]

# Seconds `trio-mcp demo --http` waits for its server to say where it listens.
DEMO_START_TIMEOUT: Final = 30.0


async def demo(http: bool) -> int:
    """Tour the demo server over stdio, or over Streamable HTTP; the exit code."""
    # The demo package holds its own tour (nothing here names a demo tool or resource); it
    # ships in the same wheel as trio_mcp.
    from demo_tools.tour import canned_answers, run_tour  # noqa: PLC0415 - only the demo needs it

    try:
        if http:
            async with _demo_http_server() as url:
                print(f"Demo server: {url} (Streamable HTTP)")
                async with open_client(url, tasks=True, **canned_answers()) as client:
                    return await run_tour(client, walkthrough)
        command = [sys.executable, "-m", "demo_tools"]
        print("Demo server: python -m demo_tools (stdio, a subprocess)")
        async with open_client(command, tasks=True, **canned_answers()) as client:
            return await run_tour(client, walkthrough)
    except TrioMCPError as exc:
        print(f"trio-mcp demo: {exc}", file=sys.stderr)
        return EXIT_USAGE


async def walkthrough(
    client: Client, calls: Sequence[tuple[str, dict[str, Any]]], out: TextIO | None = None
) -> int:
    """Make each call in turn, printing results, errors, progress and timings."""
    out = out or sys.stdout
    info = client.server_info
    tools = await client.list_tools()
    print(
        f"Connected to {info.get('name', 'the server')} {info.get('version', '')} "
        f"(protocol {client.protocol_version}), {len(tools)} tools\n",
        file=out,
    )
    failures = 0
    shown_states: list[str] = []  # this call's task states, as printed

    def task_status(task: TaskInfo) -> None:
        # A state is told once however often it is seen (pushed, then polled).
        line = format_task(task)
        if not shown_states or shown_states[-1] != line:
            shown_states.append(line)
            print(f"     {line}", file=out, flush=True)

    for number, (tool, arguments) in enumerate(calls, start=1):
        shown = ", ".join(f"{key}={json.dumps(value)}" for key, value in arguments.items())
        print(f"{number}. {tool}({shown})", file=out, flush=True)

        def progress(update: Progress) -> None:
            print(f"     progress {format_progress(update)}", file=out, flush=True)

        shown_states.clear()

        started = trio.current_time()
        try:
            result = await client.call_tool(
                tool, arguments, progress=progress, on_task_status=task_status
            )
        except TrioMCPError as exc:
            failures += 1
            elapsed = trio.current_time() - started
            print(f"   FAILED: {exc}  ({_ms(elapsed)})\n", file=out, flush=True)
            continue
        elapsed = trio.current_time() - started
        if result.is_error:
            print(f"   ERROR (the tool said): {result.text}  ({_ms(elapsed)})\n", file=out)
        else:
            lines = render_result(result).splitlines() or [""]
            print(f"   = {lines[0]}" + ("" if len(lines) > 1 else f"  ({_ms(elapsed)})"), file=out)
            for line in lines[1:]:
                print(f"     {line}", file=out)
            if len(lines) > 1:
                print(f"     ({_ms(elapsed)})", file=out)
            print(file=out, flush=True)
    print("Done." if not failures else f"Done, {failures} call(s) failed.", file=out)
    return EXIT_OK if not failures else EXIT_USAGE


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


@asynccontextmanager
async def _demo_http_server() -> AsyncIterator[str]:
    # The server binds port 0 (a free port, chosen by the kernel: no race with other programs)
    # and says where it listens on stderr, which is read until then.
    command = [
        sys.executable, "-m", "trio_mcp", "run", "demo_tools",
        "--transport", "http", "--port", "0", "--log-level", "WARNING",
    ]  # fmt: skip
    import subprocess  # noqa: PLC0415 - for the PIPE constant only

    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        with trio.fail_after(DEMO_START_TIMEOUT):
            url = await _read_url(process.stderr)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, process.stderr)
            yield url
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            process.terminate()
            with trio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


async def _read_url(stream: trio.abc.ReceiveStream) -> str:
    seen = b""
    marker = b"serving MCP on "
    while True:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise TrioMCPError(
                "the demo server ended before serving: "
                + seen.decode("utf-8", "replace").strip()[-500:]
            )
        seen += chunk
        for line in seen.split(b"\n")[:-1]:
            if marker in line:
                return line.split(marker, 1)[1].split(b",")[0].strip().decode()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some(65536):
        pass
