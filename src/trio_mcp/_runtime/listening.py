"""`subscriptions/listen` (2026-07-28): the server's open notification streams.

A listen is a request that stays in flight: it runs in its request's task and cancel scope
like any other (over a channel it counts against the connection's in-flight limit; Streamable
HTTP bounds listen streams apart from requests, `transports/http/streamable` Rule 4), and its
answer's stream is the subscription: over Streamable HTTP the POST's SSE stream, over a channel
(stdio, memory) the connection, each message tagged with the subscription's id. List changes
reach a listener from the hub's list watcher (`SessionHub.watch_lists`, one per listener),
resource updates from `Listening.resource_updated`, task states from `Listening.task_status`.

Rule 1: a stream sends `notifications/subscriptions/acknowledged` first, naming what the server
        granted (`SubscriptionFilter.granted`), and after it only the notifications that
        filter asks for.
Rule 2: the client ends it by cancelling its request (`notifications/cancelled`, or closing its
        HTTP stream), and it is then answered nothing. The server ends it when its
        connection's input ends (a cancellation too), or when it shuts down (`Listening.close`:
        what is queued goes out first, then a plain result: spec 2026-07-28, Subscriptions:
        Graceful Closure). However it ends, it leaves `Listening`.
Rule 3: nothing waits on a listener that does not read: telling one only queues. A
        notification already queued and unsent is not queued twice (the client re-reads
        either way), a task's newer state takes the place of the one queued, and the queue is
        bounded in bytes (`max_bytes`): past it the oldest are dropped and the server logs a
        warning once per episode (the stream may carry only what the client asked for).
Rule 4: a stream belongs to the principal of its request's verified token (`_core/auth`
        Rule 3), and hears the states of only that principal's tasks and of tasks that belong
        to no one (`_features/tasks` Rule 5): another's task is, for it, a task id that does
        not exist.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Iterator
from typing import Any, Final, NoReturn

import trio

from .._core.auth import AuthInfo, Principal, principal_of
from .._core.jsonrpc import RequestId
from .._core.subscriptions import (
    ACKNOWLEDGED,
    RESOURCE_UPDATED,
    TASK_STATUS,
    SubscriptionFilter,
    tagged,
)
from .._features.context import NotificationSender
from .hub import SessionHub

__all__ = ["LISTEN_QUEUE_BYTES", "Listener", "Listening"]

logger = logging.getLogger("trio_mcp")

#: Bytes of notifications one listener may have queued and unsent (Rule 3).
LISTEN_QUEUE_BYTES: Final = 1 << 20


class Listener:
    """One open listen stream: its filter and its bounded queue (Rule 3).

    It is a `LiveSession` as the hub's list watcher sees one: it can always be told, and
    telling it only queues what its filter wants.

    Args:
        subscription_id: The id of the request that opened it.
        notifications: What the server granted.
        max_bytes: The bound of its queue, in bytes of JSON.
        principal: Whose stream it is (Rule 4); None: no token was verified.
    """

    def __init__(
        self,
        subscription_id: RequestId,
        notifications: SubscriptionFilter,
        max_bytes: int,
        principal: Principal | None = None,
    ) -> None:
        self.subscription_id = subscription_id
        self.principal = principal
        self.notifications = notifications
        self.max_bytes = max_bytes
        # [key, size, method, params], oldest first; `_keys` are the entries queued, by key.
        self._queue: deque[list[Any]] = deque()
        self._keys: dict[tuple[str, str | None], list[Any]] = {}
        #: Bytes queued now.
        self.queued_bytes = 0
        #: Notifications dropped unsent since the stream opened.
        self.dropped = 0
        self._dropping = False  # in an episode of drops: warned already
        self._finished = False  # the server closes it once what is queued has gone out
        self._ready = trio.Event()
        self._ended = False
        self._emptied = trio.Event()  # set (and replaced) when the queue empties or it ends

    @property
    def can_notify(self) -> bool:
        """Always: a notification is only queued."""
        return True

    @property
    def wants_list_changes(self) -> bool:
        """Always: the filter says which kinds."""
        return True

    def subscribed(self, uri: str) -> bool:
        """Whether updates of `uri` go on this stream."""
        return uri in self.notifications.uris

    def follows_task(self, task_id: str) -> bool:
        """Whether the status changes of the task go on this stream."""
        return task_id in self.notifications.task_ids

    def forget_task(self, task_id: str) -> None:
        """Nothing: the filter stays what was granted."""

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Queue a notification if the filter wants it (for the hub's list watcher)."""
        self.offer(method, params)

    def offer(self, method: str, params: dict[str, Any] | None = None) -> bool:
        """Queue a notification if the filter wants it; whether it does (Rule 3)."""
        if not self.notifications.wants(method, params):
            return False
        name = params.get("taskId" if method == TASK_STATUS else "uri") if params else None
        key = (method, name if isinstance(name, str) else None)
        queued = self._keys.get(key)
        if queued is not None and method != TASK_STATUS:
            return True  # the one queued says the same
        message = tagged(params, self.subscription_id)
        size = len(method) + len(json.dumps(message, separators=(",", ":")))
        if queued is not None:  # a task's newer state, in the place of the one queued
            self.queued_bytes += size - queued[1]
            queued[1], queued[3] = size, message
        else:
            entry = [key, size, method, message]
            self._queue.append(entry)
            self._keys[key] = entry
            self.queued_bytes += size
        while self.queued_bytes > self.max_bytes and len(self._queue) > 1:
            old_key, old_size, _, _ = self._queue.popleft()
            del self._keys[old_key]
            self.queued_bytes -= old_size
            self.dropped += 1
            if not self._dropping:
                self._dropping = True
                logger.warning(
                    "subscriptions/listen %r: the client is not reading; dropping the oldest "
                    "notifications past %d bytes",
                    self.subscription_id,
                    self.max_bytes,
                )
        self._ready.set()
        return True

    async def sent_all(self) -> None:
        """Wait until what is queued now has gone out, or the stream has ended."""
        while self._queue and not self._ended:
            await self._emptied.wait()

    def ended(self) -> None:
        """The stream is over (`Listening` says so): nothing queued will go out any more."""
        self._ended = True
        self._emptied.set()

    @property
    def finishing(self) -> bool:
        """Whether the server closes it once what is queued has gone out (`finish`)."""
        return self._finished

    def finish(self) -> None:
        """Let the stream end once what is queued has gone out (the server closes it)."""
        self._finished = True
        self._ready.set()

    async def deliver(self, send: NotificationSender) -> None:
        """Send what is queued, oldest first, as the client reads it.

        Until cancelled, or until nothing is left once `finish` was called.
        """
        while True:
            if not self._queue:
                self._emptied.set()
                self._emptied = trio.Event()
                if self._finished:
                    return
                self._dropping = False  # the client caught up
                self._ready = trio.Event()
                await self._ready.wait()
                continue
            key, size, method, message = self._queue.popleft()
            del self._keys[key]
            self.queued_bytes -= size
            await send(method, message)


class Listening:
    """The listen streams of one server that are open now, in the order they opened.

    Args:
        hub: The server's hub, whose list watcher tells each listener of list changes.
        max_bytes: The bound of each listener's queue (Rule 3).
    """

    def __init__(self, hub: SessionHub, max_bytes: int = LISTEN_QUEUE_BYTES) -> None:
        self.hub = hub
        self.max_bytes = max_bytes
        self._live: dict[Listener, None] = {}
        self._left = trio.Event()  # set (and replaced) whenever a stream ends

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[Listener]:
        return iter(list(self._live))

    async def listen(
        self,
        subscription_id: RequestId,
        granted: SubscriptionFilter,
        send: NotificationSender,
        auth: AuthInfo | None = None,
    ) -> None:
        """Serve one listen stream until its request is cancelled or `close` ends it.

        It returns only in the second case, and the request is then answered (Rule 2).

        Args:
            subscription_id: The id of the `subscriptions/listen` request.
            granted: What the server honours of the request's filter.
            send: Where the stream's messages go (the request's notifications).
            auth: The request's verified token: whose tasks it may hear of (Rule 4).
        """
        listener = Listener(subscription_id, granted, self.max_bytes, principal_of(auth))
        self._live[listener] = None
        try:
            async with trio.open_nursery() as nursery:
                if granted.lists:
                    # Counting from here: a change made once the client holds the
                    # acknowledgement must reach it.
                    await nursery.start(self._watch, listener)
                await send(
                    ACKNOWLEDGED,
                    tagged({"notifications": granted.wire()}, subscription_id),
                )
                await listener.deliver(send)
                nursery.cancel_scope.cancel()  # the list watcher
        finally:
            del self._live[listener]
            listener.ended()
            self._left.set()
            self._left = trio.Event()

    def close(self) -> int:
        """End every stream open now, once what it has queued has gone out (Rule 2).

        For the server's shutdown; streams opened afterwards are not affected.

        Returns:
            How many streams were told to end.
        """
        listeners = list(self._live)
        for listener in listeners:
            listener.finish()
        return len(listeners)

    async def sent_all(self) -> None:
        """Wait until every open stream has sent what it has queued now (or has ended)."""
        for listener in list(self._live):
            await listener.sent_all()

    async def wait_closed(self) -> None:
        """Wait until every stream `close` ended has sent what it had queued and ended."""
        while any(listener.finishing for listener in self._live):
            await self._left.wait()

    async def _watch(
        self, listener: Listener, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        task_status.started()
        # No checkpoint before the watcher has read the counters it compares against.
        await self.hub.watch_lists(listener)

    def resource_updated(self, uri: str) -> int:
        """Queue `notifications/resources/updated` on every stream that asked for `uri`.

        Returns:
            How many streams it was queued on.
        """
        return sum(listener.offer(RESOURCE_UPDATED, {"uri": uri}) for listener in list(self._live))

    def task_status(self, task: dict[str, Any], principal: Principal | None = None) -> int:
        """Queue `notifications/tasks` (a task's new state) on every stream that asked for it.

        Args:
            task: The task's state, as `tasks/get` shows it.
            principal: Whose task it is: only that principal's streams hear of it (Rule 4);
                None, anyone's.

        Returns:
            How many streams it was queued on.
        """
        return sum(
            listener.offer(TASK_STATUS, task)
            for listener in list(self._live)
            if principal is None or listener.principal == principal
        )
