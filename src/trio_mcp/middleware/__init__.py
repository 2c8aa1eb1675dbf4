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

Built-ins, each an ordinary `Middleware`:

- `RequestLogging`: one line per request (method, target, outcome, duration, session,
  revision, principal), as `key=value` text or JSON;
- `Timing`: count, errors, total, mean, min, max and p50/p95/p99 per method and per target,
  in bounded memory (`stats()`, `snapshot()`);
- `ResponseCache`: lists and reads kept as long as their caching hints say, per principal
  when private, dropped when the lists change or a resource is updated;
- `ResultSizeLimit`: tool results, reads and prompts over a size cut, with a note, in a
  valid shape;
- `ErrorMasking`: unexpected errors' details hidden from clients, logged with a reference;
- `RateLimiter`: token buckets per client, session or target, in memory or shared through
  Redis (`RedisRateStore`);
- `OpenTelemetryMiddleware`: a span per request (the `otel` extra);
- `PrometheusMiddleware`: request metrics for a scrape endpoint (the `prometheus` extra).

Order matters, the first outermost:

```python
server = Server("docs", middleware=[RateLimiter(Rate(10)), RequestLogging(), Timing()])
server.add_middleware(ErrorMasking())
server.add_middleware(ResponseCache(server))  # it needs the server: added after
server.add_middleware(ResultSizeLimit())
```

refuses floods first, logs and times what the client gets (masked, from the cache or not),
and the cache keeps results already cut. All of them but `RateLimiter` with a
`RedisRateStore` never wait (`Middleware.inline`): calls that need no waiting stay on the
connection's reader through them.
"""

from .._dispatch.middleware import CallNext, Middleware, NotifyNext
from .._dispatch.resolve import ResolvedRequest
from .._exports import publish
from ._caching import CacheStats, ResponseCache
from ._limits import ResultSizeLimit
from ._logging import RequestLogging
from ._masking import ErrorMasking

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
from ._timing import Timing, TimingStats

__all__ = [
    "DEFAULT_EXEMPT",
    "DEFAULT_MAX_KEYS",
    "CacheStats",
    "CallNext",
    "ErrorMasking",
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
    "RequestLogging",
    "ResolvedRequest",
    "ResponseCache",
    "ResultSizeLimit",
    "Timing",
    "TimingStats",
    "by_client",
    "by_session",
    "by_target",
    "trace_context_meta",
]

publish(__name__, globals(), __all__)
