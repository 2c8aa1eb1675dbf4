"""Resources, templates, prompts and completion end to end, in-process over memory channels.

The server is `tests/fixtures/primitives_server.py`. Every message a test receives is checked
against the official schema of the revision it speaks (`check`).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio
import trio.testing

from tests.fixtures import primitives_server as fixture
from tests.helpers import MODERN, RawPeer, ask, init_params, open_memory_peer, session
from tests.schema_check import validate_server_message
from tests.timing import scaled
from trio_mcp import CacheHint, Server
from trio_mcp.transports import memory_channel_pair

TIMEOUT = scaled(60)


async def result(
    method: str, params: dict[str, Any] | None = None, version: str = "2025-11-25"
) -> Any:
    async with session(fixture.server, version) as peer:
        response = await ask(peer, method, params, version)
    assert "result" in response, response
    return response["result"]


# -- lists ------------------------------------------------------------------------------------


async def test_resources_list() -> None:
    listed = await result("resources/list")
    assert listed["resources"][:2] == [
        {
            "uri": "wh40k://codex/factions",
            "name": "factions",
            "title": "Factions",
            "description": "Every faction of the codex",
            "icons": [
                {
                    "src": "https://example.com/codex.png",
                    "mimeType": "image/png",
                    "sizes": ["48x48"],
                }
            ],
            "annotations": {
                "audience": ["user", "assistant"],
                "priority": 0.9,
                "lastModified": "2025-01-12T15:00:58Z",
            },
        },
        {
            "uri": "wh40k://codex/motto",
            "name": "wh40k://codex/motto",
            "description": "A static text",
        },
    ]
    assert [r["uri"] for r in listed["resources"]] == [
        "wh40k://codex/factions",
        "wh40k://codex/motto",
        "wh40k://codex/this-file",
        "wh40k://logo",
        "wh40k://broken",
        "wh40k://sealed",
        "wh40k://battle/latest",
    ]
    logo = listed["resources"][3]
    assert logo == {
        "uri": "wh40k://logo",
        "name": "logo",
        "title": "Logo",
        "description": "The codex logo.",
        "mimeType": "image/png",
        "size": len(fixture.PIXEL),
    }


async def test_older_revisions_get_only_the_fields_they_know() -> None:
    listed = await result("resources/list", version="2025-03-26")
    factions = listed["resources"][0]
    assert "title" not in factions
    assert "icons" not in factions
    assert factions["annotations"] == {"audience": ["user", "assistant"], "priority": 0.9}
    prompts = await result("prompts/list", version="2025-06-18")
    assert prompts["prompts"][0]["title"] == "Battle briefing"


async def test_resource_templates_list() -> None:
    listed = await result("resources/templates/list")
    assert listed["resourceTemplates"] == [
        {
            "uriTemplate": "wh40k://units/{faction}/{unit_id}",
            "name": "unit",
            "description": "One unit of a faction's codex.",
            "mimeType": "application/json",
        },
        {
            "uriTemplate": "wh40k://roster/{faction}/{name}",
            "name": "roster",
            "description": "A unit by name.",
        },
        {
            "uriTemplate": "wh40k://search{?q,limit}",
            "name": "search",
            "description": "Unit names that contain q.",
        },
        {
            "uriTemplate": "wh40k://files/{+path}",
            "name": "files",
            "description": "A path kept as it came.",
        },
    ]


async def test_prompts_list() -> None:
    listed = await result("prompts/list")
    assert listed["prompts"][0] == {
        "name": "wh40k.battle_briefing",
        "title": "Battle briefing",
        "description": "Brief a model on a battle.",
        "arguments": [
            {"name": "attacker", "description": "Who attacks", "required": True},
            {"name": "defender", "description": "Who defends", "required": True},
            {"name": "turns", "description": "How many turns", "required": False},
            {"name": "detail", "required": False},
        ],
    }
    assert [p["name"] for p in listed["prompts"]] == [
        "wh40k.battle_briefing",
        "wh40k.greeting",
        "wh40k.mixed",
        "wh40k.failing",
    ]


async def test_lists_page_in_a_stable_order() -> None:
    server = Server("paged", page_size=2)
    for i in range(5):
        server.add_resource(f"x://r/{i}", str(i))
    async with session(server, "2025-11-25") as peer:
        seen: list[str] = []
        cursor = None
        while True:
            response = await ask(
                peer, "resources/list", {"cursor": cursor} if cursor else None, "2025-11-25"
            )
            page = response["result"]
            assert len(page["resources"]) <= 2
            seen.extend(r["uri"] for r in page["resources"])
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert seen == [f"x://r/{i}" for i in range(5)]
        bad = await ask(peer, "prompts/list", {"cursor": cursor or "bm9wZQ=="}, "2025-11-25")
        assert bad["error"]["code"] == -32602


# -- reads -------------------------------------------------------------------------------------

READS: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "wh40k://codex/factions",
        [
            {
                "uri": "wh40k://codex/factions",
                "mimeType": "application/json",
                "text": '["necrons","orks","space_marines"]',
            }
        ],
    ),
    (
        "wh40k://codex/motto",
        [{"uri": "wh40k://codex/motto", "mimeType": "text/plain", "text": "Waaagh!"}],
    ),
    (
        "wh40k://units/orks/1",
        [
            {
                "uri": "wh40k://units/orks/1",
                "mimeType": "application/json",
                "text": '{"faction":"orks","unit_id":1,"name":"nobz"}',
            }
        ],
    ),
    (
        "wh40k://roster/space_marines/scouts",
        [
            {
                "uri": "wh40k://roster/space_marines/scouts",
                "mimeType": "text/plain",
                "text": "scouts of the space_marines",
            }
        ],
    ),
    (
        "wh40k://search?q=o&limit=3",
        [
            {
                "uri": "wh40k://search?q=o&limit=3",
                "mimeType": "application/json",
                "text": '["boyz","nobz","warriors"]',
            }
        ],
    ),
    (
        "wh40k://search",
        [{"uri": "wh40k://search", "mimeType": "application/json", "text": '["boyz","nobz"]'}],
    ),
    (
        "wh40k://files/a/b%20c.txt",
        [{"uri": "wh40k://files/a/b%20c.txt", "mimeType": "text/plain", "text": "a/b c.txt"}],
    ),
    (
        "wh40k://logo",
        [
            {
                "uri": "wh40k://logo",
                "mimeType": "image/png",
                "blob": base64.b64encode(fixture.PIXEL).decode(),
            }
        ],
    ),
]


@pytest.mark.parametrize(("uri", "contents"), READS)
async def test_read(uri: str, contents: list[dict[str, Any]]) -> None:
    assert (await result("resources/read", {"uri": uri}))["contents"] == contents


async def test_a_file_resource_is_read_from_disk_with_a_guessed_type() -> None:
    (content,) = (await result("resources/read", {"uri": "wh40k://codex/this-file"}))["contents"]
    assert content["mimeType"] == "text/x-python"
    assert content["text"].startswith('"""Resources, templates and prompts for the tests')


async def test_reads_and_lists_carry_cache_hints_under_2026() -> None:
    read = await result("resources/read", {"uri": "wh40k://codex/factions"}, MODERN)
    assert (read["ttlMs"], read["cacheScope"], read["resultType"]) == (
        60_000,
        "private",
        "complete",
    )
    other = await result("resources/read", {"uri": "wh40k://codex/motto"}, MODERN)
    assert (other["ttlMs"], other["cacheScope"]) == (0, "public")
    for method in ("resources/list", "resources/templates/list", "prompts/list"):
        listed = await result(method, None, MODERN)
        assert (listed["ttlMs"], listed["cacheScope"]) == (0, "public")
    old = await result("resources/read", {"uri": "wh40k://codex/factions"})
    assert "ttlMs" not in old


async def test_list_cache_hints_are_set_per_list() -> None:
    server = Server("cached", list_cache={"prompts/list": CacheHint(5000)})
    async with session(server, MODERN) as peer:
        listed = (await ask(peer, "prompts/list", None, MODERN))["result"]
    assert (listed["ttlMs"], listed["cacheScope"]) == (5000, "public")
    with pytest.raises(ValueError, match="list_cache names"):
        Server("bad", list_cache={"tools/call": CacheHint()})


# -- prompts -----------------------------------------------------------------------------------


async def test_prompt_arguments_are_coerced_from_strings() -> None:
    got = await result(
        "prompts/get",
        {
            "name": "wh40k.battle_briefing",
            "arguments": {
                "attacker": "orks",
                "defender": "necrons",
                "turns": "5",
                "detail": "full",
            },
        },
    )
    assert got == {
        "description": "Brief a model on a battle.",
        "messages": [
            {
                "role": "user",
                "content": {"type": "text", "text": "orks attack necrons for 5 turns (full)."},
            },
            {"role": "assistant", "content": {"type": "text", "text": "Understood."}},
        ],
    }


async def test_a_string_prompt_is_one_user_message() -> None:
    got = await result(
        "prompts/get", {"name": "wh40k.greeting", "arguments": {"name": "Ghazghkull"}}, MODERN
    )
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Hello, Ghazghkull!"}}
    ]


async def test_prompt_content_blocks_and_their_downgrade() -> None:
    new = (await result("prompts/get", {"name": "wh40k.mixed"}))["messages"]
    assert [(m["role"], m["content"]["type"]) for m in new] == [
        ("user", "image"),
        ("assistant", "audio"),
        ("user", "resource"),
        ("user", "resource_link"),
        ("user", "text"),
    ]
    old = (await result("prompts/get", {"name": "wh40k.mixed"}, "2024-11-05"))["messages"]
    assert [m["content"]["type"] for m in old] == ["image", "text", "resource", "text", "text"]


# -- completion --------------------------------------------------------------------------------

COMPLETIONS: list[tuple[dict[str, Any], str, dict[str, str] | None, list[str]]] = [
    (
        {"type": "ref/prompt", "name": "wh40k.battle_briefing"},
        "",
        None,
        ["orks", "necrons", "space_marines"],
    ),
    ({"type": "ref/prompt", "name": "wh40k.battle_briefing"}, "S", None, ["space_marines"]),
    ({"type": "ref/prompt", "name": "wh40k.battle_briefing"}, "x", None, []),
    (
        {"type": "ref/prompt", "name": "wh40k.battle_briefing", "argument": "detail"},
        "f",
        None,
        ["full"],
    ),
    ({"type": "ref/prompt", "name": "wh40k.greeting", "argument": "name"}, "G", None, []),
    ({"type": "ref/resource", "uri": "wh40k://units/{faction}/{unit_id}"}, "n", None, ["necrons"]),
    (
        {"type": "ref/resource", "uri": "wh40k://roster/{faction}/{name}", "argument": "name"},
        "",
        {"faction": "necrons"},
        ["warriors", "immortals"],
    ),
    (
        {"type": "ref/resource", "uri": "wh40k://roster/{faction}/{name}", "argument": "name"},
        "t",
        None,
        ["terminators"],
    ),
]


@pytest.mark.parametrize(("ref", "value", "context", "expected"), COMPLETIONS)
async def test_complete(
    ref: dict[str, Any], value: str, context: dict[str, str] | None, expected: list[str]
) -> None:
    ref = dict(ref)
    argument = ref.pop("argument", "attacker" if ref["type"] == "ref/prompt" else "faction")
    params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
    if context is not None:
        params["context"] = {"arguments": context}
    got = await result("completion/complete", params)
    assert got == {"completion": {"values": expected, "total": len(expected), "hasMore": False}}


async def test_completion_sends_at_most_100_values() -> None:
    server = Server("many")

    @server.prompt(completions={"word": lambda value: [f"{value}{i}" for i in range(250)]})
    def many(word: str) -> str:
        """Many completions."""
        return word

    async with session(server, "2025-11-25") as peer:
        got = await ask(
            peer,
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "many"},
                "argument": {"name": "word", "value": "w"},
            },
            "2025-11-25",
        )
    completion = got["result"]["completion"]
    assert completion["values"][:2] == ["w0", "w1"]
    assert (len(completion["values"]), completion["total"], completion["hasMore"]) == (
        100,
        250,
        True,
    )


# -- capabilities, subscriptions, living lists -------------------------------------------------


async def test_capabilities_follow_what_is_registered() -> None:
    async with session(Server("bare"), "2025-11-25") as peer:
        init = peer.log[0]["result"]["capabilities"]
        assert init == {"logging": {}}
    async with session(fixture.server, "2025-11-25") as peer:
        init = peer.log[0]["result"]["capabilities"]
        assert init == {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            "logging": {},
        }
        # 2026-07-28 hears of the same changes on subscriptions/listen streams.
        discovered = await ask(peer, "server/discover", {}, MODERN)
        assert discovered["result"]["capabilities"] == init


async def test_updates_reach_only_subscribed_sessions() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            open_memory_peer(fixture.server) as watcher,
            open_memory_peer(fixture.server) as other,
        ):
            assert (
                await ask(
                    watcher, "resources/subscribe", {"uri": "wh40k://battle/latest"}, "2025-11-25"
                )
            )["result"] == {}
            called = await ask(
                other,
                "tools/call",
                {"name": "wh40k.report_battle", "arguments": {"report": "orks won"}},
                "2025-11-25",
            )
            assert called["result"]["content"][0]["text"] == "told 1"
            update = await watcher.receive()
            validate_server_message(update, "2025-11-25")
            assert update == {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "wh40k://battle/latest"},
            }
            read = await ask(
                watcher, "resources/read", {"uri": "wh40k://battle/latest"}, "2025-11-25"
            )
            assert read["result"]["contents"][0]["text"] == "orks won"
            await ask(
                watcher, "resources/unsubscribe", {"uri": "wh40k://battle/latest"}, "2025-11-25"
            )
            called = await ask(
                other,
                "tools/call",
                {"name": "wh40k.report_battle", "arguments": {"report": "a draw"}},
                "2025-11-25",
            )
            assert called["result"]["content"][0]["text"] == "told 0"
            assert not [
                m
                for m in watcher.log + other.log
                if m.get("method") == "notifications/resources/updated"
            ][1:]


async def test_list_changes_are_sent_once_per_burst() -> None:
    server = Server("living")

    @server.tool()
    def base() -> str:
        """A tool."""
        return "x"

    with trio.fail_after(TIMEOUT):
        async with open_memory_peer(server) as peer:
            await trio.testing.wait_all_tasks_blocked()
            server.add_resource("x://one", "1")
            server.add_resource("x://two", "2")
            server.add_prompt(lambda: "hi", name="hello")
            server.set_enabled("tool", "base", False)
            got = {(await peer.receive())["method"] for _ in range(3)}
            assert got == {
                "notifications/resources/list_changed",
                "notifications/prompts/list_changed",
                "notifications/tools/list_changed",
            }
            for message in peer.log[1:]:
                validate_server_message(message, "2025-11-25")
            listed = await ask(peer, "tools/list", None, "2025-11-25")
            assert listed["result"]["tools"] == []
            called = await ask(peer, "tools/call", {"name": "base", "arguments": {}}, "2025-11-25")
            assert called["error"]["code"] == -32602  # disabled: unknown
            server.set_enabled("tool", "base", True)
            assert (await peer.receive())["method"] == "notifications/tools/list_changed"
            server.remove_resource("x://one")
            assert (await peer.receive())["method"] == "notifications/resources/list_changed"
            listed = await ask(peer, "resources/list", None, "2025-11-25")
            assert [r["uri"] for r in listed["result"]["resources"]] == ["x://two"]
            # Nothing else was sent: one notification per burst.
            assert [m.get("method") for m in peer.log if "method" in m] == [
                *sorted(got, key=[m.get("method") for m in peer.log].index),
                "notifications/tools/list_changed",
                "notifications/resources/list_changed",
            ]


async def test_a_session_that_has_not_initialized_hears_no_list_changes() -> None:
    server = Server("quiet")
    with trio.fail_after(TIMEOUT):
        client, server_end = memory_channel_pair()
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_connection, server_end.receive, server_end.send)
            peer = RawPeer(client.send, client.receive)
            await trio.testing.wait_all_tasks_blocked()
            server.add_resource("x://one", "1")
            await trio.testing.wait_all_tasks_blocked()
            response = await peer.request("initialize", init_params())
            assert "result" in response
            assert peer.log == [response]  # no list_changed went out before it
            nursery.cancel_scope.cancel()
