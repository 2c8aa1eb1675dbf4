"""L4: requests resolved once, the middleware chain, the route table, the one error boundary.

`resolve` makes each request's record, `middleware` runs the user's code around it, and
`dispatcher` answers it. Sans-IO: running functions is the runtime's `Invoker`.
"""

from .dispatcher import (
    DEFAULT_ASK_TIMEOUT,
    LIST_METHODS,
    Callee,
    Dispatcher,
    Invoker,
    ToolTimedOut,
    UnexpectedError,
    UnexpectedErrorResult,
    error_answer,
)
from .middleware import CallNext, Chain, Middleware, MiddlewareLike, NotifyNext
from .resolve import Kind, ResolvedRequest, Targets

__all__ = [
    "DEFAULT_ASK_TIMEOUT",
    "LIST_METHODS",
    "CallNext",
    "Callee",
    "Chain",
    "Dispatcher",
    "Invoker",
    "Kind",
    "Middleware",
    "MiddlewareLike",
    "NotifyNext",
    "ResolvedRequest",
    "Targets",
    "ToolTimedOut",
    "UnexpectedError",
    "UnexpectedErrorResult",
    "error_answer",
]
