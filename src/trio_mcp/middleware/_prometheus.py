"""Prometheus: request counts, durations and outcomes, for an HTTP server's metrics endpoint.

Two metrics, in a registry of the middleware's own unless one is given:

- `mcp_server_operation_duration_seconds` (histogram; labels `method`, `target`, `outcome`):
  how long each request took from the chain's view, and by its `_count`, how many there were.
  The name is OpenTelemetry's `mcp.server.operation.duration` (seconds) as an OpenTelemetry
  exporter would write it for Prometheus. `outcome` is "ok", "tool_error", "input_required",
  "error" or "cancelled" (`_observe`): errors are the series whose outcome is not "ok".
- `mcp_server_requests_in_flight` (gauge; label `method`): requests inside the chain now.

Cardinality stays bounded whatever clients send: `method` is one of the methods the server
routes (an unknown one is refused before the chain); `target` is a registered tool's or
prompt's name, a static resource's URI or a template's URI template (never the URI read), and
empty for an unknown name, a task or anything else (`_observe.bounded_target`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest
from ._observe import TOOL_ERROR, bounded_target, failure, require, tool_failed

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["DEFAULT_BUCKETS", "PrometheusMiddleware"]

#: Histogram bounds in seconds: those OpenTelemetry's MCP conventions give for
#: `mcp.server.operation.duration` (10 ms to 5 min), below them 1, 2.5 and 5 ms (the low end
#: of Prometheus's own defaults, 5 ms, and two steps under it): an inline tool or a list is
#: answered in well under a millisecond, which the conventions' first bound would not tell
#: from 9 ms.
DEFAULT_BUCKETS: Final[tuple[float, ...]] = (
    0.001, 0.0025, 0.005,
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip


class PrometheusMiddleware(Middleware):
    """Records every request in Prometheus metrics, and renders them for a scrape.

    ```python
    from trio_mcp import Server, run
    from trio_mcp.http import HttpOptions
    from trio_mcp.middleware import PrometheusMiddleware

    metrics = PrometheusMiddleware()
    server = Server("measured", middleware=[metrics])
    run(server, transport="http", options=HttpOptions(metrics=metrics.render))
    ```

    What it records: the module docstring. Put it first among the middleware to time what
    the others add too.

    Args:
        registry: Where the metrics live; None: a `CollectorRegistry` of this middleware's
            own (`registry`), so that two servers in one process, or a test, do not meet.
            Give `prometheus_client.REGISTRY` to expose them with the process's other metrics.
        buckets: The histogram's upper bounds, in seconds.

    Raises:
        ImportError: when `prometheus-client` is not installed (the `prometheus` extra).
    """

    inline = True  # its hooks never wait: calls answered at once stay on the reader

    def __init__(
        self,
        *,
        registry: CollectorRegistry | None = None,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> None:
        client: Any = require(
            "prometheus_client", "prometheus-client", "prometheus", "PrometheusMiddleware"
        )
        self._exposition: Any = require(
            "prometheus_client.exposition", "prometheus-client", "prometheus", "render"
        )
        #: The registry the metrics are in.
        self.registry: CollectorRegistry = (
            registry if registry is not None else client.CollectorRegistry()
        )
        self._duration = client.Histogram(
            "mcp_server_operation_duration_seconds",
            "Duration of MCP requests as the server saw them, by method, target and outcome.",
            ("method", "target", "outcome"),
            registry=self.registry,
            buckets=tuple(buckets),
        )
        self._in_flight = client.Gauge(
            "mcp_server_requests_in_flight",
            "MCP requests being handled now, by method.",
            ("method",),
            registry=self.registry,
        )

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Time the request and count it under its outcome."""
        method = request.method
        in_flight = self._in_flight.labels(method)
        in_flight.inc()
        outcome = "cancelled"  # what is left when neither a result nor an Exception came
        start = time.perf_counter()
        try:
            result = await call_next(request)
        except Exception as exc:
            outcome = TOOL_ERROR if failure(request, exc)[0] is None else "error"
            raise
        else:
            if tool_failed(request, result):
                outcome = TOOL_ERROR
            elif result.get("resultType") == "input_required":
                outcome = "input_required"
            else:
                outcome = "ok"
            return result
        finally:
            elapsed = time.perf_counter() - start
            in_flight.dec()
            self._duration.labels(method, bounded_target(request) or "", outcome).observe(elapsed)

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """The registry's metrics for a scrape: `HttpOptions(metrics=middleware.render)`.

        Args:
            accept: The scrape's Accept header: OpenMetrics or the Prometheus text format (a
                version of it) as asked, the text format 0.0.4 without one.

        Returns:
            The body and its Content-Type.
        """
        encoder, content_type = self._exposition.choose_encoder(accept or "")
        body: bytes = encoder(self.registry)
        return body, content_type
