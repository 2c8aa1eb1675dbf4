"""A `redis-server` of a test's own, and a fleet of `trio-mcp run` workers on it.

Shared by the Redis tests (tests/runtime/test_redis_broker.py, test_redis_tasks.py,
tests/middleware/test_redis_rate.py; their `redis_server` fixture is in tests/conftest.py). A
Redis starts on a free loopback port, in a temporary directory, with nothing saved; what waits
for another process polls for its condition, bounded by the test's own deadline.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from tests.timing import scaled

REDIS_SERVER = shutil.which("redis-server")
#: For a test module that needs redis-py: `pytestmark = NEEDS_REDIS_PACKAGE`.
NEEDS_REDIS_PACKAGE = pytest.mark.skipif(
    importlib.util.find_spec("redis") is None,
    reason='the redis package is not installed (pip install "trio-mcp[redis]")',
)
ROOT = Path(__file__).resolve().parent.parent
#: The broker tests' channel (`channel_prefix="trio-mcp-test:"`).
CHANNEL = "trio-mcp-test:notifications"
#: Bounds each fleet's shutdown: two worker processes on 2 shared cores.
STOP_TIMEOUT = scaled(60)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisProcess:
    """A `redis-server` of this test's own on a loopback port, stopped and started at will."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.process = subprocess.Popen(
            [
                REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + scaled(60)
        while not self._answers():
            assert self.process.poll() is None, "redis-server exited"
            assert time.monotonic() < deadline, "redis-server does not answer"
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def _answers(self) -> bool:
        import redis  # noqa: PLC0415 - the modules using this are skipped without it

        try:
            with redis.Redis(port=self.port, socket_timeout=scaled(5)) as client:
                return bool(client.ping())
        except redis.ConnectionError:
            return False

    def subscribers(self, channel: str = CHANNEL) -> int:
        import redis  # noqa: PLC0415

        with redis.Redis(port=self.port, socket_timeout=scaled(5)) as client:
            counts = dict(client.pubsub_numsub(channel))
        return int(counts.get(channel.encode(), 0))

    def publish_raw(self, data: bytes) -> None:
        import redis  # noqa: PLC0415

        with redis.Redis(port=self.port, socket_timeout=scaled(5)) as client:
            client.publish(CHANNEL, data)

    async def until_subscribers(self, count: int, channel: str = CHANNEL) -> None:
        """Wait until `count` brokers are subscribed to `channel` (the test channel)."""
        # Another process's state: nothing here could wake us when it changes.
        while await trio.to_thread.run_sync(self.subscribers, channel) != count:  # noqa: ASYNC110
            await trio.sleep(0.02)


class Worker:
    """A `trio-mcp run` process of the fleet, its stderr collected as it comes."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.log = b""
        self.killed = False
        self._more = trio.Event()

    async def read_log(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.receive_some():
            self.log += chunk
            self._more.set()
            self._more = trio.Event()

    async def logged(self, text: str, *, after: int = 0) -> None:
        """Wait until the log says `text` (past its first `after` bytes)."""
        while text.encode() not in self.log[after:]:
            await self._more.wait()

    def kill(self) -> None:
        """SIGKILL: the worker ends at once, settling nothing."""
        self.killed = True
        self.process.send_signal(signal.SIGKILL)

    @property
    def url(self) -> str:
        return self.log.decode().split("serving MCP on ")[1].split()[0]


@asynccontextmanager
async def fleet(
    target: str,
    redis_url: str,
    *,
    count: int = 2,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[list[Worker]]:
    """`count` HTTP workers of `target` (a file under tests/fixtures) on `redis_url`.

    Each is told the Redis URL (`TEST_REDIS_URL`) and its name (`TEST_WORKER`: A, B, ...);
    each ends with SIGTERM, cleanly, unless the test killed it. Each has a `requestState` key of
    its own unless `env` gives them one.
    """
    inherited = {k: v for k, v in os.environ.items() if k != "TRIO_MCP_REQUEST_STATE_KEY"}
    command = [sys.executable, "-m", "trio_mcp", "run", target]
    workers: list[Worker] = []
    async with trio.open_nursery() as nursery:
        for n in range(count):
            process = await trio.lowlevel.open_process(
                [*command, "--transport", "http", "--port", "0", *args],
                stderr=subprocess.PIPE,
                cwd=ROOT,
                env={
                    **inherited,
                    "TEST_REDIS_URL": redis_url,
                    "TEST_WORKER": "AB"[n],
                    **(env or {}),
                },
            )
            worker = Worker(process)
            workers.append(worker)
            nursery.start_soon(worker.read_log)
        try:
            for worker in workers:
                await worker.logged("/mcp\n")
            yield workers
        finally:
            for worker in workers:
                if not worker.killed:
                    worker.process.terminate()
            with trio.move_on_after(STOP_TIMEOUT) as stopping, trio.CancelScope(shield=True):
                for worker in workers:
                    await worker.process.wait()
            for worker in workers:
                if worker.process.returncode is None:
                    worker.process.kill()
        assert not stopping.cancelled_caught, "a worker did not exit after SIGTERM"
    for worker in workers:
        if not worker.killed:
            assert worker.process.returncode == 0, worker.log.decode()[-2000:]
