"""The demo's skill (a Warhammer 40k rules primer): served, loaded and read, and toured."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
import trio

import demo_tools
from demo_tools.tour import show_skills
from tests.helpers import REPO_ROOT
from tests.timing import scaled
from trio_mcp.testing import connect

TIMEOUT = scaled(60)
SKILL = "skill://wh40k-rules/SKILL.md"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_demo_serves_its_rules_primer_as_a_skill(version: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with connect(demo_tools.build_server(), protocol_version=version) as client:
            (skill,) = await client.list_skills()
            loaded = await client.load_skill(skill)
            wounds = await client.read_skill_file(loaded, "references/wound-rolls.md")
            folder = await client.request(
                "resources/directory/read", {"uri": "skill://wh40k-rules"}
            )
    assert skill.uri == SKILL
    assert skill.frontmatter["metadata"] == {"edition": "10th", "audience": "newcomers"}
    assert loaded.text == (demo_tools.SKILLS / "wh40k-rules" / "SKILL.md").read_text()
    assert "S is twice T or more" in (wounds.text or "")
    assert [child["name"] for child in folder["resources"]] == ["SKILL.md", "references"]


async def test_the_tour_shows_the_skill_listed_loaded_and_read() -> None:
    out = io.StringIO()

    def say(text: str) -> None:
        print(text, file=out)

    with trio.fail_after(TIMEOUT):
        async with connect(demo_tools.build_server()) as client:
            await show_skills(client, say)
    assert out.getvalue().splitlines() == [
        "Skills:",
        f"  {SKILL}  wh40k-rules (2 files, 2,973 bytes)",
        f"load {SKILL} (size, digest and front matter checked)",
        "  = # Warhammer 40,000: a rules primer",
        "read skill://wh40k-rules/references/wound-rolls.md (checked)",
        "  = # Wound rolls",
        "",
    ]


@pytest.mark.slow
def test_the_skill_ships_in_the_wheel(tmp_path: Path) -> None:
    builders = pytest.importorskip(
        "hatchling.builders.wheel", reason="hatchling (the build backend) is not installed"
    )
    (wheel,) = builders.WheelBuilder(str(REPO_ROOT)).build(
        directory=str(tmp_path), versions=["standard"]
    )
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "demo_tools/skills/wh40k-rules/SKILL.md",
        "demo_tools/skills/wh40k-rules/references/wound-rolls.md",
    } <= names
