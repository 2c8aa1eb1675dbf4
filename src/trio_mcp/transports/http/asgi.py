"""ASGI plumbing shared by the HTTP transports: reading requests, writing whole responses.

Rule 1: a check that refuses a request raises `Refused` (an HTTP status and the JSON-RPC error
        for the body); the application answers it with `refuse`, never the handler itself, so a
        refused request always gets the same shape of answer: a JSON-RPC error as JSON.
Rule 2: a body is read whole before it is handed on, and never past the size limit: a
        declared Content-Length over it is refused before reading, and a body that grows past
        it is refused as soon as it does (413).
Rule 3: a JSON response goes out as one start and one body message, with its Content-Length;
        an SSE stream starts with `SSE_HEADERS` and sends each message as one `event`.
Nothing here knows MCP sessions or routes; `app`, `streamable` and `legacy_sse` use it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Final

import trio

from ..._core.jsonrpc import INVALID_REQUEST, dumps, encode_or_error, error_response

__all__ = [
    "CLOSE_HEADER",
    "JSON_HEADER",
    "SSE_HEADERS",
    "Receive",
    "Refused",
    "Scope",
    "Send",
    "cancel_on_disconnect",
    "check_content_type",
    "check_framing",
    "content_length",
    "encode",
    "event",
    "header_map",
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


class Refused(Exception):  # noqa: N818 - control flow: an HTTP status to answer with
    """A request refused before it reaches a session (Rule 1).

    Attributes:
        status: The HTTP status to answer with.
        message: The JSON-RPC error message.
        headers: Extra response headers (Allow, Retry-After, WWW-Authenticate).
        code: The JSON-RPC error code.
        request_id: The id of the refused request, when it is known.
    """

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


def header_map(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers, lower-cased names to their last value."""
    return {name.lower(): value for name, value in scope["headers"]}


async def check_framing(scope: Scope, receive: Receive, limit: int) -> None:
    """Refuse (400) a request whose body framing two parties could read two ways.

    RFC 9112, 6.1: a request with both Transfer-Encoding and Content-Length is a smuggling
    attempt or a broken intermediary (a front proxy that counts by Content-Length takes the
    rest of the chunked body for part of this request, the server for a second request). The
    server must close the connection after answering it, so the refusal asks for that:
    whatever was read past this request's end is never taken for another one. (The other
    case of that section, Transfer-Encoding in an HTTP/1.0 request, h11 refuses itself.)

    The body (as the server framed it, at most `limit` bytes) is read and dropped before the
    answer: an answer that asks to close while the server still reads the request races that
    reading (Hypercorn takes the bytes past the request's end for a protocol error and drops
    the connection before the answer's body is out).
    """
    names = {name.lower() for name, _ in scope["headers"]}
    if b"transfer-encoding" not in names or b"content-length" not in names:
        return
    try:
        await _read(receive, limit, _drop)
    except Refused as refused:  # too large, or gone: still never read on after it
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


async def read_body(receive: Receive, headers: dict[bytes, bytes], limit: int) -> bytes:
    """The whole request body, at most `limit` bytes (Rule 2)."""
    declared = headers.get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"Request body larger than {limit} bytes")
    chunks: list[bytes] = []
    await _read(receive, limit, chunks.append)
    return b"".join(chunks)


async def _read(receive: Receive, limit: int, keep: Callable[[bytes], object]) -> None:
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refused(400, "Client disconnected")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"Request body larger than {limit} bytes")
        keep(chunk)
        if not message.get("more_body", False):
            return


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
    return b"event: message\ndata: " + encode(message) + b"\n\n"


def content_length(body: bytes) -> tuple[bytes, bytes]:
    """The Content-Length header of `body`."""
    return (b"content-length", b"%d" % len(body))


async def refuse(send: Send, refused: Refused) -> None:
    """Answer a refused request: its status, and its JSON-RPC error as the body (Rule 1)."""
    body = dumps(error_response(refused.request_id, refused.code, refused.message))
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
