"""Reliability probe: real trio-mcp servers attacked as an attacker and a careless client would.

    python benchmarks/reliability.py [--quick | --smoke] [--rows 1,4,...] [--seed N] [--out PATH]

Each row starts its own server subprocess (the demo server over stdio, or the probe server,
the demo tools plus `probe.sleep` and `probe.flood`, over Streamable HTTP on loopback), attacks
it, checks an invariant from outside (answers, /proc), and reports pass or FAIL:

1 fuzzed stdio lines       2 garbage volume      3 pipelined calls       4 abandoned sessions
5 vanishing HTTP clients   6 slow HTTP clients   7 overload (fd limit)   8 shutdown, calls in flight
9 hostile URI, ping behind 10 8 MiB URI          11 URI traversal        12 subscription flood
13 listen flood            14 malformed responses 15 shutdown, tasks running
16 one address's crowd     17 a batch over Streamable HTTP

The full run takes a few minutes on 2 cores, `--quick` about one, `--smoke` (for the test
suite) seconds, with smaller counts and shorter waits. The table is printed; a full run also
writes it to docs/reliability.md (`--out` chooses the file, for any run). The exit status is 0
when every row passed, 1 when one failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from driver import READ_SIZE, BenchError, add_frames, check_add
from fuzz import NULL, Fuzzer, Owed, owed
from http_bench import Peer
from probe import (
    DEMO_STDIO,
    HEADERS,
    HTTP_TIMEOUT,
    PROBE_STDIO,
    Bystander,
    HttpConnection,
    ProbePeer,
    Server,
    Session,
    call_body,
    connect,
    fresh_client,
    head_status,
    http_server,
    post_bytes,
    proc_stats,
    read_response,
    reset,
    settled_stats,
    wait_readable,
)
from rawhttp import HttpError

HERE: Final = Path(__file__).resolve().parent
ROOT: Final = HERE.parent
DOC: Final = ROOT / "docs" / "reliability.md"
MiB: Final = 1 << 20
# The stdio line limit of a server with default settings (Limits(max_line_bytes=...)).
LINE_LIMIT: Final = 16 * MiB
# Seconds of silence after which a stdio server that still owes answers counts as stalled.
STALL: Final = 20.0
# Seconds a fresh client may take to be served and still count as "promptly".
PROMPT: Final = 2.0
# Grace period of the probe server (benchmarks/servers/probe_server.py).
GRACE: Final = 2.0
# Growth of a server's peak resident memory (MiB) that still counts as flat.
FLAT: Final = 16.0
# Growth of peak resident memory (MiB) an attack may cause and still count as bounded.
BOUNDED: Final = 64.0


@dataclass(frozen=True)
class Sizes:
    """How much of each attack a run makes (the row numbers of the table in brackets)."""

    mode: str
    fuzz_lines: int  # [1]
    garbage_bytes: int  # [2]
    pipelined: int  # [3]
    sessions: int  # [4]
    vanishing: int  # [5]
    slow_clients: int  # [6a, 6b] of each kind
    slow_readers: int  # [6c]
    slow_wait: float  # [6] seconds the slow clients are given
    overload_nofile: int  # [7] the server's RLIMIT_NOFILE
    overload_clients: int  # [7]
    overload_call: float  # [7] seconds each call takes; a client may wait twice that
    shutdown_calls: int  # [8a, 8b]
    http_shutdown_calls: int  # [8c]
    subscribes: int  # [12] resources/subscribe of the attacking client, each round
    subscribers: int  # [12] clients subscribing at once, each round (the attacker one of them)
    subscribe_rounds: int  # [12]
    listens: int  # [13] idle subscriptions/listen streams one client opens
    listen_calls: int  # [13] calls of another client meanwhile
    shutdown_tasks: int  # [15]
    crowd_connections: int  # [16] from one address
    crowd_nofile: int  # [16] the server's RLIMIT_NOFILE
    dots: int  # [9] characters of the hostile URI
    dot_reads: int  # [9]
    big_uri: int  # [10] characters
    big_uri_posts: int  # [10b] at once


FULL: Final = Sizes(
    mode="full",
    fuzz_lines=125_000,
    garbage_bytes=1024 * MiB,
    pipelined=20_000,
    sessions=10_000,
    vanishing=4_000,
    slow_clients=100,
    slow_readers=4,
    slow_wait=75,  # past the 60 s body deadline that nginx (client_body_timeout) uses
    overload_nofile=64,
    overload_clients=256,
    overload_call=5,
    shutdown_calls=2000,
    http_shutdown_calls=100,
    subscribes=3000,
    subscribers=16,
    subscribe_rounds=3,
    listens=1024,
    listen_calls=100,
    shutdown_tasks=10,
    crowd_connections=1100,
    crowd_nofile=1024,  # the common default: 896 connections served
    dots=65_000,
    dot_reads=20,
    big_uri=8 * MiB,
    big_uri_posts=4,
)
QUICK: Final = replace(
    FULL,
    mode="quick",
    fuzz_lines=10_000,
    garbage_bytes=100 * MiB,
    pipelined=2_000,
    sessions=1_000,
    vanishing=400,
    slow_clients=30,
    slow_readers=2,
    slow_wait=20,
    shutdown_calls=500,
    http_shutdown_calls=40,
    subscribers=8,
    subscribe_rounds=2,
    listen_calls=50,
    shutdown_tasks=10,
    crowd_connections=1100,
    crowd_nofile=1024,
    dots=30_000,
    dot_reads=6,
)
SMOKE: Final = replace(
    QUICK,
    mode="smoke",
    fuzz_lines=1_000,
    garbage_bytes=40 * MiB,
    pipelined=200,
    sessions=100,
    vanishing=40,
    slow_clients=5,
    slow_readers=1,
    slow_wait=8,
    overload_nofile=32,
    overload_clients=64,
    overload_call=1,
    shutdown_calls=100,
    http_shutdown_calls=10,
    subscribes=300,
    subscribers=4,
    subscribe_rounds=2,
    listens=64,
    listen_calls=10,
    shutdown_tasks=10,
    crowd_connections=1100,  # past the 896 connections of 1,024 files, or it proves nothing
    crowd_nofile=1024,
    dots=5_000,
    dot_reads=2,
    big_uri=1 * MiB,
    big_uri_posts=2,
)


@dataclass
class Row:
    """One line of the table: what was tried, how much, the invariant, what was measured."""

    key: str
    attack: str
    amount: str
    invariant: str
    measured: str = ""
    passed: bool | None = None  # None: the probe itself failed (ERROR)
    details: str = ""  # shown below the table

    @property
    def verdict(self) -> str:
        return {True: "pass", False: "FAIL", None: "ERROR"}[self.passed]


@dataclass(frozen=True)
class Plan:
    sizes: Sizes
    seed: int


def _n(value: float) -> str:
    return f"{value:,.0f}"


def _of(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


# -- answers --------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Received answers against what was owed (see `fuzz.owed`), by id."""

    owed_batches: int = 0
    got_batches: int = 0
    missing: int = 0
    extra: int = 0
    not_errors: int = 0
    malformed: int = 0
    answers: int = 0

    @property
    def ok(self) -> bool:
        return not (
            self.missing
            or self.extra
            or self.not_errors
            or self.malformed
            or self.owed_batches != self.got_batches
        )

    def summary(self) -> str:
        return (
            f"{_n(self.answers)} answers: {self.missing} missing, {self.extra} extra, "
            f"{self.not_errors} invalid lines not answered with an error, "
            f"{self.malformed} lines that are not answers, "
            f"{_n(self.got_batches)}/{_n(self.owed_batches)} batch arrays"
        )


def _answer_shape_ok(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "id" not in message:
        return False
    if ("result" in message) == ("error" in message):
        return False
    if "error" in message:
        error = message["error"]
        return isinstance(error, dict) and type(error.get("code")) is int
    return message["id"] is not None


def tally(owed_by_line: Sequence[Owed], lines: Sequence[bytes]) -> Tally:
    """Check `lines` (all the server wrote) against what each line sent was owed."""
    out = Tally()
    want: Counter[str] = Counter()
    want_errors: Counter[str] = Counter()
    for entry in owed_by_line:
        out.owed_batches += entry.batch and entry.lines
        for key, must_err in entry.answers:
            want[key] += 1
            want_errors[key] += must_err
    got: Counter[str] = Counter()
    got_errors: Counter[str] = Counter()
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            out.malformed += 1
            continue
        if isinstance(message, list):
            out.got_batches += 1
        for answer in message if isinstance(message, list) else [message]:
            if not _answer_shape_ok(answer):
                out.malformed += 1
                continue
            key = NULL if answer["id"] is None else json.dumps(answer["id"])
            got[key] += 1
            got_errors[key] += "error" in answer
    out.answers = sum(got.values())
    out.missing = sum((want - got).values())
    out.extra = sum((got - want).values())
    out.not_errors = sum((want_errors - got_errors).values())
    return out


# -- 1-3: stdio -----------------------------------------------------------------------------------


def fuzz_stdio(plan: Plan) -> list[Row]:
    count = plan.sizes.fuzz_lines
    fuzzer = Fuzzer(plan.seed)
    frames = [fuzzer.line()[1] for _ in range(count)]
    owed_by_line = [owed(frame[:-1]) for frame in frames]
    size = sum(map(len, frames))
    row = Row(
        "1",
        "Fuzzed stdio lines, pipelined (256 answers outstanding): mutations of valid requests "
        "(bit flips, truncation, wrong types, huge numbers, NaN, unicode, invalid UTF-8, deep "
        "nesting, duplicate ids and keys, batches); session at 2025-03-26, which has batches",
        f"{_n(count)} lines, {size / MiB:.1f} MiB, seed {plan.seed}",
        "each request line gets exactly one answer with its id, each invalid line an error, "
        "nothing else; ping answered afterwards",
    )
    silent = sum(not entry.lines for entry in owed_by_line)
    invalid = sum(any(err for _, err in entry.answers) for entry in owed_by_line)
    with ProbePeer(DEMO_STDIO) as peer:
        peer.handshake("2025-03-26")
        pumped = peer.pump(frames, [entry.lines for entry in owed_by_line], 256, STALL)
        tail, ponged = peer.ping("reliability-final-ping")
        counted = tally(owed_by_line, pumped.lines + tail)
        peak = peer.peak_rss_mb()
    row.measured = (
        f"{_n(count - silent - invalid)} lines owed answers (a result or an error will do), "
        f"{_n(invalid)} owed errors, {_n(silent)} owed nothing; {counted.summary()}; "
        f"{count / pumped.seconds:,.0f} lines/s; peak RSS {peak:.0f} MiB; "
        f"ping {'answered' if ponged else 'NOT answered'}"
        + ("; the server stalled" if pumped.stalled else "")
    )
    row.passed = counted.ok and ponged and not pumped.stalled
    kinds = ", ".join(f"{name} {n:,}" for name, n in fuzzer.kinds.most_common())
    row.details = f"Lines by mutation: {kinds}."
    return [row]


def _garbage(volume: int, seed: int) -> tuple[list[bytes], int]:
    """Random lines: one just under the line limit, then over-long ones (16-32 MiB) and frames
    of short random lines (a sixteenth of the bytes), mixed.

    Returns the lines and how many of the first of them make up about a tenth of the volume.
    """
    rng = random.Random(seed)
    pool = rng.randbytes(2 * LINE_LIMIT + MiB)
    flat = pool.replace(b"\n", b"x")
    frames = [flat[: LINE_LIMIT - 1] + b"\n", flat[: LINE_LIMIT + 1] + b"\n"]
    size, short, tenth = sum(map(len, frames)), 0, 0
    while size < volume:
        left = volume - size
        if short * 16 < size or left <= LINE_LIMIT + 1:
            at = rng.randrange(len(pool) - 8192)
            frames.append(pool[at : at + rng.randint(1, 8192)] + b"\n")
            short += len(frames[-1])
        else:
            length = min(rng.randint(LINE_LIMIT + 1, 2 * LINE_LIMIT), left)
            frames.append(flat[:length] + b"\n")
        size += len(frames[-1])
        if not tenth and size >= volume // 10:
            tenth = len(frames)
    return frames, tenth or len(frames)


def garbage_stdio(plan: Plan) -> list[Row]:
    volume = plan.sizes.garbage_bytes
    row = Row(
        "2",
        "Garbage into stdio: random bytes, a line just under the 16 MiB limit, over-long lines "
        "(16-32 MiB), short random lines",
        f"{volume / MiB:,.0f} MiB",
        f"resident memory flat (peak grows < {FLAT:.0f} MiB from the first tenth to the end); "
        "every line answered with an error; ping answered afterwards",
    )
    frames, tenth = _garbage(volume, plan.seed)
    # A frame of short garbage holds several lines, each owed its own answer line.
    owed_by_line: list[Owed] = []
    per_frame: list[int] = []
    for frame in frames:
        parts = [owed(part) for part in frame[:-1].split(b"\n")]
        owed_by_line += parts
        per_frame.append(sum(part.lines for part in parts))
    over = sum(len(frame) > LINE_LIMIT + 1 for frame in frames)
    with ProbePeer(DEMO_STDIO) as peer:
        peer.initialize()
        base = proc_stats(peer.proc.pid)
        first = peer.pump(frames[:tenth], per_frame[:tenth], 256, STALL)
        early = proc_stats(peer.proc.pid)
        rest = peer.pump(frames[tenth:], per_frame[tenth:], 256, STALL)
        tail, ponged = peer.ping("reliability-final-ping")
        end = proc_stats(peer.proc.pid)
    counted = tally(owed_by_line, first.lines + rest.lines + tail)
    seconds = first.seconds + rest.seconds
    row.measured = (
        f"{over} over-long lines, {_n(sum(per_frame) - over)} other lines; {counted.summary()}; "
        f"RSS {base.rss:.0f} MiB before, peak {early.peak:.0f} MiB after the first tenth, "
        f"{end.peak:.0f} MiB at the end; {volume / MiB / seconds:,.0f} MiB/s; "
        f"ping {'answered' if ponged else 'NOT answered'}"
    )
    row.passed = (
        counted.ok
        and ponged
        and end.peak - early.peak < FLAT
        and not (first.stalled or rest.stalled)
    )
    return [row]


def pipelined_stdio(plan: Plan) -> list[Row]:
    count, window = plan.sizes.pipelined, 2000
    row = Row(
        "3",
        f"Pipelined tools/call (calculator.add) over stdio, {_n(window)} outstanding (under the "
        "2 x 1,024 after which the server answers 'Server busy')",
        f"{_n(count)} calls",
        "every call answered exactly once, with its own sum; none lost",
    )
    with ProbePeer(DEMO_STDIO) as peer:
        peer.initialize()
        run = peer.pipelined(add_frames(count), window)
        try:
            check_add(run.lines, range(1, count + 1))
            problem = ""
        except BenchError as exc:
            problem = str(exc).split("\n")[0]
        _, ponged = peer.ping("reliability-final-ping")
    row.passed = not problem and ponged
    row.measured = (
        f"{_n(len(run.lines))} answers for {_n(count)} calls"
        + (f": {problem}" if problem else ", each id once with the right sum")
        + f"; {count / run.wall:,.0f} calls/s; ping {'answered' if ponged else 'NOT answered'}"
    )
    return [row]


# -- 4-7: HTTP ------------------------------------------------------------------------------------

INITIALIZE: Final = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "abandoned", "version": "0"},
        },
    }
).encode()
INITIALIZED: Final = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def _open_and_abandon(url: str, count: int) -> Counter[str]:
    """Initialize `count` sessions, and never use nor delete them."""
    outcomes: Counter[str] = Counter()
    init = HttpConnection(url, HEADERS, HTTP_TIMEOUT)
    note = HttpConnection(url, HEADERS, HTTP_TIMEOUT)
    try:
        for _ in range(count):
            response = init.request("POST", INITIALIZE)
            sid = response.headers.get("mcp-session-id")
            if response.status != 200 or not sid:
                outcomes[f"HTTP {response.status}"] += 1
                continue
            note.set_header("Mcp-Session-Id", sid)
            note.set_header("Mcp-Protocol-Version", "2025-06-18")
            done = note.request("POST", INITIALIZED)
            outcomes["opened" if done.status == 202 else f"initialized: {done.status}"] += 1
    finally:
        init.close()
        note.close()
    return outcomes


def _served(session: Session, request_id: int) -> bool:
    """Whether `session` still gets a tool called.

    Its connection may have sat idle past the server's keep-alive timeout, and been closed:
    like any client, it then connects again (once).
    """
    body = call_body(request_id, "calculator.add", {"a": 1, "b": 2})
    for _ in range(2):
        try:
            response = session.http.request("POST", body)
        except (HttpError, OSError):
            session.http.close()
            continue
        return response.status == 200 and b'"structuredContent":{"result":3' in response.body
    return False


def _fresh(url: str) -> tuple[bool, str]:
    served, seconds, why = fresh_client(url)
    prompt = served and seconds < PROMPT
    text = f"served in {seconds * 1000:,.0f} ms" if served else f"NOT served ({why})"
    return prompt, text


def abandoned_sessions(plan: Plan) -> list[Row]:
    count = plan.sizes.sessions
    row = Row(
        "4",
        "Streamable HTTP sessions initialized, then never used nor deleted (8 clients)",
        f"{_n(count)} sessions",
        f"memory bounded (peak grows < {BOUNDED:.0f} MiB); a session in use before (one call) "
        f"is still served; a fresh client is served within {PROMPT:.0f} s",
    )
    with http_server() as server:
        keeper = Session(server.url)
        # In use: a full table makes room by ending sessions never used first (README).
        used = _served(keeper, 6)
        base = proc_stats(server.proc.pid)
        workers = 8
        with ThreadPoolExecutor(workers) as pool:
            shares = [count // workers + (k < count % workers) for k in range(workers)]
            outcomes = sum(pool.map(lambda n: _open_and_abandon(server.url, n), shares), Counter())
        after = proc_stats(server.proc.pid)
        kept = used and _served(keeper, 7)
        prompt, fresh = _fresh(server.url)
        keeper.close()
    row.measured = (
        ", ".join(f"{what}: {_n(n)}" for what, n in sorted(outcomes.items()))
        + f"; RSS {base.rss:.0f} -> {after.rss:.0f} MiB (peak {after.peak:.0f}); the session "
        f"in use before: {'served' if kept else 'NOT served'}; a fresh client: {fresh}"
    )
    row.passed = after.peak - base.peak < BOUNDED and kept and prompt
    return [row]


def _vanish(address: tuple[str, int], request: bytes, rude: bool) -> str:
    """Send a call, wait until it runs (its first progress event), then drop the connection."""
    sock = connect(address)
    try:
        sock.sendall(request)
        data = b""
        while b"data:" not in data:
            status = head_status(data)
            if status not in (None, 200):
                return f"HTTP {status}"
            if not wait_readable(sock, HTTP_TIMEOUT):
                return "no answer"
            chunk = sock.recv(1 << 16)
            if not chunk:
                return "closed by the server"
            data += chunk
        return "dropped mid-call"
    finally:
        if rude:
            reset(sock)
        else:
            sock.close()


def vanishing_clients(plan: Plan) -> list[Row]:
    count = plan.sizes.vanishing
    row = Row(
        "5",
        "HTTP clients that start a call (probe.sleep 60 s) and drop the connection once it "
        "runs, half with FIN, half with RST; 32 at a time, over 2 sessions",
        f"{_n(count)} calls",
        "others served meanwhile; afterwards both sessions still take calls (no in-flight "
        "slot leaked: each session allows 1,024), a fresh client is served, descriptors back "
        f"to where they were, memory bounded (< {BOUNDED:.0f} MiB)",
    )
    with http_server() as server:
        sessions = [Session(server.url), Session(server.url)]
        address = sessions[0].http.address
        requests = [
            post_bytes(sessions[k % 2], call_body(1000 + k, "probe.sleep", {"seconds": 60}, True))
            for k in range(count)
        ]
        base = proc_stats(server.proc.pid)
        with Bystander(server.url) as bystander, ThreadPoolExecutor(32) as pool:
            outcomes = Counter(
                pool.map(lambda k: _vanish(address, requests[k], k % 2 == 1), range(count))
            )
        after = settled_stats(server.proc.pid, base.fds)  # the last disconnections are heard
        kept = all(_served(session, 7) for session in sessions)
        prompt, fresh = _fresh(server.url)
        for session in sessions:
            session.close()
    row.measured = (
        ", ".join(f"{what}: {_n(n)}" for what, n in outcomes.most_common())
        + f"; {bystander.summary()}; afterwards the 2 sessions "
        + ("take calls" if kept else "do NOT take calls")
        + f", a fresh client {fresh}; server fds {base.fds} -> {after.fds}, threads "
        f"{base.threads} -> {after.threads}, RSS {base.rss:.0f} -> {after.rss:.0f} MiB"
    )
    row.passed = (
        outcomes["dropped mid-call"] == count
        and bystander.ok
        and kept
        and prompt
        and after.fds <= base.fds + 2
        and after.peak - base.peak < BOUNDED
    )
    return [row]


@dataclass
class Watched:
    """A connection a slow client holds, and when (seconds from the start) the server closed it."""

    sock: socket.socket
    closed_after: float | None = None
    answered: bytes = b""


def _poll_closed(conns: Sequence[Watched], started: float) -> None:
    """Note which connections the server has closed (it may answer first, e.g. 408)."""
    for conn in conns:
        if conn.closed_after is not None:
            continue
        try:
            while chunk := conn.sock.recv(1 << 16, socket.MSG_DONTWAIT):
                conn.answered += chunk
        except BlockingIOError:
            continue
        except OSError:
            pass
        conn.closed_after = time.perf_counter() - started


def _reader_closed(conn: Watched) -> bool:
    """Whether the server closed a connection whose client never read: read what is on its way
    (the client's buffer, then what the server's kernel still sends after a close) and look for
    the end of the stream. A server that did not close keeps sending: the read times out."""
    deadline = time.monotonic() + HTTP_TIMEOUT
    conn.sock.settimeout(HTTP_TIMEOUT)
    try:
        while time.monotonic() < deadline:
            if not conn.sock.recv(1 << 20):
                return True
    except TimeoutError:
        return False
    except OSError:
        return True
    return False


def _slow_text(conns: Sequence[Watched], wait: float) -> tuple[bool, str]:
    closed = [c.closed_after for c in conns if c.closed_after is not None]
    answers = Counter(head_status(c.answered) for c in conns if c.answered)
    text = f"{len(closed)} of {len(conns)} closed by the server within {wait:.0f} s"
    if closed:
        text += f" (after {min(closed):.1f}-{max(closed):.1f} s)"
    if answers:
        text += ", answered " + ", ".join(f"HTTP {k}: {n}" for k, n in answers.items())
    return len(closed) == len(conns), text


def slow_clients(plan: Plan) -> list[Row]:
    sizes = plan.sizes
    count, wait = sizes.slow_clients, sizes.slow_wait
    rows = [
        Row(
            "6a",
            "Slow HTTP clients: half a request head, then silence",
            f"{count} connections",
            f"each closed by the server within {wait:.0f} s; others served meanwhile",
        ),
        Row(
            "6b",
            "Slow-loris: a whole request head, one byte of its body, then silence",
            f"{count} connections",
            f"each closed by the server within {wait:.0f} s; others served meanwhile",
        ),
        Row(
            "6c",
            "Clients that never read their SSE stream (probe.flood: 16 KiB progress events)",
            _of(sizes.slow_readers, "stream") + " of up to 256 MiB",
            f"each closed by the server within {wait:.0f} s; memory bounded "
            f"(< {BOUNDED:.0f} MiB); others served meanwhile",
        ),
    ]
    with http_server() as server:
        session = Session(server.url)
        address = session.http.address
        whole = post_bytes(session, call_body(1, "calculator.add", {"a": 1, "b": 2}))
        head, _, body = whole.partition(b"\r\n\r\n")
        floods = [
            post_bytes(
                session, call_body(10 + k, "probe.flood", {"count": 16384, "size": 16384}, True)
            )
            for k in range(sizes.slow_readers)
        ]
        base = proc_stats(server.proc.pid)
        started = time.perf_counter()
        groups: list[list[Watched]] = [[], [], []]
        for data, number in ((head[: len(head) // 2], 0), (head + b"\r\n\r\n" + body[:1], 1)):
            for _ in range(count):
                sock = connect(address)
                sock.sendall(data)
                sock.setblocking(False)  # polled by _poll_closed
                groups[number].append(Watched(sock))
        for flood in floods:
            groups[2].append(Watched(connect(address)))
            groups[2][-1].sock.sendall(flood)
        peak = base
        with Bystander(server.url) as bystander:
            while time.perf_counter() - started < wait:
                _poll_closed(groups[0] + groups[1], started)
                peak = proc_stats(server.proc.pid)
                if all(c.closed_after is not None for c in groups[0] + groups[1]):
                    break
                time.sleep(0.25)
        readers_closed = sum(_reader_closed(c) for c in groups[2])
        for conn in (c for group in groups for c in group):
            conn.sock.close()
        session.close()
    for row, group in zip(rows[:2], groups[:2], strict=True):
        closed, text = _slow_text(group, wait)
        row.measured = f"{text}; {bystander.summary()}"
        row.passed = closed and bystander.ok
    rows[1].details = f"The slow-loris request declares Content-Length {len(body)}."
    grown = peak.peak - base.peak
    rows[2].measured = (
        f"{readers_closed} of {len(groups[2])} closed by the server within {wait:.0f} s; "
        f"peak RSS {base.peak:.0f} -> {peak.peak:.0f} MiB; {bystander.summary()}"
    )
    rows[2].passed = readers_closed == len(groups[2]) and grown < BOUNDED and bystander.ok
    return rows


def _crowd(headers: dict[str, str], url: str, body: bytes, deadline: float) -> tuple[str, float]:
    """One client of an overloaded server: its outcome, and how long it waited for it."""
    started = time.perf_counter()
    conn = HttpConnection(url, headers, deadline)
    try:
        response = conn.request("POST", body)
        outcome = f"HTTP {response.status}"
        if response.status == 200:
            outcome = "served" if b'"result"' in response.body else "error answer"
    except TimeoutError:
        outcome = f"no answer within {deadline:.0f} s"
    except (HttpError, OSError) as exc:
        outcome = f"refused or closed ({type(exc).__name__})"
    finally:
        conn.close()
    waited = time.perf_counter() - started
    if waited > deadline and not outcome.startswith("no answer"):
        outcome = f"{outcome} after more than {deadline:.0f} s"
    return outcome, waited


def overload(plan: Plan) -> list[Row]:
    sizes = plan.sizes
    nofile, clients, call = sizes.overload_nofile, sizes.overload_clients, sizes.overload_call
    deadline = 2 * call
    row = Row(
        "7",
        f"Overload: the server runs with RLIMIT_NOFILE {nofile}; {clients} clients connect at "
        f"once, each calling probe.sleep {call:.0f} s",
        f"{clients} connections",
        "each client served, or refused (503, or the connection refused or closed): none left "
        f"waiting more than {deadline:.0f} s; the server survives and serves a fresh client "
        "after",
    )
    with http_server(nofile) as server:
        session = Session(server.url)
        bodies = [call_body(k, "probe.sleep", {"seconds": call}) for k in range(clients)]
        headers = dict(session.http.headers)
        with ThreadPoolExecutor(clients) as pool:
            results = list(pool.map(lambda b: _crowd(headers, server.url, b, deadline), bodies))
        outcomes = Counter(outcome for outcome, _ in results)
        alive = server.proc.poll() is None
        prompt, fresh = _fresh(server.url) if alive else (False, "NOT served: server gone")
        session.close()
    slowest = (
        max(seconds for outcome, seconds in results if outcome.startswith("served"))
        if any(outcome.startswith("served") for outcome, _ in results)
        else 0
    )
    row.measured = (
        ", ".join(f"{what}: {n}" for what, n in outcomes.most_common())
        + f"; slowest served after {slowest:.1f} s; server "
        + ("alive" if alive else "DEAD")
        + f"; afterwards a fresh client: {fresh}"
    )
    waiting = sum(n for what, n in outcomes.items() if what.endswith(f"{deadline:.0f} s"))
    row.passed = not waiting and alive and prompt
    return [row]


# -- 8: shutdown ----------------------------------------------------------------------------------


def _by_id(lines: Sequence[bytes]) -> tuple[Counter[Any], Counter[str], int]:
    """Answers per id, outcomes (result, or the error's message up to its colon), others."""
    per_id: Counter[Any] = Counter()
    kinds: Counter[str] = Counter()
    others = 0
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or "id" not in message:
            others += 1
            continue
        per_id[message["id"]] += 1
        error = message.get("error")
        kinds[
            "result" if error is None else f"{error['code']} {error['message'].split(':')[0]}"
        ] += 1
    return per_id, kinds, others


def _exactly_once(per_id: Counter[Any], ids: range) -> tuple[int, int]:
    """(missing, duplicated) among `ids`."""
    missing = sum(1 for i in ids if per_id[i] == 0)
    return missing, sum(1 for i in ids if per_id[i] > 1)


def _frames(ids: range, name: str, arguments: dict[str, Any]) -> bytes:
    return b"".join(call_body(i, name, arguments) + b"\n" for i in ids)


def _waiting(count: int) -> str:
    return f"; 1,024 run, {_n(count - 1024)} wait for a slot" if count > 1024 else ""


def sigterm_stdio(plan: Plan) -> list[Row]:
    count = plan.sizes.shutdown_calls
    row = Row(
        "8a",
        "SIGTERM to the stdio demo server with calls in flight (wh40k.battle_simulation, 0.5 s"
        f"{_waiting(count)})",
        f"{_n(count)} calls",
        "every call answered exactly once (its result, or -32000 'Server shutting down'); "
        "exit status 0 within 5 s",
    )
    with ProbePeer(DEMO_STDIO) as peer:
        peer.initialize()
        peer.send(_frames(range(1, count + 1), "wh40k.battle_simulation", {}))
        before, _ = peer.ping("all-read")
        started = time.perf_counter()
        peer.proc.send_signal(signal.SIGTERM)
        rest, ended = peer.read_to_eof(15)
        code = peer.proc.wait(15)
        seconds = time.perf_counter() - started
    per_id, kinds, others = _by_id(before + rest)
    missing, twice = _exactly_once(per_id, range(1, count + 1))
    row.measured = (
        ", ".join(f"{what}: {_n(n)}" for what, n in kinds.most_common())
        + f"; {missing} unanswered, {twice} answered twice, {others} other lines; exit "
        f"status {code} after {seconds:.1f} s"
    )
    row.passed = not (missing or twice or others) and ended and code == 0 and seconds < 5
    return [row]


def eof_stdio(plan: Plan) -> list[Row]:
    count = plan.sizes.shutdown_calls
    short = count // 2
    row = Row(
        "8b",
        f"End of stdin with calls in flight (probe server, grace {GRACE:.0f} s): half "
        f"probe.sleep 0.5 s, then half probe.sleep 1 h{_waiting(count)}",
        f"{_n(count)} calls",
        "every call answered exactly once: the short ones with their results, the long ones "
        f"with -32000 once the grace period is over; exit status 0 within {GRACE + 5:.0f} s",
    )
    with ProbePeer(PROBE_STDIO) as peer:
        peer.initialize()
        peer.send(_frames(range(1, short + 1), "probe.sleep", {"seconds": 0.5}))
        peer.send(_frames(range(short + 1, count + 1), "probe.sleep", {"seconds": 3600}))
        before, _ = peer.ping("all-read")
        started = time.perf_counter()
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()
        rest, ended = peer.read_to_eof(GRACE + 15)
        code = peer.proc.wait(15)
        seconds = time.perf_counter() - started
    lines = before + rest
    per_id, kinds, others = _by_id(lines)
    missing, twice = _exactly_once(per_id, range(1, count + 1))
    results = {json.loads(line)["id"] for line in lines if b'"result"' in line}
    short_ok = all(i in results for i in range(1, short + 1))
    long_cut = not any(i in results for i in range(short + 1, count + 1))
    row.measured = (
        ", ".join(f"{what}: {_n(n)}" for what, n in kinds.most_common())
        + f"; short calls {'all' if short_ok else 'NOT all'} with results, long ones "
        + ("all cut short" if long_cut else "NOT all cut short")
        + f"; {missing} unanswered, {twice} answered twice, {others} other lines; exit status "
        f"{code} after {seconds:.1f} s"
    )
    row.passed = (
        not (missing or twice or others)
        and short_ok
        and long_cut
        and ended
        and code == 0
        and seconds < GRACE + 5
    )
    return [row]


def _sse_answer(data: bytes, request_id: int) -> str:
    """What an HTTP client of a call got: its result, an error, or a stream cut short."""
    body = data.partition(b"\r\n\r\n")[2]
    status = head_status(data)
    if status is None:
        return "connection closed, no response" if not data else "response head cut short"
    if status != 200:
        return f"HTTP {status}"
    ended = body.endswith(b"0\r\n\r\n")  # the last chunk: the stream was ended, not cut
    for line in body.split(b"\n"):
        if line.startswith((b"data:", b"{")):
            try:
                message = json.loads(line.removeprefix(b"data:"))
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == request_id:
                error = message.get("error")
                return "result" if error is None else f"error {error['code']}"
    return "stream ended without an answer" if ended else "stream cut off without an answer"


def _started_call(address: tuple[str, int], request: bytes) -> tuple[socket.socket, bytes]:
    sock = connect(address, HTTP_TIMEOUT)
    sock.sendall(request)
    data = b""
    while b"data:" not in data and wait_readable(sock, HTTP_TIMEOUT):
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return sock, data


def sigterm_http(plan: Plan) -> list[Row]:
    count = plan.sizes.http_shutdown_calls
    short = count // 2
    row = Row(
        "8c",
        f"SIGTERM to the HTTP probe server (grace {GRACE:.0f} s) with calls in flight, one "
        "connection each: half probe.sleep 1 s, half probe.sleep 1 h",
        f"{count} calls",
        "short calls get their results; long ones an answer (-32000) when the grace period "
        f"ends, not a dropped connection; the server exits with status 0 within {GRACE + 5:.0f} "
        "s and takes no new connection meanwhile",
    )
    with http_server() as server:
        session = Session(server.url)
        address = session.http.address
        requests = [
            post_bytes(
                session, call_body(i, "probe.sleep", {"seconds": 1 if i <= short else 3600}, True)
            )
            for i in range(1, count + 1)
        ]
        with ThreadPoolExecutor(count) as pool:
            started_calls = list(pool.map(lambda r: _started_call(address, r), requests))
        started = time.perf_counter()
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        late = _fresh(server.url)[1]
        with ThreadPoolExecutor(count) as pool:
            finished = list(
                pool.map(lambda sd: sd[1] + read_response(sd[0], GRACE + 10)[0], started_calls)
            )
        try:
            code: int | None = server.proc.wait(GRACE + 15)
        except subprocess.TimeoutExpired:
            code = None
        seconds = time.perf_counter() - started
        for sock, _ in started_calls:
            sock.close()
    got = [_sse_answer(data, i) for i, data in enumerate(finished, start=1)]
    short_kinds = Counter(got[:short])
    long_kinds = Counter(got[short:])
    row.measured = (
        "short calls: "
        + ", ".join(f"{k}: {n}" for k, n in short_kinds.most_common())
        + "; long calls: "
        + ", ".join(f"{k}: {n}" for k, n in long_kinds.most_common())
        + f"; a new client after SIGTERM: {late}; exit status {code} after {seconds:.1f} s"
    )
    row.passed = (
        short_kinds["result"] == short
        and long_kinds["error -32000"] == count - short
        and code == 0
        and seconds < GRACE + 5
        and "NOT served" in late
    )
    return [row]


def sigterm_http_unread(plan: Plan) -> list[Row]:
    readers = plan.sizes.slow_readers
    row = Row(
        "8d",
        f"SIGTERM to the HTTP probe server (grace {GRACE:.0f} s) while clients never read "
        "their SSE stream (probe.flood, as in 6c)",
        _of(readers, "stream"),
        f"the server exits with status 0 within {GRACE + 5:.0f} s all the same",
    )
    with http_server() as server:
        session = Session(server.url)
        flood = {"count": 16384, "size": 16384}
        unread = [
            _started_call(
                session.http.address, post_bytes(session, call_body(k, "probe.flood", flood, True))
            )[0]
            for k in range(readers)
        ]
        session.http.close()
        time.sleep(0.5)  # the server fills the socket buffers, then waits for the client
        started = time.perf_counter()
        server.proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = server.proc.wait(GRACE + 5)
        except subprocess.TimeoutExpired:
            code = None
            server.proc.kill()
        seconds = time.perf_counter() - started
        for sock in unread:
            sock.close()
    row.measured = (
        f"still running {seconds:.0f} s after SIGTERM (then killed)"
        if code is None
        else f"exit status {code} after {seconds:.1f} s"
    )
    row.passed = code == 0 and seconds < GRACE + 5
    return [row]


# -- 15-17: tasks at shutdown, one address's crowd, batches over HTTP -----------------------------

SETTLED: Final = ("completed", "failed", "cancelled")


def sigterm_tasks_stdio(plan: Plan) -> list[Row]:
    count = plan.sizes.shutdown_tasks
    row = Row(
        "15",
        "SIGTERM to the stdio demo server with tasks running (wh40k.campaign, 100 battles of "
        "0.6 s each, in a 2025-11-25 session, each call asking for a task: params.task)",
        _of(count, "task"),
        "each task's final notifications/tasks/status (failed, 'Server shutting down') written "
        "before the exit; every request answered exactly once; exit status 0 within 5 s",
    )
    with ProbePeer(DEMO_STDIO) as peer:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "trio-mcp-reliability", "version": "0"},
        }
        peer.request(0, "initialize", init)
        peer.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        ids = range(1, count + 1)
        asked = {"name": "wh40k.campaign", "arguments": {"battles": 100}, "task": {}}
        peer.send(
            b"".join(
                json.dumps(
                    {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": asked}
                ).encode()
                + b"\n"
                for i in ids
            )
        )
        before, created = peer.read_answers(ids, HTTP_TIMEOUT)
        started = time.perf_counter()
        peer.proc.send_signal(signal.SIGTERM)
        rest, ended = peer.read_to_eof(15)
        code = peer.proc.wait(15)
        seconds = time.perf_counter() - started
    messages = [json.loads(line) for line in before + rest]
    tasks = {
        m["result"]["task"]["taskId"]
        for m in messages
        if m.get("id") in ids and "task" in m.get("result", {})
    }
    ends = Counter(
        (m["params"]["status"], m["params"].get("statusMessage"))
        for m in messages
        if m.get("method") == "notifications/tasks/status" and m["params"]["status"] in SETTLED
    )
    told = sum(ends.values())
    per_id, _, _ = _by_id(before + rest)
    missing, twice = _exactly_once(per_id, ids)
    row.measured = (
        f"{len(tasks)} of {count} calls became tasks; {told} of {len(tasks)} final "
        "notifications written ("
        + (", ".join(f"{status} '{why}': {n}" for (status, why), n in ends.items()) or "none")
        + f"); {missing} calls unanswered, {twice} answered twice; exit status {code} after "
        f"{seconds:.1f} s"
    )
    row.passed = (
        created
        and len(tasks) == count
        and ends == Counter({("failed", "Server shutting down"): count})
        and not (missing or twice)
        and ended
        and code == 0
        and seconds < 5
    )
    return [row]


def _settle_crowd(crowd: Sequence[Watched], started: float) -> None:
    """Poll until the server has stopped answering and closing the crowd's connections."""
    closed = -1
    while closed != (now := sum(c.closed_after is not None for c in crowd)):
        closed = now
        time.sleep(0.5)
        _poll_closed(crowd, started)


def one_address_crowd(plan: Plan) -> list[Row]:
    count, nofile = plan.sizes.crowd_connections, plan.sizes.crowd_nofile
    row = Row(
        "16",
        f"{_n(count)} connections from one address (127.0.0.1), each dribbling a request body "
        f"(a head declaring more, then a byte at a time), to the HTTP probe server under "
        f"RLIMIT_NOFILE {_n(nofile)}; then a new client from 127.0.0.2",
        f"{_n(count)} connections",
        f"the other address is served within {PROMPT:.0f} s while they are held; what the "
        "crowd's address is refused is answered (429 or 503) and closed",
    )
    with http_server(nofile) as server:
        session = Session(server.url)
        address = session.http.address
        request = post_bytes(session, call_body(1, "calculator.add", {"a": 1, "b": 2}))
        head, _, body = request.partition(b"\r\n\r\n")
        session.close()
        started = time.perf_counter()
        crowd: list[Watched] = []
        try:
            for _ in range(count):
                sock = connect(address)
                sock.sendall(head + b"\r\n\r\n" + body[:1])
                sock.setblocking(False)  # polled by _poll_closed
                crowd.append(Watched(sock))
            _settle_crowd(crowd, started)
            for conn in crowd:  # the next byte of each body still being read
                if conn.closed_after is None:
                    with suppress(OSError):
                        conn.sock.send(body[1:2], socket.MSG_DONTWAIT)
            served, seconds, why = fresh_client(server.url, source="127.0.0.2")
            same = fresh_client(server.url)
            _poll_closed(crowd, started)
            held = sum(c.closed_after is None for c in crowd)
            answers = Counter(
                f"HTTP {head_status(c.answered)}" if c.answered else "closed unanswered"
                for c in crowd
                if c.closed_after is not None
            )
        finally:
            for conn in crowd:
                conn.sock.close()
    other = f"served in {seconds * 1000:,.0f} ms" if served else f"NOT served: {why}"
    row.measured = (
        f"{_n(held)} held by the server, "
        + ", ".join(f"{what}: {_n(n)}" for what, n in answers.most_common())
        + f"; a client from 127.0.0.2: {other}; a new client from 127.0.0.1: "
        + ("served" if same[0] else f"refused ({same[2]})")
    )
    row.passed = served and seconds < PROMPT and held < count
    return [row]


BATCH: Final = (
    b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]'
)


def batch_http(plan: Plan) -> list[Row]:
    row = Row(
        "17",
        "A JSON-RPC batch (ping, tools/list) POSTed to /mcp in a 2025-11-25 session, and in a "
        "2025-03-26 one (the only revision with batches)",
        "2 POSTs",
        "2025-11-25: HTTP 400 with one -32600 error as the body (one message per POST); "
        "2025-03-26: HTTP 200 with both answers in an array",
    )
    got: dict[str, tuple[int, Any]] = {}
    with http_server() as server:
        for version in ("2025-11-25", "2025-03-26"):
            session = Session(server.url, version)
            response = session.http.request("POST", BATCH)
            got[version] = (response.status, json.loads(response.body or b"null"))
            session.close()
    status, refused = got["2025-11-25"]
    kept_status, kept = got["2025-03-26"]
    error = refused.get("error", {}) if isinstance(refused, dict) else {}
    row.measured = (
        f"2025-11-25: HTTP {status}, "
        + (f"error {error.get('code')}" if error else f"body {json.dumps(refused)[:80]}")
        + f"; 2025-03-26: HTTP {kept_status}, "
        + (f"an array of {len(kept)} answers" if isinstance(kept, list) else "no array")
    )
    row.passed = (
        status == 400
        and error.get("code") == -32600
        and kept_status == 200
        and isinstance(kept, list)
        and sorted(m.get("id") for m in kept) == [1, 2]
    )
    return [row]


# -- 9-11: resource URIs --------------------------------------------------------------------------

URI_SERVER: Final = HERE / "servers" / "uri_server.py"
URI_STDIO: Final = (sys.executable, "-m", "trio_mcp", "run", str(URI_SERVER))
# Milliseconds a ping may wait behind a hostile read and still count as answered at once: the
# event loop is never held more than a few milliseconds; the rest is this 2-core machine.
PING_WAIT: Final = 50.0
MODERN_META: Final = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
# Read over stdio in both eras: none may answer with what lies outside the served folder.
TRAVERSALS: Final = (
    "file:///files/..%2F..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
    "file:///files/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "file:///files/%2Fetc%2Fpasswd",
    "file:///files/..%2Fsecret.txt",
    "dir:///escape.txt",
    "dir:///..%2Fsecret.txt",
    "dir:///%2e%2e/secret.txt",
    "dir:///a/../../secret.txt",
    "dir:////etc/passwd",
)
LEAKED: Final = (b"root:", b"the secret")


def _frame(request_id: Any, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


class UriPeer(ProbePeer):
    """The probe server of rows 9-11 over stdio, noting when each answer comes."""

    def __init__(self) -> None:
        super().__init__(URI_STDIO)

    def __enter__(self) -> UriPeer:
        return self

    def answers(
        self, ids: set[Any], started: float, timeout: float
    ) -> dict[Any, tuple[float, Any]]:
        """The answers to `ids` that come within `timeout`: (seconds since `started`, answer)."""
        got: dict[Any, tuple[float, Any]] = {}
        deadline = started + timeout
        while len(got) < len(ids):
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") in ids:
                    got[message["id"]] = (time.perf_counter() - started, message)
                continue
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([self._rfd], [], [], left)[0]:
                break
            chunk = os.read(self._rfd, READ_SIZE)
            if not chunk:
                break
            self._buffer += chunk
        return got


def _outcome(answer: Any) -> str:
    if answer is None:
        return "no answer"
    error = answer.get("error")
    return "result" if error is None else f"{error['code']}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def hostile_uri_stdio(plan: Plan) -> list[Row]:
    dots, reads = plan.sizes.dots, plan.sizes.dot_reads
    row = Row(
        "9",
        "resources/read of r://dot/ + dots against the template r://dot/{name}.{ext} over "
        "stdio, a ping written right behind each read; every other URI ends in '/' (no "
        "match: the regex matcher's quadratic case)",
        f"{_of(reads, 'read')} of {dots:,} dots",
        f"each ping answered within {PING_WAIT:.0f} ms; each read answered within "
        f"{PROMPT:.0f} s (its result, or resource not found)",
    )
    pings: list[float] = []
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    with UriPeer() as peer:
        peer.initialize()
        for k in range(reads):
            uri = "r://dot/" + "." * dots + ("/" if k % 2 else "")
            read_id, ping_id = f"read-{k}", f"ping-{k}"
            frames = _frame(read_id, "resources/read", {"uri": uri}) + _frame(ping_id, "ping", {})
            started = time.perf_counter()
            peer.send(frames)
            got = peer.answers({read_id, ping_id}, started, STALL)
            outcomes[_outcome(got.get(read_id, (0, None))[1])] += 1
            if ping_id not in got or read_id not in got:
                outcomes["stalled: no further reads"] += 1
                pings.append(got.get(ping_id, (STALL, None))[0])
                latencies.append(STALL)
                break
            pings.append(got[ping_id][0])
            latencies.append(got[read_id][0])
    pings.sort()
    latencies.sort()
    row.measured = (
        f"pings answered after {_ms(pings[len(pings) // 2])} (median), {_ms(pings[-1])} at "
        f"most; reads answered after {_ms(latencies[len(latencies) // 2])} (median), "
        f"{_ms(latencies[-1])} at most; reads: "
        + ", ".join(f"{what} {n}" for what, n in sorted(outcomes.items()))
    )
    row.passed = (
        pings[-1] * 1000 < PING_WAIT
        and latencies[-1] < PROMPT
        and outcomes["result"] + outcomes["-32002"] == reads
    )
    return [row]


def _big_post(url: str, headers: dict[str, str], body: bytes) -> str:
    conn = HttpConnection(url, headers, STALL)
    try:
        response = conn.request("POST", body)
        if response.status != 200:
            return f"HTTP {response.status}"
        return _outcome(json.loads(response.body.split(b"data:")[-1]))
    except (HttpError, OSError, ValueError) as exc:
        return f"failed ({type(exc).__name__})"
    finally:
        conn.close()


def big_uris(plan: Plan) -> list[Row]:
    size, posts = plan.sizes.big_uri, plan.sizes.big_uri_posts
    rows = [
        Row(
            "10a",
            "resources/read of a URI that the template file:///files/{name} matches, over stdio",
            f"{size / MiB:,.0f} MiB URI",
            f"refused with -32602 naming the cap; peak RSS grows < {BOUNDED:.0f} MiB",
        ),
        Row(
            "10b",
            f"The same read in {posts} Streamable HTTP POSTs at once",
            f"{posts} x {size / MiB:,.0f} MiB",
            f"each refused with -32602; peak RSS grows < {BOUNDED:.0f} MiB per POST; a fresh "
            "client served afterwards",
        ),
    ]
    body_uri = "file:///files/" + "a" * (size - 14)
    with UriPeer() as peer:
        peer.initialize()
        base = proc_stats(peer.proc.pid)
        started = time.perf_counter()
        peer.send(_frame("big", "resources/read", {"uri": body_uri}))
        got = peer.answers({"big"}, started, STALL)
        after = proc_stats(peer.proc.pid)
    seconds, answer = got.get("big", (STALL, None))
    message = (answer or {}).get("error", {}).get("message", "")
    grown = after.peak - base.peak
    rows[0].measured = (
        f"answer {_outcome(answer)} after {_ms(seconds)}"
        + (" naming the cap" if "at most 65,536" in message else "")
        + f"; peak RSS {base.peak:.0f} -> {after.peak:.0f} MiB"
    )
    rows[0].passed = "at most 65,536" in message and grown < BOUNDED
    argv = [*URI_STDIO, "--transport", "http", "--host", "127.0.0.1", "--port", "0"]
    server = Server(Peer("uri probe server", argv, "serving MCP on "))
    try:
        session = Session(server.url)
        headers = dict(session.http.headers)
        base = proc_stats(server.proc.pid)
        body = _frame(1, "resources/read", {"uri": body_uri})
        with ThreadPoolExecutor(posts) as pool:
            outcomes = Counter(
                pool.map(lambda _: _big_post(server.url, headers, body), range(posts))
            )
        after = proc_stats(server.proc.pid)
        fresh = Session(server.url)
        read = {"uri": "file:///files/hello.txt"}
        served = b"hello" in fresh.http.request("POST", _frame(2, "resources/read", read)).body
        fresh.close()
        session.close()
    finally:
        server.close()
    grown = after.peak - base.peak
    rows[1].measured = (
        ", ".join(f"{what}: {n}" for what, n in outcomes.most_common())
        + f"; peak RSS {base.peak:.0f} -> {after.peak:.0f} MiB; afterwards a fresh client "
        + ("is served" if served else "is NOT served")
    )
    rows[1].passed = outcomes["-32602"] == posts and grown < BOUNDED * posts and served
    return rows


def traversal_stdio(plan: Plan) -> list[Row]:
    row = Row(
        "11",
        "Path traversal through resource URIs over stdio, in 2025-11-25 and 2026-07-28: "
        "encoded '../' and '/' against file:///files/{name} (whose function reads DATA / name, "
        "no check of its own), and '..', an absolute path and a symlink out of the folder "
        "served by add_directory('dir:///', DATA)",
        f"{len(TRAVERSALS)} URIs x 2 eras",
        "every read refused with an error (-32602, or resource not found), nothing of "
        "/etc/passwd or of the secret beside the folder in any answer; the folder's own file "
        "served",
    )
    outcomes: Counter[str] = Counter()
    leaks: list[str] = []
    with UriPeer() as peer:
        peer.handshake("2025-11-25")
        listed = peer.request(1, "resources/templates/list", {})["result"]["resourceTemplates"]
        has_directory = any(t["uriTemplate"].startswith("dir:") for t in listed)
        for k, uri in enumerate(TRAVERSALS * 2):
            params: dict[str, Any] = {"uri": uri}
            if k >= len(TRAVERSALS):
                params["_meta"] = MODERN_META
            started = time.perf_counter()
            peer.send(_frame(k, "resources/read", params))
            answer = peer.answers({k}, started, STALL).get(k, (0, None))[1]
            outcomes[_outcome(answer)] += 1
            text = json.dumps(answer).encode()
            if any(secret in text for secret in LEAKED):
                leaks.append(uri)
        served = [
            peer.request(100 + i, "resources/read", {"uri": uri}).get("result", {}).get("contents")
            == [{"uri": uri, "mimeType": "text/plain", "text": "hello\n"}]
            for i, uri in enumerate(("file:///files/hello.txt", "dir:///hello.txt"))
        ]
    row.measured = (
        "answers: "
        + ", ".join(f"{what} {n}" for what, n in sorted(outcomes.items()))
        + f"; leaked: {', '.join(leaks) if leaks else 'nothing'}; the folder's file served: "
        + ("yes" if all(served) else "NO")
        + ("" if has_directory else "; this version has no add_directory")
    )
    row.passed = not leaks and not outcomes["result"] and all(served) and has_directory
    return [row]


# -- the run --------------------------------------------------------------------------------------

# -- 12-14: subscriptions, listen streams, malformed responses ------------------------------------

#: Seconds idle after which row 12's server ends a session (the default is 30 minutes): the row
#: sees a vanished client's session end, and what it held come back, within the row.
SUBSCRIBE_IDLE: Final = 2.0
EXPIRING_SERVER: Final = HERE / "servers" / "probe_expiring.py"
#: The length of each URI row 12 subscribes to.
URI_BYTES: Final = 16 * 1024
#: Subscriptions each client but the attacker asks for, stopping at its first refusal.
FILLER_SUBSCRIBES: Final = 100
#: A session's bound on subscribed URIs by default (Limits(max_subscription_bytes=...)).
SUBSCRIPTION_BYTES: Final = MiB
#: The revision of row 13's requests (each carries `MODERN_META`).
MODERN: Final = "2026-07-28"
#: Listen streams one client may hold by default (HttpOptions(max_listens_per_client=...)).
LISTENS_PER_CLIENT: Final = 16
#: Where row 13's other client comes from: another loopback address, so another client.
OTHER_CLIENT: Final = "127.0.0.2"
#: Seconds row 14 waits for the asking tool's answer; the demo's ask_timeout is 600 s.
ASK_WAIT: Final = 15.0


def _unit_uri(n: int) -> str:
    """A distinct URI of the demo's `wh40k://units/{faction}/{unit_id}`, URI_BYTES long."""
    prefix, digits = "wh40k://units/orks/", str(n)
    return prefix + "0" * (URI_BYTES - len(prefix) - len(digits)) + digits


@dataclass
class Subscribed:
    """What one subscribing client got."""

    taken: int = 0
    refused: int = 0
    failed: int = 0
    refusal: str = ""
    session_id: str = ""


def _subscribe_and_vanish(url: str, count: int, stop_at_refusal: bool) -> Subscribed:
    """Open a session, subscribe to `count` distinct URIs, then drop the connection unsaid."""
    out = Subscribed()
    session = Session(url)
    out.session_id = session.http.headers.get("Mcp-Session-Id", "")
    try:
        for k in range(count):
            message = {
                "jsonrpc": "2.0",
                "id": k + 1,
                "method": "resources/subscribe",
                "params": {"uri": _unit_uri(k)},
            }
            response = session.http.request("POST", json.dumps(message).encode())
            answer = json.loads(response.body) if response.status == 200 else {}
            if "result" in answer:
                out.taken += 1
            elif "error" in answer:
                out.refused += 1
                out.refusal = out.refusal or answer["error"]["message"]
                if stop_at_refusal:
                    break
            else:
                out.failed += 1
    finally:
        session.http.close()  # vanished: no DELETE
    return out


def _expired(url: str, session_id: str) -> bool:
    """Whether the server has ended the session, once it has had time to (404 for it then)."""
    time.sleep(SUBSCRIBE_IDLE * 2 + 0.5)
    probe = HttpConnection(url, {**HEADERS, "Mcp-Session-Id": session_id}, HTTP_TIMEOUT)
    probe.set_header("Mcp-Protocol-Version", "2025-06-18")
    try:
        return probe.request("POST", b'{"jsonrpc":"2.0","id":1,"method":"ping"}').status == 404
    finally:
        probe.close()


def subscription_flood(plan: Plan) -> list[Row]:
    sizes = plan.sizes
    count, clients, rounds = sizes.subscribes, sizes.subscribers, sizes.subscribe_rounds
    row = Row(
        "12",
        f"resources/subscribe of distinct {URI_BYTES // 1024} KiB URIs over Streamable HTTP: one "
        f"client asks for {_n(count)} in its session while {clients - 1} others ask for up to "
        f"{FILLER_SUBSCRIBES} each; then all vanish (no DELETE) and their sessions expire "
        f"({SUBSCRIBE_IDLE:.0f} s idle on this server, 30 minutes by default); {rounds} rounds",
        f"{rounds} x ({_n(count)} + {clients - 1} x up to {FILLER_SUBSCRIBES}) subscriptions",
        f"a session holds at most {SUBSCRIPTION_BYTES // MiB} MiB of subscribed URIs "
        "(max_subscription_bytes), the rest refused with -32000 naming that bound; peak RSS "
        f"grows < {BOUNDED:.0f} MiB in the first round and < {FLAT:.0f} MiB over the later ones "
        "(what vanished sessions held came back); a fresh client is served",
    )
    argv = [sys.executable, str(EXPIRING_SERVER), str(SUBSCRIBE_IDLE)]
    server = Server(Peer("probe server, expiring sessions", argv, "serving MCP on "))
    try:
        base = proc_stats(server.proc.pid)
        peaks: list[float] = []
        attacks: list[Subscribed] = []
        fillers = expired = 0
        jobs = [(count, False)] + [(FILLER_SUBSCRIBES, True)] * (clients - 1)
        for _ in range(rounds):
            with ThreadPoolExecutor(8) as pool:
                got = list(pool.map(lambda job: _subscribe_and_vanish(server.url, *job), jobs))
            peaks.append(proc_stats(server.proc.pid).peak)
            attacks.append(got[0])
            fillers += sum(other.taken for other in got[1:])
            expired += _expired(server.url, got[0].session_id)
        prompt, fresh = _fresh(server.url)
    finally:
        server.close()
    attack = attacks[0]
    capped = all(
        a.taken * URI_BYTES <= SUBSCRIPTION_BYTES
        and a.refused
        and "max_subscription_bytes" in a.refusal
        and not a.failed
        for a in attacks
    )
    row.measured = (
        f"the attacker, first round: {_n(attack.taken)} taken, {_n(attack.refused)} refused"
        + (f" ({attack.refusal})" if attack.refusal else "")
        + f"; the others took {_n(fillers)} in all; RSS {base.rss:.0f} MiB before, peak "
        + " -> ".join(f"{peak:.0f}" for peak in peaks)
        + f" MiB after each round; sessions expired: {expired} of {rounds}; a fresh client: "
        + fresh
    )
    row.passed = (
        capped
        and peaks[0] - base.peak < BOUNDED
        and peaks[-1] - peaks[0] < FLAT
        and expired == rounds
        and prompt
    )
    return [row]


def _modern_request(address: tuple[str, int], message: dict[str, Any], close: bool) -> bytes:
    """The bytes of a 2026-07-28 POST of `message`, with its standard headers."""
    body = json.dumps(message).encode()
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: {address[0]}:{address[1]}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"MCP-Protocol-Version: {MODERN}",
        f"Mcp-Method: {message['method']}",
    ]
    name = message["params"].get("name")
    if name:
        lines.append(f"Mcp-Name: {name}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + f"\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def _listen_request(address: tuple[str, int], request_id: int) -> bytes:
    params = {"_meta": MODERN_META, "notifications": {"toolsListChanged": True}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen"}
    return _modern_request(address, {**message, "params": params}, close=False)


def _modern_connect(address: tuple[str, int], source: str | None) -> socket.socket:
    if source is None:
        return connect(address)
    sock = socket.create_connection(address, timeout=HTTP_TIMEOUT, source_address=(source, 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _open_listen(
    address: tuple[str, int], request: bytes, source: str | None = None
) -> tuple[str, socket.socket | None]:
    """Open a listen stream: ("listening", its socket, left open) once acknowledged, or why not."""
    sock = _modern_connect(address, source)
    sock.sendall(request)
    data = b""
    while True:
        status = head_status(data)
        if status not in (None, 200):
            sock.close()
            return f"HTTP {status}", None
        if status == 200 and b"notifications/subscriptions/acknowledged" in data:
            return "listening", sock
        chunk = _recv(sock)
        if not chunk:
            sock.close()
            return "closed by the server" if chunk == b"" else "no acknowledgement", None
        data += chunk


def _recv(sock: socket.socket) -> bytes | None:
    """The next bytes (b"" at the end), or None when none came within the socket's timeout.

    No `select`: row 13 holds more than 1,024 descriptors, past what `select` can watch.
    """
    try:
        return sock.recv(1 << 16)
    except TimeoutError:
        return None
    except OSError:
        return b""


def _modern_call(address: tuple[str, int], request_id: int) -> str:
    """A 2026-07-28 tools/call from the other client: "served" or what came instead."""
    params = {
        "name": "calculator.add",
        "arguments": {"a": request_id, "b": 1},
        "_meta": MODERN_META,
    }
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    sock = _modern_connect(address, OTHER_CLIENT)
    data = b""
    try:
        sock.sendall(_modern_request(address, message, close=True))
        while chunk := _recv(sock):  # until the server closes (Connection: close)
            data += chunk
    finally:
        sock.close()
    status = head_status(data)
    if status != 200:
        return f"HTTP {status}"
    return "served" if b'"structuredContent":{"result":%d' % (request_id + 1) in data else "wrong"


def listen_flood(plan: Plan) -> list[Row]:
    count, calls = plan.sizes.listens, plan.sizes.listen_calls
    row = Row(
        "13",
        f"Idle 2026-07-28 subscriptions/listen streams over Streamable HTTP, all from one "
        f"unauthenticated client (127.0.0.1), kept open; meanwhile another client "
        f"({OTHER_CLIENT}) makes 2026-07-28 calls and opens a listen of its own",
        f"{_n(count)} listens, {_n(calls)} calls",
        f"the one client gets at most {LISTENS_PER_CLIENT} streams (max_listens_per_client), "
        "the rest 429 at once; every call of the other client served, and its listen "
        "acknowledged",
    )
    with http_server() as server:
        address = HttpConnection(server.url, HEADERS, HTTP_TIMEOUT).address
        requests = [_listen_request(address, k + 1) for k in range(count)]
        with ThreadPoolExecutor(32) as pool:
            opened = list(pool.map(lambda request: _open_listen(address, request), requests))
        held = [sock for _, sock in opened if sock is not None]
        try:
            outcomes = Counter(what for what, _ in opened)
            started = time.perf_counter()
            with ThreadPoolExecutor(8) as pool:
                served = Counter(pool.map(lambda k: _modern_call(address, k), range(calls)))
            seconds = time.perf_counter() - started
            own, sock = _open_listen(address, _listen_request(address, 0), OTHER_CLIENT)
            if sock is not None:
                sock.close()
        finally:
            for sock in held:
                sock.close()
    row.measured = (
        "the one client: "
        + ", ".join(f"{what}: {_n(n)}" for what, n in outcomes.most_common())
        + "; the other client's calls: "
        + ", ".join(f"{what}: {_n(n)}" for what, n in served.most_common())
        + f" in {seconds:.1f} s; its listen: {own}"
    )
    row.passed = (
        outcomes["listening"] <= LISTENS_PER_CLIENT
        and outcomes["listening"] + outcomes["HTTP 429"] == count
        and served["served"] == calls
        and own == "listening"
    )
    return [row]


def _answers_to(message: Any, request_id: Any) -> bool:
    return isinstance(message, dict) and "method" not in message and message.get("id") == request_id


def malformed_response(plan: Plan) -> list[Row]:
    row = Row(
        "14",
        "Responses carrying both result and error, over stdio: one with an id the server never "
        "used (777), one answering the server's elicitation/create (asked by wh40k.wager); "
        "then a ping",
        "2 responses, 1 ping",
        "neither response is answered (JSON-RPC: a response gets no response); the ping is; "
        f"the asking tool fails within {PROMPT:.0f} s instead of waiting out its ask_timeout "
        "(600 s)",
    )
    both = {"result": {"action": "accept", "content": {}}, "error": {"code": 1, "message": "m"}}
    with ProbePeer(DEMO_STDIO) as peer:
        capabilities: dict[str, Any] = {"elicitation": {}}
        client = {"name": "trio-mcp-reliability", "version": "0"}
        peer.request(
            0,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": client},
        )
        peer.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = {"name": "wh40k.wager", "arguments": {}}
        peer.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": "wager", "method": "tools/call", "params": call}
            ).encode()
            + b"\n"
        )
        question = peer.next_message(HTTP_TIMEOUT)
        while question is not None and question.get("method") != "elicitation/create":
            question = peer.next_message(HTTP_TIMEOUT)
        if question is None:
            row.measured = "the tool never asked"
            row.passed = None
            return [row]
        asked = question["id"]
        started = time.perf_counter()
        for answer in (
            {"jsonrpc": "2.0", "id": 777, **both},
            {"jsonrpc": "2.0", "id": asked, **both},
        ):
            peer.send(json.dumps(answer).encode() + b"\n")
        peer.send(b'{"jsonrpc":"2.0","id":"after","method":"ping"}\n')
        seen: list[Any] = []
        wager: Any = None
        waited = 0.0
        deadline = started + ASK_WAIT
        while wager is None and (left := deadline - time.perf_counter()) > 0:
            message = peer.next_message(left)
            if message is None:
                break
            seen.append(message)
            if _answers_to(message, "wager"):
                wager, waited = message, time.perf_counter() - started
    answered = [m for m in seen if _answers_to(m, 777) or _answers_to(m, asked)]
    ponged = any(_answers_to(m, "after") and "result" in m for m in seen)
    if wager is None:
        told = f"NOT answered within {ASK_WAIT:.0f} s (it waits out its ask_timeout, 600 s)"
    else:
        text = wager.get("result", {}).get("content", [{}])[0].get("text", json.dumps(wager))
        told = f"answered after {waited * 1000:,.0f} ms: {text[:140]}"
    row.measured = (
        "answers to the responses: "
        + (
            ", ".join(
                f"id {m['id']}: {m.get('error', {}).get('code', 'a result')}" for m in answered
            )
            or "none"
        )
        + f"; ping {'answered' if ponged else 'NOT answered'}; the asking tool {told}"
    )
    row.passed = not answered and ponged and wager is not None and waited < PROMPT
    return [row]


GROUPS: Final[list[tuple[str, tuple[str, ...], Callable[[Plan], list[Row]]]]] = [
    ("1", ("1",), fuzz_stdio),
    ("2", ("2",), garbage_stdio),
    ("3", ("3",), pipelined_stdio),
    ("4", ("4",), abandoned_sessions),
    ("5", ("5",), vanishing_clients),
    ("6", ("6a", "6b", "6c"), slow_clients),
    ("7", ("7",), overload),
    ("8", ("8a",), sigterm_stdio),
    ("8", ("8b",), eof_stdio),
    ("8", ("8c",), sigterm_http),
    ("8", ("8d",), sigterm_http_unread),
    ("9", ("9",), hostile_uri_stdio),
    ("10", ("10a", "10b"), big_uris),
    ("11", ("11",), traversal_stdio),
    ("12", ("12",), subscription_flood),
    ("13", ("13",), listen_flood),
    ("14", ("14",), malformed_response),
    ("15", ("15",), sigterm_tasks_stdio),
    ("16", ("16",), one_address_crowd),
    ("17", ("17",), batch_http),
]


def run_group(plan: Plan, keys: tuple[str, ...], fn: Callable[[Plan], list[Row]]) -> list[Row]:
    """A group's rows; when the probe itself fails, one ERROR row per key, with the reason."""
    try:
        return fn(plan)
    except Exception as exc:  # a broken row must not hide the others
        why = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:400]
        return [Row(key, fn.__name__, "-", "-", f"probe error: {why}", None) for key in keys]


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False, timeout=30
    )
    return done.stdout.strip() if done.returncode == 0 else "?"


def facts(sizes: Sizes, seed: int, seconds: float, started: str) -> list[str]:
    commit = _git("rev-parse", "--short=12", "HEAD")
    dirty = _git("status", "--porcelain", "--", "src", "demo_tools", "benchmarks")
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), cpu
            )
    except OSError:
        pass
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return [
        f"run: {sizes.mode}, seed {seed}, started {started}, took {seconds:.0f} s",
        f"machine: {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), {cpu}, "
        f"{platform.platform()}",
        f"Python {platform.python_implementation()} {platform.python_version()}; "
        f"trio-mcp commit {commit}"
        + (" with uncommitted changes" if dirty not in ("", "?") else "")
        + f"; open-file limit {nofile}",
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: Sequence[Row]) -> list[str]:
    lines = [
        "| # | Attack | Amount | Invariant | Measured | Result |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        "| "
        + " | ".join(
            _cell(cell)
            for cell in (row.key, row.attack, row.amount, row.invariant, row.measured, row.verdict)
        )
        + " |"
        for row in rows
    ]
    return lines


def page(rows: Sequence[Row], fact_lines: Sequence[str]) -> str:
    failed = [row.key for row in rows if row.passed is not True]
    return "\n".join(
        [
            "# Reliability probe",
            "",
            "Real trio-mcp server subprocesses attacked the way an attacker and a careless client "
            "would. This page is the output of `python benchmarks/reliability.py` (a full run, "
            "a few minutes on 2 cores; `--quick` takes about one and prints the table without "
            "writing it here). stdio rows attack the demo server (`python -m demo_tools`); HTTP "
            "rows the probe server (`benchmarks/servers/probe_server.py`: the demo tools plus "
            "`probe.sleep` and `probe.flood`, with a 2 s shutdown grace) over Streamable HTTP on "
            "127.0.0.1; rows 9-11 the URI probe server (`benchmarks/servers/uri_server.py`: "
            "resource templates an attacker aims at). Every invariant is checked from outside "
            "the server: its answers, and its `/proc` entry (RSS is the resident set now, peak "
            "its high-water mark, VmHWM). FAIL means the invariant did not hold on this commit; "
            "ERROR that the probe itself failed.",
            "Each defect found by the reliability issue, and the test that covers it, is listed "
            "in [defects.md](defects.md).",
            "",
            *(f"- {line}" for line in fact_lines),
            f"- rows not passing: {', '.join(failed) if failed else 'none'}",
            "",
            *table(rows),
            "",
            *(f"- Row {row.key}: {row.details}" for row in rows if row.details),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="about a minute, smaller counts")
    mode.add_argument("--smoke", action="store_true", help="seconds, tiny counts (the tests)")
    parser.add_argument("--rows", help="comma-separated groups to run, e.g. 1,4 (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help=f"write the page here (full run: {DOC})")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
    chosen = set(args.rows.split(",")) if args.rows else {number for number, _, _ in GROUPS}
    out = args.out or (DOC if sizes is FULL and not args.rows else None)
    plan = Plan(sizes, args.seed)

    # SIGTERM unwinds like Ctrl-C, so that every `with` block stops its server.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    wall = time.perf_counter()
    rows: list[Row] = []
    for number, keys, fn in GROUPS:
        if number not in chosen:
            continue
        group_started = time.perf_counter()
        rows += run_group(plan, keys, fn)
        seconds = time.perf_counter() - group_started
        print(f"row {', '.join(keys)}: {seconds:.1f} s", file=sys.stderr, flush=True)
    text = page(rows, facts(sizes, args.seed, time.perf_counter() - wall, started))
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        print(f"written to {out}", file=sys.stderr)
    return 0 if all(row.passed for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
