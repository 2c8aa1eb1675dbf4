"""`RedisRateStore`: the workers of a fleet take their rate limits' tokens from one Redis.

The `RateStore` a fleet shares: the same buckets as `MemoryRateStore` (`middleware/_rate`), kept
in Redis so that a client's limit holds across workers.

Rule 1: a bucket is one Redis hash, `<key_prefix><digest of the bucket's key>` (the key names a
        principal or an address: not written into Redis in clear, and of bounded length),
        holding its tokens and when they were counted. Taking tokens is one Lua script (for a
        batch's takes at once: Rule 2), run by its digest (EVALSHA; redis-py loads it again
        when Redis lost it, after a restart), so no two workers take the same token; its clock
        is Redis's own TIME, so the workers' clocks need not agree; and it sets the key to
        expire when the bucket would be full again, so an idle client's bucket vanishes (as
        in memory: `middleware/_rate`).
Rule 2: redis-py's blocking client runs in worker threads, never on the event loop, and is
        imported on first use (`_runtime/redis_client`). A thread hop and a round trip per request
        would cap a server at a few thousand limited requests a second, so takes are sent in
        batches: the first request sends its own, and those that come while a batch is under
        way wait, to go together in the next (up to `BATCH`), sent by the first of them: one
        hop, one round trip and one script call per batch. No task of the store's own runs.
Rule 3: Redis unreachable: a command waits at most `timeout` seconds; for `RETRY_SECONDS`
        after one failed, no command is tried (a request does not wait a timeout each through
        an outage). Meanwhile, failing open (the default), each worker keeps the limits in its
        own memory: one client still cannot flood a worker, but a fleet of N workers lets up
        to N times the limit through. Failing closed, every limited request is refused, told to
        retry when Redis will be tried again. Open is the default because the limit protects
        the service, and a store of its that fails should not turn into the service failing
        (every limited request of every worker refused); closed is for a limit that is a
        contract (a quota that is billed, a downstream API's hard limit). A warning is logged
        at most once a minute while it lasts, and once when Redis answers again.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import trio

from .._runtime.redis_client import RedisConnection, redis_errors, require_redis, safe_url
from ._rate import MemoryRateStore, Rate, RateDecision

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["BATCH", "RATE_THREADS", "RETRY_SECONDS", "WARN_EVERY", "RedisRateStore"]

logger = logging.getLogger("trio_mcp")

#: Batches under way at once (Rule 2): one at a time, in a thread of the store's own, so it
#: never takes the threads sync tools run in (trio's default limiter, 40).
RATE_THREADS: Final = 1
#: Takes sent in one batch at most (Rule 2): a few microseconds of Redis's time each, so a
#: batch holds Redis up for well under a millisecond.
BATCH: Final = 256
#: Seconds after a failed command before Redis is tried again (Rule 3): an outage costs a
#: timeout once a second at most, and its end is noticed within a second.
RETRY_SECONDS: Final = 1.0
#: Seconds between two warnings of one outage (Rule 3): a line a minute tells that it lasts
#: without flooding the log (a warning per request would, at thousands a second).
WARN_EVERY: Final = 60.0

#: Rules 1, 2: KEYS the buckets of a batch, in order (one may come twice); ARGV[2i-1] and
#: ARGV[2i] the i-th one's tokens a second and size. Answers three items a take: 1 when a token
#: was taken else 0, seconds until there is one, tokens left (floats as strings: Redis would
#: cut a Lua number to an integer).
_TAKE: Final = """
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
local answers = {}
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i - 1])
  local capacity = tonumber(ARGV[2 * i])
  local stored = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(stored[1])
  local at = tonumber(stored[2])
  if tokens == nil or at == nil then
    tokens = capacity
    at = now
  elseif now > at then
    tokens = math.min(capacity, tokens + (now - at) * rate)
    at = now
  end
  local taken = 0
  local wait = 0
  if tokens >= 1 - 1e-9 then
    tokens = math.max(0, tokens - 1)
    taken = 1
  else
    wait = (1 - tokens) / rate
  end
  redis.call('HSET', key, 'tokens', tokens, 'at', at)
  redis.call('PEXPIRE', key, math.max(1, math.ceil((capacity - tokens) / rate * 1000)))
  answers[3 * i - 2] = taken
  answers[3 * i - 1] = tostring(wait)
  answers[3 * i] = tostring(tokens)
end
return answers
"""


class _Take:
    """One request's take, waiting for its batch (Rule 2)."""

    __slots__ = ("abandoned", "decision", "done", "key", "rate", "redis_key")

    def __init__(self, key: str, redis_key: str, rate: Rate) -> None:
        self.key = key
        self.redis_key = redis_key
        self.rate = rate
        self.done = trio.Event()
        #: Its request went away (cancelled) while it waited.
        self.abandoned = False
        #: Set with `done`; None when `done` says "send the next batch" instead.
        self.decision: RateDecision | None = None


class RedisRateStore:
    """Rate limit buckets in Redis, shared by the workers of a fleet (Rules 1-3).

    Give each worker's limiter one on the same Redis and prefix:
    `RateLimiter(Rate(10), store=RedisRateStore("redis://redis.internal:6379/0"))`. It needs
    the `redis` package (`pip install "trio-mcp[redis]"`); creating one connects to nothing.

    Args:
        url: The Redis server, as redis-py's `Redis.from_url` takes it (redis://, rediss://,
            unix://; a password in the URL).
        key_prefix: Starts each bucket's key; fleets sharing one Redis use different prefixes.
        timeout: Seconds a connection attempt or a command may take: every limited request
            waits for one, so short (a local Redis answers in well under a millisecond; half a
            second is a failure, not a slow answer).
        fail_open: When Redis is unreachable, limit in each worker's memory (True) or refuse
            every limited request (False) (Rule 3).
        clock: Seconds, monotonic, for the outage's bookkeeping and the buckets kept in memory
            meanwhile (default `time.monotonic`).

    Raises:
        RuntimeError: when the `redis` package is not installed.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        key_prefix: str = "trio-mcp:rate:",
        timeout: float = 0.5,
        fail_open: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        require_redis("RedisRateStore")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError("timeout must be a positive number of seconds")
        self.url = url
        self.key_prefix = key_prefix
        self.fail_open = fail_open
        self.clock = clock
        self._redis = RedisConnection(url, timeout=timeout, threads=RATE_THREADS)
        self._script: Any = None  # registered on first use, in a thread
        #: The buckets kept while Redis is unreachable, failing open (Rule 3).
        self.local = MemoryRateStore(clock=clock)
        self._retry_at = -math.inf
        self._warned_at: float | None = None  # None: Redis answered last
        #: Takes waiting for the next batch, in order (Rule 2).
        self._queue: list[_Take] = []
        #: Whether a batch is under way (or its next sender is being woken).
        self._sending = False

    def __repr__(self) -> str:
        return f"RedisRateStore({safe_url(self.url)!r}, key_prefix={self.key_prefix!r})"

    async def take(self, key: str, rate: Rate) -> RateDecision:
        """Take one token from `key`'s bucket in Redis (Rules 1, 2), or without it (Rule 3)."""
        if self.clock() < self._retry_at:
            return self._without_redis(key, rate)
        digest = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
        mine = _Take(key, self.key_prefix + digest, rate)
        self._queue.append(mine)
        if self._sending:
            try:
                await mine.done.wait()
            except BaseException:
                mine.abandoned = True
                if mine in self._queue:  # not sent: nobody needs it any more
                    self._queue.remove(mine)
                    if mine.done.is_set():  # it was to send the next batch: the next one does
                        self._hand_on()
                raise
            if mine.decision is not None:
                return mine.decision
            # The batch before has come back and this take is the first of the next: send it.
        self._sending = True
        await self._send()
        assert mine.decision is not None
        return mine.decision

    async def _send(self) -> None:
        """Send the queue's first `BATCH` takes, the caller's own first (Rule 2).

        However it ends, each take sent gets its decision, and the next batch its sender.
        """
        batch = self._queue[:BATCH]
        del self._queue[:BATCH]
        keys = [take.redis_key for take in batch]
        args: list[float] = []
        for take in batch:
            args += (take.rate.per_second, take.rate.capacity)

        def command(client: Redis) -> Any:
            return self._take_script(client)(keys=keys, args=args, client=client)

        answers: list[Any] | None = None
        # Redis failed while these waited: not tried again before its time (Rule 3).
        unreachable = self.clock() < self._retry_at
        try:
            if not unreachable:
                answers = await self._redis.run(command)
        except redis_errors() as exc:
            unreachable = True
            self._unreachable(exc)
        finally:
            if answers is None and not unreachable:
                # Cancelled before it went (a thread, once it runs, is not): the others go in
                # the next batch.
                self._queue[:0] = [take for take in batch[1:] if not take.abandoned]
                batch = []
            for n, take in enumerate(batch):
                if answers is None:
                    take.decision = self._without_redis(take.key, take.rate)
                else:
                    taken, wait, left = answers[3 * n : 3 * n + 3]
                    take.decision = RateDecision(bool(taken), float(wait), float(left))
                take.done.set()
            self._hand_on()
        if answers is not None and self._warned_at is not None:
            self._warned_at = None
            logger.warning("rate limits: Redis at %s answers again", safe_url(self.url))

    def _hand_on(self) -> None:
        """Wake the first take waiting, to send the next batch; or no batch is under way."""
        if self._queue:
            self._queue[0].done.set()  # with no decision: it sends
        else:
            self._sending = False

    async def aclose(self) -> None:
        """Close the connection to Redis (the next take opens another)."""
        await self._redis.aclose()

    def _take_script(self, client: Redis) -> Any:
        if self._script is None:
            self._script = client.register_script(_TAKE)
        return self._script

    def _without_redis(self, key: str, rate: Rate) -> RateDecision:
        if self.fail_open:
            return self.local.take_now(key, rate)
        return RateDecision(False, max(0.0, self._retry_at - self.clock()), 0.0, unavailable=True)

    def _unreachable(self, exc: Exception) -> None:
        now = self.clock()
        self._retry_at = now + RETRY_SECONDS
        if self._warned_at is not None and now - self._warned_at < WARN_EVERY:
            return
        self._warned_at = now
        logger.warning(
            "rate limits: Redis at %s cannot be reached (%s); %s until it answers",
            safe_url(self.url),
            exc,
            "each worker limits alone"
            if self.fail_open
            else "every limited request is refused (fail_open=False)",
        )
