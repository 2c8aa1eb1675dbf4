"""The load balancer configurations of deploy/, run for real on loopback ports.

Each test starts three single-process `trio-mcp run` servers and the balancer in front of them
(the shipped file, its ports replaced by free ones), talks to them through it with trio-mcp's
client, and kills one server mid-run. They need the `nginx` and `haproxy` binaries (Debian
packages of those names; `.ci/run` installs them when it can) and are skipped, saying so,
without them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from pathlib import Path

import pytest
import trio

from tests.deploy.procs import PID_SERVER, balancer, free_port, render
from tests.processes import ROOT, TIMEOUT, Served
from tests.processes import serving as serving_process
from trio_mcp import Client, ConnectionClosed, open_client

pytestmark = pytest.mark.slow  # every test here starts processes: seconds each

DEPLOY = ROOT / "deploy"
WORKERS = 3
SESSIONS = 50


def _binary(name: str) -> str:
    # Debian installs both in /usr/sbin, which a user's PATH may lack.
    found = shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin")
    if found is None:
        pytest.skip(f"{name} is not installed (Debian package {name}; .ci/run installs it as root)")
    return found


async def _pid(client: Client, tool: str = "pid", **arguments: object) -> int:
    result = await client.call_tool(tool, arguments)
    assert isinstance(result.structured, dict)
    pid = result.structured["result"]
    assert isinstance(pid, int)
    return pid


async def _start_workers(
    stack: contextlib.AsyncExitStack, ports: list[int], *args: str, log: Path | None = None
) -> list[Served]:
    env = {"PID_SERVER_LOG": str(log)} if log is not None else None
    workers = []
    for port in ports:
        served = await stack.enter_async_context(
            serving_process(
                PID_SERVER,
                "--transport",
                "http",
                "--port",
                str(port),
                "--allow-host",
                "127.0.0.1",
                # Behind the balancer every connection comes from its address (deploy/README).
                "--max-connections-per-address",
                "0",
                *args,
                env=env,
            )
        )
        await served.url()
        workers.append(served)
    return workers


async def test_nginx_spreads_stateless_calls_and_loses_only_those_on_a_killed_worker(
    tmp_path: Path,
) -> None:
    nginx = _binary("nginx")
    front, *ports = (free_port() for _ in range(WORKERS + 1))
    config = tmp_path / "nginx.conf"
    # Run as root, nginx's own processes would switch to `nobody`, who cannot enter tmp_path.
    head = "user root;\n" if os.geteuid() == 0 else ""
    config.write_text(render(DEPLOY / "nginx.conf", front, ports, head=head))
    log = tmp_path / "calls.log"
    async with contextlib.AsyncExitStack() as stack:
        workers = await _start_workers(stack, ports, "--stateless", log=log)
        pids = [served.process.pid for served in workers]
        command = [nginx, "-p", str(tmp_path), "-c", str(config), "-e", "stderr"]
        await stack.enter_async_context(balancer(command, front))
        client = await stack.enter_async_context(open_client(f"http://127.0.0.1:{front}/mcp"))
        with trio.fail_after(TIMEOUT):
            # Round robin: each request to the next server.
            assert {await _pid(client) for _ in range(WORKERS * 3)} == set(pids)

            results: dict[str, int | Exception] = {}

            async def call(tag: str) -> None:
                try:
                    results[tag] = await _pid(client, "slow_pid", seconds=2.0, tag=tag)
                except ConnectionClosed as exc:
                    results[tag] = exc

            victim = pids[0]
            async with trio.open_nursery() as nursery:
                for number in range(30):
                    nursery.start_soon(call, f"call{number}")
                while not log.exists() or len(log.read_text().splitlines()) < 30:  # noqa: ASYNC110 - written by the servers
                    await trio.sleep(0.05)
                os.kill(victim, signal.SIGKILL)
            started = [line.split() for line in log.read_text().splitlines()]
            ran_on = {tag: int(pid) for pid, tag in started}
            # Each call ran once: none was sent again, not even those the kill cut short.
            assert len(started) == len(ran_on) == 30
            lost = {tag for tag, result in results.items() if isinstance(result, Exception)}
            assert lost == {tag for tag, pid in ran_on.items() if pid == victim}
            assert lost  # round robin gave the victim its share
            for tag in lost:
                assert "not sent again, as it may have run" in str(results[tag])
            assert all(results[tag] == ran_on[tag] for tag in set(results) - lost)
            # nginx sends new calls to the servers left (the victim refuses connections).
            after = {await _pid(client) for _ in range(WORKERS * 4)}
            assert after == set(pids[1:])


async def test_haproxy_keeps_each_session_on_its_worker_and_a_lost_one_starts_anew(
    tmp_path: Path,
) -> None:
    haproxy = _binary("haproxy")
    front, *ports = (free_port() for _ in range(WORKERS + 1))
    config = tmp_path / "haproxy.cfg"
    # A stats socket, to learn when HAProxy has seen the killed worker go (`_wait_down`).
    stats = tmp_path / "haproxy.sock"
    text = render(DEPLOY / "haproxy.cfg", front, ports)
    config.write_text(text.replace("global\n", f"global\n    stats socket {stats}\n", 1))
    async with contextlib.AsyncExitStack() as stack:
        workers = await _start_workers(stack, ports)
        await stack.enter_async_context(balancer([haproxy, "-db", "-f", str(config)], front))
        url = f"http://127.0.0.1:{front}/mcp"
        with trio.fail_after(TIMEOUT * 2):
            async with contextlib.AsyncExitStack() as opened:
                clients = [
                    await opened.enter_async_context(open_client(url)) for _ in range(SESSIONS)
                ]
                await _sessions_stay_and_the_lost_start_anew(clients, workers, stats)


async def _wait_down(stats: Path, server: str) -> None:
    """Until HAProxy's health checks have taken `server` out (`show stat`, column `status`)."""
    while True:
        sock = trio.socket.socket(trio.socket.AF_UNIX)
        with sock:
            await sock.connect(str(stats))
            await sock.send(b"show stat\n")
            table = b""
            while chunk := await sock.recv(65536):
                table += chunk
        head, *rows = table.decode().splitlines()
        columns = head.lstrip("# ").split(",")
        for row in rows:
            fields = dict(zip(columns, row.split(","), strict=False))
            if fields.get("svname") == server and fields.get("status", "").startswith("DOWN"):
                return
        await trio.sleep(0.1)


async def _sessions_stay_and_the_lost_start_anew(
    clients: list[Client], workers: list[Served], stats: Path
) -> None:
    pids = [served.process.pid for served in workers]
    sessions = {client.session_id for client in clients}
    assert None not in sessions
    assert len(sessions) == SESSIONS
    home: dict[int, int] = {}
    for number, client in enumerate(clients):
        home[number] = await _pid(client)
        # Every request naming the session reaches the worker that holds it.
        assert [await _pid(client) for _ in range(3)] == [home[number]] * 3
    assert set(home.values()) == set(pids)

    victim = pids[0]
    os.kill(victim, signal.SIGKILL)
    await workers[0].process.wait()
    # A request sent at the very moment of the kill, on a connection HAProxy kept open
    # to the victim, is lost like the calls running there (the client says it may have
    # run): wait until HAProxy has seen the victim go.
    await _wait_down(stats, "worker1")
    for number, client in enumerate(clients):
        before = client.session_id
        pid = await _pid(client)
        if home[number] == victim:
            # 404 from the server it went to instead: the client started a new session.
            assert pid in pids[1:]
            assert client.session_id not in (before, None)
            assert [await _pid(client) for _ in range(2)] == [pid] * 2
        else:
            assert (pid, client.session_id) == (home[number], before)
