"""OpenTelemetryMiddleware with the real packages: spans, and trace context in `_meta`.

Spans are read through the OpenTelemetry SDK's in-memory exporter, from a tracer provider of
each test's own (never the global one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import trio

from tests.helpers import LATEST, MODERN
from tests.http_helpers import serve
from tests.middleware.observed import TIMEOUT, cancel_a_hanging_call, make_server
from trio_mcp import RequestError
from trio_mcp.middleware import (
    CallNext,
    OpenTelemetryMiddleware,
    ResolvedRequest,
    trace_context_meta,
)
from trio_mcp.testing import connect

pytest.importorskip(
    "opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed (the test extra)"
)

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

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


async def test_the_function_runs_inside_the_requests_span(spans: Spans) -> None:
    # A span the function starts (or a log line it correlates) belongs to the request's trace,
    # whether the function runs on a worker thread or in the event loop.
    server = make_server(OpenTelemetryMiddleware(tracer_provider=spans.provider))

    @server.tool()
    def in_thread() -> str:
        return format(trace.get_current_span().get_span_context().span_id, "016x")

    @server.tool()
    async def in_loop() -> str:
        return format(trace.get_current_span().get_span_context().span_id, "016x")

    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            threaded = (await client.call_tool("in_thread")).text
            looped = (await client.call_tool("in_loop")).text
    for name, seen in (("in_thread", threaded), ("in_loop", looped)):
        context = spans.named(f"tools/call {name}").context
        assert context is not None
        assert seen == format(context.span_id, "016x")


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


async def test_a_cancelled_call_is_no_error_of_the_servers(spans: Spans) -> None:
    await cancel_a_hanging_call(OpenTelemetryMiddleware(tracer_provider=spans.provider))
    hung = spans.named("tools/call hang")
    assert hung.status.status_code is StatusCode.UNSET
    assert "error.type" not in attributes(hung)
