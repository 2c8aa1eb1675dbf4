"""Plumbing for `reliability.py`: servers under attack, and what is measured of them.

Rule 1: every server is a real subprocess (the demo server over stdio, or the probe server, the
        demo tools plus two probe tools, over HTTP on loopback), started by the benchmark
        harness's own classes (`driver.StdioPeer`, `http_bench.Server`) inside a `with` block,
        so that it never outlives the row that started it, even on Ctrl-C.
Rule 2: waiting is always bounded: a select with a deadline, a socket timeout, a join with a
        timeout. A server that does not answer makes a row fail; it never hangs the probe.
Rule 3: what is measured of a server comes from outside it: its answers, and its /proc entry
        (resident memory and its high-water mark, threads, open descriptors).
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from driver import READ_SIZE, BenchError, StdioPeer
from http_bench import HEADERS, Peer, Server, Session, _answer, _dump
from http_bench import BenchError as HttpBenchError
from rawhttp import HttpConnection, HttpError

__all__ = [
    "DEMO_STDIO",
    "HEADERS",
    "HTTP_TIMEOUT",
    "PROBE_STDIO",
    "Bystander",
    "HttpConnection",
    "ProbePeer",
    "ProcStats",
    "Pumped",
    "Server",
    "Session",
    "call_body",
    "connect",
    "fresh_client",
    "head_status",
    "http_server",
    "post_bytes",
    "proc_stats",
    "read_response",
    "reset",
    "settled_stats",
    "wait_readable",
]

HERE: Final = Path(__file__).resolve().parent
PY: Final = sys.executable
PROBE_SERVER: Final = HERE / "servers" / "probe_server.py"
DEMO_STDIO: Final = (PY, "-m", "demo_tools")
PROBE_STDIO: Final = (PY, "-m", "trio_mcp", "run", str(PROBE_SERVER))
# Runs argv[2:] as a new Python with RLIMIT_NOFILE lowered to argv[1] (soft and hard).
LIMITED: Final = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)
#: Seconds one HTTP request of a well-behaved client may take before it counts as not served.
HTTP_TIMEOUT: Final = 10.0


# -- /proc ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcStats:
    """A process's resident memory now and at its peak (MiB), threads and open descriptors."""

    rss: float
    peak: float
    threads: int
    fds: int


def settled_stats(pid: int, fds: int, timeout: float = 5.0) -> ProcStats:
    """`proc_stats` once the process holds at most `fds` descriptors, or after `timeout`."""
    deadline = time.perf_counter() + timeout
    while (stats := proc_stats(pid)).fds > fds and time.perf_counter() < deadline:
        time.sleep(0.1)
    return stats


def proc_stats(pid: int) -> ProcStats:
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "Threads"):
                fields[name] = int(value.split()[0])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return ProcStats(fields["VmRSS"] / 1024, fields["VmHWM"] / 1024, fields["Threads"], fds)


# -- stdio ----------------------------------------------------------------------------------------


@dataclass
class Pumped:
    """What `ProbePeer.pump` read: whole lines, and whether the server stalled or closed."""

    lines: list[bytes]
    seconds: float
    stalled: bool = False
    closed: bool = False


class ProbePeer(StdioPeer):
    """A stdio server driven by lines that may owe no answer, one, or an array (a batch)."""

    def handshake(self, version: str) -> None:
        response = self.request(
            0,
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "trio-mcp-reliability", "version": "0"},
            },
        )
        if response.get("result", {}).get("protocolVersion") != version:
            raise BenchError(f"initialize {version}: {response!r:.300}")
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def pump(
        self, frames: Sequence[bytes], owed: Sequence[int], window: int, stall: float
    ) -> Pumped:
        """Write `frames` while at most `window` owed answer lines are outstanding; read lines.

        Frame `i` owes `owed[i]` lines. Returns once every owed line has arrived, or when
        nothing moved for `stall` seconds, or when the server closed its stdout.
        """
        total, sent, owed_sent, received = sum(owed), 0, 0, 0
        pending = memoryview(b"")
        chunks = [self._buffer]
        self._buffer = b""
        moved = start = time.perf_counter()
        stalled = closed = False
        os.set_blocking(self._wfd, False)
        try:
            while received < total or pending or sent < len(frames):
                if not pending and sent < len(frames) and owed_sent - received < window:
                    end, size = sent, 0
                    while (
                        end < len(frames) and owed_sent - received < window and size < READ_SIZE * 4
                    ):
                        owed_sent += owed[end]
                        size += len(frames[end])
                        end += 1
                    pending = memoryview(b"".join(frames[sent:end]))
                    sent = end
                wfds = [self._wfd] if pending else []
                readable, writable, _ = select.select([self._rfd], wfds, [], 0.5)
                if writable:
                    pending = pending[os.write(self._wfd, pending) :]
                    moved = time.perf_counter()
                if readable:
                    chunk = os.read(self._rfd, READ_SIZE)
                    if not chunk:
                        closed = True
                        break
                    received += chunk.count(b"\n")
                    chunks.append(chunk)
                    moved = time.perf_counter()
                if time.perf_counter() - moved > stall:
                    stalled = True
                    break
        finally:
            os.set_blocking(self._wfd, True)
        data = b"".join(chunks)
        cut = data.rfind(b"\n") + 1
        self._buffer = data[cut:]
        lines = data[: cut - 1].split(b"\n") if cut else []
        return Pumped(lines, time.perf_counter() - start, stalled, closed)

    def read_until(self, request_id: str, timeout: float) -> tuple[list[bytes], bool]:
        """Lines up to the answer to `request_id` (sent by the caller); whether it came."""
        lines: list[bytes] = []
        marker = json.dumps(request_id).encode()
        deadline = time.perf_counter() + timeout
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                if marker in line and _id_of(line) == request_id:
                    return lines, True
                lines.append(line)
                continue
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([self._rfd], [], [], left)[0]:
                return lines, False
            chunk = os.read(self._rfd, READ_SIZE)
            if not chunk:
                return lines, False
            self._buffer += chunk

    def next_message(self, timeout: float) -> Any:
        """The next line, decoded; None when none came within `timeout` (or the output ended)."""
        deadline = time.perf_counter() + timeout
        while (end := self._buffer.find(b"\n")) < 0:
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([self._rfd], [], [], left)[0]:
                return None
            chunk = os.read(self._rfd, READ_SIZE)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
        return json.loads(line)

    def read_answers(self, ids: Sequence[Any], timeout: float) -> tuple[list[bytes], bool]:
        """Lines until each of `ids` has been answered; whether they all were within `timeout`."""
        lines: list[bytes] = []
        owed = set(ids)
        deadline = time.perf_counter() + timeout
        while owed:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                lines.append(line)
                if b'"method"' not in line:
                    owed.discard(_id_of(line))
                continue
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([self._rfd], [], [], left)[0]:
                return lines, False
            chunk = os.read(self._rfd, READ_SIZE)
            if not chunk:
                return lines, False
            self._buffer += chunk
        return lines, True

    def ping(self, request_id: str, timeout: float = 10.0) -> tuple[list[bytes], bool]:
        """Send a ping; the lines read before its answer, and whether it was answered."""
        self.send(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}\n' % json.dumps(request_id).encode())
        return self.read_until(request_id, timeout)

    def read_to_eof(self, timeout: float) -> tuple[list[bytes], bool]:
        """Every line until the server closes stdout; whether it did within `timeout`."""
        data = [self._buffer]
        self._buffer = b""
        deadline = time.perf_counter() + timeout
        ended = False
        while (left := deadline - time.perf_counter()) > 0:
            if not select.select([self._rfd], [], [], left)[0]:
                break
            chunk = os.read(self._rfd, READ_SIZE)
            if not chunk:
                ended = True
                break
            data.append(chunk)
        lines = b"".join(data).split(b"\n")
        return [line for line in lines if line], ended

    def __enter__(self) -> ProbePeer:
        return self

    def stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")


def _id_of(line: bytes) -> Any:
    with suppress(ValueError):
        message = json.loads(line)
        if isinstance(message, dict):
            return message.get("id")
    return None


# -- HTTP -----------------------------------------------------------------------------------------


def http_argv(nofile: int | None = None) -> list[str]:
    """The probe server over HTTP on a free loopback port; with `nofile`, under that fd limit."""
    argv = [PY, "-m", "trio_mcp", "run", str(PROBE_SERVER), "--transport", "http"]
    argv += ["--host", "127.0.0.1", "--port", "0"]
    if nofile is not None:
        argv = [PY, "-c", LIMITED, str(nofile), *argv[1:]]
    return argv


@contextmanager
def http_server(nofile: int | None = None) -> Iterator[Server]:
    server = Server(Peer("probe server", http_argv(nofile), "serving MCP on "))
    try:
        yield server
    finally:
        server.close()


def call_body(
    request_id: int, name: str, arguments: dict[str, Any], progress: bool = False
) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": request_id}
    return _dump({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def post_bytes(session: Session, body: bytes) -> bytes:
    """A POST of `body` in `session`, as bytes to send on a socket of one's own."""
    return session.http.prepare("POST", body)


def mcp_call(session: Session, request_id: int, name: str, arguments: dict[str, Any]) -> Any:
    """Call a tool in `session`; its JSON-RPC answer (raises HttpBenchError for a non-200)."""
    response = session.http.request("POST", call_body(request_id, name, arguments))
    return _answer(response, request_id)


def connect(address: tuple[str, int], timeout: float = HTTP_TIMEOUT) -> socket.socket:
    sock = socket.create_connection(address, timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a crashed client's kernel would."""
    with suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def wait_readable(sock: socket.socket, timeout: float) -> bool:
    return bool(select.select([sock], [], [], timeout)[0])


def head_status(data: bytes) -> int | None:
    """The status of a response whose head is complete in `data`, else None."""
    if b"\r\n\r\n" not in data:
        return None
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return -1


@dataclass
class Bystander:
    """A well-behaved client calling `calculator.add` in a loop while an attack runs.

    Every call gets `HTTP_TIMEOUT` seconds; one that fails, or answers wrongly, counts as not
    served, and the next call starts on a fresh connection and session.
    """

    url: str
    served: int = 0
    failed: int = 0
    slowest: float = 0.0
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        session: Session | None = None
        request_id = 0
        while request_id == 0 or not self._stop.wait(0.05):  # at least one call
            request_id += 1
            started = time.perf_counter()
            try:
                if session is None:
                    session = Session(self.url)
                answer = mcp_call(session, request_id, "calculator.add", {"a": request_id, "b": 1})
                right = answer["result"]["structuredContent"]["result"] == request_id + 1
            except (HttpBenchError, HttpError, OSError, KeyError, TypeError) as exc:
                right = False
                self.errors.append(repr(exc)[:200])
            if right:
                self.served += 1
            else:
                self.failed += 1
                if session is not None:
                    session.http.close()
                session = None
            self.slowest = max(self.slowest, time.perf_counter() - started)
        if session is not None:
            session.close()

    def __enter__(self) -> Bystander:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(HTTP_TIMEOUT * 2)

    @property
    def ok(self) -> bool:
        return self.served > 0 and self.failed == 0

    def summary(self) -> str:
        return (
            f"a client calling meanwhile: {self.served:,} of {self.served + self.failed:,} "
            f"calls served, slowest {self.slowest * 1000:,.0f} ms"
        )


def fresh_client(url: str, source: str | None = None) -> tuple[bool, float, str]:
    """A new client (from `source`, if given) opens a session and calls a tool.

    Returns:
        Whether it was served, how many seconds it took, and what went wrong.
    """
    started = time.perf_counter()
    try:
        session = Session(url, source=source)
        try:
            answer = mcp_call(session, 1, "calculator.add", {"a": 2, "b": 3})
        finally:
            session.close()
        served = answer.get("result", {}).get("structuredContent") == {"result": 5}
        why = "" if served else f"answer {answer!r:.200}"
    except (HttpBenchError, HttpError, OSError) as exc:
        served, why = False, _short(str(exc))
    return served, time.perf_counter() - started, why


def _short(error: str) -> str:
    """The first line of an error, with a JSON-RPC error body cut down to its message."""
    line = error.split("\n", maxsplit=1)[0]
    head, found, rest = line.partition('{"jsonrpc"')
    if found and '"message":"' in rest:
        line = head + rest.split('"message":"', 1)[1].split('"', 1)[0]
    return line[:200]


def read_response(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """Read until the server closes or `timeout` passes; the bytes, and whether it closed."""
    data = bytearray()
    deadline = time.perf_counter() + timeout
    while (left := deadline - time.perf_counter()) > 0:
        if not wait_readable(sock, left):
            break
        try:
            chunk = sock.recv(1 << 16)
        except OSError:
            return bytes(data), True
        if not chunk:
            return bytes(data), True
        data += chunk
    return bytes(data), False
