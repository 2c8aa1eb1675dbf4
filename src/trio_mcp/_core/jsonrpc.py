"""JSON-RPC 2.0 on the wire: the one module that encodes and decodes JSON.

Every frame read is `parse`d here into one message, and every message sent is `dumps`ed here;
the message records (`Request`, `Response`...) and the error codes live here too.

Rule 1: output is one line of valid JSON (UTF-8, no NaN/Infinity: they become null).
Rule 2: input is parsed strictly (NaN/Infinity rejected) and classified into exactly one of
        Request, Notification, Response, ErrorResponse, or an InvalidMessage that still knows
        the id to answer with. Nothing is ever silently dropped: an invalid request is
        answered; a malformed notification is logged.
Rule 3: ids are `int` or `str` and are echoed with their exact type; bool, float and null are
        not ids.
Rule 4: a response is never answered, malformed or not (JSON-RPC 2.0: a response gets no
        response, and an answer would land in the peer's own id space, where a request of its
        own may wait on that id). A malformed one is an InvalidMessage marked `response`, which
        the receiver logs and drops, failing at once the request of its own that the id names,
        if one waits.

The codec is pydantic-core's Rust JSON (already a dependency through pydantic); the benchmark in
`benchmarks/` compares it with the standard library's `json`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

from pydantic_core import from_json, to_json

from .._exceptions import RemoteProtocolError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_UNAVAILABLE",
    "ErrorResponse",
    "InvalidMessage",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "classify",
    "dumps",
    "encode_or_error",
    "error_response",
    "is_request_id",
    "json_type",
    "loads",
    "parse",
    "result_response",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
#: In JSON-RPC's range for implementation-defined server errors: the server cannot answer the
#: request (it is shutting down) or cannot take it now (too many requests wait already, or the
#: session holds all the subscriptions it may).
SERVER_UNAVAILABLE: Final = -32000

RequestId = int | str

# How the error of a malformed response begins (Rule 4); `InvalidMessage.reason` drops it.
_MALFORMED_RESPONSE: Final = "Invalid Request: malformed response: "


@dataclass(frozen=True, slots=True)
class Request:
    """A call that expects exactly one response carrying the same id."""

    id: RequestId
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Notification:
    """A one-way message; it is never answered."""

    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Response:
    """A successful answer to the request with the same id."""

    id: RequestId
    result: Any


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """A failed answer; `id` is None when the request's id could not be read."""

    id: RequestId | None
    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class InvalidMessage:
    """Something that arrived but is not a valid message; it is answered with `error`.

    `answer` is False for a malformed *notification* (a method and no id) and a malformed
    *response* (`response`: no method, Rule 4): JSON-RPC forbids answering either, so the
    receiver logs it instead. For a malformed response `error.id` is the id it carries, when
    that is a valid id: the request of the receiver's own it may have been meant to answer.
    """

    error: ErrorResponse
    answer: bool = True
    response: bool = False

    @property
    def reason(self) -> str:
        """What is wrong with a malformed response, without the words its error begins with.

        For another invalid message: its error's message.
        """
        return self.error.message.removeprefix(_MALFORMED_RESPONSE)


Message = Request | Notification | Response | ErrorResponse


def dumps(obj: Any) -> bytes:
    """Encode one JSON value as compact UTF-8 bytes with no newline inside.

    NaN and infinities become `null` so that the output is always valid JSON.
    """
    return to_json(obj, inf_nan_mode="null")


def loads(data: bytes | bytearray | str) -> Any:
    """Decode one JSON document strictly.

    Raises:
        RemoteProtocolError: with code -32700 when `data` is not valid JSON.
    """
    try:
        return from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        raise RemoteProtocolError(f"Parse error: {exc}", PARSE_ERROR) from None


def result_response(request_id: RequestId, result: Any) -> dict[str, Any]:
    """The wire form of a successful response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(
    request_id: RequestId | None, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """The wire form of an error response (`data` is left out when None)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def encode_or_error(
    message: Any, describe: Callable[[ValueError], str]
) -> tuple[bytes, ValueError | None]:
    """Encode an outgoing message; one with no JSON form is answered -32603 in its place.

    A tool's text can hold what JSON cannot carry (a lone surrogate has no UTF-8 form), and a
    request is still owed an answer: the error goes out under the message's id (None when it
    has none). What to do with an unencodable notification, and where to log, is the caller's.

    Args:
        message: The message (or batch) to encode.
        describe: The -32603 error's message, given why encoding failed.

    Returns:
        The frame, and the encoding error when the frame is the -32603 error (else None).
    """
    try:
        return dumps(message), None
    except ValueError as exc:
        request_id = message.get("id") if isinstance(message, dict) else None
        return dumps(error_response(request_id, INTERNAL_ERROR, describe(exc))), exc


def is_request_id(value: Any) -> TypeGuard[RequestId]:
    """Whether `value` may be a request id: an int or a str (Rule 3)."""
    # bool is a subclass of int but is not a JSON-RPC id; floats are discouraged by the
    # JSON-RPC spec and forbidden by MCP (ids are string | integer).
    return (type(value) is int) or isinstance(value, str)


def _invalid(
    request_id: RequestId | None, message: str, code: int = INVALID_REQUEST
) -> InvalidMessage:
    return InvalidMessage(ErrorResponse(request_id, code, message))


def classify(obj: Any) -> Message | InvalidMessage:
    """Classify one decoded JSON value as a JSON-RPC message.

    Never raises: a malformed message becomes an `InvalidMessage` holding the error to send back
    (with the request's id when that id itself was valid, else null).
    """
    if not isinstance(obj, dict):
        return _invalid(None, f"Invalid Request: expected a JSON object, got {json_type(obj)}")
    has_id = "id" in obj
    raw_id = obj.get("id")
    echo_id: RequestId | None = raw_id if has_id and is_request_id(raw_id) else None
    if obj.get("method") is None and (has_id or "result" in obj or "error" in obj):
        return _classify_response(obj, echo_id)  # Rule 4: never answered
    if obj.get("jsonrpc") != "2.0":
        return _invalid(echo_id, 'Invalid Request: "jsonrpc" must be exactly "2.0"')
    return _classify_call(obj, echo_id)


def _classify_call(obj: dict[str, Any], echo_id: RequestId | None) -> Message | InvalidMessage:
    # A request or a notification: anything with a method, or with neither result nor error.
    method = obj.get("method")
    if not isinstance(method, str):
        return _invalid(echo_id, 'Invalid Request: "method" must be a string')
    params = obj.get("params")
    if params is not None and not isinstance(params, dict):
        return _bad_params(method, "id" in obj, echo_id)
    if "id" not in obj:
        return Notification(method, params)
    raw_id = obj["id"]
    if not is_request_id(raw_id):
        return _invalid(
            None,
            f'Invalid Request: "id" must be a string or an integer, got {json_type(raw_id)}',
        )
    return Request(raw_id, method, params)


def _bad_params(method: str, has_id: bool, echo_id: RequestId | None) -> InvalidMessage:
    # MCP params are always objects; by-position arrays are not part of MCP. A notification is
    # never answered (JSON-RPC), so it is only marked; without a valid id an answer must carry
    # id null, which JSON-RPC 2.0 keeps for unreadable requests: -32600, never -32602.
    if not has_id:
        error = ErrorResponse(
            None, INVALID_PARAMS, f'Notification {method!r}: "params" must be an object'
        )
        return InvalidMessage(error, answer=False)
    if echo_id is None:
        return _invalid(None, 'Invalid Request: "params" must be an object')
    return _invalid(echo_id, 'Invalid params: "params" must be an object', INVALID_PARAMS)


def _classify_response(obj: dict[str, Any], echo_id: RequestId | None) -> Message | InvalidMessage:
    # A response from the peer (Rule 4): well formed, or an InvalidMessage never answered. Any
    # message without a method (or with a null one) that has an `id`, a `result` or an `error`
    # comes here; malformed: both `result` and `error`, neither, a bad `jsonrpc`, id or error.
    raw_id = obj.get("id")
    has_result, has_error = "result" in obj, "error" in obj
    if obj.get("jsonrpc") != "2.0":
        why = '"jsonrpc" must be exactly "2.0"'
    elif has_result and has_error:
        why = "it carries both result and error"
    elif not (has_result or has_error):
        why = "it carries neither result nor error"
    elif has_result:
        if is_request_id(raw_id):
            return Response(raw_id, obj["result"])
        why = f'"id" must be a string or an integer, got {json_type(raw_id)}'
    elif raw_id is not None and not is_request_id(raw_id):
        why = f'"id" must be a string, an integer or null, got {json_type(raw_id)}'
    else:
        error = obj["error"]
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        if type(code) is int and isinstance(message, str):
            return ErrorResponse(raw_id, code, message, error.get("data"))
        why = '"error" must be an object with an integer "code" and a string "message"'
    error_of = ErrorResponse(echo_id, INVALID_REQUEST, _MALFORMED_RESPONSE + why)
    return InvalidMessage(error_of, answer=False, response=True)


def parse(data: bytes | bytearray | str) -> tuple[list[Message | InvalidMessage], bool]:
    """Decode one frame (a line) into messages.

    Returns:
        The messages in order, and whether the frame was a batch (a JSON array), in which case
        the answers go back as one array.
    """
    try:
        obj = loads(data)
    except RemoteProtocolError as exc:
        return [InvalidMessage(ErrorResponse(None, PARSE_ERROR, exc.message))], False
    if isinstance(obj, list):
        if not obj:
            return [_invalid(None, "Invalid Request: empty batch")], False
        return [classify(item) for item in obj], True
    return [classify(obj)], False


# Tried in order: bool before int, since bool is a subclass of int.
_JSON_TYPES: Final[tuple[tuple[type | tuple[type, ...], str], ...]] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    ((list, tuple), "array"),
)


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value, for messages ("got array")."""
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "object")
