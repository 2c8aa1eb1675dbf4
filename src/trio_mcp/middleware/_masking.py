"""`ErrorMasking`: clients see that something failed, never what; the log keeps the details.

What is masked is what the server itself calls unexpected: a tool's exception that is not a
`ToolError` (its `isError` text), a resource's, prompt's or completer's exception that is not
a `ToolError`, `RequestError` or `ResourceNotFoundError` (its -32603 message), and any
`Exception` a middleware inside this one raises. What a function or middleware says on
purpose (`ToolError`, `RequestError`, the protocol's own errors, invalid arguments, timeouts)
goes out as it is.

`Server(mask_error_details=True)` stays, and does the same at the error boundary itself, for
every request and at no cost (the fast inline path stays open: a server with middleware runs
every request in a task); this middleware masks only for those outside it in the chain, so a
logging or tracing middleware placed inside it still sees the details, and it adds a
reference that ties the client's message to the log line. Both may be used together: the
middleware then adds its reference to the flag's message.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any, Final

from .._core.jsonrpc import INTERNAL_ERROR
from .._dispatch.dispatcher import UnexpectedError, UnexpectedErrorResult
from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest
from .._exceptions import ProtocolError, RemoteProtocolError, RequestError, ToolError

__all__ = ["ErrorMasking"]

#: Where masked errors are logged unless told otherwise.
DEFAULT_ERROR_LOGGER: Final = "trio_mcp.errors"


class ErrorMasking(Middleware):
    """Replace unexpected errors' details by "Internal error in tool X (reference 5f0c2a9e)".

    The details (exception type and message, the request's method, id and session) are logged
    with the same reference. The traceback is already logged by the server ("tool X raised",
    on the `trio_mcp` logger); `traceback=True` repeats it here.

    Args:
        logger: The logger, or its name.
        level: The level of each line.
        reference: Give each masked error a random reference (8 hex digits), in the client's
            message and the log line.
        traceback: Log the exception's traceback with the line.
    """

    inline = True  # its hooks never wait: calls answered at once stay on the reader

    def __init__(
        self,
        *,
        logger: logging.Logger | str = DEFAULT_ERROR_LOGGER,
        level: int = logging.ERROR,
        reference: bool = True,
        traceback: bool = False,
    ) -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self.reference = reference
        self.traceback = traceback

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Pass results and deliberate errors; mask the unexpected ones."""
        try:
            result = await call_next(request)
        except UnexpectedError as exc:
            message = self._masked(request, exc.where, exc.exception, logged=True)
            raise RemoteProtocolError(message, INTERNAL_ERROR, exc.data) from None
        except (ProtocolError, RequestError, ToolError):
            raise
        except Exception as exc:  # a middleware inside this one failed: nobody logged it yet
            message = self._masked(request, request.method, exc, logged=False)
            raise RemoteProtocolError(message, INTERNAL_ERROR) from None
        if isinstance(result, UnexpectedErrorResult):
            message = self._masked(request, result.where, result.exception, logged=True)
            masked = {key: value for key, value in result.items() if key != "content"}
            masked["content"] = [{"type": "text", "text": message}]
            return masked
        return result

    def _masked(
        self, request: ResolvedRequest, where: str, exc: BaseException, *, logged: bool
    ) -> str:
        """Log `exc` and return the client's message (`logged`: its traceback already was)."""
        reference = secrets.token_hex(4) if self.reference else None
        if self.logger.isEnabledFor(self.level):
            self.logger.log(
                self.level,
                "%s%s raised %s: %s (request %r %s, session %s)",
                f"[{reference}] " if reference else "",
                where,
                type(exc).__name__,
                exc,
                request.id,
                request.method,
                request.session_id or "-",
                exc_info=exc if (self.traceback or not logged) else None,
            )
        message = f"Internal error in {where}"
        return f"{message} (reference {reference})" if reference else message
