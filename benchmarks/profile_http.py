"""Profile the trio-mcp Streamable HTTP server under an `http_bench.py` workload with py-spy.

    python benchmarks/profile_http.py [--workload sequential|concurrent] [--repeat N]
        [--top N] [--raw PATH]

py-spy (`pip install py-spy`) attaches to the server subprocess, which `http_bench.py`'s raw
driver keeps busy; the samples are folded as in `profile_server.py` (only those inside trio's
run loop count). py-spy pauses the server for each sample: at its 2,000 Hz default that cut
the rate fivefold on 2 cores, so this samples at 500 Hz (`--nonblocking` sampling lost most
stacks here). The "files" table groups the samples by the
source file of their innermost frame, which separates our code from Hypercorn's, h11's and
trio's; the "tasks" table by the trio task they ran in.
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

from http_bench import PEERS, Server, concurrent, sequential
from profile_server import RATE, fold


def by_file_and_task(raw: Path, top: int) -> str:
    """Samples by the file of their innermost frame, and by the task they ran in."""
    own: collections.Counter[str] = collections.Counter()
    tasks: collections.Counter[str] = collections.Counter()
    count = 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        frames = stack.split(";")
        starts = [i for i, frame in enumerate(frames) if frame.startswith("unrolled_run ")]
        if not starts:
            continue
        count += int(samples)
        where = frames[-1].rpartition("(")[2].rstrip(")").split(":")[0]
        own[_package(where)] += int(samples)
        root = starts[0] + 1
        task = frames[root].rpartition(" (")[0] if root < len(frames) else "(scheduler)"
        tasks[task] += int(samples)
    if not count:
        return ""
    lines = ["files (self):"]
    lines += [f"  {100 * n / count:5.1f}%  {name}" for name, n in own.most_common(top)]
    lines += ["", "tasks (the scheduler's own work is under unrolled_run):"]
    lines += [f"  {100 * n / count:5.1f}%  {name}" for name, n in tasks.most_common(top)]
    return "\n".join(lines)


def _package(path: str) -> str:
    parts = Path(path).parts
    for anchor in ("site-packages", "src", "lib"):
        if anchor in parts:
            rest = parts[parts.index(anchor) + 1 :]
            if rest and rest[0].startswith("python"):
                rest = rest[1:]
            return "/".join(rest[:2]) if len(rest) > 1 else "/".join(rest)
    return path


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
    print(by_file_and_task(raw, 12))
    return 0


if __name__ == "__main__":
    sys.exit(main())
