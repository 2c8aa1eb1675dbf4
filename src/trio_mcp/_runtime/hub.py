"""`SessionHub`: a server's live sessions, and the one place that speaks to all of them.

The hub broadcasts (`notify_all`), sends `resources/updated` to the sessions subscribed to the
URI, a task's new state to the handshake-era sessions that follow it (those whose call became
it; they forget it once it settled), as 2025-11-25's `notifications/tasks/status`, and runs the
list watchers that tell sessions of registry changes. A 2026-07-28 client hears of changes on
a `subscriptions/listen` stream instead, whose listener (`_runtime/listening`) runs a watcher
of its own.

Rule 1: a session is in the hub while it can still be spoken to: a channel connection's (stdio,
        memory, legacy SSE) from the start of its loop to its end, however it ends; a
        Streamable HTTP one from its `initialize` (the session table takes it in) until the
        table ends it (DELETE, idle expiry; sessions still in the table when the application
        stops stay in it). A session made for one request (stateless mode, 2026-07-28) is
        never in it: nothing could reach it after its answer.
Rule 2: a broadcast goes to every session that can take an unprompted message now, each in a
        task of its own (a slow client does not hold up the others), and ends when all are
        sent. A session that ends meanwhile is skipped or its message dropped; nothing raises.
Rule 3: every change of a registry (add, remove, enable, disable) wakes the list watchers, and
        each initialized handshake-era session that has one (`watch_lists`, run where
        `SessionRuntime.attach` lets it start tasks) hears `notifications/<kind>/list_changed`
        once per burst of changes made together, not once per item. A change may come from
        the event loop or one of its worker threads (a sync tool); no other thread may change
        a registry while the server runs. `announce(kind)` counts as a change of that list
        without one of the registry (`Server.announce_list_changed`, and the same word from
        another worker through the broker).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn, Protocol

import trio

from .._features.registry import Registry
from .._features.task_utility import task_wire

__all__ = ["LiveSession", "SessionHub"]


class Counted(Protocol):
    """A registry as the hub sees it: a change counter and a hook called after each change."""

    @property
    def changes(self) -> int:
        """How many changes it has seen."""
        ...

    on_change: Callable[[], None] | None


class LiveSession(Protocol):
    """What the hub needs of a session (`SessionRuntime` is one)."""

    @property
    def can_notify(self) -> bool:
        """Whether a message the client did not ask for can reach it now."""
        ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the client a notification."""
        ...

    @property
    def wants_list_changes(self) -> bool:
        """Whether the client is to hear of list changes (Rule 3)."""
        ...

    def subscribed(self, uri: str) -> bool:
        """Whether the client subscribed to updates of `uri`."""
        ...

    def follows_task(self, task_id: str) -> bool:
        """Whether the client is to hear of the task's status changes."""
        ...

    def forget_task(self, task_id: str) -> None:
        """Stop following the task (it settled)."""
        ...


class SessionHub:
    """The sessions of one server that are open now, in the order they opened.

    Args:
        registry: The server's tool registry, whose change counter `changes` reads.
        lists: The registries whose changes are announced, by the kind the notification names
            ("tools", "resources", "prompts"); default: the tool registry alone.
    """

    def __init__(self, registry: Registry[Any], lists: Mapping[str, Counted] | None = None) -> None:
        self._registry = registry
        # A dict, not a set: a broadcast reaches sessions in the order they opened.
        self._live: dict[LiveSession, None] = {}
        self._lists: dict[str, Counted] = dict(lists) if lists is not None else {"tools": registry}
        # Changes announced without a registry change (Rule 3), by kind.
        self._announced = dict.fromkeys(self._lists, 0)
        # Set (and replaced) at every change; the list watchers wait on it (Rule 3).
        self._changed = trio.Event()
        for counted in self._lists.values():
            counted.on_change = self._wake

    def add(self, session: LiveSession) -> None:
        """Count `session` as open (Rule 1)."""
        self._live[session] = None

    def discard(self, session: LiveSession) -> None:
        """Forget `session`, if it is counted (ending twice is harmless)."""
        self._live.pop(session, None)

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[LiveSession]:
        return iter(list(self._live))

    def __contains__(self, session: object) -> bool:
        return session in self._live

    @property
    def changes(self) -> int:
        """The tool registry's change counter (Rule 3): it moves with every add and remove."""
        return self._registry.changes

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of list whose changes are announced ("tools", ...)."""
        return tuple(self._lists)

    def announce(self, kind: str) -> None:
        """Tell the list watchers that the list `kind` changed, though no registry did (Rule 3).

        Raises:
            KeyError: when `kind` is not one of `kinds`.
        """
        self._announced[kind] += 1
        self._wake()

    def count(self, kind: str) -> int:
        """How many changes the list `kind` has seen: its registry's and those announced."""
        return self._lists[kind].changes + self._announced[kind]

    def _counts(self) -> dict[str, int]:
        return {kind: self.count(kind) for kind in self._lists}

    def _wake(self) -> None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:  # not on the event loop's thread
            try:
                trio.from_thread.run_sync(self._set)
            except RuntimeError:  # no event loop at all (registration before serving)
                self._set()
            return
        self._set()

    def _set(self) -> None:
        event, self._changed = self._changed, trio.Event()
        event.set()

    async def watch_lists(self, session: LiveSession) -> NoReturn:
        """Tell `session` of every list change, once per burst, until cancelled (Rule 3)."""
        event = self._changed
        seen = self._counts()
        while True:
            await event.wait()
            # The change that woke us may be one of several made together: let it finish.
            await trio.lowlevel.checkpoint()
            event = self._changed
            now = self._counts()
            moved = [kind for kind, count in now.items() if count != seen[kind]]
            seen = now
            if moved and session.can_notify and session.wants_list_changes:
                for kind in moved:
                    await session.notify(f"notifications/{kind}/list_changed")

    async def resource_updated(self, uri: str) -> int:
        """Send `notifications/resources/updated` to the sessions subscribed to `uri`.

        Returns:
            How many sessions it was sent to.
        """
        return await self.notify_all(
            "notifications/resources/updated", {"uri": uri}, only=lambda s: s.subscribed(uri)
        )

    async def task_status(self, task: dict[str, Any]) -> int:
        """Send the task's new state to the sessions that follow the task.

        The handshake era's tasks are 2025-11-25's (the revision table's `tasks`): the state
        goes as that revision's `notifications/tasks/status`, a `Task`.

        Returns:
            How many sessions it was sent to.
        """
        task_id = task["taskId"]
        following = {session for session in self._live if session.follows_task(task_id)}
        if not following:
            return 0
        if task.get("status") in ("completed", "failed", "cancelled"):
            for session in following:
                session.forget_task(task_id)  # settled: nothing more to hear of it
        return await self.notify_all(
            "notifications/tasks/status", task_wire(task), only=following.__contains__
        )

    async def notify_all(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        only: Callable[[LiveSession], bool] | None = None,
    ) -> int:
        """Send a notification to every open session that can receive one (Rule 2).

        A Streamable HTTP session takes it into the queue of its GET stream (bounded: past
        the bound the oldest notifications are dropped there). A session whose client stopped
        reading is sent to and the message dropped there.

        Args:
            method: The notification's method.
            params: Its params, if any.
            only: Sends only to the sessions for which this says True.

        Returns:
            How many sessions it was sent to.
        """
        sent = 0

        async def one(session: LiveSession) -> None:
            nonlocal sent
            # Asked again: the session may have ended while the others were being sent to.
            if session in self._live and session.can_notify and (only is None or only(session)):
                sent += 1
                await session.notify(method, params)

        async with trio.open_nursery() as nursery:
            # A snapshot: sessions may open and end while the messages go out.
            for session in list(self._live):
                nursery.start_soon(one, session)
        return sent
