"""`SessionRuntime`: one MCP session's live state, whatever transport carries it.

It holds the protocol session (`_core/server_session`) and the session's `PeerRuntime`
(`_runtime/peer`: the cancel scopes of the requests in flight, the ids of the server's own
requests to the client, their waiters and timeouts). A session that outlives one request is in
its server's hub from `open` to `end` (`_runtime/hub` Rule 1); a per-request one is never
opened. This module knows neither transports nor the `Server` facade: it reads what it needs of
its server through `SessionOwner`, and is driven by `_runtime/connection` (channels) or an HTTP
transport (`handle`, once per message). A `subscriptions/listen` stream (2026-07-28) is a
request that never finishes (`_runtime/listening`).

Rule 1: every request that must wait runs inside a cancel scope of its own, made before its
        task starts (so a `notifications/cancelled` read right after the request finds it);
        a cancelled request gets no response.
Rule 2: a request of the server's to the client (`SessionRuntime.request`) goes out only on
        what the transport gave: the carrier of the client's request being answered
        (`answer`, which binds it into the `Requester` it hands the dispatcher), else the
        session's own outbox (`SessionRuntime(outbox=...)`, `attach`); with neither it is
        refused with `LocalProtocolError`. A transport gives a carrier only where the client's
        answer, a message of its own, can come back to this session (a connection, a session
        kept between requests); elsewhere it gives one that refuses, saying why. Every request
        of 2026-07-28 is refused too: that revision asks through input-required results.
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
from .._core.peer import CANCELLED
from .._core.server_session import ServerSession, requested_version
from .._core.subscriptions import LISTEN
from .._dispatch import Dispatcher, ResolvedRequest
from .._exceptions import ClientTimeoutError, LocalProtocolError, RemoteProtocolError
from .._features.context import Context, NotificationSender, Requester
from .hub import SessionHub
from .options import Limits, Timeouts
from .peer import MessageSender, PeerRuntime

__all__ = [
    "MessageSender",
    "SessionInfo",
    "SessionOwner",
    "SessionRuntime",
    "batch_answer",
    "shutting_down",
]

logger = logging.getLogger("trio_mcp")

# Why a message of the server's that no request being answered carries cannot go out, in a
# session that was given no outbox (Rule 2).
_NO_OUTBOX: Final = (
    "this session can reach the client only on the stream of a request it is answering (from "
    "a tool, during its call)"
)

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


class SessionRuntime:
    """The live state of one MCP session, shared by all its requests, whatever the transport.

    A channel transport (e.g. stdio) drives it through `connection`; a per-request transport
    (e.g. Streamable HTTP) calls `handle` once per incoming message. It holds the protocol
    session and, in its `PeerRuntime`, the cancel scope of each request in flight and the tasks
    waiting for the client's answers to the server's own requests.

    Args:
        server: The server whose session this is.
        outbox: Where messages of the server's that no request being answered carries go:
            notifications it was not asked for, and requests outside a call (Rule 2). None
            until the transport gives one (`attach`), if it ever does.
        auth: The verified token of a connection's client, when its transport authenticated
            the connection as a whole (an HTTP transport passes each request's own instead).
    """

    def __init__(
        self,
        server: SessionOwner,
        outbox: MessageSender | None = None,
        *,
        auth: AuthInfo | None = None,
    ) -> None:
        self.server = server
        self.dispatcher = server._dispatcher
        self.session = server._new_session()
        #: Names the session in records and logs (`ResolvedRequest.session_id`).
        self.id = f"{_PID}-{next(_SESSION_IDS)}"
        self.auth = auth
        #: The session's two-way requests: the client's (admitted, cancellable) and the
        #: server's (sent, awaited), over the protocol session's bookkeeping.
        self.peer = PeerRuntime(self.session.peer, us="server", them="client")
        self._outbox = outbox
        # Requests `shut_down` cut short: they are answered "server shutting down", not dropped.
        self._cut: set[RequestId] = set()
        # The `subscriptions/listen` requests in flight: the end of the input ends them.
        self._listens: set[RequestId] = set()
        self._shutting_down = False
        #: Starts a task that lives as long as the session (`attach`); None when nothing can
        #: (a per-request session).
        self.spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        # Whether the session outlives one request (`open`): it then has a place in the hub.
        self._kept = False
        # Whether the session started (a kept session's `initialize` was answered): its end
        # is then told to the server's session hooks too.
        self._started = False

    def attach(
        self,
        outbox: MessageSender,
        spawn: Callable[[Callable[[], Awaitable[None]]], None] | None,
    ) -> None:
        """Give the session its outbox and a way to start tasks that end with it.

        Messages not tied to a request being answered go to `outbox` from now on: list
        changes, resource updates, log messages and requests outside a call (a connection's
        own sender, say, or the stream a Streamable HTTP session's GET reads). With `spawn`,
        the session runs its list watcher and its roots handler in tasks of its own.
        """
        self._outbox = outbox
        self.spawn = spawn
        if spawn is not None:
            hub = self.server._hub
            spawn(lambda: hub.watch_lists(self))

    def open(self) -> None:
        """Join the server's hub: the session lasts beyond one request (`_runtime/hub` Rule 1)."""
        self._kept = True
        self.server._hub.add(self)

    def end(self) -> None:
        """The session is over: cancel what still runs, fail what waits, leave the hub.

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

        Only through an outbox (`attach`), while the session's input has not ended; a
        per-request session has nowhere to put one.
        """
        return self._outbox is not None and self.peer.closed is None

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
            LocalProtocolError: in a session that has nowhere to put it (no outbox).
            ConnectionClosed: when its outbox cannot take it (the session ended).
        """
        send = self._outbox
        if send is None:
            raise LocalProtocolError(f"cannot send {method!r} to the client: {_NO_OUTBOX}")
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
            if call.now:
                self.session.begin(request_id)
            else:
                self.peer.admit(request_id)  # its scope, before its task starts (Rule 1)
        except RemoteProtocolError as exc:
            return error_response(request_id, exc.code, exc.message)
        if call.now:
            if self.dispatcher.has_middleware and self.dispatcher.chained(call):
                return self._through_chain(call)
            response = self.dispatcher.answer_now(self.session, call, self.id)
            self.session.end(request_id)
            if call.request.method == "initialize":
                self._initialized(response)
            return response
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
        self.peer.release(request_id)
        self._listens.discard(request_id)

    async def answer(
        self,
        call: ResolvedRequest,
        notify: NotificationSender,
        carrier: MessageSender | None = None,
    ) -> dict[str, Any] | None:
        """Run a request `start` admitted, in its cancel scope; None when the client cancelled it.

        The request stays admitted: the caller releases it once the response is delivered.

        Args:
            call: The request's record.
            notify: Where its notifications go.
            carrier: What carries the requests of the server's it makes (the stream of its
                answer, say); None: the session's outbox (Rule 2).
        """
        request = call.request
        scope = self.peer.admitted[request.id]
        if self._shutting_down:
            self._cut.add(request.id)
            scope.cancel()
        with scope:
            response = await self.dispatcher.answer(
                self.session, call, notify, self.requester(request, carrier), self.id
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

        For transports whose requests end with their own answers (e.g. Streamable HTTP): they are
        cut short through their cancel scopes and still answered, exactly once. A request the
        client had cancelled already stays unanswered.
        """
        self._shutting_down = True
        for request_id, scope in self.peer.admitted.items():
            if not scope.cancel_called:
                self._cut.add(request_id)
                scope.cancel()

    def requester(self, request: Request, carrier: MessageSender | None = None) -> Requester:
        """How a tool answering `request` sends requests to the client (Rule 2).

        Args:
            request: The client's request being answered.
            carrier: What the transport gave to carry them (None: the session's outbox).
        """
        if requested_version(request.params) is not None:
            return _refuse_modern

        async def ask(
            method: str,
            params: dict[str, Any] | None = None,
            *,
            timeout: float | None = None,  # noqa: ASYNC109
        ) -> Any:
            return await self.request(method, params, timeout=timeout, carrier=carrier)

        return ask

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        carrier: MessageSender | None = None,
    ) -> Any:
        """Send a request to the client and wait for its answer (Rule 2).

        Args:
            method: The JSON-RPC method, e.g. "roots/list".
            params: Its parameters, or None.
            timeout: Seconds to wait for the answer (None: no limit). When they pass, the
                request is cancelled (`notifications/cancelled`) and `ClientTimeoutError`
                raised.
            carrier: What carries it instead of the session's outbox: the carrier the
                transport gave for the client's request being answered.

        Returns:
            The client's `result`.

        Raises:
            RequestError: when the client answers with a JSON-RPC error.
            RemoteProtocolError: when the client's answer is no valid response (both
                result and error, neither, ...): it fails at once.
            ConnectionClosed: when the session's input (or the carrier's stream) ended or
                ends before the answer.
            ClientTimeoutError: when `timeout` passed first.
            LocalProtocolError: when nothing can carry it: no carrier and no outbox, or a
                carrier that refuses (saying why).
        """
        send = self._outbox if carrier is None else carrier
        if send is None:
            raise LocalProtocolError(f"cannot send {method!r} to the client: {_NO_OUTBOX}")
        try:
            return await self.peer.request(method, params, send, timeout=timeout)
        except trio.TooSlowError:
            assert timeout is not None
            raise ClientTimeoutError(method, timeout) from None

    def close(self, reason: str) -> None:
        """The connection ended: each request of the server's still waiting fails (`_runtime/peer`).

        Args:
            reason: Why, for the `ConnectionClosed` each waiter raises.
        """
        self.peer.close(reason)
        # A listen stream waits for nothing but the client, which can send nothing more: it
        # ends now, answered as a stream the server closed (`shutting_down`).
        for request_id in self._listens:
            scope = self.peer.admitted.get(request_id)
            if scope is not None and not scope.cancel_called:
                self._cut.add(request_id)
                scope.cancel()

    async def handle(
        self, message: Any, notify: NotificationSender, carrier: MessageSender | None = None
    ) -> Any:
        """Handle one message (or batch) completely; return what to answer, or None.

        For a per-request transport (e.g. Streamable HTTP).

        Args:
            message: A `ResolvedRequest`, a `Notification`, a `Response`, an `ErrorResponse`,
                an `InvalidMessage`, or a list of them (a batch; requests in it resolved or
                not).
            notify: Where notifications related to this message's requests go.
            carrier: What carries requests of the server's made while answering it (Rule 2).
        """
        if isinstance(message, list):
            return await self.run_batch(self.admit_batch(message), notify, carrier)
        if isinstance(message, ResolvedRequest):
            return await self._handle_request(message, notify, carrier)
        if isinstance(message, Request):
            return await self.handle(self.resolve(message), notify, carrier)
        if isinstance(message, InvalidMessage):
            return self.invalid(message)
        await self.receive(message)
        return None

    async def _handle_request(
        self, call: ResolvedRequest, notify: NotificationSender, carrier: MessageSender | None
    ) -> dict[str, Any] | None:
        response = self.start(call)
        if isinstance(response, dict):
            return response
        if response is not None:
            return await response
        try:
            return await self.answer(call, notify, carrier)
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
        self, slots: list[Any], notify: NotificationSender, carrier: MessageSender | None = None
    ) -> list[Any] | None:
        """Run the requests `admit_batch` admitted, concurrently; the batch's answer or None."""
        await self.fill_batch(slots, notify, carrier)
        return batch_answer(slots)

    async def fill_batch(
        self, slots: list[Any], notify: NotificationSender, carrier: MessageSender | None = None
    ) -> None:
        """Run the requests among `slots` concurrently, each slot taking its request's answer.

        A slot still holding its record afterwards was not answered (the batch was cancelled
        from outside: the caller decides what it is owed); None is a request the client
        cancelled, which is owed nothing.
        """

        async def one(i: int, call: ResolvedRequest) -> None:
            request_id = call.request.id
            try:
                slots[i] = await self.answer(call, notify, carrier)
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
        scope = self.peer.admitted.get(request_id)
        return scope is not None and scope.cancel_called

    def invalid(self, message: InvalidMessage) -> dict[str, Any] | None:
        """The error response for an invalid message; None for one never answered.

        A malformed notification is logged. A malformed response is logged and dropped, and
        the request of the server's whose id it carries, if one waits, fails at once
        (`_runtime/peer` Rule 1).
        """
        if message.answer:
            return _wire_error(message.error)
        if not message.response:
            logger.warning("ignored a malformed notification: %s", message.error.message)
            return None
        why = message.reason
        outcome = self.peer.deliver_malformed(message.error.id, why)
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
        return None

    def cancel_all(self) -> None:
        """Cancel every request in flight (the session is ending)."""
        self.peer.cancel_admitted()

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
            if message.method == CANCELLED:
                if not self.peer.cancelled(message.params):
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
        elif self.peer.deliver(message) is None:
            logger.warning("ignored a response to unknown request id %r", message.id)

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
