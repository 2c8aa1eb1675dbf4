"""Skills added with OAuth scopes, over Streamable HTTP behind a real token verifier.

A token without the skills' scopes sees none of them in `skills/list` and is refused (403
insufficient_scope) what names one: `skills/get`, `resources/directory/read` of its folders,
`resources/read` of its files. Nothing is enforced where there is no token (stdio, memory).
"""

from __future__ import annotations

from pathlib import Path

from tests.auth.test_http_auth import params, protected
from tests.features.test_skills import write_skill
from trio_mcp import Server

SKILL = "skill://notes-guide/SKILL.md"


async def test_a_token_without_the_skills_scopes_neither_sees_nor_reads_them(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path, "notes-guide", {"ref/x.md": "x"})
    server = Server("skills")
    server.add_skills(tmp_path, scopes=["notes:read"])
    async with protected(server) as p:
        narrow = p.client(p.token(scopes=["mcp"]))
        assert (await narrow.initialize()).status == 200
        hidden = await narrow.request("skills/list", {})
        refused = [
            await narrow.request("skills/get", {"uri": SKILL}),
            await narrow.request("resources/directory/read", {"uri": "skill://notes-guide"}),
            await narrow.request("resources/directory/read", {"uri": "skill://notes-guide/ref"}),
            await narrow.request("resources/read", {"uri": SKILL}),
        ]
        wide = p.client(p.token(scopes=["mcp", "notes:read"]))
        assert (await wide.initialize()).status == 200
        shown = await wide.request("skills/list", {})
        got = await wide.request("skills/get", {"uri": SKILL})
        folder = await wide.request("resources/directory/read", {"uri": "skill://notes-guide"})
    assert hidden.result["skills"] == []
    for reply in refused:
        assert reply.status == 403
        challenge = params(reply.response.headers["www-authenticate"])
        assert challenge["error"] == "insufficient_scope"
        assert "notes:read" in challenge["scope"]
    assert [entry["uri"] for entry in shown.result["skills"]] == [SKILL]
    assert got.result["skill"]["uri"] == SKILL
    assert [child["name"] for child in folder.result["resources"]] == ["SKILL.md", "ref"]
