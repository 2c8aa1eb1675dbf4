"""Skills as a server reads them from disk, and as a client checks what it fetched (sans-IO).

The folders are made in `tmp_path`; the rules are those of `_features/skills` (read once; never
past the skill's folder; the extension's limits and the Agent Skills rules; every read checked
against the entry).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from trio_mcp import RemoteProtocolError, SkillVerificationError, ToolDefinitionError
from trio_mcp._features.skills import (
    DIRECTORY_MIME,
    MAX_SKILL_BYTES,
    MAX_SKILL_FILES,
    SkillCatalog,
    SkillFile,
    SkillInfo,
    check_file,
    check_front_matter,
    digest_of,
    read_skills,
    skill_info,
)

SKILL_MD = "---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nBody.\n"


def write_skill(
    parent: Path,
    name: str,
    files: dict[str, str | bytes] | None = None,
    *,
    description: str = "Does a thing",
    extra: str = "",
    folder: str | None = None,
) -> Path:
    """A skill folder `parent/name` with a SKILL.md and `files` (path -> content)."""
    root = parent / (folder or name)
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text(
        SKILL_MD.format(name=name, description=description, extra=extra), encoding="utf-8"
    )
    for path, content in (files or {}).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# -- reading skills --------------------------------------------------------------------------


def test_each_subfolder_with_a_skill_md_is_a_skill_whose_entry_lists_every_file(
    tmp_path: Path,
) -> None:
    write_skill(
        tmp_path, "pdf-processing", {"references/forms.md": "Forms\n", "logo.png": b"\x89P"}
    )
    write_skill(tmp_path, "git-workflow", extra="license: MIT\n")
    (tmp_path / "notes").mkdir()  # no SKILL.md: not a skill
    (tmp_path / "notes" / "todo.md").write_text("x")
    skills = read_skills(tmp_path)
    assert [skill.path for skill in skills] == ["git-workflow", "pdf-processing"]
    entry = skills[1].entry()
    skill_md = (tmp_path / "pdf-processing" / "SKILL.md").read_bytes()
    assert entry == {
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {"name": "pdf-processing", "description": "Does a thing"},
        "resources": [
            {
                "uri": "skill://pdf-processing/SKILL.md",
                "digest": sha(skill_md),
                "size": len(skill_md),
            },
            {"uri": "skill://pdf-processing/logo.png", "digest": sha(b"\x89P"), "size": 2},
            {
                "uri": "skill://pdf-processing/references/forms.md",
                "digest": sha(b"Forms\n"),
                "size": 6,
            },
        ],
    }
    assert skills[0].frontmatter == {
        "name": "git-workflow",
        "description": "Does a thing",
        "license": "MIT",
    }
    by_path = {file.path: file for file in skills[1].files}
    assert by_path["SKILL.md"].mime_type == "text/markdown"
    assert by_path["references/forms.md"].text == "Forms\n"
    assert by_path["logo.png"].text is None  # a blob
    assert by_path["logo.png"].mime_type == "image/png"


def test_a_folder_that_is_itself_a_skill_is_the_one_skill(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "solo")
    (skill,) = read_skills(root)
    assert skill.uri == "skill://solo/SKILL.md"
    assert skill.root == "skill://solo"


def test_a_prefix_goes_before_each_name(tmp_path: Path) -> None:
    write_skill(tmp_path, "refunds", {"examples/email.md": "Dear"})
    (skill,) = read_skills(tmp_path, prefix="acme/billing")
    assert skill.uri == "skill://acme/billing/refunds/SKILL.md"
    assert [file.uri for file in skill.files][1] == "skill://acme/billing/refunds/examples/email.md"


@pytest.mark.parametrize("prefix", ["acme billing", "a/b?c", "x#y", "café"])
def test_a_prefix_that_is_no_plain_uri_path_is_refused(tmp_path: Path, prefix: str) -> None:
    write_skill(tmp_path, "refunds")
    with pytest.raises(ToolDefinitionError, match="prefix"):
        read_skills(tmp_path, prefix=prefix)


def test_file_names_are_escaped_in_their_uris(tmp_path: Path) -> None:
    write_skill(tmp_path, "notes", {"my notes.md": "a", "café/ü?.md": "b", "a+b@c.md": "c"})
    (skill,) = read_skills(tmp_path)
    assert sorted(file.uri for file in skill.files[1:]) == [
        "skill://notes/a+b@c.md",
        "skill://notes/caf%C3%A9/%C3%BC%3F.md",
        "skill://notes/my%20notes.md",
    ]


def test_hidden_names_are_left_out_unless_asked_for(tmp_path: Path) -> None:
    write_skill(tmp_path, "tidy", {".env": "SECRET=1", ".git/config": "x", "kept.md": "k"})
    write_skill(tmp_path, "hidden-skill", folder=".hidden-skill")
    (skill,) = read_skills(tmp_path)
    assert [file.path for file in skill.files] == ["SKILL.md", "kept.md"]
    (everything,) = read_skills(tmp_path, hidden=True)  # a hidden folder is never a skill
    assert [file.path for file in everything.files] == [
        "SKILL.md",
        ".env",
        ".git/config",
        "kept.md",
    ]


def test_a_folder_without_skills_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ToolDefinitionError, match="no skill here"):
        read_skills(tmp_path)
    with pytest.raises(ToolDefinitionError, match="cannot be opened"):
        read_skills(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ToolDefinitionError, match="not a folder"):
        read_skills(tmp_path / "file.txt")


# -- the extension's limits and the Agent Skills rules (Rule 3) --------------------------------


def test_a_skill_of_512_files_is_served_and_one_of_513_is_refused(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {f"f/{n:03}.txt": "" for n in range(MAX_SKILL_FILES - 1)}
    write_skill(tmp_path / "ok", "many", files)
    (skill,) = read_skills(tmp_path / "ok")
    assert len(skill.files) == MAX_SKILL_FILES
    files["one-more.txt"] = ""
    write_skill(tmp_path / "over", "many", files)
    with pytest.raises(ToolDefinitionError, match="513 files; a skill may have at most 512"):
        read_skills(tmp_path / "over")


def test_a_skill_over_16_mib_is_refused(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "big")
    skill_md = (root / "SKILL.md").stat().st_size
    with (root / "data.bin").open("wb") as file:  # sparse: no 16 MiB written to disk
        file.truncate(MAX_SKILL_BYTES - skill_md)
    (skill,) = read_skills(tmp_path)
    assert skill.size == MAX_SKILL_BYTES
    with (root / "data.bin").open("r+b") as file:
        file.truncate(MAX_SKILL_BYTES - skill_md + 1)
    with pytest.raises(ToolDefinitionError, match="16,777,217 bytes; a skill may hold at most"):
        read_skills(tmp_path)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("PDF", "lowercase"),
        ("-pdf", "lowercase"),
        ("pdf-", "lowercase"),
        ("pdf--x", "lowercase"),
        ("p_d", "lowercase"),
        ("x" * 65, "lowercase"),
    ],
)
def test_a_name_that_breaks_the_naming_rules_is_refused(
    tmp_path: Path, name: str, message: str
) -> None:
    write_skill(tmp_path, name)
    with pytest.raises(ToolDefinitionError, match=message):
        read_skills(tmp_path)


def test_the_longest_name_allowed_is_served(tmp_path: Path) -> None:
    write_skill(tmp_path, "x" * 64)
    assert read_skills(tmp_path)[0].name == "x" * 64


def test_a_name_that_is_not_its_folders_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf", folder="documents")
    with pytest.raises(ToolDefinitionError, match="differs from its folder's name 'documents'"):
        read_skills(tmp_path)


@pytest.mark.parametrize(
    ("skill_md", "message"),
    [
        ("# No front matter\n", "no front matter"),
        ("---\nname: s\n---\n", "needs a description"),
        ("---\nname: s\ndescription: ''\n---\n", "needs a description"),
        ("---\nname: s\ndescription: [a]\n---\n", "needs a description"),
        ("---\nname: s\ndescription: " + "d" * 1025 + "\n---\n", "1025 characters; at most 1024"),
        ("---\nname: s\ndescription: d\nmetadata: [1]\n---\n", "metadata must be a mapping"),
        (
            "---\nname: s\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: 1\n---\n",
            "reserved for MCP extensions",
        ),
        ("---\nname: s\ndescription: d\nx: &a 1\n---\n", "SKILL.md: line 3: an anchor"),
        ("---\nname: s\ndescription: d: e\n---\n", "SKILL.md: line 2"),
    ],
)
def test_front_matter_that_breaks_the_rules_is_refused(
    tmp_path: Path, skill_md: str, message: str
) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "SKILL.md").write_text(skill_md)
    with pytest.raises(ToolDefinitionError, match=None) as caught:
        read_skills(tmp_path)
    assert message in str(caught.value)


def test_a_skill_md_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "SKILL.md").write_bytes(b"---\nname: s\ndescription: \xff\n---\n")
    with pytest.raises(ToolDefinitionError, match=r"SKILL.md is not UTF-8 text"):
        read_skills(tmp_path)


def test_other_metadata_passes_through_as_written(tmp_path: Path) -> None:
    extra = (
        "metadata:\n  version: '2.1'\n  io.modelcontextprotocol.skills/x: kept\n"
        "allowed-tools: Read\n"
    )
    write_skill(tmp_path, "meta", extra=extra)
    (skill,) = read_skills(tmp_path)
    assert skill.frontmatter["metadata"] == {
        "version": "2.1",
        "io.modelcontextprotocol.skills/x": "kept",
    }
    assert skill.frontmatter["allowed-tools"] == "Read"


# -- never past the skill's folder (Rule 2) ------------------------------------------------------


def test_a_symlink_to_a_file_outside_the_skill_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("password")
    root = write_skill(tmp_path / "skills", "leaky")
    (root / "innocent.md").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ToolDefinitionError, match=r"innocent.md is a symlink to .*outside"):
        read_skills(tmp_path / "skills")


def test_a_symlink_into_a_sibling_skill_is_refused(tmp_path: Path) -> None:
    other = write_skill(tmp_path, "other", {"private.md": "mine"})
    root = write_skill(tmp_path, "borrower")
    (root / "borrowed.md").symlink_to(other / "private.md")
    with pytest.raises(ToolDefinitionError, match=r"borrowed.md is a symlink"):
        read_skills(tmp_path)


def test_a_symlink_to_a_file_inside_the_skill_serves_that_file(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "linked", {"real.md": "content"})
    (root / "alias.md").symlink_to(root / "real.md")
    (skill,) = read_skills(tmp_path)
    files = {file.path: file.data for file in skill.files}
    assert files["alias.md"] == files["real.md"] == b"content"


def test_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    root = write_skill(tmp_path / "skills", "folders")
    (root / "docs").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(ToolDefinitionError, match="docs is a symlinked folder"):
        read_skills(tmp_path / "skills")


def test_a_dangling_or_looping_symlink_is_refused(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "broken")
    (root / "loop.md").symlink_to(root / "loop.md")
    with pytest.raises(ToolDefinitionError, match=r"loop.md cannot be read"):
        read_skills(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "piped")
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolDefinitionError, match="pipe is not a regular file"):
        read_skills(tmp_path)


def test_a_skill_folder_may_itself_be_a_symlink(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "store", "linked-skill", {"a.md": "a"})
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "linked-skill").symlink_to(real, target_is_directory=True)
    (skill,) = read_skills(tmp_path / "skills")
    assert [file.path for file in skill.files] == ["SKILL.md", "a.md"]


# -- the catalog: folders as directory resources ---------------------------------------------------


def test_the_catalog_lists_each_folder_s_direct_children(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf", {"templates/invoice.md": "i", "templates/eu/vat.md": "v"})
    catalog = SkillCatalog()
    catalog.add(read_skills(tmp_path, prefix="acme"))
    assert catalog.directory("skill://acme") == [
        {"uri": "skill://acme/pdf", "name": "pdf", "mimeType": DIRECTORY_MIME}
    ]
    assert [child["uri"] for child in catalog.directory("skill://acme/pdf") or []] == [
        "skill://acme/pdf/SKILL.md",
        "skill://acme/pdf/templates",
    ]
    assert catalog.directory("skill://acme/pdf/templates") == [
        {"uri": "skill://acme/pdf/templates/eu", "name": "eu", "mimeType": DIRECTORY_MIME},
        {
            "uri": "skill://acme/pdf/templates/invoice.md",
            "name": "invoice.md",
            "mimeType": "text/markdown",
            "size": 1,
        },
    ]
    for not_a_folder in ("skill://acme/pdf/SKILL.md", "skill://acme/pdf/nope", "skill://", ""):
        assert catalog.directory(not_a_folder) is None


def test_the_catalog_refuses_a_skill_served_already(tmp_path: Path) -> None:
    write_skill(tmp_path, "twice")
    catalog = SkillCatalog()
    catalog.add(read_skills(tmp_path))
    with pytest.raises(ToolDefinitionError, match=r"already served at skill://twice/SKILL.md"):
        catalog.add(read_skills(tmp_path))
    assert len(catalog) == 1


def test_a_folders_scopes_are_its_skills(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "alpha", {"sub/x.md": "x"})
    write_skill(tmp_path / "b", "beta")
    catalog = SkillCatalog()
    catalog.add(read_skills(tmp_path / "a", prefix="team", scopes=["skills:alpha"]))
    catalog.add(read_skills(tmp_path / "b", prefix="team", scopes=["skills:beta"]))
    assert catalog.scopes_of_folder("skill://team/alpha/sub") == {"skills:alpha"}
    assert catalog.scopes_of_folder("skill://team") == {"skills:alpha", "skills:beta"}


# -- the client's checks (Rule 4) ---------------------------------------------------------------


def entry(**changes: Any) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "PDFs"},
        "resources": [
            {"uri": "skill://pdf/SKILL.md", "digest": digest_of(b"x"), "size": 1},
            {"uri": "skill://pdf/my%20forms.md", "digest": digest_of(b"forms"), "size": 5},
        ],
    }
    wire.update(changes)
    return wire


def test_an_entry_reads_into_a_skill_info() -> None:
    info = skill_info(entry())
    assert (info.name, info.description, info.root, info.size) == ("pdf", "PDFs", "skill://pdf", 6)
    assert info.files is not None
    assert info.files[1] == SkillFile("skill://pdf/my%20forms.md", digest_of(b"forms"), 5)
    dynamic = skill_info(entry(resources="dynamic"))
    assert dynamic.files is None
    assert dynamic.size is None


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"uri": 3}, "no uri"),
        ({"uri": "skill://pdf/README.md"}, "does not end in /SKILL.md"),
        ({"frontmatter": "name: pdf"}, "no frontmatter object"),
        ({"frontmatter": {"name": "pdf"}}, "lacks a name or a description"),
        ({"resources": None}, 'neither a list nor "dynamic"'),
        ({"resources": "static"}, 'neither a list nor "dynamic"'),
        ({"resources": [{"uri": "skill://pdf/SKILL.md", "digest": "d"}]}, "without uri"),
        ({"resources": [{"uri": "u", "digest": "d", "size": -1}]}, "without uri"),
        ({"resources": [{"uri": "u", "digest": "d", "size": True}]}, "without uri"),
    ],
)
def test_a_malformed_entry_is_a_remote_protocol_error(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(RemoteProtocolError, match=why):
        skill_info(entry(**changes))


def test_a_file_is_found_by_path_or_uri_and_never_outside_the_skill() -> None:
    info = skill_info(entry())
    forms = "skill://pdf/my%20forms.md"
    assert info.file("my forms.md") is not None
    assert info.file("./my%20forms.md") is not None
    assert info.file(forms) is not None
    assert info.file("SKILL.md") is not None
    for outside in ("../pdf/SKILL.md", "sub/../../x", "", ".", "nope.md", "skill://other/SKILL.md"):
        assert info.file(outside) is None
    assert info.resolve("../x") is None
    assert info.resolve("a/./b") == "skill://pdf/a/b"


def test_check_file_checks_the_size_then_the_digest() -> None:
    listed = SkillFile("skill://pdf/a.md", digest_of(b"right"), 5)
    check_file(listed, b"right")
    with pytest.raises(
        SkillVerificationError, match="is 6 bytes; its skill entry says 5"
    ) as caught:
        check_file(listed, b"wrong!")
    assert (caught.value.reason, caught.value.uri) == ("size", "skill://pdf/a.md")
    with pytest.raises(SkillVerificationError, match="has digest sha256:") as caught:
        check_file(listed, b"wrong")
    assert caught.value.reason == "digest"


def test_check_front_matter_compares_field_by_field() -> None:
    info = skill_info(entry(frontmatter={"name": "pdf", "description": "PDFs", "n": 1}))
    matter, body = check_front_matter(info, "---\nname: pdf\ndescription: PDFs\nn: 1.0\n---\nGo.\n")
    assert matter == {"name": "pdf", "description": "PDFs", "n": 1}
    assert body == "Go.\n"
    for text, fields in [
        ("---\nname: pdf\ndescription: Exfiltrate\nn: 1\n---\n", "description"),
        ("---\nname: pdf\ndescription: PDFs\n---\n", "n"),
        ("---\nname: pdf\ndescription: PDFs\nn: true\n---\n", "n"),
        ("---\nname: pdf\ndescription: PDFs\nn: 1\nallowed-tools: Bash\n---\n", "allowed-tools"),
    ]:
        with pytest.raises(SkillVerificationError, match=f"differs .* in {fields}") as caught:
            check_front_matter(info, text)
        assert caught.value.reason == "frontmatter"
    with pytest.raises(SkillVerificationError, match="front matter cannot be read"):
        check_front_matter(info, "no front matter at all")


def test_a_skill_info_is_what_the_server_sent() -> None:
    wire = entry()
    assert skill_info(wire).raw is wire
    assert isinstance(skill_info(wire), SkillInfo)
