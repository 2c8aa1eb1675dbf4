"""`Server`: the registry users fill, and the trio runtime that serves one connection.

Rule 1: a connection is a stream of frames (one JSON text each) in, and frames out. The runtime
        never sees bytes of a transport, sockets or subprocesses: transports bring the frames.
Rule 2: every request that must wait runs in its own task in the connection's nursery, inside
        its own cancel scope (so `notifications/cancelled` can end it); a cancelled request gets
        no response. Responses go out as they complete; those answered on the connection's own
        task go out together once per input batch (one write for a pipelining client's burst).
Rule 3: nothing that arrives can end the connection: an undecodable frame, a bad message or a
        failing tool is answered and the loop goes on. Only end of input ends it, and then
        in-flight requests get `shutdown_grace` seconds to finish before they are cancelled.
Rule 4: at most `max_in_flight` requests run at once per connection; past that the reader stops
        reading (back-pressure) rather than refusing or dropping anything.
Rule 5: the server may ask the client too (`SessionRuntime.request`): the session's `Peer` gives
        the request an id of the server's own, and the answer is routed to the waiting task by
        that id. A waiter that is cancelled tells the client (`notifications/cancelled`, under a
        short shielded scope) and a late answer is dropped; when the input ends, every waiter
        fails with `ConnectionClosed`. Only a connection can carry such requests: over
        Streamable HTTP (one handler per request) `request` refuses, for now.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

import trio

from .._core.framing import DEFAULT_MAX_LINE_BYTES, LineTooLong
from .._core.jsonrpc import (
    INVALID_REQUEST,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    Response,
    dumps,
    encode_or_error,
    error_response,
    parse,
)
from .._core.peer import Outcome
from .._core.server_session import SUPPORTED_VERSIONS, ServerSession
from .._core.types import ToolAnnotations
from .._dispatch import Dispatcher
from .._exceptions import ConnectionClosed, LocalProtocolError, RemoteProtocolError, RequestError
from .._features.context import NotificationSender
from .._features.tools import (
    RawHandler,
    Tool,
    ToolRegistry,
    discover_tools,
    make_raw_tool,
    make_tool,
)
from .._version import __version__
from .invoke import TrioInvoker

#: What a connection reads: frames (one JSON text each), or batches of them in which a
#: `LineTooLong` stands for a frame that was too long to keep.
Frames = trio.abc.ReceiveChannel[bytes] | trio.abc.ReceiveChannel[Sequence[bytes | LineTooLong]]

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "Server", "SessionRuntime", "encode"]

logger = logging.getLogger("trio_mcp")

F = TypeVar("F", bound=Callable[..., Any])

# 1024 concurrent requests per connection: HTTP/2 servers commonly allow 100-250 concurrent
# streams per connection (nginx, Go net/http); MCP tools are often long-running I/O waits, so we
# allow more, while still bounding the tasks and memory one client can pin.
DEFAULT_MAX_IN_FLIGHT: Final = 1024
# Seconds that in-flight calls may still run after the input ended (stdio EOF), before they are
# cancelled. Kubernetes gives a terminating pod 30 s; a subprocess server is usually given less
# by the client that closed its stdin, so we pick a short bound.
DEFAULT_SHUTDOWN_GRACE: Final = 10.0
# Seconds a cancelled request to the client may spend telling it (shielded from the cancellation
# that caused it): a local round trip's worth, so a stalled client cannot hold a tool that was
# told to stop. The client runtime uses the same bound for the same reason.
CANCEL_NOTICE_SECONDS: Final = 2.0

#: How a runtime puts one message on its connection (None: it has no connection to put it on).
MessageSender = Callable[[dict[str, Any]], Awaitable[None]]


class Server:
    """An MCP server: a registry of tools plus how to serve them.

    Args:
        name: The server's name, sent as `serverInfo.name`.
        version: The server's version, sent as `serverInfo.version`.
        instructions: Text telling the model how to use this server.
        page_size: Tools per `tools/list` page; None lists all tools in one page.
        mask_error_details: Hide the type and message of unexpected tool exceptions from
            clients (they are still logged).
        max_line_bytes: Largest message accepted on line-framed transports.
        max_in_flight: Requests run at once per connection before reading pauses.
        shutdown_grace: Seconds in-flight calls may take to finish after the input ends.
        versions: Protocol revisions accepted, newest first.
    """

    def __init__(
        self,
        name: str = "trio-mcp",
        version: str | None = None,
        *,
        instructions: str | None = None,
        page_size: int | None = None,
        mask_error_details: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
        versions: tuple[str, ...] = SUPPORTED_VERSIONS,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be positive")
        self.name = name
        self.version = version or __version__
        self.instructions = instructions
        self.max_line_bytes = max_line_bytes
        self.max_in_flight = max_in_flight
        self.shutdown_grace = shutdown_grace
        self.versions = versions
        self.registry = ToolRegistry()
        self.dispatcher = Dispatcher(
            self.registry,
            TrioInvoker(),
            page_size=page_size,
            mask_error_details=mask_error_details,
        )

    # -- registration ---------------------------------------------------------------------------

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """Register one function as a tool; arguments override its `@tool` metadata.

        Returns:
            The registered tool.

        Raises:
            ToolDefinitionError: when the function cannot be a tool or the name is taken.
        """
        new = make_tool(
            fn,
            name=name,
            description=description,
            title=title,
            annotations=annotations,
            inline=inline,
            timeout=timeout,
        )
        self.registry.add(new)
        return new

    def tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool | None = None,
        timeout: float | None = None,
    ) -> Callable[[F], F]:
        """Decorator registering a function as a tool on this server right away.

        Raises:
            ToolDefinitionError: when the function cannot be a tool or the name is taken.
        """

        def register(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                description=description,
                title=title,
                annotations=annotations,
                inline=inline,
                timeout=timeout,
            )
            return fn

        return register

    def add_tools(self, obj: Any) -> list[Tool]:
        """Register every `@tool`-tagged function of a module, class or instance.

        Returns:
            The registered tools, in definition order.

        Raises:
            ToolDefinitionError: when one cannot be registered (none of them is, then).
        """
        tools = [make_tool(fn) for fn in discover_tools(obj)]
        # Register into a scratch registry first: a clash (within `obj` or with a tool already
        # registered) then raises before this server's registry has changed at all.
        trial = ToolRegistry()
        for existing in self.registry:
            trial.add(existing)
        for new in tools:
            trial.add(new)
        for new in tools:
            self.registry.add(new)
        return tools

    def add_raw_tool(
        self,
        name: str,
        input_schema: dict[str, Any],
        handler: RawHandler,
        *,
        description: str | None = None,
        title: str | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: ToolAnnotations | None = None,
        inline: bool = False,
        timeout: float | None = None,
    ) -> Tool:
        """Register a tool from a hand-written JSON Schema and a handler `(arguments) -> result`.

        The handler may be sync or async. Arguments get light checks only (required names,
        closed objects, top-level JSON types): the handler owns deeper validation.

        Raises:
            ToolDefinitionError: for a bad name, a non-object schema or a taken name.
        """
        new = make_raw_tool(
            name,
            input_schema,
            handler,
            description=description,
            title=title,
            output_schema=output_schema,
            annotations=annotations,
            inline=inline,
            timeout=timeout,
        )
        self.registry.add(new)
        return new

    @property
    def tools(self) -> list[Tool]:
        """The registered tools, in registration order."""
        return list(self.registry)

    def new_session(self) -> ServerSession:
        """A fresh protocol session for one client connection."""
        return ServerSession(
            server_info={"name": self.name, "version": self.version},
            capabilities={"tools": {"listChanged": False}, "logging": {}},
            instructions=self.instructions,
            versions=self.versions,
        )

    # -- serving --------------------------------------------------------------------------------

    async def serve_connection(
        self,
        receive: Frames,
        send: trio.abc.SendChannel[bytes],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one client over a pair of frame channels until `receive` ends.

        Args:
            receive: Frames from the client (one JSON text each), or batches of them (a
                `LineTooLong` in a batch stands for a frame that was too long and is answered
                with -32600 in its place); the channel's end ends the session.
            send: Where response and notification frames go.
            task_status: Reports when the server is ready to read.
        """
        conn = _Connection(self, send)
        await conn.run(receive, task_status)


class _Waiter:
    """A task waiting for the client's answer to one request of the server's."""

    __slots__ = ("done", "outcome")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.outcome: Outcome | None = None  # None once done: the connection ended


class SessionRuntime:
    """The live state of one MCP session, shared by all its requests, whatever the transport.

    A channel transport (stdio, memory, legacy SSE) drives it through `_Connection`; a
    per-request transport (Streamable HTTP) calls `handle` once per incoming message. It holds
    the protocol session, one cancel scope per request in flight, and the tasks waiting for
    the client's answers to the server's own requests.

    Args:
        server: The server whose session this is.
        send: How to put a message on the connection; None for a per-request transport,
            which cannot carry the server's requests to the client.
    """

    def __init__(self, server: Server, send: MessageSender | None = None) -> None:
        self.server = server
        self.dispatcher = server.dispatcher
        self.session = server.new_session()
        #: The session's two-way bookkeeping: the client's requests and the server's.
        self.peer = self.session.peer
        self._send = send
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        self._waiters: dict[RequestId, _Waiter] = {}

    @property
    def in_flight(self) -> int:
        """Requests admitted and not yet released."""
        return self.session.in_flight_count

    def admit(self, request: Request) -> dict[str, Any] | None:
        """Mark the id in flight; an error response if it is already in use."""
        try:
            self.session.begin(request.id)
        except RemoteProtocolError as exc:
            return error_response(request.id, exc.code, exc.message)
        return None

    def prepare(self, request: Request) -> None:
        """Give an admitted request that must wait its cancel scope.

        Call it before the task that runs the request starts, so that a
        `notifications/cancelled` read right after the request still finds the scope. (Requests
        answered by `answer_now` never get one: they cannot be cancelled, being done at once.)
        """
        self._scopes[request.id] = trio.CancelScope()

    def release(self, request_id: RequestId) -> None:
        """Forget a request admitted by `admit`; its id may be used again."""
        self._scopes.pop(request_id, None)
        self.session.end(request_id)

    def answer_now(self, request: Request) -> dict[str, Any] | None:
        """For an admitted request: its response if no waiting is needed (then released)."""
        response = self.dispatcher.respond_now(self.session, request)
        if response is not None:
            self.release(request.id)
        return response

    async def answer(self, request: Request, notify: NotificationSender) -> dict[str, Any] | None:
        """Run an admitted request in its own cancel scope; None when the client cancelled it.

        The request stays admitted: the caller releases it once the response is delivered.
        """
        scope = self._scopes.get(request.id)
        if scope is None:
            self.prepare(request)
            scope = self._scopes[request.id]
        with scope:
            response = await self.dispatcher.respond(self.session, request, notify, self.request)
        # A call can finish without reaching a checkpoint after its cancellation (an unknown
        # tool, bad arguments, an async tool that never awaits): it is still not answered.
        return None if scope.cancel_called else response

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request to the client and wait for its answer (Rule 5).

        Args:
            method: The JSON-RPC method, e.g. "roots/list".
            params: Its parameters, or None.

        Returns:
            The client's `result`.

        Raises:
            RequestError: when the client answers with a JSON-RPC error.
            ConnectionClosed: when the connection ended or ends before the answer.
            LocalProtocolError: over Streamable HTTP, which cannot carry it yet.
        """
        if self._send is None:
            raise LocalProtocolError(
                f"cannot send {method!r} to the client: over Streamable HTTP the server cannot "
                "send requests to the client yet (stdio, in-memory and HTTP+SSE connections can)"
            )
        if self.peer.closed is not None:
            raise ConnectionClosed(self.peer.closed)
        outgoing = self.peer.start_request(method, params)
        waiter = self._waiters[outgoing.id] = _Waiter()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": outgoing.id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            await waiter.done.wait()
        finally:
            del self._waiters[outgoing.id]
            # Still pending here means nobody will read the answer (the waiter was cancelled):
            # forget the id, so a late answer is dropped, and tell the client to stop.
            notice = self.peer.cancel_outbound(outgoing.id, "cancelled by the server")
            if notice is not None and self.peer.closed is None:
                await self._send_cancel(notice.params)
        outcome = waiter.outcome
        if outcome is None:
            raise ConnectionClosed(self.peer.closed or "connection closed")
        if outcome.error is not None:
            raise RequestError(outcome.error.message, outcome.error.code, outcome.error.data)
        return outcome.result

    async def _send_cancel(self, params: dict[str, Any] | None) -> None:
        assert self._send is not None
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + CANCEL_NOTICE_SECONDS
            await self._send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
            )

    def close(self, reason: str) -> None:
        """The connection ended: every request of the server's still waiting fails (Rule 5).

        Args:
            reason: Why, for the `ConnectionClosed` each waiter raises.
        """
        for request_id in self.peer.close(reason):
            self._waiters[request_id].done.set()  # no outcome: the waiter raises

    def handle_now(self, request: Request) -> dict[str, Any] | None:
        """Answer a request completely if that needs no waiting; None if it must go to `handle`.

        For a per-request transport's fast path: a request answered here needs no task, no
        cancel scope and no channel. One that must wait is left as it came (not admitted).
        """
        refused = self.admit(request)
        if refused is not None:
            return refused
        response = self.answer_now(request)  # releases the request when it answers
        if response is None:
            self.release(request.id)
        return response

    async def handle(self, message: Any, notify: NotificationSender) -> Any:
        """Handle one decoded message (or batch) completely; return what to answer, or None.

        Args:
            message: A `Message`, an `InvalidMessage`, or a list of them (a batch).
            notify: Where notifications related to this message's requests go.
        """
        if isinstance(message, list):
            return await self._batch(message, notify)
        if isinstance(message, Request):
            refused = self.admit(message)
            if refused is not None:
                return refused
            try:
                # `answer` runs Dispatcher.respond, which answers at once what needs no waiting.
                return await self.answer(message, notify)
            finally:
                self.release(message.id)
        if isinstance(message, InvalidMessage):
            return self.invalid(message)
        self.incoming(message)
        return None

    async def _batch(self, messages: list[Any], notify: NotificationSender) -> list[Any] | None:
        return await self.run_batch(self.admit_batch(messages), notify)

    def admit_batch(self, messages: list[Any]) -> list[Any]:
        """The synchronous first pass over a batch, run as soon as it is read.

        Admits its requests and gives each its cancel scope (so that a cancellation on the
        next line finds it), answers invalid entries and takes notifications. A batch longer
        than the server's `max_in_flight` is refused whole: it would otherwise start that many
        tasks at once, past the limit that bounds what one client can make the server hold.

        Returns:
            One slot per message: a `Request` still to run, an answer, or None.
        """
        limit = self.server.max_in_flight
        if len(messages) > limit:
            return [
                error_response(
                    None,
                    INVALID_REQUEST,
                    f"Invalid Request: a batch of {len(messages)} messages is over the limit of "
                    f"{limit}; send fewer at a time",
                )
            ]
        slots: list[Any] = []
        for message in messages:
            if isinstance(message, Request):
                refused = self.admit(message)
                if refused is None:
                    self.prepare(message)
                slots.append(message if refused is None else refused)
            elif isinstance(message, InvalidMessage):
                slots.append(self.invalid(message))
            else:
                self.incoming(message)
                slots.append(None)
        return slots

    async def run_batch(self, slots: list[Any], notify: NotificationSender) -> list[Any] | None:
        """Run the requests `admit_batch` admitted, concurrently; the batch's answer or None."""
        responses = list(slots)

        async def one(i: int, request: Request) -> None:
            try:
                responses[i] = await self.answer(request, notify)
            finally:
                self.release(request.id)

        async with trio.open_nursery() as nursery:
            for i, slot in enumerate(slots):
                if isinstance(slot, Request):
                    responses[i] = None
                    nursery.start_soon(one, i, slot)
        answered = [r for r in responses if r is not None]
        return answered or None  # a batch of notifications only gets no response at all

    @staticmethod
    def invalid(message: InvalidMessage) -> dict[str, Any] | None:
        """The error response for an invalid message (None for a malformed notification)."""
        if message.answer:
            return _wire_error(message.error)
        logger.warning("ignored a malformed notification: %s", message.error.message)
        return None

    def cancel_all(self) -> None:
        """Cancel every request in flight (the session is ending)."""
        for scope in self._scopes.values():
            scope.cancel()

    def incoming(self, message: Notification | Response | ErrorResponse) -> None:
        """Take a notification or a response from the client."""
        if isinstance(message, Notification):
            if message.method == "notifications/cancelled":
                # The peer ignores malformed params and ids of the wrong type (True / 1.0 would
                # otherwise hit the request with id 1) and ids not in flight.
                request_id = self.peer.receive_cancelled(message.params)
                scope = self._scopes.get(request_id) if request_id is not None else None
                if scope is not None:
                    scope.cancel()
                else:
                    logger.debug(
                        "cancellation for unknown or finished request %r",
                        (message.params or {}).get("requestId"),
                    )
            elif message.method == "notifications/initialized":
                self.session.notify_initialized()
            else:
                logger.debug("ignored notification %s", message.method)
        else:
            outcome = self.peer.receive_response(message)
            if outcome is None:
                logger.warning("ignored a response to unknown request id %r", message.id)
            else:
                waiter = self._waiters[outcome.request_id]
                waiter.outcome = outcome
                waiter.done.set()


class _Connection:
    """A session served over a pair of frame channels (see the module rules)."""

    def __init__(self, server: Server, send: trio.abc.SendChannel[bytes]) -> None:
        self.server = server
        self.runtime = SessionRuntime(server, self.send)
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
                f"Invalid Request: message longer than {server.max_line_bytes} bytes; skipped",
            )
        )
        self._tasks = 0  # running request and batch tasks
        self._changed = trio.Event()  # set whenever `_tasks` drops

    async def run(self, receive: Frames, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            async with receive:
                async for item in _drain(receive):
                    for frame in (item,) if isinstance(item, bytes | bytearray) else item:
                        if isinstance(frame, LineTooLong):
                            await self._send_frame(self._too_long)
                        else:
                            await self._frame(frame, nursery)
                        if self._tasks >= self.server.max_in_flight:
                            await self._flushed()
                            while self._tasks >= self.server.max_in_flight:
                                await self._task_done()
                    await self._flushed()
            # Nothing more can arrive, the client's answers included: calls waiting for one
            # fail now, and may still finish within the grace period.
            self.runtime.close("the client closed the connection")
            with trio.move_on_after(self.server.shutdown_grace):
                while self._tasks:
                    await self._task_done()
            if self._tasks:
                logger.warning("input ended; cancelling %d call(s) still running", self._tasks)
            nursery.cancel_scope.cancel()

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
            weight = sum(isinstance(slot, Request) for slot in slots)
            self._start(nursery, self._batch, slots, weight=max(weight, 1))
            return
        message = messages[0]
        runtime = self.runtime
        if isinstance(message, Request):
            # The fast path: answer on the reader's task when no waiting is needed.
            response = runtime.admit(message) or runtime.answer_now(message)
            if response is None:
                runtime.prepare(message)
                self._start(nursery, self._request, message)
                return
            await self.reply(response)
        elif isinstance(message, InvalidMessage):
            error = runtime.invalid(message)
            if error is not None:
                await self.reply(error)
        else:
            runtime.incoming(message)

    def _start(
        self, nursery: trio.Nursery, fn: Callable[[Any], Any], arg: Any, *, weight: int = 1
    ) -> None:
        # `weight`: how many requests the task runs (a batch runs several); `max_in_flight`
        # counts requests, not tasks.
        self._tasks += weight
        nursery.start_soon(self._tracked, fn, arg, weight)

    async def _tracked(self, fn: Callable[[Any], Any], arg: Any, weight: int) -> None:
        try:
            await fn(arg)
        finally:
            self._tasks -= weight
            self._changed.set()

    async def _request(self, request: Request) -> None:
        try:
            response = await self.runtime.answer(request, self.notify)
            if response is not None:  # None also when the client cancelled it
                await self.send(response)
        finally:
            self.runtime.release(request.id)

    async def _batch(self, slots: list[Any]) -> None:
        answered = await self.runtime.run_batch(slots, self.notify)
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


def _wire_error(error: ErrorResponse) -> dict[str, Any]:
    return error_response(error.id, error.code, error.message, error.data)
