"""`trio-mcp run --transport http --workers N`: worker processes sharing one socket."""

from __future__ import annotations

import os
import re
import signal

import pytest
import trio

from tests.deploy.procs import PID_SERVER, alive
from tests.processes import TIMEOUT, cli, serving
from trio_mcp import open_client

pytestmark = pytest.mark.slow  # every test here starts processes: seconds each


async def _pid_of_a_new_connection(url: str, version: str = "2025-11-25") -> int:
    # A client of its own: a new connection, which the kernel gives to any worker.
    async with open_client(url, protocol_version=version) as client:
        result = await client.call_tool("pid", {})
    assert isinstance(result.structured, dict)
    pid = result.structured["result"]
    assert isinstance(pid, int)
    return pid


def _worker_pids(stderr: str) -> list[int]:
    found = re.search(r"worker processes \(pids ([\d, ]+)\)", stderr)
    assert found is not None, stderr
    return [int(pid) for pid in found.group(1).split(", ")]


def test_workers_without_stateless_are_refused_with_the_reason_and_the_way_out() -> None:
    done = cli("run", PID_SERVER, "--transport", "http", "--workers", "3")
    assert done.returncode == 2
    assert "--workers 3 needs --stateless" in done.stderr
    assert "lives in the process that started it" in done.stderr
    assert "Mcp-Session-Id" in done.stderr
    assert "deploy/haproxy.cfg" in done.stderr


def test_workers_need_http() -> None:
    done = cli("run", PID_SERVER, "--workers", "2")
    assert done.returncode == 2
    assert "--workers serves HTTP" in done.stderr


async def test_stateless_workers_share_the_socket_and_stop_together_on_sigterm() -> None:
    args = (PID_SERVER, "--transport", "http", "--port", "0", "--stateless", "--workers", "3")
    async with serving(*args) as served:
        url = await served.url()
        workers = _worker_pids(served.stderr)
        assert len(set(workers)) == 3
        seen: set[int] = set()
        for _ in range(60):
            seen.add(await _pid_of_a_new_connection(url))
            if len(seen) > 1:
                break
        assert len(seen) > 1
        assert seen <= set(workers)
        # 2026-07-28 requests stand alone in any mode: served by the workers as they are.
        assert await _pid_of_a_new_connection(url, "2026-07-28") in workers
        assert await served.stop(signal.SIGTERM) == 0
    assert "SIGTERM, stopping the workers" in served.stderr
    assert not any(alive(pid) for pid in workers)


async def test_a_worker_that_dies_is_replaced_and_the_others_serve_on() -> None:
    args = (PID_SERVER, "--transport", "http", "--port", "0", "--stateless", "--workers", "2")
    async with serving(*args) as served:
        url = await served.url()
        first, second = _worker_pids(served.stderr)
        os.kill(first, signal.SIGKILL)
        warning = await served.wait_for(
            rf"worker \d \(pid {first}\) was killed by SIGKILL while serving; starting a new one"
        )
        assert warning
        again = await served.wait_for(r"worker \d serves again \(pid (\d+)\)")
        replacement = int(again.group(1))
        assert replacement not in (first, second)
        assert alive(replacement)
        seen = {await _pid_of_a_new_connection(url) for _ in range(10)}
        assert seen <= {second, replacement}
        assert await served.stop(signal.SIGINT) == 0
    assert not alive(replacement)
    assert not alive(second)


async def test_a_worker_that_cannot_start_stops_them_all_with_exit_2() -> None:
    args = ("no_such_module_here", "--transport", "http", "--port", "0", "--stateless")
    async with serving(*args, "--workers", "2") as served:
        with trio.fail_after(TIMEOUT):
            code = await served.process.wait()
        await served.wait_for(r"before it served; stopping")
    assert code == 2
    assert "cannot import 'no_such_module_here'" in served.stderr
