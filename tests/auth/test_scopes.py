"""Scopes as declarations: checked at registration, not enforced without a token.

Over stdio and in memory there is no bearer token: every tool, resource and prompt is listed
and callable whatever scopes it declares (`_core/auth`, Rule 2). The checks of scope names
and the challenge header's quoting are plain functions.
"""

from __future__ import annotations

import pytest

from tests.auth.test_http_auth import Notes
from trio_mcp import AuthInfo, Server, StaticTokenVerifier, ToolDefinitionError, open_client, tool
from trio_mcp._core.auth import missing_scopes, parse_scopes
from trio_mcp.auth.resource import challenge
from trio_mcp.http import HttpOptions


async def test_in_memory_nothing_is_enforced_and_ctx_auth_is_none() -> None:
    notes = Notes()
    async with open_client(notes.server(required_scopes=["mcp"])) as client:
        names = [t.name for t in await client.list_tools()]
        written = await client.call_tool("write_note", {"text": "x"})
        whoami = await client.call_tool("whoami", {})
    assert names == ["echo", "write_note", "read_notes", "whoami"]
    assert written.text == "saved x"
    assert whoami.structured == {"auth": None}
    assert notes.ran == ["write_note"]


def test_declared_scopes_are_kept_on_the_registered_items() -> None:
    server = Notes().server()
    (write,) = [t for t in server.tools if t.name == "write_note"]
    assert write.scopes == frozenset({"notes:write"})
    server.add_tool(lambda: 1, name="plain")
    (plain,) = [t for t in server.tools if t.name == "plain"]
    assert plain.scopes == frozenset()
    server.add_tool(lambda: 2, name="admin_only", scopes=["admin"])
    assert [t.scopes for t in server.tools if t.name == "admin_only"] == [frozenset({"admin"})]


@pytest.mark.parametrize(
    ("scopes", "message"),
    [
        ("notes:write", "must be a list of scope names"),
        (["has space"], "is not a valid OAuth scope name"),
        (['quo"te'], "is not a valid OAuth scope name"),
        ([""], "is not a valid OAuth scope name"),
    ],
)
def test_bad_scope_names_are_definition_errors(scopes: object, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        tool(scopes=scopes)  # type: ignore[call-overload]
    with pytest.raises(ToolDefinitionError, match=message):
        Server(required_scopes=scopes)  # type: ignore[arg-type]


def test_scopes_parse_from_scope_and_scp() -> None:
    assert parse_scopes("a b  c") == {"a", "b", "c"}
    assert parse_scopes(["a", "b", 3]) == {"a", "b"}
    assert parse_scopes(None) == frozenset()
    assert missing_scopes(["a", "b", "a"], {"b"}) == ("a",)
    info = AuthInfo(scopes=frozenset({"a"}))
    assert info.has_scopes(["a"])
    assert not info.has_scopes(["a", "b"])


def test_a_challenge_never_carries_a_quote_or_backslash() -> None:
    header = challenge(
        resource_metadata="https://x/.well-known/oauth-protected-resource",
        error="invalid_token",
        description='bad "token" \\ here',
        scopes=["a", "b", "a"],
    )
    assert header == (
        b'Bearer error="invalid_token", error_description="bad ?token? ? here", scope="a b", '
        b'resource_metadata="https://x/.well-known/oauth-protected-resource"'
    )


def test_bearer_token_and_auth_are_one_or_the_other() -> None:
    with pytest.raises(ValueError, match="bearer_token or auth, not both"):
        HttpOptions(bearer_token="t", auth=StaticTokenVerifier("t"))
