"""Brokers: how a notification made on one worker reaches the sessions of the others.

A fleet is N processes ("workers") serving the same server module behind one balancer. A
client's session, or its 2026-07-28 `subscriptions/listen` stream, lives on one worker; the
change it is to hear of may be made on another. A broker carries such notifications between
the workers, by topic; `InProcessBroker` (the default) links the servers of one process, and
`RedisBroker` (`_runtime/redis_broker`) the workers of a fleet.

Four topics cross workers. `resources/updated` (`Server.resource_updated(uri)`) reaches the
subscribed sessions and listen streams of every worker; `list_changed`
(`Server.announce_list_changed(kind)`) tells every worker's sessions that a list changed;
`tasks/status`, a task's new state and whose task it is, reaches the listeners of that task on
every worker; `tasks/signal` tells the worker running a task that answers wait in its mailbox
or that it was cancelled elsewhere (`_runtime/tasks` Rule 3), and the other workers ignore it.
The registries are not shared: each worker imports the server module anew, so a registry
change is announced by its worker's list watchers to that worker's sessions only
(`_runtime/hub` Rule 3); only an explicit `announce_list_changed` crosses workers, the
application's word that the list changed everywhere.

Rule 1: each message reaches each worker once. The publishing worker tells its own sessions
        directly, before and whatever the broker does; the broker carries it to every other
        worker and never back to its publisher (a message names its publisher, and a
        subscriber drops its own); a worker that receives a message never publishes it again.
Rule 2: a broker never fails the call that publishes, and its subscription (`serve`) never
        raises into the server's nursery for the broker being down: it logs (once per outage)
        and reconnects with bounded backoff until cancelled. Notifications are hints after
        which a client reads again, so a missed one costs no more than the protocol promises.
        What reaches a worker is queued (bounded: past the bound a message is dropped, with a
        warning once per episode) and delivered in order, one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, TypeVar

import trio

__all__ = [
    "BROKER_QUEUE",
    "LIST_CHANGED",
    "RESOURCE_UPDATED",
    "TASK_SIGNAL",
    "TASK_STATUS",
    "Broker",
    "Deliver",
    "InProcessBroker",
    "queued",
]

logger = logging.getLogger("trio_mcp")

#: The topics (module docstring).
RESOURCE_UPDATED: Final = "resources/updated"
LIST_CHANGED: Final = "list_changed"
TASK_STATUS: Final = "tasks/status"
TASK_SIGNAL: Final = "tasks/signal"
#: Messages from other workers one worker may have queued and not yet delivered (Rule 2): a
#: burst of updates far past what clients re-read anyway, a few hundred KiB at most.
BROKER_QUEUE: Final = 1024

T = TypeVar("T")

#: What a subscription calls with each message another worker published: `(topic, payload)`.
Deliver = Callable[[str, dict[str, Any]], Awaitable[None]]


class Broker(Protocol):
    """What a `Server` needs of a broker (Rules 1, 2); `InProcessBroker` and `RedisBroker` are two.

    One broker object stands for one worker: give each `Server` its own.
    """

    async def publish(self, topic: str, payload: Mapping[str, Any]) -> None:
        """Send `payload` (JSON-able) on `topic` to every other worker.

        It never raises for the broker being unreachable (Rule 2).
        """
        ...

    async def serve(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Call `deliver` with what other workers publish, in order, until cancelled.

        Reports started once it takes messages (or, for a broker that is down, once it has
        begun trying to).
        """
        ...


class InProcessBroker:
    """The default broker: the servers of one process that share its bus.

    `InProcessBroker()` starts a bus of its own; `peer()` adds another broker to the same bus,
    for another `Server` of this process (in tests, a worker of a fleet in one process). A
    server given no broker has one of its own with no peers: publishing is a loop over nothing,
    so one process pays nothing for the fleet's sake. Publish from the event loop's thread.

    Args:
        max_queue: Messages queued for this worker and not yet delivered (Rule 2).
    """

    def __init__(self, *, max_queue: int = BROKER_QUEUE) -> None:
        self.max_queue = max_queue
        self._bus: list[InProcessBroker] = [self]
        self._inbox: trio.MemorySendChannel[tuple[str, dict[str, Any]]] | None = None
        self._dropping = False

    def peer(self) -> InProcessBroker:
        """A new broker on this one's bus: what one publishes the other delivers."""
        other = InProcessBroker(max_queue=self.max_queue)
        other._bus = self._bus
        self._bus.append(other)
        return other

    async def publish(self, topic: str, payload: Mapping[str, Any]) -> None:
        """Queue the message for every other broker on the bus that is serving now."""
        for other in self._bus:
            if other is not self and other._inbox is not None:
                other._offer(topic, dict(payload))

    def _offer(self, topic: str, payload: dict[str, Any]) -> None:
        assert self._inbox is not None
        self._dropping = queued(self._inbox, (topic, payload), self._dropping, "servers")

    async def serve(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Deliver what the other brokers of the bus publish until cancelled.

        Raises:
            RuntimeError: when this broker is already serving (one broker per server).
        """
        if self._inbox is not None:
            raise RuntimeError("this InProcessBroker is serving already: one broker per server")
        send, receive = trio.open_memory_channel[tuple[str, dict[str, Any]]](self.max_queue)
        self._inbox = send
        try:
            task_status.started()
            async with receive:
                async for topic, payload in receive:
                    await deliver(topic, payload)
        finally:
            self._inbox = None


def queued(inbox: trio.MemorySendChannel[T], message: T, dropping: bool, senders: str) -> bool:
    """Queue `message` from another worker for delivery, or drop it when `inbox` is full.

    Returns:
        Whether messages are being dropped now: a drop is logged once per episode (Rule 3),
        the first after `dropping` was False.
    """
    try:
        inbox.send_nowait(message)
    except trio.WouldBlock:
        if not dropping:
            logger.warning(
                "broker: %d messages from other %s wait for delivery; dropping more",
                inbox.statistics().max_buffer_size,
                senders,
            )
        return True
    return False
