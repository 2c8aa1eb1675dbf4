"""Profile the trio-mcp stdio server under a benchmark workload with py-spy.

    python benchmarks/profile_server.py [--variant inline|thread|async] [--workload pipelined|
        sequential] [--repeat N] [--top N] [--raw PATH]

py-spy (`pip install py-spy`) attaches to the running server, which the benchmark driver keeps
busy exactly as `run.py` does; the samples are folded into the functions with the most time of
their own ("self") and the frames most often on the stack ("total"). Only samples taken inside
trio's run loop count, so start-up and imports stay out of the picture.
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

from driver import StdioPeer, add_frames, check_add
from run import ENV, _script

RATE = 2000  # samples per second


def fold(raw: Path, top: int) -> str:
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    count = 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        frames = stack.split(";")
        if not any(frame.startswith("unrolled_run ") for frame in frames):
            continue
        count += int(samples)
        own[frames[-1]] += int(samples)
        for frame in set(frames):
            total[frame] += int(samples)
    if not count:
        return "no samples inside the run loop"
    lines = [f"{count} samples in the run loop", "", "self:"]
    lines += [f"  {100 * n / count:5.1f}%  {frame}" for frame, n in own.most_common(top)]
    lines += ["", "total:"]
    lines += [f"  {100 * n / count:5.1f}%  {frame}" for frame, n in total.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=["inline", "thread", "async"], default="inline")
    parser.add_argument("--workload", choices=["pipelined", "sequential"], default="pipelined")
    parser.add_argument("--repeat", type=int, default=5, help="workload runs while sampling")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--raw", type=Path, help="keep py-spy's folded stacks here")
    args = parser.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy is not installed: pip install py-spy", file=sys.stderr)
        return 2
    tool = "calculator.add_async" if args.variant == "async" else "calculator.add"
    argv = _script("trio_mcp_server.py", *(["--inline"] if args.variant == "inline" else []))
    raw = args.raw or Path(tempfile.mkdtemp()) / "stacks.txt"
    calls = 20_000 if args.workload == "pipelined" else 5_000
    with StdioPeer(argv, env=ENV) as peer:
        peer.initialize()
        sampler = subprocess.Popen(
            [
                spy,
                "record",
                "-r",
                str(RATE),
                "-f",
                "raw",
                "-o",
                str(raw),
                "--pid",
                f"{peer.proc.pid}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)  # py-spy attaches
        rates = []
        for run in range(args.repeat):
            first = (run + 1) * 1_000_000
            frames = add_frames(calls, tool=tool, first_id=first)
            measured = (
                peer.pipelined(frames, 256)
                if args.workload == "pipelined"
                else peer.sequential(frames)
            )
            check_add(measured.lines, range(first, first + calls))
            rates.append(calls / measured.wall)
        sampler.send_signal(signal.SIGINT)
        _, err = sampler.communicate(timeout=60)
    if not raw.exists():
        print(f"py-spy wrote nothing:\n{err.decode(errors='replace')}", file=sys.stderr)
        return 1
    print(
        f"trio-mcp {args.variant}, {args.workload}: "
        f"{', '.join(f'{r:,.0f}' for r in rates)} calls/s while sampled at {RATE} Hz"
    )
    print(fold(raw, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
