"""`trio-mcp run --transport http --workers N`: N worker processes serving one socket.

The parent binds the listening socket once and starts N workers, each a new Python process
(`python -m trio_mcp run ...`, no fork) that imports the target anew and serves the inherited
socket as a single-process server does (`run_worker`); the kernel gives each new connection to
one of them. The parent imports no tools and serves nothing itself.

Rule 1: only stateless mode shares a socket: a handshake-era session lives in the process
        that started it, and connections from one client reach any worker, so `--workers`
        above 1 without `--stateless` is refused (`refusal`). 2026-07-28 requests stand alone
        in every mode and need nothing more.
Rule 2: each worker holds one end of a socket pair with the parent (its link): it writes a
        line there once it serves, and shuts down gracefully when the parent's end closes.
        SIGINT or SIGTERM to the parent closes every link (and the parent's copy of the
        listening socket, so that no new connection waits for a worker that stops accepting):
        each worker drains as a single-process server does, and the parent exits once all
        have, 0 when every one exited 0. A second signal kills the workers (SIGKILL). Workers
        run in sessions of their own: a terminal's Ctrl-C reaches the parent alone, and a
        parent that dies by SIGKILL still ends its workers gracefully (their links close).
Rule 3: a worker that dies while serving is replaced by a new one, with a warning naming its
        pid and how it ended: the calls it was running are lost (their clients see the
        connection break), the other workers go on. A worker that ends before it serves
        (the target does not import, say) is a failure to start, not something a new process
        would fix: the parent stops the others and exits 2.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import trio

from .._run import run_http
from .._runtime.server import Server

if TYPE_CHECKING:  # HTTP code loads when HTTP is used
    from ..transports.http.app import HttpOptions

__all__ = ["refusal", "run_worker", "supervise"]

logger = logging.getLogger("trio_mcp.workers")

_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


def refusal(workers: int, stateless: bool) -> str | None:
    """Why `--workers` cannot serve as asked (Rule 1), or None when it can."""
    if workers < 1:
        return "--workers must be at least 1"
    if workers == 1 or stateless:
        return None
    return (
        f"--workers {workers} needs --stateless: a session (initialize, then requests naming "
        "its Mcp-Session-Id, before protocol revision 2026-07-28) lives in the process that "
        "started it, and worker processes sharing one socket would get its requests at random. "
        "Serve with --stateless (every request stands alone), or run single-process servers "
        "on ports of their own (--port 8001, --port 8002, ...) behind a load balancer that "
        "keeps each session on its server by the Mcp-Session-Id header (deploy/haproxy.cfg "
        "in the trio-mcp repository)"
    )


def _ended(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


class _StartError(Exception):
    """A worker ended before it served (Rule 3)."""


class _Supervisor:
    def __init__(self, command: Sequence[str], listener: socket.socket, workers: int) -> None:
        self.command = list(command)
        self.listener = listener
        self.workers = workers
        self.stopping = False
        self.links: dict[int, trio.socket.SocketType] = {}  # worker slot -> parent's end
        self.processes: dict[int, trio.Process] = {}  # worker slot -> process
        self.serving = 0
        self.all_serving = trio.Event()
        self.failed_exits = 0

    async def keep(self, slot: int) -> None:
        """Run worker `slot`, replacing it when it dies while serving (Rule 3)."""
        first = True
        while not self.stopping:
            parent_end, child_end = socket.socketpair()
            fds = (self.listener.fileno(), child_end.fileno())
            try:
                process = await trio.lowlevel.open_process(
                    [*self.command, "--worker-fds", f"{fds[0]},{fds[1]}"],
                    pass_fds=fds,
                    start_new_session=True,  # Rule 2: Ctrl-C reaches the parent alone
                    stdin=subprocess.DEVNULL,
                )
            finally:
                child_end.close()
            link = trio.socket.from_stdlib_socket(parent_end)
            with link:
                self.links[slot], self.processes[slot] = link, process
                if self.stopping:  # stopped while this one started
                    link.shutdown(socket.SHUT_WR)
                said = await link.recv(64)
                if not said:
                    code = await process.wait()
                    if self.stopping:
                        return
                    raise _StartError(
                        f"worker {slot} (pid {process.pid}) {_ended(code)} before it served"
                    )
                if first:
                    first = False
                    self.serving += 1
                    if self.serving == self.workers:
                        self.all_serving.set()
                else:
                    logger.warning("worker %d serves again (pid %d)", slot, process.pid)
                code = await process.wait()
            if self.stopping:
                if code != 0:
                    self.failed_exits += 1
                    logger.warning("worker %d (pid %d) %s", slot, process.pid, _ended(code))
                return
            logger.warning(
                "worker %d (pid %d) %s while serving; starting a new one",
                slot,
                process.pid,
                _ended(code),
            )

    def stop(self) -> None:
        """Close the listening socket and every link: each worker drains and exits (Rule 2)."""
        self.stopping = True
        self.listener.close()
        for link in self.links.values():
            with contextlib.suppress(OSError):
                link.shutdown(socket.SHUT_WR)

    def kill(self) -> None:
        for process in self.processes.values():
            if process.returncode is None:
                with contextlib.suppress(OSError):
                    process.kill()


async def _supervise(
    command: Sequence[str], listener: socket.socket, workers: int, url: str
) -> int:
    supervisor = _Supervisor(command, listener, workers)
    with trio.open_signal_receiver(*_STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:

            async def on_signals() -> None:
                async for signum in signals:
                    name = signal.Signals(signum).name
                    if not supervisor.stopping:
                        print(f"trio-mcp: {name}, stopping the workers", file=sys.stderr)
                        supervisor.stop()
                    else:
                        print(f"trio-mcp: {name} again, killing the workers", file=sys.stderr)
                        supervisor.kill()

            async def announce() -> None:
                await supervisor.all_serving.wait()
                pids = ", ".join(str(p.pid) for _, p in sorted(supervisor.processes.items()))
                print(
                    f"trio-mcp: serving MCP on {url} with {workers} worker processes (pids {pids})",
                    file=sys.stderr,
                )

            nursery.start_soon(on_signals)
            nursery.start_soon(announce)
            failed: BaseException | None = None
            try:
                async with trio.open_nursery() as keeping:
                    for slot in range(1, workers + 1):
                        keeping.start_soon(supervisor.keep, slot)
            except* _StartError as group:
                failed = group.exceptions[0]
            if failed is not None:
                print(f"trio-mcp: {failed}; stopping", file=sys.stderr)
                supervisor.stop()
                for process in supervisor.processes.values():
                    await process.wait()
            nursery.cancel_scope.cancel()
    if failed is not None:
        return 2
    return 1 if supervisor.failed_exits else 0


def supervise(command: Sequence[str], listener: socket.socket, workers: int, url: str) -> int:
    """Run `workers` worker processes on `listener` until SIGINT or SIGTERM; the exit code.

    Args:
        command: The worker's command line; `--worker-fds LISTEN,LINK` is added to it.
        listener: The listening socket, inheritable (`serving.bind_listener`).
        workers: How many worker processes.
        url: The endpoint's URL, for the line that says the workers serve.

    Returns:
        0 when every worker stopped cleanly, 1 when one exited otherwise while stopping, 2
        when one ended before it served (Rule 3).
    """
    return trio.run(_supervise, command, listener, workers, url)


def run_worker(
    server: Server, *, host: str, listen_fd: int, link_fd: int, options: HttpOptions
) -> None:
    """Serve `server` over HTTP as one of the worker processes.

    Serves the listening socket inherited as `listen_fd` (bound to `host`, which is checked as
    `serve_http` checks it); `link_fd` is this worker's end of its link (Rule 2).
    """
    report = functools.partial(_report_then_watch, link_fd)
    run_http(server, host=host, port=0, options=options, listen_fd=listen_fd, on_serving=report)


async def _report_then_watch(link_fd: int, stop: trio.Event) -> None:
    # A worker's end of its link (Rule 2): say "serving", then stop when the parent's end closes.
    link = trio.socket.from_stdlib_socket(socket.socket(fileno=link_fd))
    with link:
        with contextlib.suppress(OSError):  # the parent is stopping already, or gone
            await link.send(b"serving\n")
            while await link.recv(64):
                pass
        stop.set()
