"""`RedisBroker`: the workers of a fleet share notifications over Redis pub/sub.

The `Broker` of `_runtime/broker` for a fleet, whose two rules hold here too. One channel
carries every topic, `<channel_prefix>notifications`, each message one JSON object
`{"v": 1, "from": <publisher id>, "topic": ..., "payload": ...}`; the publisher id is random
per broker object, so a worker drops what it published itself, and a message that is not such
an object is logged and dropped. redis-py's blocking client runs in threads
(`_runtime/redis_client`): a publish in a worker thread of the broker's own limiter
(`PUBLISH_THREADS`), the subscription in one dedicated thread that hands each message back to
the loop through a bounded memory channel, never blocking on it.

Redis unreachable: a publish waits at most `timeout` seconds, logs a warning (once per outage,
and once more when Redis answers again) and returns; the publishes that follow within the
backoff (`min_backoff` doubling up to `max_backoff`) are dropped without trying, so a tool
that publishes does not wait a timeout per call through an outage. The subscription thread
logs the same way and reconnects with the same backoff. Redis pub/sub keeps nothing: what was
published while Redis or a worker's subscription was down never reaches that worker.

Shutdown: cancelling `serve` stops the subscription thread and waits for it (it looks for the
stop every `POLL_SECONDS`, or as soon as a connection attempt under way ends), so no thread
outlives the server to hold up the process's exit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

import trio

from .broker import BROKER_QUEUE, Deliver, queued
from .redis_client import RedisConnection, redis_errors, require_redis
from .redis_client import safe_url as _safe

__all__ = ["POLL_SECONDS", "PUBLISH_THREADS", "RedisBroker"]

logger = logging.getLogger("trio_mcp")

#: How often the subscription thread looks for a stop while no message comes: the longest
#: a server's shutdown waits for it.
POLL_SECONDS: Final = 0.25
#: Publishes under way at once, each in a worker thread: a burst of updates must not take the
#: threads that sync tools run in (trio's default limiter, 40).
PUBLISH_THREADS: Final = 4

_Message = tuple[str, dict[str, Any]]


class RedisBroker:
    """A broker over Redis pub/sub, for the workers of a fleet (`_runtime/broker` Rules 1, 2).

    Give each worker's `Server` a `RedisBroker` on the same Redis and prefix:
    `Server(..., broker=RedisBroker("redis://redis.internal:6379/0"))`. It needs the `redis`
    package (`pip install "trio-mcp[redis]"`); creating one connects to nothing.

    Args:
        url: The Redis server, as redis-py's `Redis.from_url` takes it (redis://, rediss://,
            unix://; a password in the URL).
        channel_prefix: Starts the name of the channel; fleets sharing one Redis use different
            prefixes.
        timeout: Seconds a connection attempt, a publish or a read may take before Redis is
            taken to be unreachable.
        min_backoff: Seconds before the first reconnection attempt of the subscription.
        max_backoff: The longest wait between reconnection attempts.
        max_queue: Messages received and not yet delivered (`_runtime/broker` Rule 2).

    Raises:
        RuntimeError: when the `redis` package is not installed.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        channel_prefix: str = "trio-mcp:",
        timeout: float = 2.0,
        min_backoff: float = 0.1,
        max_backoff: float = 5.0,
        max_queue: int = BROKER_QUEUE,
    ) -> None:
        require_redis("RedisBroker")
        if not 0 < min_backoff <= max_backoff:
            raise ValueError("backoff must be 0 < min_backoff <= max_backoff")
        self.url = url
        self.channel = channel_prefix + "notifications"
        self.timeout = timeout
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.max_queue = max_queue
        #: Names this broker's messages, so that it drops its own.
        self.origin = secrets.token_hex(8)
        self._redis = RedisConnection(url, timeout=timeout, threads=PUBLISH_THREADS)
        self._publish_failing = False
        self._publish_delay = min_backoff
        self._publish_retry_at = 0.0  # trio.current_time() before which a publish is dropped
        self._dropping = False

    def __repr__(self) -> str:
        return f"RedisBroker({_safe(self.url)!r}, channel={self.channel!r})"

    # -- publishing -------------------------------------------------------------------------

    async def publish(self, topic: str, payload: Mapping[str, Any]) -> None:
        """Publish to the other workers; log, never raise, when Redis cannot be reached."""
        if self._publish_failing and trio.current_time() < self._publish_retry_at:
            return  # down a moment ago: not worth a timeout of this caller's
        data = json.dumps(
            {"v": 1, "from": self.origin, "topic": topic, "payload": dict(payload)},
            separators=(",", ":"),
        )
        error = await trio.to_thread.run_sync(
            self._publish_blocking, data, limiter=self._redis.limiter
        )
        if error is not None:
            if self._publish_failing:
                self._publish_delay = min(self._publish_delay * 2, self.max_backoff)
            else:
                self._publish_delay = self.min_backoff
            self._publish_retry_at = trio.current_time() + self._publish_delay
            if not self._publish_failing:
                self._publish_failing = True
                logger.warning(
                    "broker: cannot publish to Redis at %s (%s); the other workers miss "
                    "notifications until it answers",
                    _safe(self.url),
                    error,
                )
        elif self._publish_failing:
            self._publish_failing = False
            logger.warning("broker: publishing to Redis at %s again", _safe(self.url))

    def _publish_blocking(self, data: str) -> Exception | None:
        try:
            self._redis.shared().publish(self.channel, data)
        except redis_errors() as exc:
            return exc
        return None

    # -- subscribing ------------------------------------------------------------------------

    async def serve(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Deliver what other workers publish until cancelled, then stop the thread and wait for it.

        Reports started at once: the subscription connects (and reconnects) in its thread.
        """
        send, receive = trio.open_memory_channel[_Message](self.max_queue)
        stop = threading.Event()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._subscribe, send, stop)
                nursery.start_soon(_set_when_cancelled, stop)
                task_status.started()
                async with receive:
                    async for topic, payload in receive:
                        await deliver(topic, payload)
        finally:
            stop.set()
            with trio.CancelScope(shield=True):  # the client is shared with publishing threads
                await trio.to_thread.run_sync(self._redis.close)

    async def _subscribe(
        self, send: trio.MemorySendChannel[_Message], stop: threading.Event
    ) -> None:
        token = trio.lowlevel.current_trio_token()

        def hand(message: _Message) -> None:  # on the loop's thread
            try:
                self._dropping = queued(send, message, self._dropping, "workers")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                stop.set()  # `serve` is ending: nothing takes messages any more

        def handed(message: _Message) -> None:  # in the subscription thread
            trio.from_thread.run_sync(hand, message, trio_token=token)

        # Not abandoned on cancellation: `stop` ends the thread soon, and it is waited for.
        await trio.to_thread.run_sync(
            self._listen_blocking, stop, handed, limiter=trio.CapacityLimiter(1)
        )

    def _listen_blocking(self, stop: threading.Event, handed: Callable[[_Message], None]) -> None:
        errors = redis_errors()
        delay = self.min_backoff
        failing = False

        def subscribed() -> None:
            nonlocal delay, failing
            if failing:
                failing = False
                logger.warning("broker: subscribed to Redis at %s again", _safe(self.url))
            delay = self.min_backoff

        while not stop.is_set():
            try:
                self._listen_once(stop, handed, subscribed)
            except errors as exc:
                if not failing:
                    failing = True
                    logger.warning(
                        "broker: no subscription to Redis at %s (%s); retrying with backoff "
                        "up to %gs",
                        _safe(self.url),
                        exc,
                        self.max_backoff,
                    )
                else:
                    logger.debug("broker: Redis at %s still unreachable: %s", _safe(self.url), exc)
                stop.wait(delay)
                delay = min(delay * 2, self.max_backoff)
            except trio.RunFinishedError:  # the loop is gone: nobody to hand to
                return

    def _listen_once(
        self,
        stop: threading.Event,
        handed: Callable[[_Message], None],
        subscribed: Callable[[], None],
    ) -> None:
        # Pings an idle connection now and then: a silent network loss is noticed too.
        client = self._redis.connect(health_check_interval=30)
        pubsub: Any = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        try:
            pubsub.subscribe(self.channel)
            subscribed()
            while not stop.is_set():
                message = pubsub.get_message(timeout=POLL_SECONDS)
                if message is not None and message.get("type") == "message":
                    decoded = self._decode(message.get("data"))
                    if decoded is not None:
                        handed(decoded)
        finally:
            with contextlib.suppress(*redis_errors()):
                pubsub.close()
            with contextlib.suppress(*redis_errors()):
                client.close()

    def _decode(self, data: object) -> _Message | None:
        try:
            message = json.loads(data)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            message = None
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("topic"), str)
            or not isinstance(message.get("payload"), dict)
        ):
            logger.warning("broker: dropped a message that is not trio-mcp's on %s", self.channel)
            return None
        if message.get("from") == self.origin:
            return None  # published here, and delivered here already (`_runtime/broker` Rule 1)
        return message["topic"], message["payload"]


async def _set_when_cancelled(stop: threading.Event) -> None:
    try:
        await trio.sleep_forever()
    finally:
        stop.set()
