"""Where a request may come from: its Host and its Origin (the DNS-rebinding guard).

A web page elsewhere can make a browser send requests to a server on this machine by pointing
a name of its own at 127.0.0.1 (DNS rebinding): the browser then sends that name as the
request's Host, and the page's origin as its Origin. Both are checked here, in one place, with
no I/O: `app` asks `source_refusal` and answers what it returns. "*" in either list accepts
any value, a missing header included. A Host is compared as its parts: the name lower-cased,
an IP address in its standard form (`[0:0::1]` is `[::1]`), the port as a number; a Host that
does not parse (`[::1`, `a:b:c`, a port that is no number) names nothing here.

Rule 1: Host must name this server (421 Misdirected Request otherwise, RFC 9110 15.5.20): the
        address the connection came in on (`scope["server"]`) or, when that is a loopback
        address, `localhost`, `127.0.0.1` or `[::1]`, each with the port the connection came in
        on (a Host without a port means the scheme's default one, RFC 9110 4.2); or an entry of
        `allowed_hosts`: `name` with any port, `name:port` with that one. A request without
        Host is refused too (HTTP/1.1 requires one; browsers always send one). When the server
        does not say where the connection came in (a Unix socket), the loopback names with any
        port stand for its address.
Rule 2: Origin, when present, must be one of `allowed_origins` (scheme://host, any port): 403
        otherwise. A request without Origin (not from a browser page) passes.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Final
from urllib.parse import urlsplit

from .options import HttpOptions

__all__ = ["source_refusal"]

_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def source_refusal(
    headers: dict[bytes, bytes],
    server: tuple[str, int] | None,
    scheme: str,
    options: HttpOptions,
) -> tuple[int, str] | None:
    """The status and message to refuse a request with for its Host or Origin, or None.

    Args:
        headers: The request's headers, lower-cased names to their last value.
        server: The (address, port) the connection came in on, when known.
        scheme: "http" or "https".
        options: `allowed_hosts` and `allowed_origins` are read from it.
    """
    host = headers.get(b"host")
    # As a tuple: the verdicts are cached by it, and an ASGI server may give a list.
    bound = (str(server[0]), int(server[1])) if server else None
    if not _host_allowed(host, bound, scheme, options.allowed_hosts):
        shown = "no Host header" if not host else f"Host {host.decode('latin-1')!r}"
        return 421, f"Misdirected Request: {shown} does not name this server"
    origin = headers.get(b"origin")
    if origin is not None and not _origin_allowed(origin, options.allowed_origins):
        return 403, f"Origin {origin.decode('latin-1')!r} is not allowed"
    return None


# A client sends the same Host and Origin with every request: the verdicts are kept (in a
# bounded cache, since the values are the client's to choose) so that a request costs a lookup.
@functools.lru_cache(maxsize=256)
def _host_allowed(
    raw: bytes | None, server: tuple[str, int] | None, scheme: str, allowed: tuple[str, ...]
) -> bool:
    if "*" in allowed:
        return True
    parsed = _split_host(raw.decode("latin-1")) if raw else None
    if parsed is None:
        return False
    name, port = parsed
    effective = port if port is not None else _DEFAULT_PORTS.get(scheme)
    for entry in allowed:
        wanted = _split_host(entry)
        if wanted is not None and wanted[0] == name and wanted[1] in (None, effective):
            return True
    return _names_this_server(name, effective, server)


def _names_this_server(name: str, port: int | None, server: tuple[str, int] | None) -> bool:
    if server is None:
        return name in _LOOPBACK_NAMES
    address, bound_port = server
    own = _canonical(address)
    own_names = _LOOPBACK_NAMES | {own} if _is_loopback(own) else {own}
    return port == bound_port and name in own_names


def _split_host(text: str) -> tuple[str, int | None] | None:
    """(name, port) of a Host value or an allowed-hosts entry; None if malformed."""
    text = text.strip()
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        name, port_text = inside, rest[1:] if rest else None
    else:
        name, colon, port_text_or_empty = text.partition(":")
        if ":" in port_text_or_empty:
            return None  # an IPv6 address must be in brackets
        port_text = port_text_or_empty if colon else None
    if not name:
        return None
    if port_text is None:
        return _canonical(name), None
    if not port_text.isdigit() or not port_text.isascii():
        return None
    return _canonical(name), int(port_text)


def _canonical(name: str) -> str:
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name.lower()
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # a dual-stack socket reports IPv4 peers this way
    return str(address)


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=256)
def _origin_allowed(raw: bytes, allowed: tuple[str, ...]) -> bool:
    if "*" in allowed:
        return True
    text = raw.decode("latin-1")
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. "http://[::1": not an origin at all
        return False
    bare = f"{parts.scheme}://{parts.hostname}" if parts.hostname else text
    if parts.hostname and ":" in parts.hostname:
        bare = f"{parts.scheme}://[{parts.hostname}]"
    return text in allowed or bare in allowed
