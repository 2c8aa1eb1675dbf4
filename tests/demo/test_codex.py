"""The demo's codex: its resources, template and prompt, golden lists, and the tour that shows them.

Golden files: `tests/demo/golden/demo_<list>.json` hold the demo server's `resources/list`,
`resources/templates/list` and `prompts/list` results (protocol 2025-11-25), as the schema-
checked in-process client receives them. After an intended change, regenerate them with
`TRIO_MCP_UPDATE_GOLDEN=1 python -m pytest tests/demo/test_codex.py` and review the diff.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import trio

import demo_tools
from demo_tools import codex
from tests.helpers import REPO_ROOT
from tests.timing import scaled
from trio_mcp import RequestError
from trio_mcp.testing import connect

GOLDEN = Path(__file__).parent / "golden"
LISTS = ["resources/list", "resources/templates/list", "prompts/list"]
TIMEOUT = scaled(60)


def golden_path(method: str) -> Path:
    return GOLDEN / f"demo_{method.replace('/', '_')}.json"


@pytest.mark.parametrize("method", LISTS)
async def test_demo_lists_match_their_golden_files(method: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with connect(demo_tools.build_server()) as client:
            listed = await client.request(method)
    path = golden_path(method)
    if os.environ.get("TRIO_MCP_UPDATE_GOLDEN"):
        path.write_text(json.dumps(listed, indent=2, ensure_ascii=False) + "\n")
    assert listed == json.loads(path.read_text())


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_demo_codex_reads_completes_and_briefs(version: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with connect(demo_tools.build_server(), protocol_version=version) as client:
            factions = json.loads((await client.read_resource("wh40k://codex/factions")).text)
            assert list(factions) == list(codex.UNITS)
            for faction, names in factions.items():
                for unit_id, name in enumerate(names):
                    read = await client.read_resource(f"wh40k://units/{faction}/{unit_id}")
                    assert json.loads(read.text)["name"] == name
            with pytest.raises(RequestError) as missing:
                await client.read_resource("wh40k://units/orks/3")
            assert missing.value.data == {"uri": "wh40k://units/orks/3"}
            with pytest.raises(RequestError, match="faction"):
                await client.read_resource("wh40k://units/eldar/0")

            (briefing,) = await client.list_prompts()
            assert [(a.name, a.required) for a in briefing.arguments] == [
                ("attacker", True),
                ("defender", True),
                ("battlefield", False),
            ]
            assert (await client.complete(briefing, "attacker", "")).values == tuple(codex.UNITS)
            assert (await client.complete(briefing, "battlefield", "i")).values == ("ice_world",)
            (template,) = await client.list_resource_templates()
            assert (await client.complete(template, "faction", "t")).values == ("tyranids",)
            got = await client.get_prompt(
                briefing.name,
                {"attacker": "orks", "defender": "tyranids", "battlefield": "ice_world"},
            )
            assert "Gorkanaut" in got.text
            assert "Hive Tyrant" in got.text
            assert "ice world" in got.text


async def test_the_battle_announces_the_latest_report() -> None:
    updates: list[str] = []
    with trio.fail_after(TIMEOUT):
        async with connect(demo_tools.build_server()) as client:
            await client.subscribe(codex.LATEST_BATTLE, updates.append)
            result = await client.call_tool(
                "wh40k.battle_simulation", {"imperial_force": "Cadians", "enemy_force": "Orks"}
            )
            # A plain handler runs as the update is read: before the tool's answer.
            assert updates == [codex.LATEST_BATTLE]
            latest = await client.read_resource(codex.LATEST_BATTLE)
            assert latest.text == result.structured["report"]  # type: ignore[index]


@pytest.mark.slow
def test_trio_mcp_demo_shows_the_codex() -> None:
    import subprocess  # noqa: PLC0415

    done = subprocess.run(
        [sys.executable, "-m", "trio_mcp", "demo"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    shown = [
        "wh40k://codex/factions  Factions of the codex (application/json)",
        "wh40k://units/{faction}/{unit_id}  Unit datasheet (template)",
        'read wh40k://units/orks/1\n  = {"faction":"orks","unit_id":1,"name":"Meganobz"',
        "Prompt wh40k.battle_briefing(attacker, defender, battlefield?)",
        "complete defender='n'  = necrons",
        "You are a tactician of the space marines.",
        "Subscribed to wh40k://battles/latest",
        "9. wh40k.battle_simulation(",
        "     resource updated: wh40k://battles/latest\n   = imperial_force:",
    ]
    positions = [out.index(line) for line in shown]
    assert positions == sorted(positions)
