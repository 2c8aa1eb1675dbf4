"""Streamable HTTP under 2026-07-28, and the in-flight bounds, over real loopback sockets.

Covers the revision's own HTTP rules (spec 2026-07-28, basic/transports/streamable-http): the
request metadata headers a request must carry and the server must check against its body
(MCP-Protocol-Version, Mcp-Method, Mcp-Name with its base64 sentinel), the HTTP status of that
revision's errors, what trio-mcp's client and the official SDK's client send, the server-wide
bound on requests outside sessions (stateless mode, 2026-07-28) and the per-session bound on a
legacy SSE session. Calls that must be "in the middle" wait on a `Gate`; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import httpx
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve

import demo_tools
from tests.helpers import MODERN, init_params
from tests.http_helpers import POST_HEADERS, Gate, McpHttp, Served, serve
from tests.schema_check import validate_definition, validate_server_message, validate_transcript
from tests.timing import scaled
from trio_mcp import Param, RequestError, Server, open_client
from trio_mcp._core.versions import HANDSHAKE_VERSIONS
from trio_mcp._run import http_app
from trio_mcp.transports.http.headers import decode_value, encode_value

CAPS = "io.modelcontextprotocol/clientCapabilities"
VERSION = "io.modelcontextprotocol/protocolVersion"
META: dict[str, Any] = {VERSION: MODERN, CAPS: {}}
TIMEOUT = scaled(60)
ERROR_OBJECTS = {"InvalidParamsError", "MethodNotFoundError"}


def modern_call(name: str, request_id: int = 1, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }


def modern_request(method: str, request_id: int = 1, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": META},
    }


def mirrored(message: dict[str, Any]) -> dict[str, str]:
    """The headers a conforming client sends with a 2026-07-28 request."""
    headers = {**POST_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": message["method"]}
    name = message["params"].get("name")
    if message["method"] == "tools/call" and isinstance(name, str):
        headers["mcp-name"] = encode_value(name)
    return headers


async def post(served: Served, message: Any, headers: Any) -> httpx.Response:
    return await served.http.post(served.url, headers=headers, content=json.dumps(message))


def refused(response: httpx.Response, status: int, code: int, definition: str) -> dict[str, Any]:
    """A refusal of request 1 with `code`, matching `definition` of the 2026-07-28 schema."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["id"] == 1
    assert body["error"]["code"] == code
    validate_server_message(body, MODERN)
    # Some definitions are the whole error response, the generic ones only its error object.
    validate_definition(body["error"] if definition in ERROR_OBJECTS else body, MODERN, definition)
    return body


# -- the request metadata headers ---------------------------------------------------------------


async def test_a_request_with_its_headers_is_served_and_matches_the_schema() -> None:
    async with serve() as served:
        client = served.client(MODERN)
        discover = await client.request("server/discover", {"_meta": META})
        listed = await client.request("tools/list", {"_meta": META})
        called = await client.call("calculator.add", {"a": 2, "b": 3}, **META)
        battle = await client.call("wh40k.battle_simulation", {}, **META, progressToken="p")
    assert [r.status for r in (discover, listed, called, battle)] == [200] * 4
    assert called.result["structuredContent"] == {"result": 5}
    assert battle.kind == "text/event-stream"
    # Three answers, then the battle's three progress notifications and its answer.
    assert validate_transcript(client.sent, client.received, MODERN) == 7


def without(headers: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k != name}


CALL = modern_call("calculator.add", a=1, b=2)
GOOD = mirrored(CALL)

#: (case, headers) -> each is refused with 400 and HeaderMismatch (-32020).
MISMATCHES: list[tuple[str, Any]] = [
    ("no MCP-Protocol-Version", without(GOOD, "mcp-protocol-version")),
    ("MCP-Protocol-Version differs", {**GOOD, "mcp-protocol-version": "2025-11-25"}),
    ("no Mcp-Method", without(GOOD, "mcp-method")),
    ("Mcp-Method differs", {**GOOD, "mcp-method": "tools/list"}),
    ("Mcp-Method differs in case", {**GOOD, "mcp-method": "Tools/Call"}),
    ("no Mcp-Name", without(GOOD, "mcp-name")),
    ("Mcp-Name differs", {**GOOD, "mcp-name": "calculator.subtract"}),
    ("Mcp-Name in another case", {**GOOD, "mcp-name": "Calculator.Add"}),
    ("Mcp-Name not ASCII", [*without(GOOD, "mcp-name").items(), ("mcp-name", "añadir".encode())]),
    ("Mcp-Name sentinel not base64", {**GOOD, "mcp-name": "=?base64?***?="}),
    ("Mcp-Name sentinel not UTF-8", {**GOOD, "mcp-name": "=?base64?/w==?="}),
    ("Mcp-Name sentinel of another name", {**GOOD, "mcp-name": encode_value("\tcalculator.add")}),
    ("Mcp-Method twice", [*GOOD.items(), ("mcp-method", "tools/call")]),
    ("Mcp-Name twice", [*GOOD.items(), ("Mcp-Name", "calculator.add")]),
]


@pytest.mark.parametrize("stateless", [False, True])
@pytest.mark.parametrize(("case", "headers"), MISMATCHES, ids=[c for c, _ in MISMATCHES])
async def test_missing_malformed_or_mismatched_headers_are_400_header_mismatch(
    case: str, headers: Any, stateless: bool
) -> None:
    calls: list[tuple[int, int]] = []
    counting = Server("counting")

    @counting.tool("calculator.add", inline=True)
    def add(a: int, b: int) -> int:
        calls.append((a, b))
        return a + b

    async with serve(counting, stateless=stateless) as served:
        response = await post(served, CALL, headers)
        ok = await post(served, CALL, GOOD)
    body = refused(response, 400, -32020, "HeaderMismatchError")
    assert body["error"]["message"].startswith("Header mismatch: ")
    assert ok.status_code == 200
    assert calls == [(1, 2)]  # the refused call never ran


async def test_header_mismatch_names_both_values() -> None:
    async with serve() as served:
        response = await post(served, CALL, {**GOOD, "mcp-name": "calculator.power"})
    body = refused(response, 400, -32020, "HeaderMismatchError")
    assert body["error"]["message"] == (
        "Header mismatch: Mcp-Name header value 'calculator.power' does not match body value "
        "'calculator.add'"
    )


# The spec's own encoding examples (Streamable HTTP, Value Encoding).
SENTINELS = [
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
]


@pytest.mark.parametrize(("name", "header"), SENTINELS)
async def test_mcp_name_in_the_base64_sentinel_is_decoded_before_comparing(
    name: str, header: str
) -> None:
    assert encode_value(name) == header
    assert decode_value(header.encode(), encoded=True) == name
    message = modern_call(name)
    async with serve() as served:
        response = await post(served, message, {**mirrored(message), "mcp-name": header})
    # The headers agree with the body; the tool is unknown, which is no HTTP matter (200).
    assert response.status_code == 200
    body = response.json()
    assert body["error"] == {
        "code": -32602,
        "message": f"Unknown tool: {name}",
        "data": {"name": name},
    }
    validate_server_message(body, MODERN)


# -- arguments mirrored into Mcp-Param-* headers (x-mcp-header) ---------------------------------


def routed_server(calls: list[dict[str, Any]]) -> Server:
    """A tool whose region (string), zone (integer) and dry run (boolean) travel in headers."""
    server = Server("routed")

    @server.tool("route", inline=True)
    def route(
        region: Annotated[str, Param("Region", header="Region")],
        zone: Annotated[int | None, Param("Zone", header="Zone")] = None,
        dry_run: Annotated[bool, Param(header="Dry-Run")] = False,
        query: str = "",
    ) -> str:
        calls.append({"region": region, "zone": zone, "dry_run": dry_run, "query": query})
        return "routed"

    return server


def routed(headers: dict[str, str] | None = None, **arguments: Any) -> tuple[Any, Any]:
    message = modern_call("route", **arguments)
    return message, {**mirrored(message), **(headers or {})}


#: (case, the call and its headers, what the tool got) -> served with 200.
PARAM_HEADERS_KEPT: list[tuple[str, tuple[Any, Any]]] = [
    ("a string", routed({"mcp-param-region": "eu-west1"}, region="eu-west1")),
    ("header name in any case", routed({"MCP-PARAM-REGION": "eu-west1"}, region="eu-west1")),
    ("base64 for non-ASCII", routed({"mcp-param-region": encode_value("Zürich")}, region="Zürich")),
    (
        "integer, boolean",
        routed(
            {"mcp-param-region": "r", "mcp-param-zone": "42", "mcp-param-dry-run": "true"},
            region="r",
            zone=42,
            dry_run=True,
        ),
    ),
    (
        "integer as 42.0",
        routed({"mcp-param-region": "r", "mcp-param-zone": "42.0"}, region="r", zone=42),
    ),
    ("a null argument has no header", routed({"mcp-param-region": "r"}, region="r", zone=None)),
    (
        "42.0 is an integer, sent as 42",
        routed({"mcp-param-region": "r", "mcp-param-zone": "42"}, region="r", zone=42.0),
    ),
    ("an unmarked argument has none", routed({"mcp-param-region": "r"}, region="r", query="q")),
    (
        "undeclared Mcp-Param-* ignored",
        routed({"mcp-param-region": "r", "mcp-param-x": "1"}, region="r"),
    ),
]

#: (case, the call and its headers) -> refused with 400 and HeaderMismatch before the tool runs.
PARAM_HEADERS_REFUSED: list[tuple[str, tuple[Any, Any]]] = [
    ("missing", routed(region="eu-west1")),
    ("differs", routed({"mcp-param-region": "eu-west2"}, region="eu-west1")),
    ("differs in case", routed({"mcp-param-region": "EU-WEST1"}, region="eu-west1")),
    ("not decoded", routed({"mcp-param-region": "Zürich".encode()}, region="Zürich")),  # type: ignore[dict-item]
    ("bad sentinel", routed({"mcp-param-region": "=?base64?***?="}, region="r")),
    (
        "integer differs",
        routed({"mcp-param-region": "r", "mcp-param-zone": "43"}, region="r", zone=42),
    ),
    (
        "integer not a number",
        routed({"mcp-param-region": "r", "mcp-param-zone": "4_2"}, region="r", zone=42),
    ),
    (
        "boolean spelled 1",
        routed({"mcp-param-region": "r", "mcp-param-dry-run": "1"}, region="r", dry_run=True),
    ),
    (
        "header without argument",
        routed({"mcp-param-region": "r", "mcp-param-zone": "1"}, region="r"),
    ),
    (
        "5,000 digits",
        routed({"mcp-param-region": "r", "mcp-param-zone": "9" * 5000}, region="r", zone=42),
    ),
]


@pytest.mark.parametrize(
    ("case", "call"), PARAM_HEADERS_KEPT, ids=[c for c, _ in PARAM_HEADERS_KEPT]
)
async def test_mirrored_arguments_that_match_are_served(case: str, call: tuple[Any, Any]) -> None:
    calls: list[dict[str, Any]] = []
    message, headers = call
    async with serve(routed_server(calls)) as served:
        response = await post(served, message, headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"] == [{"type": "text", "text": "routed"}]
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("case", "call"), PARAM_HEADERS_REFUSED, ids=[c for c, _ in PARAM_HEADERS_REFUSED]
)
async def test_mirrored_arguments_that_do_not_match_are_400(
    case: str, call: tuple[Any, Any]
) -> None:
    calls: list[dict[str, Any]] = []
    message, headers = call
    async with serve(routed_server(calls)) as served:
        response = await post(served, message, headers)
    body = refused(response, 400, -32020, "HeaderMismatchError")
    assert "Mcp-Param-" in body["error"]["message"]
    assert calls == []


@pytest.mark.parametrize(
    "call",
    [
        routed(region=["r"]),
        routed(region={"r": 1}),
        routed({"mcp-param-region": "r"}, region="r", zone=4.5),
    ],
)
async def test_an_argument_with_no_header_form_is_left_to_argument_validation(
    call: tuple[Any, Any],
) -> None:
    # A list where a string belongs has no header to mirror: not a HeaderMismatch, but the
    # tool's own invalid-arguments answer, as in every other era.
    calls: list[dict[str, Any]] = []
    message, headers = call
    async with serve(routed_server(calls)) as served:
        response = await post(served, message, headers)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True
    assert "Invalid arguments" in result["content"][0]["text"]
    assert calls == []


async def test_headers_are_not_judged_before_the_version_and_the_arguments_shape() -> None:
    unsupported = routed(region="r")[0]
    unsupported["params"]["_meta"] = {**META, VERSION: "2027-01-01"}
    headers = {**mirrored(unsupported), "mcp-protocol-version": "2027-01-01"}
    not_an_object = modern_call("route")
    not_an_object["params"]["arguments"] = ["r"]
    async with serve(routed_server([])) as served:
        version = await post(served, unsupported, headers)
        shape = await post(served, not_an_object, mirrored(not_an_object))
    refused(version, 400, -32022, "UnsupportedProtocolVersionError")
    assert shape.json()["error"]["code"] == -32602


async def test_a_mirrored_header_sent_twice_is_400() -> None:
    calls: list[dict[str, Any]] = []
    message, headers = routed({"mcp-param-region": "r"}, region="r")
    async with serve(routed_server(calls)) as served:
        response = await post(served, message, [*headers.items(), ("Mcp-Param-Region", "r")])
    refused(response, 400, -32020, "HeaderMismatchError")
    assert calls == []


async def test_the_handshake_era_has_no_mirrored_headers_to_check() -> None:
    calls: list[dict[str, Any]] = []
    async with serve(routed_server(calls)) as served:
        client = served.client()
        assert (await client.initialize()).status == 200
        called = await client.call("route", {"region": "eu-west1"})
        listed = await client.request("tools/list")
    assert called.status == 200
    assert calls == [{"region": "eu-west1", "zone": None, "dry_run": False, "query": ""}]
    schema = listed.result["tools"][0]["inputSchema"]
    assert schema["properties"]["region"]["x-mcp-header"] == "Region"
    assert schema["properties"]["zone"] == {
        "description": "Zone",
        "type": "integer",
        "x-mcp-header": "Zone",
    }


async def test_a_plain_name_may_come_encoded_but_a_sentinel_lookalike_may_not_come_plain() -> None:
    lookalike = modern_call("=?base64?literal?=")
    async with serve() as served:
        encoded = await post(
            served,
            CALL,
            {**GOOD, "mcp-name": "=?base64?Y2FsY3VsYXRvci5hZGQ=?="},  # calculator.add
        )
        plain = await post(
            served, lookalike, {**mirrored(lookalike), "mcp-name": "=?base64?literal?="}
        )
    assert encoded.status_code == 200
    assert encoded.json()["result"]["structuredContent"] == {"result": 3}
    refused(plain, 400, -32020, "HeaderMismatchError")  # "literal" is no base64: malformed


@pytest.mark.parametrize(
    ("case", "params"),
    [
        ("no _meta", {}),
        ("no client capabilities", {"_meta": {VERSION: MODERN}}),
        ("capabilities not an object", {"_meta": {VERSION: MODERN, CAPS: []}}),
        ("version not a string", {"_meta": {VERSION: 20260728, CAPS: {}}}),
    ],
)
async def test_missing_required_meta_fields_are_400_invalid_params(
    case: str, params: dict[str, Any]
) -> None:
    # spec 2026-07-28, basic (_meta): -32602, "on HTTP, the response status MUST be 400".
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
    headers = {**POST_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/list"}
    async with serve() as served:
        response = await post(served, message, headers)
    refused(response, 400, -32602, "InvalidParamsError")


async def test_unsupported_version_is_400_and_names_the_supported_ones() -> None:
    future = {
        **modern_request("tools/list"),
        "params": {"_meta": {VERSION: "2027-01-01", CAPS: {}}},
    }
    headers = {**POST_HEADERS, "mcp-protocol-version": "2027-01-01", "mcp-method": "tools/list"}
    narrow = Server("handshake-only", versions=HANDSHAKE_VERSIONS)
    async with serve() as served:
        response = await post(served, future, headers)
    async with serve(narrow) as served:
        not_here = await post(
            served, modern_request("tools/list"), mirrored(modern_request("tools/list"))
        )
    body = refused(response, 400, -32022, "UnsupportedProtocolVersionError")
    assert body["error"]["data"]["requested"] == "2027-01-01"
    assert MODERN in body["error"]["data"]["supported"]
    body = refused(not_here, 400, -32022, "UnsupportedProtocolVersionError")
    assert body["error"]["data"] == {"supported": list(HANDSHAKE_VERSIONS), "requested": MODERN}


async def test_unknown_method_is_404_with_method_not_found() -> None:
    message = modern_request("widgets/list")
    async with serve() as served:
        response = await post(served, message, mirrored(message))
        client = served.client()
        assert (await client.initialize()).status == 200
        handshake_era = await client.request("widgets/list")
    refused(response, 404, -32601, "MethodNotFoundError")
    # The 404 is 2026-07-28's rule: a handshake-era session keeps its 200.
    assert handshake_era.status == 200
    assert handshake_era.last["error"]["code"] == -32601


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "initialize"])
async def test_handshake_era_methods_are_404_under_2026_07_28(method: str) -> None:
    # 2026-07-28 removed them; a handshake-era session on the same server still has them.
    message = modern_request(method)
    async with serve() as served:
        response = await post(served, message, mirrored(message))
        client = served.client()
        assert (await client.initialize()).status == 200
        handshake_era = await client.request("ping")
    refused(response, 404, -32601, "MethodNotFoundError")
    assert handshake_era.status == 200
    assert handshake_era.last["result"] == {}


async def test_the_name_bearing_methods_need_mcp_name_even_for_an_unknown_name() -> None:
    message = modern_request("prompts/get", name="greeting")
    async with serve() as served:
        missing = await post(served, message, mirrored(message))
        named = await post(served, message, {**mirrored(message), "mcp-name": "greeting"})
    refused(missing, 400, -32020, "HeaderMismatchError")
    # With the header the request reaches the prompts, which have no "greeting".
    assert refused(named, 200, -32602, "InvalidParamsError")["error"]["data"] == {
        "name": "greeting"
    }


async def test_a_modern_header_on_a_batch_or_a_body_without_headers_is_refused() -> None:
    batch = [modern_request("tools/list", 1), modern_request("tools/list", 2)]
    async with serve(stateless=True) as served:
        batched = await post(served, batch, mirrored(batch[0]))
        bare = await post(served, modern_request("tools/list"), POST_HEADERS)
        notification = await post(
            served,
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
            {**POST_HEADERS, "mcp-protocol-version": MODERN},
        )
    assert batched.status_code == 400
    assert batched.json()["error"]["code"] == -32600
    refused(bare, 400, -32020, "HeaderMismatchError")  # the body's version, no header
    # This revision defines no header rules for notifications: accepted as before.
    assert notification.status_code == 202


# -- trio-mcp's client -------------------------------------------------------------------------


@dataclass
class Recorded:
    """What a recording server saw: one (method, headers, body) per HTTP request."""

    url: str
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)

    def posts(self) -> list[tuple[dict[str, str], Any]]:
        return [(h, b) for m, h, b in self.requests if m == "POST"]


@contextlib.asynccontextmanager
async def recording(server: Server) -> AsyncIterator[Recorded]:
    """`server` over HTTP, through an ASGI wrapper that keeps every request's headers and body."""
    app = http_app(server)
    recorded = Recorded("")

    async def wrapper(scope: Any, receive: Callable[[], Awaitable[Any]], send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        method = scope["method"]
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in scope["headers"]}
        index = len(recorded.requests)
        recorded.requests.append((method, headers, None))
        chunks: list[bytes] = []

        async def tee() -> Any:
            message = await receive()
            chunks.append(message.get("body", b""))
            if message["type"] == "http.request" and not message.get("more_body"):
                body = b"".join(chunks)
                recorded.requests[index] = (method, headers, json.loads(body) if body else None)
            return message

        await app(scope, tee, send)

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(app.run)
            urls = await nursery.start(
                lambda task_status: hypercorn_serve(
                    wrapper, config, shutdown_trigger=stop.wait, task_status=task_status
                )
            )
            recorded.url = urls[0] + "/mcp"
            yield recorded
            stop.set()
            nursery.cancel_scope.cancel()


async def test_trio_mcp_client_sends_the_request_metadata_headers() -> None:
    gate = Gate()
    async with (
        recording(gate.server()) as recorded,
        open_client(recorded.url, protocol_version=MODERN) as client,
    ):
        await client.list_tools()
        assert (await client.call_tool("calculator.add", {"a": 1, "b": 2})).text == "3.0"
        with pytest.raises(RequestError) as unknown:
            await client.call_tool("Hello, 世界")
        with pytest.raises(RequestError) as no_method:
            await client.request("widgets/list")
        # A cancelled call closes its stream, which is the cancellation; no notification.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.call_tool, "test.wait")
            await gate.started.wait()
            nursery.cancel_scope.cancel()
        with trio.fail_after(TIMEOUT):
            await gate.cancelled.wait()
    assert unknown.value.code == -32602  # the headers matched: the tool is unknown
    assert no_method.value.code == -32601  # the 404 is read as the JSON-RPC error it carries
    assert "(HTTP 404)" in str(no_method.value)
    posts = recorded.posts()
    methods = [body["method"] for _, body in posts]
    assert methods == [
        "server/discover",
        "tools/list",
        "tools/call",
        "tools/call",
        "widgets/list",
        "tools/call",
    ]
    for headers, body in posts:
        assert headers["mcp-protocol-version"] == MODERN == body["params"]["_meta"][VERSION]
        assert headers["mcp-method"] == body["method"]
        assert CAPS in body["params"]["_meta"]
        if body["method"] == "tools/call":
            assert (
                decode_value(headers["mcp-name"].encode(), encoded=True) == body["params"]["name"]
            )
        else:
            assert "mcp-name" not in headers
    assert posts[3][0]["mcp-name"] == "=?base64?SGVsbG8sIOS4lueVjA==?="


async def test_trio_mcp_client_sends_no_modern_headers_to_a_handshake_session() -> None:
    async with (
        recording(demo_tools.build_server()) as recorded,
        open_client(recorded.url) as client,
    ):
        await client.call_tool("calculator.add", {"a": 1, "b": 2})
    for headers, _ in recorded.posts():
        assert "mcp-method" not in headers
        assert "mcp-name" not in headers


async def test_trio_mcp_client_falls_back_to_the_handshake_on_the_400_unsupported_version() -> None:
    narrow = Server("handshake-only", versions=HANDSHAKE_VERSIONS)
    narrow.add_tools(demo_tools.calculator)
    async with serve(narrow) as served, open_client(served.url, protocol_version=MODERN) as client:
        assert client.protocol_version == HANDSHAKE_VERSIONS[0]
        assert client.session_id is not None
        assert (await client.call_tool("calculator.add", {"a": 1, "b": 2})).text == "3.0"


# -- the official SDK's client -----------------------------------------------------------------


async def test_sdk_client_pinned_to_2026_sends_what_the_server_checks() -> None:
    # The SDK runs on asyncio in a worker thread, against the server in this trio loop.
    from mcp import Client  # noqa: PLC0415 - the SDK loads only for this test
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415

    outcome: dict[str, Any] = {}

    async def main(url: str) -> None:
        async with Client(url, mode=MODERN) as client:
            outcome["version"] = client.protocol_version
            added = await client.call_tool("calculator.add", {"a": 5, "b": 3})
            outcome["added"] = added.structured_content
            try:
                await client.call_tool("Hello, 世界", {})
            except MCPError as exc:
                outcome["unknown"] = (exc.error.code, exc.error.message)

    async with recording(demo_tools.build_server()) as recorded:
        await trio.to_thread.run_sync(
            lambda: asyncio.run(asyncio.wait_for(main(recorded.url), TIMEOUT))
        )
    assert outcome["version"] == MODERN
    assert outcome["added"] == {"result": 8}
    # Its sentinel-encoded Mcp-Name decoded to the body's name: an unknown tool, no mismatch.
    assert outcome["unknown"] == (-32602, "Unknown tool: Hello, 世界")
    for headers, body in recorded.posts():
        assert headers["mcp-protocol-version"] == MODERN
        assert headers["mcp-method"] == body["method"]


async def test_sdk_client_mirrors_the_arguments_this_server_marks() -> None:
    # Interop of x-mcp-header both ways: the official client reads Param(header=...) from our
    # tools/list and sends Mcp-Param-* headers that our server checks against the body.
    from mcp import Client  # noqa: PLC0415 - the SDK loads only for this test

    calls: list[dict[str, Any]] = []
    outcome: dict[str, Any] = {}

    async def main(url: str) -> None:
        async with Client(url, mode=MODERN) as client:
            await client.list_tools()
            routed = await client.call_tool("route", {"region": "Zürich", "zone": 7})
            outcome["text"] = routed.content[0].text  # type: ignore[union-attr]

    async with recording(routed_server(calls)) as recorded:
        await trio.to_thread.run_sync(
            lambda: asyncio.run(asyncio.wait_for(main(recorded.url), TIMEOUT))
        )
    assert outcome["text"] == "routed"
    assert calls == [{"region": "Zürich", "zone": 7, "dry_run": False, "query": ""}]
    (call_headers,) = [h for h, body in recorded.posts() if body["method"] == "tools/call"]
    assert decode_value(call_headers["mcp-param-region"].encode(), encoded=True) == "Zürich"
    assert call_headers["mcp-param-zone"] == "7"
    assert "mcp-param-dry-run" not in call_headers


async def test_trio_mcp_client_mirrors_what_the_server_marks_even_before_listing() -> None:
    # A call before any tools/list goes without Mcp-Param-* headers: the server refuses it with
    # HeaderMismatch before the tool runs, the client lists the tools and sends it once more.
    calls: list[dict[str, Any]] = []
    async with (
        recording(routed_server(calls)) as recorded,
        open_client(recorded.url, protocol_version=MODERN) as client,
    ):
        first = await client.call_tool("route", {"region": "eu-west1", "dry_run": True})
        second = await client.call_tool("route", {"region": " padded ", "zone": 3})
    assert (first.text, second.text) == ("routed", "routed")
    assert calls == [
        {"region": "eu-west1", "zone": None, "dry_run": True, "query": ""},
        {"region": " padded ", "zone": 3, "dry_run": False, "query": ""},
    ]
    methods = [body["method"] for _, body in recorded.posts()]
    assert methods == ["server/discover", "tools/call", "tools/list", "tools/call", "tools/call"]
    headers = [h for h, body in recorded.posts() if body["method"] == "tools/call"]
    assert not any(name.startswith("mcp-param-") for name in headers[0])
    assert (headers[1]["mcp-param-region"], headers[1]["mcp-param-dry-run"]) == ("eu-west1", "true")
    assert headers[2]["mcp-param-region"] == "=?base64?IHBhZGRlZCA=?="
    assert headers[2]["mcp-param-zone"] == "3"


# -- in-flight bounds --------------------------------------------------------------------------


async def test_stateless_requests_in_flight_are_bounded_server_wide_with_503() -> None:
    gate = Gate(expected=2)
    async with serve(gate.server(), stateless=True, max_in_flight_sessionless=2) as served:
        old = served.client("2025-06-18")
        modern = served.client(MODERN)
        replies: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def wait(client: McpHttp, meta: dict[str, Any]) -> None:
                replies.append(await client.call("test.wait", **meta))

            nursery.start_soon(wait, old, {})
            nursery.start_soon(wait, modern, META)
            await gate.all_in.wait()
            over = await old.call("calculator.add", {"a": 1, "b": 1})
            over_modern = await modern.call("calculator.add", {"a": 1, "b": 1}, **META)
            notified = await old.notify("notifications/initialized")
            gate.release.set()
        after = await old.call("calculator.add", {"a": 1, "b": 1})
    for response in (over.response, over_modern.response):
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        validate_server_message(response.json(), MODERN)
    assert notified.status == 202  # notifications hold no slot
    assert [r.status for r in replies] == [200, 200]
    assert after.status == 200


async def test_sessionless_bound_holds_under_a_burst() -> None:
    count, limit = 20, 3
    gate = Gate(expected=limit)
    async with serve(gate.server(), stateless=True, max_in_flight_sessionless=limit) as served:
        statuses: list[int] = []
        refused_all = trio.Event()
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                reply = await served.client(MODERN).call("test.wait", **META)
                statuses.append(reply.status)
                if len(statuses) == count - limit:
                    refused_all.set()

            for _ in range(count):
                nursery.start_soon(call)
            # Every call over the bound comes back refused while the others wait inside.
            await refused_all.wait()
            await gate.all_in.wait()
            assert statuses == [503] * (count - limit)
            assert gate.entered == limit
            gate.release.set()
    assert sorted(statuses) == [200] * limit + [503] * (count - limit)


async def test_modern_requests_in_a_stateful_server_share_the_server_wide_bound() -> None:
    gate = Gate()
    async with serve(gate.server(), max_in_flight_sessionless=1) as served:
        session = served.client()
        assert (await session.initialize()).status == 200
        modern = served.client(MODERN)
        async with trio.open_nursery() as nursery:

            async def wait() -> None:
                assert (await modern.call("test.wait", **META)).status == 200

            nursery.start_soon(wait)
            await gate.started.wait()
            over = await modern.call("calculator.add", {"a": 1, "b": 1}, **META)
            in_session = await session.call("calculator.add", {"a": 1, "b": 1})
            gate.release.set()
    assert over.status == 503
    assert in_session.status == 200  # requests in a session are bounded per session instead


async def read_event(lines: Any) -> tuple[str, str]:
    event, data, blank = [await lines.__anext__() for _ in range(3)]
    assert event.startswith("event: ")
    assert data.startswith("data: ")
    assert blank == ""
    return event.removeprefix("event: "), data.removeprefix("data: ")


async def test_legacy_sse_bounds_requests_in_flight_per_session_with_429() -> None:
    gate = Gate()
    async with (
        serve(gate.server(), max_in_flight_per_session=2) as served,
        served.http.stream("GET", served.base + "/sse") as stream,
    ):
        lines = stream.aiter_lines()
        _, endpoint = await read_event(lines)
        url = served.base + endpoint

        async def post_(message: Any) -> int:
            return (await served.http.post(url, json=message)).status_code

        def call(request_id: int, name: str) -> dict[str, Any]:
            params = {"name": name, "arguments": {"a": 1, "b": 1} if "add" in name else {}}
            return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()}
        assert await post_(init) == 202
        assert json.loads((await read_event(lines))[1])["id"] == 1
        assert await post_({"jsonrpc": "2.0", "method": "notifications/initialized"}) == 202
        assert await post_(call(2, "test.wait")) == 202
        await gate.started.wait()
        assert await post_(call(3, "test.wait")) == 202
        # Two in flight: a third request is refused, a notification is not.
        over = await served.http.post(url, json=call(4, "calculator.add"))
        batch = await served.http.post(url, json=[call(5, "calculator.add")])
        assert await post_({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}) == 202
        # A cancelled request is never answered: it frees its slot at once.
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
        assert await post_(cancel) == 202
        # A duplicate of id 2 is answered with an error, which settles the duplicate alone.
        assert await post_(call(2, "calculator.add")) == 202
        duplicate = json.loads((await read_event(lines))[1])
        assert await post_(call(6, "test.wait")) == 202
        still_full = await served.http.post(url, json=call(9, "calculator.add"))
        gate.release.set()
        released = {json.loads((await read_event(lines))[1])["id"] for _ in range(2)}
        # Both slots free again.
        assert await post_(call(7, "calculator.add")) == 202
        assert await post_(call(8, "calculator.add")) == 202
        answered = {json.loads((await read_event(lines))[1])["id"] for _ in range(2)}
    assert over.status_code == 429
    assert over.headers["retry-after"] == "1"
    assert over.json()["error"]["code"] == -32600
    assert batch.status_code == 429
    assert duplicate["id"] == 2
    assert duplicate["error"]["code"] == -32600
    assert still_full.status_code == 429
    assert released == {2, 6}
    assert answered == {7, 8}
