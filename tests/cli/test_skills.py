"""`trio-mcp skills SERVER`: the skills a server lists, from their entries alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT
from tests.timing import scaled
from trio_mcp._features.skills import SkillFile, SkillInfo, digest_of
from trio_mcp.cli._output import format_skills
from trio_mcp.cli._parse import parse_command_line

TIMEOUT = scaled(60)


def test_the_table_names_each_skills_files_size_uri_and_description() -> None:
    listed = SkillInfo(
        "skill://pdf/SKILL.md",
        {"name": "pdf", "description": "Fill PDF forms.\n\nLong detail."},
        (SkillFile("skill://pdf/SKILL.md", digest_of(b""), 1200), SkillFile("u", "d", 34)),
    )
    dynamic = SkillInfo("skill://daily/SKILL.md", {"name": "daily", "description": "Today"}, None)
    assert format_skills([listed, dynamic], {"name": "docs", "version": "2"}).splitlines() == [
        "docs 2: 2 skills",
        "",
        "NAME   FILES    BYTES  URI                     DESCRIPTION",
        "pdf    2        1,234  skill://pdf/SKILL.md    Fill PDF forms.",
        "daily  dynamic         skill://daily/SKILL.md  Today",
    ]
    assert format_skills([], {"name": "plain"}).splitlines() == [
        "plain: 0 skills",
        "",
        "(no skills)",
    ]


def test_the_command_takes_a_server_and_json() -> None:
    args, command = parse_command_line(["skills", "--json", "demo_tools"])
    assert (args.command, args.words, args.json, command) == ("skills", ["demo_tools"], True, [])


@pytest.mark.slow
def test_trio_mcp_skills_lists_the_demos_skill() -> None:
    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "trio_mcp", "skills", *words],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            cwd=REPO_ROOT,
        )

    table = run("demo_tools")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[2:4] == [
        "NAME         FILES  BYTES  URI                           DESCRIPTION",
        "wh40k-rules  2      2,973  skill://wh40k-rules/SKILL.md  A primer on the core rules of "
        "Warhammer 40,000 (10th edition): the phases of a turn, the dice of an attack, and how a "
        "battle is won. Use it to explain what the wh40k tools roll and simulate, or to answer a "
        "newcomer's rules questions.",
    ]
    listed = run("--json", "demo_tools")
    (entry,) = json.loads(listed.stdout)["skills"]
    assert entry["uri"] == "skill://wh40k-rules/SKILL.md"
    assert [file["size"] for file in entry["resources"]] == [2330, 643]
    too_many = run("demo_tools", "extra")
    assert too_many.returncode == 2
    assert "too many words: trio-mcp skills SERVER" in too_many.stderr
