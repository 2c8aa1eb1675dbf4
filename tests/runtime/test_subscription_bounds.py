"""A session's `resources/subscribe` set: bounded in count and bytes, and gone with the session.

Defect (issue 24): 3,000 subscriptions to distinct 16 KiB URIs in one session were all taken
(+49 MiB), and held until the session expired. Now a session holds at most
`Limits(max_subscriptions=..., max_subscription_bytes=...)`, past which the request is answered
with a JSON-RPC error naming the bound, and whatever way the session ends (end of input, HTTP
DELETE, idle expiry) its subscriptions end with it.
"""

from __future__ import annotations

import gc
import weakref
from typing import Annotated, Any

import trio

from tests.helpers import open_memory_peer
from tests.http_helpers import serve
from tests.timing import scaled
from trio_mcp import Limits, Param, Server
from trio_mcp._runtime.session import SessionRuntime

TIMEOUT = scaled(20)


def watched_server(**options: Any) -> Server:
    """A server with one resource template that any `test://items/<name>` matches."""
    server = Server("watched", **options)

    @server.resource("test://items/{name}")
    def item(name: Annotated[str, Param("Any name")]) -> str:
        """An item."""
        return name

    return server


def uri(n: int, size: int = 0) -> str:
    """A distinct URI of the template, padded to about `size` characters."""
    return f"test://items/{n}-" + "x" * max(0, size - 20)


def the_runtime(server: Server) -> SessionRuntime:
    (runtime,) = list(server._hub)
    assert isinstance(runtime, SessionRuntime)
    return runtime


async def test_past_the_count_bound_a_subscription_is_refused_naming_it() -> None:
    server = watched_server(limits=Limits(max_subscriptions=3))
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:
            answers = [await peer.request("resources/subscribe", {"uri": uri(n)}) for n in range(5)]
            again = await peer.request("resources/subscribe", {"uri": uri(1)})  # held already
            pong = await peer.request("ping")
            held = the_runtime(server).session.subscriptions
            assert list(held) == [uri(0), uri(1), uri(2)]
    assert [("result" in a) for a in answers] == [True, True, True, False, False]
    error = answers[3]["error"]
    assert error["code"] == -32000
    assert "max_subscriptions=3" in error["message"]
    assert error["data"] == {"limit": "max_subscriptions", "max": 3}
    assert again["result"] == {}
    assert pong["result"] == {}


async def test_past_the_byte_bound_a_subscription_is_refused_and_memory_stays_bounded() -> None:
    """The attack of issue 24 in small: distinct 17 KiB URIs until the bytes run out."""
    bound = 64 * 1024
    server = watched_server(limits=Limits(max_subscription_bytes=bound))
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:
            answers = [
                await peer.request("resources/subscribe", {"uri": uri(n, 17 * 1024)})
                for n in range(10)
            ]
            held = the_runtime(server).session.subscriptions
            assert (len(held), held.bytes) == (3, 3 * len(uri(0, 17 * 1024)))
    taken = [a for a in answers if "result" in a]
    refused = [a["error"] for a in answers if "error" in a]
    assert len(taken) == 3
    assert len(refused) == 7
    assert all(e["data"] == {"limit": "max_subscription_bytes", "max": bound} for e in refused)
    assert "max_subscription_bytes" in refused[0]["message"]


async def test_subscriptions_end_with_the_session_at_end_of_input() -> None:
    server = watched_server()
    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:
            for n in range(20):
                assert "result" in await peer.request("resources/subscribe", {"uri": uri(n, 1000)})
            runtime = the_runtime(server)
            held = runtime.session.subscriptions
            assert len(held) == 20
            await peer.close()  # end of input
            while runtime in server._hub:  # noqa: ASYNC110 - the connection ends in its own time
                await trio.sleep(0.01)
    assert (len(held), held.bytes) == (0, 0)
    # Nothing holds the session any more: its memory comes back.
    gone = weakref.ref(runtime)
    del runtime
    gc.collect()
    assert gone() is None


async def _subscribed_http_session(served: Any, server: Server) -> tuple[Any, SessionRuntime]:
    client = served.client()
    assert (await client.initialize()).status == 200
    for n in range(20):
        reply = await client.request("resources/subscribe", {"uri": uri(n, 1000)})
        assert "result" in reply.last, reply.last
    runtime = the_runtime(server)
    assert len(runtime.session.subscriptions) == 20
    return client, runtime


async def test_subscriptions_end_with_an_http_session_deleted() -> None:
    server = watched_server()
    with trio.fail_after(TIMEOUT):
        async with serve(server) as served:
            client, runtime = await _subscribed_http_session(served, server)
            assert (await client.delete()).status_code == 204
            held = runtime.session.subscriptions
            assert (len(held), held.bytes) == (0, 0)
            assert runtime not in server._hub


async def test_subscriptions_end_with_an_http_session_whose_client_vanished() -> None:
    """A client that goes without a word: its session expires, and its subscriptions with it."""
    server = watched_server()
    timeout = 0.2
    with trio.fail_after(TIMEOUT):
        async with serve(server, session_idle_timeout=timeout) as served:
            _, runtime = await _subscribed_http_session(served, server)
            while runtime in server._hub:  # noqa: ASYNC110 - expiry runs on its own clock
                await trio.sleep(timeout / 2)
            held = runtime.session.subscriptions
            assert (len(held), held.bytes) == (0, 0)
