"""What the Redis-backed pieces (`RedisBroker`, `RedisTaskStore`) share: redis-py, off the loop.

redis-py has no trio client. A `RedisConnection` gives one object one blocking client, made on
first use under a lock (the client itself is thread-safe), and runs its commands in worker
threads. A command is tried once, waiting at most `timeout` seconds: how to wait and retry
through an outage is the caller's choice, not redis-py's.

Rule 1: redis-py never runs on the event loop: each object's commands run in worker threads of
        a `trio.CapacityLimiter` of its own, so a burst of Redis work cannot take the threads
        that sync tools run in (trio's default limiter, 40).
Rule 2: `redis` is imported in those threads, on first use: a server that never serves with
        Redis never loads it. Making an object that uses it only checks that the package is
        there (`require_redis`), and connects to nothing.
Rule 3: a URL's password never reaches a log: it is written `***` (`safe_url`).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import trio

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["RedisConnection", "redis_errors", "redis_module", "require_redis", "safe_url"]

_T = TypeVar("_T")


def redis_module() -> Any:
    """The `redis` package, imported on first use (Rule 2)."""
    import redis  # noqa: PLC0415 - loads only when Redis is used (Rule 2)

    return redis


def redis_errors() -> tuple[type[Exception], ...]:
    """What a Redis command raises when Redis cannot be reached or refuses it."""
    return (redis_module().RedisError, OSError)


def require_redis(what: str) -> None:
    """Check that the `redis` package is installed (Rule 2).

    Raises:
        RuntimeError: saying how to install it, naming `what` needs it.
    """
    if importlib.util.find_spec("redis") is None:
        raise RuntimeError(f'{what} needs the redis package: pip install "trio-mcp[redis]"')


def safe_url(url: str) -> str:
    """`url` without its password, for the log (Rule 3)."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at:
        return url
    user = userinfo.partition(":")[0]
    return f"{scheme}{sep}{user}:***@{host}" if user else f"{scheme}{sep}***@{host}"


class RedisConnection:
    """One object's way to Redis: its shared client and its threads (Rule 1).

    Args:
        url: The Redis server, as redis-py's `Redis.from_url` takes it.
        timeout: Seconds a connection attempt or a command may take.
        threads: Commands under way at once, each in a worker thread.
    """

    def __init__(self, url: str, *, timeout: float, threads: int) -> None:
        self.url = url
        self.timeout = timeout
        self.limiter = trio.CapacityLimiter(threads)
        self._client: Redis | None = None
        self._lock = threading.Lock()

    def connect(self, **options: Any) -> Redis:
        """A new client of its own (blocking code: call it in a thread)."""
        redis = redis_module()
        client: Redis = redis.Redis.from_url(
            self.url,
            socket_connect_timeout=self.timeout,
            socket_timeout=self.timeout,
            # One try: a command waits one timeout at most, and the caller decides what next.
            retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
            **options,
        )
        return client

    def shared(self) -> Redis:
        """The shared client, made on first use (blocking code: call it in a thread)."""
        with self._lock:
            if self._client is None:
                self._client = self.connect()
            return self._client

    async def run(self, command: Callable[[Redis], _T]) -> _T:
        """`command(client)` in a worker thread of this connection's limiter (Rule 1)."""
        return await trio.to_thread.run_sync(self._run_blocking, command, limiter=self.limiter)

    def _run_blocking(self, command: Callable[[Redis], _T]) -> _T:
        return command(self.shared())

    async def aclose(self) -> None:
        """Close the shared client, in a thread; the next command opens another."""
        await trio.to_thread.run_sync(self.close, limiter=self.limiter)

    def close(self) -> None:
        """Close the shared client (blocking code: call it in a thread); the next use reopens."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
