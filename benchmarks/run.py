"""trio-mcp beside the official MCP SDK and a bare Python stdio loop, in one run.

    python benchmarks/run.py [--quick] [--rounds N] [--json PATH] [--png PATH] [--peers LIST]

Installs nothing. Peers that are not importable (the official `mcp` package, from the `bench`
extra; the standalone `fastmcp`) are reported and skipped. Every workload runs each subject in
turn, round after round (A B C A B C ...), and reports the median and the min-max over rounds.
Speed is reported as ratios measured in this run: absolute numbers depend on the machine.

Workloads: 1 cold start and import time, 2 sequential calls, 3 pipelined calls (and pipelined
`resources/read` of a template and `prompts/get`, beside the SDK's same), 4 concurrent
100 ms calls, 5 in-process dispatch, 6 registration of generated tools, 7 peak RSS. The stdio
client is `driver.py` (raw NDJSON, no SDK); the CPU shares of the server and of the driver are
printed beside each stdio measurement, to show which of the two was the limit.

Every server process, and every in-process measurement, runs in a fresh interpreter; the
in-process ones (`inproc.py`) print one JSON line that this script collects.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from driver import (
    BenchError,
    StdioPeer,
    add_frames,
    check_add,
    check_prompt,
    check_read,
    check_sleep,
    prompt_frames,
    read_frames,
    sleep_frames,
)

HERE: Final = Path(__file__).resolve().parent
SERVERS: Final = HERE / "servers"
PY: Final = sys.executable

# Every Python the benchmark starts keeps its bytecode cache here, so that import and cold start
# times are those of an installed package (compiled once), whatever PYTHONDONTWRITEBYTECODE says
# and however recently someone edited a source file. Filled by `warm_up` before round 1.
PYCACHE: Final = HERE / "results" / "pycache"
ENV: Final = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPYCACHEPREFIX": str(PYCACHE),
}

# Import statements timed in workload 1.
IMPORTS: Final = ("import trio_mcp", "from trio_mcp import Server, run", "import trio")

# Ids of the warm-up calls, sequential calls and pipelined calls never overlap, so a late or
# duplicated answer from one phase cannot pass for an answer of the next.
WARMUP_ID, SEQ_ID, PIPE_ID, SLEEP_ID = 1_000_000, 2_000_000, 3_000_000, 4_000_000
READ_ID, PROMPT_ID = 5_000_000, 6_000_000
#: Workloads of pipelined resource reads and prompt gets: (workload, method) of each.
PRIMITIVES: Final = (("read", "resources/read"), ("prompt", "prompts/get"))


@dataclass(frozen=True)
class Sizes:
    warmup: int
    sequential: int
    pipelined: int
    window: int
    concurrent: int
    inproc_trio: int
    inproc_sdk: int
    tools: int
    codec: int
    primitives: int  # pipelined resources/read and prompts/get, each


FULL: Final = Sizes(200, 2_000, 20_000, 256, 1_000, 20_000, 5_000, 1_000, 100_000, 5_000)
QUICK: Final = Sizes(50, 200, 2_000, 256, 200, 2_000, 500, 100, 10_000, 500)


@dataclass(frozen=True)
class Variant:
    """One stdio server process kind and the add tool called on it."""

    label: str
    process: str  # key for cold start and RSS: "trio-mcp", "SDK", "FastMCP", "baseline"
    argv: tuple[str, ...]
    tool: str = "calculator.add"


def _script(name: str, *args: str) -> tuple[str, ...]:
    return (PY, str(SERVERS / name), *args)


# -- environment ---------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def detect_peers() -> dict[str, dict[str, Any]]:
    """Which optional peers are importable; located without importing them."""
    peers: dict[str, dict[str, Any]] = {}
    spec = importlib.util.find_spec("mcp")
    if spec is None or not spec.submodule_search_locations:
        peers["SDK"] = {"available": False, "why": "the `mcp` package is not installed"}
    else:
        root = Path(next(iter(spec.submodule_search_locations)))
        if (root / "server" / "mcpserver").is_dir():
            server = "mcp.server.mcpserver.MCPServer"
        elif (root / "server" / "fastmcp").is_dir():
            server = "mcp.server.fastmcp.FastMCP"
        else:
            server = ""
        peers["SDK"] = (
            {"available": True, "version": _version("mcp"), "server": server}
            if server
            else {"available": False, "why": f"mcp {_version('mcp')} has no high-level server"}
        )
    peers["FastMCP"] = (
        {"available": True, "version": _version("fastmcp"), "server": "fastmcp.FastMCP"}
        if importlib.util.find_spec("fastmcp") is not None
        else {"available": False, "why": "the `fastmcp` package is not installed"}
    )
    return peers


def source_state() -> dict[str, Any]:
    """The commit measured, and whether src/ had uncommitted changes then."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(HERE), *args],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--", str(HERE.parent / "src"))
    return {
        "commit": git("rev-parse", "HEAD"),
        "src_dirty": None if status is None else bool(status),
    }


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), cpu
            )
    except OSError:
        pass
    packages = ("trio-mcp", "trio", "pydantic", "pydantic-core", "mcp", "anyio", "fastmcp")
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": {name: _version(name) for name in packages},
    }


# -- statistics ----------------------------------------------------------------------------------


def stats(samples: Sequence[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
        "samples": list(samples),
    }


def percentile(values: Sequence[int], fraction: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))])


class Collector:
    """Samples by workload, subject and metric; stats at the end."""

    def __init__(self) -> None:
        self.samples: dict[str, dict[str, dict[str, list[float]]]] = {}

    def add(self, workload: str, subject: str, **metrics: float) -> None:
        row = self.samples.setdefault(workload, {}).setdefault(subject, {})
        for metric, value in metrics.items():
            row.setdefault(metric, []).append(value)

    def summary(self) -> dict[str, Any]:
        return {
            workload: {
                subject: {metric: stats(values) for metric, values in metrics.items()}
                for subject, metrics in subjects.items()
            }
            for workload, subjects in self.samples.items()
        }


# -- stdio workloads -----------------------------------------------------------------------------


def cold_start(out: Collector, process: str, argv: Sequence[str]) -> None:
    with StdioPeer(argv, env=ENV) as peer:
        seconds = peer.initialize()
        out.add("cold_start", process, ms=seconds * 1000)
        out.add("rss", process, idle_mb=peer.peak_rss_mb())


def calls(out: Collector, variant: Variant, sizes: Sizes) -> None:
    """Sequential, then pipelined, in one server process (after a warm-up)."""
    with StdioPeer(variant.argv, env=ENV) as peer:
        peer.initialize()
        warm = peer.sequential(add_frames(sizes.warmup, tool=variant.tool, first_id=WARMUP_ID))
        check_add(warm.lines, range(WARMUP_ID, WARMUP_ID + sizes.warmup))

        seq = peer.sequential(add_frames(sizes.sequential, tool=variant.tool, first_id=SEQ_ID))
        check_add(seq.lines, range(SEQ_ID, SEQ_ID + sizes.sequential))
        out.add(
            "sequential",
            variant.label,
            calls_per_s=sizes.sequential / seq.wall,
            p50_us=percentile(seq.latencies_ns, 0.50) / 1000,
            p99_us=percentile(seq.latencies_ns, 0.99) / 1000,
            driver_cpu=seq.cpu_share,
            server_cpu=seq.server_cpu_share,
        )

        frames = add_frames(sizes.pipelined, tool=variant.tool, first_id=PIPE_ID)
        pipe = peer.pipelined(frames, sizes.window)
        check_add(pipe.lines, range(PIPE_ID, PIPE_ID + sizes.pipelined))
        out.add(
            "pipelined",
            variant.label,
            calls_per_s=sizes.pipelined / pipe.wall,
            driver_cpu=pipe.cpu_share,
            server_cpu=pipe.server_cpu_share,
        )
        if variant.tool == "calculator.add" and variant.process in ("trio-mcp", "SDK"):
            # The sync variants serve the template and the prompt the way they run the sync
            # tool (inline or in a worker thread).
            n = sizes.primitives
            jobs: list[tuple[str, Callable[..., list[bytes]], Callable[..., None], int]] = [
                ("read", read_frames, check_read, READ_ID),
                ("prompt", prompt_frames, check_prompt, PROMPT_ID),
            ]
            for workload, make, check, first in jobs:
                run = peer.pipelined(make(n, first_id=first), sizes.window)
                check(run.lines, range(first, first + n))
                out.add(
                    workload,
                    variant.label,
                    calls_per_s=n / run.wall,
                    driver_cpu=run.cpu_share,
                    server_cpu=run.server_cpu_share,
                )
        out.add("rss", variant.process, load_mb=peer.peak_rss_mb())


def concurrency(out: Collector, process: str, argv: Sequence[str], sizes: Sizes) -> None:
    with StdioPeer(argv, env=ENV) as peer:
        peer.initialize()
        warm = peer.pipelined(sleep_frames(8, first_id=WARMUP_ID), 8)
        check_sleep(warm.lines, range(WARMUP_ID, WARMUP_ID + 8))
        frames = sleep_frames(sizes.concurrent, first_id=SLEEP_ID)
        run = peer.pipelined(frames, sizes.concurrent)
        check_sleep(run.lines, range(SLEEP_ID, SLEEP_ID + sizes.concurrent))
        out.add(
            "concurrency",
            process,
            wall_s=run.wall,
            driver_cpu=run.cpu_share,
            server_cpu=run.server_cpu_share,
        )
        out.add("rss", process, load_mb=peer.peak_rss_mb())


# -- subprocess workloads ------------------------------------------------------------------------


def inproc(*args: object) -> dict[str, Any]:
    command = [PY, str(HERE / "inproc.py"), *map(str, args)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=900, check=False, env=ENV
    )
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command[1:])} failed:\n{done.stderr[-3000:]}{done.stdout}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _top_level_imports(statement: str) -> dict[str, int]:
    """`-X importtime` of `statement`: cumulative microseconds of each top-level import."""
    done = subprocess.run(
        [PY, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=ENV,
    )
    out: dict[str, int] = {}
    for line in done.stderr.splitlines():
        # "import time: <self us> | <cumulative us> | <indent><name>": top level is unindented.
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            out[parts[2].strip()] = int(parts[1])
    return out


def import_ms(statement: str) -> float:
    """Milliseconds `statement` spends importing (`-X importtime`), interpreter start-up aside.

    Every top-level import counts except those of an empty program (site, encodings): a name a
    package loads on first use (a module `__getattr__`) is imported after the package itself, on
    lines of its own.
    """
    start_up = _top_level_imports("pass")
    imported = {k: v for k, v in _top_level_imports(statement).items() if k not in start_up}
    if not imported:
        raise BenchError(f"{statement!r} imported nothing")
    return sum(imported.values()) / 1000


# -- the run -------------------------------------------------------------------------------------


def plan(peers: dict[str, dict[str, Any]], chosen: set[str]) -> list[Variant]:
    variants = [
        Variant("trio-mcp inline (a)", "trio-mcp", _script("trio_mcp_server.py", "--inline")),
        Variant("trio-mcp thread (b)", "trio-mcp", _script("trio_mcp_server.py")),
        Variant(
            "trio-mcp async (c)",
            "trio-mcp",
            _script("trio_mcp_server.py"),
            "calculator.add_async",
        ),
    ]
    for peer, script in (("SDK", "sdk_server.py"), ("FastMCP", "fastmcp_server.py")):
        if peers[peer]["available"] and peer in chosen:
            variants.append(Variant(f"{peer} sync (thread)", peer, _script(script)))
            variants.append(Variant(f"{peer} async", peer, _script(script), "calculator.add_async"))
    if "baseline" in chosen:
        variants.append(Variant("baseline", "baseline", _script("baseline_server.py")))
    return variants


def warm_up(variants: list[Variant], sdk: bool) -> None:
    """Untimed: fill the bytecode cache for every interpreter the rounds will start."""
    modules = "trio_mcp, trio, pydantic" + (", mcp, mcp.server.mcpserver, anyio" if sdk else "")
    subprocess.run([PY, "-c", f"import {modules}"], check=True, timeout=300, env=ENV)
    for argv in {variant.argv for variant in variants}:
        with StdioPeer(argv, env=ENV) as peer:
            peer.initialize()
            check_add(peer.sequential(add_frames(2)).lines, range(1, 3))
            check_sleep(peer.sequential(sleep_frames(1, first_id=3)).lines, range(3, 4))
            if "baseline" not in argv[-1] and "fastmcp" not in argv[-1]:
                check_read(peer.sequential(read_frames(1, first_id=4)).lines, range(4, 5))


def import_times(out: Collector, sdk: bool) -> None:
    # `import trio_mcp` is the declaration API (tool, Param); a server also needs `Server` and
    # `run`, which load the runtime and trio (measured on its own beside them).
    for statement in (*IMPORTS, "import mcp.server.mcpserver") if sdk else IMPORTS:
        out.add("import", statement, ms=import_ms(statement))


def one_round(out: Collector, variants: list[Variant], sizes: Sizes, sdk: bool) -> None:
    processes: dict[str, tuple[str, ...]] = {}
    for variant in variants:
        processes.setdefault(variant.process, variant.argv)
    for process, argv in processes.items():
        cold_start(out, process, argv)
    for variant in variants:
        calls(out, variant, sizes)
    for process, argv in processes.items():
        if process != "baseline":  # it answers at once: nothing concurrent to measure
            concurrency(out, process, argv, sizes)

    import_times(out, sdk)

    subjects: list[tuple[str, tuple[object, ...]]] = [
        ("trio-mcp inline", ("trio-mcp", sizes.inproc_trio, sizes.window, "calculator.add")),
        ("trio-mcp async", ("trio-mcp", sizes.inproc_trio, sizes.window, "calculator.add_async")),
    ]
    if sdk:
        for mode in ("auto", "legacy"):
            subjects.append(
                (
                    f"SDK async, Client {mode}",
                    ("sdk", sizes.inproc_sdk, sizes.window, "calculator.add_async", mode),
                )
            )
    for label, args in subjects:
        out.add("inprocess", label, **inproc("dispatch", *args))

    for label, lib in (("trio-mcp", "trio-mcp"), ("SDK", "sdk")):
        if lib == "trio-mcp" or sdk:
            out.add("registration", label, **inproc("register", lib, sizes.tools))
    for name, per_s in inproc("codec", sizes.codec)["roundtrips_per_s"].items():
        out.add("codec", name, roundtrips_per_s=per_s)


# -- report --------------------------------------------------------------------------------------


def _median(summary: dict[str, Any], workload: str, subject: str, metric: str) -> float | None:
    try:
        value: float = summary[workload][subject][metric]["median"]
    except KeyError:
        return None
    return value


def _best(summary: dict[str, Any], workload: str, prefix: str, metric: str) -> float | None:
    values = [
        row[metric]["median"]
        for subject, row in summary.get(workload, {}).items()
        if subject.startswith(prefix)
    ]
    return max(values) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def ratios(summary: dict[str, Any]) -> dict[str, Any]:
    """Each trio-mcp row against the SDK's faster variant and against the baseline."""
    result: dict[str, Any] = {}
    for workload in ("sequential", "pipelined", *(w for w, _ in PRIMITIVES)):
        sdk = _best(summary, workload, "SDK", "calls_per_s")
        base = _median(summary, workload, "baseline", "calls_per_s")
        for subject, row in summary.get(workload, {}).items():
            mine = row["calls_per_s"]["median"]
            result.setdefault(workload, {})[subject] = {
                "vs_sdk": _ratio(mine, sdk),
                "vs_baseline": _ratio(mine, base),
            }
    sdk_inproc = _best(summary, "inprocess", "SDK", "calls_per_s")
    for subject, row in summary.get("inprocess", {}).items():
        result.setdefault("inprocess", {})[subject] = {
            "vs_sdk": _ratio(row["calls_per_s"]["median"], sdk_inproc)
        }
    return result


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each with what this run measured (None: peer not run)."""
    inline = "trio-mcp inline (a)"

    def ratio_to_sdk(workload: str, subject: str, metric: str) -> float | None:
        return _ratio(
            _median(summary, workload, subject, metric), _best(summary, workload, "SDK", metric)
        )

    rows: list[tuple[str, float | None, str, float]] = [
        (
            "pipelined, inline tool, x SDK",
            ratio_to_sdk("pipelined", inline, "calls_per_s"),
            ">=",
            25,
        ),
        *(
            (
                f"pipelined {method}, inline, x SDK",
                ratio_to_sdk(workload, inline, "calls_per_s"),
                ">=",
                25.0,
            )
            for workload, method in PRIMITIVES
        ),
        (
            "pipelined, inline tool, x baseline",
            _ratio(
                _median(summary, "pipelined", inline, "calls_per_s"),
                _median(summary, "pipelined", "baseline", "calls_per_s"),
            ),
            ">=",
            0.5,
        ),
        (
            "sequential, inline tool, x SDK",
            ratio_to_sdk("sequential", inline, "calls_per_s"),
            ">=",
            5,
        ),
        (
            "in-process dispatch, inline tool, x SDK",
            ratio_to_sdk("inprocess", "trio-mcp inline", "calls_per_s"),
            ">=",
            15,
        ),
        (
            "concurrent 100 ms calls, wall s",
            _median(summary, "concurrency", "trio-mcp", "wall_s"),
            "<",
            0.4,
        ),
        (
            "cold start, fraction of SDK",
            _ratio(
                _median(summary, "cold_start", "trio-mcp", "ms"),
                _median(summary, "cold_start", "SDK", "ms"),
            ),
            "<=",
            1 / 3,
        ),
        ("import trio_mcp, ms", _median(summary, "import", "import trio_mcp", "ms"), "<", 150),
        (
            "peak RSS under load, fraction of SDK",
            _ratio(_peak(summary, "trio-mcp"), _peak(summary, "SDK")),
            "<",
            1,
        ),
    ]
    compare: dict[str, Callable[[float, float], bool]] = {
        ">=": lambda a, b: a >= b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
    }
    return [
        {
            "target": name,
            "goal": f"{op} {goal:.3g}",
            "measured": value,
            "met": None if value is None else compare[op](value, goal),
        }
        for name, value, op, goal in rows
    ]


def _peak(summary: dict[str, Any], process: str) -> float | None:
    try:
        value: float = summary["rss"][process]["load_mb"]["max"]
    except KeyError:
        return None
    return value


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "-"
    if entry["n"] == 1:
        return _num(entry["median"])
    return f"{_num(entry['median'])} [{_num(entry['min'])}-{_num(entry['max'])}]"


def _share(row: dict[str, Any]) -> str:
    return f"{row['server_cpu']['median']:.2f} / {row['driver_cpu']['median']:.2f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["", title]
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def report(result: dict[str, Any]) -> str:
    s, r, m = result["workloads"], result["ratios"], result["machine"]
    sizes = result["sizes"]
    pk = m["packages"]
    lines = [
        f"trio-mcp benchmark, {result['started']} ({'quick' if result['quick'] else 'full'} run, "
        f"{result['rounds']} round(s), {result['duration_s']:.0f} s)",
        f"machine: {m['nproc']} cores, {m['cpu_model']}, {m['implementation']} {m['python']}, "
        f"{m['platform']}",
        "versions: " + ", ".join(f"{k} {v}" for k, v in pk.items() if v),
        f"source: commit {(result['source']['commit'] or '?')[:12]}"
        + (", src/ with uncommitted changes" if result["source"]["src_dirty"] else ""),
        "cells: median [min-max] over rounds; 'x SDK' is against the SDK's faster variant "
        "(sync or async tool), 'x base' against the bare Python loop.",
    ]
    lines += [
        f"skipped: {name}: {peer['why']}"
        for name, peer in result["peers"].items()
        if not peer["available"]
    ]

    cold = s.get("cold_start", {})
    lines += _table(
        "1. cold start: spawn to initialize response (ms); import (-X importtime cumulative, ms)",
        ["server", "ms"],
        [[k, _cell(v["ms"])] for k, v in cold.items()]
        + [[k, _cell(v["ms"])] for k, v in s.get("import", {}).items()],
    )
    lines += _table(
        f"2. sequential tools/call, one at a time ({sizes['sequential']:,} calls)",
        ["server", "calls/s", "p50 us", "p99 us", "x SDK", "x base", "CPU srv/drv"],
        [
            [
                k,
                _cell(v["calls_per_s"]),
                _cell(v["p50_us"]),
                _cell(v["p99_us"]),
                _x(r["sequential"][k]["vs_sdk"]),
                _x(r["sequential"][k]["vs_baseline"]),
                _share(v),
            ]
            for k, v in s.get("sequential", {}).items()
        ],
    )
    lines += _table(
        f"3. pipelined tools/call ({sizes['pipelined']:,} calls, {sizes['window']} in flight)",
        ["server", "calls/s", "x SDK", "x base", "CPU srv/drv"],
        [
            [
                k,
                _cell(v["calls_per_s"]),
                _x(r["pipelined"][k]["vs_sdk"]),
                _x(r["pipelined"][k]["vs_baseline"]),
                _share(v),
            ]
            for k, v in s.get("pipelined", {}).items()
        ],
    )
    for workload, method in PRIMITIVES:
        what = "of the template bench://items/{item_id}" if workload == "read" else "greet(name)"
        lines += _table(
            f"3{'b' if workload == 'read' else 'c'}. pipelined {method} {what} "
            f"({sizes['primitives']:,}, {sizes['window']} in flight)",
            ["server", "calls/s", "x SDK", "CPU srv/drv"],
            [
                [k, _cell(v["calls_per_s"]), _x(r[workload][k]["vs_sdk"]), _share(v)]
                for k, v in s.get(workload, {}).items()
            ],
        )
    lines += _table(
        f"4. concurrency: {sizes['concurrent']:,} calls of a 100 ms async tool sent at once",
        ["server", "wall s", "CPU srv/drv"],
        [[k, _cell(v["wall_s"]), _share(v)] for k, v in s.get("concurrency", {}).items()],
    )
    lines += _table(
        "5. in-process dispatch, no transport (calls/s, 256 in flight)",
        ["path", "calls/s", "x SDK"],
        [
            [k, _cell(v["calls_per_s"]), _x(r["inprocess"][k]["vs_sdk"])]
            for k, v in s.get("inprocess", {}).items()
        ],
    )
    lines += _table(
        f"6. registration of {sizes['tools']:,} generated tools; tools/list, in-memory path",
        ["library", "register ms", "first list ms", "list ms"],
        [
            [k, _cell(v["register_ms"]), _cell(v["list_first_ms"]), _cell(v["list_ms"])]
            for k, v in s.get("registration", {}).items()
        ],
    )
    lines += _table(
        "7. peak RSS of the server process (VmHWM, MB): after initialize; highest under load",
        ["server", "idle", "under load (max)"],
        [
            [k, _cell(v.get("idle_mb")), _num(v["load_mb"]["max"]) if "load_mb" in v else "-"]
            for k, v in s.get("rss", {}).items()
        ],
    )
    lines += _table(
        "JSON codec: decode a request + encode a response (round trips/s)",
        ["codec", "per s"],
        [[k, _cell(v["roundtrips_per_s"])] for k, v in s.get("codec", {}).items()],
    )
    busiest = max(
        (
            (row["driver_cpu"]["max"], f"{workload}, {subject}")
            for workload in ("sequential", "pipelined", "read", "prompt", "concurrency")
            for subject, row in s.get(workload, {}).items()
        ),
        default=(0.0, "-"),
    )
    lines += [
        "",
        "CPU srv/drv: CPU time / wall of the server process (all threads) and of the stdio "
        "driver; 1.0 = one core busy.",
        f"The driver's highest share: {busiest[0]:.2f} ({busiest[1]}).",
    ]
    verdict = {True: "met", False: "MISSED", None: "n/a"}
    lines += _table(
        "targets (issue 3)" + (": quick run, indicative only" if result["quick"] else ""),
        ["target", "goal", "measured", ""],
        [
            [
                t["target"],
                t["goal"],
                "-" if t["measured"] is None else f"{t['measured']:.3g}",
                verdict[t["met"]],
            ]
            for t in result["targets"]
        ],
    )
    server, alone = (
        s.get("import", {}).get(statement, {}).get("ms", {}).get("median")
        for statement in ("from trio_mcp import Server, run", "import trio")
    )
    if server is not None and alone is not None:
        # The target names `import trio_mcp`, the declaration API; say what a server imports too.
        lines.append(
            f"Beside the import target: a server's imports (from trio_mcp import Server, run) "
            f"take {server:.3g} ms, of which import trio alone {alone:.3g} ms (workload 1)."
        )
    return "\n".join(lines)


def chart(result: dict[str, Any], path: Path) -> str:
    """A PNG of the main workloads; a note instead when matplotlib is not installed."""
    try:
        import matplotlib as mpl  # type: ignore[import-not-found, unused-ignore]  # noqa: PLC0415

        mpl.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]  # noqa: PLC0415
    except ImportError:
        return "no chart: matplotlib is not installed (pip install 'trio-mcp[bench]')"
    s = result["workloads"]
    panels = [
        ("sequential", "calls_per_s", "sequential calls/s (higher is better)"),
        ("pipelined", "calls_per_s", "pipelined calls/s (higher is better)"),
        ("inprocess", "calls_per_s", "in-process calls/s (higher is better)"),
        ("cold_start", "ms", "cold start ms (lower is better)"),
        (
            "concurrency",
            "wall_s",
            f"{result['sizes']['concurrent']:,} x 100 ms calls, wall s (lower is better)",
        ),
        ("rss", "load_mb", "peak RSS MB under load (lower is better)"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(16, 8.5))
    for ax, (workload, metric, title) in zip(axes.flat, panels, strict=True):
        rows = [(k, v[metric]) for k, v in s.get(workload, {}).items() if metric in v]
        names = [k for k, _ in rows]
        medians = [v["median"] for _, v in rows]
        errors = [
            [v["median"] - v["min"] for _, v in rows],
            [v["max"] - v["median"] for _, v in rows],
        ]
        colors = [
            "tab:green"
            if n.startswith("trio")
            else "tab:gray"
            if n.startswith("base")
            else "tab:blue"
            for n in names
        ]
        ax.barh(names, medians, xerr=errors, color=colors, capsize=3)
        ax.invert_yaxis()
        if medians and max(medians) >= 10_000:
            ax.xaxis.set_major_formatter(lambda x, _pos: f"{x / 1000:g}k")
        ax.set_title(title, fontsize=10)
        ax.tick_params(labelsize=8)
    m = result["machine"]
    fig.suptitle(
        f"trio-mcp benchmark: {m['nproc']} cores, {m['cpu_model']}, Python {m['python']}; "
        f"median and min-max of {result['rounds']} round(s)",
        fontsize=11,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"chart: {path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke run (CI)")
    parser.add_argument("--rounds", type=int, help="rounds (default: 5, quick: 1)")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "latest.json")
    parser.add_argument("--png", type=Path, default=HERE / "results" / "latest.png")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="JSON",
        help="measure nothing: print the table and draw the chart of a saved run",
    )
    parser.add_argument(
        "--peers",
        default="SDK,FastMCP,baseline",
        help="comma-separated peers to run beside trio-mcp (default: all available)",
    )
    args = parser.parse_args(argv)
    if args.report:
        saved = json.loads(args.report.read_text(encoding="utf-8"))
        print(report(saved))
        print(chart(saved, args.png))
        return 0
    sizes = QUICK if args.quick else FULL
    rounds = args.rounds or (1 if args.quick else 5)
    chosen = {p.strip() for p in args.peers.split(",") if p.strip()}

    peers = detect_peers()
    for name, peer in peers.items():
        if not peer["available"]:
            print(f"skip {name}: {peer['why']}")
        elif name not in chosen:
            print(f"skip {name}: not in --peers")
        else:
            print(f"peer {name}: {peer['server']} {peer['version']}")
    sdk = peers["SDK"]["available"] and "SDK" in chosen
    variants = plan(peers, chosen)

    started = datetime.datetime.now(datetime.UTC)
    wall0 = time.perf_counter()
    print("warm-up (untimed) ...", flush=True)
    warm_up(variants, sdk)
    out = Collector()
    for number in range(1, rounds + 1):
        print(f"round {number}/{rounds} ...", flush=True)
        one_round(out, variants, sizes, sdk)
    summary = out.summary()
    result: dict[str, Any] = {
        "schema": 1,
        "started": started.isoformat(timespec="seconds"),
        "duration_s": time.perf_counter() - wall0,
        "quick": args.quick,
        "rounds": rounds,
        "sizes": sizes.__dict__,
        "machine": machine(),
        "source": source_state(),
        "peers": peers,
        "workloads": summary,
        "ratios": ratios(summary),
    }
    result["targets"] = targets(summary)
    print(report(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"\njson: {args.json}")
    print(chart(result, args.png))
    return 0


if __name__ == "__main__":
    sys.exit(main())
