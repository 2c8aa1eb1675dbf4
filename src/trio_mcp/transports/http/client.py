"""Client-side HTTP links (httpx): Streamable HTTP, and the legacy HTTP+SSE transport.

Streamable HTTP is per request: `send` POSTs one message and, for a request, reads its answer
(`application/json`, or an SSE stream of notifications ending with the response) onto `incoming`
as it arrives, so progress shows live. The session id from the `initialize` answer goes on every
later request, with `MCP-Protocol-Version`; the session is ended with DELETE when the link
closes. A 2026-07-28 request (one naming its version in `params._meta`) mirrors that version,
its method and, for tools/call, the tool's name into MCP-Protocol-Version, Mcp-Method and
Mcp-Name (`headers.request_headers`), and the arguments the tool marks with `x-mcp-header` (as
the client last listed it, see `mirror_params`) into Mcp-Param-* headers.

Legacy HTTP+SSE (2024-11-05) is a channel: one GET stream brings the `endpoint` event, then
every message from the server; each message to the server is POSTed to the endpoint, and when
the stream ends, `incoming` ends and waiting calls fail.

With `auth` (an `OAuth`), the link's HTTP client carries `oauth.flow.OAuthFlow`, so every
request (POST, GET stream, DELETE) is authorized the same way: a 401 or 403 it cannot cure comes
back as the HTTP error it is, and an authorization that fails raises `AuthorizationError` from
the request that needed it. httpx is imported only when a link is opened, so trio-mcp imports
without it.

A Streamable HTTP link opened to `listen` (a client that answers server requests), or told to
`listen` later (a client with list-change or update callbacks), opens the session's GET stream,
where a handshake-era server sends what belongs to no call of ours, its own requests among
them. A server that offers none (405) is let go quietly, and so is a session the server no
longer knows (404: the next POST learns it and the new session opens its own stream); a stream
that ends or breaks is reopened (Rule 5).

Rule 1: a message is sent again only when it cannot have run: the connection was never made
        (refused, connect timeout), or the server refused it before reading it (429, 503), or
        the caller said it is safe (`retry_safe`). A 502 or 504 (a proxy or load balancer
        lost its server, or waited too long for it) may come after the server ran the message:
        it is sent again only when the caller said it is safe, like a connection that broke.
        Waits between attempts grow exponentially with full jitter and the attempts are
        bounded (`RetryPolicy`). A 404 naming our session raises `SessionExpiredError`: the
        client decides to start a new session.
Rule 2: no read timeout: a tool call may take as long as its caller allows (`trio.fail_after`).
Rule 3: nothing the server sends on the session's GET stream as the session's first calls run
        is lost: a link that wants the stream opens it once `notifications/initialized` is
        through (and again after a new session starts), and the send of that notification
        returns only once the stream is open (or refused, or `CONNECT_TIMEOUT` later).
Rule 4: a request's event stream that ends (or breaks) before its answer, having carried an
        event id, is resumed (spec 2025-11-25, Resumability; SEP-1699 polling): after the
        `retry` time the server gave (else `DEFAULT_RETRY`), a GET with `Last-Event-ID` reads
        the rest, as often as it makes progress and at most `RESUME_ATTEMPTS` times. A stream
        with no event id cannot be resumed: the request fails, as before.
Rule 5: the session's GET stream that ends or breaks is opened again after the `retry` time
        the server gave (else `DEFAULT_RETRY`; never less than `MIN_RETRY`), with
        `Last-Event-ID` naming the last event id it carried (spec 2025-11-25, Resumability;
        SEP-1699 polling). A reopening that carries a message or a new event id is progress
        and starts the count again; after `GET_ATTEMPTS` in a row without, failing ones also
        waiting out `RetryPolicy`'s growing delay, the stream is let go with a warning. It
        stops at 404 or 405, when a new session takes its place, and when the link closes;
        nothing of it is ever raised into the client.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import random
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin, urlsplit

import trio

from ..._core.jsonrpc import METHOD_NOT_FOUND, dumps, loads
from ..._core.param_headers import argument_at, header_text
from ..._core.server_session import requested_version
from ..._core.versions import MODERN_VERSIONS
from ..._exceptions import (
    ConnectionClosed,
    RemoteProtocolError,
    RequestError,
    SessionExpiredError,
    TransportError,
)
from ...oauth.rules import parse_www_authenticate
from .headers import encode_value, request_headers

if TYPE_CHECKING:
    import httpx

    from ...oauth.rules import OAuth

__all__ = [
    "RetryPolicy",
    "SseDecoder",
    "SseEvent",
    "SseLink",
    "StreamableHttpLink",
    "open_sse_link",
    "open_streamable_http_link",
]

logger = logging.getLogger("trio_mcp.client.http")

ACCEPT: Final = "application/json, text/event-stream"
# Messages from the server queued for the client's reader before an HTTP read waits.
INCOMING_BUFFER: Final = 256
# Seconds to establish a connection: a transport concern (a refused or silent host is retried),
# unlike reads, whose length is the caller's business. httpx's own default is 5 s.
CONNECT_TIMEOUT: Final = 10.0
#: Seconds before resuming a request's event stream when the server named no `retry` (Rule 4).
DEFAULT_RETRY: Final = 1.0
#: GETs with `Last-Event-ID` one request's stream may take (Rule 4).
RESUME_ATTEMPTS: Final = 5
#: Reopenings of the session's GET stream in a row that bring nothing before it is let go
#: (Rule 5): each waits `retry` (else `DEFAULT_RETRY`), and longer as they fail.
GET_ATTEMPTS: Final = 5
#: The shortest wait before the GET stream is reopened, whatever `retry` the server named.
MIN_RETRY: Final = 0.1
# Seconds the DELETE that ends a session may take when the link closes.
CLOSE_TIMEOUT: Final = 2.0
# Longest Retry-After honoured, in seconds: a server asking for more is treated as down.
MAX_RETRY_AFTER: Final = 30.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transient HTTP failures are retried.

    Delays follow "full jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"): the
    n-th wait is uniform in [0, min(max_delay, base_delay * 2**(n-1))], so clients that failed
    together do not come back together.

    Attributes:
        attempts: Tries in all, the first included (1 disables retrying). The default, 5,
            bounds the worst wait at 0.25 + 0.5 + 1 + 2 = 3.75 s.
        base_delay: Seconds of the first wait's upper bound.
        max_delay: Cap on any single wait, in seconds.
    """

    attempts: int = 5
    base_delay: float = 0.25
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** (retry - 1)))


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event."""

    event: str
    data: str


class SseDecoder:
    """Turns the lines of a `text/event-stream` into events (WHATWG HTML, server-sent events).

    Also keeps what resuming the stream needs: the last event id it carried (`last_id`) and
    the reconnection time the server asked for (`retry_ms`). An event's id counts once the
    event is whole (its blank line came): one cut short by a broken connection was not
    received, and resuming asks for it again.

    Args:
        last_id: The last event id of the stream this one resumes, if any.
        retry_ms: The `retry` time that stream named, if any.
    """

    __slots__ = ("_data", "_event", "_id", "last_id", "retry_ms")

    def __init__(self, last_id: str | None = None, retry_ms: int | None = None) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id = last_id  # the last event id buffer (WHATWG): committed at the blank line
        #: The `id` of the last whole event (an event with an id and no data counts: SEP-1699's
        #: priming event), or None while the stream has carried none.
        self.last_id: str | None = last_id
        #: The `retry` field's milliseconds, or None while the server has sent none.
        self.retry_ms: int | None = retry_ms

    def reconnected(self) -> None:
        """Forget the event a broken connection cut short: a new connection starts afresh."""
        self._event = ""
        self._data = []
        self._id = self.last_id

    def line(self, line: str) -> SseEvent | None:
        """Feed one line (without its line break); returns the event a blank line completes."""
        if not line:
            self.last_id = self._id
            if not self._data:
                self._event = ""
                return None
            event = SseEvent(self._event or "message", "\n".join(self._data))
            self._event = ""
            self._data = []
            return event
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None


def _unsent(exc: Exception) -> bool:
    import httpx  # noqa: PLC0415 - loaded with the link

    # The request never left: no connection was made (refused, unreachable, timed out while
    # connecting) or no pooled connection became free.
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)


def _error_from(status: int, body: bytes, url: str, challenge: str = "") -> Exception:
    """The exception for an HTTP error answer.

    A 400 that carries a JSON-RPC error refused the message itself (parse error, invalid
    request, unsupported protocol version: spec 2026-07-28 has clients read that body), and so
    does a 404 carrying -32601 (spec 2026-07-28: an unknown method is 404 with that error, which
    tells it from a 404 for the path): a `RequestError`. Any other status refused the connection
    (path, method, origin, token, ...): a `TransportError` that quotes the server's reason, and
    for a 401 or 403 the `error_description` of its `WWW-Authenticate` challenge (`challenge`),
    which says what was wrong with the token.
    """
    try:
        data = loads(body)
    except RemoteProtocolError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code")
        if status == 400 or (status == 404 and code == METHOD_NOT_FOUND):
            return RequestError(
                f"{error['message']} (HTTP {status})",
                code if type(code) is int else -32600,
                error.get("data"),
            )
        text = error["message"]
    else:
        text = body.decode("utf-8", "replace").strip()[:200]
    if status in (401, 403):
        description = parse_www_authenticate(challenge)[1].get("error_description", "")[:200]
        if description and description not in text:
            text = f"{text} ({description})" if text else description
    return TransportError(f"HTTP {status} from {url}" + (f": {text}" if text else ""))


def _challenge(response: httpx.Response) -> str:
    return str(response.headers.get("www-authenticate", ""))


async def _expect_ok(response: httpx.Response, url: str) -> None:
    if response.status_code != 200:
        raise _error_from(response.status_code, await response.aread(), url, _challenge(response))


def _retry_after(response: httpx.Response, fallback: float) -> float:
    value = response.headers.get("retry-after", "")
    try:
        seconds = float(value)
    except ValueError:
        return fallback
    return max(0.0, min(seconds, MAX_RETRY_AFTER))


def _http_client(
    headers: Mapping[str, str] | None, url: str, auth: OAuth | None, *, legacy_sse: bool = False
) -> httpx.AsyncClient:
    try:
        import httpx  # noqa: PLC0415 - HTTP code loads only when used
    except ImportError as exc:
        raise TransportError('HTTP needs httpx: pip install "trio-mcp[http]"') from exc
    flow: httpx.Auth | None = None
    if auth is not None:
        from ...oauth.flow import OAuthFlow  # noqa: PLC0415 - loads with the first OAuth link

        flow = OAuthFlow(auth, url, legacy_sse=legacy_sse)
    return httpx.AsyncClient(
        headers=dict(headers or {}),
        # OAuth: every request of the link carries the token and answers 401 and 403.
        auth=flow,
        # Rule 2: reads are bounded by the caller; connecting is bounded here.
        timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT),
        # Every call in flight holds a connection (HTTP/1.1): no cap, or concurrent calls past
        # the cap would queue behind long ones.
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
    )


class _GetOutcome(enum.Enum):
    """How one GET of the session's stream ended (Rule 5)."""

    STOP = "stop"  # not to be reopened: no GET stream here (405), or no session (404)
    PROGRESS = "progress"  # it carried messages
    FAILED = "failed"  # refused, broken, or ended having carried nothing


class _Busy(Exception):  # noqa: N818 - control flow: the server asked us to come back later
    def __init__(self, seconds: float, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.seconds = seconds
        self.status = status


class _Gateway(Exception):  # noqa: N818 - control flow: a proxy in between lost the server
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class StreamableHttpLink:
    """A link to a Streamable HTTP endpoint; create it with `open_streamable_http_link`."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        retry: RetryPolicy,
        incoming: tuple[trio.MemorySendChannel[bytes], trio.MemoryReceiveChannel[bytes]],
        listener: trio.Nursery | None = None,
        *,
        listen: bool = False,
    ) -> None:
        self.url = url
        self.retry = retry
        self._http = http
        self._in_send, self._in_receive = incoming
        self._session_id: str | None = None
        self._version: str | None = None
        # Rule 3: where the GET stream runs, whether it is wanted, and its scope.
        self._listener = listener
        self._wants_listen = listen
        self._listening: trio.CancelScope | None = None
        # Tool name -> {header name: property path}, as `mirror_params` last gave it.
        self._param_headers: dict[str, dict[str, tuple[str, ...]]] = {}

    @property
    def incoming(self) -> trio.MemoryReceiveChannel[bytes]:
        """Messages from the server, as the answers to our POSTs bring them."""
        return self._in_receive

    @property
    def session_id(self) -> str | None:
        """The `Mcp-Session-Id` the server gave at `initialize` (None for a stateless one)."""
        return self._session_id

    def negotiated(self, version: str) -> None:
        """Send `MCP-Protocol-Version: version` from now on."""
        self._version = version

    def mirror_params(self, tools: Mapping[str, Mapping[str, tuple[str, ...]]]) -> bool:
        """Mirror these arguments of each tool into `Mcp-Param-*` headers from now on.

        Args:
            tools: Tool name -> {lower-cased header name: property path}; replaces the last.

        Returns:
            True: this transport mirrors parameters (spec 2026-07-28).
        """
        self._param_headers = {name: dict(params) for name, params in tools.items()}
        return True

    async def close_reason(self) -> str:
        """Why `incoming` ended: only the link's own closing ends it."""
        return f"the connection to {self.url} was closed"

    async def send(self, message: dict[str, Any], *, retry_safe: bool = False) -> None:
        """POST one message; for a request, read its answer onto `incoming`.

        Raises:
            ConnectionClosed: when the server cannot be reached (after retries), or the
                connection broke after the message may have arrived (and it is not
                `retry_safe`).
            SessionExpiredError: when the server answers 404 for our session.
            RequestError: when the server refuses the message with a JSON-RPC error.
            TransportError: for any other HTTP error status.
        """
        method = message.get("method")
        if method == "notifications/cancelled" and self._version in MODERN_VERSIONS:
            # spec 2026-07-28, Streamable HTTP: closing the request's stream (which cancelling
            # its `send` did) is the cancellation; no notifications/cancelled is expected.
            return
        body = dumps(message)
        what = f"{method} request" if "id" in message and method else "message"
        retry = 0
        while True:
            try:
                await self._post(message, body)
            except _Busy as busy:
                if retry + 1 >= self.retry.attempts:
                    raise ConnectionClosed(
                        f"{self.url} is busy (HTTP {busy.status}) and refused the {what} "
                        f"{retry + 1} time(s)"
                    ) from None
                wait = max(busy.seconds, self.retry.delay(retry + 1))
            except _Gateway as gateway:
                if not retry_safe or retry + 1 >= self.retry.attempts:
                    raise ConnectionClosed(
                        f"{self.url} answered HTTP {gateway.status} (a proxy lost its server) "
                        f"to a {what}"
                        + ("" if retry_safe else "; not sent again, as it may have run")
                    ) from None
                wait = self.retry.delay(retry + 1)
                logger.warning(
                    "%s to %s got HTTP %d; attempt %d of %d in %.2f s",
                    what,
                    self.url,
                    gateway.status,
                    retry + 2,
                    self.retry.attempts,
                    wait,
                )
            except Exception as exc:
                if not _is_network_error(exc):
                    raise
                unsent = _unsent(exc)
                if not (unsent or retry_safe) or retry + 1 >= self.retry.attempts:
                    if unsent:
                        raise ConnectionClosed(
                            f"cannot reach {self.url} ({_describe(exc)}); gave up after "
                            f"{retry + 1} attempt(s)"
                        ) from exc
                    raise ConnectionClosed(
                        f"the connection to {self.url} broke during a {what} "
                        f"({_describe(exc)}); not sent again, as it may have arrived"
                    ) from exc
                wait = self.retry.delay(retry + 1)
                logger.warning(
                    "%s to %s failed (%s); attempt %d of %d in %.2f s",
                    what,
                    self.url,
                    _describe(exc),
                    retry + 2,
                    self.retry.attempts,
                    wait,
                )
            else:
                return
            retry += 1
            await trio.sleep(wait)

    async def _post(self, message: dict[str, Any], body: bytes) -> None:
        is_request = "id" in message and "method" in message
        is_init = message.get("method") == "initialize"
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        session_id = None if is_init else self._session_id
        if session_id is not None:
            headers["mcp-session-id"] = session_id
        if self._version is not None and not is_init:
            headers["mcp-protocol-version"] = self._version
        modern = requested_version(message.get("params")) if is_request else None
        if isinstance(modern, str):
            headers.update(request_headers(message, modern))
            if message["method"] == "tools/call":
                headers.update(self._param_values(message["params"]))
        async with self._http.stream("POST", self.url, content=body, headers=headers) as response:
            status = response.status_code
            if status in (429, 503):
                await response.aclose()
                raise _Busy(_retry_after(response, 0.0), status)
            if status in (502, 504):
                await response.aclose()
                raise _Gateway(status)
            if status == 404 and session_id is not None:
                await response.aclose()
                raise SessionExpiredError(
                    f"{self.url} no longer knows session {session_id[:8]}... (HTTP 404)",
                    session_id,
                )
            if status >= 400:
                raise _error_from(status, await response.aread(), self.url, _challenge(response))
            if is_init:
                self._session_id = response.headers.get("mcp-session-id")
            if is_request:
                await self._read_answer(response, message["id"])
            else:
                await response.aclose()
                if message.get("method") == "notifications/initialized":
                    await self._listen()

    def _param_values(self, params: Mapping[str, Any]) -> dict[str, str]:
        # One header per mirrored argument that has a header form; none for an absent
        # or null one (spec 2026-07-28, Custom Headers from Tool Parameters).
        name = params.get("name")
        mirrored = self._param_headers.get(name) if isinstance(name, str) else None
        if not mirrored:
            return {}
        arguments = params.get("arguments")
        values = {}
        for header, path in mirrored.items():
            text = header_text(argument_at(arguments, path))
            if text is not None:
                values[header] = encode_value(text)
        return values

    async def _read_answer(self, response: httpx.Response, request_id: Any) -> None:
        status = response.status_code
        if status == 202:
            # No answer will ever come for this request: fail it rather than wait forever.
            raise RemoteProtocolError(f"{self.url} accepted a request without answering it")
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "text/event-stream":
            decoder = SseDecoder()
            answered = await self._read_events(response, decoder, request_id, resumable=True)
            if not answered:
                await self._resume(decoder, request_id)
        elif kind == "application/json":
            data = await response.aread()
            if data.strip():
                await self._in_send.send(data)
        else:
            raise RemoteProtocolError(
                f"{self.url} answered a request with HTTP {status} and "
                f"content type {kind or 'none'!r}, not JSON or an event stream"
            )

    async def _read_events(
        self, response: httpx.Response, decoder: SseDecoder, request_id: Any, *, resumable: bool
    ) -> bool:
        """Pass a stream's messages on until it ends or answers `request_id`; whether it did.

        A stream that breaks (the connection drops) counts as ended when it can be resumed
        (it carried an event id), and raises otherwise.
        """
        try:
            async for line in response.aiter_lines():
                event = decoder.line(line)
                if event is not None and event.event == "message" and event.data:
                    await self._in_send.send(event.data.encode())
                    if _answers(event.data, request_id):
                        return True
        except Exception as exc:
            if not (_is_network_error(exc) and resumable and decoder.last_id is not None):
                raise
        return False

    async def _resume(self, decoder: SseDecoder, request_id: Any) -> None:
        """Get the rest of a request's stream with GET and `Last-Event-ID` (Rule 4)."""
        for _ in range(RESUME_ATTEMPTS):
            if decoder.last_id is None:
                break
            retry = decoder.retry_ms / 1000 if decoder.retry_ms is not None else DEFAULT_RETRY
            await trio.sleep(retry)
            headers = {"accept": "text/event-stream", "last-event-id": decoder.last_id}
            if self._session_id is not None:
                headers["mcp-session-id"] = self._session_id
            if self._version is not None:
                headers["mcp-protocol-version"] = self._version
            seen = decoder.last_id
            try:
                if await self._resume_once(headers, decoder, request_id):
                    return
            except Exception as exc:
                if not _is_network_error(exc):
                    raise
                # Try again, after the retry time, while attempts last.
            if decoder.last_id == seen and decoder.retry_ms is None:
                break  # nothing new and no word on when to come back
        raise RemoteProtocolError(
            f"{self.url} ended the event stream without answering the request"
        )

    async def _resume_once(
        self, headers: dict[str, str], decoder: SseDecoder, request_id: Any
    ) -> bool:
        async with self._http.stream("GET", self.url, headers=headers) as response:
            kind = response.headers.get("content-type", "").split(";")[0].strip()
            if response.status_code != 200 or kind.lower() != "text/event-stream":
                raise RemoteProtocolError(
                    f"{self.url} could not resume the event stream of request {request_id!r} "
                    f"(HTTP {response.status_code} to GET with Last-Event-ID)"
                )
            decoder.reconnected()
            return await self._read_events(response, decoder, request_id, resumable=True)

    async def _listen(self) -> None:
        # Rule 3: one GET stream at a time, for the session just started, open before the
        # session's first calls.
        if self._listener is None or not self._wants_listen:
            return
        self.stop_listening()
        self._listening = trio.CancelScope()
        opened = trio.Event()
        self._listener.start_soon(self._get_stream, self._listening, opened)
        with trio.move_on_after(CONNECT_TIMEOUT):
            await opened.wait()

    async def listen(self) -> None:
        """Open the session's GET stream, from now on (Rule 3), unless it is wanted already.

        Before the session is initialized it opens once it is; 2026-07-28 has none.
        """
        if self._wants_listen:
            return
        self._wants_listen = True
        if self._version is not None and self._version not in MODERN_VERSIONS:
            await self._listen()

    def stop_listening(self) -> None:
        """Close the GET stream, if one is open."""
        if self._listening is not None:
            self._listening.cancel()
            self._listening = None

    async def _get_stream(self, scope: trio.CancelScope, opened: trio.Event) -> None:
        # Rule 3: the session's GET stream, reopened while it makes progress (Rule 5).
        session_id = self._session_id
        resume = SseDecoder()  # what a reconnection needs: the last event id and `retry`
        failures = 0
        with scope:
            try:
                while True:
                    seen = resume.last_id
                    outcome = await self._get_once(session_id, resume, opened)
                    if outcome is _GetOutcome.STOP:
                        return
                    progress = outcome is _GetOutcome.PROGRESS or resume.last_id != seen
                    failures = 0 if progress else failures + 1
                    if failures >= GET_ATTEMPTS:
                        logger.warning(
                            "gave up on the GET stream of %s after %d attempt(s) without "
                            "progress; messages the server sends outside calls are not heard",
                            self.url,
                            failures,
                        )
                        return
                    retry = resume.retry_ms / 1000 if resume.retry_ms is not None else DEFAULT_RETRY
                    wait = max(retry, MIN_RETRY, self.retry.delay(failures) if failures else 0.0)
                    logger.debug(
                        "reopening the GET stream of %s in %.2f s (Last-Event-ID %s)",
                        self.url,
                        wait,
                        resume.last_id,
                    )
                    await trio.sleep(wait)
                    if self._session_id != session_id:
                        return  # the session ended; a new one opens its own stream
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the link is closing
            finally:
                opened.set()

    async def _get_once(
        self, session_id: str | None, resume: SseDecoder, opened: trio.Event
    ) -> _GetOutcome:
        """One GET of the session's stream, read to its end (Rule 5)."""
        headers = {"accept": "text/event-stream"}
        if session_id is not None:
            headers["mcp-session-id"] = session_id
        if self._version is not None:
            headers["mcp-protocol-version"] = self._version
        if resume.last_id is not None:
            headers["last-event-id"] = resume.last_id
        progress = False
        try:
            async with self._http.stream("GET", self.url, headers=headers) as response:
                opened.set()
                refused = self._get_refused(response)
                if refused is not None:
                    return refused
                decoder = SseDecoder(resume.last_id, resume.retry_ms)
                try:
                    async for line in response.aiter_lines():
                        event = decoder.line(line)
                        if event is not None and event.event == "message" and event.data:
                            await self._in_send.send(event.data.encode())
                            progress = True
                finally:
                    resume.last_id, resume.retry_ms = decoder.last_id, decoder.retry_ms
            logger.debug("%s ended its GET stream", self.url)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise  # the link is closing
        except Exception as exc:
            # Optional by the specification, so never the end of the connection (Rule 5).
            if _is_network_error(exc):
                logger.info("the GET stream of %s broke: %s", self.url, _describe(exc))
            else:
                logger.warning("the GET stream of %s failed", self.url, exc_info=True)
        return _GetOutcome.PROGRESS if progress else _GetOutcome.FAILED

    def _get_refused(self, response: httpx.Response) -> _GetOutcome | None:
        # What follows a GET of the session's stream that opened no event stream (Rule 5).
        status = response.status_code
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status == 405:
            logger.debug("%s offers no GET stream (HTTP 405)", self.url)
            return _GetOutcome.STOP
        if status == 404:
            logger.info("%s no longer knows the session of its GET stream (HTTP 404)", self.url)
            return _GetOutcome.STOP
        if status != 200 or kind != "text/event-stream":
            logger.info("%s refused its GET stream (HTTP %d, %s)", self.url, status, kind or "-")
            return _GetOutcome.FAILED
        return None

    async def end_session(self) -> None:
        """Tell the server the session is over (DELETE); errors are ignored."""
        session_id, self._session_id = self._session_id, None
        if session_id is None:
            return
        headers = {"mcp-session-id": session_id}
        if self._version is not None:
            headers["mcp-protocol-version"] = self._version
        with contextlib.suppress(Exception):
            await self._http.delete(self.url, headers=headers)


def _answers(data: str, request_id: Any) -> bool:
    try:
        message = loads(data)
    except RemoteProtocolError:
        return False
    return isinstance(message, dict) and "method" not in message and message.get("id") == request_id


def _is_network_error(exc: Exception) -> bool:
    import httpx  # noqa: PLC0415

    return isinstance(exc, httpx.TransportError)


def _describe(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.asynccontextmanager
async def open_streamable_http_link(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
    listen: bool = False,
    auth: OAuth | None = None,
) -> AsyncIterator[StreamableHttpLink]:
    """Link to the Streamable HTTP endpoint at `url` for the `async with` block.

    Args:
        url: The endpoint, e.g. http://127.0.0.1:8000/mcp.
        headers: Sent with every request (e.g. `Authorization`).
        retry: How transient failures are retried.
        listen: Open the session's GET stream once it is initialized (Rule 3); `listen()`
            asks for it later.
        auth: Authorize every request with OAuth.

    Yields:
        The link. On exit the session is ended with DELETE.
    """
    incoming = trio.open_memory_channel[bytes](INCOMING_BUFFER)
    async with _http_client(headers, url, auth) as http, trio.open_nursery() as nursery:
        link = StreamableHttpLink(
            http, url, retry or RetryPolicy(), incoming, nursery, listen=listen
        )
        try:
            yield link
        finally:
            link.stop_listening()
            incoming[0].close()
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + CLOSE_TIMEOUT
                await link.end_session()


class SseLink:
    """A link to a legacy HTTP+SSE server; create it with `open_sse_link`."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        retry: RetryPolicy,
        incoming: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self.url = url
        self.retry = retry
        #: Where messages are POSTed, from the stream's `endpoint` event.
        self.endpoint = ""
        self._http = http
        self._incoming = incoming
        self._reason = f"the server closed the event stream {url}"

    @property
    def incoming(self) -> trio.MemoryReceiveChannel[bytes]:
        """Messages from the server's event stream."""
        return self._incoming

    @property
    def session_id(self) -> str | None:
        """None: the legacy transport's session lives and dies with its stream."""
        return None

    def negotiated(self, version: str) -> None:
        """Nothing to do: the legacy transport carries no version header."""

    def mirror_params(self, tools: Mapping[str, Mapping[str, tuple[str, ...]]]) -> bool:
        """Nothing to do: the legacy transport carries no parameter headers."""
        return False

    async def listen(self) -> None:
        """Nothing to do: every message from the server comes on the event stream."""

    async def close_reason(self) -> str:
        """Why the event stream ended."""
        return self._reason

    async def send(self, message: dict[str, Any], *, retry_safe: bool = False) -> None:
        """POST one message to the endpoint; its answer comes on the event stream.

        Raises:
            ConnectionClosed: when the server cannot be reached or has closed the session.
            RequestError: when the server refuses the message with a JSON-RPC error.
            TransportError: for any other HTTP error status.
        """
        body = dumps(message)
        headers = {"content-type": "application/json"}
        retry = 0
        while True:
            try:
                response = await self._http.post(self.endpoint, content=body, headers=headers)
            except Exception as exc:
                if not _is_network_error(exc):
                    raise
                unsent = _unsent(exc)
                if not (unsent or retry_safe) or retry + 1 >= self.retry.attempts:
                    raise ConnectionClosed(
                        f"sending to {self.endpoint} failed ({_describe(exc)})"
                    ) from exc
                retry += 1
                await trio.sleep(self.retry.delay(retry))
                continue
            if response.status_code in (429, 503) and retry + 1 < self.retry.attempts:
                retry += 1
                await trio.sleep(max(_retry_after(response, 0.0), self.retry.delay(retry)))
                continue
            if response.status_code == 404:
                raise ConnectionClosed(f"{self.url}: the server closed the session (HTTP 404)")
            if response.status_code >= 400:
                raise _error_from(
                    response.status_code, response.content, self.endpoint, _challenge(response)
                )
            return

    async def _stream(
        self,
        send: trio.MemorySendChannel[bytes],
        *,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        async with send:
            started = False
            retry = 0
            while True:
                try:
                    async with self._http.stream(
                        "GET", self.url, headers={"accept": "text/event-stream"}
                    ) as response:
                        await _expect_ok(response, self.url)
                        decoder = SseDecoder()
                        async for line in response.aiter_lines():
                            event = decoder.line(line)
                            if event is None:
                                continue
                            if event.event == "endpoint" and not started:
                                task_status.started(self._endpoint(event.data))
                                started = True
                            elif event.event == "message" and event.data:
                                await send.send(event.data.encode())
                    break
                except Exception as exc:
                    if not _is_network_error(exc):
                        raise
                    if started:
                        self._reason = f"lost the event stream {self.url} ({_describe(exc)})"
                        return
                    if not _unsent(exc) or retry + 1 >= self.retry.attempts:
                        raise ConnectionClosed(
                            f"cannot open the event stream {self.url} ({_describe(exc)})"
                        ) from exc
                    retry += 1
                    await trio.sleep(self.retry.delay(retry))
            if not started:
                raise ConnectionClosed(f"{self.url} ended its event stream before an endpoint")

    def _endpoint(self, data: str) -> str:
        endpoint = urljoin(self.url, data.strip())
        base, target = urlsplit(self.url), urlsplit(endpoint)
        # spec 2024-11-05, transports: the endpoint must be on the same origin as the stream;
        # anything else would send our messages to a third party.
        if (base.scheme, base.netloc) != (target.scheme, target.netloc):
            raise RemoteProtocolError(
                f"the endpoint {endpoint!r} is not on the origin of {self.url}"
            )
        self.endpoint = endpoint
        return endpoint


@contextlib.asynccontextmanager
async def open_sse_link(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
    auth: OAuth | None = None,
) -> AsyncIterator[SseLink]:
    """Link to the legacy HTTP+SSE server whose event stream is at `url` (e.g. .../sse).

    Args:
        url: The event stream's URL.
        headers: Sent with every request.
        retry: How failures to connect are retried.
        auth: Authorize every request with OAuth.

    Yields:
        The link, once the server has named its message endpoint.

    Raises:
        ConnectionClosed: when the stream cannot be opened or names no endpoint.
    """
    send, receive = trio.open_memory_channel[bytes](INCOMING_BUFFER)
    async with _http_client(headers, url, auth, legacy_sse=True) as http:
        link = SseLink(http, url, retry or RetryPolicy(), receive)
        async with trio.open_nursery() as nursery:
            await nursery.start(link._stream, send)
            try:
                yield link
            finally:
                nursery.cancel_scope.cancel()
