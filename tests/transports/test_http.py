"""The HTTP transports over real loopback sockets: Streamable HTTP at /mcp, legacy SSE at /sse.

Every server here is `serve_http` on port 0 in the test's nursery (Hypercorn's trio worker), and
every client is plain httpx under trio, so the tests see the bytes on the wire: status codes,
headers, SSE framing. Tools that must be "in the middle of a call" wait on a `Gate` event, so no
test sleeps to wait for something to happen; the only sleeps let an idle timeout elapse.
The official SDK's HTTP clients are in `tests/interop/test_sdk_http.py`.
"""

from __future__ import annotations

import json
import string
from typing import Any

import httpx
import pytest
import trio
import trio.testing

import demo_tools
from tests.helpers import DEMO_TOOLS, LATEST, MODERN, init_params
from tests.http_helpers import (
    ACCEPT,
    POST_HEADERS,
    Gate,
    McpHttp,
    Served,
    decode,
    host_port,
    parse_response,
    parse_sse,
    read_to_eof,
    serve,
)
from tests.schema_check import validate_server_message, validate_transcript
from tests.timing import LONG_GRACE, scaled
from trio_mcp import Server, Timeouts
from trio_mcp._run import serve_http
from trio_mcp.http import MemoryEventStore
from trio_mcp.transports.http.headers import request_headers

BATTLE = "wh40k.battle_simulation"
#: Bounds one wait inside a test (the whole test is bounded by `serve`).
TIMEOUT = scaled(60)
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def session(served: Served, version: str = LATEST) -> McpHttp:
    client = served.client(version)
    reply = await client.initialize()
    assert reply.status == 200, reply.response.text
    return client


def assert_refused(
    response: httpx.Response, status: int, code: int = -32600, request_id: Any = None
) -> dict[str, Any]:
    """A refusal: the status, and a JSON-RPC error as the body (id null unless it was readable)."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["id"] == request_id
    assert body["error"]["code"] == code
    validate_server_message(body, LATEST)
    return body


# -- 200 / 202 ---------------------------------------------------------------------------------


async def test_initialize_and_call_answer_200_json() -> None:
    async with serve() as served:
        client = served.client()
        init = await client.initialize()
        assert init.status == 200
        assert init.kind == "application/json"
        assert init.result["protocolVersion"] == LATEST
        assert init.result["serverInfo"]["name"] == "trio-mcp-demo"
        assert client.session_id is not None

        listed = await client.request("tools/list")
        assert listed.status == 200
        assert len(listed.result["tools"]) == len(DEMO_TOOLS)

        added = await client.call("calculator.add", {"a": 2, "b": 3})
        assert added.status == 200
        assert added.kind == "application/json"
        assert added.last["id"] == client.sent[-1]["id"]
        assert added.result["structuredContent"] == {"result": 5}
        # Only initialize's answer names the session.
        assert "mcp-session-id" not in added.response.headers


async def test_progress_goes_on_an_sse_stream_before_the_response() -> None:
    async with serve() as served:
        client = await session(served)
        request = client.make_request(
            "tools/call", {"name": BATTLE, "arguments": {}, "_meta": {"progressToken": "p"}}
        )
        response = await served.http.post(served.url, headers=client.headers(), json=request)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"].startswith("no-cache")
    # The exact framing: a priming event (an id, `retry:`, empty data: SEP-1699), then per
    # message `event: message`, its id, `data: <one JSON line>`, blank line.
    blocks = response.text.split("\n\n")
    assert blocks[-1] == ""
    assert blocks[0] == "id: 1-1\nretry: 1000\ndata: "
    for n, block in enumerate(blocks[1:-1], start=2):
        event, event_id, data = block.split("\n")
        assert event == "event: message"
        assert event_id == f"id: 1-{n}"
        assert data.startswith("data: {")
        assert data.endswith("}")
    messages = parse_sse(response.text)
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [None]
    assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "p" for m in messages[:3])
    assert messages[-1]["id"] == request["id"]
    assert "structuredContent" in messages[-1]["result"]
    for message in messages:
        validate_server_message(message, LATEST, method="tools/call")


async def test_notifications_and_responses_are_accepted_with_202_and_no_body() -> None:
    async with serve() as served:
        client = await session(served)
        notified = await client.notify("notifications/roots/list_changed")
        responded = await client.post({"jsonrpc": "2.0", "id": 77, "result": {}})
        errored = await client.post(
            {"jsonrpc": "2.0", "id": 78, "error": {"code": -1, "message": "no"}}
        )
    for reply in (notified, responded, errored):
        assert reply.status == 202
        assert reply.response.content == b""
        assert reply.response.headers["content-length"] == "0"


async def test_json_answers_carry_their_length_and_ids_in_flight_stay_reserved() -> None:
    # Requests that need no waiting (an inline tool here) are answered without a task of
    # their own; they must still refuse an id that a waiting call of the session holds.
    gate = Gate()
    async with serve(gate.server()) as served:
        client = await session(served)
        waiting = client.make_request("tools/call", {"name": "test.wait", "arguments": {}})
        async with trio.open_nursery() as nursery:
            replies: list[Any] = []

            async def first() -> None:
                replies.append(await client.post(waiting))

            nursery.start_soon(first)
            await gate.started.wait()
            clash = await client.post(
                {
                    "jsonrpc": "2.0",
                    "id": waiting["id"],
                    "method": "tools/call",
                    "params": {"name": "calculator.add", "arguments": {"a": 1, "b": 2}},
                }
            )
            gate.release.set()
        added = await client.call("calculator.add", {"a": 1, "b": 2})
    assert clash.status == 200
    assert clash.last["error"]["code"] == -32600
    assert replies[0].result["content"][0]["text"] == "released"
    assert added.result["structuredContent"] == {"result": 3}
    for reply in (clash, replies[0], added):
        assert reply.kind == "application/json"
        assert int(reply.response.headers["content-length"]) == len(reply.response.content)


# -- 400 ---------------------------------------------------------------------------------------


async def test_missing_session_id_is_400() -> None:
    async with serve() as served:
        await session(served)
        response = await served.http.post(served.url, headers=POST_HEADERS, json=PING)
    assert_refused(response, 400)


async def test_unsupported_protocol_version_header_is_400() -> None:
    async with serve() as served:
        client = await session(served)
        response = await served.http.post(
            served.url, headers=client.headers(**{"mcp-protocol-version": "1999-01-01"}), json=PING
        )
        ok = await client.request("ping")
    body = assert_refused(response, 400)
    assert "1999-01-01" in body["error"]["message"]
    assert ok.status == 200


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700, None),
        (b"", -32700, None),
        # A readable id is echoed, as on stdio.
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, 1),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
        (b'"just a string"', -32600, None),
    ],
)
async def test_malformed_or_invalid_message_is_400_with_a_jsonrpc_error(
    body: bytes, code: int, request_id: Any
) -> None:
    async with serve() as served:
        client = await session(served)
        response = await served.http.post(served.url, headers=client.headers(), content=body)
        ok = await client.request("ping")
    assert_refused(response, 400, code, request_id)
    assert ok.status == 200  # a bad message never kills a session


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 1}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}',
        b'{"jsonrpc": "2.0", "id": 1, "error": "boom"}',
        b'{"jsonrpc": "1.0", "id": 1, "result": {}}',
    ],
)
async def test_a_malformed_response_is_400_with_an_error_naming_no_request(body: bytes) -> None:
    """A response is never answered (JSON-RPC): the refusal's error has no id at all (spec
    2025-11-25, Streamable HTTP: "a JSON-RPC error response that has no id")."""
    async with serve() as served:
        client = await session(served)
        response = await served.http.post(served.url, headers=client.headers(), content=body)
        ok = await client.request("ping")
    assert response.status_code == 400, response.text
    refused = response.json()
    assert "id" not in refused
    assert refused["error"]["code"] == -32600
    assert refused["error"]["message"].startswith("Invalid Request: malformed response: ")
    validate_server_message(refused, LATEST)
    assert ok.status == 200


# -- 401 / 403 ---------------------------------------------------------------------------------


async def test_bearer_token_is_required_when_set() -> None:
    async with serve(bearer_token="s3cret") as served:
        anonymous = served.client()
        refused = await anonymous.initialize()
        wrong = await served.client(authorization="Bearer guess").initialize()
        basic = await served.client(authorization="Basic s3cret").initialize()
        lowercase = await served.client(authorization="bearer s3cret").initialize()
        right = served.client(authorization="Bearer s3cret")
        accepted = await right.initialize()
        called = await right.call("calculator.add", {"a": 1, "b": 1})
        get = await served.http.get(served.base + "/sse")
    assert lowercase.status == 200  # the scheme name is case-insensitive
    for reply in (refused, wrong, basic):
        assert_refused(reply.response, 401)
        assert reply.response.headers["www-authenticate"].startswith("Bearer")
    assert get.status_code == 401  # the legacy transport is guarded too
    assert accepted.status == 200
    assert called.result["structuredContent"] == {"result": 2}


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://evil.example", 403),
        ("http://localhost.evil.example", 403),
        ("null", 403),
        ("http://localhost:1234", 200),
        ("http://127.0.0.1:8080", 200),
        ("https://[::1]:443", 200),
    ],
)
async def test_origin_is_checked_against_the_allow_list(origin: str, status: int) -> None:
    async with serve() as served:
        reply = await served.client(origin=origin).initialize()
    if status == 200:
        assert reply.status == 200
    else:
        assert_refused(reply.response, status)


async def test_extra_allowed_origin() -> None:
    async with serve(allowed_origins=("https://app.example",)) as served:
        ok = await served.client(origin="https://app.example").initialize()
        local = await served.client(origin="http://localhost:1234").initialize()
    assert ok.status == 200
    assert_refused(local.response, 403)


# -- 421: Host (DNS-rebinding guard) --------------------------------------------------------------

GOOD_HOSTS = [
    "127.0.0.1:{port}",
    "localhost:{port}",
    "LocalHost:{port}",
    "[::1]:{port}",
    "[0:0::1]:{port}",
]
BAD_HOSTS = [
    "evil.example:{port}",  # a rebinding page's own name
    "localhost.evil.example:{port}",
    "localhost:{other}",  # another port: another server
    "localhost",  # no port: port 80
    "127.0.0.2:{port}",  # loopback, but neither this server's address nor a loopback name
    "127.0.0.1:{port}:1",
    "[::1:{port}",
    "::1:{port}",  # an IPv6 address needs brackets
    "localhost:x{port}",
]


@pytest.mark.parametrize("host", GOOD_HOSTS + BAD_HOSTS)
async def test_host_must_name_this_server(host: str) -> None:
    async with serve() as served:
        port = int(served.base.rpartition(":")[2])
        value = host.format(port=port, other=port + 1)
        posted = await served.client(host=value).initialize()
        # The legacy transport's stream is guarded alike.
        async with served.http.stream("GET", served.base + "/sse", headers={"host": value}) as sse:
            if sse.status_code != 200:
                await sse.aread()
    if host in GOOD_HOSTS:
        assert posted.status == 200
        assert sse.status_code == 200
    else:
        body = assert_refused(posted.response, 421)
        assert repr(value) in body["error"]["message"]
        assert_refused(sse, 421)


async def test_allowed_hosts_name_this_server_too() -> None:
    async with serve(allowed_hosts=("mcp.example", "api.example:8443")) as served:
        port = int(served.base.rpartition(":")[2])
        statuses = {}
        for host in [
            f"mcp.example:{port}",
            "mcp.example",  # any port
            "api.example:8443",
            f"api.example:{port}",  # only that port
            f"127.0.0.1:{port}",  # the server's own address still
            f"evil.example:{port}",
        ]:
            statuses[host] = (await served.client(host=host).initialize()).status
    assert statuses == {
        f"mcp.example:{port}": 200,
        "mcp.example": 200,
        "api.example:8443": 200,
        f"api.example:{port}": 421,
        f"127.0.0.1:{port}": 200,
        f"evil.example:{port}": 421,
    }
    async with serve(allowed_hosts=("*",)) as served:
        assert (await served.client(host="anything.example").initialize()).status == 200


async def test_a_request_without_host_is_refused() -> None:
    async with serve() as served:
        ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        head = (
            f"POST /mcp HTTP/1.0\r\nAccept: {ACCEPT}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(ping)}\r\n\r\n"
        ).encode()
        stream = await trio.open_tcp_stream(*host_port(served))
        async with stream:
            await stream.send_all(head + ping)
            answer = parse_response(await read_to_eof(stream))
    assert answer.status == 421
    assert "no Host header" in json.loads(answer.body)["error"]["message"]


async def test_a_wildcard_bind_needs_allowed_hosts() -> None:
    with pytest.raises(ValueError, match="allowed_hosts"):
        await serve_http(demo_tools.build_server(), host="0.0.0.0", port=0)
    with pytest.raises(ValueError, match="allowed_hosts"):
        await serve_http(demo_tools.build_server(), host="::", port=0)


async def test_host_and_origin_from_a_rebinding_page_are_refused() -> None:
    # What a page at evil.example sends once its name points at this machine.
    async with serve() as served:
        port = int(served.base.rpartition(":")[2])
        page = served.client(host=f"evil.example:{port}", origin=f"http://evil.example:{port}")
        refused = await page.initialize()
        local = served.client(origin=f"http://127.0.0.1:{port}")
        accepted = await local.initialize()
    assert_refused(refused.response, 421)
    assert accepted.status == 200


# -- 404 ---------------------------------------------------------------------------------------


async def test_unknown_session_and_unknown_path_are_404() -> None:
    async with serve() as served:
        await session(served)
        stranger = served.client()
        stranger.session_id = "not-a-session"
        unknown = await stranger.request("ping")
        path = await served.http.post(served.base + "/nope", headers=POST_HEADERS, json=PING)
        root = await served.http.get(served.base + "/")
    assert_refused(unknown.response, 404)
    assert_refused(path, 404)
    assert_refused(root, 404)


async def test_delete_ends_the_session() -> None:
    async with serve() as served:
        client = await session(served)
        other = await session(served)
        deleted = await client.delete()
        after = await client.request("ping")
        again = await client.delete()
        untouched = await other.request("ping")
    assert deleted.status_code in (200, 204)
    assert_refused(after.response, 404)
    assert_refused(again, 404)
    assert untouched.status == 200


async def test_delete_without_session_id_is_400() -> None:
    async with serve() as served:
        await session(served)
        response = await served.http.delete(served.url, headers=POST_HEADERS)
    assert_refused(response, 400)


# -- 405 / 406 / 413 / 415 ---------------------------------------------------------------------


async def test_put_on_the_endpoint_is_405_with_allow() -> None:
    async with serve() as served:
        client = await session(served)
        put = await served.http.put(served.url, headers=client.headers(), json=PING)
        sse_post = await served.http.post(served.base + "/sse", headers=POST_HEADERS, json=PING)
        messages_get = await served.http.get(served.base + "/messages?sessionId=x")
    assert_refused(put, 405)
    allowed = {m.strip() for m in put.headers["allow"].split(",")}
    assert allowed == {"GET", "POST", "DELETE"}  # GET: the session's server-to-client stream
    assert_refused(sse_post, 405)
    assert sse_post.headers["allow"] == "GET"
    assert_refused(messages_get, 405)
    assert messages_get.headers["allow"] == "POST"


@pytest.mark.parametrize(
    "accept",
    ["application/json", "text/event-stream", "text/html", None],
)
async def test_accept_must_list_json_and_event_stream(accept: str | None) -> None:
    async with serve() as served:
        client = await session(served)
        headers = client.headers()
        if accept is None:
            del headers["accept"]
            request = served.http.build_request("POST", served.url, headers=headers, json=PING)
            del request.headers["accept"]  # httpx would add */*
            response = await served.http.send(request)
        else:
            headers["accept"] = accept
            response = await served.http.post(served.url, headers=headers, json=PING)
        both = await client.request("ping", accept="application/json;q=0.9, text/event-stream")
    assert_refused(response, 406)
    assert both.status == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_content_type_must_be_json(content_type: str | None) -> None:
    async with serve() as served:
        client = await session(served)
        headers = client.headers()
        del headers["content-type"]
        if content_type is not None:
            headers["content-type"] = content_type
        response = await served.http.post(served.url, headers=headers, content=json.dumps(PING))
        with_charset = {"content-type": "application/json; charset=utf-8"}
        charset = await client.post(client.make_request("ping"), **with_charset)
    assert_refused(response, 415)
    assert charset.status == 200


async def test_body_over_the_limit_is_413() -> None:
    async with serve(max_body_bytes=1000) as served:
        client = await session(served)
        big = client.make_request("tools/call", {"name": "calculator.add", "arguments": {}})
        big["params"]["_meta"] = {"padding": "x" * 2000}
        declared = await served.http.post(served.url, headers=client.headers(), json=big)

        async def chunks() -> Any:  # no Content-Length: the limit applies while reading
            body = json.dumps(big).encode()
            for i in range(0, len(body), 500):
                yield body[i : i + 500]

        chunked = await served.http.post(served.url, headers=client.headers(), content=chunks())
        small = await client.call("calculator.add", {"a": 1, "b": 2})
    assert_refused(declared, 413)
    assert_refused(chunked, 413)
    assert small.result["structuredContent"] == {"result": 3}


# -- 429 / 503 ---------------------------------------------------------------------------------


async def test_in_flight_limit_per_session_is_429() -> None:
    gate = Gate()
    async with serve(gate.server(), max_in_flight_per_session=1) as served:
        client = await session(served)
        other = await session(served)
        replies: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def first() -> None:
                replies.append(await client.call("test.wait"))

            nursery.start_soon(first)
            await gate.started.wait()
            second = await client.call("calculator.add", {"a": 1, "b": 1})
            elsewhere = await other.call("calculator.add", {"a": 1, "b": 1})
            gate.release.set()
        after = await client.call("calculator.add", {"a": 1, "b": 1})
    assert_refused(second.response, 429)
    assert second.response.headers["retry-after"].isdigit()
    assert elsewhere.status == 200  # the limit is per session
    assert replies[0].result["content"][0]["text"] == "released"
    assert after.status == 200


async def test_in_flight_limit_holds_under_a_burst() -> None:
    gate = Gate()
    async with serve(gate.server(), max_in_flight_per_session=2) as served:
        client = await session(served)
        statuses: list[int] = []
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                statuses.append((await client.call("test.wait")).status)

            for _ in range(20):  # 20 connections at once
                nursery.start_soon(call)
            # Once everything has settled, only the limit's worth of calls are inside.
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert gate.entered == 2
            gate.release.set()
    assert sorted(statuses) == [200] * 2 + [429] * 18


async def test_a_full_session_table_ends_the_longest_idle_session_for_a_new_one() -> None:
    """Defect: abandoned sessions filled the table and every new client got 503 until they
    expired (30 minutes). A session never used makes room first, then the one idle the
    longest; its client is told 404 and re-initializes, as the spec says."""
    async with serve(max_sessions=3) as served:
        first = await session(served)
        second = await session(served)
        assert (await first.request("ping")).status == 200
        assert (await second.request("ping")).status == 200  # first is now the longest idle
        abandoned = await session(served)  # initialized, never used
        fourth = await session(served)  # takes the abandoned one's place
        assert (await fourth.request("ping")).status == 200
        fifth = await served.client().initialize()  # all used now: the longest idle goes
        gone = await first.request("ping")
        kept = await second.request("ping")
        never = await abandoned.request("ping")
    assert fifth.status == 200
    assert never.status == 404  # its client would re-initialize, as the spec says
    assert gone.status == 404
    assert kept.status == 200


async def test_session_limit_is_503_when_every_session_is_busy() -> None:
    gate = Gate(expected=2)
    async with serve(gate.server(), max_sessions=2) as served:
        busy = [await session(served), await session(served)]
        async with trio.open_nursery() as nursery:
            for client in busy:
                nursery.start_soon(client.call, "test.wait")
            with trio.fail_after(TIMEOUT):
                await gate.all_in.wait()
            third = await served.client().initialize()
            sse = await served.http.get(served.base + "/sse")
            gate.release.set()
        fourth = await served.client().initialize()  # idle again: one makes room
    assert_refused(third.response, 503)
    assert "retry-after" in third.response.headers
    assert_refused(sse, 503)
    assert fourth.status == 200


# -- sessions ----------------------------------------------------------------------------------


async def test_session_ids_are_visible_ascii_unguessable_and_distinct() -> None:
    async with serve() as served:
        ids = [(await session(served)).session_id for _ in range(20)]
    visible = set(string.printable[:94])  # 0x21..0x7E
    for sid in ids:
        assert sid is not None
        assert set(sid) <= visible
        assert len(sid) >= 32  # 256 bits of randomness in URL-safe base64
    assert len(set(ids)) == len(ids)


async def test_delete_cancels_the_sessions_running_calls() -> None:
    gate = Gate()
    async with serve(gate.server()) as served:
        client = await session(served)
        replies: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                replies.append(await client.call("test.wait"))

            nursery.start_soon(call)
            await gate.started.wait()
            deleted = await client.delete()
        assert deleted.status_code in (200, 204)
        with trio.fail_after(TIMEOUT):
            await gate.cancelled.wait()
    (reply,) = replies
    assert reply.status == 200  # a POST with a request gets a stream, even an empty one
    assert reply.messages == []


async def test_idle_sessions_expire_but_busy_ones_do_not() -> None:
    timeout = 0.2
    gate = Gate()
    async with serve(gate.server(), session_idle_timeout=timeout) as served:
        busy = await session(served)
        idle = await session(served)
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                reply = await busy.call("test.wait")
                assert reply.result["content"][0]["text"] == "released"

            nursery.start_soon(call)
            await gate.started.wait()
            with trio.fail_after(TIMEOUT):
                status = 200
                while status == 200:
                    # Let the idle time elapse (a request would reset it), then look.
                    await trio.sleep(timeout * 1.5)
                    status = (await idle.request("ping")).status
            assert status == 404
            # The busy session is older than the expired one, and still there.
            assert (await busy.request("ping")).status == 200
            gate.release.set()


# -- stateless ---------------------------------------------------------------------------------


async def test_stateless_mode_issues_no_session_and_needs_no_initialize() -> None:
    async with serve(stateless=True) as served:
        init = await served.client().initialize()
        old = served.client("2025-06-18")
        old_call = await old.call("calculator.add", {"a": 2, "b": 2})
        modern = served.client(MODERN)
        listed = await modern.request("tools/list", {"_meta": MODERN_META})
        modern_call = await modern.call("calculator.multiply", {"a": 6, "b": 7}, **MODERN_META)
        deleted = await served.http.delete(served.url, headers=old.headers())
        get = await served.http.get(served.url)
    assert init.status == 200
    assert "mcp-session-id" not in init.response.headers
    assert old_call.status == 200
    assert old_call.result["structuredContent"] == {"result": 4}
    assert len(listed.result["tools"]) == len(DEMO_TOOLS)
    assert modern_call.result["structuredContent"] == {"result": 42}
    assert modern_call.result["resultType"] == "complete"
    assert_refused(deleted, 405)
    assert deleted.headers["allow"] == "POST"
    assert_refused(get, 405)
    assert validate_transcript(old.sent, old.received, "2025-06-18") == 1
    assert validate_transcript(modern.sent, modern.received, MODERN) == 2


async def test_modern_requests_need_no_session_in_stateful_mode() -> None:
    # 2026-07-28 has no sessions: served without one, and a session id header is ignored.
    async with serve() as served:
        modern = served.client(MODERN)
        discover = await modern.request("server/discover", {"_meta": MODERN_META})
        called = await modern.call("calculator.add", {"a": 1, "b": 2}, **MODERN_META)
        ignored = await modern.request(
            "tools/list", {"_meta": MODERN_META}, **{"mcp-session-id": "stale"}
        )
        old = served.client("2025-11-25")
        needs_session = await old.call("calculator.add", {"a": 1, "b": 2})
    assert discover.status == 200
    assert MODERN in discover.result["supportedVersions"]
    assert "mcp-session-id" not in discover.response.headers
    assert called.result["structuredContent"] == {"result": 3}
    assert ignored.status == 200
    assert validate_transcript(modern.sent, modern.received, MODERN) == 3
    assert_refused(needs_session.response, 400)


# -- legacy HTTP+SSE ---------------------------------------------------------------------------


async def read_event(lines: Any) -> tuple[str, str]:
    """One SSE event `(name, data)` from an `aiter_lines` iterator, checking its framing."""
    event = await lines.__anext__()
    data = await lines.__anext__()
    blank = await lines.__anext__()
    assert event.startswith("event: "), event
    assert data.startswith("data: "), data
    assert blank == ""
    return event.removeprefix("event: "), data.removeprefix("data: ")


async def test_legacy_sse_session() -> None:
    sent: list[Any] = []
    received: list[Any] = []
    async with serve() as served:
        async with served.http.stream("GET", served.base + "/sse") as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"] == "text/event-stream"
            lines = stream.aiter_lines()
            name, endpoint = await read_event(lines)
            assert name == "endpoint"
            assert endpoint.startswith("/messages?sessionId=")
            sid = endpoint.removeprefix("/messages?sessionId=")
            assert len(sid) >= 32
            assert set(sid) <= set(string.printable[:94])
            post_url = served.base + endpoint

            async def exchange(message: Any) -> Any:
                sent.append(message)
                posted = await served.http.post(post_url, json=message)
                assert posted.status_code == 202
                if "id" not in message:
                    return None
                name, data = await read_event(lines)
                assert name == "message"
                answer = json.loads(data)
                received.append(answer)
                return answer

            init = await exchange(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()}
            )
            await exchange({"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed = await exchange({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            added = await exchange(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "calculator.add", "arguments": {"a": 4, "b": 5}},
                }
            )
            bad = await served.http.post(
                post_url, headers={"content-type": "text/plain"}, content=b"{}"
            )
        # The stream is closed: the session goes, and a later POST is told so.
        with trio.fail_after(TIMEOUT):
            status = 202
            while status == 202:
                status = (await served.http.post(post_url, json=PING)).status_code
        unknown = await served.http.post(
            served.base + "/messages?sessionId=0123456789abcdef", json=PING
        )
        missing = await served.http.post(served.base + "/messages", json=PING)
    assert init["result"]["protocolVersion"] == LATEST
    assert len(listed["result"]["tools"]) == len(DEMO_TOOLS)
    assert added["result"]["structuredContent"] == {"result": 9}
    assert bad.status_code == 415
    assert status == 404
    assert_refused(unknown, 404)
    assert_refused(missing, 400)
    assert validate_transcript(sent, received, LATEST) == 3


async def test_legacy_sse_2024_11_05_session_matches_its_schema() -> None:
    version = "2024-11-05"
    sent: list[Any] = []
    received: list[Any] = []
    async with serve() as served, served.http.stream("GET", served.base + "/sse") as stream:
        lines = stream.aiter_lines()
        _, endpoint = await read_event(lines)
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params(version)},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {
                    "name": BATTLE,
                    "arguments": {},
                    "_meta": {"progressToken": 9},
                },
            },
            {"jsonrpc": "2.0", "id": "4", "method": "ping"},
            {"jsonrpc": "2.0", "id": 5, "method": "no/such/method"},
        ]
        for message in messages:
            sent.append(message)
            posted = await served.http.post(served.base + endpoint, json=message)
            assert posted.status_code == 202
        for raw in (b"{oops", b'{"jsonrpc": "2.0", "id": 6, "method": 7}'):
            posted = await served.http.post(
                served.base + endpoint, headers={"content-type": "application/json"}, content=raw
            )
            assert posted.status_code == 202  # the error goes on the stream
        # 5 answers, 3 progress notifications, 2 errors for the raw bodies.
        while len(received) < 10:
            name, data = await read_event(lines)
            assert name == "message"
            received.append(json.loads(data))
    assert validate_transcript(sent, received, version) == 10
    codes = sorted(m["error"]["code"] for m in received if "error" in m)
    assert codes == [-32700, -32601, -32600]


# -- full sessions checked against the official schema -----------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_every_message_of_a_session_matches_the_schema(version: str) -> None:
    async with serve() as served:
        client = served.client(version)
        await client.initialize()
        await client.request("tools/list")
        await client.call("calculator.add", {"a": 1, "b": 2})
        await client.call("calculator.divide", {"a": 1, "b": 0})
        await client.call("wh40k.roll_dice", {"dice_count": 0})
        await client.call("no.such.tool")
        await client.call(BATTLE, {}, progressToken="tok")
        await client.request("logging/setLevel", {"level": "debug"})
        await client.call("wh40k.inquisitor_name")
        await client.request("ping")
        await client.request("no/such/method")
        await client.request("tools/call", {"arguments": {}})
        if version == "2025-03-26":  # the only revision with JSON-RPC batches
            batch = [client.make_request("ping"), client.make_request("tools/list")]
            batched = await client.post(batch)
            assert [m["id"] for m in batched.last] == [b["id"] for b in batch]
        refused = await client.post({"jsonrpc": "2.0", "id": 1, "method": 7})
        assert refused.status == 400
        deleted = await client.delete()
        assert deleted.status_code in (200, 204)
    count = validate_transcript(client.sent, client.received, version)
    assert count == len(client.received) >= 16
    errors = [m for m in client.received if "error" in m]
    assert {m["error"]["code"] for m in errors} == {-32601, -32602, -32600}


# -- concurrency, cancellation, shutdown -------------------------------------------------------


@pytest.mark.slow
async def test_fifty_concurrent_sessions() -> None:
    count = 50
    gate = Gate(expected=count)
    async with serve(gate.server()) as served:
        clients: list[McpHttp] = []
        waits: list[Any] = []

        async with trio.open_nursery() as nursery:

            async def one(i: int) -> None:
                client = await session(served)
                clients.append(client)
                listed = await client.request("tools/list")
                assert len(listed.result["tools"]) == len(DEMO_TOOLS) + 2  # and the probe's
                added = await client.call("calculator.add", {"a": i, "b": 1000})
                assert added.result["structuredContent"] == {"result": i + 1000}
                waits.append(await client.call("test.wait"))

            for i in range(count):
                nursery.start_soon(one, i)
            # Every session's call is running at the same time before any is let go.
            await gate.all_in.wait()
            gate.release.set()
    assert len({c.session_id for c in clients}) == count
    assert [w.result["content"][0]["text"] for w in waits] == ["released"] * count
    assert gate.entered == count


async def test_client_disconnecting_mid_call_cancels_the_call() -> None:
    gate = Gate()
    async with serve(gate.server()) as served:
        client = await session(served)
        request = client.make_request("tools/call", {"name": "test.wait", "arguments": {}})
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                await served.http.post(served.url, headers=client.headers(), json=request)
                raise AssertionError("the request was answered")

            nursery.start_soon(call)
            await gate.started.wait()
            nursery.cancel_scope.cancel()  # httpx closes the connection mid-request
        with trio.fail_after(TIMEOUT):
            await gate.cancelled.wait()
        # The session lives on, and the cancelled call's id is free again.
        again = await client.post(
            {**request, "params": {"name": "calculator.add", "arguments": {"a": 1, "b": 1}}}
        )
    assert again.status == 200
    assert again.last["id"] == request["id"]


async def test_notifications_cancelled_from_a_second_post_cancels_the_call() -> None:
    gate = Gate()
    async with serve(gate.server()) as served:
        client = await session(served)
        replies: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                replies.append(await client.call("test.wait"))

            nursery.start_soon(call)
            await gate.started.wait()
            call_id = client.sent[-1]["id"]
            cancel = await client.notify(
                "notifications/cancelled", {"requestId": call_id, "reason": "test"}
            )
            assert cancel.status == 202
        with trio.fail_after(TIMEOUT):
            await gate.cancelled.wait()
    (reply,) = replies
    assert reply.status == 200  # a POST with a request gets a stream, even an empty one
    assert not [m for m in reply.messages if "result" in m or "error" in m]


async def test_graceful_shutdown_lets_a_call_in_flight_finish() -> None:
    async with serve(Gate().server(timeouts=Timeouts(shutdown=LONG_GRACE))) as served:
        client = await session(served)
        request = client.make_request(
            "tools/call", {"name": BATTLE, "arguments": {}, "_meta": {"progressToken": 1}}
        )
        async with served.http.stream(
            "POST", served.url, headers=client.headers(), json=request
        ) as stream:
            text = ""
            async for chunk in stream.aiter_text():
                if not text:
                    served.stop.set()  # the battle (0.5 s) has begun: shut down now
                text += chunk
        # The server ends soon after the call, long before its grace period, while this
        # client's connections are still open.
        with trio.fail_after(TIMEOUT):
            await served.finished.wait()
    messages = parse_sse(text)
    assert messages[-1]["id"] == request["id"]
    assert messages[-1]["result"]["structuredContent"]["imperial_force"]
    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError):
            await http.post(served.url, headers=client.headers(), json=PING)


@pytest.mark.parametrize("last", ["json", "sse"])
async def test_idle_keep_alive_connections_do_not_hold_the_shutdown(last: str) -> None:
    async with serve(Gate().server(timeouts=Timeouts(shutdown=LONG_GRACE))) as served:
        client = await session(served)
        # The last answer on the (reused) connection decides how it is left idle.
        if last == "json":
            await client.call("calculator.add", {"a": 1, "b": 2})
        else:
            await client.call(BATTLE, {}, progressToken=1)
        # This client's connection is idle and open: the server closes it and ends at once,
        # instead of waiting out its grace period.
        served.stop.set()
        with trio.fail_after(TIMEOUT):
            await served.finished.wait()


@pytest.mark.parametrize("kept", [True, False], ids=["event-store", "no-event-store"])
async def test_a_client_reading_nothing_does_not_block_others(kept: bool) -> None:
    gate = Gate()
    store = MemoryEventStore(max_bytes=1024 * 1024)
    async with serve(gate.server(), event_store=store if kept else None) as served:
        stuck = await session(served)
        host, port = served.base.removeprefix("http://").split(":")
        request = json.dumps(
            stuck.make_request(
                "tools/call", {"name": "test.flood", "arguments": {}, "_meta": {"progressToken": 1}}
            )
        ).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: {ACCEPT}\r\n"
            f"Content-Type: application/json\r\nMcp-Session-Id: {stuck.session_id}\r\n"
            f"Content-Length: {len(request)}\r\n\r\n"
        ).encode()
        reader = await trio.open_tcp_stream(host, int(port))  # sends a request, reads nothing
        half = await trio.open_tcp_stream(host, int(port))  # sends half a request, then stalls
        async with reader, half:
            await reader.send_all(head + request)
            await half.send_all(head + request[:10])
            # Everything settles only once the flood is stuck on the full socket.
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            flooded = gate.flooded
            assert 0 < flooded < 5000
            with trio.fail_after(TIMEOUT):
                others = [await session(served) for _ in range(3)]
                for client in others:
                    added = await client.call("calculator.add", {"a": 1, "b": 2})
                    assert added.result["structuredContent"] == {"result": 3}
                battle = await others[0].call(BATTLE, {}, progressToken=1)
                assert "result" in battle.last
            assert gate.flooded == flooded  # still stuck
        if not kept:
            # The reader vanished, and nothing can give it the rest: its call is cancelled.
            with trio.fail_after(TIMEOUT):
                await gate.cancelled.wait()
            return
        # The reader vanished, and could come back for the rest: its call runs to its end, what
        # it sends kept in the store, within the store's bound.
        with trio.fail_after(TIMEOUT):
            await gate.flood_ended.wait()
        assert gate.flooded == 5000
        assert not gate.cancelled.is_set()
        assert 0 < store.kept_bytes <= store.max_bytes


def test_decode_rejects_bad_framing() -> None:
    response = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=b"data: {}\n\n"
    )
    with pytest.raises(AssertionError):
        decode(response)


async def test_graceful_shutdown_ends_legacy_streams_after_their_calls() -> None:
    gate = Gate()
    received: list[Any] = []
    async with (
        serve(gate.server(timeouts=Timeouts(shutdown=LONG_GRACE))) as served,
        served.http.stream("GET", served.base + "/sse") as stream,
    ):
        lines = stream.aiter_lines()
        _, endpoint = await read_event(lines)
        for message in [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "test.wait"},
            },
        ]:
            posted = await served.http.post(served.base + endpoint, json=message)
            assert posted.status_code == 202
        await gate.started.wait()
        served.stop.set()
        # Once the shutdown has settled, the call is still running, not cancelled...
        await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        assert not gate.cancelled.is_set()
        # ...and when it finishes, its answer arrives before the stream ends.
        gate.release.set()
        async for line in lines:
            if line.startswith("data: "):
                received.append(json.loads(line.removeprefix("data: ")))
        # The open stream did not hold the shutdown for the whole grace period.
        with trio.fail_after(TIMEOUT):
            await served.finished.wait()
    assert [m["id"] for m in received] == [1, 2]
    assert received[1]["result"]["content"][0]["text"] == "released"


async def test_review_findings_malformed_origin_batches_without_requests_stateless_versions() -> (
    None
):
    async with serve() as served:
        client = await session(served, "2025-03-26")  # the one revision with batches
        bad_origin = await served.http.post(
            served.url, headers={**client.headers(), "origin": "http://[::1"}, content=b"{}"
        )
        batch = await served.http.post(
            served.url, headers=client.headers(), content=b'[1, {"jsonrpc": "2.0", "method": 5}]'
        )
        latest = await session(served)
        refused = await served.http.post(
            served.url,
            headers=latest.headers(),
            content=b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
        )
    assert bad_origin.status_code == 403
    assert batch.status_code == 200
    assert [m["error"]["code"] for m in batch.json()] == [-32600, -32600]
    # 2025-11-25 has no batches: 400, one error for the whole array naming the revision that has.
    assert_refused(refused, 400)
    assert "batches are part of MCP 2025-03-26 only" in refused.json()["error"]["message"]
    narrow = Server(versions=("2025-11-25",))
    async with serve(narrow, stateless=True) as served:
        response = await served.http.post(
            served.url,
            headers=POST_HEADERS,
            content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
        )
    assert response.status_code == 400  # not a 500: 2025-03-26 (the header's default) is not served


CAMPAIGN = "wh40k.campaign"  # 0.6 s a battle: 100 battles outlast any test
WITH_TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


async def sse_messages(lines: Any) -> list[Any]:
    """The JSON-RPC messages of an SSE stream's lines until it ends."""
    return [
        json.loads(line.removeprefix("data: "))
        async for line in lines
        if line.startswith("data: ") and line != "data: "
    ]


async def test_shutdown_tells_the_streams_following_tasks_how_the_tasks_end() -> None:
    """Defect 24.5 over Streamable HTTP: a session's GET stream and a 2026-07-28 listen stream
    hear the end of the tasks they follow ("Server shutting down") before they end, and the
    store keeps each task settled with that reason."""
    server = demo_tools.build_server()
    long = {"battles": 100}
    async with serve(server) as served:
        client = await session(served)
        created = await client.request(
            "tools/call", {"name": CAMPAIGN, "arguments": long, "task": {}}
        )
        mine = created.result["task"]["taskId"]
        modern = served.client(MODERN)
        declared = {**MODERN_META, CAPABILITIES: WITH_TASKS}
        followed = (await modern.call(CAMPAIGN, long, **declared)).result["taskId"]
        listen = modern.make_request(
            "subscriptions/listen", {"_meta": declared, "notifications": {"taskIds": [followed]}}
        )
        listen_headers = {**modern.headers(), **request_headers(listen, MODERN)}
        get_headers = client.headers(accept="text/event-stream")
        async with (
            served.http.stream("GET", served.url, headers=get_headers) as get,
            served.http.stream("POST", served.url, headers=listen_headers, json=listen) as heard,
        ):
            get_lines, heard_lines = get.aiter_lines(), heard.aiter_lines()
            while not (await heard_lines.__anext__()).startswith("data: "):
                pass  # the acknowledgement: the listen follows the task
            assert (await get_lines.__anext__()).startswith("id: ")  # primed: the GET is open
            served.stop.set()
            on_get = await sse_messages(get_lines)
            on_listen = await sse_messages(heard_lines)
        await served.finished.wait()  # bounded by `serve`'s own deadline
    for messages, task_id, method in (
        (on_get, mine, "notifications/tasks/status"),  # 2025-11-25's own tasks
        (on_listen, followed, "notifications/tasks"),
    ):
        ends = [
            m["params"]
            for m in messages
            if m.get("method") == method and m["params"]["status"] == "failed"
        ]
        assert [end["taskId"] for end in ends] == [task_id], messages
        assert ends[0]["statusMessage"] == "Server shutting down"
        if method == "notifications/tasks":  # the extension inlines the error
            assert ends[0]["error"]["code"] == -32000
        record = await server._task_runtime.store.get(task_id, server._task_runtime.clock())
        assert record is not None
        assert (record.status, record.status_message) == ("failed", "Server shutting down")
    assert on_listen[-1] == {  # the listen itself answered once, with its plain result
        "jsonrpc": "2.0",
        "id": listen["id"],
        "result": {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": listen["id"]},
        },
    }


BATCH = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_batch_in_a_session_without_batches_is_400(version: str) -> None:
    """Defect 24.7: a JSON array POSTed in a 2025-11-25 session got 200 and an array holding
    one -32600; that revision's transport takes one message per POST (conformance scenario
    json-rpc-batch-rejection): 400, with the JSON-RPC error as the body."""
    async with serve() as served:
        client = await session(served, version)
        refused = await served.http.post(served.url, headers=client.headers(), json=BATCH)
        notes = [{"jsonrpc": "2.0", "method": "notifications/initialized"}] * 2
        notified = await served.http.post(served.url, headers=client.headers(), json=notes)
        still = await client.request("ping")  # the session goes on
    for response in (refused, notified):
        error = assert_refused(response, 400)["error"]
        assert f"MCP {version} has none" in error["message"]
        assert "2025-03-26" in error["message"]
    assert still.result == {}


async def test_batches_are_taken_where_the_revision_has_them_and_nowhere_else() -> None:
    async with serve() as served:
        old = await session(served, "2025-03-26")
        kept = await served.http.post(served.url, headers=old.headers(), json=BATCH)
        init = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params()}]
        fresh = await served.http.post(served.url, headers=POST_HEADERS, json=init)
        modern = await served.http.post(
            served.url, headers={**POST_HEADERS, "mcp-protocol-version": MODERN}, json=BATCH
        )
    async with serve(stateless=True) as served:
        assumed = await served.http.post(served.url, headers=POST_HEADERS, json=BATCH)
        named = await served.http.post(
            served.url, headers={**POST_HEADERS, "mcp-protocol-version": LATEST}, json=BATCH
        )
    # 2025-03-26 has batches: answered as one array, in a session or assumed without one.
    for response in (kept, assumed):
        assert response.status_code == 200
        assert [m["id"] for m in response.json()] == [1, 2]
    assert "no version is negotiated yet" in assert_refused(fresh, 400)["error"]["message"]
    assert f"MCP {MODERN} has none" in assert_refused(modern, 400)["error"]["message"]
    assert f"MCP {LATEST} has none" in assert_refused(named, 400)["error"]["message"]
