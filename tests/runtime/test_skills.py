"""`Server.add_skills`: the skills extension served end to end, every message schema-checked.

Each test talks to a real server through `trio_mcp.testing.connect`, which checks every message
both ways against its revision's JSON Schema (and the extension's, `testing/_extensions`), in
the newest handshake revision and in 2026-07-28.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.features.test_skills import write_skill
from tests.helpers import LATEST, MODERN
from trio_mcp import CacheHint, RequestError, Server, ToolDefinitionError
from trio_mcp.testing import connect

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
VERSIONS = [LATEST, MODERN]


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two skills: pdf-processing (with nested folders and a blob) and git-workflow."""
    skills = tmp_path / "skills"
    write_skill(
        skills,
        "pdf-processing",
        {
            "references/FORMS.md": "# Forms\n",
            "templates/invoice.md": "Invoice\r\n",
            "templates/regional/eu.md": "EU\n",
            "templates/logo.png": b"\x89PNG\x00\x01",
        },
        description="Extract, fill, and assemble PDF documents",
        extra="metadata:\n  version: '2.1.0'\n",
    )
    write_skill(skills, "git-workflow", description="Follow the team's Git conventions")
    return skills


async def code_of(client: Any, method: str, params: dict[str, Any]) -> tuple[int, Any]:
    with pytest.raises(RequestError) as caught:
        await client.request(method, params)
    return caught.value.code, caught.value.data


# -- declaring the extension ---------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_server_with_skills_declares_the_extension_with_directory_reads(
    folder: Path, version: str
) -> None:
    server = Server("skills")
    server.add_skills(folder)
    async with connect(server, protocol_version=version) as client:
        capabilities = client.server_capabilities
    assert capabilities["extensions"] == {SKILLS_EXTENSION: {"directoryRead": True}}
    assert "resources" in capabilities  # skill files are resources


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_server_without_skills_declares_nothing_and_knows_no_such_method(
    version: str,
) -> None:
    server = Server("plain")
    server.add_resource("note://a", "a")
    async with connect(server, protocol_version=version) as client:
        assert "extensions" not in client.server_capabilities
        assert await client.list_skills() == []  # nothing asked of such a server
        for method, params in [
            ("skills/list", {}),
            ("skills/get", {"uri": "skill://a/SKILL.md"}),
            ("resources/directory/read", {"uri": "skill://a"}),
        ]:
            assert (await code_of(client, method, params))[0] == -32601


@pytest.mark.parametrize("version", VERSIONS)
async def test_skills_and_tasks_are_declared_side_by_side(folder: Path, version: str) -> None:
    server = Server("both")
    server.add_skills(folder)

    @server.tool(task=True)
    async def slow() -> str:
        return "done"

    async with connect(server, protocol_version=version) as client:
        capabilities = client.server_capabilities
    if version == MODERN:  # 2026-07-28: tasks are the extension
        assert set(capabilities["extensions"]) == {SKILLS_EXTENSION, TASKS_EXTENSION}
    else:  # 2025-11-25: its own tasks utility, a capability of its own
        assert set(capabilities["extensions"]) == {SKILLS_EXTENSION}
        assert capabilities["tasks"]["requests"]["tools"] == {"call": {}}


# -- skills/list and skills/get ------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
async def test_skills_list_sends_each_skills_front_matter_and_every_files_digest_and_size(
    folder: Path, version: str
) -> None:
    server = Server("skills")
    added = server.add_skills(folder)
    async with connect(server, protocol_version=version) as client:
        result = await client.request("skills/list")
    assert [entry["uri"] for entry in result["skills"]] == [
        "skill://git-workflow/SKILL.md",
        "skill://pdf-processing/SKILL.md",
    ]
    assert [info.raw for info in added] == result["skills"]
    pdf = result["skills"][1]
    assert pdf["frontmatter"] == {
        "name": "pdf-processing",
        "description": "Extract, fill, and assemble PDF documents",
        "metadata": {"version": "2.1.0"},
    }
    root = folder / "pdf-processing"
    on_disk = {
        f"skill://pdf-processing/{path.relative_to(root).as_posix()}": path.read_bytes()
        for path in root.rglob("*")
        if path.is_file()
    }
    assert {item["uri"]: (item["digest"], item["size"]) for item in pdf["resources"]} == {
        uri: (sha(data), len(data)) for uri, data in on_disk.items()
    }
    assert "nextCursor" not in result
    if version == MODERN:
        assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == (
            "complete",
            0,
            "public",
        )


@pytest.mark.parametrize("version", VERSIONS)
async def test_skills_list_pages_with_the_servers_cursors_never_splitting_an_entry(
    tmp_path: Path, version: str
) -> None:
    for name in ("alpha", "beta", "gamma"):
        write_skill(tmp_path, name, {"ref/a.md": "a", "ref/b.md": "b"})
    server = Server("paged", page_size=2)
    server.add_skills(tmp_path)
    async with connect(server, protocol_version=version) as client:
        first = await client.request("skills/list")
        second = await client.request("skills/list", {"cursor": first["nextCursor"]})
        listed = await client.list_skills()
        bad = await code_of(client, "skills/list", {"cursor": "not-a-cursor"})
    assert [e["frontmatter"]["name"] for e in first["skills"]] == ["alpha", "beta"]
    assert [e["frontmatter"]["name"] for e in second["skills"]] == ["gamma"]
    assert "nextCursor" not in second
    assert all(len(e["resources"]) == 3 for e in first["skills"] + second["skills"])
    assert [skill.name for skill in listed] == ["alpha", "beta", "gamma"]
    assert bad[0] == -32602


@pytest.mark.parametrize("version", VERSIONS)
async def test_skills_get_returns_the_listed_entry_and_refuses_any_other_uri(
    folder: Path, version: str
) -> None:
    server = Server("skills")
    server.add_skills(folder)
    async with connect(server, protocol_version=version) as client:
        listed = (await client.request("skills/list"))["skills"]
        got = await client.request("skills/get", {"uri": "skill://pdf-processing/SKILL.md"})
        unknown = await code_of(client, "skills/get", {"uri": "skill://nope/SKILL.md"})
        a_file = await code_of(client, "skills/get", {"uri": "skill://pdf-processing/x.md"})
        too_long = await code_of(client, "skills/get", {"uri": "skill://" + "a" * 70_000})
    # Requests the extension's schema refuses are still answered (the checker is off for them).
    async with connect(server, protocol_version=version, check_schema=False) as client:
        no_uri = await code_of(client, "skills/get", {})
        not_text = await code_of(client, "resources/directory/read", {"uri": 3})
    assert got["skill"] == listed[1]
    assert "nextCursor" not in got
    assert unknown == (-32602, {"uri": "skill://nope/SKILL.md"})
    assert a_file[0] == -32602
    assert too_long == (-32602, {"maxUriLength": 65536})
    assert no_uri[0] == not_text[0] == -32602


# -- resources: every file, read as it was when added ----------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_file_is_a_resource_and_skill_md_carries_the_skills_name(
    folder: Path, version: str
) -> None:
    server = Server("skills")
    server.add_skills(folder)
    async with connect(server, protocol_version=version) as client:
        listed = {resource.uri: resource for resource in await client.list_resources()}
        text = await client.read_resource("skill://pdf-processing/templates/invoice.md")
        blob = await client.read_resource("skill://pdf-processing/templates/logo.png")
        missing = await code_of(client, "resources/read", {"uri": "skill://pdf-processing/x.md"})
    manifest = listed["skill://pdf-processing/SKILL.md"]
    assert (manifest.name, manifest.description, manifest.mime_type) == (
        "pdf-processing",
        "Extract, fill, and assemble PDF documents",
        "text/markdown",
    )
    assert manifest.size == (folder / "pdf-processing" / "SKILL.md").stat().st_size
    assert listed["skill://pdf-processing/templates/regional/eu.md"].name == (
        "templates/regional/eu.md"
    )
    assert len(listed) == 6
    assert text.contents[0].text == "Invoice\r\n"  # the bytes the digest covers, as they are
    assert blob.contents[0].blob == b"\x89PNG\x00\x01"
    assert missing[0] == (-32002 if version == LATEST else -32602)


async def test_what_is_served_is_what_was_read_whatever_the_disk_says_later(
    folder: Path,
) -> None:
    server = Server("skills")
    (entry,) = [info for info in server.add_skills(folder) if info.name == "pdf-processing"]
    forms = folder / "pdf-processing" / "references" / "FORMS.md"
    forms.write_text("# Forms, rewritten after the skill was added\n")
    (folder / "pdf-processing" / "references" / "NEW.md").write_text("new")
    async with connect(server) as client:
        read = await client.read_resource("skill://pdf-processing/references/FORMS.md")
        listed = await client.get_skill("skill://pdf-processing/SKILL.md")
    assert read.contents[0].text == "# Forms\n"
    assert listed.files == entry.files


async def test_file_reads_carry_the_cache_hint_given(folder: Path) -> None:
    server = Server("skills")
    server.add_skills(folder, cache=CacheHint(60_000, "public"))
    async with connect(server, protocol_version=MODERN) as client:
        read = await client.read_resource("skill://git-workflow/SKILL.md")
    assert read.cache == CacheHint(60_000, "public")


# -- resources/directory/read ---------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
async def test_directory_reads_list_direct_children_with_folders_as_inode_directory(
    folder: Path, version: str
) -> None:
    server = Server("skills")
    server.add_skills(folder)
    async with connect(server, protocol_version=version) as client:
        root = await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
        templates = await client.request(
            "resources/directory/read", {"uri": "skill://pdf-processing/templates"}
        )
        empty_like = await client.request(
            "resources/directory/read", {"uri": "skill://pdf-processing/templates/regional"}
        )
    assert [(r["uri"], r.get("mimeType")) for r in root["resources"]] == [
        ("skill://pdf-processing/SKILL.md", "text/markdown"),
        ("skill://pdf-processing/references", "inode/directory"),
        ("skill://pdf-processing/templates", "inode/directory"),
    ]
    assert templates["resources"] == [
        {
            "uri": "skill://pdf-processing/templates/invoice.md",
            "name": "invoice.md",
            "mimeType": "text/markdown",
            "size": 9,
        },
        {
            "uri": "skill://pdf-processing/templates/logo.png",
            "name": "logo.png",
            "mimeType": "image/png",
            "size": 6,
        },
        {
            "uri": "skill://pdf-processing/templates/regional",
            "name": "regional",
            "mimeType": "inode/directory",
        },
    ]
    assert [r["name"] for r in empty_like["resources"]] == ["eu.md"]
    assert "nextCursor" not in root


@pytest.mark.parametrize(
    "uri",
    [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/templates/invoice.md",
        "skill://pdf-processing/nowhere",
        "skill://pdf-processing/",
        "skill://pdf-processing/templates/../references",
        "file:///etc",
    ],
)
async def test_a_directory_read_of_anything_but_a_served_folder_is_invalid_params(
    folder: Path, uri: str
) -> None:
    server = Server("skills")
    server.add_skills(folder)
    async with connect(server, protocol_version=MODERN) as client:
        code, data = await code_of(client, "resources/directory/read", {"uri": uri})
    assert (code, data) == (-32602, {"uri": uri})


async def test_directory_reads_page_and_reach_a_prefixs_folders(folder: Path) -> None:
    server = Server("skills", page_size=2)
    server.add_skills(folder, prefix="acme/docs")
    async with connect(server) as client:
        top = await client.request("resources/directory/read", {"uri": "skill://acme"})
        docs = await client.request("resources/directory/read", {"uri": "skill://acme/docs"})
        root = "skill://acme/docs/pdf-processing"
        first = await client.request("resources/directory/read", {"uri": root})
        rest = await client.request(
            "resources/directory/read", {"uri": root, "cursor": first["nextCursor"]}
        )
    assert top["resources"] == [
        {"uri": "skill://acme/docs", "name": "docs", "mimeType": "inode/directory"}
    ]
    assert [r["name"] for r in docs["resources"]] == ["git-workflow", "pdf-processing"]
    assert [r["name"] for r in first["resources"] + rest["resources"]] == [
        "SKILL.md",
        "references",
        "templates",
    ]
    assert "nextCursor" not in rest


# -- registration ---------------------------------------------------------------------------------


def test_a_clash_registers_nothing(folder: Path) -> None:
    server = Server("skills")
    server.add_resource("skill://git-workflow/SKILL.md", "mine")
    with pytest.raises(ToolDefinitionError, match=r"skill://git-workflow/SKILL\.md"):
        server.add_skills(folder)
    assert [resource.uri for resource in server.resources] == ["skill://git-workflow/SKILL.md"]
    assert "extensions" not in server.capabilities()


def test_the_same_skills_twice_are_refused(folder: Path) -> None:
    server = Server("skills")
    server.add_skills(folder)
    count = len(server.resources)
    with pytest.raises(ToolDefinitionError, match="already served"):
        server.add_skills(folder)
    assert len(server.resources) == count
    server.add_skills(folder, prefix="copy")  # elsewhere, they may be served again
    assert len(server.resources) == 2 * count


def test_add_skills_returns_the_entries_clients_receive(folder: Path) -> None:
    server = Server("skills")
    infos = server.add_skills(folder / "git-workflow")
    assert [(info.uri, info.name) for info in infos] == [
        ("skill://git-workflow/SKILL.md", "git-workflow")
    ]
    assert infos[0].files is not None
    assert [file.uri for file in infos[0].files] == ["skill://git-workflow/SKILL.md"]
