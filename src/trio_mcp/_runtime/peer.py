"""`PeerRuntime`: the trio engine of one connection's requests, in both directions.

MCP is symmetric: a server session asks its client (sampling, elicitation, roots) as the client
asks the server, and each answers the other's requests. The bookkeeping of both directions is
sans-IO (`_core/peer`); this module is what it needs of an event loop, written once for both
sides: the server session (`_runtime/session`) and the client (`_runtime/client/connection`)
each own one, and differ only in what they send and how they answer.

Rule 1: a request we send is awaited by its caller's own task, on a waiter kept under its id
        from before the send until the caller returns, however it returns. The carrier that
        sends it is the caller's to choose (the connection, the stream of a request being
        answered, ...): the engine knows no transport. The outcome comes from `deliver` (the
        answer), `deliver_malformed` (an answer that is no valid response: the caller fails at
        once with `RemoteProtocolError`, and nothing is answered) or `close` (the connection
        ended: every caller fails with `ConnectionClosed`, saying why).
Rule 2: a caller that stops waiting (cancelled, or past its `timeout`) forgets its id, so that a
        late answer is dropped, and tells the peer with `notifications/cancelled` once the send
        has started (a send interrupted midway may have delivered), under a short shielded
        scope (`CANCEL_NOTICE_SECONDS`), best effort: nothing may be left to carry it. A send
        that failed tells nothing; an `initialize` is never cancelled (`_core/peer`).
Rule 3: a request the peer sent that must wait is admitted with a cancel scope of its own,
        made before its task starts, so that a `notifications/cancelled` read right after it
        finds it; its id stays in flight until `release`, and a cancelled request is answered
        by nobody (its runner checks `cancel_called`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import trio

from .._core.jsonrpc import INVALID_REQUEST, ErrorResponse, RequestId, Response
from .._core.peer import CANCELLED, Outcome, Peer
from .._exceptions import ConnectionClosed, RemoteProtocolError, RequestError

__all__ = ["CANCEL_NOTICE_SECONDS", "MessageSender", "PeerRuntime"]

logger = logging.getLogger("trio_mcp")

# Seconds a cancelled request may spend telling the peer (shielded from the cancellation that
# caused it): long enough for a loopback or LAN round trip, short enough that a stalled peer
# cannot hold a caller that asked to stop. The official SDKs send the notice without waiting.
CANCEL_NOTICE_SECONDS: Final = 2.0

#: How a runtime puts one message on its way to the peer.
MessageSender = Callable[[dict[str, Any]], Awaitable[None]]


class _Waiter:
    """A caller's task waiting for the answer to one request of ours (Rule 1)."""

    __slots__ = ("done", "outcome", "progress")

    def __init__(self, progress: Any) -> None:
        self.done = trio.Event()
        self.outcome: Outcome | None = None  # None once done: the connection ended
        self.progress = progress


class PeerRuntime:
    """The requests in flight on one connection, both ways, on trio (see the module rules).

    Args:
        peer: The connection's bookkeeping (a server session shares its own).
        us: Which side this is ("server" or "client"), for the reason a cancellation gives.
        them: Which side the peer is, for the errors its answers raise.
    """

    def __init__(self, peer: Peer, *, us: str, them: str) -> None:
        self.peer = peer
        self._them = them
        self._reason = f"cancelled by the {us}"
        self._waiters: dict[RequestId, _Waiter] = {}
        self._scopes: dict[RequestId, trio.CancelScope] = {}

    @property
    def closed(self) -> str | None:
        """Why the connection ended, or None while it is open."""
        return self.peer.closed

    # -- requests we send (Rules 1, 2) ------------------------------------------------------------

    @property
    def waiting(self) -> int:
        """Requests of ours whose callers still wait (ids in use)."""
        return len(self._waiters)

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        send: MessageSender,
        *,
        notice: MessageSender | None = None,
        stamp: Callable[[RequestId], dict[str, Any] | None] | None = None,
        progress: Any = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the engine owns the request's deadline
    ) -> Any:
        """Send a request to the peer and return the `result` of its answer.

        Args:
            method: The JSON-RPC method.
            params: Its parameters, or None (ignored with `stamp`).
            send: What carries the request (and, without `notice`, its cancellation).
            notice: What carries the `notifications/cancelled` if the caller stops waiting.
            stamp: Gives the params once the id is known (a progress token names it).
            progress: Kept with the waiter for `progress_handler` to find by the id.
            timeout: Seconds to wait for the answer (None: no limit); past them the request is
                cancelled as if its caller had been, and `trio.TooSlowError` raised.

        Returns:
            The answer's `result`.

        Raises:
            RequestError: when the peer answered with a JSON-RPC error.
            RemoteProtocolError: when its answer was no valid response (both result and
                error, neither, ...).
            ConnectionClosed: when the connection ended before, or ends before the answer.
            trio.TooSlowError: when `timeout` passed first.
            Exception: what `send` or `stamp` raised (the request is then forgotten).
        """
        if timeout is None:
            return await self._request(method, params, send, notice, stamp, progress=progress)
        with trio.fail_after(timeout):
            return await self._request(method, params, send, notice, stamp, progress=progress)

    async def _request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        send: MessageSender,
        notice: MessageSender | None,
        stamp: Callable[[RequestId], dict[str, Any] | None] | None,
        *,
        progress: Any,
    ) -> Any:
        peer = self.peer
        if peer.closed is not None:
            raise ConnectionClosed(peer.closed)
        request_id = peer.start_request(method).id
        waiter = self._waiters[request_id] = _Waiter(progress)
        started = False
        try:
            if stamp is not None:
                params = stamp(request_id)
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not None:
                message["params"] = params
            started = True
            await send(message)
            await waiter.done.wait()
        except trio.Cancelled:
            # None for an `initialize` or a request answered meanwhile: nothing to cancel.
            cancel = peer.cancel_outbound(request_id, self._reason)
            if cancel is not None and started and peer.closed is None:
                await self._tell(notice or send, cancel.params)
            raise
        finally:
            del self._waiters[request_id]
            peer.cancel_outbound(request_id)  # a send that failed: forget the id
        return self._result(method, waiter.outcome)

    def _result(self, method: str, outcome: Outcome | None) -> Any:
        """The result of an answered request, or what its answer (or its absence) raises."""
        if outcome is None:
            raise ConnectionClosed(self.peer.closed or "connection closed")
        if outcome.malformed is not None:
            raise RemoteProtocolError(
                f"the {self._them} answered {method} with a malformed response "
                f"({outcome.malformed})",
                INVALID_REQUEST,
            )
        if outcome.error is not None:
            raise RequestError(outcome.error.message, outcome.error.code, outcome.error.data)
        return outcome.result

    async def _tell(self, send: MessageSender, params: dict[str, Any] | None) -> None:
        """Tell the peer to stop a request of ours, if anything can still carry that (Rule 2)."""
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + CANCEL_NOTICE_SECONDS
            try:
                await send({"jsonrpc": "2.0", "method": CANCELLED, "params": params})
            except Exception as exc:  # best effort: the stream that carried it may be gone
                logger.debug(
                    "could not tell the %s to stop a request (%s): %s", self._them, params, exc
                )

    def progress_handler(self, token: Any) -> Any:
        """What the caller of the request a progress token names gave as `progress`, if any."""
        waiter = self._waiters.get(token) if type(token) is int else None
        return None if waiter is None else waiter.progress

    def deliver(self, answer: Response | ErrorResponse) -> Outcome | None:
        """Hand an answer to the caller waiting for it (Rule 1).

        Returns:
            Its outcome; None when no request of ours awaits its id (unknown, answered
            already, given up on, or no id at all), for the caller to log and drop.
        """
        outcome = self.peer.receive_response(answer)
        if outcome is not None:
            self._wake(outcome)
        return outcome

    def deliver_malformed(self, request_id: RequestId | None, why: str) -> Outcome | None:
        """Fail the caller a malformed answer names, at once (Rule 1); None when none waits."""
        outcome = self.peer.receive_malformed(request_id, why)
        if outcome is not None:
            self._wake(outcome)
        return outcome

    def _wake(self, outcome: Outcome) -> None:
        # An id is pending only while its waiter is kept (both are set and dropped together).
        waiter = self._waiters[outcome.request_id]
        waiter.outcome = outcome
        waiter.done.set()

    def close(self, reason: str) -> int:
        """The connection ended: every caller still waiting fails with `ConnectionClosed`.

        Args:
            reason: Why, for the error (the first reason given is kept).

        Returns:
            How many callers were waiting for an answer.
        """
        pending = self.peer.close(reason)
        for request_id in pending:
            self._waiters[request_id].done.set()  # no outcome: the caller raises
        return len(pending)

    # -- requests the peer sent (Rule 3) ----------------------------------------------------------

    def admit(self, request_id: RequestId) -> trio.CancelScope:
        """Take a request of the peer's that must wait: its id in flight, its scope made.

        Raises:
            RemoteProtocolError: -32600 when the id is in flight already or no valid id.
        """
        self.peer.begin_inbound(request_id)
        scope = self._scopes[request_id] = trio.CancelScope()
        return scope

    @property
    def admitted(self) -> Mapping[RequestId, trio.CancelScope]:
        """The cancel scope of each request `admit` took and `release` has not forgotten."""
        return self._scopes

    def cancelled(self, params: Mapping[str, Any] | None) -> bool:
        """Take a `notifications/cancelled`: stop the admitted request it names.

        Malformed params, ids of the wrong type (True or 1.0 would otherwise hit request 1)
        and ids not in flight are ignored (`_core/peer`).

        Returns:
            Whether it named a request to stop.
        """
        request_id = self.peer.receive_cancelled(params)
        scope = self._scopes.get(request_id) if request_id is not None else None
        if scope is None:
            return False
        scope.cancel()
        return True

    def release(self, request_id: RequestId) -> None:
        """Forget an admitted request: its id may be used again."""
        self._scopes.pop(request_id, None)
        self.peer.end_inbound(request_id)

    def cancel_admitted(self) -> None:
        """Cancel every admitted request (the connection is ending)."""
        for scope in self._scopes.values():
            scope.cancel()
