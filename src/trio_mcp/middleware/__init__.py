"""Middleware: the base class, and built-ins that are ordinary middleware.

```python
from trio_mcp import Server
from trio_mcp.middleware import Middleware

class Audit(Middleware):
    async def on_call_tool(self, request, call_next):
        result = await call_next(request)
        print(request.name, request.principal, result.get("isError", False))
        return result

server = Server("audited", middleware=[Audit()])
```

What a middleware sees and where it runs: `Middleware`'s module (`trio_mcp._dispatch.middleware`)
says it in full.

Built-ins: `RateLimiter` (token buckets per client, session or target, in memory or shared
through Redis: `_rate`).
"""

from .._dispatch.middleware import CallNext, Middleware, NotifyNext
from .._dispatch.resolve import ResolvedRequest

__all__ = ["CallNext", "Middleware", "NotifyNext", "ResolvedRequest"]

# -- rate limiting (`_rate`, `_rate_redis`) --------------------------------------------------------
from ._rate import (
    DEFAULT_EXEMPT,
    DEFAULT_MAX_KEYS,
    KeyFunction,
    MemoryRateStore,
    Rate,
    RateDecision,
    RateLimiter,
    RateStore,
    by_client,
    by_session,
    by_target,
)
from ._rate_redis import RedisRateStore

__all__ += [
    "DEFAULT_EXEMPT",
    "DEFAULT_MAX_KEYS",
    "KeyFunction",
    "MemoryRateStore",
    "Rate",
    "RateDecision",
    "RateLimiter",
    "RateStore",
    "RedisRateStore",
    "by_client",
    "by_session",
    "by_target",
]
