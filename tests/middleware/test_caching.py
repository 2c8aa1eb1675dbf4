"""`ResponseCache`: lists and reads kept as long as their hints say, per principal when private."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import trio

from tests.http_helpers import serve
from trio_mcp import AuthInfo, CacheHint, RequestError, Server
from trio_mcp.middleware import CallNext, ResolvedRequest, ResponseCache
from trio_mcp.testing import connect

TIMEOUT = 30
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
MINUTE = CacheHint(ttl_ms=60_000)
#: What a 2026-07-28 request says of itself over HTTP (no handshake).
META = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Built:
    """A server with a cache, and a spy inside it counting the requests that got past."""

    def __init__(
        self, *, cache: dict[str, Any] | None = None, outer: tuple[Any, ...] = (), **options: Any
    ) -> None:
        self.clock = FakeClock()
        self.ran: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()
        server = self.server = Server("cached", middleware=outer, **options)
        self.cache = ResponseCache(server, clock=self.clock, **(cache or {}))
        server.add_middleware(self.cache)
        server.add_middleware(self.spy)

        @server.tool(scopes=["a"])
        def alpha() -> str:
            return "a"

        @server.tool()
        def beta() -> str:
            return "b"

        @server.resource("doc://{name}", cache=MINUTE)
        def doc(name: str) -> str:
            self.reads[name] += 1
            return f"{name} v{self.reads[name]}"

        @server.resource("plain://{name}")
        def plain(name: str) -> str:
            self.reads[name] += 1
            return f"{name} v{self.reads[name]}"

        @server.resource("mine://{name}", cache=CacheHint(ttl_ms=60_000, scope="private"))
        def mine(name: str) -> str:
            self.reads[name] += 1
            return f"{name} v{self.reads[name]}"

        @server.resource("broken://{name}", cache=MINUTE)
        def broken(name: str) -> str:
            self.reads[name] += 1
            raise ValueError("no")

    async def spy(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        self.ran[request.method] += 1
        return await call_next(request)


async def test_with_no_hints_nothing_is_cached() -> None:
    built = Built()
    async with connect(built.server, protocol_version=MODERN) as client:
        for _ in range(3):
            await client.list_tools()
            await client.read_resource("plain://x")
    assert built.ran["tools/list"] == 3
    assert built.reads["x"] == 3
    assert len(built.cache) == 0


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
async def test_hinted_lists_and_reads_are_served_until_their_ttl_runs_out(version: str) -> None:
    built = Built(list_cache={"tools/list": MINUTE})
    async with connect(built.server, protocol_version=version) as client:
        first = await client.request("tools/list")
        built.clock.now += 45
        second = await client.request("tools/list")
        assert (await client.read_resource("doc://x")).text == "x v1"
        assert (await client.read_resource("doc://x")).text == "x v1"
        built.clock.now += 61
        third = await client.request("tools/list")
        assert (await client.read_resource("doc://x")).text == "x v2"
        await client.list_prompts()  # no hint: not cached
        await client.list_prompts()
    assert built.ran["tools/list"] == 2  # the second came from the cache
    assert built.ran["prompts/list"] == 2
    assert second["tools"] == first["tools"]
    if version == MODERN:
        # A kept result tells the client the time it has left, never more than its hint.
        assert first["ttlMs"] == 60_000
        assert second["ttlMs"] == 15_000
        assert third["ttlMs"] == 60_000
    else:
        assert "ttlMs" not in second  # the handshake-era result, kept apart
    stats = built.cache.stats()
    assert (stats.hits, stats.misses) == (2, 4)


async def test_revisions_and_cursors_are_kept_apart() -> None:
    built = Built(list_cache={"tools/list": MINUTE}, page_size=1)
    async with connect(built.server, protocol_version=HANDSHAKE) as old:
        page1 = await old.request("tools/list")
        page2 = await old.request("tools/list", {"cursor": page1["nextCursor"]})
    # The same lists for a 2026-07-28 client: its results carry resultType and ttlMs (the
    # schema check of `connect` refuses a handshake-era result here).
    async with connect(built.server, protocol_version=MODERN) as new:
        modern1 = await new.request("tools/list")
        modern2 = await new.request("tools/list", {"cursor": modern1["nextCursor"]})
        again = await new.request("tools/list", {"cursor": modern1["nextCursor"]})
    assert [t["name"] for t in page1["tools"] + page2["tools"]] == ["alpha", "beta"]
    assert [t["name"] for t in modern1["tools"] + modern2["tools"]] == ["alpha", "beta"]
    assert "resultType" not in page1
    assert modern1["resultType"] == modern2["resultType"] == "complete"
    assert again == modern2
    assert built.ran["tools/list"] == 4


async def test_a_list_change_or_an_update_drops_what_depends_on_it() -> None:
    built = Built(list_cache={"tools/list": MINUTE, "resources/templates/list": MINUTE})
    server = built.server
    async with connect(server) as client:
        await client.list_tools()
        await client.list_resource_templates()
        await client.read_resource("doc://x")
        await client.read_resource("doc://y")

        @server.tool()
        def gamma() -> str:
            return "g"

        # The tools changed: that list goes; the resources' stay.
        assert [t.name for t in await client.list_tools()] == ["alpha", "beta", "gamma"]
        await client.list_resource_templates()
        assert built.ran["tools/list"] == 2
        assert built.ran["resources/templates/list"] == 1
        # An announced change (another worker's, say) counts as one.
        await server.announce_list_changed("tools")
        await client.list_tools()
        assert built.ran["tools/list"] == 3
        # An update of one URI drops its reads, and only them.
        await server.resource_updated("doc://x")
        assert (await client.read_resource("doc://x")).text == "x v2"
        assert (await client.read_resource("doc://y")).text == "y v1"
        # A change of the resources drops every read.
        server.remove_resource("plain://{name}")
        assert (await client.read_resource("doc://y")).text == "y v2"


async def test_a_ttl_of_its_own_caches_without_hints_and_errors_are_never_kept() -> None:
    built = Built(cache={"ttl": 30})
    async with connect(built.server, protocol_version=MODERN) as client:
        first = await client.request("tools/list")
        second = await client.request("tools/list")
        assert (await client.read_resource("plain://x")).text == "x v1"
        assert (await client.read_resource("plain://x")).text == "x v1"
        for _ in range(2):
            with pytest.raises(RequestError):
                await client.read_resource("broken://y")
    assert built.ran["tools/list"] == 1
    assert first["ttlMs"] == second["ttlMs"] == 0  # the client is still told its hint
    assert built.reads == Counter({"x": 1, "y": 2})


async def test_what_an_outer_middleware_changes_does_not_reach_the_kept_result() -> None:
    async def scribble(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        result = await call_next(request)
        if request.method == "tools/list":
            result["tools"].clear()
        return result

    built = Built(list_cache={"tools/list": MINUTE}, outer=(scribble,))
    async with connect(built.server) as client:
        assert await client.list_tools() == []
        assert await client.list_tools() == []
    assert built.ran["tools/list"] == 1
    assert built.cache.stats().hits == 1


async def test_the_bounds_hold_least_recently_used_first() -> None:
    built = Built(cache={"max_entries": 2})
    async with connect(built.server) as client:
        for name in ("a", "b", "a", "c", "a", "b"):
            await client.read_resource(f"doc://{name}")
    # a, b kept; a used; c pushes b out; a still there; b read again.
    assert built.reads == Counter({"a": 1, "b": 2, "c": 1})
    stats = built.cache.stats()
    assert stats.entries == 2
    assert stats.evictions == 2
    assert stats.bytes > 0


async def test_private_results_are_not_kept_without_a_token() -> None:
    built = Built()
    async with connect(built.server) as client:
        await client.read_resource("mine://x")
        await client.read_resource("mine://x")
    assert built.reads["x"] == 2


PEOPLE = {
    "alice": AuthInfo(subject="alice", issuer="https://as", scopes=frozenset({"a"})),
    "alice-narrow": AuthInfo(subject="alice", issuer="https://as"),
    "bob": AuthInfo(subject="bob", issuer="https://as"),
}


class Tokens:
    async def verify(self, token: str) -> AuthInfo | None:
        return PEOPLE.get(token)


@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
async def test_over_http_a_list_cut_to_a_token_is_kept_per_principal_and_scopes(
    version: str,
) -> None:
    built = Built(list_cache={"tools/list": MINUTE})
    seen: dict[str, list[str]] = {}
    with trio.fail_after(TIMEOUT):
        async with serve(built.server, auth=Tokens()) as served:
            for who in ("alice", "bob", "alice-narrow", "alice", "bob"):
                client = served.client(version, authorization=f"Bearer {who}")
                if version == HANDSHAKE:
                    await client.initialize()
                reply = await client.request("tools/list", META if version == MODERN else None)
                names = [t["name"] for t in reply.result["tools"]]
                assert seen.setdefault(who, names) == names
                if version == MODERN:
                    assert reply.result["cacheScope"] == "private"
            # A private read is kept per principal too.
            for who in ("alice", "bob", "alice"):
                client = served.client(version, authorization=f"Bearer {who}")
                if version == HANDSHAKE:
                    await client.initialize()
                params = {"uri": "mine://x", **(META if version == MODERN else {})}
                await client.request("resources/read", params)
    # Alice's token has scope "a": she sees alpha; bob and her narrower token do not.
    assert seen == {"alice": ["alpha", "beta"], "bob": ["beta"], "alice-narrow": ["beta"]}
    assert built.ran["tools/list"] == 3  # one per (principal, scopes); the repeats were kept
    assert built.reads["x"] == 2  # alice once, bob once


async def test_private_caching_can_be_turned_off() -> None:
    built = Built(list_cache={"tools/list": MINUTE}, cache={"private": False})
    with trio.fail_after(TIMEOUT):
        async with serve(built.server, auth=Tokens()) as served:
            client = served.client(authorization="Bearer alice")
            await client.initialize()
            for _ in range(2):
                await client.request("tools/list")
    assert built.ran["tools/list"] == 2


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="ttl"):
        ResponseCache(Server(), ttl=-1)
    with pytest.raises(ValueError, match="max_entries"):
        ResponseCache(Server(), max_entries=0)
