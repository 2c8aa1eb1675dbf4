"""A Streamable HTTP session's server-to-client stream: what `GET` at the endpoint carries.

A session in the table has one `Outbox`: the messages of the server's that belong to no request
being answered (list changes, resource updates, log messages outside a call, requests to the
client outside a call) wait in it, encoded, until the session's `GET` stream takes them, one
stream at a time: a stream that starts (`listen`) ends the one before it, whose `next` then
returns None. Nothing here knows MCP beyond the shape of a JSON-RPC message (a request has an
`id`).

Rule 1: the queue is bounded in bytes (`HttpOptions.max_unsent_bytes`): past the bound the
        oldest notifications are dropped, and the next stream opens with a warning log
        message saying how many. A request to the client is never dropped: when it cannot be
        queued even after every notification has gone, `put` raises `ConnectionClosed`, which
        the asking task sees.
Rule 2: the session's own tasks (its list watcher, its roots handler) run in the application's
        nursery (`spawner`), each under a cancel scope of its own that `close` cancels: they
        end with the session. Their exceptions are logged, never raised into that nursery.
Rule 3: `close` (the session ended) ends the stream being read at once, and `hang_up` (the
        server is shutting down) once it has taken what was queued (a task's end, told as the
        server stops): `next` then returns None and the stream ends as an HTTP response should.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ..._exceptions import ConnectionClosed
from .asgi import encode

__all__ = ["Outbox", "Spawn"]

logger = logging.getLogger("trio_mcp.http")

#: Starts a task that lives as long as the session (or until the application stops).
Spawn = Callable[[Callable[[], Awaitable[None]]], None]


class Outbox:
    """The queue of a session's server-to-client stream (Rule 1).

    Args:
        max_bytes: The bound of the queue, in bytes of encoded messages.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        # (encoded message, whether it is a request to the client), oldest first.
        self._queue: collections.deque[tuple[bytes, bool]] = collections.deque()
        self._bytes = 0
        #: Notifications dropped since a stream last said so.
        self.dropped = 0
        # GET streams being served now (the one reading, and one being replaced), and the
        # number of the last one to start: only that one is read to.
        self._listeners = 0
        self._generation = 0
        self.closed = False
        self._hung_up = False
        self._wake = trio.Event()
        self._tasks: set[trio.CancelScope] = set()

    @property
    def listening(self) -> bool:
        """Whether a GET stream is open."""
        return self._listeners > 0

    def listen(self) -> int:
        """A GET stream starts: the one before it ends. Returns its number for `next`."""
        self._listeners += 1
        self._generation += 1
        self._wake.set()
        return self._generation

    def unlisten(self) -> None:
        """A GET stream has ended."""
        self._listeners -= 1

    @property
    def queued_bytes(self) -> int:
        """Bytes of messages waiting for a stream."""
        return self._bytes

    async def put(self, message: dict[str, Any]) -> None:
        """Queue a message of the server's for the session's stream (Rule 1).

        Raises:
            ConnectionClosed: for a request to the client, when the session has ended or the
                request does not fit in the queue (a notification is dropped then).
        """
        await trio.lowlevel.checkpoint()
        method = message.get("method")
        request = "id" in message
        if self.closed:
            if not request:
                return  # a notification for a session that just ended: nobody to tell
            raise ConnectionClosed(f"cannot send {method!r} to the client: the session ended")
        frame = encode(message)
        size = len(frame)
        while self._bytes + size > self.max_bytes and self._drop_oldest_notification():
            pass
        if self._bytes + size > self.max_bytes:
            if request:
                raise ConnectionClosed(
                    f"cannot send {method!r} to the client: {self._bytes} bytes of requests "
                    f"already wait for the session's GET stream, and the queue holds at most "
                    f"{self.max_bytes} (HttpOptions.max_unsent_bytes); the client is not "
                    "listening"
                )
            self.dropped += 1
            logger.debug("dropped %s: the session's stream queue is full", method)
            return
        self._queue.append((frame, request))
        self._bytes += size
        self._wake.set()

    def _drop_oldest_notification(self) -> bool:
        for i, (frame, request) in enumerate(self._queue):
            if not request:
                del self._queue[i]
                self._bytes -= len(frame)
                self.dropped += 1
                return True
        return False

    async def next(self, stream: int) -> bytes | None:
        """The oldest queued message, taken off the queue; None once `stream` must end."""
        while not self._queue and not self._ended(stream):
            self._wake = trio.Event()
            await self._wake.wait()
        if self.closed or stream != self._generation or not self._queue:
            return None  # ended; hung up, it ends once it has taken what was queued (Rule 3)
        frame, _ = self._queue.popleft()
        self._bytes -= len(frame)
        return frame

    def _ended(self, stream: int) -> bool:
        return self.closed or self._hung_up or stream != self._generation

    def close(self) -> None:
        """The session ended: end its stream, drop what waits and cancel its tasks (Rule 3)."""
        self.closed = True
        self._queue.clear()
        self._bytes = 0
        self._wake.set()
        for scope in self._tasks:
            scope.cancel()

    def hang_up(self) -> None:
        """The server is shutting down: end the stream once read out, keep the session (Rule 3)."""
        self._hung_up = True
        self._wake.set()

    def spawner(self, nursery: trio.Nursery) -> Spawn:
        """How the session starts its tasks in `nursery` (Rule 2)."""

        def spawn(fn: Callable[[], Awaitable[None]]) -> None:
            nursery.start_soon(self._run, fn)

        return spawn

    async def _run(self, fn: Callable[[], Awaitable[None]]) -> None:
        with trio.CancelScope() as scope:
            if self.closed:
                return
            self._tasks.add(scope)
            try:
                await fn()
            except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
                logger.debug("a session task ended with its session")
            except Exception:
                logger.exception("a session task raised")
            finally:
                self._tasks.discard(scope)
