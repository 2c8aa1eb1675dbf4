"""The client's resources, templates, subscriptions, prompts and completion, against real servers.

Peers: `tests/fixtures/primitives_server.py` in-process through `trio_mcp.testing.connect`
(every message, both ways, checked against the official schema of its revision), as a stdio
subprocess and over Streamable HTTP; and the official MCP SDK's server (`sdk_server.py`) over
stdio and Streamable HTTP. Waits are bounded by `trio.fail_after`; nothing sleeps to wait.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.fixtures import primitives_server as fixture
from tests.http_helpers import serve
from tests.runtime.client.test_client import TIMEOUT
from tests.sdk_servers import SDK_SERVER, sdk_http_server
from trio_mcp import (
    CacheHint,
    Completion,
    ImageContent,
    PromptArgument,
    PromptInfo,
    PromptMessage,
    RequestError,
    ResourceContents,
    ResourceTemplateInfo,
    Server,
    TextContent,
    open_client,
)
from trio_mcp.testing import connect

MODERN = "2026-07-28"
#: Both eras, and the oldest handshake revision.
VERSIONS = ["2024-11-05", "2025-11-25", MODERN]
PRIMITIVES = [sys.executable, "-m", "trio_mcp", "run", fixture.__file__]
UNIT = "wh40k://units/{faction}/{unit_id}"
LATEST = "wh40k://battle/latest"


async def exercise(client: Any, version: str) -> None:
    """What every transport and era must do alike with the primitives fixture."""
    resources = {r.uri: r for r in await client.list_resources()}
    factions = resources["wh40k://codex/factions"]
    old = version == "2024-11-05"  # no titles, no lastModified yet
    assert (factions.name, factions.title) == ("factions", None if old else "Factions")
    assert factions.annotations == {
        "audience": ["user", "assistant"],
        "priority": 0.9,
        **({} if old else {"lastModified": "2025-01-12T15:00:58Z"}),
    }
    assert resources["wh40k://logo"].mime_type == "image/png"
    assert resources["wh40k://logo"].size == len(fixture.PIXEL)

    templates = {t.uri_template: t for t in await client.list_resource_templates()}
    assert templates[UNIT].name == "unit"
    assert templates[UNIT].mime_type == "application/json"

    read = await client.read_resource("wh40k://codex/factions")
    assert read.contents == (
        ResourceContents(
            text='["necrons","orks","space_marines"]',
            uri="wh40k://codex/factions",
            mime_type="application/json",
        ),
    )
    assert read.cache == (CacheHint(60_000, "private") if version == MODERN else None)
    logo = await client.read_resource("wh40k://logo")
    assert logo.contents[0].blob == fixture.PIXEL
    assert logo.text == ""
    unit = await client.read_resource("wh40k://units/necrons/1")
    assert unit.text == '{"faction":"necrons","unit_id":1,"name":"immortals"}'

    prompts = {p.name: p for p in await client.list_prompts()}
    briefing = prompts["wh40k.battle_briefing"]
    assert briefing.title == (None if old else "Battle briefing")
    assert briefing.arguments[:2] == (
        PromptArgument("attacker", "Who attacks", required=True),
        PromptArgument("defender", "Who defends", required=True),
    )
    got = await client.get_prompt(
        "wh40k.battle_briefing", {"attacker": "orks", "defender": "necrons", "turns": 5}
    )
    assert got.messages == (
        PromptMessage("user", TextContent("orks attack necrons for 5 turns (short).")),
        PromptMessage("assistant", TextContent("Understood.")),
    )
    assert got.text == "orks attack necrons for 5 turns (short).\nUnderstood."

    # Literal arguments complete from their values; a template variable from its completer,
    # which sees the arguments already chosen.
    assert await client.complete(briefing, "defender", "n") == Completion(("necrons",), 1, False)
    roster = templates["wh40k://roster/{faction}/{name}"]
    done = await client.complete(roster, "name", "", context_arguments={"faction": "necrons"})
    assert done.values == ("warriors", "immortals")
    wire = {"type": "ref/resource", "uri": UNIT}
    assert (await client.complete(wire, "faction", "space")).values == ("space_marines",)

    # Errors: the era's resource-not-found code with the URI, and a variable that fails.
    with pytest.raises(RequestError) as missing:
        await client.read_resource("wh40k://nowhere")
    assert missing.value.code == (-32602 if version == MODERN else -32002)
    assert missing.value.data == {"uri": "wh40k://nowhere"}
    with pytest.raises(RequestError) as bad:
        await client.read_resource("wh40k://units/orks/many")
    assert bad.value.code == -32602
    assert "unit_id" in bad.value.message
    with pytest.raises(RequestError) as unknown:
        await client.get_prompt("wh40k.nothing")
    assert unknown.value.code == -32602


@pytest.mark.parametrize("version", VERSIONS)
async def test_in_process_with_every_message_checked(version: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with connect(fixture.server, protocol_version=version) as client:
            await exercise(client, version)
            mixed = await client.get_prompt("wh40k.mixed")
            assert mixed.messages[0] == PromptMessage(
                "user", ImageContent(base64.b64encode(fixture.PIXEL).decode(), "image/png")
            )
            assert [m.role for m in mixed.messages] == [
                "user",
                "assistant",
                "user",
                "user",
                "user",
            ]


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_over_a_stdio_subprocess(version: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client(PRIMITIVES, protocol_version=version) as client:
            await exercise(client, version)


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_over_streamable_http(version: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            serve(fixture.server) as served,
            open_client(served.url, protocol_version=version) as client,
        ):
            await exercise(client, version)


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
@pytest.mark.parametrize("kind", ["memory", "stdio", "http"])
async def test_subscription_updates_reach_the_handler(kind: str, version: str) -> None:
    # 2026-07-28: over a subscriptions/listen stream, which `subscribe` opens and
    # `unsubscribe` closes (each returns once the server has acknowledged or ended it).
    reports: list[str] = []
    read = [trio.Event(), trio.Event()]

    async def on_update(uri: str) -> None:
        # Runs in a task of its own: it may call the server.
        reports.append((await client.read_resource(uri)).text)
        read[len(reports) - 1].set()

    with trio.fail_after(TIMEOUT):
        async with (
            _target(kind) as target,
            open_client(target, protocol_version=version) as client,
        ):
            await client.subscribe(LATEST, on_update)
            told = await client.call_tool("wh40k.report_battle", {"report": "orks won"})
            assert told.text == "told 1"
            await read[0].wait()  # the handler reads at its own pace: one report at a time
            await client.call_tool("wh40k.report_battle", {"report": "necrons won"})
            await read[1].wait()
            await client.unsubscribe(LATEST)
            told = await client.call_tool("wh40k.report_battle", {"report": "a draw"})
            assert told.text == "told 0"
    assert reports == ["orks won", "necrons won"]


@asynccontextmanager
async def _target(kind: str) -> AsyncIterator[Any]:
    if kind == "http":
        async with serve(fixture.server) as served:
            yield served.url
    else:
        yield fixture.server if kind == "memory" else PRIMITIVES


async def test_list_changed_handlers_hear_each_kind() -> None:
    server = Server("changing")
    heard: list[str] = []
    all_three = trio.Event()

    def on_change(kind: str) -> None:
        heard.append(kind)
        if len(heard) == 3:
            all_three.set()

    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            for kind in ("tools", "resources", "prompts"):
                client.on_list_changed(kind, on_change)
            with pytest.raises(ValueError, match="unknown list kind"):
                client.on_list_changed("roots", on_change)  # type: ignore[arg-type]
            server.add_resource("x://one", "one")
            await trio.testing.wait_all_tasks_blocked()
            server.add_tool(lambda: 1, name="one", description="One")
            await trio.testing.wait_all_tasks_blocked()
            server.add_prompt(lambda: "hi", name="hi")
            await all_three.wait()
            assert sorted(heard) == ["prompts", "resources", "tools"]
            assert [r.uri for r in await client.list_resources()] == ["x://one"]
            client.on_list_changed("resources", None)
            server.remove_resource("x://one")
            server.remove_prompt("hi")
            await trio.testing.wait_all_tasks_blocked()
            assert [p.name for p in await client.list_prompts()] == []
    assert sorted(heard) == ["prompts", "prompts", "resources", "tools"]


async def test_lists_follow_cursors_to_the_end() -> None:
    server = Server("paged", page_size=2)
    server.add_resources(fixture)
    server.add_prompts(fixture)
    for i in range(5):
        server.add_resource(f"x://static/{i}", str(i))
    with trio.fail_after(TIMEOUT):
        async with connect(server) as client:
            uris = [r.uri for r in await client.list_resources()]
            assert len(uris) == len(set(uris)) == 9
            assert {f"x://static/{i}" for i in range(5)} <= set(uris)
            templates = await client.list_resource_templates()
            assert UNIT in {t.uri_template for t in templates}
            assert len(templates) == 4
            prompts = await client.list_prompts()
            assert sorted(p.name for p in prompts) == [
                "wh40k.battle_briefing",
                "wh40k.failing",
                "wh40k.greeting",
                "wh40k.mixed",
            ]


async def exercise_sdk(client: Any) -> None:
    resources = await client.list_resources()
    assert [(r.uri, r.mime_type) for r in resources] == [("sdk://greeting", "text/plain")]
    assert (await client.read_resource("sdk://greeting")).text == "hello from the SDK"
    (template,) = await client.list_resource_templates()
    assert template == ResourceTemplateInfo(
        "sdk://colours/{colour}",
        "colour",
        title=None,
        description="One colour by name",
        mime_type=template.mime_type,
        raw=template.raw,
    )
    assert (await client.read_resource("sdk://colours/red")).text == "the colour red"
    (ask,) = await client.list_prompts()
    assert ask == PromptInfo(
        "ask",
        description="Ask about a colour",
        arguments=(PromptArgument("colour", required=True), PromptArgument("detail")),
        raw=ask.raw,
    )
    got = await client.get_prompt("ask", {"colour": "blue"})
    assert got.messages == (PromptMessage("user", TextContent("Tell me about blue (short).")),)
    assert (await client.complete(template, "colour", "g")).values == ("green",)
    assert (await client.complete(ask, "colour", "")).values == ("red", "green", "blue")
    with pytest.raises(RequestError):
        await client.get_prompt("nothing")


@pytest.mark.slow
async def test_sdk_server_over_stdio() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_client([sys.executable, SDK_SERVER]) as client:
            await exercise_sdk(client)


@pytest.mark.slow
async def test_sdk_server_over_streamable_http() -> None:
    with trio.fail_after(TIMEOUT):
        async with sdk_http_server(SDK_SERVER) as url, open_client(url) as client:
            await exercise_sdk(client)
