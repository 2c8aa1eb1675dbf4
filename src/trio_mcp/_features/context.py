"""`Context`: what a running tool may ask of its request (progress, logs, peer facts).

Rule 1: a tool asks for a context by annotating one parameter as `Context`; that parameter is
        injected and never appears in the tool's schema.
Rule 2: a context never does I/O itself. It hands notifications to the `send` callable the
        runtime gave it, and requests to the client (sampling, elicitation, roots) to its
        `Requester`, so this module stays free of trio and sockets.
Rule 3: progress is sent only when the request carried `_meta.progressToken`, and log messages
        only at or above the level the client asked for; otherwise both are quiet no-ops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .._core.jsonrpc import RequestId
from .._core.server_session import RequestScope, ServerSession
from .._core.types import LogLevel
from .._core.versions import revision
from .._exceptions import LocalProtocolError

__all__ = ["Context", "NotificationSender", "Requester"]

#: `await send(method, params)` queues one notification on the request's stream.
NotificationSender = Callable[[str, dict[str, Any]], Awaitable[None]]


class Requester(Protocol):
    """How the runtime sends one request of the server's to the client (handshake era).

    `await requester(method, params, timeout=...)` returns the client's `result`; raises
    `RequestError` for an error answer, `ConnectionClosed` when the connection ends, and
    `ClientTimeoutError` when `timeout` seconds pass first (the request is then cancelled with
    `notifications/cancelled`). Cancelling the caller cancels the request the same way.
    """

    async def __call__(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Any: ...


class Context:
    """Handed to a tool that declares a parameter annotated `Context`.

    Attributes:
        request_id: The JSON-RPC id of the `tools/call` request being served.
        tool_name: The name the tool was called by.
    """

    __slots__ = ("_requester", "_scope", "_send", "request_id", "tool_name")

    def __init__(
        self,
        *,
        request_id: RequestId,
        tool_name: str,
        scope: RequestScope,
        send: NotificationSender,
        requester: Requester | None = None,
    ) -> None:
        self.request_id = request_id
        self.tool_name = tool_name
        self._scope = scope
        self._send = send
        self._requester = requester

    @property
    def protocol_version(self) -> str:
        """The MCP revision this request speaks."""
        return self._scope.version

    @property
    def client_info(self) -> dict[str, Any] | None:
        """The client's `{"name", "version", ...}`, when it told us."""
        return self._scope.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The client's declared capabilities (empty when it declared none)."""
        return self._scope.client_capabilities

    @property
    def progress_token(self) -> int | str | None:
        """The request's progress token, or None when it asked for no progress."""
        return self._scope.progress_token

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send `notifications/progress` for this request, if the client asked for progress.

        Args:
            progress: Progress so far; should increase with every call.
            total: The total, when known.
            message: A short human-readable status (sent to 2025-03-26 and later clients).
        """
        token = self._scope.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and revision(self._scope.version).progress_message:
            params["message"] = message
        await self._send("notifications/progress", params)

    async def log(
        self, level: LogLevel, message: str, *, logger: str | None = None, data: Any = None
    ) -> None:
        """Send `notifications/message` if the client's log level lets `level` through.

        Args:
            level: One of the syslog levels of the specification ("debug" .. "emergency").
            message: The text to log.
            logger: Optional name of the logger.
            data: Optional JSON-serialisable detail; sent as `data` instead of `message` text.
        """
        if not ServerSession.log_enabled(self._scope, level):
            return
        params: dict[str, Any] = {
            "level": level,
            "data": message if data is None else {"message": message, "data": data},
        }
        if logger is not None:
            params["logger"] = logger
        await self._send("notifications/message", params)

    async def debug(self, message: str) -> None:
        """Log at debug level."""
        await self.log("debug", message)

    async def info(self, message: str) -> None:
        """Log at info level."""
        await self.log("info", message)

    async def warning(self, message: str) -> None:
        """Log at warning level."""
        await self.log("warning", message)

    async def error(self, message: str) -> None:
        """Log at error level."""
        await self.log("error", message)

    async def _request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request to the client and return the `result` it answers with.

        Private until the features built on it (elicitation, sampling, roots) make it public.

        Args:
            method: The JSON-RPC method, e.g. "roots/list".
            params: Its parameters, or None.

        Returns:
            The client's `result`.

        Raises:
            RequestError: when the client answers with a JSON-RPC error.
            ConnectionClosed: when the connection ends before the answer.
            LocalProtocolError: when this request's transport cannot carry requests to the
                client.
        """
        if self._requester is None:
            raise LocalProtocolError(f"cannot send {method!r}: no way to reach the client here")
        return await self._requester(method, params)
