"""The two-way request bookkeeping of one MCP connection, sans-IO.

MCP is symmetric: the client sends requests to the server, and the server sends requests to the
client (`sampling/createMessage`, `elicitation/create`, `roots/list`, `ping`). Both ends of a
connection therefore keep the same two tables, and this module is that pair of tables, with no
I/O and no event loop (h11's habit): the engine over it (`_runtime/peer`) feeds it what arrived
and sends what it returns.

Rule 1: ids are per sender. The requests the peer sent us (*inbound*, in flight from
        `begin_inbound` to `end_inbound`) and the requests we sent (*outbound*, pending from
        `start_request` until answered, cancelled or closed) live in two separate tables, so the
        peer's request 1 and ours never meet.
Rule 2: an inbound id may be reused once its request has ended, never while it is in flight: a
        duplicate is a `RemoteProtocolError` with -32600, and the request is answered with it
        instead of run.
Rule 3: ids keep their exact type: the string "1" is not the integer 1, and neither `True` nor
        `1.0` names request 1 (both compare equal to 1 in Python, so every lookup checks the
        type first).
Rule 4: an outbound id is forgotten exactly once: by its answer, by `cancel_outbound` or by
        `close`. Whatever arrives for a forgotten or unknown id afterwards (a late answer after a
        cancellation, a second answer) is reported as None for the caller to log and drop: spec
        2025-11-25, basic/utilities/cancellation: "The sender of the cancellation notification
        SHOULD ignore any response to the request that arrives afterward". A malformed answer
        (`_core/jsonrpc` Rule 4) to a pending request forgets it too (`receive_malformed`): its
        waiter fails at once, rather than waiting for an answer that already came.
Rule 5: an incoming `notifications/cancelled` never raises: unknown or finished ids, malformed
        params and ids of the wrong type are ignored (same page, Error Handling). A valid one
        only *names* the inbound request to stop; the id stays in flight until the runtime calls
        `end_inbound`, so a new request cannot reuse it while the cancelled one is winding down.
Rule 6: `initialize` is never cancelled (same page, Behavior Requirements 2): cancelling it
        forgets the id but yields no notification to send.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._exceptions import LocalProtocolError, RemoteProtocolError
from .jsonrpc import (
    INVALID_REQUEST,
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    Response,
    is_request_id,
)

__all__ = ["CANCELLED", "ErrorDetail", "Outcome", "Peer"]

#: The method of the cancellation notification (spec 2025-11-25, basic/utilities/cancellation).
CANCELLED: Final = "notifications/cancelled"

# spec 2025-11-25, lifecycle and cancellation: "The `initialize` request MUST NOT be cancelled".
_NEVER_CANCELLED: Final = frozenset({"initialize"})


@dataclass(frozen=True, slots=True)
class ErrorDetail:
    """The JSON-RPC error the peer answered one of our requests with."""

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer to one of our requests: a result, an error, or a malformed answer.

    Attributes:
        request_id: The id we sent the request with (its exact type).
        method: The request's method, for logs and for the waiter's own checks.
        result: The response's `result` when the request succeeded, else None.
        error: The error when the peer answered with one, else None.
        malformed: Why the peer's answer was no valid response (Rule 4), else None; then
            `result` and `error` are None.
    """

    request_id: RequestId
    method: str
    result: Any = None
    error: ErrorDetail | None = None
    malformed: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the peer answered with a result rather than an error or a malformed answer."""
        return self.error is None and self.malformed is None


class Peer:
    """Which requests are in flight in each direction on one connection.

    Args:
        first_id: The id of our first outbound request; later ones count up from it.

    Raises:
        TypeError: when `first_id` is not an integer (bool included: it is no id).
    """

    def __init__(self, *, first_id: int = 1) -> None:
        if type(first_id) is not int:
            raise TypeError(f"first_id must be an int, got {type(first_id).__name__}")
        self._ids = itertools.count(first_id)
        self._inbound: set[RequestId] = set()
        # id -> method; dicts keep insertion order, so `close` lists ids in the order sent.
        self._pending: dict[RequestId, str] = {}
        self._closed: str | None = None

    # -- inbound: requests the peer sent us -------------------------------------------------------

    def begin_inbound(self, request_id: RequestId) -> None:
        """Mark a request the peer sent as in flight (Rule 2).

        Args:
            request_id: The request's id.

        Raises:
            RemoteProtocolError: -32600 when the id is already in flight or is no valid id.
        """
        if not is_request_id(request_id):
            raise RemoteProtocolError(
                f'Invalid Request: "id" must be a string or an integer, got {request_id!r}',
                INVALID_REQUEST,
            )
        if request_id in self._inbound:
            raise RemoteProtocolError(
                f"Invalid Request: id {request_id!r} is already in use by a request in flight",
                INVALID_REQUEST,
            )
        self._inbound.add(request_id)

    def end_inbound(self, request_id: RequestId) -> None:
        """Forget an inbound request once its answer is written or it was cancelled.

        Args:
            request_id: The request's id; an id not in flight is ignored.
        """
        if is_request_id(request_id):
            self._inbound.discard(request_id)

    def inbound_in_flight(self, request_id: RequestId) -> bool:
        """Whether a request the peer sent with this id is in flight.

        Args:
            request_id: The id to look up (its type counts: "1" is not 1).

        Returns:
            True from `begin_inbound` until `end_inbound`.
        """
        return is_request_id(request_id) and request_id in self._inbound

    @property
    def inbound_count(self) -> int:
        """How many requests the peer sent are in flight."""
        return len(self._inbound)

    # -- outbound: requests we send ---------------------------------------------------------------

    def start_request(self, method: str, params: dict[str, Any] | None = None) -> Request:
        """Give a new request of ours a fresh id and record it as pending.

        Args:
            method: The JSON-RPC method.
            params: Its parameters (an object) or None.

        Returns:
            The request to send.

        Raises:
            LocalProtocolError: when the connection was closed: nothing could ever answer.
        """
        if self._closed is not None:
            raise LocalProtocolError(
                f"cannot send {method!r}: the connection ended: {self._closed}"
            )
        request = Request(next(self._ids), method, params)
        self._pending[request.id] = method
        return request

    def is_pending(self, request_id: RequestId) -> bool:
        """Whether one of our requests with this id still awaits its answer.

        Args:
            request_id: The id to look up (its type counts: "1" is not 1).

        Returns:
            True from `start_request` until answered, cancelled or closed.
        """
        return is_request_id(request_id) and request_id in self._pending

    @property
    def pending_count(self) -> int:
        """How many of our requests await an answer."""
        return len(self._pending)

    def receive_response(self, message: Response | ErrorResponse) -> Outcome | None:
        """Match an answer from the peer to the request of ours it answers (Rule 4).

        Args:
            message: A response or an error response read from the connection.

        Returns:
            The outcome, after which the id is no longer pending; or None when no request of
            ours awaits this id (unknown, answered already, cancelled by us, or an error with
            id null), for the caller to log and drop.
        """
        request_id = message.id
        if not is_request_id(request_id):
            return None
        method = self._pending.pop(request_id, None)
        if method is None:
            return None
        if isinstance(message, ErrorResponse):
            error = ErrorDetail(message.code, message.message, message.data)
            return Outcome(request_id, method, error=error)
        return Outcome(request_id, method, result=message.result)

    def receive_malformed(self, request_id: RequestId | None, why: str) -> Outcome | None:
        """Match a malformed answer from the peer to the request of ours it names (Rule 4).

        Args:
            request_id: The id the malformed message carries (None when it had no valid id).
            why: What is wrong with it, for the waiter's error.

        Returns:
            The outcome (`malformed` set), after which the id is no longer pending; or None
            when no request of ours awaits that id.
        """
        if request_id is None or not is_request_id(request_id):
            return None
        method = self._pending.pop(request_id, None)
        if method is None:
            return None
        return Outcome(request_id, method, malformed=why)

    # -- cancellation -----------------------------------------------------------------------------

    def cancel_outbound(
        self, request_id: RequestId, reason: str | None = None
    ) -> Notification | None:
        """Give up on one of our requests and say so to the peer.

        Args:
            request_id: The id of the request to give up on.
            reason: Why, for the peer's logs; left out of the notification when None.

        Returns:
            The `notifications/cancelled` to send; or None when the request was not pending
            (answered already: there is nothing to cancel) or is an `initialize` (Rule 6).
        """
        if not is_request_id(request_id):
            return None
        method = self._pending.pop(request_id, None)
        if method is None or method in _NEVER_CANCELLED:
            return None
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        return Notification(CANCELLED, params)

    def receive_cancelled(self, params: Mapping[str, Any] | None) -> RequestId | None:
        """Read a `notifications/cancelled` from the peer (Rule 5).

        The id stays in flight: the runtime stops the request and then calls `end_inbound`.

        Args:
            params: The notification's params as they arrived.

        Returns:
            The id of the inbound request to stop, or None when there is none to stop (the id is
            unknown, its request has ended, or the params are malformed).
        """
        request_id = params.get("requestId") if isinstance(params, Mapping) else None
        if is_request_id(request_id) and request_id in self._inbound:
            return request_id
        return None

    # -- end --------------------------------------------------------------------------------------

    @property
    def closed(self) -> str | None:
        """Why the connection ended, or None while it is open."""
        return self._closed

    def close(self, reason: str) -> list[RequestId]:
        """Record that the connection ended; our pending requests can no longer be answered.

        Inbound requests are left in flight: their tasks still end and call `end_inbound`.

        Args:
            reason: Why the connection ended; kept in `closed` (the first reason wins).

        Returns:
            The ids of our requests that were still pending, in the order they were sent, so
            the runtime can fail each waiter. They are no longer pending.
        """
        if self._closed is None:
            self._closed = reason
        pending = list(self._pending)
        self._pending.clear()
        return pending
