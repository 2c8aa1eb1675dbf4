"""The client's connection to a server: the link, the reader, and the peer engine in between.

The client never sees bytes of a transport, sockets or subprocesses: it talks to a `Link`
(`_runtime/link`), which sends one message and delivers incoming frames on a channel; links live
in `transports/` and the composition root (`_connect`) picks one. Requests go through the
connection's `PeerRuntime` (`_runtime/peer`), the engine the server session stands on too: ids,
answers matched to the waiting call, a cancelled call told to the server and its late answer
dropped, a malformed answer (`_core/jsonrpc` Rule 4) logged and dropped, never answered, and the
call it names failed at once with `RemoteProtocolError`. Timeouts belong to the caller (`with
trio.fail_after(...)`).

A notification goes to the handler its method names in `notices` (each feature adds its own);
progress, log messages and cancellations are the connection's own. `ping` and a method without a
handler (`handlers`, which the features fill) are answered at once. What a handler of the
server's requests raises is answered through the one error boundary (`_dispatch.error_answer`):
`RequestError` is its own error, anything else -32603 naming the exception, its traceback logged
here.

Rule 1: when the incoming frames end, every waiting call fails with `ConnectionClosed`, whose
        message is the link's account of why (exit code, last stderr lines, network error).
Rule 2: a request is sent once. It is sent again only when it cannot have run: the link says so
        (connection refused), the HTTP server refused the session (404, after which the
        connection initializes a new session), under 2026-07-28 a tools/call's headers
        (HeaderMismatch: the client lists the tools again, once), or the caller marked it
        `retry_safe`.
Rule 3: the client's tasks are the reader, one per server request being handled, and those its
        features start (callbacks, the listen stream), all in the nursery of `open_session`
        (`nursery`) and ended with its `async with`.
Rule 4: nothing that may wait runs on the reader (a slow handler would hold every other answer,
        and a handler that calls the server would wait for itself): the server's requests run
        in tasks of their own, admitted in the engine, and a notification handler starts a
        task for anything that may wait. A cancelled request of the server's gets no answer
        (spec 2025-11-25, cancellation).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import trio

from ..._core.client_records import LogMessage, Progress
from ..._core.client_session import ClientSession, Next
from ..._core.framing import LineTooLong
from ..._core.jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    Response,
    dumps,
    error_response,
    parse,
    result_response,
)
from ..._core.peer import CANCELLED, Peer
from ..._dispatch import error_answer
from ..._exceptions import (
    ConnectionClosed,
    RemoteProtocolError,
    RequestError,
    SessionExpiredError,
    TrioMCPError,
)
from ..link import Link
from ..options import LogHandler, RequestMetaHook
from ..peer import PeerRuntime

__all__ = [
    "CLOSE_REASON_SECONDS",
    "LogHandler",
    "NoticeHandler",
    "ProgressHandler",
    "RequestMetaHook",
    "ServerConnection",
    "ServerRequestHandler",
    "call_handler",
]

logger = logging.getLogger("trio_mcp.client")
#: Where a server's log notifications go when no `log_handler` is given.
server_logger = logging.getLogger("trio_mcp.client.server")

# Seconds a failed send waits for the reader to learn why the connection ended (a subprocess's
# exit code and stderr), so that the caller gets that account rather than "broken pipe".
CLOSE_REASON_SECONDS: Final = 5.0

_LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}

ProgressHandler = Callable[[Progress], Awaitable[None] | None]
#: Answers one kind of server request: `await handler(params)` returns the `result`, or raises
#: `RequestError` to answer with that error.
ServerRequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]
#: Takes one kind of notification's params, on the reader (Rule 4).
NoticeHandler = Callable[[dict[str, Any]], None]


async def call_handler(
    handler: Callable[[Any], Awaitable[None] | None],
    arg: Any,
    what: str = "a progress, log, update or list-change handler",
) -> None:
    """Run a user's callback (sync or async); what it raises is logged as `what`'s, never raised."""
    # A handler's bug must not stop the reader (every other call would hang), nor end a task's
    # call (its status handler is only a display).
    try:
        value = handler(arg)
        if inspect.isawaitable(value):
            await value
    except Exception:
        logger.exception("%s failed", what)


class ServerConnection:
    """One client's connection to its server (see the module rules).

    Args:
        link: The transport.
        session: The client's protocol session (what it declared, what it negotiated).
        log_handler: Receives the server's log notifications (None: the `trio_mcp.client.
            server` logger).
        request_meta: Adds entries to each request's `_meta`.
    """

    def __init__(
        self,
        link: Link,
        session: ClientSession,
        *,
        log_handler: LogHandler | None = None,
        request_meta: RequestMetaHook | None = None,
    ) -> None:
        self.link = link
        self.session = session
        #: The requests in flight both ways: ours, and the server's (Rule 4).
        self.engine = PeerRuntime(Peer(), us="client", them="server")
        #: Method -> handler of the server's requests (Rule 4); tests may add others.
        self.handlers: dict[str, ServerRequestHandler] = {}
        #: Method -> handler of the server's notifications (Rule 4).
        self.notices: dict[str, NoticeHandler] = {}
        #: Where handlers and the features' tasks run: set by `open_session` (Rule 3).
        self.nursery: trio.Nursery | None = None
        #: Why the connection ended, or None while it is open.
        self.closed: str | None = None
        self._closed_event = trio.Event()
        self._reinit_lock = trio.Lock()
        self._log_handler = log_handler
        self._request_meta = request_meta

    @property
    def modern(self) -> bool:
        """Whether the revision in use is a per-request one (2026-07-28)."""
        return self.session.per_request

    # -- sending ----------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        progress: ProgressHandler | None = None,
        retry_safe: bool = False,
        on_id: Callable[[RequestId], None] | None = None,
    ) -> Any:
        """Send a request and return its `result` (`Client.request`).

        `on_id` learns the request's id before it is sent.
        """
        if self.closed is not None:
            raise ConnectionClosed(self.closed)
        body = dict(params or {})
        meta = dict(body.get("_meta") or {})
        if self._request_meta is not None:  # before the id is taken: the hook may raise
            for key, value in self._request_meta(method).items():
                meta.setdefault(key, value)  # what the caller put there stays

        def stamp(request_id: RequestId) -> dict[str, Any] | None:
            if on_id is not None:
                on_id(request_id)
            if progress is not None:
                meta["progressToken"] = request_id
            stamped = self.session.request_meta(meta)
            if stamped:
                body["_meta"] = stamped
            return body if body or params is not None else None

        send = functools.partial(self._send_request, retry_safe=retry_safe)
        return await self.engine.request(
            method, None, send, notice=self._send_notice, stamp=stamp, progress=progress
        )

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (`Client.notify`)."""
        if self.closed is not None:
            raise ConnectionClosed(self.closed)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send(message, retry_safe=False)

    async def _send_request(self, message: dict[str, Any], *, retry_safe: bool) -> None:
        try:
            await self._send(message, retry_safe=retry_safe)
        except SessionExpiredError as expired:
            if message["method"] == "initialize" or self.modern:
                raise
            # The session is gone (server restarted, or the session ended or expired): start a
            # new one, once for all the calls that learn of it together, then send again. The
            # 404 came before the request reached a session, so it cannot run twice (Rule 2).
            async with self._reinit_lock:
                if self.link.session_id in (expired.session_id, None):
                    logger.info("session %s expired; initializing a new one", expired.session_id)
                    await self.initialize()
            await self._send(message, retry_safe=retry_safe)

    async def _send_notice(self, message: dict[str, Any]) -> None:
        await self._send(message, retry_safe=False)

    async def _send(self, message: dict[str, Any], *, retry_safe: bool) -> None:
        try:
            await self.link.send(message, retry_safe=retry_safe)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # The stream broke under us: the reader is about to learn why; wait for its account.
            with trio.move_on_after(CLOSE_REASON_SECONDS):
                await self._closed_event.wait()
            raise ConnectionClosed(self.closed or "connection closed") from None

    # -- the handshake ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Settle the revision with the server: `server/discover`, else `initialize`."""
        # The decisions are the session's (`_core/client_session`); here only the I/O.
        # Over HTTP the revision travels in the MCP-Protocol-Version header too, which is how a
        # server that speaks both eras tells a modern request from one missing its session.
        session = self.session
        if session.probes:
            while True:
                session.begin_discover()
                self.link.negotiated(session.wanted_version)
                try:
                    result = await self.request("server/discover", retry_safe=True)
                except RequestError as exc:
                    step = session.discover_failed(exc.code, exc.data)
                    if step is Next.RAISE:
                        raise
                    if step is Next.INITIALIZE:
                        logger.info("server/discover failed (%s): falling back to initialize", exc)
                        break
                    continue
                if session.discovered(result):
                    self.link.negotiated(session.protocol_version)
                    return
                break
        await self.initialize()

    async def initialize(self) -> None:
        """The handshake of the revisions that have one (and of a session started again)."""
        session = self.session
        result = await self.request("initialize", session.initialize_params(), retry_safe=True)
        session.initialized(result)
        self.link.negotiated(session.protocol_version)
        await self.notify("notifications/initialized")

    # -- receiving --------------------------------------------------------------------------------

    async def read(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read the server's messages until the link's incoming frames end (Rule 1)."""
        task_status.started()
        try:
            async for item in self.link.incoming:
                for frame in (item,) if isinstance(item, bytes | bytearray) else item:
                    if isinstance(frame, LineTooLong):
                        logger.warning("dropped a message longer than %d bytes", frame.limit)
                    else:
                        await self._frame(frame)
            reason = await self.link.close_reason()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            reason = await self.link.close_reason()
        self.close(reason)

    def close(self, reason: str) -> None:
        """The connection ended: every waiting call fails, every handler is cancelled (Rule 1)."""
        self.closed = reason
        self._closed_event.set()
        self.engine.cancel_admitted()  # their answers could go nowhere
        failed = self.engine.close(reason)
        if failed:
            logger.info("%s; %d call(s) failed", reason, failed)

    async def _frame(self, frame: bytes) -> None:
        messages, _ = parse(frame)
        for message in messages:
            if isinstance(message, Response | ErrorResponse):
                self._answer(message)
            elif isinstance(message, Notification):
                await self._notification(message)
            elif isinstance(message, Request):
                await self._server_request(message)
            else:  # an invalid message is never answered
                self._invalid(message)

    def _invalid(self, message: InvalidMessage) -> None:
        # A malformed answer fails the call it names at once; nothing is answered.
        outcome = (
            self.engine.deliver_malformed(message.error.id, message.reason)
            if message.response
            else None
        )
        if outcome is None:
            logger.warning("ignored an invalid message from the server: %s", message.error.message)
            return
        logger.warning(
            "dropped a malformed answer to %s (id %r), which fails: %s",
            outcome.method,
            outcome.request_id,
            message.reason,
        )

    def _answer(self, answer: Response | ErrorResponse) -> None:
        # The engine drops what no request of ours awaits: unknown ids, second answers, answers
        # after a cancellation or the end, and ids of the wrong type.
        if self.engine.deliver(answer) is not None:
            return
        if isinstance(answer, ErrorResponse) and answer.id is None:
            logger.warning("the server reported an error: %s", answer.message)
        else:
            logger.debug("dropped an answer to request %r, which no call awaits", answer.id)

    async def _notification(self, message: Notification) -> None:
        # On the reader: a handler starts a task for anything that may wait (Rule 4).
        params = message.params or {}
        method = message.method
        if method == "notifications/progress":
            await self._progress(params)
        elif method == "notifications/message":
            await self._log(params)
        elif method == CANCELLED:
            if not self.engine.cancelled(message.params):
                logger.debug("ignored a cancellation of no server request in flight")
        else:
            notice = self.notices.get(method)
            if notice is None:
                logger.debug("ignored notification %s", method)
            else:
                notice(params)

    async def _log(self, params: dict[str, Any]) -> None:
        level = params.get("level")
        name = params.get("logger")
        record = LogMessage(
            level if isinstance(level, str) else "info",
            params.get("data"),
            name if isinstance(name, str) else None,
        )
        if self._log_handler is not None:
            await call_handler(self._log_handler, record)
        else:
            server_logger.log(
                _LOG_LEVELS.get(record.level, logging.INFO),
                "%s%s",
                f"[{record.logger}] " if record.logger else "",
                record.data,
            )

    async def _progress(self, params: dict[str, Any]) -> None:
        handler = self.engine.progress_handler(params.get("progressToken"))
        progress = params.get("progress")
        if handler is None or not isinstance(progress, int | float):
            return
        total = params.get("total")
        text = params.get("message")
        update = Progress(
            progress,
            total if isinstance(total, int | float) else None,
            text if isinstance(text, str) else None,
        )
        await call_handler(handler, update)

    def run_callback(self, handler: Callable[[Any], Awaitable[None] | None], arg: Any) -> None:
        """Run a user's callback for a notification: async in a task of its own, sync at once.

        A plain function cannot wait for the server: it runs here, before the messages that
        follow. An async one may call the server, whose answers the reader must be free to
        deliver (Rule 4).
        """
        if self.nursery is None:
            return
        if inspect.iscoroutinefunction(handler):
            self.nursery.start_soon(call_handler, handler, arg)
        else:
            try:
                handler(arg)
            except Exception:
                logger.exception("an update, list-change or elicitation-complete handler failed")

    # -- the server's requests (Rule 4) -----------------------------------------------------------

    async def _server_request(self, request: Request) -> None:
        # JSON-RPC requires an answer to every request: what has no handler is refused.
        handler = self.handlers.get(request.method)
        if request.method == "ping":
            answer = result_response(request.id, {})
        elif handler is None or self.nursery is None:
            answer = error_response(
                request.id, METHOD_NOT_FOUND, f"Method not found: {request.method}"
            )
        else:
            try:
                # The scope exists before the task starts, so a cancellation read next finds it.
                scope = self.engine.admit(request.id)
            except RemoteProtocolError as exc:
                answer = error_response(request.id, exc.code, exc.message)
            else:
                self.nursery.start_soon(self._handle, request, handler, scope)
                return
        await self._reply(answer)

    async def _handle(
        self, request: Request, handler: ServerRequestHandler, scope: trio.CancelScope
    ) -> None:
        try:
            with scope:
                try:
                    answer = result_response(request.id, await handler(request.params or {}))
                except Exception as exc:
                    # The one boundary: the server learns what failed, not where.
                    answer = error_answer(request.id, request.method, exc, detail=True)
            # A handler can return without a checkpoint after its cancellation: no answer still.
            if not scope.cancel_called:
                await self._reply(answer)
        finally:
            self.engine.release(request.id)

    async def _reply(self, answer: dict[str, Any]) -> None:
        # Every server request gets exactly one answer: one whose result has no JSON form
        # becomes an internal error here, before the send (where it would fail unanswered).
        try:
            dumps(answer)
        except ValueError as exc:
            logger.error(  # noqa: TRY400 - the reason is enough; the handler's code is not at fault here
                "the answer to the server's request %r has no JSON form: %s", answer["id"], exc
            )
            answer = error_response(
                answer["id"], INTERNAL_ERROR, f"Internal error: the answer has no JSON form ({exc})"
            )
        # An answer to a server that has gone has nowhere to go: the reader reports the end.
        with contextlib.suppress(TrioMCPError, trio.BrokenResourceError, trio.ClosedResourceError):
            await self.link.send(answer)
