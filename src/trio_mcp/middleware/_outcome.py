"""How a request ended, as the logging and timing middleware report it.

Outcomes: "ok"; "isError" (a tool's error result); "input_required" (a 2026-07-28 round that
asked the client for more); "error" (a JSON-RPC error, with its code); "cancelled" (the
request was cancelled, or the server stopped, before it ended: no answer was sent).
"""

from __future__ import annotations

from typing import Any, Final

from .._core.jsonrpc import INTERNAL_ERROR
from .._dispatch.resolve import ResolvedRequest
from .._exceptions import ProtocolError, RequestError, ToolError
from ._observe import bounded_target

__all__ = ["Outcome", "outcome_of_exception", "outcome_of_result", "series_target"]

#: (outcome, JSON-RPC error code or None, error message or None).
Outcome = tuple[str, int | None, str | None]

OK: Final[Outcome] = ("ok", None, None)
IS_ERROR: Final[Outcome] = ("isError", None, None)
INPUT_REQUIRED: Final[Outcome] = ("input_required", None, None)
CANCELLED: Final[Outcome] = ("cancelled", None, None)
#: A target that names nothing the server has (an unknown tool, say): one series for them all.
UNKNOWN: Final = "(unknown)"


def outcome_of_result(result: dict[str, Any]) -> Outcome:
    """The outcome of a request that returned `result`."""
    if result.get("isError") is True:
        return IS_ERROR
    if result.get("resultType") == "input_required":
        return INPUT_REQUIRED
    return OK


def outcome_of_exception(request: ResolvedRequest, exc: BaseException) -> Outcome:
    """The outcome of a request whose chain raised `exc`, as the error boundary answers it."""
    if not isinstance(exc, Exception):
        return CANCELLED
    if isinstance(exc, ProtocolError | RequestError):
        return ("error", exc.code, exc.message)
    if isinstance(exc, ToolError) and request.kind == "tool":
        return IS_ERROR  # a middleware's ToolError is a tool's error result
    return ("error", INTERNAL_ERROR, str(exc) if isinstance(exc, ToolError) else type(exc).__name__)


def series_target(request: ResolvedRequest) -> str | None:
    """The target a statistic is kept under: bounded by what the server declares.

    A tool's or prompt's name; a resource's URI, or its template's (every URI of a template is
    one series); what a completion completes; None for the methods that name nothing (lists,
    ping) and for tasks (their ids come and go). A name the server does not know is
    `UNKNOWN`, so clients cannot grow the statistics by sending new names.
    """
    kind = request.kind
    if kind in ("tool", "prompt", "completion"):
        return request.name if request.target is not None or kind == "completion" else UNKNOWN
    if kind in ("resource", "subscribe"):
        return bounded_target(request) or UNKNOWN
    return None
