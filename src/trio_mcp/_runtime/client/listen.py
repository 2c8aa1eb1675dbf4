"""The client's `subscriptions/listen` stream (2026-07-28): opened, told apart, reopened.

Under 2026-07-28 the client's callbacks (`_runtime/client/subscriptions`: list changes,
resource updates) and the tasks it follows (`_runtime/client/tasks`) are served by one stream
that asks for what they want and the server announces, over any link (`Listening`: opened when
they first want something, opened anew when what they want changes).

Rule 1: one stream at a time carries what the client's callbacks want (`wanted`: the kinds of
        list with a change handler, the URIs subscribed to, as far as the server announces
        them). None is open while nothing is wanted. When what is wanted changes, a new stream
        is opened with the new filter and the old one is closed (cancelled) only once the new
        one is acknowledged, so nothing sent meanwhile is missed.
Rule 2: a stream is told apart by the id of its request, which every message on it carries
        (`_meta`, `SUBSCRIPTION_ID`). Its `notifications/subscriptions/acknowledged` makes it
        the current stream, with what the server granted; a notification tagged with another
        id (a stream being replaced, one of another client of the same connection) is not
        delivered. Untagged notifications are the handshake era's and always delivered.
Rule 3: a stream that ends, broken or closed by the server (a plain result: graceful closure),
        is opened again after a wait that grows with the failures in a row, with jitter, and
        is never zero. A stream that was acknowledged and then carried a notification or stayed
        open `STEADY` seconds starts the count again; `ATTEMPTS` failures in a row (a stream
        that ends before its acknowledgement, or soon after it having carried nothing) give
        up, with a warning, until what is wanted changes. A server that refuses the request
        (a JSON-RPC error) is not asked again for the same filter. Nothing of this is raised
        into the client's nursery: `settled` tells a caller who waits for the stream.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from ..._core.jsonrpc import RequestId
from ..._core.meta import SUBSCRIPTION_ID
from ..._core.subscriptions import ACKNOWLEDGED, LISTEN, SubscriptionFilter
from ..._exceptions import ConnectionClosed, RemoteProtocolError, RequestError, TrioMCPError
from .connection import ServerConnection

__all__ = [
    "ATTEMPTS",
    "FIRST_WAIT",
    "MAX_WAIT",
    "STEADY",
    "ListenStream",
    "Listening",
    "subscription_of",
]

logger = logging.getLogger("trio_mcp.client")

#: Failures in a row after which the stream is given up (Rule 3).
ATTEMPTS: Final = 5
#: Seconds of the first wait before a stream is opened again; each failure doubles it.
FIRST_WAIT: Final = 1.0
#: The longest wait between two openings, in seconds.
MAX_WAIT: Final = 30.0
#: Seconds an acknowledged stream stays open to count as a success though it carried nothing.
STEADY: Final = 30.0

#: Sends `subscriptions/listen` with these params, calling back with the request's id once it
#: has one, and returns its result when the server ends the stream gracefully.
Listen = Callable[[dict[str, Any], Callable[[RequestId], None]], Awaitable[Any]]


def subscription_of(params: Any) -> RequestId | None:
    """The listen request a notification's params say it belongs to, if any (Rule 2)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    value = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


@dataclass(eq=False)
class _Stream:
    notifications: SubscriptionFilter
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    id: RequestId | None = None
    granted: SubscriptionFilter | None = None
    acknowledged_at: float = math.inf
    carried: bool = False
    error: BaseException | None = None
    done: bool = False


class ListenStream:
    """The listen stream of one client (Rules 1 to 3).

    Args:
        listen: Sends one `subscriptions/listen` request (`Listen`).
        wanted: What the client's callbacks want now.
        closed: Whether the client's connection has ended.
    """

    def __init__(
        self,
        listen: Listen,
        wanted: Callable[[], SubscriptionFilter],
        closed: Callable[[], bool],
    ) -> None:
        self._listen = listen
        self._wanted = wanted
        self._closed = closed
        self._current: _Stream | None = None
        self._opening: _Stream | None = None
        self._streams: dict[RequestId, _Stream] = {}
        self._closing: set[_Stream] = set()  # dropped, and not yet ended
        self._failures = 0
        self._not_before = -math.inf
        # A filter not to ask for again, and why (refused, or given up on).
        self._refused: tuple[SubscriptionFilter, TrioMCPError] | None = None
        self._wake = trio.Event()  # the supervisor has something to look at
        self._changed = trio.Event()  # the current stream or the refusal changed

    # -- what the client tells ----------------------------------------------------------------

    def poke(self) -> None:
        """What is wanted may have changed."""
        self._wake.set()

    def acknowledged(self, params: Any) -> None:
        """Take a `notifications/subscriptions/acknowledged` (Rule 2)."""
        subscription_id = subscription_of(params)
        stream = self._streams.get(subscription_id) if subscription_id is not None else None
        if stream is None or stream is not self._opening:
            logger.debug("ignored the acknowledgement of no listen being opened")
            return
        notifications = params.get("notifications") if isinstance(params, dict) else None
        try:
            granted = SubscriptionFilter.parse({"notifications": notifications})
        except RemoteProtocolError as exc:
            logger.warning("the server acknowledged subscriptions/listen malformed: %s", exc)
            granted = SubscriptionFilter()
        if granted != stream.notifications:
            logger.info(
                "the server grants %s of the subscriptions asked for (%s)",
                granted.wire() or "none",
                stream.notifications.wire(),
            )
        stream.granted = granted
        stream.acknowledged_at = trio.current_time()
        old, self._current, self._opening = self._current, stream, None
        if old is not None:
            self._drop(old)
        self._refused = None
        self._set_changed()

    def delivers(self, subscription_id: RequestId | None) -> bool:
        """Whether a notification tagged so goes to the callbacks (Rule 2)."""
        if subscription_id is None:
            return True
        current = self._current
        if current is None or current.id != subscription_id:
            return False
        current.carried = True
        return True

    async def settled(self) -> SubscriptionFilter:
        """Wait until a stream with what is wanted now is acknowledged; what it granted.

        Streams it replaced have ended by then; when nothing is wanted, it waits for the
        stream to end and returns an empty filter.

        Raises:
            TrioMCPError: why no stream for it will be: the server refused it, or it was
                given up on (Rule 3).
        """
        while True:
            wanted = self._wanted()
            current = self._current
            if not self._closing:
                if current is not None and current.notifications == wanted:
                    assert current.granted is not None
                    return current.granted
                if current is None and self._opening is None and wanted.empty:
                    return wanted
            if self._refused is not None and self._refused[0] == wanted:
                raise self._refused[1]
            if self._closed():
                raise ConnectionClosed("the connection ended")
            self._wake.set()
            await self._changed.wait()

    # -- the supervisor ------------------------------------------------------------------------

    async def run(self) -> None:
        """Open, replace and reopen the stream as Rules 1 and 3 say, until cancelled."""
        async with trio.open_nursery() as nursery:
            while not self._closed():
                self._wake = trio.Event()
                wanted = self._wanted()
                if self._refused is not None and self._refused[0] != wanted:
                    self._refused = None
                    self._failures = 0
                    self._not_before = -math.inf
                opening = self._opening
                if opening is not None and opening.notifications != wanted:
                    self._drop(opening)
                    opening = None
                current = self._current
                if wanted.empty:
                    if current is not None:
                        self._drop(current)
                        self._set_changed()
                elif (
                    opening is None
                    and (current is None or current.notifications != wanted)
                    and self._refused is None
                ):
                    if trio.current_time() < self._not_before:
                        with trio.move_on_at(self._not_before):
                            await self._wake.wait()
                        continue
                    self._opening = stream = _Stream(wanted)
                    nursery.start_soon(self._run_stream, stream)
                await self._wake.wait()
            nursery.cancel_scope.cancel()

    def _drop(self, stream: _Stream) -> None:
        # Closed by the client: not a failure, and its messages no longer count.
        stream.scope.cancel()
        if not stream.done:
            self._closing.add(stream)
        if stream.id is not None:
            self._streams.pop(stream.id, None)
        if self._current is stream:
            self._current = None
        if self._opening is stream:
            self._opening = None

    def _identify(self, stream: _Stream, request_id: RequestId) -> None:
        stream.id = request_id
        if not stream.scope.cancel_called:
            self._streams[request_id] = stream

    async def _run_stream(self, stream: _Stream) -> None:
        with stream.scope:
            try:
                await self._listen(
                    {"notifications": stream.notifications.wire()},
                    lambda request_id: self._identify(stream, request_id),
                )
                logger.info("the server closed the subscriptions/listen stream")
            except TrioMCPError as exc:
                stream.error = exc
                if not self._closed():
                    logger.info("the subscriptions/listen stream ended: %s", exc)
            except Exception as exc:  # never into the client's nursery (Rule 3)
                stream.error = exc
                logger.warning("the subscriptions/listen stream failed", exc_info=True)
        stream.done = True
        if stream.id is not None:
            self._streams.pop(stream.id, None)
        if stream in self._closing:
            self._closing.discard(stream)
            self._set_changed()
        self._ended(stream)

    def _ended(self, stream: _Stream) -> None:
        # Rule 3: decide what follows a stream that ended on its own.
        if stream is not self._current and stream is not self._opening:
            return  # dropped by the client
        self._current = None if stream is self._current else self._current
        self._opening = None if stream is self._opening else self._opening
        if isinstance(stream.error, RequestError):
            logger.warning("the server refused subscriptions/listen: %s", stream.error)
            self._refused = (stream.notifications, stream.error)
        else:
            now = trio.current_time()
            if stream.carried or now - stream.acknowledged_at >= STEADY:
                self._failures = 0
            else:
                self._failures += 1
            if self._failures >= ATTEMPTS:
                logger.warning(
                    "gave up on subscriptions/listen after %d attempt(s): %s",
                    self._failures,
                    stream.error or "the server kept closing it",
                )
                self._refused = (
                    stream.notifications,
                    ConnectionClosed(
                        f"subscriptions/listen failed {self._failures} times in a row"
                        + (f" (last: {stream.error})" if stream.error else "")
                    ),
                )
            else:
                limit = min(MAX_WAIT, FIRST_WAIT * 2**self._failures)
                wait = limit / 2 + random.uniform(0, limit / 2)
                self._not_before = now + wait
                logger.debug("opening subscriptions/listen again in %.2f s", wait)
        self._set_changed()
        self._wake.set()

    def _set_changed(self) -> None:
        self._changed.set()
        self._changed = trio.Event()


class Listening:
    """A client's listen stream, from the first time something wants it (2026-07-28).

    Args:
        connection: The client's connection: the stream's request and its acknowledgement.
        wanted: What the callbacks and the tasks followed want now, as far as the server
            announces it.
    """

    def __init__(
        self, connection: ServerConnection, wanted: Callable[[], SubscriptionFilter]
    ) -> None:
        self._connection = connection
        self._wanted = wanted
        self._stream: ListenStream | None = None
        connection.notices[ACKNOWLEDGED] = self._acknowledged

    @property
    def opened(self) -> bool:
        """Whether the stream was ever wanted (its supervisor runs)."""
        return self._stream is not None

    def changed(self) -> ListenStream:
        """What is wanted may have changed: open the stream, or open it anew (Rule 1)."""
        if self._stream is None:
            connection = self._connection
            self._stream = ListenStream(
                self._listen, self._wanted, lambda: connection.closed is not None
            )
            if connection.nursery is not None:
                connection.nursery.start_soon(self._stream.run)
        self._stream.poke()
        return self._stream

    def poke(self) -> None:
        """What is wanted may have changed; nothing opens a stream never wanted before."""
        if self._stream is not None:
            self._stream.poke()

    def delivers(self, tag: RequestId | None) -> bool:
        """Whether a notification tagged with `tag` goes to the callbacks (Rule 2).

        Before any stream was wanted, all do: there is nothing to tell them apart from.
        """
        return tag is None or self._stream is None or self._stream.delivers(tag)

    async def settled(self) -> SubscriptionFilter:
        """`ListenStream.settled` of the stream, which was wanted before (`opened`)."""
        assert self._stream is not None
        return await self._stream.settled()

    def _acknowledged(self, params: dict[str, Any]) -> None:
        if self._stream is not None:
            self._stream.acknowledged(params)

    async def _listen(self, params: dict[str, Any], on_id: Callable[[RequestId], None]) -> Any:
        # Not retry_safe: a broken stream is the supervisor's to reopen, at its own pace.
        return await self._connection.request(LISTEN, params, on_id=on_id)
