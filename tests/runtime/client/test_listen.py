"""The client's `subscriptions/listen` stream (2026-07-28): what it asks for, and after a break.

In process, against trio-mcp's own server (every message checked against the schema): the
stream follows the callbacks registered, one stream at a time. Over loopback HTTP, bare servers
script the listen streams byte by byte: one cut short after its acknowledgement, one closed
gracefully, one refused, one that never opens.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from tests.helpers import MODERN
from tests.http_helpers import json_response, read_request, response_head, serve_bare
from tests.sdk_servers import SDK_LISTEN_SERVER, sdk_server
from tests.timing import scaled
from trio_mcp import ConnectionClosed, RequestError, Server, open_client
from trio_mcp._runtime.client import listen as listen_stream
from trio_mcp.testing import connect

TIMEOUT = scaled(60)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
WATCHED = "test://watched"


def _server() -> Server:
    server = Server("listened")
    server.add_tool(lambda: "one", name="one", description="One")
    server.add_prompt(lambda: "hi", name="hi")
    server.add_resource(WATCHED, "watched contents")
    return server


def _filters(server: Server) -> list[tuple[list[str], tuple[str, ...]]]:
    return [
        (sorted(listener.notifications.lists), listener.notifications.uris)
        for listener in server._listening
    ]


async def test_the_stream_follows_the_callbacks_one_at_a_time() -> None:
    server = _server()
    heard: list[str] = []
    with trio.fail_after(TIMEOUT):
        async with connect(server, protocol_version=MODERN) as client:
            assert _filters(server) == []  # nothing wanted, nothing opened
            client.on_list_changed("tools", heard.append)
            client.on_list_changed("prompts", heard.append)
            await trio.testing.wait_all_tasks_blocked()
            assert _filters(server) == [(["prompts", "tools"], ())]
            server.add_tool(lambda: "two", name="two", description="Two")
            await trio.testing.wait_all_tasks_blocked()
            assert heard == ["tools"]

            # A subscription opens a stream with the URI added, and closes the old one once the
            # new one is acknowledged.
            await client.subscribe(WATCHED, heard.append)
            await trio.testing.wait_all_tasks_blocked()
            assert _filters(server) == [(["prompts", "tools"], (WATCHED,))]
            assert await server.resource_updated(WATCHED) == 1
            server.add_prompt(lambda: "bye", name="bye")
            await trio.testing.wait_all_tasks_blocked()
            assert heard == ["tools", WATCHED, "prompts"]

            await client.unsubscribe(WATCHED)
            await trio.testing.wait_all_tasks_blocked()
            assert _filters(server) == [(["prompts", "tools"], ())]
            assert await server.resource_updated(WATCHED) == 0
            client.on_list_changed("tools", None)
            client.on_list_changed("prompts", None)
            await trio.testing.wait_all_tasks_blocked()
            assert _filters(server) == []
            assert client.in_flight == 0
    assert heard == ["tools", WATCHED, "prompts"]


async def test_an_async_update_handler_may_read_the_resource() -> None:
    server = _server()
    read = trio.Event()
    contents: list[str] = []

    async def on_update(uri: str) -> None:
        contents.append((await client.read_resource(uri)).text or "")
        read.set()

    with trio.fail_after(TIMEOUT):
        async with connect(server, protocol_version=MODERN) as client:
            await client.subscribe(WATCHED, on_update)
            assert await server.resource_updated(WATCHED) == 1
            await read.wait()
    assert contents == ["watched contents"]


async def test_a_server_without_resource_subscriptions_is_not_asked() -> None:
    server = Server("listless")
    server.add_tool(lambda: "one", name="one", description="One")
    with trio.fail_after(TIMEOUT):
        async with connect(server, protocol_version=MODERN) as client:
            with pytest.raises(RequestError) as caught:
                await client.subscribe(WATCHED, print)
            assert caught.value.code == -32601
            await trio.testing.wait_all_tasks_blocked()
            assert _filters(server) == []


# -- bare 2026-07-28 servers over loopback HTTP ---------------------------------------------------


def _chunk(message: Any) -> bytes:
    data = f"event: message\ndata: {json.dumps(message)}\n\n".encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


SSE_HEAD = response_head("200 OK", "content-type: text/event-stream", "transfer-encoding: chunked")
DISCOVERED = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"resources": {"subscribe": True}, "tools": {"listChanged": True}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bare", "version": "1"}},
}


def _tagged(method: str, request_id: Any, **params: Any) -> dict[str, Any]:
    meta = {"_meta": {SUBSCRIPTION_ID: request_id}}
    return {"jsonrpc": "2.0", "method": method, "params": {**params, **meta}}


def _ack(listen: dict[str, Any]) -> dict[str, Any]:
    notifications = listen["params"]["notifications"]
    return _tagged(
        "notifications/subscriptions/acknowledged", listen["id"], notifications=notifications
    )


def _updated(request_id: Any) -> dict[str, Any]:
    return _tagged("notifications/resources/updated", request_id, uri=WATCHED)


class ListenServer:
    """Answers server/discover; each subscriptions/listen POST as `script` says (n: 0 first)."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.listens: list[dict[str, Any]] = []

    async def handle(self, stream: trio.SocketStream) -> None:
        request = await read_request(stream)
        if request is None:
            return
        headers, body = request
        message = json.loads(body)
        if message["method"] == "server/discover":
            await stream.send_all(
                json_response({"jsonrpc": "2.0", "id": message["id"], "result": DISCOVERED})
            )
        else:
            assert message["method"] == "subscriptions/listen"
            assert headers["mcp-method"] == "subscriptions/listen"
            self.listens.append(message)
            await self.script(len(self.listens) - 1, message, stream)
        await stream.aclose()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    # Short waits between openings: the counts and orders are what the tests check.
    monkeypatch.setattr(listen_stream, "FIRST_WAIT", 0.01)


@pytest.mark.usefixtures("quick")
async def test_a_listen_cut_short_or_closed_is_reopened_and_hears_what_follows() -> None:
    async def script(n: int, listen: dict[str, Any], stream: trio.SocketStream) -> None:
        if n == 0:
            # Acknowledged, then one tagged as another stream's, then the body is cut short.
            await stream.send_all(SSE_HEAD + _chunk(_ack(listen)) + _chunk(_updated("other")))
            await stream.send_all(b"ff\r\nevent: mess")
        elif n == 1:
            # Graceful closure: the plain result, and the stream ends.
            result = {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: listen["id"]}}
            answer = {"jsonrpc": "2.0", "id": listen["id"], "result": result}
            await stream.send_all(SSE_HEAD + _chunk(_ack(listen)) + _chunk(answer) + b"0\r\n\r\n")
        else:
            await stream.send_all(SSE_HEAD + _chunk(_ack(listen)) + _chunk(_updated(listen["id"])))
            await trio.sleep_forever()

    server = ListenServer(script)
    heard: list[str] = []
    updated = trio.Event()

    def on_update(uri: str) -> None:
        heard.append(uri)
        updated.set()

    with trio.fail_after(TIMEOUT):
        async with (
            serve_bare(server.handle) as url,
            open_client(url, protocol_version=MODERN) as client,
        ):
            await client.subscribe(WATCHED, on_update)
            await updated.wait()
    assert heard == [WATCHED]
    wanted = {"resourceSubscriptions": [WATCHED]}
    assert [listen["params"]["notifications"] for listen in server.listens] == [wanted] * 3
    assert len({listen["id"] for listen in server.listens}) == 3


@pytest.mark.usefixtures("quick")
async def test_a_listen_that_never_opens_is_given_up_after_bounded_attempts() -> None:
    async def script(n: int, listen: dict[str, Any], stream: trio.SocketStream) -> None:
        await stream.send_all(response_head("500 Oops", "content-length: 0"))

    server = ListenServer(script)
    with trio.fail_after(TIMEOUT):
        async with (
            serve_bare(server.handle) as url,
            open_client(url, protocol_version=MODERN) as client,
        ):
            with pytest.raises(ConnectionClosed, match="failed 5 times in a row"):
                await client.subscribe(WATCHED, print)
            assert len(server.listens) == listen_stream.ATTEMPTS
            # The connection is unharmed, and a new subscription tries again.
            await client.ping()
            with pytest.raises(ConnectionClosed):
                await client.subscribe("test://other", print)
    assert len(server.listens) == 2 * listen_stream.ATTEMPTS


async def test_a_refused_listen_is_not_asked_again() -> None:
    async def script(n: int, listen: dict[str, Any], stream: trio.SocketStream) -> None:
        error = {"code": -32602, "message": "no such resource"}
        await stream.send_all(json_response({"jsonrpc": "2.0", "id": listen["id"], "error": error}))

    server = ListenServer(script)
    with trio.fail_after(TIMEOUT):
        async with (
            serve_bare(server.handle) as url,
            open_client(url, protocol_version=MODERN) as client,
        ):
            with pytest.raises(RequestError, match="no such resource"):
                await client.subscribe(WATCHED, print)
            await trio.testing.wait_all_tasks_blocked()
            await client.ping()
    assert len(server.listens) == 1


# -- the official SDK's server -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_the_sdk_server_s_announcements_reach_the_callbacks(kind: str) -> None:
    heard: list[str] = []
    both = trio.Event()

    def hear(what: str) -> None:
        heard.append(what)
        if len(heard) == 2:
            both.set()

    with trio.fail_after(TIMEOUT):
        async with (
            sdk_server(SDK_LISTEN_SERVER, kind) as target,
            open_client(target, protocol_version=MODERN) as client,
        ):
            assert client.protocol_version == MODERN
            client.on_list_changed("tools", hear)
            await client.subscribe("sdk://watched", hear)
            assert (await client.call_tool("announce", {"uri": "sdk://watched"})).text == (
                "announced"
            )
            await both.wait()
    assert sorted(heard) == ["sdk://watched", "tools"]
