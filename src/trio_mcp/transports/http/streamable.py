"""Streamable HTTP: POST, GET and DELETE at the MCP endpoint, answered in a session or alone.

A POST's answer is `application/json` when the response is the first thing its request
produces, and an SSE stream when a message of the server's comes first (a notification such as
progress or a log, or a request to the client): then those messages and finally the response go
on that stream, in order. The client's answer to a request of the server's comes as a POST of
its own, answered 202 once the session has routed it to the waiting task.

A request is a 2026-07-28 one when its body names a version in `params._meta` or its
MCP-Protocol-Version header names such a revision: it stands alone (no session, whatever the
mode), must be well formed before it is handed on (`transports/http/headers` Rule 2: its
`_meta`, the headers that mirror its body, the `Mcp-Param-*` header of each argument its tool
mirrors, which the backend names by tool so this module sees no schema), and its errors take
the HTTP status that revision gives them (`headers.modern_status`).

A GET naming a session opens that session's server-to-client stream: the messages of the
server's that no request being answered carries (list changes, resource updates, log messages
and requests to the client outside a call), which wait for it in the session's bounded queue
(`outbox`, `HttpOptions.max_unsent_bytes`). One stream at a time: a new GET takes the place of
the stream open before it, which ends (a client that reconnects is often heard before the
server has noticed its old connection is gone; refusing it with 409, as the spec allows, would
lock it out until then). It is refused after Accept (406), the protocol version (400), the
session (400 missing / 404 unknown) and a Last-Event-ID it cannot resume (Rule 5); in
stateless mode GET is 405 (`app`). The stream lasts until the client goes, the session ends
(DELETE, expiry) or the server shuts down. Every open SSE stream carries an SSE comment after
`HttpOptions.keep_alive_interval` seconds with nothing else to send.

In a session under 2025-11-25 or later (SEP-1699), every SSE stream starts with a priming
event (an id, `retry:` from `HttpOptions.retry_interval`, empty data) and each of its events
carries an id, `<stream>-<n>` (`transports/http/replay` Rule 3): the GET stream is stream 0
however often it is reopened, a POST's stream gets the next number when it starts. Older
revisions' streams carry no ids (their clients may not expect empty events), and without an
event store (`HttpOptions.event_store`, in memory by default) neither do POST streams. With
one, a POST stream that breaks (the client vanished) or is closed by its tool
(`ctx.close_sse_stream()`, SEP-1699 polling) leaves its call running, and what the call sends
afterwards, its answer included, goes only to the store. A GET whose `Last-Event-ID` names an
event of the session replays, in order and with their ids, the events of that stream that
followed it (after a `retry:` field), then, for a POST's stream, follows the call until its
answer and ends; for the GET stream, goes on as a fresh GET stream would. Readers that resume
must reach the process that runs the call (its session is there anyway).

Rule 1: after the application's checks (path, method, Origin, bearer token), a POST is refused,
        in this order, for its Content-Type (415), Accept (406), body size (413) and JSON-RPC
        shape (400), the scopes its requests need that the verified token lacks (403, with
        token verification only: the backend says which, so this module sees no tool), then
        either the request metadata of a 2026-07-28 request (400) or the protocol version
        header (400) and the session (400 missing / 404 unknown), and last the limits (429 per
        session / 503 server-wide). A refused request never reaches a session.
Rule 2: a request of the server's goes only on the stream of the request it serves, and only in
        a session kept in the table: outside one (stateless mode) the client's answer could
        reach nothing, so the session is given a carrier that refuses it, saying why
        (`_no_way_back`); the session itself refuses every request of 2026-07-28. A malformed
        answer of the client's (both result and error, neither, ...: `_core/jsonrpc` Rule 4) is
        never answered in JSON-RPC: the session named drops it and fails the waiting task at
        once, and the POST gets 400 with an error that has no id (spec 2025-11-25, Streamable
        HTTP; 202 would say it was accepted).
Rule 3: a client that disconnects while its request runs, before its stream could be resumed
        (Rule 5), cancels that request, and with it any request of the server's it waits on
        (whose `notifications/cancelled` then has no stream to go on and is dropped): that is
        so for JSON answers not yet sent, in stateless mode, in sessions of revisions before
        2025-11-25 and on servers without an event store: the answer could never be
        delivered. Under 2026-07-28 closing the stream MUST be taken as the cancellation, and
        is.
Rule 4: requests are bounded: per session (`max_in_flight_per_session`, 429) and, outside
        sessions (stateless mode, 2026-07-28), server-wide (`max_in_flight_sessionless`, 503).
        A request whose answer stays open until the client closes it (a 2026-07-28
        `subscriptions/listen`: the backend says which, `HttpBackend.stays_open`) takes none of
        those slots: such streams have their own bounds, per client (`max_listens_per_client`,
        429) and server-wide (`max_listens`, 503), so idle streams never starve requests. A
        client is the principal of its verified token, else its network address (2026-07-28
        has no session to tell clients apart by).
Rule 5: with an event store, every event of a session's streams is kept before it is sent, so
        a resumed stream misses nothing. A resumption is refused for an id no stream of this
        session gave out (400), for events the store no longer has (410), and for a finished
        stream with nothing left to send (410: a client that resumes every stream ending
        without its answer, a cancelled call's for one, would otherwise come back for ever).
Rule 6: a POST carries one message. A batch (a JSON array) is taken only where the revision in
        force has batches (2025-03-26: a session's negotiated one, in stateless mode the
        MCP-Protocol-Version header's or its default); elsewhere, and always with an
        `initialize` in it or under 2026-07-28, it is refused whole with 400 and a -32600
        error (spec 2025-06-18 and later, transports), after the session is found and before
        any of it runs.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Hashable, Sequence
from typing import Any, NoReturn

import trio

from ..._core.auth import AuthInfo, principal_of
from ..._core.jsonrpc import (
    SERVER_UNAVAILABLE,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    Response,
    parse,
)
from ..._core.server_session import requested_version
from ..._core.stream_control import current_stream
from ..._core.versions import HTTP_DEFAULT_VERSION, batch_refusal
from ..._exceptions import ConnectionClosed, LocalProtocolError, RemoteProtocolError
from .asgi import (
    JSON_HEADER,
    SSE_HEADERS,
    Receive,
    Refused,
    Scope,
    Send,
    cancel_on_disconnect,
    check_content_type,
    content_length,
    encode,
    event_of,
    peer_of,
    priming,
    read_body,
    send_json,
)
from .gate import AuthGate
from .headers import check_param_headers, check_request_metadata, modern_status
from .options import HttpOptions
from .outbox import Outbox
from .replay import SessionStreams, StreamLog, parse_event_id
from .sessions import Entry, HttpBackend, HttpSession, Resolved, SessionTable

__all__ = ["StreamableHttp"]

logger = logging.getLogger("trio_mcp.http")


class StreamableHttp:
    """The Streamable HTTP endpoint's POST and DELETE.

    Args:
        backend: The MCP side.
        options: Limits and mode (stateless or not).
        sessions: The session table, shared with the legacy transport.
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
        # Requests each session has been handed, counted here and not by the session: the
        # session admits a request only once its task runs, so a burst of POSTs would all pass
        # a check of `session.in_flight` before any of them is admitted.
        self._handed: dict[int, int] = {}
        # Requests handed to sessionless sessions (stateless mode, 2026-07-28), server-wide.
        self._sessionless = 0
        # Open streams of requests that stay open (Rule 4), server-wide and by client.
        self._streams = 0
        self._streams_of: dict[Hashable, int] = {}
        # Sessions with a request being answered, and how many: what `shut_down` stops.
        self._answering: dict[int, tuple[HttpSession, int]] = {}
        # Set by `hang_up`: the server is shutting down, GET streams are refused.
        self._hung_up = False

    def hang_up(self) -> None:
        """End every open GET stream and refuse new ones (503): the server is shutting down."""
        self._hung_up = True
        self._sessions.hang_up()

    def shut_down(self) -> None:
        """Answer every request still running "server shutting down" now (the grace is over).

        Each such request's POST then gets that JSON-RPC error as its answer (or as the last
        event of its stream): exactly one answer per request, however the server stops.
        """
        for session, _ in list(self._answering.values()):
            session.shut_down()

    async def post(
        self,
        scope: Scope,
        headers: dict[bytes, bytes],
        receive: Receive,
        send: Send,
        auth: AuthInfo | None = None,
    ) -> None:
        """Answer one POST: a message or a batch (Rules 1, 6), with its verified token."""
        check_content_type(headers)
        accept = headers.get(b"accept", b"").lower()
        wildcard = b"*/*" in accept
        if not wildcard and not (b"application/json" in accept and b"text/event-stream" in accept):
            raise Refused(406, "Accept must list both application/json and text/event-stream")
        body = await read_body(receive, headers, self.options)
        messages, is_batch = parse(body)
        if not is_batch and isinstance(messages[0], InvalidMessage):
            if messages[0].response:
                await self._malformed_response(headers, messages[0], auth)
            # Parse errors and invalid messages: 400 with the JSON-RPC error as the body.
            error = messages[0].error
            raise Refused(400, error.message, code=error.code, request_id=error.id)
        # Each request is resolved once, here: its record carries the scopes it needs (checked
        # now) and goes on to the session that answers it.
        peer = peer_of(scope)
        calls = {
            i: await self.backend.resolve(m, auth, peer)
            for i, m in enumerate(messages)
            if isinstance(m, Request)
        }
        if self._gate is not None:
            self._gate.check_scopes(scope, headers, auth, (c.scopes for c in calls.values()))
        resolved = [calls.get(i, m) for i, m in enumerate(messages)]
        message: Any = resolved if is_batch else resolved[0]
        version = headers.get(b"mcp-protocol-version")
        modern_version = self._modern_version(version, messages)
        modern = modern_version is not None
        has_request = any(isinstance(m, Request) for m in messages)
        if modern:
            raw = messages if is_batch else messages[0]
            _check_batch(raw, modern_version)
            sid, session = None, self._modern_session(scope, headers, raw)
        else:
            is_init = not is_batch and _is_initialize(messages[0])
            if is_batch and any(_is_initialize(m) for m in messages):
                _check_batch(messages, None)  # no revision is in force before `initialize`
            sid, session, entry = self._session_for(headers, is_init, version, has_request, auth)
            _check_batch(message, session.protocol_version)
        if not has_request:
            answer = await session.handle(message, _no_notify)
            if answer is not None:  # a batch with invalid entries: those are answered
                await send_json(send, 200, encode(answer))
                return
            await send_json(send, 202, b"", _sid(sid))
            return
        if modern or self.options.stateless or entry is None:
            if _is_request(message) and self.backend.stays_open(message.request):
                await self._answer_stream(scope, session, message, receive, send, modern=modern)
                return
            await self._answer_sessionless(session, message, receive, send, modern=modern)
        else:
            await self._answer_in_session(session, message, sid, receive, send, entry=entry)

    async def _malformed_response(
        self, headers: dict[bytes, bytes], message: Any, auth: AuthInfo | None
    ) -> NoReturn:
        """Drop a malformed response in the session it names, then refuse the POST (Rule 2)."""
        raw = headers.get(b"mcp-session-id")
        entry = None if raw is None else self._sessions.get(raw.decode("latin-1"), auth)
        if entry is not None and entry.session is not None:
            await entry.session.handle(message, _no_notify)  # fails the task that waits
        error = message.error
        raise Refused(400, error.message, code=error.code, id_member=False)

    async def get(
        self,
        headers: dict[bytes, bytes],
        receive: Receive,
        send: Send,
        auth: AuthInfo | None = None,
    ) -> None:
        """Open the server-to-client stream of the session a GET names."""
        accept = headers.get(b"accept", b"").lower()
        if b"text/event-stream" not in accept and b"*/*" not in accept:
            raise Refused(406, "Accept must list text/event-stream")
        self._check_version(headers.get(b"mcp-protocol-version"))
        entry, session, outbox = self._named_session(headers, auth)
        if self._hung_up:
            raise Refused(503, "Server shutting down", [(b"retry-after", b"5")])
        streams = entry.streams
        primed = streams is not None and _primes(session)
        last = headers.get(b"last-event-id")
        replayed: list[tuple[int, bytes]] = []
        if last is not None:
            where = parse_event_id(last) if primed else None
            if where is None:
                raise Refused(400, "Unknown Last-Event-ID: no stream of this session has it")
            number, after = where
            assert streams is not None
            if number:  # a POST's stream (Rule 5)
                await self._resume(streams, number, after, receive, send)
                return
            if streams.store is not None:
                replayed = await streams.store.replay(streams.listen.key, after) or []
        stream = outbox.listen()
        try:
            log = streams.listen if primed and streams is not None else None
            await self._listen(
                outbox, stream, receive, send, log=log, replayed=replayed, resumed=bool(last)
            )
        finally:
            outbox.unlisten()
            entry.last_seen = trio.current_time()

    async def _listen(
        self,
        outbox: Outbox,
        number: int,
        receive: Receive,
        send: Send,
        *,
        log: StreamLog | None,
        replayed: list[tuple[int, bytes]],
        resumed: bool,
    ) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        if log is not None:  # ids, from a priming event on
            if resumed:
                first = self._retry_field() + _replay_events(0, replayed)
            else:
                first = priming(await log.append(b""), self.options.retry_interval)
            await send({"type": "http.response.body", "body": first, "more_body": True})
        stream = trio.CancelScope()  # cancelled when the client goes
        watch = trio.CancelScope()  # ends the disconnect watch before the last body (`_answer`)
        interval = self.options.keep_alive_interval
        with stream:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_on_disconnect, receive, stream, watch)
                while True:
                    if outbox.dropped:
                        notice = encode(_dropped_notice(outbox))
                        outbox.dropped = 0
                        body = event_of(notice, None if log is None else await log.append(notice))
                        await send({"type": "http.response.body", "body": body, "more_body": True})
                    with trio.move_on_after(interval) as quiet:
                        frame = await outbox.next(number)
                    if quiet.cancelled_caught:
                        await send(
                            {"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True}
                        )
                        continue
                    if frame is None:
                        break
                    body = event_of(frame, None if log is None else await log.append(frame))
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                watch.cancel()
                await send({"type": "http.response.body", "body": b""})
                stream.cancel()

    async def _resume(
        self, streams: SessionStreams, number: int, after: int, receive: Receive, send: Send
    ) -> None:
        """Replay a POST's stream after event `after`, and follow it while it runs (Rule 5)."""
        found = streams.find(number)
        store = streams.store
        if found is None or store is None:
            raise Refused(400, "Unknown Last-Event-ID: no stream of this session has it")
        key, log = found
        finished = log is None or log.done
        version = 0 if log is None else log.version
        events = await store.replay(key, after)
        if events is None:
            raise Refused(
                410, "Cannot resume that stream: the events after that id are no longer kept"
            )
        if finished and not any(frame for _, frame in events):
            # 410, not an empty stream: a client that resumes every stream ending without its
            # answer (a cancelled call's) would come back for ever; an error status ends that.
            raise Refused(410, "That stream has ended: nothing follows that event")
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        body = self._retry_field()
        stream = trio.CancelScope()  # cancelled when the client goes
        watch = trio.CancelScope()
        with stream:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_on_disconnect, receive, stream, watch)
                while True:
                    body += _replay_events(number, events)
                    after = events[-1][0] if events else after
                    if body:
                        await send({"type": "http.response.body", "body": body, "more_body": True})
                        body = b""
                    if finished or log is None:
                        break
                    with trio.move_on_after(self.options.keep_alive_interval):
                        await log.wait_past(version)
                    if log.version == version:
                        body = KEEP_ALIVE
                        events = []
                        continue
                    finished = log.done
                    version = log.version
                    replay = await store.replay(key, after)
                    if replay is None:  # dropped meanwhile: the client asks again, and is told
                        break
                    events = replay
                watch.cancel()
                await send({"type": "http.response.body", "body": b""})
                stream.cancel()

    def _retry_field(self) -> bytes:
        # An SSE block with only `retry:`: it sets the client's reconnection delay, and
        # dispatches no event.
        return b"retry: %d\n\n" % round(self.options.retry_interval * 1000)

    async def delete(
        self, headers: dict[bytes, bytes], send: Send, auth: AuthInfo | None = None
    ) -> None:
        """End the session a DELETE names: 204, or 400 / 404 when it names none open."""
        raw = headers.get(b"mcp-session-id")
        if raw is None:
            raise Refused(400, "Missing Mcp-Session-Id header")
        sid = raw.decode("latin-1")
        entry = self._sessions.get(sid, auth)
        if entry is None or entry.session is None:
            raise Refused(404, "Unknown or expired session")
        self._sessions.end(sid)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def _answer_in_session(
        self,
        session: HttpSession,
        message: Any,
        sid: str | None,
        receive: Receive,
        send: Send,
        *,
        entry: Entry,
    ) -> None:
        key = id(session)  # the session outlives its key: removed when the count drops to 0
        handed = self._handed.get(key, 0)
        if handed >= self.options.max_in_flight_per_session:
            raise Refused(
                429, "Too many requests in flight in this session", [(b"retry-after", b"1")]
            )
        if not isinstance(message, list):
            # The fast path: a request that needs no waiting (initialize, ping, tools/list, an
            # inline tool) is answered right here, with no task, channel or disconnect watch.
            answer = await _started(session, message)
            if answer is not None:
                await send_json(send, 200, encode(answer), _sid(sid))
                return
        self._handed[key] = handed + 1
        # Resumable (Rule 5) once the session speaks a revision with priming events.
        streams = entry.streams if _primes(session) else None
        try:
            await self._answer(session, message, sid, receive, send, streams=streams, kept=True)
        finally:
            if self._handed[key] == 1:
                del self._handed[key]
            else:
                self._handed[key] -= 1

    async def _answer_sessionless(
        self, session: HttpSession, message: Any, receive: Receive, send: Send, *, modern: bool
    ) -> None:
        # No session bounds these requests: the server does (Rule 4). 503, not 429: the
        # overload is the server's, not this client's doing (RFC 9110, 15.6.4), and a load
        # balancer may pass a 503 on to another worker.
        weight = sum(not _is_message(m) for m in message) if isinstance(message, list) else 1
        if self._sessionless + weight > self.options.max_in_flight_sessionless:
            raise Refused(
                503, "Too many requests in flight; try again later", [(b"retry-after", b"1")]
            )
        if not isinstance(message, list):
            # The fast path, as in a session: answered here, it never holds a slot.
            answer = await _started(session, message)
            if answer is not None:
                status = modern_status(answer) if modern else 200
                await send_json(send, status, encode(answer))
                return
        self._sessionless += weight
        try:
            await self._answer(session, message, None, receive, send, modern=modern)
        finally:
            self._sessionless -= weight

    async def _answer_stream(
        self,
        scope: Scope,
        session: HttpSession,
        call: Resolved,
        receive: Receive,
        send: Send,
        *,
        modern: bool,
    ) -> None:
        """Answer a request whose stream stays open, within the bounds of such streams (Rule 4)."""
        request = call.request
        client = _client_of(scope, call.auth)
        opts = self.options
        if self._streams_of.get(client, 0) >= opts.max_listens_per_client:
            # 429: this client's own doing (RFC 6585); it may close one of its streams.
            raise Refused(
                429,
                f"Too many subscriptions/listen streams open from this client "
                f"(max_listens_per_client={opts.max_listens_per_client}); close one first",
                [(b"retry-after", b"1")],
                SERVER_UNAVAILABLE,
                request.id,
            )
        if self._streams >= opts.max_listens:
            raise Refused(
                503,
                f"Too many subscriptions/listen streams open (max_listens={opts.max_listens}); "
                "try again later",
                [(b"retry-after", b"5")],
                SERVER_UNAVAILABLE,
                request.id,
            )
        answer = await _started(session, call)  # refused at once (a duplicate id): no stream
        if answer is not None:
            await send_json(send, modern_status(answer) if modern else 200, encode(answer))
            return
        self._streams += 1
        self._streams_of[client] = self._streams_of.get(client, 0) + 1
        try:
            await self._answer(session, call, None, receive, send, modern=modern)
        finally:
            self._streams -= 1
            left = self._streams_of[client] - 1
            if left:
                self._streams_of[client] = left
            else:
                del self._streams_of[client]

    def _modern_version(self, version: bytes | None, messages: Sequence[Any]) -> str | None:
        """The revision of a 2026-07-28 POST, by its header or its body; else None."""
        if version is not None and version.decode("latin-1") in self.backend.sessionless_versions:
            return version.decode("latin-1")
        for m in messages:
            named = requested_version(m.params) if isinstance(m, Request) else None
            if named is not None:
                return str(named)
        return None

    def _modern_session(
        self, scope: Scope, headers: dict[bytes, bytes], message: Any
    ) -> HttpSession:
        """The session of a 2026-07-28 POST, once its request is found well formed.

        Its revision has no sessions: it gets one of its own, and an Mcp-Session-Id header is
        ignored (spec 2026-07-28, Streamable HTTP: backward compatibility), in every mode.
        """
        if isinstance(message, Request):
            try:
                check_request_metadata(scope["headers"], headers, message)
                # An unsupported version is answered -32022 with the supported list, not judged
                # by the headers of a revision the server does not speak.
                served = requested_version(message.params) in self.backend.sessionless_versions
                if message.method == "tools/call" and served:
                    check_param_headers(scope["headers"], message, self.backend.param_headers)
            except RemoteProtocolError as exc:
                # spec 2026-07-28: a malformed `_meta` (-32602) and a HeaderMismatch (-32020)
                # are both answered with 400.
                raise Refused(400, exc.message, code=exc.code, request_id=message.id) from None
        return self.backend.new_session()

    def _session_for(
        self,
        headers: dict[bytes, bytes],
        is_init: bool,
        version: bytes | None,
        request: bool,
        auth: AuthInfo | None,
    ) -> tuple[str | None, HttpSession, Entry | None]:
        """The session a handshake-era POST belongs to: (its id if new, it, its table entry)."""
        self._check_version(version)
        if self.options.stateless:
            # No session: a handshake-era client is served under its header's version (the
            # spec's default when absent is 2025-03-26); 2026-07-28 requests carry their own.
            assumed = (
                None
                if is_init
                else (version.decode("latin-1") if version else HTTP_DEFAULT_VERSION)
            )
            if assumed is not None and assumed not in self.backend.versions:
                raise Refused(
                    400,
                    f"Protocol version {assumed} is not served here; send MCP-Protocol-Version "
                    f"with one of: {', '.join(self.backend.versions)}",
                )
            return None, self.backend.new_session(assumed), None
        if is_init:
            self._sessions.check_room()
            sid = secrets.token_urlsafe(32)  # 256 bits; URL-safe base64 is visible ASCII
            session = self.backend.new_session()
            new = Entry(session, trio.current_time())
            self._sessions.add(sid, new, auth)
            return sid, session, new
        entry, session, _ = self._named_session(headers, auth)
        entry.last_seen = trio.current_time()
        entry.used = entry.used or request
        return None, session, entry

    def _check_version(self, version: bytes | None) -> None:
        """Refuse (400) an `MCP-Protocol-Version` header naming a revision not served here."""
        if version is not None and version.decode("latin-1") not in self.backend.versions:
            raise Refused(
                400,
                f"Unsupported MCP-Protocol-Version {version.decode('latin-1')!r}; "
                f"supported: {', '.join(self.backend.versions)}",
            )

    def _named_session(
        self, headers: dict[bytes, bytes], auth: AuthInfo | None
    ) -> tuple[Entry, HttpSession, Outbox]:
        """The open session a handshake-era request names: its table entry, it, its GET stream.

        Raises:
            Refused: 400 without `Mcp-Session-Id`; 404 when it names no session open to `auth`.
        """
        raw = headers.get(b"mcp-session-id")
        if raw is None:
            raise Refused(400, "Missing Mcp-Session-Id header; send initialize first")
        entry = self._sessions.get(raw.decode("latin-1"), auth)
        if entry is None or entry.session is None or entry.outbox is None:
            raise Refused(404, "Unknown or expired session; initialize a new one")
        return entry, entry.session, entry.outbox

    async def _answer(
        self,
        session: HttpSession,
        message: Any,
        new_sid: str | None,
        receive: Receive,
        send: Send,
        *,
        modern: bool = False,
        streams: SessionStreams | None = None,
        kept: bool = False,
    ) -> None:
        key = id(session)
        count = self._answering.get(key, (session, 0))[1]
        self._answering[key] = (session, count + 1)
        try:
            await self._stream_answer(
                session, message, new_sid, receive, send, modern=modern, streams=streams, kept=kept
            )
        finally:
            count = self._answering[key][1] - 1
            if count:
                self._answering[key] = (session, count)
            else:
                del self._answering[key]

    async def _stream_answer(
        self,
        session: HttpSession,
        message: Any,
        new_sid: str | None,
        receive: Receive,
        send: Send,
        *,
        modern: bool,
        streams: SessionStreams | None,
        kept: bool,
    ) -> None:
        out_send, out_receive = trio.open_memory_channel[Any](64)
        done = object()
        # The response's scope: cancelled when the client disconnects (Rules 3, 5).
        stream = trio.CancelScope()
        writer = _CallStream(send, self.options, streams, _sid(new_sid), modern=modern)
        resumable = streams is not None and streams.resumable

        async def notify(method: str, params: dict[str, Any]) -> None:
            await out_send.send({"jsonrpc": "2.0", "method": method, "params": params})

        async def carry(outgoing: dict[str, Any]) -> None:
            # A request of the server's (or its cancellation) goes on this stream while it
            # lasts, or into its log once the stream is resumable (Rule 5); otherwise nothing
            # can carry it to the client (Rules 2, 3).
            if stream.cancel_called and writer.log is None:
                raise ConnectionClosed("the stream of the request being answered has ended")
            try:
                await out_send.send(outgoing)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise ConnectionClosed(
                    "the stream of the request being answered has ended"
                ) from None

        # Outside a session kept in the table, the client's answer to a request of the server's
        # (a POST of its own) could reach nothing: such a request is refused (Rule 2).
        carrier = carry if kept else _no_way_back

        async def run() -> None:
            if resumable:
                current_stream.set(_Closer(out_send))
            async with out_send:
                if isinstance(message, list):
                    answer = await session.handle(message, notify, carrier)
                else:  # one request, admitted by `start`
                    try:
                        answer = await session.answer(message, notify, carrier)
                    finally:
                        session.release(message.request.id)
                await out_send.send(answer if answer is not None else done)

        # The disconnect watch ends before the last body is sent: the server reports the
        # stream's close (`http.disconnect`) while that send runs on this task, and also does
        # its own bookkeeping there (Hypercorn starts the connection's keep-alive timer), which
        # a cancellation would kill; an idle connection then never closed and held a graceful
        # shutdown for its whole deadline.
        watch = trio.CancelScope()
        writer.watch = watch
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                nursery.start_soon(cancel_on_disconnect, receive, stream, watch)
                with stream:
                    await writer.write(out_receive, done)
                watch.cancel()
                if writer.answered:
                    return
                if writer.log is None:  # nothing can carry the answer any more (Rule 3)
                    nursery.cancel_scope.cancel()
                    return
                # The stream broke or was closed, and can be resumed: the call runs on, what
                # it sends is kept for the client to fetch (Rule 5).
                while (item := await _next(out_receive)) is not None and item is not done:
                    if item is not _CLOSE:
                        await writer.log.append(encode(item))
                        if not _opens_stream(item):
                            break  # the answer
        finally:
            writer.end()


async def _no_way_back(message: dict[str, Any]) -> None:
    """The carrier of a request answered outside a session: it refuses what the server asks."""
    raise LocalProtocolError(
        f"cannot send {message.get('method')!r} to the client: this Streamable HTTP session "
        "lasts one request (stateless mode), so the client's answer, which comes in a POST of "
        "its own, could never reach it; serve with sessions (not stateless), or over stdio or "
        "HTTP+SSE, to ask the client"
    )


class _Closer:
    """`ctx.close_sse_stream()` for a call on a resumable stream: a mark in its channel."""

    __slots__ = ("_channel",)

    def __init__(self, channel: trio.MemorySendChannel[Any]) -> None:
        self._channel = channel

    async def close(self) -> bool:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self._channel.send(_CLOSE)  # unless the stream has gone already
        return True


#: The mark `_Closer` puts in a call's channel: end its stream here.
_CLOSE = object()


class _CallStream:
    """Writes one POST's answer: JSON, or an SSE stream, resumable or not (Rule 5)."""

    def __init__(
        self,
        send: Send,
        options: HttpOptions,
        streams: SessionStreams | None,
        headers: list[tuple[bytes, bytes]],
        *,
        modern: bool,
    ) -> None:
        self._send = send
        self._modern = modern
        self._options = options
        self._streams = streams if streams is not None and streams.resumable else None
        self._headers = headers
        self.watch: trio.CancelScope | None = None
        #: The stream's log, once it has started as a resumable SSE stream.
        self.log: StreamLog | None = None
        #: Whether the answer (or the comment that stands for a cancelled one) has gone out.
        self.answered = False

    async def write(self, channel: trio.MemoryReceiveChannel[Any], done: object) -> None:
        """Send what the call produces until its answer, or until the stream is closed."""
        first = await _next(channel)
        if first is None or first is done:
            # Cancelled (notifications/cancelled from another POST): nothing to answer, but a
            # POST that carried a request must get JSON or a stream (spec 2025-11-25,
            # transports), so it gets an SSE stream that ends without an event: only an SSE
            # comment saying why.
            await self._start_sse(primed=False)
            await self._finish(b": request cancelled; no response follows\n\n")
            self.answered = True
            return
        if first is not _CLOSE and not _opens_stream(first):
            body = encode(first)
            await self._send(
                {
                    "type": "http.response.start",
                    "status": modern_status(first) if self._modern else 200,
                    "headers": [JSON_HEADER, content_length(body), *self._headers],
                }
            )
            await self._finish(body)
            self.answered = True
            return
        await self._start_sse(primed=True)
        item = first
        interval = self._options.keep_alive_interval
        while item is not None and item is not done:
            if item is _CLOSE:
                if self.log is not None:  # SEP-1699: the client reconnects for the rest
                    await self._finish(b"")
                    return
            else:
                frame = encode(item)
                event_id = None if self.log is None else await self.log.append(frame)
                await self._more(event_of(frame, event_id))
                if not _opens_stream(item):
                    break  # the answer
            item = await _next_kept_alive(channel, self._send, interval)
        await self._finish(b"")
        self.answered = True

    async def _start_sse(self, *, primed: bool) -> None:
        await self._send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*SSE_HEADERS, *self._headers],
            }
        )
        if primed and self._streams is not None:
            self.log = self._streams.start()
            primer = priming(await self.log.append(b""), self._options.retry_interval)
            await self._more(primer)

    async def _more(self, body: bytes) -> None:
        await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def _finish(self, body: bytes) -> None:
        if self.watch is not None:
            self.watch.cancel()
        await self._send({"type": "http.response.body", "body": body})

    def end(self) -> None:
        """The call is over: readers that resumed its stream end once they have it all."""
        if self.log is not None and self._streams is not None:
            self._streams.end(self.log)


#: The first revision whose GET stream starts with a priming event and carries ids.
PRIMED_FROM = "2025-11-25"


def _primes(session: HttpSession | None) -> bool:
    version = None if session is None else session.protocol_version
    return version is not None and version >= PRIMED_FROM  # ISO dates order as strings


#: The SSE comment an open stream sends when it has said nothing for a while.
KEEP_ALIVE = b": keep-alive\n\n"


def _replay_events(number: int, events: list[tuple[int, bytes]]) -> bytes:
    # Kept events as SSE, with their ids; the empty ones were priming events.
    return b"".join(event_of(frame, b"%d-%d" % (number, n)) for n, frame in events if frame)


def _dropped_notice(outbox: Outbox) -> dict[str, Any]:
    # A log message (spec: logging) the client reads before what is left of the queue.
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {
            "level": "warning",
            "logger": "trio_mcp.http",
            "data": (
                f"{outbox.dropped} notification(s) of the server's were dropped while this "
                f"session's stream was not read (the queue holds {outbox.max_bytes} bytes)"
            ),
        },
    }


def _check_batch(message: Any, version: str | None) -> None:
    """Refuse a batch (a JSON array) where the revision in force has none (Rule 6).

    Raises:
        Refused: 400 with -32600, naming the revisions that have batches.
    """
    if isinstance(message, list):
        refusal = batch_refusal(version)
        if refusal is not None:
            raise Refused(400, refusal)


def _is_initialize(message: Any) -> bool:
    return isinstance(message, Request) and message.method == "initialize"


async def _no_notify(method: str, params: dict[str, Any]) -> None:
    # Notifications from the client produce no server notifications; nothing to route.
    logger.debug("dropped notification %s with no request to carry it", method)


async def _next(channel: trio.MemoryReceiveChannel[Any]) -> Any:
    try:
        return await channel.receive()
    except trio.EndOfChannel:
        return None


async def _next_kept_alive(
    channel: trio.MemoryReceiveChannel[Any], send: Send, interval: float
) -> Any:
    # The next item of an open stream, with a keep-alive comment after each quiet interval.
    while True:
        with trio.move_on_after(interval):
            return await _next(channel)
        await send({"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True})


async def _started(session: HttpSession, call: Any) -> Any:
    """`session.start(call)`, its awaitable answer awaited (the middleware that never wait)."""
    answer = session.start(call)
    if answer is not None and not isinstance(answer, dict):
        answer = await answer
    return answer


def _is_request(item: Any) -> bool:
    """Whether a decoded item is a request (which comes resolved: `Resolved`)."""
    return not isinstance(item, list) and not _is_message(item)


def _is_message(item: Any) -> bool:
    """Whether a decoded item is no request (requests come resolved, by the MCP side)."""
    return isinstance(item, Notification | Response | ErrorResponse | InvalidMessage)


def _opens_stream(item: Any) -> bool:
    # A message of the server's (a notification, or a request to the client), not the answer.
    return isinstance(item, dict) and "method" in item


def _client_of(scope: Scope, auth: AuthInfo | None) -> Hashable:
    """Who a request comes from, for per-client bounds (Rule 4).

    The principal of its verified token, else its network address without the port (one
    client opens many connections).
    """
    principal = principal_of(auth)
    if principal is not None:
        return ("principal", principal)
    client = scope.get("client")
    return ("address", client[0] if client else None)


def _sid(sid: str | None) -> list[tuple[bytes, bytes]]:
    return [(b"mcp-session-id", sid.encode())] if sid else []
