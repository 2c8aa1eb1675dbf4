"""Profile the trio-mcp Streamable HTTP server under an `http_bench.py` workload with py-spy.

    python benchmarks/profile_http.py [--workload sequential|concurrent] [--repeat N]
        [--top N] [--raw PATH]

py-spy (`pip install py-spy`) attaches to the server subprocess, which `http_bench.py`'s raw
driver keeps busy; the samples are folded as in `profile_server.py` (only those inside trio's
run loop count). py-spy pauses the server for each sample: at its 2,000 Hz default that cut
the rate fivefold on 2 cores, so this samples at 500 Hz (`--nonblocking` sampling lost most
stacks here). Beside the usual tables, "time spent for" splits the samples between trio-mcp,
Hypercorn, h11 and trio's scheduler (see `attribute`).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from http_bench import PEERS, Server, concurrent, sequential
from profile_server import RATE, fold

OWNERS: Final = (("trio_mcp/", "trio-mcp"), ("hypercorn/", "Hypercorn"), ("h11/", "h11"))


def attribute(raw: Path, top: int) -> str:
    """Who the samples' time is spent for, the functions most often on the stack, the tasks.

    Owner: the innermost frame of trio-mcp, Hypercorn or h11 on the stack (so trio's socket
    and lock calls count for whoever made them, pydantic's for trio-mcp); samples with none of
    them below trio's run loop are the scheduler's own.
    """
    owners: collections.Counter[str] = collections.Counter()
    functions: collections.Counter[str] = collections.Counter()
    tasks: collections.Counter[str] = collections.Counter()
    count = 0
    for line in raw.read_text().splitlines():
        stack, _, text = line.rpartition(" ")
        frames = stack.split(";")
        starts = [i for i, frame in enumerate(frames) if frame.startswith("unrolled_run ")]
        if not starts:
            continue
        samples = int(text)
        count += samples
        inner = frames[starts[0] + 1 :]
        owner = next(
            (name for frame in reversed(inner) for prefix, name in OWNERS if f"({prefix}" in frame),
            "trio (scheduler, task switches)",
        )
        owners[owner] += samples
        for function in {frame.rpartition(":")[0] + ")" for frame in inner}:
            functions[function] += samples
        tasks[inner[0].rpartition(" (")[0] if inner else "(scheduler)"] += samples
    if not count:
        return ""
    lines = ["time spent for:"]
    lines += [f"  {100 * n / count:5.1f}%  {name}" for name, n in owners.most_common()]
    lines += ["", "functions (total, all lines):"]
    lines += [f"  {100 * n / count:5.1f}%  {name}" for name, n in functions.most_common(top)]
    lines += ["", "trio tasks:"]
    lines += [f"  {100 * n / count:5.1f}%  {name}" for name, n in tasks.most_common(8)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--workload", choices=["sequential", "concurrent"], default="sequential")
    parser.add_argument("--repeat", type=int, default=3, help="workload runs while sampling")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--raw", type=Path, help="keep py-spy's folded stacks here")
    parser.add_argument("--rate", type=int, default=RATE // 4, help="samples per second")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("py-spy is not installed: pip install py-spy", file=sys.stderr)
        return 2
    raw = args.raw or Path(tempfile.mkdtemp()) / "stacks.txt"
    server = Server(PEERS[0])
    try:
        pid = str(server.proc.pid)
        sampler = subprocess.Popen(
            [spy, "record", "-r", str(args.rate), "-f", "raw", "-o", str(raw), "--pid", pid],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)  # py-spy attaches
        rates = []
        for _ in range(args.repeat):
            if args.workload == "sequential":
                rates.append(sequential(server, 2000)["seq_calls_per_s"])
            else:
                rates.append(concurrent(server, 20, 100)["conc_calls_per_s"])
        sampler.send_signal(signal.SIGINT)
        _, err = sampler.communicate(timeout=60)
    finally:
        server.close()
    if not raw.exists():
        print(f"py-spy wrote nothing:\n{err.decode(errors='replace')}", file=sys.stderr)
        return 1
    print(
        f"trio-mcp HTTP, {args.workload}: "
        f"{', '.join(f'{r:,.0f}' for r in rates)} calls/s while sampled at {args.rate} Hz"
    )
    print(fold(raw, args.top))
    print()
    print(attribute(raw, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
