"""What the client runtime talks through: the `Link` protocol that client transports implement.

A link moves messages and knows nothing of MCP's requests: it sends one JSON-RPC message at a
time, delivers what the server sends on `incoming`, and says why `incoming` ended. Matching
answers to requests, retries of a whole call and the handshake are the client's
(`_runtime/client`). The links themselves live in `transports/` and satisfy this protocol
structurally, without importing it: `_runtime` and `transports` are sibling layers that never
import each other, and the composition root (`_connect`) hands a link to the client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import trio

from .._core.framing import LineTooLong

__all__ = ["Incoming", "Link"]

#: What a channel transport delivers, to a client's link or a server's connection alike:
#: frames (one JSON text each), or batches of lines read at once in which a `LineTooLong`
#: stands for a line that was too long to keep.
Incoming = trio.abc.ReceiveChannel[bytes] | trio.abc.ReceiveChannel[Sequence[bytes | LineTooLong]]


class Link(Protocol):
    """A transport as the client sees it (implemented in `transports/`).

    `send` sends one JSON-RPC message; whatever the server sends arrives on `incoming`, which
    ends when the connection does. Per-request transports (Streamable HTTP) read the answer to
    a request inside `send` and put it on `incoming` too.
    """

    @property
    def incoming(self) -> Incoming:
        """Frames from the server; the channel ends when the connection does."""

    @property
    def session_id(self) -> str | None:
        """The transport's session (HTTP), or None."""

    async def send(self, message: dict[str, Any], *, retry_safe: bool = False) -> None:
        """Send one message.

        Raises:
            ConnectionClosed: the connection is gone (with the reason).
            SessionExpiredError: the HTTP server no longer knows the session.
            RequestError: the HTTP server refused the request with a JSON-RPC error body.
            trio.BrokenResourceError: the stream broke; `close_reason` says why.
        """

    def negotiated(self, version: str) -> None:
        """Learn the protocol version in use (HTTP sends it in a header)."""

    def mirror_params(self, tools: Mapping[str, Mapping[str, tuple[str, ...]]]) -> bool:
        """Learn which arguments of each tool a 2026-07-28 `tools/call` mirrors into headers.

        Args:
            tools: Tool name -> {lower-cased `Mcp-Param-*` header name: property path}, for
                every listed tool; it replaces what an earlier call gave.

        Returns:
            Whether this link mirrors parameters at all (Streamable HTTP does; others ignore
            the map and return False).
        """

    async def listen(self) -> None:
        """Hear what the server sends outside any request, from now on.

        Streamable HTTP opens the session's GET stream (handshake era), if it is not open yet;
        links whose every message comes on one channel have nothing to do.
        """

    async def close_reason(self) -> str:
        """Why `incoming` ended (may wait briefly, e.g. for a process's exit code)."""
