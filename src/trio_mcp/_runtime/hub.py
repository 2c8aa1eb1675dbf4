"""`SessionHub`: a server's live sessions, and the one place that speaks to all of them.

Rule 1: a session is in the hub while it can still be spoken to: a channel connection's (stdio,
        memory, legacy SSE) from the start of its loop to its end, however it ends; a
        Streamable HTTP one from its `initialize` (the session table takes it in) until the
        table ends it (DELETE, idle expiry). A session made for one request (stateless mode,
        2026-07-28) is never in it: nothing could reach it after its answer. Streamable HTTP
        sessions still in the table when the application stops stay in it: nothing ends them.
Rule 2: a broadcast goes to every session that can take an unprompted message now, each in a
        task of its own (a slow client does not hold up the others), and ends when all are
        sent. A session that ends meanwhile is skipped or its message dropped; nothing raises.
Rule 3: the hub sends what it is told to, when it is told to. Deciding that the tool list
        changed (`changes` moved) and saying so (`notifications/tools/list_changed`, with
        `listChanged: true` advertised) is for the feature that will use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import trio

from .._features.registry import Registry

__all__ = ["LiveSession", "SessionHub"]


class LiveSession(Protocol):
    """What the hub needs of a session (`SessionRuntime` is one)."""

    @property
    def can_notify(self) -> bool:
        """Whether a message the client did not ask for can reach it now."""
        ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the client a notification."""
        ...


class SessionHub:
    """The sessions of one server that are open now, in the order they opened.

    Args:
        registry: The server's tool registry, whose change counter the hub reads.
    """

    def __init__(self, registry: Registry[Any]) -> None:
        self._registry = registry
        # A dict, not a set: a broadcast reaches sessions in the order they opened.
        self._live: dict[LiveSession, None] = {}

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

    async def notify_all(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a notification to every open session that can receive one (Rule 2).

        Streamable HTTP sessions are skipped: the server cannot send them anything outside the
        answer to a request yet (there is no standalone GET stream), so there is nowhere to put
        it. A session whose client stopped reading is sent to and the message dropped there.

        Returns:
            How many sessions it was sent to.
        """
        sent = 0

        async def one(session: LiveSession) -> None:
            nonlocal sent
            # Asked again: the session may have ended while the others were being sent to.
            if session in self._live and session.can_notify:
                sent += 1
                await session.notify(method, params)

        async with trio.open_nursery() as nursery:
            # A snapshot: sessions may open and end while the messages go out.
            for session in list(self._live):
                nursery.start_soon(one, session)
        return sent
