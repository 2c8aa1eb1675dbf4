"""ASGI plumbing shared by the HTTP transports: reading requests, writing whole responses.

A JSON response goes out as one start and one body message, with its Content-Length; an SSE
stream starts with `SSE_HEADERS` and sends each message as one `event`. Nothing here knows MCP
sessions or routes; `app`, `streamable` and `legacy_sse` use it.

Rule 1: a check that refuses a request raises `Refused` (an HTTP status and the JSON-RPC error
        for the body); the application answers it with `refuse`, never the handler itself, so a
        refused request always gets the same shape of answer: a JSON-RPC error as JSON.
Rule 2: a body is read whole before it is handed on, and never past the size limit: a
        declared Content-Length over it is refused before reading, and a body that grows past
        it is refused as soon as it does (413). Nor past its deadlines: a body that stalls for
        `body_idle_timeout` between two pieces, or is not whole after `body_timeout`, is
        answered 408 and its connection closed, so a client cannot hold a connection (and a
        file descriptor) by sending a body slowly or not at all.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Final, Protocol

import trio

from ..._core.jsonrpc import INVALID_REQUEST, dumps, encode_or_error, error_response

__all__ = [
    "CLOSE_HEADER",
    "JSON_HEADER",
    "SSE_HEADERS",
    "BodyOptions",
    "Receive",
    "Refused",
    "Scope",
    "Send",
    "cancel_on_disconnect",
    "check_content_type",
    "check_framing",
    "client_key",
    "content_length",
    "encode",
    "event",
    "event_of",
    "header_map",
    "peer_of",
    "priming",
    "read_body",
    "refuse",
    "send_json",
]

# One logger for the whole HTTP transport, whichever module logs.
logger = logging.getLogger("trio_mcp.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON_HEADER: Final = (b"content-type", b"application/json")
#: Asks the server to close the connection after the response (RFC 9112, 9.6).
CLOSE_HEADER: Final = (b"connection", b"close")
SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),  # ask reverse proxies not to buffer the stream
]


class BodyOptions(Protocol):
    """The options that bound reading a request body (`HttpOptions` has them)."""

    @property
    def max_body_bytes(self) -> int:
        """Largest body, in bytes."""

    @property
    def body_timeout(self) -> float:
        """Seconds for the whole body, from the request's head on."""

    @property
    def body_idle_timeout(self) -> float:
        """Seconds the body may stall between two pieces."""


class Refused(Exception):  # noqa: N818 - control flow: an HTTP status to answer with
    """A request refused before it reaches a session (Rule 1).

    Attributes:
        status: The HTTP status to answer with.
        message: The JSON-RPC error message.
        headers: Extra response headers (Allow, Retry-After, WWW-Authenticate).
        code: The JSON-RPC error code.
        request_id: The id of the refused request, when it is known.
        id_member: Whether the body's error has an `id` member (`request_id`, or null); False
            for a refused response, whose error names no request (spec 2025-11-25, Streamable
            HTTP: "a JSON-RPC error response that has no id").
    """

    def __init__(
        self,
        status: int,
        message: str,
        headers: Iterable[tuple[bytes, bytes]] = (),
        code: int = INVALID_REQUEST,
        request_id: int | str | None = None,
        *,
        id_member: bool = True,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)
        self.code = code
        self.request_id = request_id
        self.id_member = id_member


def header_map(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers, lower-cased names to their last value."""
    return {name.lower(): value for name, value in scope["headers"]}


def peer_of(scope: Scope) -> str | None:
    """The address of the client's end of the connection (ASGI `client`), None when unknown.

    The host only: a client's port changes with each connection it opens. Behind a proxy,
    this is the proxy's address.
    """
    client = scope.get("client")
    if not client or not client[0]:
        return None
    return str(client[0])


def client_key(address: Any) -> str | None:
    """Who a peer address counts as, for a limit per client address.

    `max_connections_per_address` (`transports/http/serving` Rule 1) and `RateLimiter`'s
    `by_client` count by it. An IPv4 address is itself (an IPv4-mapped IPv6 address too); an
    IPv6 address counts as its /64, the block one host or site usually has whole (its privacy
    addresses change within it). None for an address that is not an IP one (a Unix socket's).
    """
    if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
        return None
    try:
        ip = ipaddress.ip_address(address[0].partition("%")[0])  # no IPv6 zone
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)


async def check_framing(scope: Scope, receive: Receive, options: BodyOptions) -> None:
    """Refuse (400) a request whose body framing two parties could read two ways.

    RFC 9112, 6.1: a request with both Transfer-Encoding and Content-Length is a smuggling
    attempt or a broken intermediary (a front proxy that counts by Content-Length takes the
    rest of the chunked body for part of this request, the server for a second request). The
    server must close the connection after answering it, so the refusal asks for that:
    whatever was read past this request's end is never taken for another one. (The other
    case of that section, Transfer-Encoding in an HTTP/1.0 request, h11 refuses itself.)

    The body (as the server framed it, within the limits of Rule 2) is read and dropped before
    the answer: an answer that asks to close while the server still reads the request races that
    reading (Hypercorn takes the bytes past the request's end for a protocol error and drops
    the connection before the answer's body is out).
    """
    names = {name.lower() for name, _ in scope["headers"]}
    if b"transfer-encoding" not in names or b"content-length" not in names:
        return
    try:
        await _read(receive, options, _drop)
    except Refused as refused:  # too large, too slow or gone: still never read on after it
        refused.headers.append(CLOSE_HEADER)
        raise
    raise Refused(
        400, "Bad Request: both Content-Length and Transfer-Encoding frame the body", [CLOSE_HEADER]
    )


def check_content_type(headers: dict[bytes, bytes]) -> None:
    """Refuse (415) a body that is not declared `application/json`."""
    content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if content_type != b"application/json":
        raise Refused(415, "Content-Type must be application/json")


async def read_body(receive: Receive, headers: dict[bytes, bytes], options: BodyOptions) -> bytes:
    """The whole request body, within its size limit and deadlines (Rule 2)."""
    limit = options.max_body_bytes
    declared = headers.get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"Request body larger than {limit} bytes")
    chunks: list[bytes] = []
    await _read(receive, options, chunks.append)
    return b"".join(chunks)


async def _read(receive: Receive, options: BodyOptions, keep: Callable[[bytes], object]) -> None:
    limit = options.max_body_bytes
    size = 0
    with trio.move_on_after(options.body_timeout):
        while True:
            with trio.move_on_after(options.body_idle_timeout) as stall:
                message = await receive()
            if stall.cancelled_caught:
                raise Refused(
                    408,
                    f"Request body stalled for {options.body_idle_timeout:g} s",
                    [CLOSE_HEADER],
                )
            if message["type"] == "http.disconnect":
                raise Refused(400, "Client disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"Request body larger than {limit} bytes")
            keep(chunk)
            if not message.get("more_body", False):
                return
    # RFC 9110, 15.5.9: 408 for a request not whole in time, and the connection is closed.
    raise Refused(
        408, f"Request body not received within {options.body_timeout:g} s", [CLOSE_HEADER]
    )


def _drop(chunk: bytes) -> None:
    pass


async def cancel_on_disconnect(
    receive: Receive, scope: trio.CancelScope, watch: trio.CancelScope | None = None
) -> None:
    """Cancel `scope` when the client disconnects; stop watching when `watch` is cancelled."""
    with watch or trio.CancelScope():
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                scope.cancel()
                return


def encode(message: Any) -> bytes:
    """`message` as JSON; an answer that cannot be encoded becomes an internal error."""
    frame, error = encode_or_error(message, lambda _: "Internal error: unencodable response")
    if error is not None:
        logger.error("cannot encode a response as JSON: %s", error)
    return frame


def event(message: Any) -> bytes:
    """`message` as one SSE `message` event."""
    return event_of(encode(message))


def event_of(frame: bytes, event_id: bytes | None = None) -> bytes:
    """An encoded message (one line of JSON) as one SSE `message` event, with its id if given."""
    if event_id is None:
        return b"event: message\ndata: " + frame + b"\n\n"
    return b"event: message\nid: " + event_id + b"\ndata: " + frame + b"\n\n"


def priming(event_id: bytes, retry_seconds: float) -> bytes:
    """The SSE event that starts a resumable stream: an id, a `retry:` field and empty data."""
    return b"id: %s\nretry: %d\ndata: \n\n" % (event_id, round(retry_seconds * 1000))


def content_length(body: bytes) -> tuple[bytes, bytes]:
    """The Content-Length header of `body`."""
    return (b"content-length", b"%d" % len(body))


async def refuse(send: Send, refused: Refused) -> None:
    """Answer a refused request: its status, and its JSON-RPC error as the body (Rule 1)."""
    error = error_response(refused.request_id, refused.code, refused.message)
    if not refused.id_member:
        del error["id"]
    body = dumps(error)
    await send_json(send, refused.status, body, refused.headers)


async def send_json(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """A whole response: a JSON body (none for 202), with its length.

    Content-Length lets an HTTP/1.1 server send the body as it is, where without it the
    server frames it as chunks and ends it with a last empty chunk: one more write.
    """
    start = (
        [content_length(body), *headers]
        if status == 202
        else [JSON_HEADER, content_length(body), *headers]
    )
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})
