"""Observability middleware with the real packages: OpenTelemetry spans and Prometheus metrics.

Spans are read through the OpenTelemetry SDK's in-memory exporter (a tracer provider per test,
never the global one); metrics through prometheus_client's own parser, from `render()` and from
a scrape of the HTTP server's metrics endpoint over loopback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from tests.helpers import LATEST, MODERN
from tests.http_helpers import serve
from trio_mcp import (
    Accepted,
    CallNext,
    Context,
    ElicitRequest,
    HttpOptions,
    Middleware,
    RequestError,
    ResolvedRequest,
    Server,
)
from trio_mcp.middleware import (
    OpenTelemetryMiddleware,
    PrometheusMiddleware,
    trace_context_meta,
)
from trio_mcp.testing import connect

otel_sdk = pytest.importorskip(
    "opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed (the test extra)"
)
prometheus_parser = pytest.importorskip(
    "prometheus_client.parser", reason="prometheus-client is not installed (the prometheus extra)"
)

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402 - after the skips
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

TIMEOUT = 30
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


class Spans:
    """A tracer provider of the test's own and the spans it has ended."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def ended(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        (span,) = [s for s in self.ended() if s.name == name]
        return span


@pytest.fixture
def spans() -> Iterator[Spans]:
    recorded = Spans()
    yield recorded
    recorded.provider.shutdown()


def make_server(*middleware: Any) -> Server:
    server = Server("observed", middleware=list(middleware))

    @server.tool(inline=True)
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def broken() -> str:
        raise ValueError("it broke")

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.resource("config://main")
    def config() -> str:
        return "main"

    @server.prompt()
    def greet(who: str) -> str:
        return f"Hello {who}"

    return server


class Confirm(BaseModel):
    ok: bool


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# -- OpenTelemetry: one span per request -----------------------------------------------------------


@pytest.mark.parametrize("version", [LATEST, MODERN])
async def test_a_server_span_per_request_with_the_conventions_names(
    spans: Spans, version: str
) -> None:
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    with trio.fail_after(TIMEOUT):
        async with connect(server, protocol_version=version) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            await client.read_resource("note://secret-name")
            await client.get_prompt("greet", {"who": "Ann"})
            await client.list_tools()
    tool = spans.named("tools/call add")
    assert tool.kind is SpanKind.SERVER
    assert tool.status.status_code is StatusCode.UNSET
    expected = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "mcp.protocol.version": version,
    }
    assert expected.items() <= attributes(tool).items()
    assert attributes(tool)["jsonrpc.request.id"].isdigit()  # the id, as a string
    # The session's own name, never the HTTP credential; a 2026-07-28 request has no session.
    if version == LATEST:
        assert attributes(tool)["mcp.session.id"]
    else:
        assert "mcp.session.id" not in attributes(tool)
    # A resource's URI is an attribute, never part of the span's name (unbounded).
    read = spans.named("resources/read")
    assert attributes(read)["mcp.resource.uri"] == "note://secret-name"
    prompt = spans.named("prompts/get greet")
    assert attributes(prompt)["gen_ai.prompt.name"] == "greet"
    assert "gen_ai.operation.name" not in attributes(prompt)
    assert attributes(spans.named("tools/list"))["mcp.method.name"] == "tools/list"
    # No client span and no context sent: every server span starts a trace of its own.
    assert all(span.parent is None for span in spans.ended())


async def test_errors_mark_the_span_as_the_conventions_say(spans: Spans) -> None:
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            assert (await client.call_tool("broken")).is_error
            with pytest.raises(RequestError):
                await client.call_tool("no-such-tool")
            with pytest.raises(RequestError) as missing:
                await client.read_resource("config://other")
    # An isError result: error.type "tool_error" (note 1), no JSON-RPC code.
    broken = spans.named("tools/call broken")
    assert broken.status.status_code is StatusCode.ERROR
    assert attributes(broken)["error.type"] == "tool_error"
    assert "rpc.response.status_code" not in attributes(broken)
    # A JSON-RPC error: its code and message. An unknown tool's name is no span name.
    unknown = spans.named("tools/call")
    assert attributes(unknown)["gen_ai.tool.name"] == "no-such-tool"
    assert attributes(unknown)["error.type"] == "-32602"
    assert attributes(unknown)["rpc.response.status_code"] == "-32602"
    assert unknown.status.status_code is StatusCode.ERROR
    assert unknown.status.description == "Unknown tool: no-such-tool"
    read = spans.named("resources/read")
    assert attributes(read)["error.type"] == str(missing.value.code)
    assert read.status.description == missing.value.message


# -- OpenTelemetry: trace context in `_meta` ---------------------------------------------------


async def test_the_traceparent_in_meta_is_the_spans_parent(spans: Spans) -> None:
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    meta = {"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7"}
    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            result = await client.request(
                "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta}
            )
    assert result["structuredContent"] == {"result": 2}
    span = spans.named("tools/call add")
    assert span.parent is not None
    assert span.parent.is_remote
    assert format(span.parent.trace_id, "032x") == TRACE_ID
    assert format(span.parent.span_id, "016x") == PARENT_ID
    assert span.context is not None
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.context.trace_state.get("rojo") == "00f067aa0ba902b7"


@pytest.mark.parametrize(
    "traceparent",
    [5, None, "garbage", f"00-{'0' * 32}-{PARENT_ID}-01", ["a", "list"], {"an": "object"}],
)
async def test_a_malformed_trace_context_is_ignored(spans: Spans, traceparent: Any) -> None:
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    params = {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"traceparent": traceparent}}
    with trio.fail_after(TIMEOUT):
        async with connect(server, check_schema=False) as client:
            result = await client.request("tools/call", params)
    assert result["structuredContent"] == {"result": 2}
    assert spans.named("tools/call add").parent is None


async def test_without_from_meta_the_clients_context_is_not_trusted(spans: Spans) -> None:
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider, from_meta=False))
    params = {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"traceparent": TRACEPARENT}}
    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            await client.request("tools/call", params)
    assert spans.named("tools/call add").parent is None


async def test_the_ambient_context_is_linked_when_meta_names_the_parent(spans: Spans) -> None:
    # The server runs inside a span of the test's (as under an instrumented HTTP server): the
    # request's own context is the parent, the ambient one a link.
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    tracer = spans.provider.get_tracer("tests")
    params = {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"traceparent": TRACEPARENT}}
    with trio.fail_after(TIMEOUT), tracer.start_as_current_span("transport") as ambient:
        async with connect(server) as client:
            await client.request("tools/call", params)
            await client.call_tool("add", {"a": 1, "b": 1})
    with_meta, without = sorted(
        (s for s in spans.ended() if s.name == "tools/call add"),
        key=lambda s: 0 if s.links else 1,
    )
    assert with_meta.parent is not None
    assert format(with_meta.parent.span_id, "016x") == PARENT_ID
    assert [link.context.span_id for link in with_meta.links] == [
        ambient.get_span_context().span_id
    ]
    # Nothing in `_meta`: the ambient context is the parent, as for any span.
    assert without.parent is not None
    assert without.parent.span_id == ambient.get_span_context().span_id


async def test_the_client_carries_the_callers_context_to_the_server(spans: Spans) -> None:
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    tracer = spans.provider.get_tracer("tests")
    seen: list[Any] = []

    async def meta_of(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        seen.append(dict((request.params or {}).get("_meta") or {}))
        return await call_next(request)

    server.add_middleware(meta_of)
    with trio.fail_after(TIMEOUT):
        async with connect(server, request_meta=trace_context_meta) as client:
            with tracer.start_as_current_span("caller") as caller:
                await client.call_tool("add", {"a": 1, "b": 1})
            await client.call_tool("add", {"a": 2, "b": 2})  # no span current: nothing sent
    in_trace, alone = [s for s in spans.ended() if s.name == "tools/call add"]
    assert in_trace.parent is not None
    assert in_trace.parent.span_id == caller.get_span_context().span_id
    assert in_trace.context is not None
    assert in_trace.context.trace_id == caller.get_span_context().trace_id
    assert alone.parent is None
    assert seen[0]["traceparent"].split("-")[2] == format(caller.get_span_context().span_id, "016x")
    assert "traceparent" not in seen[1]


async def test_a_request_meta_hook_keeps_the_callers_keys_and_may_fail() -> None:
    seen: list[dict[str, Any]] = []

    async def meta_of(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        seen.append(dict((request.params or {}).get("_meta") or {}))
        return await call_next(request)

    fail = False

    def hook(method: str) -> dict[str, str]:
        if fail:
            raise RuntimeError("no context to give")
        return {"traceparent": "from the hook", "example.com/method": method}

    with trio.fail_after(TIMEOUT):
        async with connect(make_server(meta_of), request_meta=hook) as client:
            params = {"name": "add", "arguments": {"a": 1, "b": 1}}
            await client.request("tools/call", {**params, "_meta": {"traceparent": "mine"}})
            fail = True
            with pytest.raises(RuntimeError, match="no context"):
                await client.call_tool("add", {"a": 1, "b": 1})
            assert client.in_flight == 0  # nothing was sent, no id is held
    assert seen == [{"traceparent": "mine", "example.com/method": "tools/call"}]


async def test_over_http_the_traceparent_in_meta_is_the_parent(spans: Spans) -> None:
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    with trio.fail_after(TIMEOUT):
        async with serve(server) as served:
            client = served.client()
            await client.initialize()
            reply = await client.call("add", {"a": 2, "b": 3}, traceparent=TRACEPARENT)
    assert reply.result["structuredContent"] == {"result": 5}
    parent = spans.named("tools/call add").parent
    assert parent is not None
    assert format(parent.trace_id, "032x") == TRACE_ID


def test_a_missing_package_is_named_with_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.propagate", None)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(
        ImportError, match=r'opentelemetry-api package: pip install "trio-mcp\[otel'
    ):
        OpenTelemetryMiddleware()
    with pytest.raises(ImportError, match=r"opentelemetry-api package"):
        trace_context_meta("tools/call")
    with pytest.raises(ImportError, match=r'prometheus-client package: .*"trio-mcp\[prometheus'):
        PrometheusMiddleware()


# -- Prometheus ------------------------------------------------------------------------------------


def samples(text: str, name: str) -> dict[tuple[str, str, str], float]:
    """`name`'s samples by (method, target, outcome), parsed by prometheus_client's parser."""
    found: dict[tuple[str, str, str], float] = {}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                labels = sample.labels
                key = (labels["method"], labels.get("target", ""), labels.get("outcome", ""))
                found[key] = sample.value
    return found


COUNT = "mcp_server_operation_duration_seconds_count"


async def test_prometheus_counts_requests_by_method_bounded_target_and_outcome() -> None:
    metrics = PrometheusMiddleware()
    server = make_server(metrics)
    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            for _ in range(2):
                await client.call_tool("add", {"a": 1, "b": 2})
            await client.call_tool("broken")
            with pytest.raises(RequestError):
                await client.call_tool("made-up-name")
            await client.read_resource("note://a")
            await client.read_resource("note://b")
            await client.read_resource("config://main")
            await client.list_tools()
    body, content_type = metrics.render()
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    text = body.decode()
    counts = samples(text, COUNT)
    assert counts[("tools/call", "add", "ok")] == 2
    assert counts[("tools/call", "broken", "tool_error")] == 1
    assert counts[("tools/call", "", "error")] == 1  # the client's made-up name is no label
    assert counts[("resources/read", "note://{name}", "ok")] == 2  # the template, not the URIs
    assert counts[("resources/read", "config://main", "ok")] == 1
    assert counts[("tools/list", "", "ok")] == 1
    assert "made-up-name" not in text
    assert "note://a" not in text
    gauge = samples(text, "mcp_server_requests_in_flight")
    assert set(gauge.values()) == {0.0}
    # The buckets: the sub-millisecond ones below the conventions' (10 ms to 300 s).
    bounds = {
        s.labels["le"]
        for family in prometheus_parser.text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "mcp_server_operation_duration_seconds_bucket"
    }
    assert {"0.001", "0.01", "300.0", "+Inf"} <= bounds


async def test_a_2026_input_round_and_a_cancelled_call_have_outcomes_of_their_own(
    spans: Spans,
) -> None:
    metrics = PrometheusMiddleware()
    ended = trio.Event()
    started = trio.Event()

    class Ended(Middleware):
        """Outermost: hears when the others are done with a call."""

        async def on_call_tool(
            self, request: ResolvedRequest, call_next: CallNext
        ) -> dict[str, Any]:
            try:
                return await call_next(request)
            finally:
                if request.name == "hang":
                    ended.set()

    server = make_server(Ended(), metrics, OpenTelemetryMiddleware(tracer_provider=spans.provider))

    @server.tool()
    async def confirm(ctx: Context) -> str:
        await ctx.elicit("Sure?", Confirm)
        return "confirmed"

    @server.tool()
    async def hang() -> str:
        started.set()
        await trio.sleep_forever()
        return "never"

    async def accept(request: ElicitRequest) -> Accepted[Any]:
        return Accepted({"ok": True})

    with trio.fail_after(TIMEOUT):
        async with connect(server, protocol_version=MODERN, elicitation_handler=accept) as client:
            assert (await client.call_tool("confirm")).text == "confirmed"
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "hang")
                await started.wait()
                nursery.cancel_scope.cancel()
            await ended.wait()
    counts = samples(metrics.render()[0].decode(), COUNT)
    assert counts[("tools/call", "confirm", "input_required")] == 1
    assert counts[("tools/call", "confirm", "ok")] == 1
    assert counts[("tools/call", "hang", "cancelled")] == 1
    # A cancelled request is not the server's failure: its span carries no error.
    hung = spans.named("tools/call hang")
    assert hung.status.status_code is StatusCode.UNSET
    assert "error.type" not in attributes(hung)


async def test_the_global_registry_is_used_only_when_given() -> None:
    shared = CollectorRegistry()
    first, second = PrometheusMiddleware(), PrometheusMiddleware()  # two servers, no clash
    assert first.registry is not second.registry
    given = PrometheusMiddleware(registry=shared)
    assert given.registry is shared
    assert shared.get_sample_value("mcp_server_requests_in_flight", {"method": "ping"}) is None


# -- the HTTP metrics endpoint -----------------------------------------------------------------


async def test_the_http_server_serves_a_scrape_of_the_metrics() -> None:
    metrics = PrometheusMiddleware()
    with trio.fail_after(TIMEOUT):
        async with serve(make_server(metrics), metrics=metrics.render) as served:
            client = served.client()
            await client.initialize()
            await client.call("add", {"a": 2, "b": 3})
            scrape = await served.http.get(served.base + "/metrics")
            open_metrics = await served.http.get(
                served.base + "/metrics", headers={"accept": "application/openmetrics-text"}
            )
    assert scrape.status_code == 200
    assert scrape.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert scrape.headers["cache-control"] == "no-store"
    assert samples(scrape.text, COUNT)[("tools/call", "add", "ok")] == 1
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert open_metrics.text.endswith("# EOF\n")


async def test_the_metrics_endpoint_is_off_by_default() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(make_server(PrometheusMiddleware())) as served:
            response = await served.http.get(served.base + "/metrics")
    assert response.status_code == 404


async def test_the_metrics_endpoint_guards_host_origin_method_and_its_token() -> None:
    metrics = PrometheusMiddleware()
    with trio.fail_after(TIMEOUT):
        async with serve(
            make_server(metrics),
            metrics=metrics.render,
            metrics_path="/internal/metrics",
            metrics_token="scrape-secret",
        ) as served:
            url = served.base + "/internal/metrics"
            get = served.http.get
            good = {"authorization": "Bearer scrape-secret"}
            rebinding = await get(url, headers={**good, "host": "evil.example"})
            cross_site = await get(url, headers={**good, "origin": "https://evil.example"})
            posted = await served.http.post(url, headers=good)
            anonymous = await get(url)
            wrong = await get(url, headers={"authorization": "Bearer scrape-secreT"})
            other_scheme = await get(url, headers={"authorization": "Basic scrape-secret"})
            allowed = await get(url, headers=good)
            default_path = await get(served.base + "/metrics", headers=good)
    assert rebinding.status_code == 421
    assert cross_site.status_code == 403
    assert posted.status_code == 405
    assert posted.headers["allow"] == "GET"
    for refused in (anonymous, wrong, other_scheme):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
    assert allowed.status_code == 200
    assert "mcp_server_operation_duration_seconds" in allowed.text
    assert default_path.status_code == 404


async def test_a_renderer_that_fails_is_a_500_and_the_server_goes_on() -> None:
    def broken(accept: str | None) -> tuple[bytes, str]:
        raise RuntimeError("registry on fire")

    with trio.fail_after(TIMEOUT):
        async with serve(make_server(), metrics=broken) as served:
            response = await served.http.get(served.base + "/metrics")
            client = served.client()
            assert (await client.initialize()).status == 200
    assert response.status_code == 500


@pytest.mark.parametrize("path", ["/mcp", "metrics", "/sse"])
def test_a_metrics_path_must_be_a_path_of_its_own(path: str) -> None:
    with pytest.raises(ValueError, match="metrics_path"):
        HttpOptions(metrics=lambda accept: (b"", "text/plain"), metrics_path=path)
    HttpOptions(metrics_path=path)  # not served: not checked
