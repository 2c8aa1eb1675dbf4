"""Deadlines for the tests, stretched on a slow machine by one factor from the environment.

A deadline in a test is only there to turn a hang into a failure; it must never be what fails
a test on a machine that is merely slow or busy. So each one in the tests (a module's
`TIMEOUT`, a `fail_after` around a wait, a subprocess's `timeout=`, the conformance fixtures'
limits) is `scaled(seconds)`: generous seconds, times the factor that
`TRIO_MCP_TEST_TIMEOUT_FACTOR` gives (default 1; `.ci/run` sets it from the load average when
it is not set). The subprocesses the tests and the conformance suite start inherit the
environment, and with it the factor.

Not scaled: what a test sets as the behaviour under test (a tool's `timeout=`, a server's
keep-alive or body deadline, a `move_on_after` that checks nothing arrives in the meantime),
and virtual time under `autojump_clock`.

Scripts run by path (`python tests/conformance/everything_client.py`) import this module after
putting the repository root on `sys.path`.
"""

from __future__ import annotations

import math
import os
from typing import Final

#: The environment variable that holds the factor.
FACTOR_VARIABLE: Final = "TRIO_MCP_TEST_TIMEOUT_FACTOR"
#: A server's shutdown grace that no test deadline reaches (an hour): where a test shows that a
#: shutdown did not wait out the grace, it gives the server this one, so that a shutdown that
#: waited would fail at the test's deadline, however far a slow machine stretches that.
LONG_GRACE: Final = 3600.0


def factor() -> float:
    """The factor every test deadline is multiplied by: `TRIO_MCP_TEST_TIMEOUT_FACTOR`, or 1.

    Raises:
        ValueError: when the variable is set to anything but a positive finite number.
    """
    text = os.environ.get(FACTOR_VARIABLE, "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{FACTOR_VARIABLE} must be a positive number (2, 1.5); got {text!r}")
    return value


def scaled(seconds: float) -> float:
    """`seconds` times the factor: a deadline that only a hang reaches, on any machine."""
    return seconds * factor()
