"""What the observability middleware share: how a request ended, what names its target, imports.

A request ends in one of these outcomes, as its answer will say:

- "ok": a result;
- "tool_error": a `tools/call` result with `isError` (the function raised, its arguments failed
  validation, or a middleware raised `ToolError`);
- "input_required": a 2026-07-28 round that asks the client for more (the call goes on in the
  next round, a request of its own);
- "error": a JSON-RPC error (its code: a `RemoteProtocolError` or `RequestError`, or -32603 for
  anything else, as the dispatcher answers it);
- "cancelled": the request was cancelled (the client's `notifications/cancelled`, a closed
  connection, shutdown): no answer goes out. Not a failure of the server's (gRPC's rule for a
  server's CANCELLED), so no span error.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Final

from .._core.jsonrpc import INTERNAL_ERROR
from .._dispatch.resolve import ResolvedRequest
from .._exceptions import RemoteProtocolError, RequestError, ToolError
from .._features.resources import Resource, ResourceTemplate

__all__ = ["bounded_target", "failure", "require", "tool_failed"]

#: The `isError` error type of the conventions (`error.type` note 1), and the outcome's name.
TOOL_ERROR: Final = "tool_error"


def require(module: str, package: str, extra: str, what: str) -> ModuleType:
    """Import `module` of an optional dependency, or say which package and extra bring it.

    Raises:
        ImportError: naming the extra to install.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f'{what} needs the {package} package: pip install "trio-mcp[{extra}]"',
            name=exc.name,
        ) from exc


def bounded_target(request: ResolvedRequest) -> str | None:
    """What the request is about, from a set the server bounds, or None.

    A tool's or prompt's name, a static resource's URI or a template's URI template, once
    resolved to something registered: never what the client wrote (an unknown tool's name, a
    URI a template matched, a task id), which is the client's to vary without end.
    """
    target = request.target
    if target is None:
        return None
    if isinstance(target, ResourceTemplate):
        return target.uri_template
    if isinstance(target, Resource):
        return target.uri
    if request.kind in ("tool", "prompt"):
        name: Any = getattr(target, "name", None)
        return name if isinstance(name, str) else None
    if request.kind == "completion" and request.error is None:
        return request.name  # the prompt's or template's name, resolved
    return None


def tool_failed(request: ResolvedRequest, result: dict[str, Any]) -> bool:
    """Whether a result is a tool's error result (`isError`)."""
    return request.kind == "tool" and result.get("isError") is True


def failure(request: ResolvedRequest, exc: Exception) -> tuple[int | None, str]:
    """How an exception out of the chain is answered: (JSON-RPC code or None, message).

    None: a tool's error result (`ToolError` from a middleware, for a `tools/call`).
    """
    if isinstance(exc, RemoteProtocolError | RequestError):  # as `Dispatcher.answer` maps them
        return exc.code, exc.message
    if isinstance(exc, ToolError):
        if request.kind == "tool":
            return None, str(exc)
        return INTERNAL_ERROR, str(exc)
    return INTERNAL_ERROR, f"Internal error in {request.method}"
