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
"""

from .._dispatch.middleware import CallNext, Middleware, NotifyNext
from .._dispatch.resolve import ResolvedRequest
from .._exports import publish

# Observability: each loads its package (the `otel`, `prometheus` extras) when it is made.
from ._otel import OpenTelemetryMiddleware, trace_context_meta
from ._prometheus import PrometheusMiddleware

__all__ = [
    "CallNext",
    "Middleware",
    "NotifyNext",
    "OpenTelemetryMiddleware",
    "PrometheusMiddleware",
    "ResolvedRequest",
    "trace_context_meta",
]

publish(__name__, globals(), __all__)
