"""What the event store costs a Streamable HTTP stream: the same server with it and without it.

    python benchmarks/sse_bench.py [--quick] [--rounds N] [--events N] [--json PATH]

Servers: `benchmarks/servers/trio_mcp_sse.py` (fresh subprocesses on free loopback ports, one
per variant per round, interleaved A B A B): "store" with the default `MemoryEventStore`, where
every event of a 2025-11-25 session's stream is numbered and kept before it is sent and each
stream starts with a priming event; "no store" with `HttpOptions(event_store=None)`, whose
streams carry no ids. The tool `events(n)` sends `n` progress notifications and then its
answer: one SSE stream of `n + 1` events per call (`n + 2` with the priming event).

The driver is `http_bench`'s (raw HTTP/1.1 over blocking keep-alive sockets, sessions under
2025-11-25). Every response is parsed and checked after the clock stops: the progress
notifications in order, then the answer, and ids on every event exactly when there is a store.

Workloads: 1. sequential: one session, calls one at a time; 2. concurrent: 10 sessions on
threads. Reported: calls/s and events/s, and "store/no store", the ratio of the medians (1.0:
the store costs nothing; the issue's bar is that it must not halve throughput, 0.5).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from http_bench import (
    BenchError,
    Peer,
    Server,
    Session,
    _cell,
    _messages,
    _timed,
    in_threads,
    measured,
)
from rawhttp import RawResponse

HERE: Final = Path(__file__).resolve().parent
VERSION: Final = "2025-11-25"
SCRIPT: Final = str(HERE / "servers" / "trio_mcp_sse.py")
PEERS: Final = [
    Peer("store", [sys.executable, SCRIPT], "serving MCP on "),
    Peer("no store", [sys.executable, SCRIPT, "--no-store"], "serving MCP on "),
]


def _body(i: int, events: int) -> bytes:
    params = {"name": "events", "arguments": {"n": events}, "_meta": {"progressToken": i}}
    message = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
    return json.dumps(message, separators=(",", ":")).encode()


def _check(response: RawResponse, i: int, events: int, *, ids: bool) -> None:
    if response.status != 200:
        raise BenchError(f"id {i}: HTTP {response.status}: {response.text[:300]}")
    messages = _messages(response)
    progress = [m["params"]["progress"] for m in messages[:-1]]
    if progress != list(range(1, events + 1)) or messages[-1].get("id") != i:
        raise BenchError(f"id {i}: wrong stream {response.text[:300]!r}")
    if messages[-1]["result"]["structuredContent"] != {"result": events}:
        raise BenchError(f"id {i}: wrong answer {messages[-1]!r:.300}")
    has_ids = "\nid: " in response.text or response.text.startswith("id: ")
    if has_ids != ids:
        raise BenchError(f"id {i}: event ids {'missing' if ids else 'unexpected'}")


def _calls(session: Session, ids: range, events: int) -> list[RawResponse]:
    requests = [session.http.prepare("POST", _body(i, events)) for i in ids]
    return [session.http.send_prepared(request) for request in requests]


def measure(server: Server, calls: int, sessions: int, events: int) -> dict[str, float]:
    ids = server.peer.name == "store"
    out: dict[str, float] = {}
    one = Session(server.url, VERSION)
    try:
        _calls(one, range(1, 4), events)  # warm-up
        got: list[RawResponse] = []
        wall, _, srv = _timed(server, lambda: got.extend(_calls(one, range(1, calls + 1), events)))
    finally:
        one.close()
    for i, response in enumerate(got, start=1):
        _check(response, i, events, ids=ids)
    out["seq_calls_per_s"] = calls / wall
    out["seq_events_per_s"] = calls * (events + 1) / wall
    if srv is not None:
        out["seq_cpu_srv"] = srv

    opened = [Session(server.url, VERSION) for _ in range(sessions)]
    per = max(1, calls // sessions)
    try:
        results, wall, _, srv = in_threads(
            server, sessions, lambda k: _calls(opened[k], range(1, per + 1), events)
        )
    finally:
        for session in opened:
            session.close()
    for responses in results:
        for i, response in enumerate(responses, start=1):
            _check(response, i, events, ids=ids)
    out["conc_calls_per_s"] = sessions * per / wall
    out["conc_events_per_s"] = sessions * per * (events + 1) / wall
    if srv is not None:
        out["conc_cpu_srv"] = srv
    return out


ROWS: Final = [
    ("seq_calls_per_s", "1. sequential: calls/s"),
    ("seq_events_per_s", "1. sequential: events/s"),
    ("conc_calls_per_s", "2. concurrent: calls/s"),
    ("conc_events_per_s", "2. concurrent: events/s"),
]


def table(rounds: dict[str, list[dict[str, float]]]) -> str:
    head = f"| workload | {' | '.join(p.name for p in PEERS)} | store/no store |"
    lines = [head, "|" + "---|" * (len(PEERS) + 2)]
    for key, label in ROWS:
        cells = [_cell([r[key] for r in rounds[p.name]], "{:.0f}") for p in PEERS]
        ratio = statistics.median(r[key] for r in rounds["store"]) / statistics.median(
            r[key] for r in rounds["no store"]
        )
        lines.append(f"| {label} | {' | '.join(cells)} | {ratio:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--events", type=int, default=20, help="progress events per call")
    parser.add_argument("--quick", action="store_true", help="1 round, small counts")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "sse.json")
    args = parser.parse_args(argv)
    rounds_n = 1 if args.quick else args.rounds
    calls = 40 if args.quick else 400
    sessions = 10
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    rounds: dict[str, list[dict[str, float]]] = {p.name: [] for p in PEERS}
    for r in range(rounds_n):
        for peer in PEERS:
            values = measured(peer, lambda s: measure(s, calls, sessions, args.events))
            rounds[peer.name].append(values)
            print(
                f"round {r + 1}/{rounds_n} {peer.name}: {values['seq_events_per_s']:.0f} "
                f"seq events/s, {values['conc_events_per_s']:.0f} concurrent events/s",
                file=sys.stderr,
                flush=True,
            )
    elapsed = time.perf_counter() - started
    print(
        f"Event store cost on Streamable HTTP streams, {stamp} ({rounds_n} round(s), "
        f"{elapsed:.0f} s, {os.cpu_count()} cores, CPython {platform.python_version()})"
    )
    print(
        f"workloads: {calls} calls of {args.events} progress events + the answer; "
        f"1. one session; 2. {sessions} sessions on threads"
    )
    print("cells: median [min-max] over rounds; the ratio divides the medians")
    print()
    print(table(rounds))
    report: dict[str, Any] = {
        "timestamp": stamp,
        "rounds": rounds_n,
        "events_per_call": args.events,
        "calls": calls,
        "sessions": sessions,
        "results": rounds,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
