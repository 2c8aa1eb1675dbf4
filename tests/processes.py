"""`trio-mcp` as a subprocess of a test, run from the repository's root.

A command run to its end (`cli`, and `cli_async` for a test whose event loop serves something
meanwhile), or `trio-mcp run` serving for a block (`serving`): its stderr is gathered as it
comes (`Served.wait_for`), which is how a test learns the URL it serves on (`Served.url`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping

import trio

from tests.helpers import REPO_ROOT
from tests.timing import scaled

ROOT = REPO_ROOT
#: Seconds any one step (a command, a server starting or stopping) may take on a busy machine.
TIMEOUT = scaled(60)


def cli(
    *args: str, stdin: int | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python -m trio_mcp ARGS...` and capture its output (`input` is written to stdin)."""
    return subprocess.run(
        [sys.executable, "-m", "trio_mcp", *args],
        stdin=stdin,
        input=input,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=ROOT,
    )


async def cli_async(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`cli` for tests that serve something in their own event loop meanwhile."""
    with trio.fail_after(TIMEOUT):
        return await trio.run_process(
            [sys.executable, "-m", "trio_mcp", *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=ROOT,
        )


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
