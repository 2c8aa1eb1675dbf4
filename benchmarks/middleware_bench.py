"""What the built-in logging and timing middleware cost: one server without and with them.

    python benchmarks/middleware_bench.py [--quick] [--rounds N] [--json PATH]

Servers: `benchmarks/servers/trio_mcp_middleware.py` (a fresh subprocess per variant per
round, the variants interleaved round after round so that machine noise hits all alike),
serving `calculator.add` (inline) and `calculator.add_async` with: "none"; "noop" (one
middleware that only calls on, and may wait as far as the server knows, as any middleware
that does not say otherwise: the server then answers every request in a task of its own
instead of on the connection's reader); "timing" (`Timing()`); "logging+timing"
(`RequestLogging()` writing a timestamped line per request to a file, the null device here,
then `Timing()`). The built-ins say they never wait (`Middleware.inline = True`): requests
that need no waiting stay on the reader with them.

Workloads, each the same for every variant:
1. stdio, pipelined: `run.py`'s raw NDJSON driver keeps 256 calls of the inline tool in
   flight (every answer checked after the clock stops): calls/s. These are answered on the
   connection's reader, but with "noop", where each runs in a task.
2. The same with the async tool, whose calls run in a task of their own in every variant:
   what the middleware themselves cost.
3. Streamable HTTP, one session making its calls (inline tool) one at a time (`http_bench`'s
   raw HTTP/1.1 driver, 2025-06-18 sessions): calls/s.
4. Streamable HTTP, 10 sessions on threads, each making its calls one at a time: calls/s.
5. In process: the dispatcher alone answering inline calls (no transport, no event loop),
   the best of 30 batches: microseconds per call, the steadiest of the five on a busy machine
   (its ratio is the baseline's time over the variant's, so that lower is slower here too).
   Every variant's chain is driven on the spot here, "noop"'s too: what the chain itself
   costs, without the task a middleware that may wait puts each request in.

Reported: the median calls/s of each variant [min-max over rounds] and its ratio to "none"
(1.00: the middleware costs nothing; 0.80: a fifth fewer calls per second). No assertion on
speed: `tests/test_benchmarks_quick.py` only checks that a `--quick` run completes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from driver import StdioPeer, add_frames, check_add
from http_bench import Peer, Server, Session, _cell, _check_add, _timed, in_threads, measured

HERE: Final = Path(__file__).resolve().parent
SCRIPT: Final = str(HERE / "servers" / "trio_mcp_middleware.py")
VARIANTS: Final = ("none", "noop", "timing", "logging+timing")
BASELINE: Final = "none"
WINDOW: Final = 256  # calls in flight on stdio, as run.py's pipelined workload
SESSIONS: Final = 10
KEYS: Final = (
    ("stdio_calls_per_s", "1. stdio, 256 pipelined, inline tool: calls/s"),
    ("stdio_async_calls_per_s", "2. stdio, 256 pipelined, async tool: calls/s"),
    ("seq_calls_per_s", "3. HTTP, one session: calls/s"),
    ("conc_calls_per_s", f"4. HTTP, {SESSIONS} sessions: calls/s"),
    ("inproc_us_per_call", "5. in process: us per call"),
)
WARMUP_ID, PIPE_ID, ASYNC_ID = 1_000_000, 3_000_000, 5_000_000


def argv(variant: str, transport: str) -> list[str]:
    return [sys.executable, SCRIPT, "--middleware", variant, "--transport", transport]


def stdio(variant: str, calls: int) -> dict[str, float]:
    with StdioPeer(argv(variant, "stdio")) as peer:
        peer.initialize()
        warm = peer.pipelined(add_frames(200, first_id=WARMUP_ID), WINDOW)
        check_add(warm.lines, range(WARMUP_ID, WARMUP_ID + 200))
        run = peer.pipelined(add_frames(calls, first_id=PIPE_ID), WINDOW)
        check_add(run.lines, range(PIPE_ID, PIPE_ID + calls))
        frames = add_frames(calls, tool="calculator.add_async", first_id=ASYNC_ID)
        other = peer.pipelined(frames, WINDOW)
        check_add(other.lines, range(ASYNC_ID, ASYNC_ID + calls))
    return {
        "stdio_calls_per_s": calls / run.wall,
        "stdio_cpu_srv": run.server_cpu_share,
        "stdio_async_calls_per_s": calls / other.wall,
        "stdio_async_cpu_srv": other.server_cpu_share,
    }


def inprocess(variant: str) -> dict[str, float]:
    done = subprocess.run(argv(variant, "inprocess"), capture_output=True, text=True, check=True)
    return {"inproc_us_per_call": json.loads(done.stdout)["us_per_call"]}


def http(server: Server, calls: int, per_session: int) -> dict[str, float]:
    out: dict[str, float] = {}
    one = Session(server.url)
    try:
        one.calls(range(1, 6))  # warm-up
        got: list[Any] = []
        wall, _, srv = _timed(server, lambda: got.extend(one.calls(range(1, calls + 1))))
    finally:
        one.close()
    for i, response in enumerate(got, start=1):
        _check_add(response, i)
    out["seq_calls_per_s"] = calls / wall
    if srv is not None:
        out["seq_cpu_srv"] = srv
    opened = [Session(server.url) for _ in range(SESSIONS)]
    try:
        for session in opened:
            session.calls(range(1, 3))
        results, wall, _, srv = in_threads(
            server, SESSIONS, lambda k: opened[k].calls(range(1, per_session + 1))
        )
    finally:
        for session in opened:
            session.close()
    for responses in results:
        for i, response in enumerate(responses, start=1):
            _check_add(response, i)
    out["conc_calls_per_s"] = SESSIONS * per_session / wall
    if srv is not None:
        out["conc_cpu_srv"] = srv
    return out


def _median(rounds: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def _ratio(rounds: dict[str, list[dict[str, float]]], name: str, key: str) -> float:
    """The variant's speed over the baseline's (a time per call: the baseline's over its)."""
    ratio = _median(rounds[name], key) / _median(rounds[BASELINE], key)
    return 1 / ratio if key.endswith("us_per_call") else ratio


def table(rounds: dict[str, list[dict[str, float]]]) -> str:
    head = f"| workload | {' | '.join(VARIANTS)} |"
    lines = [head, "|" + "---|" * (len(VARIANTS) + 1)]
    for key, label in KEYS:
        fmt = "{:.1f}" if key.endswith("us_per_call") else "{:.0f}"
        cells = [_cell([r[key] for r in rounds[name]], fmt) for name in VARIANTS]
        lines.append(f"| {label} | {' | '.join(cells)} |")
        ratios = [f"{_ratio(rounds, name, key):.2f}" for name in VARIANTS]
        lines.append(f"| {label.split(':')[0]}: ratio to {BASELINE} | {' | '.join(ratios)} |")
    return "\n".join(lines)


def main(argv_: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1 round, small counts")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "middleware.json")
    args = parser.parse_args(argv_)
    rounds_n = 1 if args.quick else args.rounds
    pipelined = 500 if args.quick else 20_000
    calls = 40 if args.quick else 2_000
    per_session = 5 if args.quick else 300
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for r in range(rounds_n):
        for variant in VARIANTS:
            values = stdio(variant, pipelined)
            values.update(inprocess(variant))
            peer = Peer(variant, argv(variant, "http"), "serving MCP on ")
            values.update(measured(peer, lambda server: http(server, calls, per_session)))
            rounds[variant].append(values)
            print(
                f"round {r + 1}/{rounds_n} {variant}: "
                + ", ".join(f"{values[key]:.0f} {key}" for key, _ in KEYS),
                file=sys.stderr,
                flush=True,
            )
    elapsed = time.perf_counter() - started
    print(
        f"Built-in middleware cost, {stamp} ({rounds_n} round(s), {elapsed:.0f} s, "
        f"{os.cpu_count()} cores, CPython {platform.python_version()})"
    )
    print(
        f"stdio: {pipelined} calls, {WINDOW} in flight; HTTP: {calls} calls on one session, "
        f"{SESSIONS} sessions x {per_session} calls on threads"
    )
    print("cells: median [min-max] over rounds; ratios divide the medians (speed over speed)")
    print()
    print(table(rounds))
    report: dict[str, Any] = {
        "timestamp": stamp,
        "quick": args.quick,
        "rounds": rounds_n,
        "pipelined": pipelined,
        "calls": calls,
        "sessions": SESSIONS,
        "per_session": per_session,
        "results": rounds,
        "ratios": {name: {key: _ratio(rounds, name, key) for key, _ in KEYS} for name in VARIANTS},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
