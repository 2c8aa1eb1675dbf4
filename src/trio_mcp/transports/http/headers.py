"""Request metadata headers of Streamable HTTP (spec 2026-07-28), shared by server and client.

A 2026-07-28 request mirrors fields of its body into headers, so that intermediaries can route
on them without reading the body: `MCP-Protocol-Version` (the `_meta` protocol version),
`Mcp-Method` (the method) and, for the methods that name something, `Mcp-Name` (`params.name`
or `params.uri`).

Rule 1: a value that is not plain visible ASCII (control characters, non-ASCII text, leading or
        trailing spaces), or that looks like the sentinel itself, is sent as
        `=?base64?<base64 of its UTF-8>?=`; only `Mcp-Name` and `Mcp-Param-*` (a tool's
        `x-mcp-header` arguments, which the client sends) may be encoded so.
Rule 2: decoding is strict: a sentinel whose payload is not valid base64 or not UTF-8 is
        malformed, never taken as the literal text, so it cannot match a body value by chance.
Nothing here performs I/O; `http` (server) and `http_client` (client) apply it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from ..._core.server_session import HEADER_MISMATCH

__all__ = [
    "HEADER_MISMATCH",
    "NAME_PARAMS",
    "ROUTING_HEADERS",
    "HeaderValueError",
    "decode_value",
    "encode_value",
    "request_headers",
]


#: Method -> the params field that `Mcp-Name` mirrors (spec 2026-07-28, Standard Request
#: Headers: required for these methods).
NAME_PARAMS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "resources/read": "uri",
    "prompts/get": "name",
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
