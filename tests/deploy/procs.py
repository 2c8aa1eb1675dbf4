"""Processes for the scale-out tests: load balancers, ports, and the worker fixture.

The `trio-mcp run` servers themselves are tests/processes.py's `serving`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import trio

from tests.processes import ROOT, TIMEOUT

PID_SERVER = str(ROOT / "tests" / "fixtures" / "pid_server.py")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextlib.asynccontextmanager
async def balancer(command: list[str], port: int) -> AsyncIterator[trio.Process]:
    """Run a load balancer for the block, once it accepts connections on `port`."""
    process = await trio.lowlevel.open_process(command, stdin=subprocess.DEVNULL)
    try:
        with trio.fail_after(TIMEOUT):
            while True:
                assert process.returncode is None, f"{command[0]} exited {process.returncode}"
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                except OSError:
                    await trio.sleep(0.05)
                else:
                    await stream.aclose()
                    break
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
        with trio.move_on_after(TIMEOUT):
            await process.wait()
        if process.returncode is None:
            process.kill()


def render(config: Path, front: int, workers: list[int], *, head: str = "") -> str:
    """A shipped configuration with its ports (8000 in front, 8001... behind) replaced."""
    text = config.read_text()
    for number, port in enumerate(workers, start=1):
        text = text.replace(f"127.0.0.1:{8000 + number}", f"127.0.0.1:{port}")
    return head + text.replace("127.0.0.1:8000", f"127.0.0.1:{front}")
