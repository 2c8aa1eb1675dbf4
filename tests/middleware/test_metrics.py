"""PrometheusMiddleware with the real package, and the HTTP server's metrics endpoint.

Metrics are read with prometheus_client's own parser, from `render()` and from a scrape of the
endpoint over loopback.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio

from tests.helpers import MODERN
from tests.http_helpers import serve
from tests.middleware.observed import TIMEOUT, cancel_a_hanging_call, make_server
from trio_mcp import AcceptedElicitation, Asking, ElicitRequest, RequestError
from trio_mcp.http import HttpOptions
from trio_mcp.middleware import OpenTelemetryMiddleware, PrometheusMiddleware, trace_context_meta
from trio_mcp.testing import connect

prometheus_parser = pytest.importorskip(
    "prometheus_client.parser", reason="prometheus-client is not installed (the prometheus extra)"
)

from prometheus_client import CollectorRegistry  # noqa: E402 - after the skip

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


async def test_a_2026_input_round_and_a_cancelled_call_have_outcomes_of_their_own() -> None:
    metrics = PrometheusMiddleware()

    async def accept(request: ElicitRequest) -> AcceptedElicitation[Any]:
        return AcceptedElicitation({"ok": True})

    with trio.fail_after(TIMEOUT):
        async with connect(
            make_server(metrics),
            protocol_version=MODERN,
            asking=Asking(elicitation=accept),
        ) as client:
            assert (await client.call_tool("confirm")).text == "confirmed"
    await cancel_a_hanging_call(metrics)
    counts = samples(metrics.render()[0].decode(), COUNT)
    assert counts[("tools/call", "confirm", "input_required")] == 1
    assert counts[("tools/call", "confirm", "ok")] == 1
    assert counts[("tools/call", "hang", "cancelled")] == 1
    gauge = samples(metrics.render()[0].decode(), "mcp_server_requests_in_flight")
    assert set(gauge.values()) == {0.0}


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
