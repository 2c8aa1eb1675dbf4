"""The tests' deadlines scale with one factor from the environment (`tests/timing.py`).

The factor reaches what the tests start by path (the conformance suite's runner and its client
fixture, the sign-in tests' browser, the test authorization server), and the runner hands the
suite a scenario limit that stays above the client fixture's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import timing
from tests.conformance import everything_client, suite

ROOT = Path(__file__).resolve().parent.parent


def test_the_factor_is_one_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(timing.FACTOR_VARIABLE, raising=False)
    assert (timing.factor(), timing.scaled(20)) == (1.0, 20.0)
    monkeypatch.setenv(timing.FACTOR_VARIABLE, " ")
    assert timing.scaled(20) == 20.0
    monkeypatch.setenv(timing.FACTOR_VARIABLE, "2.5")
    assert timing.scaled(20) == 50.0


@pytest.mark.parametrize("text", ["fast", "0", "-2", "inf", "nan"])
def test_a_factor_that_is_not_a_positive_number_is_refused(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(timing.FACTOR_VARIABLE, text)
    with pytest.raises(ValueError, match=r"^TRIO_MCP_TEST_TIMEOUT_FACTOR must be a positive"):
        timing.scaled(1)


def test_scripts_run_by_path_scale_their_deadlines_too() -> None:
    # As the suite starts them: by path, from elsewhere, with the factor in the environment.
    code = (
        "import json, runpy, sys; "
        "found = {p: runpy.run_path(p, run_name='by_path') for p in sys.argv[1:]}; "
        "print(json.dumps({p: g.get('SCENARIO_TIMEOUT') for p, g in found.items()}))"
    )
    scripts = [
        str(ROOT / "tests" / "conformance" / "everything_client.py"),
        str(ROOT / "tests" / "conformance" / "suite.py"),
        str(ROOT / "tests" / "fixtures" / "browser.py"),
        str(ROOT / "tests" / "oauth_server.py"),
    ]
    done = subprocess.run(
        [sys.executable, "-c", code, *scripts],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
        env={**os.environ, timing.FACTOR_VARIABLE: "3"},
        timeout=timing.scaled(60),
    )
    assert done.returncode == 0, done.stderr
    client, runner, *_ = json.loads(done.stdout).values()
    assert (client, runner) == (3 * 40.0, 3 * 60.0)


def test_the_suite_gets_a_scenario_limit_above_the_client_fixtures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[list[str]] = []

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    suite.run_suite(suite.Install(tmp_path), suite.CLIENT_RUN, target="client", work=tmp_path)
    (command,) = commands
    limit = int(command[command.index("--timeout") + 1]) / 1000
    assert limit == suite.SCENARIO_TIMEOUT > everything_client.SCENARIO_TIMEOUT
