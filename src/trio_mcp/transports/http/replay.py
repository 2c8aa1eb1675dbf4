"""Resumable SSE streams: the ids of a session's events, and the store that keeps them to replay.

Nothing here knows MCP or HTTP: frames are bytes. A stream still being written (`StreamLog`)
wakes the readers that resumed it each time it is written to, and once more when it ends
(`finish`): a reader replays from the store what it has not seen, then waits for the next
wake-up. Without a store (None) a stream's events still get ids (counted here), but nothing
can be replayed.

Rule 1: an event store keeps, per stream, the encoded messages that stream carried, numbered
        1, 2, ... in the order they went out; `replay(stream, after)` gives back those numbered
        after `after`, or None when it can no longer give all of them (it never saw the stream,
        or has dropped some of those events). A store may be shared by the processes of a fleet
        (a Redis one, say): it knows nothing of sessions beyond the stream keys it is handed.
Rule 2: `MemoryEventStore`, the default, is bounded twice: in bytes (past `max_bytes` the
        oldest event of the stream written least recently goes first) and in age (a stream not
        written for `max_age` seconds goes whole). A client comes back within seconds of a
        break (the `retry:` interval), so minutes of history is plenty.
Rule 3: a session's streams are numbered: 0 is its GET stream, 1, 2, ... the streams of its
        POSTs that were made resumable, in the order they started. An event's id is
        `<stream>-<n>`; the store key of a stream is `<session id>/<stream>`, so a client can
        only ever name streams of the session its `Mcp-Session-Id` header names.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Protocol

import trio

__all__ = ["EventStore", "MemoryEventStore", "SessionStreams", "StreamLog", "parse_event_id"]


class EventStore(Protocol):
    """Where the events of resumable SSE streams are kept to be replayed (Rule 1).

    Methods may be called from any task of the server's trio loop; an implementation that
    talks to another process must not block that loop.
    """

    async def append(self, stream: str, frame: bytes) -> int:
        """Keep `frame` as the next event of `stream`; its number there (1 for the first)."""
        ...

    async def replay(self, stream: str, after: int) -> list[tuple[int, bytes]] | None:
        """The events of `stream` numbered after `after`, oldest first.

        Returns:
            `(number, frame)` pairs, possibly none; None when the store cannot give every one
            of them (it never kept `stream`, or it has dropped some of them).
        """
        ...


@dataclass
class _Kept:
    last: int = 0  # the number of the stream's last event
    events: collections.deque[tuple[int, bytes]] = field(default_factory=collections.deque)
    written: float = 0.0  # when it was last written (trio's clock)


# What keeping one event costs beside its frame (the tuple and the deque's slot), so that a
# flood of empty events is bounded too.
_OVERHEAD = 64


class MemoryEventStore:
    """An `EventStore` in this process's memory, bounded in bytes and age (Rule 2).

    Args:
        max_bytes: The most it holds, counted as the frames' bytes plus a small fixed cost
            per event.
        max_age: Seconds after its last event that a stream is forgotten whole.
    """

    def __init__(self, max_bytes: int = 16 * 1024 * 1024, max_age: float = 300.0) -> None:
        self.max_bytes = max_bytes
        self.max_age = max_age
        # By the time they were last written, least recent first.
        self._streams: collections.OrderedDict[str, _Kept] = collections.OrderedDict()
        self._bytes = 0

    @property
    def kept_bytes(self) -> int:
        """What the store holds now, counted as `max_bytes` is."""
        return self._bytes

    async def append(self, stream: str, frame: bytes) -> int:
        """Keep `frame` as the next event of `stream`; its number there (Rule 1)."""
        # No checkpoint: an append is atomic with respect to the loop's other tasks, so a
        # reader that replays never sees a stream half written.
        now = trio.current_time()
        kept = self._streams.get(stream)
        if kept is None:
            kept = self._streams[stream] = _Kept()
        else:
            self._streams.move_to_end(stream)
        kept.last += 1
        kept.events.append((kept.last, frame))
        kept.written = now
        self._bytes += len(frame) + _OVERHEAD
        self._trim(now)
        return kept.last

    async def replay(self, stream: str, after: int) -> list[tuple[int, bytes]] | None:
        """The events of `stream` numbered after `after`, or None when some are gone (Rule 1)."""
        self._trim(trio.current_time())
        kept = self._streams.get(stream)
        if kept is None or after > kept.last:
            return None
        if after < kept.last and (not kept.events or kept.events[0][0] > after + 1):
            return None  # some of the events asked for are gone
        return [(n, frame) for n, frame in kept.events if n > after]

    def _trim(self, now: float) -> None:
        while self._streams:  # by age: whole streams, least recently written first
            stream, kept = next(iter(self._streams.items()))
            if now - kept.written <= self.max_age:
                break
            self._bytes -= sum(len(frame) + _OVERHEAD for _, frame in kept.events)
            del self._streams[stream]
        for kept in self._streams.values():  # by size: oldest events of those streams first
            if self._bytes <= self.max_bytes:
                return
            # A stream emptied here stays, with its count, so that its numbers never repeat.
            while kept.events and self._bytes > self.max_bytes:
                _, frame = kept.events.popleft()
                self._bytes -= len(frame) + _OVERHEAD


def parse_event_id(raw: bytes) -> tuple[int, int] | None:
    """`<stream>-<n>` as its two numbers (Rule 3), or None when it is not one of ours."""
    stream, sep, n = raw.partition(b"-")
    if not sep or not stream.isdigit() or not n.isdigit() or len(raw) > 40:
        return None
    return int(stream), int(n)


class StreamLog:
    """One stream of a session as it is written: its event ids, its store, its readers.

    Args:
        number: The stream's number in its session (Rule 3).
        store: Where its events are kept, or None to keep nothing.
        key: Its key in the store.
    """

    __slots__ = ("_count", "_wake", "done", "key", "number", "store", "version")

    def __init__(self, number: int, store: EventStore | None, key: str) -> None:
        self.number = number
        self.store = store
        self.key = key
        self._count = 0
        #: Counts the writes, so that a reader can wait for the next one (`wait_past`).
        self.version = 0
        self.done = False
        self._wake = trio.Event()

    async def append(self, frame: bytes) -> bytes:
        """Keep `frame` as the stream's next event (empty for a priming event); its SSE id."""
        if self.store is None:
            await trio.lowlevel.checkpoint()
            self._count += 1
            n = self._count
        else:
            n = await self.store.append(self.key, frame)
        self._changed()
        return b"%d-%d" % (self.number, n)

    def finish(self) -> None:
        """Nothing more will be written: readers that replayed everything may end."""
        self.done = True
        self._changed()

    def _changed(self) -> None:
        self.version += 1
        self._wake.set()
        self._wake = trio.Event()

    async def wait_past(self, version: int) -> None:
        """Return once the stream has been written to (or ended) since it was at `version`."""
        while self.version == version:
            await self._wake.wait()


class SessionStreams:
    """The numbered streams of one session (Rule 3).

    Args:
        store: The server's event store, or None.
        session_id: The session's id, the first half of its streams' store keys.
    """

    def __init__(self, store: EventStore | None, session_id: str) -> None:
        self.store = store
        self._session_id = session_id
        self._issued = 0  # the number of the last POST stream started
        self._open: dict[int, StreamLog] = {}
        #: The GET stream's log: one stream however often the client reconnects.
        self.listen = self._log(0)

    @property
    def resumable(self) -> bool:
        """Whether events are kept, so that a stream that broke can be resumed."""
        return self.store is not None

    def _log(self, number: int) -> StreamLog:
        return StreamLog(number, self.store, f"{self._session_id}/{number}")

    def start(self) -> StreamLog:
        """A new POST stream's log, open until `end` is called with it."""
        self._issued += 1
        log = self._open[self._issued] = self._log(self._issued)
        return log

    def end(self, log: StreamLog) -> None:
        """`log`'s stream is over: readers that resumed it end once they have replayed it all."""
        log.finish()
        self._open.pop(log.number, None)

    def find(self, number: int) -> tuple[str, StreamLog | None] | None:
        """The store key of POST stream `number` and its log while it is still written.

        None when no such stream was ever started in this session.
        """
        if not 1 <= number <= self._issued:
            return None
        return f"{self._session_id}/{number}", self._open.get(number)
