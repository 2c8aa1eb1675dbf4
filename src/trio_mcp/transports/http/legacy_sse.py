"""The legacy HTTP+SSE transport (2024-11-05): a GET stream at /sse, POSTs to /messages.

A GET to /sse opens a session: its stream first sends the `endpoint` event naming
`/messages?sessionId=...`, then every message the server sends, until the client disconnects
(which cancels the session's work) or the server shuts down. A POST to /messages hands its
body to the session named in its query string and is answered 202 at once; the answers go on
the stream. The session reads its queue of bodies at once and starts the calls whatever its
stream does, so the queue only absorbs bursts. Its unsent answers are what it has produced
and its stream has not yet handed to the server (`_Outbox`); while they are over the bound,
notifications and the client's answers to the server's requests are still taken (they produce
no answer, and may let a call finish), so a session holds at most the bound plus the answers of
the requests it took before reaching it, and an answer larger than the bound still goes out
whole.

Rule 1: a session is bounded, and drops nothing it took. A POST is refused 429 past its queue
        of bodies (`LEGACY_INBOX`), and a POST carrying a request past its requests in flight,
        counted from POST to answer or cancellation (`max_in_flight_per_session`), or while its
        unsent answers are over `legacy_max_unsent_bytes`. Every request taken is answered on
        the stream once the client reads it.
Rule 2: `begin_shutdown` closes every session's input and refuses new streams (503): each
        session finishes the calls it runs, sends their answers, and its stream ends.
Rule 3: with token verification, every POST carries a valid token (401) of the user who opened
        the stream (else the session is unknown: 404, `transports/http/sessions` Rule 3) with
        the scopes its requests need (403). A tool sees the verified token of the stream's GET
        (`Context.auth`): the session's tasks were started by that request.
"""

from __future__ import annotations

import collections
import secrets
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import parse_qs

import trio

from ..._core.auth import AuthInfo
from ..._core.jsonrpc import Notification, Request, RequestId, is_request_id, loads, parse
from ..._exceptions import RemoteProtocolError
from .asgi import (
    SSE_HEADERS,
    Receive,
    Refused,
    Scope,
    Send,
    cancel_on_disconnect,
    check_content_type,
    read_body,
)
from .gate import AuthGate
from .options import HttpOptions
from .sessions import Entry, HttpBackend, SessionTable

__all__ = ["LEGACY_INBOX", "LegacySse"]

# Bodies queued per legacy session before POSTs get 429: each may be max_body_bytes, so the
# queue is short (16, like the SDKs' small stream buffers), not the in-flight cap.
LEGACY_INBOX: Final = 16


class LegacySse:
    """The /sse stream and the /messages POSTs of the legacy transport.

    Args:
        backend: The MCP side; its `serve_channels` serves each session.
        options: Limits.
        sessions: The session table, shared with Streamable HTTP.
    """

    def __init__(
        self,
        backend: HttpBackend,
        options: HttpOptions,
        sessions: SessionTable,
        gate: AuthGate | None = None,
    ) -> None:
        self.backend = backend
        self.options = options
        self._sessions = sessions
        self._gate = gate
        self._closing = False

    def begin_shutdown(self) -> None:
        """Close the input of every legacy session and refuse new ones (Rule 2)."""
        self._closing = True
        self._sessions.end_legacy()

    async def stream(
        self,
        headers: dict[bytes, bytes],
        receive: Receive,
        send: Send,
        auth: AuthInfo | None = None,
    ) -> None:
        """Serve one session's stream until the client disconnects or the session ends.

        The session is `auth`'s, the verified token of this GET (`transports/http/sessions`
        Rule 3).
        """
        if self._closing:
            raise Refused(503, "Shutting down", [(b"retry-after", b"5")])
        self._sessions.check_room()
        sid = secrets.token_hex(16)
        inbox_send, inbox_receive = trio.open_memory_channel[bytes](LEGACY_INBOX)
        outbox_send, outbox_receive = trio.open_memory_channel[bytes](256)
        entry = Entry(
            None, trio.current_time(), legacy_inbox=inbox_send, legacy_pending=collections.Counter()
        )
        outbox = _Outbox(outbox_send, entry)
        self._sessions.add(sid, entry, auth)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
            endpoint = f"/messages?sessionId={sid}".encode()
            await send(
                {
                    "type": "http.response.body",
                    "body": b"event: endpoint\ndata: " + endpoint + b"\n\n",
                    "more_body": True,
                }
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_on_disconnect, receive, nursery.cancel_scope)

                async def serve() -> None:
                    await self.backend.serve_channels(inbox_receive, outbox, auth=auth)
                    await outbox.aclose()

                nursery.start_soon(serve)
                async with outbox_receive:
                    async for frame in outbox_receive:
                        _answered(entry, frame)
                        await send(
                            {
                                "type": "http.response.body",
                                "body": b"event: message\ndata: " + frame + b"\n\n",
                                "more_body": True,
                            }
                        )
                        entry.legacy_unsent -= len(frame)
                nursery.cancel_scope.cancel()
            await send({"type": "http.response.body", "body": b""})
        finally:
            self._sessions.end(sid)

    async def post(
        self,
        scope: Scope,
        headers: dict[bytes, bytes],
        receive: Receive,
        send: Send,
        auth: AuthInfo | None = None,
    ) -> None:
        """Queue one POSTed body for its session (Rule 1)."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        sid = (query.get("sessionId") or query.get("session_id") or [""])[0]
        if not sid:
            raise Refused(400, "Missing sessionId query parameter")
        entry = self._sessions.get(sid, auth)
        if entry is None or entry.legacy_inbox is None:
            raise Refused(404, "Unknown or closed session")
        check_content_type(headers)
        body = await read_body(receive, headers, self.options)
        entry.last_seen = trio.current_time()
        # Rule 1: the session's own reader would only stop reading (back-pressure) and leave
        # the POSTs to queue up to the inbox's size.
        messages, _ = parse(body)
        if self._gate is not None and self._gate.verifier is not None:
            # The body goes to the session as it came, to be resolved there (this transport's
            # session reads frames): resolved here for its scopes only.
            needs = [
                (await self.backend.resolve(m, auth)).scopes
                for m in messages
                if isinstance(m, Request)
            ]
            self._gate.check_scopes(scope, headers, auth, needs)
        requests = [m.id for m in messages if isinstance(m, Request)]
        if requests and entry.legacy_in_flight + len(requests) > (
            self.options.max_in_flight_per_session
        ):
            raise Refused(
                429, "Too many requests in flight in this session", [(b"retry-after", b"1")]
            )
        if requests and entry.legacy_unsent > self.options.legacy_max_unsent_bytes:
            # Rule 1: this client does not read its stream (or not fast enough).
            raise Refused(
                429,
                "Too many answers unsent in this session; read its SSE stream",
                [(b"retry-after", b"1")],
            )
        try:
            entry.legacy_inbox.send_nowait(body)
        except trio.WouldBlock:
            raise Refused(
                429, "Too many messages queued for this session", [(b"retry-after", b"1")]
            ) from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise Refused(404, "Session closed") from None
        # Counted once queued, with no checkpoint in between: the session cannot answer first.
        _count(entry, requests, messages)
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b"Accepted"})


class _Outbox(trio.abc.SendChannel[bytes]):
    """A session's frames on their way to its stream, counted while unsent (Rule 1).

    A frame counts from when the session sends it, including while the session waits for room
    in the channel, until the stream has handed it to the server.
    """

    def __init__(self, channel: trio.MemorySendChannel[bytes], entry: Entry) -> None:
        self._channel = channel
        self._entry = entry

    def send_nowait(self, value: bytes) -> None:
        """Queue a frame if there is room (the connection loop's fast path)."""
        self._channel.send_nowait(value)
        self._entry.legacy_unsent += len(value)

    async def send(self, value: bytes) -> None:
        """Queue a frame, waiting for room."""
        self._entry.legacy_unsent += len(value)
        try:
            await self._channel.send(value)
        except BaseException:
            self._entry.legacy_unsent -= len(value)
            raise

    async def aclose(self) -> None:
        """No more frames: the stream ends once it has sent those queued."""
        await self._channel.aclose()


def _count(entry: Entry, requests: list[RequestId], messages: Sequence[Any]) -> None:
    pending = entry.legacy_pending
    assert pending is not None
    pending.update(requests)
    entry.legacy_in_flight += len(requests)
    for message in messages:
        # A cancelled request is never answered (`_runtime/session` Rule 1): done now.
        if isinstance(message, Notification) and message.method == "notifications/cancelled":
            _settle(entry, (message.params or {}).get("requestId"))


def _answered(entry: Entry, frame: bytes) -> None:
    if not entry.legacy_in_flight:
        return  # nothing to settle: notifications, or answers to invalid messages
    try:
        message = loads(frame)
    except RemoteProtocolError:
        return
    for item in message if isinstance(message, list) else [message]:
        if isinstance(item, dict) and "method" not in item:
            _settle(entry, item.get("id"))


def _settle(entry: Entry, request_id: Any) -> None:
    pending = entry.legacy_pending
    # Only an int or str names a request (True would find the id 1).
    if pending is None or not is_request_id(request_id):
        return
    if pending[request_id] > 0:
        pending[request_id] -= 1
        if not pending[request_id]:
            del pending[request_id]
        entry.legacy_in_flight -= 1
