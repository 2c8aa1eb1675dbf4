"""The raw NDJSON client every stdio server is measured with: no SDK, no event loop.

Rule 1: the driver must never be the bottleneck. Requests are encoded before the clock starts;
        while it runs, the driver only writes prepared bytes and counts newlines in what it
        reads. Every response is parsed and checked after the clock stops.
Rule 2: every measurement is checked: each id comes back exactly once, with the right result.
        A wrong or missing answer raises `BenchError`; it is never counted as a fast call.
Rule 3: the driver's CPU time and the server's are measured beside the wall time of each
        workload: a server near one core and a driver well below it show that the server was
        the limit. (Sequential calls are a ping-pong: there both share each round trip.)
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = [
    "BenchError",
    "Measured",
    "StdioPeer",
    "add_frames",
    "check_add",
    "check_prompt",
    "check_read",
    "check_sleep",
    "prompt_frames",
    "read_frames",
    "sleep_frames",
]

PROTOCOL_VERSION: Final = "2025-06-18"
READ_SIZE: Final = 1 << 20
# A server that has not answered in this long is broken, not slow.
IO_TIMEOUT: Final = 120.0
# Longest life of one server process in the benchmark; the slowest session takes ~30 s.
SESSION_TIMEOUT: Final = 900.0
# Seconds the pipelined driver pauses after a read while over half its window is still queued.
# Without it, a server that writes one line per system call (the baseline) wakes the driver
# for every response, and on 2 cores the two processes then hold each other back: measured
# here, the baseline's CPU share fell to 0.65 and its rate to ~110k calls/s, against 0.9 and
# ~180k with the pause. 200 us is well under what the 128+ queued calls take the fastest server
# (~0.7 ms at 190k calls/s), so no server ever waits on the driver.
COALESCE: Final = 0.0002


class BenchError(Exception):
    """A server answered wrongly, not at all, or died."""


@dataclass
class Measured:
    """Wall and driver CPU seconds of one timed section, plus what it produced."""

    wall: float
    cpu: float
    server_cpu: float
    lines: list[bytes] = field(default_factory=list)
    latencies_ns: list[int] = field(default_factory=list)

    @property
    def cpu_share(self) -> float:
        """The driver's CPU time over the wall time: 1.0 is one core kept busy."""
        return self.cpu / self.wall if self.wall > 0 else 0.0

    @property
    def server_cpu_share(self) -> float:
        """The server process's CPU time (all its threads) over the wall time."""
        return self.server_cpu / self.wall if self.wall > 0 else 0.0


def _request(request_id: int, name: str, arguments: str) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n'
        % (request_id, name.encode(), arguments.encode())
    )


def add_frames(n: int, *, tool: str = "calculator.add", first_id: int = 1) -> list[bytes]:
    """`n` add calls with distinct ids; call `i` adds `i + 0.5`, so a mix-up shows."""
    return [_request(i, tool, f'{{"a":{i},"b":0.5}}') for i in range(first_id, first_id + n)]


def sleep_frames(n: int, *, first_id: int = 1) -> list[bytes]:
    return [_request(i, "sleep", "{}") for i in range(first_id, first_id + n)]


def read_frames(n: int, *, first_id: int = 1) -> list[bytes]:
    """`n` reads of the template `bench://items/{item_id}`, read `i` naming item `i`."""
    return [
        b'{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"bench://items/%d"}}\n'
        % (i, i)
        for i in range(first_id, first_id + n)
    ]


def prompt_frames(n: int, *, first_id: int = 1) -> list[bytes]:
    """`n` gets of the prompt `greet`, get `i` greeting `n<i>`."""
    return [
        b'{"jsonrpc":"2.0","id":%d,"method":"prompts/get",'
        b'"params":{"name":"greet","arguments":{"name":"n%d"}}}\n' % (i, i)
        for i in range(first_id, first_id + n)
    ]


def check_read(lines: Sequence[bytes], ids: range) -> None:
    """Every read `i` answered once with the text `item <i>`."""
    for request_id, message in _by_id(lines, ids).items():
        try:
            text = message["result"]["contents"][0]["text"]
        except (KeyError, IndexError, TypeError):
            raise BenchError(f"id {request_id}: not a read result: {message!r:.300}") from None
        if text != f"item {request_id}":
            raise BenchError(f"id {request_id}: wrong contents in {message!r:.300}")


def check_prompt(lines: Sequence[bytes], ids: range) -> None:
    """Every get `i` answered once with the message `Hello, n<i>!`."""
    for request_id, message in _by_id(lines, ids).items():
        try:
            text = message["result"]["messages"][0]["content"]["text"]
        except (KeyError, IndexError, TypeError):
            raise BenchError(f"id {request_id}: not a prompt result: {message!r:.300}") from None
        if text != f"Hello, n{request_id}!":
            raise BenchError(f"id {request_id}: wrong message in {message!r:.300}")


def _text_of(message: Any, request_id: int) -> str:
    result = message.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise BenchError(f"id {request_id}: not a successful result: {message!r:.300}")
    return str(result["content"][0]["text"])


def _by_id(lines: Sequence[bytes], ids: range) -> dict[int, Any]:
    """Index responses by id, checking that each expected id came back exactly once."""
    seen: dict[int, Any] = {}
    for line in lines:
        message = json.loads(line)
        request_id = message.get("id")
        if request_id not in ids:
            raise BenchError(f"unexpected message: {message!r:.300}")
        if request_id in seen:
            raise BenchError(f"id {request_id} answered twice")
        seen[request_id] = message
    if len(seen) != len(ids):
        raise BenchError(f"{len(ids) - len(seen)} of {len(ids)} requests unanswered")
    return seen


def check_add(lines: Sequence[bytes], ids: range) -> None:
    """Every add call `i` answered once with `i + 0.5`."""
    for request_id, message in _by_id(lines, ids).items():
        if float(_text_of(message, request_id)) != request_id + 0.5:
            raise BenchError(f"id {request_id}: wrong sum in {message!r:.300}")


def check_sleep(lines: Sequence[bytes], ids: range) -> None:
    for request_id, message in _by_id(lines, ids).items():
        if _text_of(message, request_id) != "slept":
            raise BenchError(f"id {request_id}: unexpected answer {message!r:.300}")


class StdioPeer:
    """One server subprocess and the raw NDJSON pipes to it.

    The clock for the cold start starts just before the spawn: `spawned_at`.
    """

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
        self.argv = list(argv)
        # stderr goes to a file, not a pipe: nobody reads it while the server runs, and a full
        # pipe would stall a chatty server. It is shown when the server misbehaves.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self._wfd = self.proc.stdin.fileno()
        self._rfd = self.proc.stdout.fileno()
        self._buffer = b""
        # Kills a server that hangs, so that a blocked read returns instead of hanging the run.
        self._watchdog = threading.Timer(SESSION_TIMEOUT, self.proc.kill)
        self._watchdog.daemon = True
        self._watchdog.start()

    # -- plumbing -------------------------------------------------------------------------------

    def _fail(self, why: str) -> BenchError:
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode(errors="replace")
        return BenchError(f"{self.argv[-1]}: {why}\n--- server stderr (tail) ---\n{tail}")

    def _read_some(self) -> bytes:
        # A plain blocking read: a `select` first would cost a system call per response, which
        # on a small VM is a visible part of a sequential round trip. The watchdog bounds it.
        chunk = os.read(self._rfd, READ_SIZE)
        if not chunk:
            raise self._fail("server closed its stdout (or the watchdog killed it)")
        return chunk

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._wfd, view)
            view = view[written:]

    def read_line(self) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                return line
            self._buffer += self._read_some()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> Any:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.send(json.dumps(message).encode() + b"\n")
        while True:
            response = json.loads(self.read_line())
            if response.get("id") == request_id:
                return response

    # -- workloads ------------------------------------------------------------------------------

    def initialize(self) -> float:
        """Handshake; returns seconds from spawn to the `initialize` response."""
        response = self.request(
            0,
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "trio-mcp-bench", "version": "0"},
            },
        )
        elapsed = time.perf_counter() - self.spawned_at
        if "result" not in response:
            raise self._fail(f"initialize failed: {response!r:.300}")
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        return elapsed

    def sequential(self, frames: Sequence[bytes]) -> Measured:
        """One request at a time: write it, wait for its response line."""
        latencies: list[int] = []
        lines: list[bytes] = []
        clock = time.perf_counter_ns
        server0, cpu0, wall0 = self.server_cpu(), time.process_time(), time.perf_counter()
        for frame in frames:
            start = clock()
            self.send(frame)
            lines.append(self.read_line())
            latencies.append(clock() - start)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return Measured(wall, cpu, self.server_cpu() - server0, lines, latencies)

    def pipelined(
        self, frames: Sequence[bytes], window: int, coalesce: float = COALESCE
    ) -> Measured:
        """Keep up to `window` requests in flight until all are answered.

        One thread, one `select` per turn: write whatever the window allows in one go, read
        whatever has arrived in one go. Responses are only counted (newlines) until the end.
        While more than half the window is still queued at the server, the driver sleeps
        `coalesce` seconds after each read so that responses gather (see `COALESCE`).
        """
        total = len(frames)
        sent = received = 0
        pending = memoryview(b"")
        chunks: list[bytes] = []
        if self._buffer:
            raise self._fail("unread output before a pipelined run")
        os.set_blocking(self._wfd, False)
        rfds, rw_fds = [self._rfd], [self._wfd]
        server0, cpu0, wall0 = self.server_cpu(), time.process_time(), time.perf_counter()
        try:
            while received < total:
                if not pending and sent < total and sent - received < window:
                    batch = min(total - sent, window - (sent - received))
                    pending = memoryview(b"".join(frames[sent : sent + batch]))
                    sent += batch
                readable, writable, _ = select.select(
                    rfds, rw_fds if pending else (), (), IO_TIMEOUT
                )
                if not readable and not writable:
                    raise self._fail(f"stalled: {received} of {total} answered")
                if writable:
                    pending = pending[os.write(self._wfd, pending) :]
                if readable:
                    chunk = os.read(self._rfd, READ_SIZE)
                    if not chunk:
                        raise self._fail("server closed its stdout")
                    received += chunk.count(b"\n")
                    chunks.append(chunk)
                    if coalesce and sent - received > window // 2:
                        time.sleep(coalesce)
        finally:
            os.set_blocking(self._wfd, True)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        server_cpu = self.server_cpu()
        data = b"".join(chunks)
        if not data.endswith(b"\n"):
            raise self._fail("a response line was cut short")
        return Measured(wall, cpu, server_cpu - server0, data[:-1].split(b"\n"))

    def server_cpu(self) -> float:
        """CPU seconds the server's live threads have used so far.

        The sum of each thread's on-CPU nanoseconds (`/proc/PID/task/*/schedstat`): fine-grained
        where `/proc/PID/stat` counts 10 ms ticks. A thread that ends during a measurement takes
        its time with it, so with worker threads this is a lower bound.
        """
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):  # a thread that has just ended
                continue
        return total / 1e9

    def peak_rss_mb(self) -> float:
        """The server's peak resident set (VmHWM), read while it still runs."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise self._fail("no VmHWM in /proc status")

    def close(self) -> None:
        """Close stdin (the MCP stdio shutdown) and wait; kill a server that lingers."""
        self._watchdog.cancel()
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self._stderr.close()

    def __enter__(self) -> StdioPeer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
