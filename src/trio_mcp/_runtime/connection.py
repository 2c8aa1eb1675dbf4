"""The connection loop: one session served over a pair of frame channels.

Used by stdio, the in-memory transport and legacy HTTP+SSE (`Server.serve_connection`);
Streamable HTTP drives a `SessionRuntime` per request instead. A connection is frames in (one
JSON text each) and frames out: transports bring the frames, and the runtime never sees their
bytes, sockets or subprocesses. Every request that must wait runs in its own task in the
connection's nursery, inside the cancel scope its `SessionRuntime` gives it. Responses go out
as they complete; those answered on the connection's own task go out together once per input
batch (one write for a pipelining client's burst).

Rule 1: nothing that arrives can end the connection: an undecodable frame, a bad message or a
        failing tool is answered and the loop goes on. Only end of input ends it, and then
        in-flight requests get `Timeouts.shutdown` seconds to finish before they are cancelled.
Rule 2: the reader never stops reading. At most `max_in_flight` requests run at once per
        connection; requests past that wait in a queue bounded by the same count and by
        `HELD_BYTES` of frames, and one that finds the queue full is answered at once with
        `SERVER_UNAVAILABLE` ("server busy"). Everything else (cancellations, the client's
        answers to the server's own requests, pings, end of input) is handled as it arrives,
        so back-pressure can never blind the server to what would free it.
Rule 3: exactly one response per request, shutdown included, and none for a request the client
        cancelled: a request still running or waiting when the connection is torn down (the
        grace period ran out, or the server was told to stop) is answered with
        `SERVER_UNAVAILABLE` ("server shutting down"). Those last answers get
        `FINAL_ANSWER_SECONDS` to go out. (A response whose own send was cut short by the
        teardown is not sent twice: with the output that congested, it may be lost.)
Rule 4: the tasks a connection hosts (its calls that became tasks, when no server-wide host
        runs them) end with it: at the end of input before the session is closed, and at a
        teardown by cancellation before the session ends, `stop_tasks` settles them and tells
        their final states on the connection, within `FINAL_ANSWER_SECONDS`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import trio

from .._core.auth import AuthInfo
from .._core.framing import LineTooLong
from .._core.jsonrpc import (
    INVALID_REQUEST,
    SERVER_UNAVAILABLE,
    InvalidMessage,
    Notification,
    Request,
    dumps,
    encode_or_error,
    error_response,
    parse,
)
from .._dispatch import ResolvedRequest
from .link import Incoming
from .peer import CANCEL_NOTICE_SECONDS
from .session import SessionOwner, SessionRuntime, batch_answer, shutting_down

#: What a connection reads: frames (one JSON text each), or batches of them in which a
#: `LineTooLong` stands for a frame that was too long to keep (`link.Incoming`: the client's
#: links deliver the same).
Frames = Incoming

__all__ = ["FINAL_ANSWER_SECONDS", "HELD_BYTES", "Frames", "encode", "serve_frames"]

logger = logging.getLogger("trio_mcp")

# Bytes of request frames that may wait for a free slot (Rule 2), beside the count bound of
# `max_in_flight`: four of the default 16 MiB lines, like the four default-sized request bodies
# an HTTP server buffers per connection before it stops reading.
HELD_BYTES: Final = 64 * 1024 * 1024
# Seconds the answers owed at teardown (Rule 3) get to go out: as long as a cancelled request
# to the client may take to say so, for the same reason (a stalled client cannot hold us).
FINAL_ANSWER_SECONDS: Final = CANCEL_NOTICE_SECONDS


async def serve_frames(
    server: SessionOwner,
    receive: Frames,
    send: trio.abc.SendChannel[bytes],
    *,
    auth: AuthInfo | None = None,
    stop_tasks: Callable[[], Awaitable[Any]] | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve one session of `server` over a pair of frame channels until `receive` ends.

    `auth` is the verified token of the connection's client, when its transport authenticated
    it (legacy HTTP+SSE: the stream's GET); every request of the connection carries it.
    `stop_tasks` settles and tells the tasks the connection hosts, as it ends (Rule 4).
    """
    await _Connection(server, send, auth, stop_tasks).run(receive, task_status)


class _Connection:
    """A session served over a pair of frame channels (see the module rules)."""

    def __init__(
        self,
        server: SessionOwner,
        send: trio.abc.SendChannel[bytes],
        auth: AuthInfo | None = None,
        stop_tasks: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.server = server
        self._stop_tasks = stop_tasks
        self.runtime = SessionRuntime(server, self.send, auth=auth)
        self._resolve = server._dispatcher.resolve  # step 1 of every request read here
        self._send_channel = send
        # A memory channel can take a frame without a trip through the scheduler when it has
        # room; that is most of the time, and it is what lets a batch of calls answered inline
        # go out without one task switch per response.
        self._send_nowait: Callable[[bytes], None] | None = getattr(send, "send_nowait", None)
        # A channel that queues and writes in bulk (stdio's) has `flush`: answers given on this
        # task are flushed once per input batch; those from request tasks at once.
        self._flush: Callable[[], Awaitable[None]] | None = getattr(send, "flush", None)
        self._too_long = encode(
            error_response(
                None,
                INVALID_REQUEST,
                f"Invalid Request: message longer than {server.limits.max_line_bytes} bytes; "
                "skipped",
            )
        )
        self._tasks = 0  # requests running (a batch task counts its requests)
        self._changed = trio.Event()  # set whenever `_tasks` drops
        # Tasks waiting for a slot (Rule 2): (function, argument, requests, frame bytes).
        self._held: deque[tuple[Callable[[Any], Any], Any, int, int]] = deque()
        self._held_requests = 0
        self._held_bytes = 0
        self._owed: list[Any] = []  # answers owed at teardown (Rule 3)
        self._nursery: trio.Nursery | None = None

    async def run(self, receive: Frames, task_status: trio.TaskStatus[None]) -> None:
        self.runtime.open()
        try:
            await self._serve(receive, task_status)
        finally:
            try:
                await self._tasks_told()  # torn down by cancellation: what input's end did
                await self._pay_what_is_owed()
            finally:
                # However the loop ended (end of input, cancellation, a crash), nobody can be
                # spoken to here any more.
                self.runtime.end()

    async def _serve(self, receive: Frames, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            # Its list watcher and roots handler end with the nursery's cancellation below (they
            # are not among `_tasks`).
            self.runtime.attach(self.send, nursery.start_soon)
            task_status.started()
            async with receive:
                async for item in _drain(receive):
                    for frame in (item,) if isinstance(item, bytes | bytearray) else item:
                        if isinstance(frame, LineTooLong):
                            await self._send_frame(self._too_long)
                        else:
                            await self._frame(frame, nursery)
                    await self._flushed()
            # The tasks it hosts end with it (Rule 4), told while the session can still be.
            await self._tasks_told()
            # Nothing more can arrive, the client's answers included: calls waiting for one
            # fail now, and may still finish within the grace period.
            self.runtime.close("the client closed the connection")
            with trio.move_on_after(self.server.timeouts.shutdown):
                while self._tasks or self._held:
                    await self._task_done()
            if self._tasks or self._held:
                logger.warning(
                    "input ended; cancelling %d call(s) still running or waiting",
                    self._tasks + self._held_requests,
                )
            nursery.cancel_scope.cancel()

    async def _tasks_told(self) -> None:
        """Settle the tasks this connection hosts and tell their ends (Rule 4), once, bounded."""
        stop, self._stop_tasks = self._stop_tasks, None
        if stop is None:
            return
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + FINAL_ANSWER_SECONDS
            await stop()
            await self._flushed()

    async def _pay_what_is_owed(self) -> None:
        """Answer every request torn down unanswered (Rule 3), within a short bound."""
        while self._held:
            fn, arg, _, _ = self._held.popleft()
            if fn == self._request:
                self._owe(arg)
            else:
                slots = arg
                self._owe_batch(slots)
        if not self._owed:
            return
        logger.warning("answered %d request(s) cut short: server shutting down", len(self._owed))
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + FINAL_ANSWER_SECONDS
            for message in self._owed:
                await self.reply(message)
            await self._flushed()
        self._owed.clear()

    def _owe(self, call: ResolvedRequest) -> None:
        if not self.runtime.was_cancelled(call.id):
            self._owed.append(shutting_down(call.request))
        self.runtime.release(call.id)

    def _owe_batch(self, slots: list[Any]) -> None:
        for i, slot in enumerate(slots):
            if isinstance(slot, ResolvedRequest):
                cancelled = self.runtime.was_cancelled(slot.id)
                slots[i] = None if cancelled else shutting_down(slot.request)
                self.runtime.release(slot.id)
        answer = batch_answer(slots)
        if answer is not None:
            self._owed.append(answer)

    async def _task_done(self) -> None:
        await self._changed.wait()
        self._changed = trio.Event()

    async def send(self, message: Any) -> None:
        """Send a message from a request task: it goes out now."""
        await self.reply(message)
        await self._flushed()

    async def reply(self, message: Any) -> None:
        """Send a message from the connection's own task: it goes out with its input batch."""
        frame = encode(message)
        if frame is not None:
            await self._send_frame(frame)

    async def _flushed(self) -> None:
        if self._flush is not None:
            await self._flush()

    async def _send_frame(self, frame: bytes | None) -> None:
        assert frame is not None
        try:
            if self._send_nowait is not None:
                try:
                    self._send_nowait(frame)
                except trio.WouldBlock:
                    pass
                else:
                    return
            await self._send_channel.send(frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            logger.debug("peer gone; dropped an outgoing message")

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _frame(self, frame: bytes | bytearray, nursery: trio.Nursery) -> None:
        messages, is_batch = parse(frame)
        if is_batch:
            slots = self.runtime.admit_batch(messages)
            weight = sum(isinstance(slot, ResolvedRequest) for slot in slots)
            await self._start(nursery, self._batch, slots, weight=max(weight, 1), size=len(frame))
            return
        message = messages[0]
        runtime = self.runtime
        if isinstance(message, Request):
            call = self._resolve(message, runtime.auth)
            # The fast path: answered on the reader's task when its record needs no waiting.
            response = runtime.start(call)
            if response is None:
                await self._start(nursery, self._request, call, size=len(frame))
                return
            if not isinstance(response, dict):  # through middleware that never wait
                response = await response
            await self.reply(response)
        elif isinstance(message, InvalidMessage):
            error = runtime.invalid(message)
            if error is not None:
                await self.reply(error)
        else:
            await runtime.receive(message)
            if self._held and isinstance(message, Notification):
                self._drop_cancelled_held()

    async def _start(
        self,
        nursery: trio.Nursery,
        fn: Callable[[Any], Any],
        arg: Any,
        *,
        weight: int = 1,
        size: int = 0,
    ) -> None:
        # `weight`: how many requests the task runs (a batch runs several); `max_in_flight`
        # counts requests, not tasks. `size`: the bytes of the frame it came in.
        if self._tasks < self.server.limits.max_in_flight and not self._held:
            self._tasks += weight
            nursery.start_soon(self._tracked, fn, arg, weight)
        elif (
            self._held_requests + weight <= self.server.limits.max_in_flight
            and self._held_bytes + size <= HELD_BYTES
        ):
            self._held.append((fn, arg, weight, size))
            self._held_requests += weight
            self._held_bytes += size
        else:
            refusal = self._refuse(fn, arg)
            if refusal is not None:
                await self.reply(refusal)

    def _refuse(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """Answer a request that found the waiting queue full (Rule 2), at once."""
        limit = self.server.limits.max_in_flight

        def busy(call: ResolvedRequest) -> dict[str, Any]:
            self.runtime.release(call.id)
            return error_response(
                call.id,
                SERVER_UNAVAILABLE,
                f"Server busy: {limit} requests are running and {self._held_requests} wait "
                "already; send it again once some are answered",
            )

        if fn == self._request:
            return busy(arg)
        return batch_answer([busy(s) if isinstance(s, ResolvedRequest) else s for s in arg])

    def _release_held(self) -> None:
        """Start what waits for a slot, as far as the slots allow (Rule 2)."""
        nursery = self._nursery
        assert nursery is not None
        while self._held and self._tasks < self.server.limits.max_in_flight:
            fn, arg, weight, size = self._held.popleft()
            self._held_requests -= weight
            self._held_bytes -= size
            if fn == self._request and self.runtime.was_cancelled(arg.id):
                # Cancelled while it waited: it never runs (an inline tool would run to its
                # end before seeing the cancellation) and is owed nothing.
                self.runtime.release(arg.id)
                continue
            self._tasks += weight
            nursery.start_soon(self._tracked, fn, arg, weight)

    def _drop_cancelled_held(self) -> None:
        """Forget waiting requests the client cancelled: they never run and free their place."""
        kept: deque[tuple[Callable[[Any], Any], Any, int, int]] = deque()
        for entry in self._held:
            fn, arg, weight, size = entry
            if fn == self._request and self.runtime.was_cancelled(arg.id):
                self.runtime.release(arg.id)
                self._held_requests -= weight
                self._held_bytes -= size
            else:
                kept.append(entry)
        self._held = kept

    async def _tracked(self, fn: Callable[[Any], Any], arg: Any, weight: int) -> None:
        try:
            await fn(arg)
        finally:
            self._tasks -= weight
            self._changed.set()
            if self._held and not self._torn_down():
                self._release_held()

    def _torn_down(self) -> bool:
        # What still waits then is answered by `_pay_what_is_owed`, not started to be cancelled.
        return self._nursery is None or self._nursery.cancel_scope.cancel_called

    async def _request(self, call: ResolvedRequest) -> None:
        # `answer` ends quietly when the client cancels; anything it raises (the teardown's
        # Cancelled, bare or in a group from a nursery inside) leaves the request owed.
        answered = False
        try:
            response = await self.runtime.answer(call, self.notify)
            answered = True
            if response is not None:  # None also when the client cancelled it
                await self.send(response)
        finally:
            if not answered:
                self._owe(call)
            self.runtime.release(call.id)

    async def _batch(self, slots: list[Any]) -> None:
        filled = False
        try:
            await self.runtime.fill_batch(slots, self.notify)
            filled = True
        finally:
            if not filled:
                self._owe_batch(slots)
        answered = batch_answer(slots)
        if answered is not None:
            await self.send(answered)


# Items taken from a channel without yielding before one checkpoint: enough to make the
# scheduler's cost per message small, few enough that other tasks still run every few ms.
_DRAIN_BATCH: Final = 64


async def _drain(receive: Frames) -> AsyncIterator[Any]:
    """Iterate a channel, taking what is already waiting without a trip through the scheduler.

    `async for` over a trio channel checkpoints on every item; with many frames queued (a
    pipelining client, an in-process caller) that costs more than handling them. This takes
    queued items directly and checkpoints once per `_DRAIN_BATCH`, or when it must wait.
    """
    receive_nowait = getattr(receive, "receive_nowait", None)
    taken = 0
    while True:
        if receive_nowait is not None and taken < _DRAIN_BATCH:
            try:
                item = receive_nowait()
            except trio.WouldBlock:
                pass
            except trio.EndOfChannel:
                return
            else:
                taken += 1
                yield item
                continue
        taken = 0
        try:
            item = await receive.receive()
        except trio.EndOfChannel:
            return
        yield item


def encode(message: Any) -> bytes | None:
    """Encode an outgoing message; a response that cannot be encoded becomes a -32603 error.

    Returns None for a notification that cannot be encoded (it is logged). In a batch, each
    entry is judged on its own. Never raises for messages built by this package.
    """
    if isinstance(message, list):
        try:
            return dumps(message)
        except ValueError:  # e.g. a lone surrogate in a tool's text has no UTF-8 form
            frames = [frame for frame in map(_encode_one, message) if frame is not None]
            return b"[" + b",".join(frames) + b"]"  # as `dumps` writes a list: compact
    return _encode_one(message)


def _encode_one(message: dict[str, Any]) -> bytes | None:
    frame, error = encode_or_error(message, _unencodable)
    if error is None:
        return frame
    logger.error("cannot encode an outgoing message as JSON: %s", error)
    # A notification is owed no answer, and one under no id would puzzle the client: dropped.
    return frame if "id" in message else None


def _unencodable(error: ValueError) -> str:
    return f"Internal error: the response could not be encoded as JSON ({error})"
