"""`SessionRuntime`: one MCP session's live state, whatever transport carries it.

Rule 1: every request that must wait runs inside a cancel scope of its own, made before its
        task starts (so a `notifications/cancelled` read right after the request finds it); a
        cancelled request gets no response. A `subscriptions/listen` stream (2026-07-28) is
        such a request that never finishes: the client cancels it, or it ends when the input
        does (`close`) or the server shuts down, and then gets a plain result (spec 2026-07-28,
        Subscriptions: Graceful Closure) instead of "server shutting down".
Rule 2: the server may ask the client too (`SessionRuntime.request`): the session's `Peer` gives
        the request an id of the server's own, and the answer is routed to the waiting task by
        that id. A waiter that is cancelled tells the client (`notifications/cancelled`, under a
        short shielded scope, best effort: nothing may be left to carry it) and a late answer
        is dropped; when the input ends, every waiter fails with `ConnectionClosed`. A
        malformed answer (`jsonrpc` Rule 4: both result and error, neither, ...) is never
        answered: it is logged and dropped, and the waiter its id names fails at once with
        `RemoteProtocolError` instead of waiting out its timeout. A
        connection carries such requests; without one (Streamable HTTP) a request goes on the
        stream of the client's request being answered (`via`, which `answer` binds into the
        `Requester` it hands the dispatcher), or, outside a call, on the session's own stream
        (`attach_stream`, the GET stream), and only in a session that outlives that request
        (Rule 3), since the client's answer comes in a message of its own. Anything else is
        refused with `LocalProtocolError`: a per-request session (stateless mode), and every
        request of 2026-07-28, which asks through input-required results instead.
Rule 3: a session that outlives one request is in its server's hub from `open` to `end`, and
        only then (a per-request session is never opened): the hub is how the server speaks to
        every live session at once.
This module knows neither transports nor the `Server` facade: it reads what it needs of its
server through `SessionOwner`, and is driven by `connection` (channels) or an HTTP transport.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import trio

from .._core.auth import AuthInfo
from .._core.jsonrpc import (
    INVALID_REQUEST,
    SERVER_UNAVAILABLE,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    Response,
    error_response,
    result_response,
)
from .._core.meta import SUBSCRIPTION_ID
from .._core.peer import Outcome
from .._core.server_session import ServerSession, requested_version
from .._core.subscriptions import LISTEN
from .._dispatch import Dispatcher, ResolvedRequest
from .._exceptions import (
    ClientTimeoutError,
    ConnectionClosed,
    LocalProtocolError,
    RemoteProtocolError,
    RequestError,
)
from .._features.context import Context, NotificationSender, Requester
from .hub import SessionHub
from .options import Limits, Timeouts

__all__ = [
    "CANCEL_NOTICE_SECONDS",
    "MessageSender",
    "SessionInfo",
    "SessionOwner",
    "SessionRuntime",
    "batch_answer",
    "shutting_down",
]

logger = logging.getLogger("trio_mcp")

# Seconds a cancelled request to the client may spend telling it (shielded from the cancellation
# that caused it): a local round trip's worth, so a stalled client cannot hold a tool that was
# told to stop. The client runtime uses the same bound for the same reason.
CANCEL_NOTICE_SECONDS: Final = 2.0

#: How a runtime puts one message on its connection (None: it has no connection to put it on).
MessageSender = Callable[[dict[str, Any]], Awaitable[None]]

# Session ids (`SessionRuntime.id`): unique in the process, and across a fleet's processes on
# one machine, with no secret in them (an HTTP session's own id is a credential).
_SESSION_IDS: Final = itertools.count(1)
_PID: Final = os.getpid()


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A client's session, as session hooks see it (`Server.on_session_start`).

    Attributes:
        id: Names the session for as long as the process lives (no secret: not the HTTP
            `Mcp-Session-Id`); the same as `ResolvedRequest.session_id`.
        protocol_version: The revision it negotiated.
        client_info: The client's `{"name", "version", ...}`, when it told.
        auth: The verified token it was opened with, or None (stdio, memory, no auth).
    """

    id: str
    protocol_version: str | None
    client_info: dict[str, Any] | None
    auth: AuthInfo | None


class SessionOwner(Protocol):
    """What a session and its connection read of their server (`Server` is one).

    A protocol, so that the runtime modules need not import the facade, which imports them.
    """

    _dispatcher: Dispatcher
    _hub: SessionHub
    limits: Limits
    timeouts: Timeouts
    #: Run (in a task of its own) when the client says its roots changed; None: nothing runs.
    _roots_changed: Callable[[Context], Awaitable[None]] | None

    def _new_session(self) -> ServerSession:
        """A fresh protocol session for one client."""
        ...

    def _session_started(self, info: Any) -> None:
        """Tell the server's session hooks that a session started (its `initialize`)."""
        ...

    def _session_ended(self, info: Any) -> None:
        """Tell the server's session hooks that a started session ended."""
        ...


class _Waiter:
    """A task waiting for the client's answer to one request of the server's."""

    __slots__ = ("done", "outcome")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.outcome: Outcome | None = None  # None once done: the connection ended


class SessionRuntime:
    """The live state of one MCP session, shared by all its requests, whatever the transport.

    A channel transport (stdio, memory, legacy SSE) drives it through `connection`; a
    per-request transport (Streamable HTTP) calls `handle` once per incoming message. It holds
    the protocol session, one cancel scope per request in flight, and the tasks waiting for
    the client's answers to the server's own requests.

    Args:
        server: The server whose session this is.
        send: How to put a message on the connection; None for a per-request transport,
            whose requests to the client go on the stream of the request being answered
            (Rule 2).
        auth: The verified token of a connection's client, when its transport authenticated
            the connection as a whole (an HTTP transport passes each request's own instead).
    """

    def __init__(
        self,
        server: SessionOwner,
        send: MessageSender | None = None,
        *,
        auth: AuthInfo | None = None,
    ) -> None:
        self.server = server
        self.dispatcher = server._dispatcher
        self.session = server._new_session()
        #: Names the session in records and logs (`ResolvedRequest.session_id`).
        self.id = f"{_PID}-{next(_SESSION_IDS)}"
        self.auth = auth
        #: The session's two-way bookkeeping: the client's requests and the server's.
        self.peer = self.session.peer
        self._send = send
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        self._waiters: dict[RequestId, _Waiter] = {}
        # Requests `shut_down` cut short: they are answered "server shutting down", not dropped.
        self._cut: set[RequestId] = set()
        # The `subscriptions/listen` requests in flight: the end of the input ends them.
        self._listens: set[RequestId] = set()
        self._shutting_down = False
        #: Starts a task that lives as long as the connection (set by `connection`), or as the
        #: session over Streamable HTTP (`attach_stream`); None for a per-request session.
        self.spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        # Whether the session outlives one request (`open`): only then can a message of the
        # client's own (the answer to a request of the server's) reach it later.
        self._kept = False
        # Streamable HTTP: the session's server-to-client stream, for messages not tied to a
        # request being answered (`attach_stream`); None until the transport gives it one.
        self._stream: MessageSender | None = None
        # Whether the session started (a kept session's `initialize` was answered): its end
        # is then told to the server's session hooks too.
        self._started = False

    def attach_stream(
        self,
        send: MessageSender,
        spawn: Callable[[Callable[[], Awaitable[None]]], None] | None,
    ) -> None:
        """Give a session without a connection a stream of its own (Streamable HTTP's GET).

        Messages not tied to a request being answered go to `send` from now on: list changes,
        resource updates, log messages and requests outside a call. With `spawn`, the session
        runs its list watcher and its roots handler in tasks that end with it.
        """
        self._stream = send
        self.spawn = spawn
        if spawn is not None:
            hub = self.server._hub
            spawn(lambda: hub.watch_lists(self))

    def open(self) -> None:
        """Join the server's hub: the session lasts beyond one request (Rule 3)."""
        self._kept = True
        self.server._hub.add(self)

    def end(self) -> None:
        """The session is over: cancel what still runs, fail what waits, leave the hub (Rule 3).

        Its subscriptions end with it: nothing may hold their memory after it.
        """
        self.cancel_all()
        self.session.subscriptions.clear()
        if self._started:
            self._started = False
            self.server._session_ended(self.info())
        # However it ended (end of input, cancellation, a crash), a request the server sent to
        # the client must not wait for ever; a reason given earlier by `close` is kept.
        self.close("the session ended")
        self.server._hub.discard(self)

    @property
    def can_notify(self) -> bool:
        """Whether a message the client did not ask for can reach it now.

        Only over a connection that is still open, or in a Streamable HTTP session with a
        stream of its own (`attach_stream`); a per-request session has nowhere to put one.
        """
        return (self._send is not None or self._stream is not None) and self.peer.closed is None

    @property
    def protocol_version(self) -> str | None:
        """The revision the session speaks: None until `initialize` (or `adopt`)."""
        return self.session.protocol_version

    @property
    def wants_list_changes(self) -> bool:
        """Whether the client hears of list changes: an initialized handshake-era session."""
        return self.session.protocol_version is not None

    def subscribed(self, uri: str) -> bool:
        """Whether the client subscribed to updates of `uri` (`resources/subscribe`)."""
        return uri in self.session.subscriptions

    def follows_task(self, task_id: str) -> bool:
        """Whether the client hears of the task's status changes (one of its calls became it)."""
        return task_id in self.session.followed_tasks

    def forget_task(self, task_id: str) -> None:
        """Stop following the task (it settled)."""
        self.session.followed_tasks.pop(task_id, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the client a notification of the server's own (see `can_notify`).

        Raises:
            LocalProtocolError: in a session that has nowhere to put it (a per-request one).
            ConnectionClosed: when its stream cannot take it (the session ended).
        """
        send = self._send or self._stream
        if send is None:
            raise LocalProtocolError(
                f"cannot send {method!r} to the client: this Streamable HTTP session lasts one "
                "request, so nothing can carry a message outside its answer"
            )
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await send(message)

    @property
    def in_flight(self) -> int:
        """Requests admitted and not yet released."""
        return self.session.in_flight_count

    def resolve(self, request: Request) -> ResolvedRequest:
        """The record of a request that came on the connection (its token: the connection's)."""
        return self.dispatcher.resolve(request, self.auth)

    def start(self, call: ResolvedRequest) -> dict[str, Any] | Awaitable[dict[str, Any]] | None:
        """Take a request: its response when it needs no waiting, else None (run it: `answer`).

        A request answered here is done (its id free again). One that needs no waiting but goes
        through middleware that never wait (`Middleware.inline`) is answered by the awaitable
        returned, on the caller's own task: await it at once. One that must wait is admitted
        (its id in flight) and given its cancel scope now, so that a `notifications/cancelled`
        read right after it still finds it; its runner calls `answer`, then `release` once the
        response is delivered.
        """
        request_id = call.request.id
        try:
            self.session.begin(request_id)
        except RemoteProtocolError as exc:
            return error_response(request_id, exc.code, exc.message)
        if call.now:
            if self.dispatcher.chained(call):
                return self._through_chain(call)
            response = self.dispatcher.answer_now(self.session, call, self.id)
            self.session.end(request_id)
            if call.request.method == "initialize":
                self._initialized(response)
            return response
        self._scopes[request_id] = trio.CancelScope()
        if call.request.method == LISTEN:
            self._listens.add(request_id)
        return None

    async def _through_chain(self, call: ResolvedRequest) -> dict[str, Any]:
        """A record that needs no waiting, answered through middleware that never wait."""
        try:
            # No context is made for it (no function of it takes one): nothing to notify.
            return await self.dispatcher.answer(
                self.session, call, _no_notifications, None, self.id
            )
        finally:
            self.session.end(call.request.id)

    def _initialized(self, response: dict[str, Any]) -> None:
        # A kept session starts with its `initialize` answered: the server's hooks hear of it.
        if self._kept and not self._started and "result" in response:
            self._started = True
            self.server._session_started(self.info())

    def info(self) -> SessionInfo:
        """The session as session hooks see it."""
        return SessionInfo(
            self.id, self.session.protocol_version, self.session.client_info, self.auth
        )

    def release(self, request_id: RequestId) -> None:
        """Forget a request `start` admitted; its id may be used again."""
        self._scopes.pop(request_id, None)
        self._listens.discard(request_id)
        self.session.end(request_id)

    async def answer(
        self,
        call: ResolvedRequest,
        notify: NotificationSender,
        via: MessageSender | None = None,
    ) -> dict[str, Any] | None:
        """Run a request `start` admitted, in its cancel scope; None when the client cancelled it.

        The request stays admitted: the caller releases it once the response is delivered.

        Args:
            call: The request's record.
            notify: Where its notifications go.
            via: Where the requests of the server's it makes go (the stream of its answer),
                when the session has no connection (Rule 2).
        """
        request = call.request
        scope = self._scopes[request.id]
        if self._shutting_down:
            self._cut.add(request.id)
            scope.cancel()
        with scope:
            response = await self.dispatcher.answer(
                self.session, call, notify, self.requester(request, via), self.id
            )
        if request.method == "initialize":
            self._initialized(response)
        if not scope.cancel_called:
            return response
        if request.id in self._cut:
            self._cut.discard(request.id)
            return shutting_down(request)
        # A call can finish without reaching a checkpoint after its cancellation (an unknown
        # tool, bad arguments, an async tool that never awaits): it is still not answered.
        return None

    def shut_down(self) -> None:
        """Stop every request running or still to come, each answered "server shutting down".

        For transports whose requests end with their own answers (Streamable HTTP): they are
        cut short through their cancel scopes and still answered, exactly once. A request the
        client had cancelled already stays unanswered.
        """
        self._shutting_down = True
        for request_id, scope in self._scopes.items():
            if not scope.cancel_called:
                self._cut.add(request_id)
                scope.cancel()

    def requester(self, request: Request, via: MessageSender | None = None) -> Requester:
        """How a tool answering `request` sends requests to the client (Rule 2).

        Args:
            request: The client's request being answered.
            via: Its stream, for a session without a connection (Streamable HTTP).
        """
        if requested_version(request.params) is not None:
            return _refuse_modern

        async def ask(
            method: str,
            params: dict[str, Any] | None = None,
            *,
            timeout: float | None = None,  # noqa: ASYNC109
        ) -> Any:
            return await self.request(method, params, timeout=timeout, via=via)

        return ask

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        via: MessageSender | None = None,
    ) -> Any:
        """Send a request to the client and wait for its answer (Rule 2).

        Args:
            method: The JSON-RPC method, e.g. "roots/list".
            params: Its parameters, or None.
            timeout: Seconds to wait for the answer (None: no limit). When they pass, the
                request is cancelled (`notifications/cancelled`) and `ClientTimeoutError`
                raised.
            via: Where to send it instead of the session's connection: the stream of the
                client's request being answered. A session without a connection needs it.

        Returns:
            The client's `result`.

        Raises:
            RequestError: when the client answers with a JSON-RPC error.
            RemoteProtocolError: when the client's answer is no valid response (both
                result and error, neither, ...): it fails at once.
            ConnectionClosed: when the connection (or `via`'s stream) ended or ends before
                the answer.
            ClientTimeoutError: when `timeout` passed first.
            LocalProtocolError: when nothing can carry it: a session without a connection
                that lasts one request (stateless Streamable HTTP), or no `via` either.
        """
        send = self._carrier(method, via)
        if timeout is None:
            return await self._request(send, method, params)
        with trio.move_on_after(timeout) as waited:
            return await self._request(send, method, params)
        assert waited.cancelled_caught
        raise ClientTimeoutError(method, timeout)

    def _carrier(self, method: str, via: MessageSender | None) -> MessageSender:
        """What carries a request of the server's to the client, or why nothing can (Rule 2)."""
        if via is None and self._send is not None:
            return self._send
        if self._send is None and not self._kept:
            raise LocalProtocolError(
                f"cannot send {method!r} to the client: this Streamable HTTP session lasts one "
                "request (stateless mode), so the client's answer, which comes in a POST of its "
                "own, could never reach it; serve with sessions (not stateless), or over stdio "
                "or HTTP+SSE, to ask the client"
            )
        if via is None:
            if self._stream is not None:
                return self._stream
            raise LocalProtocolError(
                f"cannot send {method!r} to the client: over Streamable HTTP the server can ask "
                "only on the stream of a request it is answering (from a tool, during its call)"
            )
        return via

    async def _request(
        self, send: MessageSender, method: str, params: dict[str, Any] | None
    ) -> Any:
        if self.peer.closed is not None:
            raise ConnectionClosed(self.peer.closed)
        outgoing = self.peer.start_request(method, params)
        waiter = self._waiters[outgoing.id] = _Waiter()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": outgoing.id, "method": method}
        if params is not None:
            message["params"] = params
        sent = False
        try:
            await send(message)
            sent = True
            await waiter.done.wait()
        finally:
            del self._waiters[outgoing.id]
            # Still pending here means nobody will read the answer (the waiter was cancelled):
            # forget the id, so a late answer is dropped, and tell the client to stop (if the
            # request reached it at all).
            notice = self.peer.cancel_outbound(outgoing.id, "cancelled by the server")
            if notice is not None and sent and self.peer.closed is None:
                await _send_cancel(send, notice.params)
        outcome = waiter.outcome
        if outcome is None:
            raise ConnectionClosed(self.peer.closed or "connection closed")
        if outcome.error is not None:
            raise RequestError(outcome.error.message, outcome.error.code, outcome.error.data)
        if outcome.malformed is not None:
            raise RemoteProtocolError(
                f"the client answered {method} with a malformed response ({outcome.malformed})",
                INVALID_REQUEST,
            )
        return outcome.result

    def close(self, reason: str) -> None:
        """The connection ended: every request of the server's still waiting fails (Rule 2).

        Args:
            reason: Why, for the `ConnectionClosed` each waiter raises.
        """
        for request_id in self.peer.close(reason):
            self._waiters[request_id].done.set()  # no outcome: the waiter raises
        # A listen stream waits for nothing but the client, which can send nothing more: it
        # ends now, answered as a stream the server closed (`shutting_down`).
        for request_id in self._listens:
            scope = self._scopes.get(request_id)
            if scope is not None and not scope.cancel_called:
                self._cut.add(request_id)
                scope.cancel()

    async def handle(
        self, message: Any, notify: NotificationSender, via: MessageSender | None = None
    ) -> Any:
        """Handle one message (or batch) completely; return what to answer, or None.

        For a per-request transport (Streamable HTTP).

        Args:
            message: A `ResolvedRequest`, a `Notification`, a `Response`, an `ErrorResponse`,
                an `InvalidMessage`, or a list of them (a batch; requests in it resolved or
                not).
            notify: Where notifications related to this message's requests go.
            via: Where requests of the server's made while answering it go (its stream).
        """
        if isinstance(message, list):
            return await self.run_batch(self.admit_batch(message), notify, via)
        if isinstance(message, ResolvedRequest):
            return await self._handle_request(message, notify, via)
        if isinstance(message, Request):
            return await self.handle(self.resolve(message), notify, via)
        if isinstance(message, InvalidMessage):
            return self.invalid(message)
        await self.receive(message)
        return None

    async def _handle_request(
        self, call: ResolvedRequest, notify: NotificationSender, via: MessageSender | None
    ) -> dict[str, Any] | None:
        response = self.start(call)
        if isinstance(response, dict):
            return response
        if response is not None:
            return await response
        try:
            return await self.answer(call, notify, via)
        finally:
            self.release(call.request.id)

    def admit_batch(self, messages: list[Any]) -> list[Any]:
        """The synchronous first pass over a batch, run as soon as it is read.

        Admits its requests and gives each its cancel scope (so that a cancellation on the
        next line finds it), answers invalid entries and takes notifications. A batch in a
        session whose revision has no batches (all but 2025-03-26) is refused whole, with one
        -32600 error. A batch longer
        than the server's `max_in_flight` is refused whole: it would otherwise start that many
        tasks at once, past the limit that bounds what one client can make the server hold.

        Returns:
            One slot per message: a `ResolvedRequest` still to run, an answer, or None.
        """
        try:
            self.session.check_batch()
        except RemoteProtocolError as exc:
            return [error_response(None, exc.code, exc.message)]
        limit = self.server.limits.max_in_flight
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
                message = self.resolve(message)  # noqa: PLW2901 - the request, resolved
            if isinstance(message, ResolvedRequest):
                # Every request of a batch runs in its task (its answer goes with the others').
                call = message._replace(now=False) if message.now else message
                refused = self.start(call)
                slots.append(call if refused is None else refused)
            elif isinstance(message, InvalidMessage):
                slots.append(self.invalid(message))
            else:
                self.incoming(message)
                slots.append(None)
        return slots

    async def run_batch(
        self, slots: list[Any], notify: NotificationSender, via: MessageSender | None = None
    ) -> list[Any] | None:
        """Run the requests `admit_batch` admitted, concurrently; the batch's answer or None."""
        await self.fill_batch(slots, notify, via)
        return batch_answer(slots)

    async def fill_batch(
        self, slots: list[Any], notify: NotificationSender, via: MessageSender | None = None
    ) -> None:
        """Run the requests among `slots` concurrently, each slot taking its request's answer.

        A slot still holding its record afterwards was not answered (the batch was cancelled
        from outside: the caller decides what it is owed); None is a request the client
        cancelled, which is owed nothing.
        """

        async def one(i: int, call: ResolvedRequest) -> None:
            request_id = call.request.id
            try:
                slots[i] = await self.answer(call, notify, via)
            finally:
                if slots[i] is call and self.was_cancelled(request_id):
                    slots[i] = None  # cut short, but the client cancelled it: owed nothing
                self.release(request_id)

        async with trio.open_nursery() as nursery:
            for i, slot in enumerate(slots):
                if isinstance(slot, ResolvedRequest):
                    nursery.start_soon(one, i, slot)

    def was_cancelled(self, request_id: RequestId) -> bool:
        """Whether the client cancelled this admitted request (it is then owed no answer)."""
        scope = self._scopes.get(request_id)
        return scope is not None and scope.cancel_called

    def invalid(self, message: InvalidMessage) -> dict[str, Any] | None:
        """The error response for an invalid message; None for one never answered.

        A malformed notification is logged. A malformed response is logged and dropped, and
        the request of the server's whose id it carries, if one waits, fails at once (Rule 2).
        """
        if message.answer:
            return _wire_error(message.error)
        if not message.response:
            logger.warning("ignored a malformed notification: %s", message.error.message)
            return None
        why = message.reason
        outcome = self.peer.receive_malformed(message.error.id, why)
        if outcome is None:
            logger.warning(
                "dropped a malformed response (id %r, awaited by no request): %s",
                message.error.id,
                why,
            )
            return None
        logger.warning(
            "dropped a malformed response to %s (id %r), which fails: %s",
            outcome.method,
            outcome.request_id,
            why,
        )
        waiter = self._waiters[outcome.request_id]
        waiter.outcome = outcome
        waiter.done.set()
        return None

    def cancel_all(self) -> None:
        """Cancel every request in flight (the session is ending)."""
        for scope in self._scopes.values():
            scope.cancel()

    async def receive(self, message: Notification | Response | ErrorResponse) -> None:
        """Take a notification (through the middleware that see them) or a response."""
        if isinstance(message, Notification) and self.dispatcher.chain.sees_notifications:
            await self.dispatcher.notified(message, self._take_notification)
        else:
            self.incoming(message)

    async def _take_notification(self, notification: Notification) -> None:
        self.incoming(notification)

    def incoming(self, message: Notification | Response | ErrorResponse) -> None:
        """Take a notification or a response from the client (no middleware: `receive`)."""
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
            elif message.method == "notifications/roots/list_changed":
                self._roots_changed()
            elif message.method == "notifications/initialized":
                pass  # the handshake's last step: `initialize` already settled everything
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

    def _roots_changed(self) -> None:
        """Run the server's roots handler for this session, in a task of its own."""
        handler = self.server._roots_changed
        if handler is None:
            logger.debug("notifications/roots/list_changed: the server registered no handler")
        elif self.spawn is None:
            logger.info(
                "notifications/roots/list_changed: the handler cannot run in this session (no "
                "task can outlive its request: stateless Streamable HTTP, or an application "
                "whose `run` is not running)"
            )
        else:
            self.spawn(lambda: self._run_roots_handler(handler))

    async def _run_roots_handler(self, handler: Callable[[Context], Awaitable[None]]) -> None:
        scope = self.session.scope("notifications/roots/list_changed", None)
        context = Context(
            request_id="notifications/roots/list_changed",
            tool_name="notifications/roots/list_changed",
            scope=scope,
            send=self.notify,
            requester=self.request,
            ask_timeout=self.dispatcher.ask_timeout,
            lifespan=self.dispatcher.lifespan_value,
        )
        try:
            await handler(context)
        except Exception:
            logger.exception("the roots/list_changed handler raised")


async def _no_notifications(method: str, params: dict[str, Any]) -> None:
    """Where a record answered without waiting sends notifications: it sends none."""
    logger.debug("dropped %s of a request answered at once", method)


async def _send_cancel(send: MessageSender, params: dict[str, Any] | None) -> None:
    """Tell the client to stop a request of the server's, if anything can still carry that."""
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + CANCEL_NOTICE_SECONDS
        try:
            await send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
        except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            # Best effort (Rule 2): the stream that carried the request may be gone already.
            logger.debug("could not tell the client to stop request %s: %s", params, exc)


async def _refuse_modern(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    timeout: float | None = None,  # noqa: ASYNC109
) -> Any:
    """The `Requester` of a 2026-07-28 request: that revision has no requests to the client."""
    raise LocalProtocolError(
        f"cannot send {method!r} to the client: a 2026-07-28 request cannot be answered with a "
        "request of the server's; that revision asks the client through an input-required "
        "result instead"
    )


def shutting_down(request: Request) -> dict[str, Any]:
    """The answer of a request the server stopped before it finished (it is shutting down).

    A `subscriptions/listen` stream has no other end: it gets the plain result that tells the
    client the server closed it (spec 2026-07-28, Subscriptions: Graceful Closure).
    """
    if request.method == LISTEN:
        return result_response(
            request.id, {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: request.id}}
        )
    return error_response(
        request.id,
        SERVER_UNAVAILABLE,
        "Server shutting down: the request was stopped before it was answered",
    )


def batch_answer(slots: list[Any]) -> list[Any] | None:
    """A filled batch's answer: its responses, or None when it had only notifications."""
    answered = [slot for slot in slots if slot is not None]
    return answered or None  # a batch of notifications only gets no response at all


def _wire_error(error: ErrorResponse) -> dict[str, Any]:
    return error_response(error.id, error.code, error.message, error.data)
