"""The client's side of the skills extension: list, get, load and read, every file checked.

Against a real server (`trio_mcp.testing.connect`, messages schema-checked), a server whose
files were swapped after its skills were added (what a tampering intermediary or a stale entry
looks like to a client), and scripted servers for what trio-mcp never sends (dynamic skills,
malformed entries, a front matter that differs from its entry).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.features.test_skills import write_skill
from tests.helpers import LATEST, MODERN, scripted
from tests.timing import scaled
from trio_mcp import (
    LoadedSkill,
    LocalProtocolError,
    RemoteProtocolError,
    Server,
    SkillInfo,
    SkillVerificationError,
)
from trio_mcp._features.skills import digest_of
from trio_mcp.middleware import CallNext, ResolvedRequest
from trio_mcp.testing import connect

TIMEOUT = scaled(60)
SKILL_URI = "skill://pdf-processing/SKILL.md"
FORMS_URI = "skill://pdf-processing/references/FORMS.md"


def skills_server(root: Path) -> tuple[Server, list[tuple[str, str | None]]]:
    """A server of one skill (pdf-processing), and the (method, target) of each request."""
    seen: list[tuple[str, str | None]] = []

    async def record(request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        seen.append((request.method, request.name))
        return await call_next(request)

    write_skill(
        root,
        "pdf-processing",
        {"references/FORMS.md": "# Forms\n", "assets/logo.png": b"\x89PNG\x00"},
        description="Extract, fill, and assemble PDF documents",
    )
    server = Server("skills", middleware=[record])
    server.add_skills(root)
    return server, seen


def swap(server: Server, uri: str, content: str | bytes) -> None:
    """Serve other content at a skill file's URI, its entry unchanged."""
    server.remove_resource(uri)
    server.add_resource(uri, content)


@pytest.mark.parametrize("version", [LATEST, MODERN])
async def test_a_skill_is_listed_loaded_and_read_each_file_checked(
    tmp_path: Path, version: str
) -> None:
    server, _ = skills_server(tmp_path)
    async with connect(server, protocol_version=version) as client:
        (listed,) = await client.list_skills()
        loaded = await client.load_skill(listed)
        forms = await client.read_skill_file(loaded, "references/FORMS.md")
        logo = await client.read_skill_file(listed, "skill://pdf-processing/assets/logo.png")
        again = await client.get_skill(SKILL_URI)
        by_uri = await client.load_skill(SKILL_URI)  # its entry fetched first
    skill_md = (tmp_path / "pdf-processing" / "SKILL.md").read_text()
    assert (listed.uri, listed.name) == (SKILL_URI, "pdf-processing")
    assert listed.description == "Extract, fill, and assemble PDF documents"
    assert isinstance(loaded, LoadedSkill)
    assert (loaded.text, loaded.verified, loaded.info) == (skill_md, True, listed)
    assert loaded.frontmatter == listed.frontmatter
    assert loaded.body == "\n# pdf-processing\n\nBody.\n"
    assert forms.text == "# Forms\n"
    assert logo.blob == b"\x89PNG\x00"
    assert again == listed
    assert by_uri.text == skill_md


async def test_nothing_of_a_skill_is_fetched_before_it_is_used(tmp_path: Path) -> None:
    server, seen = skills_server(tmp_path)
    async with connect(server) as client:
        (listed,) = await client.list_skills()
        assert [method for method, _ in seen] == ["skills/list"]
        await client.load_skill(listed)
        assert seen[1:] == [("resources/read", SKILL_URI)]
        await client.read_skill_file(listed, "references/FORMS.md")
        assert seen[2:] == [("resources/read", FORMS_URI)]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("---\nname: pdf-processing\ndescription: Exfiltrate credentials\n---\n", "size"),
        (None, "digest"),  # the same length, one byte changed
    ],
)
async def test_a_tampered_skill_md_is_not_loaded(
    tmp_path: Path, content: str | None, reason: str
) -> None:
    server, seen = skills_server(tmp_path)
    original = (tmp_path / "pdf-processing" / "SKILL.md").read_text()
    swap(server, SKILL_URI, content if content is not None else original.replace("Body", "B0dy"))
    async with connect(server) as client:
        (listed,) = await client.list_skills()
        with pytest.raises(SkillVerificationError) as caught:
            await client.load_skill(listed)
    assert (caught.value.reason, caught.value.uri) == (reason, SKILL_URI)
    assert "not using it" in str(caught.value)
    assert [target for _, target in seen] == [None, SKILL_URI]  # nothing more was read


@pytest.mark.parametrize(
    ("content", "reason", "message"),
    [
        ("# Forms, longer now\n", "size", "is 20 bytes; its skill entry says 8"),
        ("# Farms\n", "digest", f"its skill entry says {digest_of(b'# Forms' + bytes([10]))}"),
        (b"# Forms\n", None, None),  # the same bytes as a blob: still the file
    ],
)
async def test_a_tampered_supporting_file_is_not_handed_out(
    tmp_path: Path, content: str | bytes, reason: str | None, message: str | None
) -> None:
    server, _ = skills_server(tmp_path)
    swap(server, FORMS_URI, content)
    async with connect(server) as client:
        (listed,) = await client.list_skills()
        if reason is None:
            read = await client.read_skill_file(listed, "references/FORMS.md")
            assert read.blob == b"# Forms\n"
            return
        with pytest.raises(SkillVerificationError) as caught:
            await client.read_skill_file(listed, "references/FORMS.md")
    assert caught.value.reason == reason
    assert message is not None
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "path", ["references/NEW.md", "../other/SKILL.md", "skill://other/SKILL.md", "references"]
)
async def test_a_file_the_entry_does_not_list_is_not_read(tmp_path: Path, path: str) -> None:
    server, seen = skills_server(tmp_path)
    server.add_resource("skill://pdf-processing/references/NEW.md", "added since")
    async with connect(server) as client:
        (listed,) = await client.list_skills()
        with pytest.raises(SkillVerificationError) as caught:
            await client.read_skill_file(listed, path)
    assert caught.value.reason == "unlisted"
    assert [method for method, _ in seen] == ["skills/list"]


async def test_a_server_without_the_extension_has_no_skills_and_refuses_the_rest() -> None:
    server = Server("plain")
    server.add_resource("skill://x/SKILL.md", "---\nname: x\ndescription: y\n---\n")
    info = SkillInfo("skill://x/SKILL.md", {"name": "x", "description": "y"}, None)
    async with connect(server) as client:
        assert await client.list_skills() == []
        with pytest.raises(LocalProtocolError, match="does not declare the skills extension"):
            await client.get_skill("skill://x/SKILL.md")
        with pytest.raises(LocalProtocolError, match="load_skill"):
            await client.load_skill(info, allow_dynamic=True)
        with pytest.raises(LocalProtocolError, match="read_skill_file"):
            await client.read_skill_file(info, "a.md", allow_dynamic=True)


# -- scripted servers: what trio-mcp's own server never sends ------------------------------------

Send = Callable[[Any], Awaitable[None]]
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
    "serverInfo": {"name": "scripted"},
}
SKILL_MD = (
    "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n"
)


def reply(message: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def serving(
    entry: dict[str, Any], files: dict[str, list[dict[str, Any]]], reads: list[str]
) -> Callable[[Any, Send], Awaitable[None]]:
    """A server listing `entry` and answering reads with `files` (URI -> contents)."""

    async def answer(message: Any, send: Send) -> None:
        method = message.get("method")
        if method == "initialize":
            await send(reply(message, INIT))
        elif method == "skills/list":
            await send(reply(message, {"skills": [entry]}))
        elif method == "skills/get":
            await send(reply(message, {"skill": entry}))
        elif method == "resources/read":
            reads.append(message["params"]["uri"])
            await send(reply(message, {"contents": files[message["params"]["uri"]]}))

    return answer


def text_contents(uri: str, text: str) -> list[dict[str, Any]]:
    return [{"uri": uri, "mimeType": "text/markdown", "text": text}]


def listed_entry(skill_md: str, **frontmatter: Any) -> dict[str, Any]:
    data = skill_md.encode()
    return {
        "uri": SKILL_URI,
        "frontmatter": {
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents",
            **frontmatter,
        },
        "resources": [{"uri": SKILL_URI, "digest": digest_of(data), "size": len(data)}],
    }


async def test_front_matter_that_differs_from_the_entry_is_not_loaded() -> None:
    tampered = SKILL_MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate keys")
    entry = listed_entry(tampered)  # digest and size match what is served: only the front
    reads: list[str] = []  # matter gives it away
    with trio.fail_after(TIMEOUT):
        async with scripted(
            serving(entry, {SKILL_URI: text_contents(SKILL_URI, tampered)}, reads)
        ) as client:
            (listed,) = await client.list_skills()
            with pytest.raises(SkillVerificationError, match="in description") as caught:
                await client.load_skill(listed)
    assert caught.value.reason == "frontmatter"


async def test_extra_front_matter_the_entry_leaves_out_is_a_discrepancy() -> None:
    widened = SKILL_MD.replace("---\n", "---\nallowed-tools: Bash\n", 1)
    entry = listed_entry(widened)
    with trio.fail_after(TIMEOUT):
        async with scripted(
            serving(entry, {SKILL_URI: text_contents(SKILL_URI, widened)}, [])
        ) as client:
            (listed,) = await client.list_skills()
            with pytest.raises(SkillVerificationError, match="in allowed-tools"):
                await client.load_skill(listed)


async def test_a_dynamic_skill_loads_only_when_allowed_and_reads_only_inside_its_folder() -> None:
    entry = {**listed_entry(SKILL_MD), "resources": "dynamic"}
    notes = "skill://pdf-processing/notes.md"
    files = {SKILL_URI: text_contents(SKILL_URI, SKILL_MD), notes: text_contents(notes, "n")}
    reads: list[str] = []
    with trio.fail_after(TIMEOUT):
        async with scripted(serving(entry, files, reads)) as client:
            (listed,) = await client.list_skills()
            assert listed.files is None
            with pytest.raises(SkillVerificationError, match="allow_dynamic=True") as caught:
                await client.load_skill(listed)
            assert caught.value.reason == "dynamic"
            assert reads == []
            loaded = await client.load_skill(listed, allow_dynamic=True)
            read = await client.read_skill_file(loaded, "notes.md", allow_dynamic=True)
            with pytest.raises(SkillVerificationError) as outside:
                await client.read_skill_file(loaded, "skill://other/x.md", allow_dynamic=True)
    assert loaded.verified is False
    assert read.text == "n"
    assert outside.value.reason == "unlisted"
    assert reads == [SKILL_URI, notes]


async def test_a_read_that_returns_other_contents_is_not_used() -> None:
    entry = listed_entry(SKILL_MD)
    two = text_contents(SKILL_URI, SKILL_MD) * 2
    with trio.fail_after(TIMEOUT):
        async with scripted(serving(entry, {SKILL_URI: two}, [])) as client:
            (listed,) = await client.list_skills()
            with pytest.raises(SkillVerificationError, match="2 contents") as caught:
                await client.load_skill(listed)
    assert caught.value.reason == "contents"


async def test_a_malformed_entry_is_a_protocol_error() -> None:
    entry = {"uri": SKILL_URI, "frontmatter": {"name": "pdf-processing"}, "resources": []}
    with trio.fail_after(TIMEOUT):
        async with scripted(serving(entry, {}, [])) as client:
            with pytest.raises(RemoteProtocolError, match="lacks a name or a description"):
                await client.list_skills()


async def test_a_skill_md_that_is_not_utf8_is_not_loaded() -> None:
    data = b"---\nname: pdf-processing\ndescription: \xff\n---\n"
    entry = {
        **listed_entry(SKILL_MD),
        "resources": [{"uri": SKILL_URI, "digest": digest_of(data), "size": len(data)}],
    }
    blob = [{"uri": SKILL_URI, "blob": base64.b64encode(data).decode()}]
    with trio.fail_after(TIMEOUT):
        async with scripted(serving(entry, {SKILL_URI: blob}, [])) as client:
            (listed,) = await client.list_skills()
            with pytest.raises(SkillVerificationError, match="not UTF-8 text"):
                await client.load_skill(listed)
