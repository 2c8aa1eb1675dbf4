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
through Redis: `_rate`), `OpenTelemetryMiddleware` (a span per request: `_otel`),
`PrometheusMiddleware` (request metrics for a scrape endpoint: `_prometheus`).
"""

from .._dispatch.middleware import CallNext, Middleware, NotifyNext
from .._dispatch.resolve import ResolvedRequest

# Observability: each loads its package (the `otel`, `prometheus` extras) when it is made.
from ._otel import OpenTelemetryMiddleware, trace_context_meta
from ._prometheus import PrometheusMiddleware

# Rate limiting: token buckets in memory, or shared through Redis (loaded when one is made).
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

__all__ = [
    "DEFAULT_EXEMPT",
    "DEFAULT_MAX_KEYS",
    "CallNext",
    "KeyFunction",
    "MemoryRateStore",
    "Middleware",
    "NotifyNext",
    "OpenTelemetryMiddleware",
    "PrometheusMiddleware",
    "Rate",
    "RateDecision",
    "RateLimiter",
    "RateStore",
    "RedisRateStore",
    "ResolvedRequest",
    "by_client",
    "by_session",
    "by_target",
    "trace_context_meta",
]
