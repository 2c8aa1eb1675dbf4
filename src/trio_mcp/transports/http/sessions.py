"""The HTTP transport's session table, and what it needs from the MCP side.

The transport sees the MCP side only through `HttpBackend` and its `HttpSession`s: sessions
that `handle` one decoded message, and a channel server for the legacy transport; it never
sees tools or schemas. A Streamable HTTP session in the table has a server-to-client stream
(`outbox`), which `add` attaches to it and `end` closes: messages not tied to a call wait there
for the session's GET stream. The sessions' own tasks run in the nursery of `run`
(`expire_idle`); without it they do not run (the stream still carries what is sent).

A request naming an expired session gets 404, as the spec prescribes, and the client
re-initializes. The session that makes room for a new one is one never used since `initialize`
if there is one, else the one idle the longest, and it ends as if expired: abandoned sessions
cannot lock new clients out until they expire, and a flood of `initialize` ends sessions in use
only once it has ended its own.

Rule 1: sessions are bounded: at most `max_sessions` open at once (Streamable HTTP and legacy
        SSE together), and one not in use (no request running, no GET or legacy stream open)
        expires after `session_idle_timeout`. When the table is full, a new session takes the
        place of a Streamable HTTP session not in use; only when every session is in use (or
        legacy) is a new one refused with 503.
Rule 2: a session enters the table in one place, `add`, which opens it, and leaves it in one
        place, `end`: a Streamable HTTP session is ended (its running requests are cancelled),
        a legacy session's input is closed so that it finishes what it runs. A session made
        for one request (stateless, 2026-07-28) never enters the table, so is never opened.
Rule 3: with token verification, a session belongs to whoever opened it: the issuer, subject
        and client of the verified token of its `initialize` (or legacy /sse GET). A request
        naming it with another's token finds no such session (404), so a session id that
        leaked is no credential (spec: security best practices, session hijacking). The same
        user's refreshed token keeps the session (the principal: `_core/auth` Rule 3). A token
        that names no issuer, subject or client binds the session to itself (a digest of it): a
        refreshed one gets 404.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from ..._core.auth import AuthInfo, Principal, principal_of
from ..._core.jsonrpc import Request, RequestId
from .asgi import Refused
from .options import HttpOptions
from .outbox import Outbox, Spawn
from .replay import SessionStreams

__all__ = ["Carry", "Entry", "HttpBackend", "HttpSession", "Notify", "Resolved", "SessionTable"]

logger = logging.getLogger("trio_mcp.http")

Notify = Callable[[str, dict[str, Any]], Awaitable[None]]
#: Puts one message of the server's (a request to the client, its cancellation) on the stream
#: of the request being answered; raises `ConnectionClosed` once that stream is gone.
Carry = Callable[[dict[str, Any]], Awaitable[None]]


class Resolved(Protocol):
    """A request as the MCP side resolved it (`HttpBackend.resolve`): what the transport reads.

    The transport hands it back to the session that answers it, which reads the rest.
    """

    @property
    def request(self) -> Request:
        """The JSON-RPC request."""

    @property
    def scopes(self) -> tuple[str, ...]:
        """The OAuth scopes it needs."""

    @property
    def auth(self) -> AuthInfo | None:
        """The verified token it came with."""


class HttpSession(Protocol):
    """One MCP session as the HTTP transport sees it."""

    @property
    def in_flight(self) -> int:
        """Requests running in this session."""

    @property
    def protocol_version(self) -> str | None:
        """The revision the session speaks, once initialized (or adopted)."""

    def start(self, call: Any) -> Any:
        """Take a resolved request: its answer if it needs no waiting, else None.

        The answer may come as an awaitable (middleware that never wait run around it): await
        it at once. A request that must wait is admitted: run it with `answer`, then `release`
        it.
        """

    async def answer(self, call: Any, notify: Notify, carrier: Carry | None = None) -> Any:
        """Run a request `start` admitted; its answer, None when the client cancelled it.

        Notifications of the request go to `notify`, its requests to the client to `carrier`
        (one that refuses where the client's answer could not come back to the session; the
        session refuses every request of a revision that asks no other way).
        """

    def release(self, request_id: RequestId) -> None:
        """Forget a request `start` admitted, once its answer is delivered."""

    async def handle(self, message: Any, notify: Notify, carrier: Carry | None = None) -> Any:
        """Handle a decoded message or batch (requests resolved); the answer or None."""

    def open(self) -> None:
        """The session is kept (in the table) until `end`: it is live for the MCP side."""

    def attach(self, outbox: Carry, spawn: Spawn | None) -> None:
        """Give a kept session its server-to-client stream and a way to start its own tasks.

        `outbox` queues a message not tied to a request for the session's GET stream (raising
        `ConnectionClosed` when it cannot); `spawn` starts a task that ends with the session
        (None: the application runs no nursery to start it in).
        """

    def end(self) -> None:
        """The session is over: cancel every request running in it, and let go of it."""

    def shut_down(self) -> None:
        """The server is stopping: answer every request running or to come at once.

        Each gets a "server shutting down" error; a request the client cancelled stays
        unanswered.
        """


class HttpBackend(Protocol):
    """What the HTTP transport needs from the MCP side."""

    versions: tuple[str, ...]
    #: Revisions without sessions (2026-07-28): their requests stand alone in every mode.
    sessionless_versions: tuple[str, ...]

    def new_session(self, assumed_version: str | None = None) -> HttpSession:
        """A new session; with `assumed_version`, one that needs no `initialize` (stateless)."""

    def param_headers(self, tool: str) -> Mapping[str, tuple[str, ...]]:
        """The arguments `tool` mirrors into headers (`x-mcp-header`).

        Returns:
            Lower-cased header name -> property path; empty for a tool that mirrors none, or
            for no such tool.
        """

    def base_scopes(self) -> tuple[str, ...]:
        """The OAuth scopes every request needs (a `Server`'s `required_scopes`)."""

    def stays_open(self, request: Request) -> bool:
        """Whether the request's answer is a stream that stays open until the client closes it.

        A 2026-07-28 `subscriptions/listen`: it is bounded apart from the requests in flight.
        """

    async def resolve(
        self, request: Request, auth: AuthInfo | None, peer: str | None = None
    ) -> Resolved:
        """The request resolved once, with its verified token and its client's address.

        `peer` is the address (`peer_of`), for what tells clients without a token apart. Its
        `scopes` are those the server needs for everything and those of the tool, resource or
        prompt it names (for `tasks/get`, `tasks/update` and `tasks/cancel`: of the tool the
        task runs); the transport refuses it (403) when the token lacks any.
        """

    async def serve_channels(
        self,
        receive: trio.MemoryReceiveChannel[bytes],
        send: trio.abc.SendChannel[bytes],
        *,
        auth: AuthInfo | None = None,
        task_status: trio.TaskStatus[None] = ...,
    ) -> None:
        """Serve one legacy-SSE session over frame channels until `receive` ends.

        `auth` is the verified token of the stream's GET: the session's.
        """


# Not frozen: a session's record changes as its requests come and go (last_seen, the legacy
# counts), and the table owns it; nothing outside the transport holds one.
@dataclass
class Entry:
    """One open session: a Streamable HTTP one (`session`) or a legacy SSE one (`legacy_*`)."""

    session: HttpSession | None  # None for a legacy SSE session
    last_seen: float
    legacy_inbox: trio.MemorySendChannel[bytes] | None = None
    # Legacy SSE: ids of the requests POSTed and not yet answered or cancelled (a multiset, as
    # a duplicate id is answered with an error of its own), and their count.
    legacy_pending: collections.Counter[RequestId] | None = None
    legacy_in_flight: int = 0
    # Legacy SSE: bytes of the frames the session has produced and its stream has not yet
    # handed to the server (its client reads slowly or not at all).
    legacy_unsent: int = 0
    # Whether a request (not only notifications) came after `initialize`: a session never used
    # goes first when the table is full (Rule 1).
    used: bool = False
    # Streamable HTTP: the session's server-to-client stream, set by `add`.
    outbox: Outbox | None = None
    # Streamable HTTP: the numbered SSE streams of the session and their event ids, set by
    # `add` (`transports/http/replay`).
    streams: SessionStreams | None = None
    # With token verification: who opened the session (Rule 3), set by `add`.
    owner: Principal | None = None

    @property
    def listening(self) -> bool:
        """Whether the session's GET stream is open (it is then in use: Rule 1)."""
        return self.outbox is not None and self.outbox.listening


class SessionTable:
    """The open sessions by id, bounded and expired when idle.

    Args:
        options: `max_sessions` and `session_idle_timeout` are read from it.
    """

    def __init__(self, options: HttpOptions) -> None:
        self._options = options
        self._entries: dict[str, Entry] = {}
        # Where sessions start their own tasks, while `expire_idle` runs.
        self._nursery: trio.Nursery | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, sid: str, auth: AuthInfo | None) -> Entry | None:
        """The session named `sid`, if it is open and the request's token may use it (Rule 3)."""
        entry = self._entries.get(sid)
        if entry is not None and entry.owner != principal_of(auth):
            return None
        return entry

    def check_room(self) -> None:
        """Make room for a new session, or refuse it (503) when none can go (Rule 1)."""
        if len(self._entries) < self._options.max_sessions:
            return
        idle = [
            (entry.used, entry.last_seen, sid)
            for sid, entry in self._entries.items()
            if entry.session is not None and not entry.session.in_flight and not entry.listening
        ]
        if not idle:
            raise Refused(503, "Too many sessions; try again later", [(b"retry-after", b"5")])
        _, _, sid = min(idle)
        logger.info("session %s ended to make room for a new one (the table is full)", sid[:8])
        self.end(sid)

    def add(self, sid: str, entry: Entry, auth: AuthInfo | None) -> None:
        """Open a session under `sid`, owned by the request's verified token (Rule 3)."""
        entry.owner = principal_of(auth)
        self._entries[sid] = entry
        if entry.session is not None:
            entry.session.open()
            entry.outbox = Outbox(self._options.max_unsent_bytes)
            entry.streams = SessionStreams(self._options.event_store, sid)
            spawn = entry.outbox.spawner(self._nursery) if self._nursery is not None else None
            entry.session.attach(entry.outbox.put, spawn)

    def end(self, sid: str) -> None:
        """Close the session `sid`, if it is open (Rule 2)."""
        entry = self._entries.pop(sid, None)
        if entry is None:
            return
        if entry.session is not None:
            entry.session.end()
        if entry.outbox is not None:
            entry.outbox.close()
        if entry.legacy_inbox is not None:
            entry.legacy_inbox.close()

    def end_legacy(self) -> None:
        """Close every legacy SSE session."""
        for sid, entry in list(self._entries.items()):
            if entry.legacy_inbox is not None:
                self.end(sid)

    def hang_up(self) -> None:
        """End every open GET stream (the server is shutting down); the sessions stay."""
        for entry in self._entries.values():
            if entry.outbox is not None:
                entry.outbox.hang_up()

    async def expire_idle(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Expire idle sessions until cancelled (Rule 1); run the sessions' tasks."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await self._expire_idle(task_status)
            finally:
                self._nursery = None
                nursery.cancel_scope.cancel()

    async def _expire_idle(self, task_status: trio.TaskStatus[None]) -> None:
        task_status.started()
        timeout = self._options.session_idle_timeout
        while True:
            await trio.sleep(min(timeout / 4, 60))
            now = trio.current_time()
            for sid, entry in list(self._entries.items()):
                busy = entry.session is not None and (entry.session.in_flight or entry.listening)
                if not busy and entry.legacy_inbox is None and now - entry.last_seen > timeout:
                    logger.info("session %s expired after %.0f s idle", sid[:8], timeout)
                    self.end(sid)
