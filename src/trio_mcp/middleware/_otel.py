"""OpenTelemetry: a server span per request, and trace context carried in `_meta` both ways.

The names are those of OpenTelemetry's semantic conventions for MCP: GenAI semantic conventions
v0.1.0 (open-telemetry/semantic-conventions-genai, `docs/gen-ai/mcp.md`, "Server" span, status
Development; the `mcp.*` names were in the main semantic conventions up to v1.41.0 before).

- Span name `{mcp.method.name} {target}`, the target being the tool's or prompt's name when the
  request names a registered one, else `{mcp.method.name}` alone (a resource's URI stays out
  of the name, as the conventions advise: it has no bound). Kind SERVER.
- Attributes: `mcp.method.name`, `jsonrpc.request.id`, `mcp.protocol.version`,
  `mcp.session.id`, `gen_ai.operation.name` ("execute_tool") and `gen_ai.tool.name` for
  `tools/call`, `gen_ai.prompt.name` for `prompts/get`, `mcp.resource.uri` for
  `resources/read`, `subscribe` and `unsubscribe`; on failure `error.type` (the JSON-RPC error
  code, or "tool_error" for an `isError` result, as note 1 of the conventions says) and
  `rpc.response.status_code` (the code), and the span's status ERROR with the JSON-RPC error's
  message. A cancelled request ends its span without an error (`_observe`).
- `mcp.session.id` is the server's own name for the session (`SessionInfo.id`), not the HTTP
  `Mcp-Session-Id`: that one is a credential, and traces travel further than it should. A
  2026-07-28 request belongs to no session and has none.
- Trace context (spec 2026-07-28, basic, `_meta`: SEP-414 reserves `traceparent`, `tracestate`
  and `baggage` unprefixed, in W3C Trace Context and Baggage formats; the conventions say the
  same for every revision): the server reads it from the request's `params._meta` through the
  configured propagators (W3C Trace Context and Baggage by default) and makes its span a child
  of the client's, linking the context it ran in (an HTTP server span, say) if there was one;
  a client opened with `request_meta=trace_context_meta` writes the caller's context into each
  request's `_meta`. A malformed value is ignored: the span starts as if none was sent.

Not covered: spans for notifications and for `initialize` (no middleware sees it), the
transport's attributes (`network.transport`, `client.address`), opt-in arguments and results
(`gen_ai.tool.call.arguments`: they may hold anything), client spans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest
from .._exceptions import RemoteProtocolError, RequestError, ToolError
from ._observe import TOOL_ERROR, bounded_target, failure, require, tool_failed

if TYPE_CHECKING:
    from opentelemetry.context import Context as OtelContext
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["OpenTelemetryMiddleware", "trace_context_meta"]

_API: Final = "opentelemetry-api"
#: The instrumentation scope of the spans.
_SCOPE: Final = "trio_mcp"
#: The attribute naming the request's target, by method (the conventions' "Server" span).
_TARGET_ATTRIBUTE: Final = {
    "tools/call": "gen_ai.tool.name",
    "prompts/get": "gen_ai.prompt.name",
    "resources/read": "mcp.resource.uri",
    "resources/subscribe": "mcp.resource.uri",
    "resources/unsubscribe": "mcp.resource.uri",
}
#: Methods whose span name carries the target: those with a bounded one.
_NAMED: Final = frozenset({"tools/call", "prompts/get"})


class OpenTelemetryMiddleware(Middleware):
    """A SERVER span for every request, a child of the trace context in its `_meta`.

    ```python
    from trio_mcp.middleware import OpenTelemetryMiddleware

    server = Server("traced", middleware=[OpenTelemetryMiddleware()])
    ```

    Spans go to the global tracer provider (set by the application, e.g. with the SDK and an
    OTLP exporter) unless one is given. What the spans carry: the module docstring.

    Args:
        tracer_provider: Where the spans go; None: OpenTelemetry's global provider.
        from_meta: Take the parent from the request's `_meta` (`traceparent`, `tracestate`,
            `baggage`). Turn it off for a server whose clients should not choose where its
            spans go in a trace.

    Raises:
        ImportError: when `opentelemetry-api` is not installed (the `otel` extra).
    """

    inline = True  # its hooks never wait: calls answered at once stay on the reader

    def __init__(
        self, *, tracer_provider: TracerProvider | None = None, from_meta: bool = True
    ) -> None:
        what = "OpenTelemetryMiddleware"
        self._trace: Any = require("opentelemetry.trace", _API, "otel", what)
        self._context: Any = require("opentelemetry.context", _API, "otel", what)
        self._propagate: Any = require("opentelemetry.propagate", _API, "otel", what)
        self._tracer = self._trace.get_tracer(_SCOPE, tracer_provider=tracer_provider)
        self._from_meta = from_meta

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Run the request inside its span, and record how it ended."""
        trace = self._trace
        parent, links = self._parent(request)
        span: Span = self._tracer.start_span(
            _span_name(request),
            context=parent,
            kind=trace.SpanKind.SERVER,
            attributes=_attributes(request),
            links=links,
        )
        token = self._context.attach(trace.set_span_in_context(span, parent))
        try:
            result = await call_next(request)
        except Exception as exc:
            code, message = failure(request, exc)
            if code is None:
                self._failed(span, TOOL_ERROR, None)
            else:
                self._failed(span, str(code), message, code)
                if not _answered(exc):
                    span.record_exception(exc)  # a bug somewhere: its type and traceback
            raise
        else:
            if tool_failed(request, result):
                self._failed(span, TOOL_ERROR, None)
            return result
        finally:
            self._context.detach(token)
            span.end()

    def _parent(self, request: ResolvedRequest) -> tuple[OtelContext | None, list[Any] | None]:
        """The context the span starts in, and the links it carries.

        The trace context of the request's `_meta` when it names a valid span, the ambient
        context (the task's current one) linked then; else the ambient context as parent.
        """
        params = request.params
        meta = params.get("_meta") if self._from_meta and params else None
        if not isinstance(meta, dict) or not meta:
            return None, None
        # Strings only: the propagators expect header values, and the client may send anything.
        carrier = {key: value for key, value in meta.items() if isinstance(value, str)}
        if not carrier:
            return None, None
        trace = self._trace
        ambient = self._context.get_current()
        try:
            extracted = self._propagate.extract(carrier, context=ambient)
        except Exception:  # a propagator of the application's that trips on what came
            return None, None
        remote = trace.get_current_span(extracted).get_span_context()
        here = trace.get_current_span(ambient).get_span_context()
        if not remote.is_valid or remote == here:
            return extracted, None
        return extracted, [trace.Link(here)] if here.is_valid else None

    def _failed(
        self, span: Span, error_type: str, message: str | None, code: int | None = None
    ) -> None:
        span.set_attribute("error.type", error_type)
        if code is not None:
            span.set_attribute("rpc.response.status_code", str(code))
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message))


def trace_context_meta(method: str) -> dict[str, str]:
    """The caller's trace context as `_meta` entries: a client's `request_meta` hook.

    ```python
    from trio_mcp.middleware import trace_context_meta

    async with open_client(url, request_meta=trace_context_meta) as client:
        with tracer.start_as_current_span("plan"):
            await client.call_tool("search", {...})  # the server's span is a child of "plan"
    ```

    Written by the configured propagators (W3C `traceparent` and `tracestate`, and `baggage`,
    by default: the keys SEP-414 reserves); empty when no span is current.

    Args:
        method: The request's method (every request carries the context alike).

    Raises:
        ImportError: when `opentelemetry-api` is not installed (the `otel` extra).
    """
    propagate: Any = require("opentelemetry.propagate", _API, "otel", "trace_context_meta")
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def _span_name(request: ResolvedRequest) -> str:
    method = request.method
    if method in _NAMED:
        target = bounded_target(request)
        if target is not None:
            return f"{method} {target}"
    return method


def _attributes(request: ResolvedRequest) -> Mapping[str, Any]:
    method = request.method
    attributes: dict[str, Any] = {
        "mcp.method.name": method,
        "jsonrpc.request.id": str(request.id),
    }
    scope = request.scope
    if scope is not None:
        attributes["mcp.protocol.version"] = scope.version
        if request.session_id is not None and not scope.modern:
            attributes["mcp.session.id"] = request.session_id
    if method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
    key = _TARGET_ATTRIBUTE.get(method)
    if key is not None and request.name is not None:
        attributes[key] = request.name
    return attributes


def _answered(exc: Exception) -> bool:
    """Whether an exception is an answer of its own (a protocol error), not a bug."""
    return isinstance(exc, RemoteProtocolError | RequestError | ToolError)
