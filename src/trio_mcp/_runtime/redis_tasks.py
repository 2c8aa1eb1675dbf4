"""`RedisTaskStore`: a fleet's workers keep their tasks in one Redis, so any answers for any.

The work of a task stays on the worker that started it; what is shared is its record, so a
`tasks/get` (or `tasks/cancel`) that the balancer sends to another worker finds it there.
redis-py runs in worker threads of the store's own (`_runtime/redis_client`).

A record is one Redis string, `<key_prefix><task id>`, holding `TaskRecord.dump()` as JSON, and
its Redis expiry does the ttl: a settled record expires `ttl` seconds after it settled, as in
memory; a live one `lease + ttl` seconds after its last write, which its worker's lease renewals
repeat, so the record of a task nobody asks about after its whole fleet stopped does not stay
for ever. A task's mailbox is a Redis list beside it, `<key_prefix>mail:<task id>`, each item
one batch of answers as JSON, its expiry renewed at each post (four leases: a live worker with
questions open takes its mail every second or so).

The bound is per worker: a store counts the live tasks it added and has not seen settle, and at
`max_tasks` refuses a new one (the call runs to its end); before refusing, it reads its tasks
back once, to forget those settled elsewhere. Settled records are bounded by their ttl, and
Redis by its own `maxmemory`.

Rule 1: a settled record is final (`_features/tasks` Rule 2): `save` is one Lua script that
        writes over a live record or none (a record lost with Redis comes back at its
        worker's next write) and never over a settled one, and answers whether it wrote. A
        worker's saves of one record go one at a time, each writing the record as it is when
        its turn comes, so a lease renewal cannot land after, and undo, a change saved later.
Rule 2: each batch in a task's mailbox (`_features/tasks` Rule 4) is taken once: posting is one
        Lua script that refuses a full list (`mailbox` batches), taking one that reads and
        deletes the list, so two takers never share a batch.
Rule 3: an unreachable Redis never makes a task look unknown: each command waits at most
        `timeout` seconds, and a warning is logged once per outage (and once more when Redis
        answers again). `get` and posting raise an internal error (-32603) saying the task
        store cannot be reached, so the client learns its answers did not go; `add` answers
        False (the call runs to its end: a server may always answer at once); `save` answers
        True (nothing is known to have settled; the record is written again at its next
        change or lease renewal); taking finds nothing (the worker looks again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import trio

from .._core.jsonrpc import INTERNAL_ERROR
from .._exceptions import RemoteProtocolError
from .._features.tasks import (
    DEFAULT_LEASE,
    DEFAULT_MAILBOX,
    DEFAULT_MAX_TASKS,
    TaskRecord,
    check_lease,
)
from .redis_client import RedisConnection, redis_errors, require_redis, safe_url

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["STORE_THREADS", "RedisTaskStore"]

logger = logging.getLogger("trio_mcp")

#: Store commands under way at once, each in a worker thread (`_runtime/redis_client` Rule 1):
#: polls of many clients, renewals and settles, each one round trip.
STORE_THREADS: Final = 8

#: Rule 1: KEYS[1] the record's key; ARGV[1] the record's JSON, ARGV[2] its expiry in ms;
#: KEYS[2], for a 2025-11-25 task, its requestor's index, which must outlive it (`_INDEX`).
_SAVE: Final = """
local stored = redis.call('GET', KEYS[1])
if stored then
  local status = cjson.decode(stored)['status']
  if status == 'completed' or status == 'cancelled' or status == 'failed' then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if KEYS[2] then
  local left = redis.call('PTTL', KEYS[2])
  if left >= 0 and left < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
end
return 1
"""

#: A 2025-11-25 task's place in its requestor's index (`requested_by`), a sorted set by
#: creation time that lives as long as the longest-lived record in it (`_SAVE` renews it too).
#: KEYS[1] the index; ARGV[1] the task's creation time, ARGV[2] its id, ARGV[3] the record's
#: expiry in ms.
_INDEX: Final = """
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
"""

#: Rule 2: KEYS[1] the mailbox; ARGV[1] one batch's JSON, ARGV[2] the bound, ARGV[3] expiry ms.
_POST: Final = """
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
#: Rule 2: KEYS[1] the mailbox; every batch, oldest first, and the mailbox deleted.
_TAKE: Final = """
local batches = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return batches
"""

_T = TypeVar("_T")


class _UnreachableError(Exception):
    """Redis did not answer a command (Rule 3); the cause is redis-py's error."""


class RedisTaskStore:
    """A `TaskStore` in Redis, shared by the workers of a fleet (`_features/tasks` Rules 2, 3).

    Give each worker's `Server` one on the same Redis and prefix:
    `Server(..., task_store=RedisTaskStore("redis://redis.internal:6379/0"))`. It needs the
    `redis` package (`pip install "trio-mcp[redis]"`); creating one connects to nothing.

    Args:
        url: The Redis server, as redis-py's `Redis.from_url` takes it (redis://, rediss://,
            unix://; a password in the URL).
        key_prefix: Starts each record's key; fleets sharing one Redis use different prefixes.
        max_tasks: Live tasks this worker keeps at once.
        lease: Seconds a worker's claim on a running task lasts unless renewed: a task whose
            worker died is `failed` at most this long after (the same on every worker).
        timeout: Seconds a connection attempt or a command may take (Rule 3).
        mailbox: Batches of answers one task's mailbox holds for its worker (Rule 2).

    Raises:
        RuntimeError: when the `redis` package is not installed.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        key_prefix: str = "trio-mcp:tasks:",
        max_tasks: int = DEFAULT_MAX_TASKS,
        lease: float = DEFAULT_LEASE,
        timeout: float = 2.0,
        mailbox: int = DEFAULT_MAILBOX,
    ) -> None:
        require_redis("RedisTaskStore")
        if max_tasks < 1:
            raise ValueError("max_tasks must be positive")
        if mailbox < 1:
            raise ValueError("mailbox must be positive")
        self.mailbox = mailbox
        self.url = url
        self.key_prefix = key_prefix
        self.max_tasks = max_tasks
        self.lease = check_lease(lease)
        self._redis = RedisConnection(url, timeout=timeout, threads=STORE_THREADS)
        self._save_script: Any = None  # registered on first use, in a thread
        self._post_script: Any = None
        self._take_script: Any = None
        self._index_registered: Any = None
        #: The live tasks added here and not yet seen settled (the bound is per worker).
        self._live: set[str] = set()
        #: One lock per record being saved (Rule 1).
        self._saving: dict[str, trio.Lock] = {}
        self._failing = False

    def __repr__(self) -> str:
        return f"RedisTaskStore({safe_url(self.url)!r}, key_prefix={self.key_prefix!r})"

    @property
    def live_count(self) -> int:
        """Live tasks this worker added and has not seen settle."""
        return len(self._live)

    # -- TaskStore ----------------------------------------------------------------------------

    async def add(self, record: TaskRecord, now: float) -> bool:
        """Keep a new record; False at `max_tasks` live tasks, or when Redis is unreachable."""
        if len(self._live) >= self.max_tasks:
            await self._forget_settled()
            if len(self._live) >= self.max_tasks:
                return False
        key, data, expiry = self._key(record.task_id), _encode(record), self._expiry_ms(record)
        try:
            added = await self._call(lambda client: client.set(key, data, px=expiry, nx=True))
        except _UnreachableError:
            return False
        if not added:
            return False  # the id is taken: with 128 random bits, never
        if record.requestor is not None:
            index = self._index_key(record.requestor)
            args = [record.created_at, record.task_id, expiry]
            try:
                await self._call(
                    lambda client: self._index_script(client)(
                        keys=[index], args=args, client=client
                    )
                )
            except _UnreachableError:
                return False  # a record that no listing would show: the call runs to its end
        if not record.terminal:
            self._live.add(record.task_id)
        return True

    async def get(self, task_id: str, now: float) -> TaskRecord | None:
        """The record, or None for an unknown or expired id.

        Raises:
            RemoteProtocolError: -32603 when Redis is unreachable (Rule 3).
        """
        key = self._key(task_id)
        try:
            data = await self._call(lambda client: client.get(key))
        except _UnreachableError:
            raise RemoteProtocolError(
                "Internal error: the task store cannot be reached", INTERNAL_ERROR
            ) from None
        record = None if data is None else _decode(data, key)
        if record is None or record.terminal:
            self._live.discard(task_id)
        return record

    async def save(self, record: TaskRecord) -> bool:
        """Write the record back unless the stored one settled (Rule 1); True when unreachable."""
        lock = self._saving.setdefault(record.task_id, trio.Lock())
        try:
            async with lock:  # encoded in its turn: the record as it is now
                key, data, expiry = (
                    self._key(record.task_id),
                    _encode(record),
                    self._expiry_ms(record),
                )
                keys = [key]
                if record.requestor is not None:
                    keys.append(self._index_key(record.requestor))
                written = await self._call(
                    lambda client: self._script(client)(
                        keys=keys, args=[data, expiry], client=client
                    )
                )
        except _UnreachableError:
            return True
        finally:
            if not lock.locked():  # no save of this record waits: forget its lock
                self._saving.pop(record.task_id, None)
        if not written or record.terminal:
            self._live.discard(record.task_id)
        return bool(written)

    # -- TaskMailbox (Rule 2) -----------------------------------------------------------------

    async def post_answers(self, task_id: str, responses: dict[str, Any], now: float) -> bool:
        """Leave one batch of answers for the task's worker; False when its mailbox is full.

        Raises:
            RemoteProtocolError: -32603 when Redis is unreachable (Rule 3).
        """
        key, data = self._mail_key(task_id), json.dumps(responses, separators=(",", ":"))
        expiry = max(1, round(self.lease * 4 * 1000))
        try:
            posted = await self._call(
                lambda client: self._scripts(client)[0](
                    keys=[key], args=[data, self.mailbox, expiry], client=client
                )
            )
        except _UnreachableError:
            raise RemoteProtocolError(
                "Internal error: the task store cannot be reached", INTERNAL_ERROR
            ) from None
        return bool(posted)

    async def take_answers(self, task_id: str) -> list[dict[str, Any]]:
        """Take every batch of answers waiting for the task (none when Redis is unreachable)."""
        key = self._mail_key(task_id)
        try:
            batches = await self._call(
                lambda client: self._scripts(client)[1](keys=[key], args=[], client=client)
            )
        except _UnreachableError:
            return []
        taken = []
        for batch in batches or ():
            try:
                value = json.loads(batch)
            except ValueError:
                value = None
            if isinstance(value, dict):
                taken.append(value)
            else:
                logger.warning("task store: %s held answers that are not an object", key)
        return taken

    # -- TaskLister: the 2025-11-25 tasks/list -----------------------------------------------

    async def requested_by(self, requestor: str, now: float) -> list[TaskRecord]:
        """The requestor's tasks not expired, read through its index (`_INDEX`).

        The ids of records found expired leave the index then.

        Raises:
            RemoteProtocolError: -32603 when Redis is unreachable (Rule 4).
        """
        index = self._index_key(requestor)

        def read(client: Redis) -> tuple[list[Any], list[Any]]:
            ids: list[Any] = list(client.zrange(index, 0, -1))
            return ids, (client.mget([self._key(_text(i)) for i in ids]) if ids else [])

        try:
            ids, found = await self._call(read)
        except _UnreachableError:
            raise RemoteProtocolError(
                "Internal error: the task store cannot be reached", INTERNAL_ERROR
            ) from None
        records, gone = [], []
        for task_id, data in zip(ids, found, strict=True):
            record = None if data is None else _decode(data, self._key(_text(task_id)))
            if record is None:
                gone.append(task_id)
            elif record.requestor == requestor:
                records.append(record)
        if gone:
            with contextlib.suppress(_UnreachableError):
                await self._call(lambda client: client.zrem(index, *gone))
        return records

    # -- the rest -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the connection to Redis (the next command opens another)."""
        await self._redis.aclose()

    def _key(self, task_id: str) -> str:
        return self.key_prefix + task_id

    def _expiry_ms(self, record: TaskRecord) -> int:
        seconds = record.ttl if record.terminal else self.lease + record.ttl
        return max(1, round(seconds * 1000))

    def _mail_key(self, task_id: str) -> str:
        return f"{self.key_prefix}mail:{task_id}"

    def _index_key(self, requestor: str) -> str:
        # A digest: a requestor's key (a session's secret) never shows in Redis's key space.
        return f"{self.key_prefix}by:{hashlib.sha256(requestor.encode()).hexdigest()[:32]}"

    def _index_script(self, client: Redis) -> Any:
        if self._index_registered is None:
            self._index_registered = client.register_script(_INDEX)
        return self._index_registered

    def _scripts(self, client: Redis) -> tuple[Any, Any]:
        if self._post_script is None:
            self._post_script = client.register_script(_POST)
            self._take_script = client.register_script(_TAKE)
        return self._post_script, self._take_script

    def _script(self, client: Redis) -> Any:
        if self._save_script is None:
            self._save_script = client.register_script(_SAVE)
        return self._save_script

    async def _forget_settled(self) -> None:
        """Read this worker's live tasks back once, and forget those settled or gone."""
        ids = list(self._live)
        keys = [self._key(task_id) for task_id in ids]
        try:
            found = await self._call(lambda client: client.mget(keys))
        except _UnreachableError:
            return
        for task_id, key, data in zip(ids, keys, found, strict=True):
            record = None if data is None else _decode(data, key)
            if record is None or record.terminal:
                self._live.discard(task_id)

    async def _call(self, command: Callable[[Redis], _T]) -> _T:
        """`command` in a thread; `_UnreachableError` when Redis did not answer (Rule 3)."""

        def guarded(client: Redis) -> _T:
            try:
                return command(client)
            except redis_errors() as exc:
                raise _UnreachableError(str(exc)) from exc

        try:
            result = await self._redis.run(guarded)
        except _UnreachableError as exc:
            if not self._failing:
                self._failing = True
                logger.warning(
                    "task store: Redis at %s cannot be reached (%s); new calls run to their "
                    "end, and tasks/get fails until it answers",
                    safe_url(self.url),
                    exc,
                )
            raise
        if self._failing:
            self._failing = False
            logger.warning("task store: Redis at %s answers again", safe_url(self.url))
        return result


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _encode(record: TaskRecord) -> str:
    return json.dumps(record.dump(), separators=(",", ":"))


def _decode(data: bytes | str, key: str) -> TaskRecord | None:
    try:
        return TaskRecord.load(json.loads(data))
    except ValueError:
        logger.warning("task store: %s holds no task record of trio-mcp's; taken as unknown", key)
        return None
