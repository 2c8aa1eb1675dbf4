"""Processes for the scale-out tests: `trio-mcp run` servers, and what they print on stderr."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import trio

from tests.timing import scaled

ROOT = Path(__file__).resolve().parents[2]
PID_SERVER = str(ROOT / "tests" / "fixtures" / "pid_server.py")
#: Seconds any one step (a server starting, stopping, a call) may take on a busy machine.
TIMEOUT = scaled(60)


class Served:
    """A `trio-mcp run` subprocess, its stderr gathered as it comes (`wait_for`)."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.stderr = ""
        self._more = trio.Event()

    async def gather(self) -> None:
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self.stderr += chunk.decode(errors="replace")
            self._more.set()
            self._more = trio.Event()

    async def wait_for(self, pattern: str) -> re.Match[str]:
        """The first match of `pattern` in stderr, once it has been printed."""
        with trio.fail_after(TIMEOUT):
            while (found := re.search(pattern, self.stderr)) is None:
                if self.process.returncode is not None:
                    raise AssertionError(f"exited {self.process.returncode}: {self.stderr}")
                with trio.move_on_after(0.5):
                    await self._more.wait()
        return found

    async def url(self) -> str:
        return (await self.wait_for(r"serving MCP on (\S+/mcp)")).group(1)

    async def stop(self, signum: int = 15) -> int:
        """Signal the process (SIGTERM by default) and wait for its exit code."""
        if self.process.returncode is None:
            self.process.send_signal(signum)
        with trio.fail_after(TIMEOUT):
            return await self.process.wait()


@contextlib.asynccontextmanager
async def serving(*args: str, env: Mapping[str, str] | None = None) -> AsyncIterator[Served]:
    """Run `python -m trio_mcp run ARGS...` for the block; SIGKILL it if it is still running."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "trio_mcp", "run", *args],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    served = Served(process)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(served.gather)
            try:
                yield served
            finally:
                if process.returncode is None:
                    process.kill()
                with trio.move_on_after(TIMEOUT):
                    await process.wait()
    finally:
        if process.returncode is None:
            process.kill()


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
