"""Smoke test of `benchmarks/run.py --quick`: the benchmark still runs and reports every workload.

It asserts the shape of the JSON report and that every measurement is a positive number, never
a speed: how fast things are is for people reading the full run, not for a test on a shared CI
machine. Peers that are not installed (the official SDK, FastMCP) must be skipped, not fail.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.timing import scaled

pytestmark = pytest.mark.slow  # every test here starts processes: seconds each

RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"

WORKLOADS = (
    "cold_start",
    "import",
    "sequential",
    "pipelined",
    "read",
    "prompt",
    "concurrency",
    "inprocess",
    "registration",
    "rss",
    "codec",
)
TRIO_STDIO = ("trio-mcp inline (a)", "trio-mcp thread (b)", "trio-mcp async (c)", "baseline")


def _stats(tree: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every {median, min, max, n, samples} dict in the report, with its path."""
    if isinstance(tree, dict) and "median" in tree:
        return [(where, tree)]
    if isinstance(tree, dict):
        return [found for key, sub in tree.items() for found in _stats(sub, f"{where}/{key}")]
    return []


def _run_quick(script: Path, *args: str, out: Path) -> tuple[subprocess.CompletedProcess[str], Any]:
    """Run a benchmark script's --quick mode; it must succeed. Its output and its JSON report."""
    done = subprocess.run(
        [sys.executable, str(script), "--quick", *args],
        capture_output=True,
        text=True,
        timeout=scaled(300),
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(out.read_text())


def test_quick_run_reports_every_workload(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    done, result = _run_quick(
        RUN, "--rounds", "1", "--json", str(out), "--png", str(tmp_path / "quick.png"), out=out
    )

    assert result["quick"] is True
    assert result["rounds"] == 1
    assert {"nproc", "cpu_model", "python", "packages"} <= result["machine"].keys()
    assert set(WORKLOADS) <= result["workloads"].keys()
    workloads = result["workloads"]

    for name in TRIO_STDIO:
        assert name in workloads["sequential"]
        assert name in workloads["pipelined"]
        assert {"vs_sdk", "vs_baseline"} <= result["ratios"]["pipelined"][name].keys()
    assert {"calls_per_s", "p50_us", "p99_us", "driver_cpu"} <= workloads["sequential"][
        "baseline"
    ].keys()
    assert {"calls_per_s", "driver_cpu"} <= workloads["pipelined"]["baseline"].keys()
    # Pipelined resources/read (a template) and prompts/get, on the sync trio-mcp variants.
    for workload in ("read", "prompt"):
        for name in ("trio-mcp inline (a)", "trio-mcp thread (b)"):
            assert {"calls_per_s", "driver_cpu", "server_cpu"} <= workloads[workload][name].keys()
            assert "vs_sdk" in result["ratios"][workload][name]
    assert "pipelined resources/read, inline, x SDK" in {t["target"] for t in result["targets"]}
    assert "3b. pipelined resources/read" in done.stdout
    assert "3c. pipelined prompts/get" in done.stdout
    assert "trio-mcp" in workloads["concurrency"]
    assert "trio-mcp inline" in workloads["inprocess"]
    assert {"register_ms", "list_first_ms", "list_ms", "tools"} <= workloads["registration"][
        "trio-mcp"
    ].keys()
    assert {"idle_mb", "load_mb"} <= workloads["rss"]["trio-mcp"].keys()
    imports = workloads["import"]
    assert {"import trio_mcp", "from trio_mcp import Server, run", "import trio"} <= imports.keys()
    assert all(row["ms"]["n"] == 1 for row in imports.values())

    sdk_rows = {"SDK sync (thread)", "SDK async"}
    for peer, rows in (("SDK", sdk_rows), ("FastMCP", {"FastMCP sync (thread)"})):
        if result["peers"][peer]["available"]:
            assert rows <= workloads["pipelined"].keys()
        else:
            assert not rows & workloads["pipelined"].keys()
            assert f"skip {peer}:" in done.stdout
    if result["peers"]["SDK"]["available"]:
        assert "SDK" in workloads["cold_start"]
        assert "SDK" in workloads["registration"]

    measured = _stats(workloads)
    assert len(measured) > 40
    for where, entry in measured:
        assert entry["n"] == len(entry["samples"]) >= 1, where
        assert 0 < entry["min"] <= entry["median"] <= entry["max"], where

    assert len(result["targets"]) == 10
    for target in result["targets"]:
        assert target["met"] in (True, False, None)
    assert "targets (issue 3)" in done.stdout
    assert "a server's imports (from trio_mcp import Server, run) take" in done.stdout


HTTP_BENCH = RUN.parent / "http_bench.py"
HTTP_METRICS = {
    "seq_calls_per_s",
    "seq_p50_ms",
    "seq_p99_ms",
    "seq_cpu_drv",
    "seq_cpu_srv",
    "conc_calls_per_s",
    "conc_cpu_drv",
    "conc_cpu_srv",
}


def test_quick_http_run_reports_every_server(tmp_path: Path) -> None:
    # The Streamable HTTP benchmark (trio-mcp, the SDK under uvicorn, a bare Hypercorn app)
    # still runs end to end and checks every answer it times.
    out = tmp_path / "http.json"
    done, result = _run_quick(HTTP_BENCH, "--json", str(out), out=out)
    assert result["quick"] is True
    behind_nginx = {"trio-mcp 2 behind nginx"} if _nginx() else set()
    assert {
        "trio-mcp",
        "trio-mcp stateless",
        "trio-mcp 2 workers",
        "SDK",
        "bare Hypercorn",
        *behind_nginx,
    } == result["medians"].keys()
    if not behind_nginx:
        assert "skipped trio-mcp 2 behind nginx: nginx is not installed" in done.stderr
    for server, medians in result["medians"].items():
        assert medians.keys() >= HTTP_METRICS, server
        assert medians["seq_calls_per_s"] > 0, server
        assert medians["conc_calls_per_s"] > 0, server
        assert 0 < medians["seq_p50_ms"] <= medians["seq_p99_ms"], server
    assert "trio-mcp/SDK" in done.stdout


def _nginx() -> str | None:
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def test_quick_sse_run_compares_the_event_store_with_none(tmp_path: Path) -> None:
    # The event-store benchmark runs both servers and checks every stream it times (ids on
    # every event exactly when there is a store).
    out = tmp_path / "sse.json"
    done, result = _run_quick(RUN.parent / "sse_bench.py", "--json", str(out), out=out)
    assert result["results"].keys() == {"store", "no store"}
    for variant, (values,) in result["results"].items():
        assert values["seq_events_per_s"] > values["seq_calls_per_s"] > 0, variant
        assert values["conc_events_per_s"] > values["conc_calls_per_s"] > 0, variant
    assert "store/no store" in done.stdout


RELIABILITY = RUN.parent / "reliability.py"
RELIABILITY_ROWS = (
    *("1", "2", "3", "4", "5", "6a", "6b", "6c", "7", "8a", "8b", "8c", "8d"),
    *("9", "10a", "10b", "11", "12", "13", "14", "15", "16", "17"),
)
# Rows the server passes today. The others wait for HTTP connection deadlines and caps, and for
# an answer to HTTP calls cut short by shutdown: they may say FAIL, but never ERROR (the probe
# itself failing). Row 4 passes a smoke run only because 100 sessions leave the table room.
RELIABLE_TODAY = {"1", "2", "3", "5", "6a", "8a", "8b", *RELIABILITY_ROWS[13:]}
TABLE_ROW = re.compile(r"^\| (\w+) \| .* \| (pass|FAIL|ERROR) \|$")


def test_reliability_smoke_run_reports_every_row(tmp_path: Path) -> None:
    # The reliability probe attacks real server subprocesses; a smoke run does each attack in
    # miniature. What is asserted is the table and the verdicts, never a time.
    out = tmp_path / "reliability.md"
    done = subprocess.run(
        [sys.executable, str(RELIABILITY), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=scaled(300),
        check=False,
    )
    page = out.read_text()
    verdicts = {m[1]: m[2] for line in page.splitlines() if (m := TABLE_ROW.match(line))}
    assert tuple(verdicts) == RELIABILITY_ROWS, done.stderr[-3000:]
    assert {key: verdicts[key] for key in RELIABLE_TODAY} == dict.fromkeys(RELIABLE_TODAY, "pass")
    assert "ERROR" not in verdicts.values()
    assert done.returncode == (0 if set(verdicts.values()) == {"pass"} else 1)
    assert page in done.stdout
    for fact in ("cores", "Python", "trio-mcp commit", "run: smoke, seed 1"):
        assert fact in page


AUTH_VARIANTS = {"no auth", "static", "JWT RS256", "JWT ES256", "introspection"}


def test_quick_auth_run_compares_every_verifier_with_no_auth(tmp_path: Path) -> None:
    # The token-verification benchmark runs a server per verifier and checks every answer it
    # times, then the client with a static header and with OAuth; only the shape is asserted.
    out = tmp_path / "auth.json"
    done, result = _run_quick(RUN.parent / "auth_bench.py", "--json", str(out), out=out)
    assert result["quick"] is True
    assert result["results"].keys() == AUTH_VARIANTS
    for variant, (values,) in result["results"].items():
        assert values["seq_calls_per_s"] > 0, variant
        assert values["conc_calls_per_s"] > 0, variant
    assert result["ratios"]["no auth"] == {"seq_calls_per_s": 1.0, "conc_calls_per_s": 1.0}
    ((client),) = result["client"]
    assert client["static_calls_per_s"] > 0
    assert client["oauth_calls_per_s"] > 0
    assert "ratio to no auth" in done.stdout
    assert "OAuth/static" in done.stdout


MIDDLEWARE_VARIANTS = ("none", "noop", "timing", "logging+timing")
MIDDLEWARE_KEYS = (
    "stdio_calls_per_s",
    "stdio_async_calls_per_s",
    "seq_calls_per_s",
    "conc_calls_per_s",
    "inproc_us_per_call",
)


def test_quick_middleware_run_compares_every_variant_with_none(tmp_path: Path) -> None:
    # The built-in middleware's benchmark serves one server per variant over stdio and HTTP and
    # checks every answer it times; only the report's shape is asserted.
    out = tmp_path / "middleware.json"
    done, result = _run_quick(RUN.parent / "middleware_bench.py", "--json", str(out), out=out)
    assert result["quick"] is True
    assert tuple(result["results"]) == MIDDLEWARE_VARIANTS
    for variant, (values,) in result["results"].items():
        for key in MIDDLEWARE_KEYS:
            assert values[key] > 0, (variant, key)
    assert result["ratios"]["none"] == dict.fromkeys(MIDDLEWARE_KEYS, 1.0)
    assert "ratio to none" in done.stdout
