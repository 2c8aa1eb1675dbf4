"""The conformance fixtures' side of the skills scenarios (sep-2640-*), checked without the suite.

The server scenarios discover what to exercise: the first listed skill must have a subfolder
(sep-2640-skills-directory) and its SKILL.md must be listed with the skill's name and
description (sep-2640-skills-manifest). The client scenarios watch the reads: listing fetches
nothing, and a skill whose SKILL.md fails a check is read no further.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conformance import everything_client, everything_server
from tests.features.test_skills import write_skill
from tests.helpers import MODERN
from trio_mcp import Server
from trio_mcp.middleware import CallNext, ResolvedRequest
from trio_mcp.testing import connect


async def test_the_fixture_servers_first_skill_has_a_subfolder_and_a_listed_skill_md() -> None:
    async with connect(everything_server.server, protocol_version=MODERN) as client:
        (skill, *_) = await client.list_skills()
        root = await client.request("resources/directory/read", {"uri": skill.root})
        listed = {r.uri: r for r in await client.list_resources()}
        loaded = await client.load_skill(skill)
        for file in skill.files or ():
            await client.read_skill_file(loaded, file.uri)
        first = (await client.list_resources())[0]
    assert "inode/directory" in [child.get("mimeType") for child in root["resources"]]
    manifest = listed[skill.uri]
    assert (manifest.name, manifest.description) == (skill.name, skill.description)
    assert first.uri == "test://static-text"  # the caching scenario reads the first one


def recording(root: Path) -> tuple[Server, list[str]]:
    reads: list[str] = []

    async def record(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        reads.append(request.method if request.name is None else request.name)
        return await call_next(request)

    write_skill(root, "pdf-processing", {"references/FORMS.md": "Forms\n"})
    server = Server("mock", middleware=[record])
    server.add_skills(root)
    return server, reads


async def test_the_client_fixture_lists_without_fetching(tmp_path: Path) -> None:
    server, reads = recording(tmp_path)
    async with connect(server) as client:
        await everything_client.skills_listed(client, {})
    assert reads == ["skills/list"]


async def test_the_client_fixture_loads_then_reads_and_stops_at_a_failed_check(
    tmp_path: Path,
) -> None:
    server, reads = recording(tmp_path / "good")
    async with connect(server) as client:
        await everything_client.skills_used(client, {})
    skill_md = "skill://pdf-processing/SKILL.md"
    assert reads == [
        "skills/list",
        skill_md,
        "skill://pdf-processing/references/FORMS.md",
    ]

    tampered, reads = recording(tmp_path / "tampered")
    tampered.remove_resource(skill_md)
    tampered.add_resource(skill_md, "---\nname: pdf-processing\ndescription: Evil\n---\n")
    async with connect(tampered) as client:
        await everything_client.skills_used(client, {})
    assert reads == ["skills/list", skill_md]
