"""HTTP transports as one ASGI application, for any ASGI server that runs under trio.

Streamable HTTP is served at `/mcp`, the legacy HTTP+SSE transport at `/sse` + `/messages`.

Rule 1: this module moves messages and knows HTTP; it never sees tools or schemas. It talks to
        the MCP side through `HttpBackend`: sessions that `handle` one decoded message, and a
        channel server for the legacy transport.
Rule 2: every check that can refuse a request runs before its body is handed on, in this order:
        path (404), method (405), Origin (403), bearer token (401), Content-Type (415), Accept
        (406), body size (413), JSON-RPC shape (400), then either the request metadata of a
        2026-07-28 request (400, Rule 6) or the protocol version header (400) and the session
        (400 missing / 404 unknown), and last the limits (429 per session / 503 server-wide).
        A refused request never reaches a session.
Rule 3: a request's answer is `application/json` when the response is the first thing it
        produces, and an SSE stream when a notification (progress, log) comes first: then the
        notifications and finally the response go on that stream, in order.
Rule 4: a client that disconnects while its request runs cancels that request. (The spec says a
        disconnection SHOULD NOT be read as cancellation, for servers that can redeliver; this
        one keeps no event log to resume from, so the result could never be delivered. Under
        2026-07-28 closing the stream MUST be taken as the cancellation.)
Rule 5: sessions are bounded (count, in-flight requests, idle time); an idle session expires
        and a later request naming it gets 404, as the spec prescribes, so the client
        re-initializes. Requests outside sessions (stateless mode, 2026-07-28) are bounded
        server-wide. A legacy SSE session counts its requests from POST to answer and is held
        to the same per-session bound as a Streamable HTTP one.
Rule 6: a request is a 2026-07-28 one when its body names a version in `params._meta` or its
        MCP-Protocol-Version header names such a revision. It stands alone (no session, whatever
        the mode) and must be well formed before it is handed on (spec 2026-07-28): its `_meta`
        carries the required fields (else 400, -32602), and MCP-Protocol-Version, Mcp-Method
        and, for tools/call, resources/read and prompts/get, Mcp-Name are each sent once and
        equal the body's values, Mcp-Name after base64-sentinel decoding (else 400, -32020
        HeaderMismatch). A tools/call also carries the `Mcp-Param-*` header of each argument
        its tool mirrors (`x-mcp-header`; the backend says which, by tool name, so this module
        still sees no schema): present and matching for an argument in the body, absent for
        one that is not (else 400, -32020). Its errors then take the HTTP status that revision
        gives them: 400 for an unsupported version (-32022) or a missing client capability
        (-32021), 404 for an unknown method (-32601); any other answer is 200.
"""

from __future__ import annotations

import collections
import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import parse_qs, urlsplit

import trio

from ..._core.jsonrpc import (
    INVALID_REQUEST,
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    dumps,
    error_response,
    loads,
    parse,
)
from ..._core.server_session import requested_version
from ..._exceptions import RemoteProtocolError
from .headers import check_param_headers, check_request_metadata, modern_status

__all__ = [
    "DEFAULT_ALLOWED_ORIGINS",
    "HttpBackend",
    "HttpOptions",
    "HttpSession",
    "McpHttpApp",
]

logger = logging.getLogger("trio_mcp.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Notify = Callable[[str, dict[str, Any]], Awaitable[None]]

#: Browser origins accepted by default: pages served from this machine only (DNS-rebinding
#: guard). Requests without an Origin header (non-browser clients) are always accepted.
DEFAULT_ALLOWED_ORIGINS: Final = (
    "http://localhost",
    "http://127.0.0.1",
    "http://[::1]",
    "https://localhost",
    "https://127.0.0.1",
    "https://[::1]",
)


class HttpSession(Protocol):
    """One MCP session as the HTTP transport sees it."""

    @property
    def in_flight(self) -> int:
        """Requests running in this session."""

    def handle_now(self, request: Request) -> Any:
        """Answer a request at once if it needs no waiting; None if it must go to `handle`."""

    async def handle(self, message: Any, notify: Notify) -> Any:
        """Handle a decoded message or batch; return the answer (None when nothing is owed)."""

    def cancel_all(self) -> None:
        """Cancel every request running in this session."""


class HttpBackend(Protocol):
    """What the HTTP transport needs from the MCP side."""

    versions: tuple[str, ...]
    #: Revisions without sessions (2026-07-28): their requests stand alone in every mode.
    sessionless_versions: tuple[str, ...]

    def new_session(self, assumed_version: str | None = None) -> HttpSession:
        """A new session; with `assumed_version`, one that needs no `initialize` (stateless)."""

    def param_headers(self, tool: str) -> Mapping[str, tuple[str, ...]]:
        """The arguments `tool` mirrors into headers (`x-mcp-header`).

        Returns:
            Lower-cased header name -> property path; empty for a tool that mirrors none, or
            for no such tool.
        """

    async def serve_channels(
        self,
        receive: trio.MemoryReceiveChannel[bytes],
        send: trio.MemorySendChannel[bytes],
        *,
        task_status: trio.TaskStatus[None] = ...,
    ) -> None:
        """Serve one legacy-SSE session over frame channels until `receive` ends."""


@dataclass(frozen=True)
class HttpOptions:
    """Limits and security settings of the HTTP transport.

    Attributes:
        path: The Streamable HTTP endpoint.
        allowed_origins: Browser origins accepted (scheme://host, any port); "*" allows all.
        bearer_token: When set, every request must carry `Authorization: Bearer <token>`.
        stateless: No sessions: every request stands alone (for many workers behind a load
            balancer). Handshake-era clients are served under their MCP-Protocol-Version.
        legacy_sse: Serve the 2024-11-05 HTTP+SSE transport at /sse and /messages.
        max_body_bytes: Largest request body.
        max_sessions: Sessions open at once (Streamable HTTP and legacy SSE together).
        max_in_flight_per_session: Requests running at once in one session (Streamable HTTP
            or legacy SSE); past it, 429.
        max_in_flight_sessionless: Requests running at once, server-wide, outside sessions
            (every request in stateless mode, and 2026-07-28 requests); past it, 503.
        session_idle_timeout: Seconds after which a session with nothing running expires.
    """

    path: str = "/mcp"
    allowed_origins: tuple[str, ...] = DEFAULT_ALLOWED_ORIGINS
    bearer_token: str | None = None
    stateless: bool = False
    legacy_sse: bool = True
    # 16 MiB, as for a stdio line: room for base64 images and embedded resources.
    max_body_bytes: int = 16 * 1024 * 1024
    # 1,000 sessions: each costs a few KiB when idle; the bound keeps a flood of initialize
    # requests from growing memory without end.
    max_sessions: int = 1000
    # As the stdio transport's max_in_flight (see _server.DEFAULT_MAX_IN_FLIGHT).
    max_in_flight_per_session: int = 1024
    # The same bound as one session's: without sessions the whole server is, for bounding, one
    # session that many clients share. Under HTTP/1.1 each request in flight also holds a
    # connection, so with the common default of 1,024 open files per process (`ulimit -n`) a
    # server could not hold many more anyway; more load wants more workers behind the load
    # balancer, which the 503 sends on to another one (e.g. nginx's proxy_next_upstream).
    max_in_flight_sessionless: int = 1024
    # 30 minutes: the same order as common reverse proxies' idle session lifetimes; a client
    # that comes back later is told 404 and re-initializes (spec: session management).
    session_idle_timeout: float = 1800.0


@dataclass
class _Entry:
    session: HttpSession | None  # None for a legacy SSE session
    last_seen: float
    legacy_inbox: trio.MemorySendChannel[bytes] | None = None
    # Legacy SSE: ids of the requests POSTed and not yet answered or cancelled (a multiset, as
    # a duplicate id is answered with an error of its own), and their count.
    legacy_pending: collections.Counter[RequestId] | None = None
    legacy_in_flight: int = 0


class _Refused(Exception):  # noqa: N818 - control flow: an HTTP status to answer with
    def __init__(
        self,
        status: int,
        message: str,
        headers: Iterable[tuple[bytes, bytes]] = (),
        code: int = INVALID_REQUEST,
        request_id: int | str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)
        self.code = code
        self.request_id = request_id


LEGACY_INBOX: Final = 16

_JSON: Final = (b"content-type", b"application/json")
_SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),  # ask reverse proxies not to buffer the stream
]


class McpHttpApp:
    """The ASGI application. Run `reaper()` beside it to expire idle sessions.

    Args:
        backend: The MCP side (sessions and the legacy channel server).
        options: Limits and security settings.
    """

    def __init__(self, backend: HttpBackend, options: HttpOptions | None = None) -> None:
        self.backend = backend
        self.options = options or HttpOptions()
        self._sessions: dict[str, _Entry] = {}
        self._closing = False
        # Requests each session has been handed, counted here and not by the session: the
        # session admits a request only once its task runs, so a burst of POSTs would all pass
        # a check of `session.in_flight` before any of them is admitted.
        self._handed: dict[int, int] = {}
        # Requests handed to sessionless sessions (stateless mode, 2026-07-28), server-wide.
        self._sessionless = 0

    @property
    def session_count(self) -> int:
        """Sessions open now."""
        return len(self._sessions)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire idle sessions until cancelled."""
        task_status.started()
        timeout = self.options.session_idle_timeout
        while True:
            await trio.sleep(min(timeout / 4, 60))
            now = trio.current_time()
            for sid, entry in list(self._sessions.items()):
                busy = entry.session is not None and entry.session.in_flight
                if not busy and entry.legacy_inbox is None and now - entry.last_seen > timeout:
                    logger.info("session %s expired after %.0f s idle", sid[:8], timeout)
                    self._end(sid)

    def begin_shutdown(self) -> None:
        """Close the input of every legacy SSE session and refuse new ones (503).

        A legacy stream never ends by itself, so an ASGI server's graceful shutdown would wait
        for it until its deadline. With its input closed, each session finishes the calls it
        is running (within the server's shutdown grace), sends their answers, and its stream
        ends. Streamable HTTP requests end with their answers and need nothing.
        """
        self._closing = True
        for sid, entry in list(self._sessions.items()):
            if entry.legacy_inbox is not None:
                self._end(sid)

    def _end(self, sid: str) -> None:
        entry = self._sessions.pop(sid, None)
        if entry is None:
            return
        if entry.session is not None:
            entry.session.cancel_all()
        if entry.legacy_inbox is not None:
            entry.legacy_inbox.close()

    # -- ASGI entry ---------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI 3 entry point."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            await self._route(scope, receive, send)
        except _Refused as refused:
            await _refuse(send, refused)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        method = scope["method"]
        opts = self.options
        allowed: tuple[str, ...]
        if path == opts.path:
            # No GET: the server never starts a message of its own, so it offers no
            # server-to-client stream (spec: 405 then). No DELETE without sessions. `Allow`
            # lists exactly what is served (RFC 9110, 15.5.6).
            allowed = ("POST",) if opts.stateless else ("POST", "DELETE")
        elif opts.legacy_sse and path == "/sse":
            allowed = ("GET",)
        elif opts.legacy_sse and path == "/messages":
            allowed = ("POST",)
        else:
            raise _Refused(404, f"Not found: {path}")
        if method not in allowed:
            reason = f"Method {method} not allowed on {path}"
            if method == "GET" and path == opts.path:
                reason = "This server offers no server-to-client stream"
            raise _Refused(405, reason, _allow(allowed))
        headers = _headers(scope)
        self._check_origin(headers)
        self._check_auth(headers)
        if path == "/sse":
            await self._legacy_stream(headers, receive, send)
        elif path == "/messages":
            await self._legacy_post(scope, headers, receive, send)
        elif method == "POST":
            await self._post(scope, headers, receive, send)
        else:  # DELETE
            self._delete(headers)
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    # -- checks -------------------------------------------------------------------------------

    def _check_origin(self, headers: dict[bytes, bytes]) -> None:
        origin = headers.get(b"origin")
        if origin is None:
            return
        allowed = self.options.allowed_origins
        text = origin.decode("latin-1")
        if "*" in allowed:
            return
        try:
            parts = urlsplit(text)
        except ValueError:  # e.g. "http://[::1": not an origin at all
            raise _Refused(403, f"Origin {text!r} is not allowed") from None
        bare = f"{parts.scheme}://{parts.hostname}" if parts.hostname else text
        if parts.hostname and ":" in parts.hostname:
            bare = f"{parts.scheme}://[{parts.hostname}]"
        if text not in allowed and bare not in allowed:
            raise _Refused(403, f"Origin {text!r} is not allowed")

    def _check_auth(self, headers: dict[bytes, bytes]) -> None:
        token = self.options.bearer_token
        if token is None:
            return
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        # The scheme name is case-insensitive (RFC 9110, 11.1); the token is compared in
        # constant time.
        valid = hmac.compare_digest(given.strip(), token.encode())
        if scheme.lower() != b"bearer" or not valid:
            raise _Refused(
                401,
                "Missing or invalid bearer token",
                [(b"www-authenticate", b'Bearer realm="mcp"')],
            )

    # -- Streamable HTTP ----------------------------------------------------------------------

    async def _post(
        self, scope: Scope, headers: dict[bytes, bytes], receive: Receive, send: Send
    ) -> None:
        _check_content_type(headers)
        accept = headers.get(b"accept", b"").lower()
        wildcard = b"*/*" in accept
        if not wildcard and not (b"application/json" in accept and b"text/event-stream" in accept):
            raise _Refused(406, "Accept must list both application/json and text/event-stream")
        body = await _read_body(receive, headers, self.options.max_body_bytes)
        messages, is_batch = parse(body)
        if not is_batch and isinstance(messages[0], InvalidMessage):
            # Parse errors and invalid messages: 400 with the JSON-RPC error as the body.
            error = messages[0].error
            raise _Refused(400, error.message, code=error.code, request_id=error.id)
        message: Any = messages if is_batch else messages[0]
        version = headers.get(b"mcp-protocol-version")
        modern = self._is_modern(version, messages)
        if modern:
            sid, session = None, self._modern_session(scope, headers, message)
        else:
            is_init = isinstance(message, Request) and message.method == "initialize"
            sid, session = self._session_for(headers, is_init, version)
        has_request = any(isinstance(m, Request) for m in messages)
        if not has_request:
            answer = await session.handle(message, _no_notify)
            if answer is not None:  # a batch with invalid entries: those are answered
                await _send_json(send, 200, _encode(answer))
                return
            await _send_json(send, 202, b"", _sid(sid))
            return
        if modern or self.options.stateless:
            await self._answer_sessionless(session, message, receive, send, modern=modern)
        else:
            await self._answer_in_session(session, message, sid, receive, send)

    async def _answer_in_session(
        self, session: HttpSession, message: Any, sid: str | None, receive: Receive, send: Send
    ) -> None:
        key = id(session)  # the session outlives its key: removed when the count drops to 0
        handed = self._handed.get(key, 0)
        if handed >= self.options.max_in_flight_per_session:
            raise _Refused(
                429, "Too many requests in flight in this session", [(b"retry-after", b"1")]
            )
        if not isinstance(message, list):
            # The fast path: a request that needs no waiting (initialize, ping, tools/list, an
            # inline tool) is answered right here, with no task, channel or disconnect watch.
            answer = session.handle_now(message)
            if answer is not None:
                await _send_json(send, 200, _encode(answer), _sid(sid))
                return
        self._handed[key] = handed + 1
        try:
            await self._answer(session, message, sid, receive, send)
        finally:
            if self._handed[key] == 1:
                del self._handed[key]
            else:
                self._handed[key] -= 1

    async def _answer_sessionless(
        self, session: HttpSession, message: Any, receive: Receive, send: Send, *, modern: bool
    ) -> None:
        # No session bounds these requests: the server does (Rule 5). 503, not 429: the
        # overload is the server's, not this client's doing (RFC 9110, 15.6.4), and a load
        # balancer may pass a 503 on to another worker.
        weight = sum(isinstance(m, Request) for m in message) if isinstance(message, list) else 1
        if self._sessionless + weight > self.options.max_in_flight_sessionless:
            raise _Refused(
                503, "Too many requests in flight; try again later", [(b"retry-after", b"1")]
            )
        if not isinstance(message, list):
            # The fast path, as in a session: answered here, it never holds a slot.
            answer = session.handle_now(message)
            if answer is not None:
                status = modern_status(answer) if modern else 200
                await _send_json(send, status, _encode(answer))
                return
        self._sessionless += weight
        try:
            await self._answer(session, message, None, receive, send, modern=modern)
        finally:
            self._sessionless -= weight

    def _is_modern(self, version: bytes | None, messages: Sequence[Any]) -> bool:
        """Whether this POST is a 2026-07-28 one (Rule 6): by its header or its body."""
        if version is not None and version.decode("latin-1") in self.backend.sessionless_versions:
            return True
        return any(
            isinstance(m, Request) and requested_version(m.params) is not None for m in messages
        )

    def _modern_session(
        self, scope: Scope, headers: dict[bytes, bytes], message: Any
    ) -> HttpSession:
        """The session of a 2026-07-28 POST, once its request is found well formed (Rule 6).

        Its revision has no sessions: it gets one of its own, and an Mcp-Session-Id header is
        ignored (spec 2026-07-28, Streamable HTTP: backward compatibility), in every mode.
        """
        if isinstance(message, list):
            raise _Refused(400, "Invalid Request: a 2026-07-28 request cannot be sent in a batch")
        if isinstance(message, Request):
            try:
                check_request_metadata(scope["headers"], headers, message)
                # An unsupported version is answered -32022 with the supported list, not judged
                # by the headers of a revision the server does not speak.
                served = requested_version(message.params) in self.backend.sessionless_versions
                if message.method == "tools/call" and served:
                    check_param_headers(scope["headers"], message, self.backend.param_headers)
            except RemoteProtocolError as exc:
                raise _Refused(400, exc.message, code=exc.code, request_id=message.id) from None
        return self.backend.new_session()

    def _session_for(
        self, headers: dict[bytes, bytes], is_init: bool, version: bytes | None
    ) -> tuple[str | None, HttpSession]:
        if version is not None and version.decode("latin-1") not in self.backend.versions:
            raise _Refused(
                400,
                f"Unsupported MCP-Protocol-Version {version.decode('latin-1')!r}; "
                f"supported: {', '.join(self.backend.versions)}",
            )
        if self.options.stateless:
            # No session: a handshake-era client is served under its header's version (the
            # spec's default when absent is 2025-03-26); 2026-07-28 requests carry their own.
            assumed = None if is_init else (version.decode("latin-1") if version else "2025-03-26")
            if assumed is not None and assumed not in self.backend.versions:
                raise _Refused(
                    400,
                    f"Protocol version {assumed} is not served here; send MCP-Protocol-Version "
                    f"with one of: {', '.join(self.backend.versions)}",
                )
            return None, self.backend.new_session(assumed)
        if is_init:
            if len(self._sessions) >= self.options.max_sessions:
                raise _Refused(503, "Too many sessions; try again later", [(b"retry-after", b"5")])
            sid = secrets.token_urlsafe(32)  # 256 bits; URL-safe base64 is visible ASCII
            session = self.backend.new_session()
            self._sessions[sid] = _Entry(session, trio.current_time())
            return sid, session
        raw = headers.get(b"mcp-session-id")
        if raw is None:
            raise _Refused(400, "Missing Mcp-Session-Id header; send initialize first")
        entry = self._sessions.get(raw.decode("latin-1"))
        if entry is None or entry.session is None:
            raise _Refused(404, "Unknown or expired session; initialize a new one")
        entry.last_seen = trio.current_time()
        return None, entry.session

    def _delete(self, headers: dict[bytes, bytes]) -> None:
        raw = headers.get(b"mcp-session-id")
        if raw is None:
            raise _Refused(400, "Missing Mcp-Session-Id header")
        sid = raw.decode("latin-1")
        if sid not in self._sessions or self._sessions[sid].session is None:
            raise _Refused(404, "Unknown or expired session")
        self._end(sid)

    async def _answer(
        self,
        session: HttpSession,
        message: Any,
        new_sid: str | None,
        receive: Receive,
        send: Send,
        *,
        modern: bool = False,
    ) -> None:
        out_send, out_receive = trio.open_memory_channel[Any](64)
        done = object()

        async def notify(method: str, params: dict[str, Any]) -> None:
            await out_send.send({"jsonrpc": "2.0", "method": method, "params": params})

        async def run() -> None:
            async with out_send:
                answer = await session.handle(message, notify)
                await out_send.send(answer if answer is not None else done)

        # The disconnect watch ends before the last body is sent: the server reports the
        # stream's close (`http.disconnect`) while that send runs on this task, and also does
        # its own bookkeeping there (Hypercorn starts the connection's keep-alive timer), which
        # a cancellation would kill; an idle connection then never closed and held a graceful
        # shutdown for its whole deadline.
        watch = trio.CancelScope()

        async def finish(body: bytes) -> None:
            watch.cancel()
            await send({"type": "http.response.body", "body": body})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope, watch)
            nursery.start_soon(run)
            headers = _sid(new_sid)
            first = await _next(out_receive)
            if first is None or first is done:
                # Cancelled (notifications/cancelled from another POST): nothing to answer, but
                # a POST that carried a request must get JSON or a stream (spec 2025-11-25,
                # transports), so it gets an SSE stream that ends without an event: only an SSE
                # comment saying why.
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [*_SSE_HEADERS, *headers],
                    }
                )
                await finish(b": request cancelled; no response follows\n\n")
            elif not _is_notification(first):
                body = _encode(first)
                status = modern_status(first) if modern else 200
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [_JSON, _length(body), *headers],
                    }
                )
                await finish(body)
            else:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [*_SSE_HEADERS, *headers],
                    }
                )
                item = first
                while item is not None and item is not done:
                    await send(
                        {"type": "http.response.body", "body": _event(item), "more_body": True}
                    )
                    item = await _next(out_receive)
                await finish(b"")
            nursery.cancel_scope.cancel()

    # -- legacy HTTP+SSE (2024-11-05) ---------------------------------------------------------

    async def _legacy_stream(
        self, headers: dict[bytes, bytes], receive: Receive, send: Send
    ) -> None:
        if self._closing:
            raise _Refused(503, "Shutting down", [(b"retry-after", b"5")])
        if len(self._sessions) >= self.options.max_sessions:
            raise _Refused(503, "Too many sessions; try again later", [(b"retry-after", b"5")])
        sid = secrets.token_hex(16)
        # Bodies queued per legacy session before POSTs get 429: each may be max_body_bytes,
        # so the queue is short (16, like the SDKs' small stream buffers), not the in-flight cap.
        inbox_send, inbox_receive = trio.open_memory_channel[bytes](LEGACY_INBOX)
        outbox_send, outbox_receive = trio.open_memory_channel[bytes](256)
        entry = _Entry(
            None, trio.current_time(), legacy_inbox=inbox_send, legacy_pending=collections.Counter()
        )
        self._sessions[sid] = entry
        try:
            await send(
                {"type": "http.response.start", "status": 200, "headers": list(_SSE_HEADERS)}
            )
            endpoint = f"/messages?sessionId={sid}".encode()
            await send(
                {
                    "type": "http.response.body",
                    "body": b"event: endpoint\ndata: " + endpoint + b"\n\n",
                    "more_body": True,
                }
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope)

                async def serve() -> None:
                    await self.backend.serve_channels(inbox_receive, outbox_send)
                    await outbox_send.aclose()

                nursery.start_soon(serve)
                async with outbox_receive:
                    async for frame in outbox_receive:
                        _legacy_answered(entry, frame)
                        await send(
                            {
                                "type": "http.response.body",
                                "body": b"event: message\ndata: " + frame + b"\n\n",
                                "more_body": True,
                            }
                        )
                nursery.cancel_scope.cancel()
            await send({"type": "http.response.body", "body": b""})
        finally:
            self._end(sid)

    async def _legacy_post(
        self, scope: Scope, headers: dict[bytes, bytes], receive: Receive, send: Send
    ) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        sid = (query.get("sessionId") or query.get("session_id") or [""])[0]
        if not sid:
            raise _Refused(400, "Missing sessionId query parameter")
        entry = self._sessions.get(sid)
        if entry is None or entry.legacy_inbox is None:
            raise _Refused(404, "Unknown or closed session")
        _check_content_type(headers)
        body = await _read_body(receive, headers, self.options.max_body_bytes)
        entry.last_seen = trio.current_time()
        # Rule 5: the same bound as a Streamable HTTP session's. The session's own reader would
        # only stop reading (back-pressure) and leave the POSTs to queue up to the inbox's size.
        messages, _ = parse(body)
        requests = [m.id for m in messages if isinstance(m, Request)]
        if requests and entry.legacy_in_flight + len(requests) > (
            self.options.max_in_flight_per_session
        ):
            raise _Refused(
                429, "Too many requests in flight in this session", [(b"retry-after", b"1")]
            )
        try:
            entry.legacy_inbox.send_nowait(body)
        except trio.WouldBlock:
            raise _Refused(
                429, "Too many messages queued for this session", [(b"retry-after", b"1")]
            ) from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise _Refused(404, "Session closed") from None
        # Counted once queued, with no checkpoint in between: the session cannot answer first.
        _legacy_count(entry, requests, messages)
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b"Accepted"})


# -- helpers ------------------------------------------------------------------------------------


async def _no_notify(method: str, params: dict[str, Any]) -> None:
    # Notifications from the client produce no server notifications; nothing to route.
    logger.debug("dropped notification %s with no request to carry it", method)


async def _next(channel: trio.MemoryReceiveChannel[Any]) -> Any:
    try:
        return await channel.receive()
    except trio.EndOfChannel:
        return None


def _is_notification(item: Any) -> bool:
    return isinstance(item, dict) and "method" in item and "id" not in item


def _encode(message: Any) -> bytes:
    try:
        return dumps(message)
    except ValueError as exc:
        logger.error("cannot encode a response as JSON: %s", exc)  # noqa: TRY400 - no traceback needed
        request_id = message.get("id") if isinstance(message, dict) else None
        return dumps(error_response(request_id, -32603, "Internal error: unencodable response"))


def _event(message: Any) -> bytes:
    return b"event: message\ndata: " + _encode(message) + b"\n\n"


def _legacy_count(entry: _Entry, requests: list[RequestId], messages: Sequence[Any]) -> None:
    pending = entry.legacy_pending
    assert pending is not None
    pending.update(requests)
    entry.legacy_in_flight += len(requests)
    for message in messages:
        # A cancelled request is never answered (the server runtime's Rule 2): done now.
        if isinstance(message, Notification) and message.method == "notifications/cancelled":
            _legacy_settle(entry, (message.params or {}).get("requestId"))


def _legacy_answered(entry: _Entry, frame: bytes) -> None:
    if not entry.legacy_in_flight:
        return  # nothing to settle: notifications, or answers to invalid messages
    try:
        message = loads(frame)
    except RemoteProtocolError:
        return
    for item in message if isinstance(message, list) else [message]:
        if isinstance(item, dict) and "method" not in item:
            _legacy_settle(entry, item.get("id"))


def _legacy_settle(entry: _Entry, request_id: Any) -> None:
    pending = entry.legacy_pending
    # Only an int or str names a request (True would find the id 1).
    if pending is None or not (type(request_id) is int or isinstance(request_id, str)):
        return
    if pending[request_id] > 0:
        pending[request_id] -= 1
        if not pending[request_id]:
            del pending[request_id]
        entry.legacy_in_flight -= 1


async def _cancel_on_disconnect(
    receive: Receive, scope: trio.CancelScope, watch: trio.CancelScope | None = None
) -> None:
    with watch or trio.CancelScope():
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                scope.cancel()
                return


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope["headers"]}


def _allow(methods: Iterable[str]) -> list[tuple[bytes, bytes]]:
    return [(b"allow", ", ".join(methods).encode())]


def _sid(sid: str | None) -> list[tuple[bytes, bytes]]:
    return [(b"mcp-session-id", sid.encode())] if sid else []


def _check_content_type(headers: dict[bytes, bytes]) -> None:
    content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if content_type != b"application/json":
        raise _Refused(415, "Content-Type must be application/json")


async def _read_body(receive: Receive, headers: dict[bytes, bytes], limit: int) -> bytes:
    declared = headers.get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Refused(413, f"Request body larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Refused(400, "Client disconnected")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _Refused(413, f"Request body larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _refuse(send: Send, refused: _Refused) -> None:
    body = dumps(error_response(refused.request_id, refused.code, refused.message))
    await _send_json(send, refused.status, body, refused.headers)


def _length(body: bytes) -> tuple[bytes, bytes]:
    return (b"content-length", b"%d" % len(body))


async def _send_json(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """A whole response: a JSON body (none for 202), with its length.

    Content-Length lets an HTTP/1.1 server send the body as it is, where without it the
    server frames it as chunks and ends it with a last empty chunk: one more write.
    """
    start = [_length(body), *headers] if status == 202 else [_JSON, _length(body), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
