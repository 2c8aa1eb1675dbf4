"""What checking OAuth tokens costs: a trio-mcp HTTP server without auth and with each verifier.

    python benchmarks/auth_bench.py [--quick] [--rounds N] [--json PATH]

Servers: `benchmarks/servers/trio_mcp_auth.py` (fresh subprocesses on free loopback ports, one
per variant per round, interleaved so that machine noise hits all alike), serving the inline
`calculator.add`: "no auth"; "static" (`StaticTokenVerifier`: a constant-time comparison);
"JWT RS256" and "JWT ES256" (`JwtVerifier`: a signature check and the claims' checks on every
request, the key set fetched once); "introspection" (`IntrospectionVerifier`, cached: the
first request of a token asks the authorization server, the others hit the cache). Every
request carries the token; the server's time is what the verifier adds to a call.

1. Server: the `http_bench` driver (raw HTTP/1.1 over blocking keep-alive sockets, sessions
   under 2025-06-18; every answer checked after the clock stops) in two workloads: one session
   making its calls one at a time, and 10 sessions on threads. Reported: calls/s per variant
   and each variant's ratio to "no auth" (1.0: the check costs nothing).
2. Client: the same calls through `open_client` against the "JWT RS256" server, one call at a
   time, its token sent as a static `Authorization` header (`headers=`) or by `OAuth`
   (`client_credentials`, the token already obtained during warm-up): what the client's auth
   layer adds per request. Reported: calls/s and "OAuth/static".

No assertion on speed: the numbers are for people; `tests/test_benchmarks_quick.py` only
checks that a `--quick` run completes and reports every variant.
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

import trio

from http_bench import (
    BenchError,
    Peer,
    Server,
    Session,
    _cell,
    _check_add,
    _timed,
    in_threads,
    measured,
)
from trio_mcp import MemoryTokenStorage, OAuth, open_client

HERE: Final = Path(__file__).resolve().parent
SCRIPT: Final = str(HERE / "servers" / "trio_mcp_auth.py")
MARKER: Final = "serving MCP on "
PEERS: Final = [
    Peer(name, [sys.executable, SCRIPT, "--auth", mode], MARKER)
    for name, mode in (
        ("no auth", "none"),
        ("static", "static"),
        ("JWT RS256", "jwt-rs256"),
        ("JWT ES256", "jwt-es256"),
        ("introspection", "introspection"),
    )
]
BASELINE: Final = "no auth"
CLIENT_SERVER: Final = PEERS[2]  # JWT RS256
SESSIONS: Final = 10


def _said(server: Server, prefix: str) -> str | None:
    """What the server printed after `prefix` on stderr before its URL (trio_mcp_auth.py)."""
    for line in server._tail:
        if line.startswith(prefix):
            return line[len(prefix) :]
    return None


def measure(server: Server, calls: int, per_session: int) -> dict[str, float]:
    token = _said(server, "bench token: ")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    out: dict[str, float] = {}
    one = Session(server.url, headers=headers)
    try:
        one.calls(range(1, 6))  # warm-up: the key set fetched, the token introspected
        got: list[Any] = []
        wall, _, srv = _timed(server, lambda: got.extend(one.calls(range(1, calls + 1))))
    finally:
        one.close()
    for i, response in enumerate(got, start=1):
        _check_add(response, i)
    out["seq_calls_per_s"] = calls / wall
    if srv is not None:
        out["seq_cpu_srv"] = srv
    opened = [Session(server.url, headers=headers) for _ in range(SESSIONS)]
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


async def _client_rate(url: str, calls: int, **connect: Any) -> float:
    async with open_client(url, **connect) as client:
        for i in range(5):  # warm-up: with OAuth, discovery and the token grant happen here
            await client.call_tool("calculator.add", {"a": i, "b": 0.5})
        started = time.perf_counter()
        results = [
            await client.call_tool("calculator.add", {"a": i, "b": 0.5}) for i in range(calls)
        ]
        wall = time.perf_counter() - started
    for i, result in enumerate(results):
        if result.is_error or result.structured != {"result": i + 0.5}:
            raise BenchError(f"client call {i}: wrong result {result!r:.300}")
    return calls / wall


def measure_client(server: Server, calls: int) -> dict[str, float]:
    token = _said(server, "bench token: ")
    client = _said(server, "bench client: ")
    if token is None or client is None:
        raise server.error("no token or client on stderr")
    client_id, secret, _issuer = client.split()
    auth = OAuth(
        grant="client_credentials",
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_post",
        storage=MemoryTokenStorage(),
    )
    static = trio.run(
        lambda: _client_rate(server.url, calls, headers={"Authorization": f"Bearer {token}"})
    )
    oauth = trio.run(lambda: _client_rate(server.url, calls, auth=auth))
    return {"static_calls_per_s": static, "oauth_calls_per_s": oauth}


def _median(rounds: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def table(rounds: dict[str, list[dict[str, float]]]) -> str:
    names = [p.name for p in PEERS]
    head = f"| workload | {' | '.join(names)} |"
    lines = [head, "|" + "---|" * (len(names) + 1)]
    for key, label in (
        ("seq_calls_per_s", "1. one session: calls/s"),
        ("conc_calls_per_s", f"2. {SESSIONS} sessions: calls/s"),
    ):
        cells = [_cell([r[key] for r in rounds[name]], "{:.0f}") for name in names]
        lines.append(f"| {label} | {' | '.join(cells)} |")
        base = _median(rounds[BASELINE], key)
        ratios = [f"{_median(rounds[name], key) / base:.2f}" for name in names]
        lines.append(f"| {label.split(':')[0]}: ratio to {BASELINE} | {' | '.join(ratios)} |")
    return "\n".join(lines)


def client_table(rounds: list[dict[str, float]]) -> str:
    static = [r["static_calls_per_s"] for r in rounds]
    oauth = [r["oauth_calls_per_s"] for r in rounds]
    ratio = statistics.median(oauth) / statistics.median(static)
    return "\n".join(
        [
            "| client, one call at a time | static header | OAuth | OAuth/static |",
            "|---|---|---|---|",
            f"| calls/s | {_cell(static, '{:.0f}')} | {_cell(oauth, '{:.0f}')} | {ratio:.2f} |",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 round, small counts")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "auth.json")
    args = parser.parse_args(argv)
    rounds_n = 1 if args.quick else args.rounds
    calls = 40 if args.quick else 1000
    per_session = 5 if args.quick else 200
    client_calls = 20 if args.quick else 500
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    rounds: dict[str, list[dict[str, float]]] = {p.name: [] for p in PEERS}
    client_rounds: list[dict[str, float]] = []
    for r in range(rounds_n):
        for peer in PEERS:

            def both(server: Server, peer: Peer = peer) -> dict[str, float]:
                values = measure(server, calls, per_session)
                if peer is CLIENT_SERVER:
                    client_rounds.append(measure_client(server, client_calls))
                return values

            values = measured(peer, both)
            rounds[peer.name].append(values)
            print(
                f"round {r + 1}/{rounds_n} {peer.name}: {values['seq_calls_per_s']:.0f} seq "
                f"calls/s, {values['conc_calls_per_s']:.0f} concurrent calls/s",
                file=sys.stderr,
                flush=True,
            )
    elapsed = time.perf_counter() - started
    print(
        f"Token verification cost on Streamable HTTP, {stamp} ({rounds_n} round(s), "
        f"{elapsed:.0f} s, {os.cpu_count()} cores, CPython {platform.python_version()})"
    )
    print(
        f"server: {calls} calls on one session; {SESSIONS} sessions x {per_session} calls on "
        f"threads; client: {client_calls} calls through open_client"
    )
    print("cells: median [min-max] over rounds; ratios divide the medians")
    print()
    print(table(rounds))
    print()
    print(client_table(client_rounds))
    report: dict[str, Any] = {
        "timestamp": stamp,
        "quick": args.quick,
        "rounds": rounds_n,
        "calls": calls,
        "sessions": SESSIONS,
        "per_session": per_session,
        "client_calls": client_calls,
        "results": rounds,
        "client": client_rounds,
        "ratios": {
            name: {
                key: _median(rounds[name], key) / _median(rounds[BASELINE], key)
                for key in ("seq_calls_per_s", "conc_calls_per_s")
            }
            for name in rounds
        },
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
