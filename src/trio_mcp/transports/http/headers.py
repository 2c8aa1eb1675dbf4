"""Request metadata headers of Streamable HTTP (spec 2026-07-28), shared by server and client.

A 2026-07-28 request mirrors fields of its body into headers, so that intermediaries can route
on them without reading the body: `MCP-Protocol-Version` (the `_meta` protocol version),
`Mcp-Method` (the method) and, for the methods that name something, `Mcp-Name` (`params.name`
or `params.uri`). A value that is not plain visible ASCII (control characters, non-ASCII text,
leading or trailing spaces), or that looks like the sentinel itself, is sent as
`=?base64?<base64 of its UTF-8>?=`; only `Mcp-Name` and `Mcp-Param-*` (a tool's
`x-mcp-header` arguments, which the client sends) may be encoded so. The answer to a
2026-07-28 request takes the HTTP status that revision gives its error (`modern_status`); any
other answer is 200. Nothing here performs I/O (no trio, no ASGI): `streamable` (server) and
`client` apply it.

Rule 1: decoding is strict: a sentinel whose payload is not valid base64 or not UTF-8 is
        malformed, never taken as the literal text, so it cannot match a body value by chance.
Rule 2: the server checks a 2026-07-28 request before it is handed on: its `_meta` carries the
        required fields (else -32602), and MCP-Protocol-Version, Mcp-Method and, for tools/call,
        resources/read and prompts/get, Mcp-Name are each sent once and equal the body's
        values, Mcp-Name after sentinel decoding (else -32020 HeaderMismatch). A tools/call
        also carries the `Mcp-Param-*` header of each argument its tool mirrors
        (`x-mcp-header`): present and matching for an argument in the body, absent for one that
        is not (else -32020). The checks raise `RemoteProtocolError` with that code; the
        transport answers it with 400.
"""

from __future__ import annotations

import base64
import binascii
import collections
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NoReturn

from ..._core.jsonrpc import METHOD_NOT_FOUND, Request
from ..._core.param_headers import HEADER_PREFIX, argument_at, header_text, matches
from ..._core.server_session import check_request_meta, requested_version
from ..._core.versions import (
    HEADER_MISMATCH,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..._exceptions import RemoteProtocolError

__all__ = [
    "HEADER_MISMATCH",
    "NAME_PARAMS",
    "ROUTING_HEADERS",
    "HeaderValueError",
    "check_param_headers",
    "check_request_metadata",
    "decode_value",
    "encode_value",
    "modern_status",
    "request_headers",
]


#: Method -> the params field that `Mcp-Name` mirrors (spec 2026-07-28, Standard Request
#: Headers: required for these methods).
NAME_PARAMS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "resources/read": "uri",
    "prompts/get": "name",
    # The tasks extension (SEP-2663, Streamable HTTP: Routing Headers).
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

#: The standard request headers, lower-case (header names are case-insensitive).
ROUTING_HEADERS: Final = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")

_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="


class HeaderValueError(ValueError):
    """A header value that is not plain visible ASCII, or a malformed base64 sentinel."""


def _plain(value: str) -> bool:
    # RFC 9110 field values are visible ASCII, space and tab; the spec has clients encode
    # control characters (tab included) and leading or trailing whitespace.
    return (
        all(" " <= char <= "~" for char in value)
        and value == value.strip(" ")
        and not _is_sentinel(value)
    )


def _is_sentinel(value: str) -> bool:
    return value.startswith(_PREFIX) and value.endswith(_SUFFIX) and len(value) >= 11


def encode_value(value: str) -> str:
    """The header form of `value`: itself when plain ASCII, else the base64 sentinel."""
    if _plain(value):
        return value
    return _PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _SUFFIX


def decode_value(raw: bytes, *, encoded: bool) -> str:
    """The value a received header carries.

    Args:
        raw: The header's bytes as received.
        encoded: Whether this header may use the base64 sentinel (Mcp-Name).

    Raises:
        HeaderValueError: for bytes outside visible ASCII and space, or a sentinel whose
            payload is not base64 of UTF-8 text.
    """
    if any(byte < 0x20 or byte > 0x7E for byte in raw):
        raise HeaderValueError("contains characters other than visible ASCII and space")
    text = raw.decode("ascii")
    if not (encoded and _is_sentinel(text)):
        return text
    payload = text[len(_PREFIX) : -len(_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise HeaderValueError("is a malformed =?base64?...?= value") from None


def request_headers(message: Mapping[str, Any], version: str) -> dict[str, str]:
    """The standard headers a request sent under a per-request `version` carries.

    Args:
        message: The JSON-RPC request.
        version: The protocol version named in its `params._meta`.
    """
    method = message["method"]
    headers = {"mcp-protocol-version": version, "mcp-method": method}
    key = NAME_PARAMS.get(method)
    params = message.get("params")
    if key is not None and isinstance(params, Mapping):
        value = params.get(key)
        if isinstance(value, str):
            headers["mcp-name"] = encode_value(value)
    return headers


# -- the server's checks of a 2026-07-28 request -------------------------------------------------

# spec 2026-07-28: the errors of a 2026-07-28 request that have an HTTP status of their own:
# 400 for a header mismatch, an unsupported version or a missing client capability (-32021,
# MissingRequiredClientCapabilityError: basic, _meta), 404 for an unknown method.
_MODERN_ERROR_STATUS: Final = {
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}

_LABELS: Final = {
    b"mcp-protocol-version": "MCP-Protocol-Version",
    b"mcp-method": "Mcp-Method",
    b"mcp-name": "Mcp-Name",
}


def modern_status(answer: Any) -> int:
    """The HTTP status of a 2026-07-28 request's answer: 200 unless its error has one."""
    error = answer.get("error") if isinstance(answer, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return _MODERN_ERROR_STATUS.get(code, 200) if type(code) is int else 200


def check_request_metadata(
    raw_headers: Iterable[tuple[bytes, bytes]], headers: Mapping[bytes, bytes], request: Request
) -> None:
    """Refuse a 2026-07-28 request whose `_meta` or standard headers are not right (Rule 2).

    Args:
        raw_headers: The request's headers as received, repeats included.
        headers: The same, lower-cased names to their last value.
        request: The request its body holds.

    Raises:
        RemoteProtocolError: -32602 for `_meta` (spec 2026-07-28, basic: "on HTTP, the
            response status MUST be 400 Bad Request"), -32020 for a header.
    """
    check_request_meta(request.params)
    # A header sent twice is refused: an intermediary reading the first copy and this server
    # the last would each trust a different value, which is what mirroring must rule out.
    seen = collections.Counter(name.lower() for name, _ in raw_headers)
    for name in ROUTING_HEADERS:
        if seen[name] > 1:
            _mismatch(f"{_LABELS[name]} header sent more than once")
    _expect(headers, b"mcp-protocol-version", requested_version(request.params))
    _expect(headers, b"mcp-method", request.method)
    key = NAME_PARAMS.get(request.method)
    value = (request.params or {}).get(key) if key is not None else None
    # A body without a string name is malformed itself: the dispatcher answers -32602.
    if isinstance(value, str):
        _expect(headers, b"mcp-name", value)


def check_param_headers(
    raw_headers: Iterable[tuple[bytes, bytes]],
    request: Request,
    mirrored: Callable[[str], Mapping[str, tuple[str, ...]]],
) -> None:
    """Refuse a 2026-07-28 tools/call whose `Mcp-Param-*` headers do not match its arguments.

    spec 2026-07-28, Streamable HTTP (Custom Headers from Tool Parameters): the header of an
    argument that is present must be there and match it (numbers compared as numbers); an
    absent or null argument has none. An argument with no header form (a list where a string
    belongs) needs none, so that argument validation refuses it in its own words; and so does a
    call whose arguments are no object at all (-32602 from the dispatcher). Headers the tool
    does not declare are not ours to judge.

    Args:
        raw_headers: The request's headers as received, repeats included.
        request: The tools/call request.
        mirrored: Tool name -> the arguments it mirrors (lower-cased header -> property path).

    Raises:
        RemoteProtocolError: -32020 HeaderMismatch.
    """
    params = request.params or {}
    name = params.get("name")
    arguments = params.get("arguments")
    expected = mirrored(name) if isinstance(name, str) else {}
    if not expected or not isinstance(arguments, Mapping | None):
        return
    received: dict[bytes, list[bytes]] = collections.defaultdict(list)
    for key, raw in raw_headers:
        received[key.lower()].append(raw)
    for header, path in expected.items():
        label = _param_label(header)
        values = received.get(header.encode("latin-1"), [])
        body = argument_at(arguments, path)
        if len(values) > 1:
            _mismatch(f"{label} header sent more than once")
        if not values:
            if header_text(body) is not None:
                _mismatch(f"required header {label} is missing")
            continue
        try:
            value = decode_value(values[0], encoded=True)
        except HeaderValueError as exc:
            _mismatch(f"{label} header value {exc}")
        if body is None:
            _mismatch(f"{label} header sent for an argument the body does not have")
        if not matches(value, body):
            _mismatch(
                f"{label} header value {_shown(value)} does not match the argument {'.'.join(path)}"
            )


def _param_label(header: str) -> str:
    return HEADER_PREFIX + header[len(HEADER_PREFIX) :]


def _expect(headers: Mapping[bytes, bytes], name: bytes, body_value: str) -> None:
    # spec 2026-07-28, Streamable HTTP (Server Validation): a required standard header that is
    # missing, holds invalid characters or differs from the body is a HeaderMismatch, 400.
    label = _LABELS[name]
    raw = headers.get(name)
    if raw is None:
        _mismatch(f"required header {label} is missing")
    try:
        value = decode_value(raw, encoded=name == b"mcp-name")
    except HeaderValueError as exc:
        _mismatch(f"{label} header value {exc}")
    if value != body_value:
        _mismatch(
            f"{label} header value {_shown(value)} does not match body value {_shown(body_value)}"
        )


def _shown(value: str) -> str:
    return repr(value if len(value) <= 100 else value[:100] + "...")


def _mismatch(what: str) -> NoReturn:
    raise RemoteProtocolError(f"Header mismatch: {what}", HEADER_MISMATCH)
