"""Streamable HTTP throughput: trio-mcp's server beside the official SDK's, in the same run.

    python benchmarks/http_bench.py [--quick] [--rounds N] [--json PATH]

Servers (fresh subprocesses on free loopback ports, one per peer per round, interleaved
A B A B so that machine noise hits both alike):

- trio-mcp: `python -m trio_mcp run benchmarks/servers/trio_mcp_http.py --transport http
  --port 0` (Hypercorn; `calculator.add` is `inline=True`, it runs on the event loop);
- SDK: `benchmarks/servers/sdk_http.py`, `MCPServer.streamable_http_app()` under uvicorn with
  the SDK's defaults (stateful sessions, SSE responses; its sync tool runs in a worker thread);
- bare Hypercorn: `benchmarks/servers/hypercorn_baseline.py`, a canned-answer ASGI app under
  the same Hypercorn configuration as trio-mcp's: the limit of any MCP server on Hypercorn's
  trio worker here. trio-mcp/bare Hypercorn shows how much of trio-mcp's time is its own;
- trio-mcp stateless, and trio-mcp 2 workers: the same target with `--stateless`, in one
  process and with `--workers 2` (two processes sharing the socket). "2 workers/stateless"
  is what a second process adds, measured in the same run; with as many cores as processes
  and a driver that is not the limit (see "CPU drv") it can approach 2.
- trio-mcp 2 behind nginx: `benchmarks/servers/behind_nginx.py`, two stateless single-process
  servers on ports of their own behind nginx with the shipped `deploy/nginx.conf` (round
  robin, keep-alive upstream connections): what the balancer's hop costs and two processes
  add. Skipped when nginx is not installed.

The driver is the same for both: raw HTTP/1.1 over blocking keep-alive sockets
(`rawhttp.py`: prepared request bytes, TCP_NODELAY, no HTTP or MCP client library), so that its
own cost per request (tens of microseconds) stays small beside either server's. Each session
POSTs `initialize`, keeps `Mcp-Session-Id`, POSTs `notifications/initialized`, then calls
`calculator.add` (call `i` adds `i + 0.5`). Responses (JSON or an SSE stream) are kept as bytes
while the clock runs and parsed and checked after it stops: a wrong or missing result raises,
it is never counted as a fast call.

Workloads:
1. sequential: one session, one keep-alive connection, calls one at a time: calls/s and
   p50/p99 latency.
2. concurrent sessions: 20 threads, one connection and session each, each making its calls
   one at a time: total calls/s.

"CPU drv" is the driver's process time over wall time (all its threads). Under the GIL the
driver can use about one core at most: near 1.0 means the driver, not the server, may have
been the limit. "CPU srv" is the same for the server process (Linux /proc; all threads).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from rawhttp import HttpConnection, HttpError, RawResponse

HERE: Final = Path(__file__).resolve().parent
ROOT: Final = HERE.parent
PROTOCOL_VERSION: Final = "2025-06-18"
START_TIMEOUT: Final = 30.0
IO_TIMEOUT: Final = 120.0
HEADERS: Final = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


class BenchError(Exception):
    """A server misbehaved or answered wrongly."""


# --- servers -------------------------------------------------------------------------------


@dataclass
class Peer:
    name: str
    argv: list[str]
    marker: str  # the stderr text right before the URL


def _trio_mcp(*extra: str) -> list[str]:
    """`trio-mcp run` of the benchmark's target over HTTP on a free loopback port, plus `extra`."""
    target = str(HERE / "servers" / "trio_mcp_http.py")
    where = ["--transport", "http", "--host", "127.0.0.1", "--port", "0"]
    return [sys.executable, "-m", "trio_mcp", "run", target, *where, *extra]


PEERS: Final = [
    Peer("trio-mcp", _trio_mcp(), "serving MCP on "),
    Peer("trio-mcp stateless", _trio_mcp("--stateless"), "serving MCP on "),
    Peer("trio-mcp 2 workers", _trio_mcp("--stateless", "--workers", "2"), "serving MCP on "),
    Peer(
        "trio-mcp 2 behind nginx",
        [sys.executable, str(HERE / "servers" / "behind_nginx.py"), "--servers", "2"],
        "serving MCP on ",
    ),
    Peer("SDK", [sys.executable, str(HERE / "servers" / "sdk_http.py")], "listening on "),
    Peer(
        "bare Hypercorn",
        [sys.executable, str(HERE / "servers" / "hypercorn_baseline.py")],
        "listening on ",
    ),
]
# Ratio columns: (numerator, denominator) peer names, medians divided.
RATIOS: Final = [
    ("trio-mcp", "SDK"),
    ("trio-mcp", "bare Hypercorn"),
    ("trio-mcp 2 workers", "trio-mcp stateless"),
    ("trio-mcp 2 behind nginx", "trio-mcp stateless"),
]


class Server:
    """A server subprocess; its URL is read from its stderr, which is drained until it ends."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.proc = subprocess.Popen(
            peer.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self._tail: list[str] = []
        self._url: str | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if not self._ready.wait(START_TIMEOUT) or self._url is None:
            self.close()
            raise self.error(f"no URL on stderr within {START_TIMEOUT:.0f} s")
        self.url: str = self._url

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self._tail = [*self._tail[-40:], line]
            if self._url is None and self.peer.marker in line:
                self._url = line.split(self.peer.marker, 1)[1].split(",")[0].split()[0]
                self._ready.set()
        self._ready.set()  # ended: wake the waiter either way

    def error(self, why: str) -> BenchError:
        tail = "\n".join(self._tail[-20:])
        return BenchError(f"{self.peer.name}: {why}\n--- server stderr (tail) ---\n{tail}")

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the server process so far, its worker processes' included
        (Linux only)."""
        return _cpu_seconds(self.proc.pid)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)


def _cpu_seconds(pid: int) -> float | None:
    # The process and, for `--workers`, its children (the workers), each from /proc.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    children = []  # each thread's (a worker may be started from any thread)
    for task in Path(f"/proc/{pid}/task").glob("*"):
        # A kernel without CONFIG_PROC_CHILDREN has no such file: the process alone counts.
        with contextlib.suppress(OSError):
            children += (task / "children").read_text().split()
    fields = stat.rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for child in children:
        total += _cpu_seconds(int(child)) or 0.0
    return total


# --- one MCP session over raw HTTP ---------------------------------------------------------


def _messages(response: RawResponse) -> list[Any]:
    """The JSON-RPC messages of a POST response: a JSON body or the `data:` lines of SSE."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        body = json.loads(response.body)
        return body if isinstance(body, list) else [body]
    if kind.startswith("text/event-stream"):
        out: list[Any] = []
        data: list[str] = []
        for line in [*response.text.splitlines(), ""]:
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                if any(data):  # an event with empty data (a priming event) carries no message
                    out.append(json.loads("\n".join(data)))
                data = []
        return out
    raise BenchError(f"unexpected content-type {kind!r}: {response.body[:300]!r}")


def _answer(response: RawResponse, request_id: int) -> Any:
    if response.status != 200:
        raise BenchError(f"id {request_id}: HTTP {response.status}: {response.text[:300]}")
    found = [m for m in _messages(response) if isinstance(m, dict) and m.get("id") == request_id]
    if len(found) != 1:
        raise BenchError(f"id {request_id}: {len(found)} answers in {response.text[:300]!r}")
    return found[0]


def _add_body(i: int) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "calculator.add", "arguments": {"a": i, "b": 0.5}},
        },
        separators=(",", ":"),
    ).encode()


def _check_add(response: RawResponse, i: int) -> None:
    message = _answer(response, i)
    result = message.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise BenchError(f"id {i}: not a successful result: {message!r:.300}")
    if float(result["content"][0]["text"]) != i + 0.5:
        raise BenchError(f"id {i}: wrong sum in {message!r:.300}")


def _dump(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


class Session:
    """An initialized MCP session on its own keep-alive connection."""

    def __init__(
        self,
        url: str,
        version: str = PROTOCOL_VERSION,
        headers: dict[str, str] | None = None,
        *,
        source: str | None = None,
    ) -> None:
        self.url = url
        self.http = HttpConnection(url, {**HEADERS, **(headers or {})}, IO_TIMEOUT, source=source)
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "http_bench", "version": "0"},
            },
        }
        response = self.http.request("POST", _dump(init))
        answer = _answer(response, 0)
        if "result" not in answer:
            raise BenchError(f"initialize failed: {answer!r:.300}")
        session_id = response.headers.get("mcp-session-id")
        if session_id:
            self.http.set_header("Mcp-Session-Id", session_id)
        self.http.set_header("Mcp-Protocol-Version", answer["result"]["protocolVersion"])
        done = self.http.request(
            "POST", _dump({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        if done.status not in (200, 202):
            raise BenchError(f"notifications/initialized: HTTP {done.status}: {done.text}")

    def calls(self, ids: range, latencies: list[float] | None = None) -> list[RawResponse]:
        """Call add for each id, one at a time; responses are checked by the caller, later."""
        requests = [self.http.prepare("POST", _add_body(i)) for i in ids]
        send = self.http.send_prepared
        responses = []
        clock = time.perf_counter
        for request in requests:
            t0 = clock()
            responses.append(send(request))
            if latencies is not None:
                latencies.append(clock() - t0)
        return responses

    def close(self) -> None:
        with contextlib.suppress(OSError, HttpError):
            self.http.request("DELETE")
        self.http.close()


# --- workloads -----------------------------------------------------------------------------


@dataclass
class Round:
    values: dict[str, float] = field(default_factory=dict)


def _timed(server: Server, run: Callable[[], None]) -> tuple[float, float, float | None]:
    """Wall seconds, driver CPU share and server CPU share of `run()`."""
    srv0 = server.cpu_seconds()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    srv1 = server.cpu_seconds()
    srv = None if srv0 is None or srv1 is None else (srv1 - srv0) / wall
    return wall, cpu / wall, srv


def sequential(server: Server, n: int) -> dict[str, float]:
    session = Session(server.url)
    try:
        session.calls(range(1, 6))  # warm-up: first-call costs, connection already open
        latencies: list[float] = []
        responses: list[RawResponse] = []

        def run() -> None:
            responses.extend(session.calls(range(1, n + 1), latencies))

        wall, drv, srv = _timed(server, run)
    finally:
        session.close()
    for i, response in zip(range(1, n + 1), responses, strict=True):
        _check_add(response, i)
    latencies.sort()
    out = {
        "seq_calls_per_s": n / wall,
        "seq_p50_ms": 1000 * statistics.median(latencies),
        "seq_p99_ms": 1000 * latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))],
        "seq_cpu_drv": drv,
    }
    if srv is not None:
        out["seq_cpu_srv"] = srv
    return out


def measured(peer: Peer, measure: Callable[[Server], dict[str, float]]) -> dict[str, float]:
    """Start `peer`, run `measure` against it and stop it; a failure carries the server's output."""
    server = Server(peer)
    try:
        return measure(server)
    except BenchError:
        raise
    except Exception as exc:
        raise server.error(repr(exc)) from exc
    finally:
        server.close()


def in_threads(
    server: Server, count: int, work: Callable[[int], list[RawResponse]]
) -> tuple[list[list[RawResponse]], float, float, float | None]:
    """Run `work(k)` for k in range(count) on threads started together; their responses and
    `_timed`'s wall seconds and CPU shares. A thread's exception is raised as the server's."""
    start = threading.Barrier(count + 1)
    results: list[list[RawResponse]] = [[] for _ in range(count)]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        start.wait()
        try:
            results[k] = work(k)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()

    def run() -> None:
        start.wait()
        for thread in threads:
            thread.join()

    wall, drv, srv = _timed(server, run)
    if errors:
        raise server.error(f"concurrent: {errors[0]!r}") from errors[0]
    return results, wall, drv, srv


def concurrent(server: Server, sessions: int, n: int) -> dict[str, float]:
    opened = [Session(server.url) for _ in range(sessions)]
    try:
        for session in opened:
            session.calls(range(1, 3))  # warm-up
        results, wall, drv, srv = in_threads(
            server, sessions, lambda k: opened[k].calls(range(1, n + 1))
        )
    finally:
        for session in opened:
            session.close()
    for responses in results:
        for i, response in zip(range(1, n + 1), responses, strict=True):
            _check_add(response, i)
    out = {"conc_calls_per_s": sessions * n / wall, "conc_cpu_drv": drv}
    if srv is not None:
        out["conc_cpu_srv"] = srv
    return out


# --- report --------------------------------------------------------------------------------

ROWS: Final = [
    ("seq_calls_per_s", "1. sequential: calls/s", "{:.0f}"),
    ("seq_p50_ms", "1. sequential: p50 latency (ms)", "{:.2f}"),
    ("seq_p99_ms", "1. sequential: p99 latency (ms)", "{:.2f}"),
    ("seq_cpu_drv", "1. sequential: CPU drv", "{:.2f}"),
    ("seq_cpu_srv", "1. sequential: CPU srv", "{:.2f}"),
    ("conc_calls_per_s", "2. {sessions} sessions: total calls/s", "{:.0f}"),
    ("conc_cpu_drv", "2. {sessions} sessions: CPU drv", "{:.2f}"),
    ("conc_cpu_srv", "2. {sessions} sessions: CPU srv", "{:.2f}"),
]


def _cell(values: Sequence[float], fmt: str) -> str:
    if not values:
        return "-"
    median = fmt.format(statistics.median(values))
    if len(values) == 1:
        return median
    return f"{median} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def table(rounds: dict[str, list[dict[str, float]]], sessions: int) -> str:
    names = [peer.name for peer in PEERS]
    lines = []
    header = ["", *names, *(f"{a}/{b}" for a, b in RATIOS)]
    body = []
    for key, label, fmt in ROWS:
        per_peer = {name: [r[key] for r in rounds[name] if key in r] for name in names}
        ratios = []
        for a, b in RATIOS:
            ratio = "-"  # not for CPU shares: a busier server is not a better one
            if "cpu" not in key and per_peer[a] and per_peer[b]:
                ratio = f"{statistics.median(per_peer[a]) / statistics.median(per_peer[b]):.2f}x"
            ratios.append(ratio)
        cells = [_cell(per_peer[name], fmt) for name in names]
        body.append([label.format(sessions=sessions), *cells, *ratios])
    widths = [max(len(row[c]) for row in [header, *body]) for c in range(len(header))]
    for row in [header, *body]:
        lines.append(
            "  ".join(
                cell.ljust(w) if c == 0 else cell.rjust(w)
                for c, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(lines)


def _nginx() -> str | None:
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 round, small counts")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "http.json")
    args = parser.parse_args(argv)
    rounds_n = 1 if args.quick else args.rounds
    seq_n = 50 if args.quick else 500
    sessions = 20
    per_session = 10 if args.quick else 100

    started = time.perf_counter()
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    rounds: dict[str, list[dict[str, float]]] = {peer.name: [] for peer in PEERS}
    for r in range(rounds_n):
        for peer in PEERS:
            if peer.name.endswith("behind nginx") and _nginx() is None:
                print(f"skipped {peer.name}: nginx is not installed", file=sys.stderr)
                continue
            values = measured(
                peer, lambda s: sequential(s, seq_n) | concurrent(s, sessions, per_session)
            )
            rounds[peer.name].append(values)
            print(
                f"round {r + 1}/{rounds_n} {peer.name}: "
                f"{values['seq_calls_per_s']:.0f} seq calls/s, "
                f"{values['conc_calls_per_s']:.0f} concurrent calls/s",
                file=sys.stderr,
                flush=True,
            )
    elapsed = time.perf_counter() - started

    versions = {
        dist: _version(dist) for dist in ("trio-mcp", "trio", "hypercorn", "h11", "mcp", "uvicorn")
    }
    print(
        f"Streamable HTTP benchmark, {stamp} ({'quick' if args.quick else 'full'} run, "
        f"{rounds_n} round(s), {elapsed:.0f} s)"
    )
    print(
        f"machine: {os.cpu_count()} cores, CPython {platform.python_version()}, "
        f"{platform.platform()}"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(
        f"workloads: 1. {seq_n} sequential calls, one session and connection; "
        f"2. {sessions} sessions x {per_session} sequential calls, one thread each"
    )
    print("cells: median [min-max] over rounds; a/b columns divide the medians")
    print("       (above 1 is better for calls/s, below 1 is better for latency)")
    print()
    print(table(rounds, sessions))

    args.json.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "timestamp": stamp,
        "quick": args.quick,
        "rounds": rounds_n,
        "elapsed_s": elapsed,
        "counts": {"sequential": seq_n, "sessions": sessions, "per_session": per_session},
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "versions": versions,
        "servers": {peer.name: peer.argv[1:] for peer in PEERS},
        "results": rounds,
        "medians": {
            name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
            for name, runs in rounds.items()
            if runs  # not a peer skipped for want of its binary
        },
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
