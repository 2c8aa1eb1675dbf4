"""The server's lifespan and its session hooks, under every way of serving it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import LATEST, open_memory_peer
from tests.http_helpers import serve
from tests.processes import cli
from tests.timing import scaled
from trio_mcp import Context, LifespanError, Server, SessionInfo
from trio_mcp.testing import connect

TIMEOUT = scaled(30)
MODERN = "2026-07-28"


@dataclass
class Pool:
    """Stands in for a database pool: open while the lifespan runs."""

    events: list[str]
    open: bool = True
    queries: list[str] = field(default_factory=list)


def pooled_server(events: list[str]) -> Server:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[Pool]:
        events.append(f"open {server.name}")
        pool = Pool(events)
        try:
            yield pool
        finally:
            await trio.lowlevel.checkpoint()  # an async close, as a real pool's
            pool.open = False
            events.append("closed")

    server = Server("pooled", lifespan=lifespan)

    @server.tool()
    async def query(sql: str, ctx: Context[Pool]) -> str:
        pool = ctx.lifespan
        assert pool.open
        pool.queries.append(sql)
        events.append(f"query {sql}")
        return f"{len(pool.queries)} queries"

    return server


async def test_the_lifespan_wraps_serving_and_its_value_reaches_every_context() -> None:
    events: list[str] = []
    server = pooled_server(events)
    async with connect(server) as client:
        assert events == ["open pooled"]
        assert (await client.call_tool("query", {"sql": "a"})).text == "1 queries"
        assert (await client.call_tool("query", {"sql": "b"})).text == "2 queries"
    assert events == ["open pooled", "query a", "query b", "closed"]


async def test_concurrent_connections_share_one_lifespan() -> None:
    events: list[str] = []
    server = pooled_server(events)
    async with connect(server) as one, connect(server) as two:
        await one.call_tool("query", {"sql": "1"})
        await two.call_tool("query", {"sql": "2"})
    assert events.count("open pooled") == 1
    assert events.count("closed") == 1
    assert events[-1] == "closed"


async def test_the_lifespan_exits_after_requests_in_flight_ended() -> None:
    events: list[str] = []
    server = pooled_server(events)
    started, release = trio.Event(), trio.Event()

    @server.tool()
    async def slow(ctx: Context[Pool]) -> str:
        started.set()
        await release.wait()
        events.append(f"slow saw the pool {'open' if ctx.lifespan.open else 'closed'}")
        return "done"

    async with open_memory_peer(server) as peer:
        request_id = await peer.start_request("tools/call", {"name": "slow"})
        await started.wait()
        await peer.close()  # end of input: the call may finish within the grace period
        release.set()
        while not any(m.get("id") == request_id for m in peer.log):
            await peer.receive()
    assert events[-2:] == ["slow saw the pool open", "closed"]


async def test_a_lifespan_that_raises_starts_nothing() -> None:
    served: list[str] = []

    @asynccontextmanager
    async def broken(server: Server) -> AsyncIterator[None]:
        raise OSError("database unreachable")
        yield  # pragma: no cover

    server = Server("broken", lifespan=broken)

    @server.tool()
    def ping() -> str:
        served.append("ping")
        return "pong"

    with pytest.raises(LifespanError, match="database unreachable") as caught:
        async with connect(server):
            pass  # pragma: no cover - never reached
    assert isinstance(caught.value.__cause__, OSError)
    assert served == []


def test_trio_mcp_run_exits_1_with_the_lifespans_error_and_serves_nothing(tmp_path: Path) -> None:
    module = tmp_path / "broken_server.py"
    module.write_text(
        "from contextlib import asynccontextmanager\n"
        "from trio_mcp import Server\n"
        "@asynccontextmanager\n"
        "async def lifespan(server):\n"
        "    raise ConnectionRefusedError('no database at db:5432')\n"
        "    yield\n"
        "server = Server('broken', lifespan=lifespan)\n"
        "@server.tool()\n"
        "def ping() -> str:\n"
        "    return 'pong'\n"
    )
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}
    }}  # fmt: skip
    done = cli("run", str(module), input=json.dumps(init) + "\n")
    assert done.returncode == 1
    assert done.stdout == ""  # nothing was served
    assert "no database at db:5432" in done.stderr
    assert "failed to start" in done.stderr


async def test_over_http_the_lifespan_wraps_the_server() -> None:
    events: list[str] = []
    server = pooled_server(events)
    with trio.fail_after(TIMEOUT):
        async with serve(server) as served:
            client = served.client()
            await client.initialize()
            reply = await client.call("query", {"sql": "over http"})
            assert events == ["open pooled", "query over http"]
        await served.finished.wait()
    assert reply.result["content"][0]["text"] == "1 queries"
    assert events[-1] == "closed"


async def test_session_hooks_see_each_handshake_session_start_and_end() -> None:
    seen: list[tuple[str, str | None, Any]] = []
    ended = trio.Event()
    server = Server("hooked")

    @server.on_session_start
    async def start(session: SessionInfo) -> None:
        seen.append(("start", session.protocol_version, (session.client_info or {}).get("name")))

    @server.on_session_end
    async def end(session: SessionInfo) -> None:
        seen.append(("end", session.protocol_version, session.id))
        ended.set()

    @server.tool()
    def hello() -> str:
        return "hi"

    async with server.running():
        async with connect(server, client_info={"name": "ann", "version": "1"}) as client:
            await client.call_tool("hello")
        with trio.fail_after(TIMEOUT):
            await ended.wait()
        # A 2026-07-28 client has no session: neither hook runs for it.
        async with connect(server, protocol_version=MODERN) as client:
            await client.call_tool("hello")
    assert [s[:2] for s in seen] == [("start", LATEST), ("end", LATEST)]
    assert seen[0][2] == "ann"


async def test_session_hooks_run_for_streamable_http_sessions() -> None:
    seen: list[str] = []
    server = Server("hooked")

    @server.on_session_start
    async def start(session: SessionInfo) -> None:
        seen.append(f"start {session.protocol_version}")

    @server.on_session_end
    async def end(session: SessionInfo) -> None:
        seen.append("end")

    @server.tool()
    def hello() -> str:
        return "hi"

    with trio.fail_after(TIMEOUT):
        async with serve(server) as served:
            client = served.client()
            await client.initialize()
            await client.call("hello")
            deleted = await client.delete()
            assert deleted.status_code == 204
        await served.finished.wait()
    assert seen == [f"start {LATEST}", "end"]
