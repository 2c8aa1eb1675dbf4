"""The schema checker knows the skills extension's messages (`testing/_extensions`).

Each revision's base types hold (`resultType` and the caching hints of 2026-07-28, `Resource`
for a directory's children), and so do the extension's own shapes; a broken message names the
extension's definition and where it breaks.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from trio_mcp.testing import SchemaViolationError
from trio_mcp.testing._schema import MessageChecker, has_definition, validate_server_message

DIGEST = "sha256:" + "0" * 64
ENTRY = {
    "uri": "skill://a/SKILL.md",
    "frontmatter": {"name": "a", "description": "d"},
    "resources": [{"uri": "skill://a/SKILL.md", "digest": DIGEST, "size": 3}],
}
MODERN_HINTS = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public"}


def response(result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": result}


@pytest.mark.parametrize(
    ("version", "method", "result"),
    [
        ("2026-07-28", "skills/list", {**MODERN_HINTS, "skills": [ENTRY], "nextCursor": "c"}),
        ("2026-07-28", "skills/get", {**MODERN_HINTS, "skill": ENTRY}),
        (
            "2026-07-28",
            "resources/directory/read",
            {"resultType": "complete", "resources": [{"uri": "skill://a/x", "name": "x"}]},
        ),
        ("2025-11-25", "skills/list", {"skills": []}),
        ("2025-11-25", "skills/get", {"skill": {**ENTRY, "resources": "dynamic"}}),
        ("2024-11-05", "resources/directory/read", {"resources": []}),
    ],
)
def test_valid_results_pass(version: str, method: str, result: dict[str, Any]) -> None:
    validate_server_message(response(result), version, method)


Mutation = Callable[[dict[str, Any]], object]


@pytest.mark.parametrize(
    ("version", "method", "mutate", "where"),
    [
        ("2026-07-28", "skills/list", lambda r: r.pop("ttlMs"), "ttlMs"),
        ("2026-07-28", "skills/list", lambda r: r.pop("resultType"), "resultType"),
        ("2026-07-28", "skills/list", lambda r: r["skills"][0].pop("frontmatter"), "skills/0"),
        (
            "2026-07-28",
            "skills/list",
            lambda r: r["skills"][0]["resources"][0].update(digest="md5:00"),
            "skills/0/resources/0/digest",
        ),
        (
            "2026-07-28",
            "skills/list",
            lambda r: r["skills"][0].update(resources="static"),
            "skills/0/resources",
        ),
        ("2026-07-28", "skills/get", lambda r: r.update(nextCursor="c"), "(top)"),
        ("2026-07-28", "skills/get", lambda r: r.pop("skill"), "skill"),
    ],
)
def test_broken_results_are_refused(
    version: str, method: str, mutate: Mutation, where: str
) -> None:
    result = copy.deepcopy({**MODERN_HINTS, "skills": [ENTRY], "skill": ENTRY})
    if method == "skills/list":
        result.pop("skill")
    else:
        result.pop("skills")
    mutate(result)
    with pytest.raises(SchemaViolationError) as caught:
        validate_server_message(response(result), version, method)
    assert where in str(caught.value) or where in (caught.value.instance_path or "")


def test_a_directory_child_must_be_a_resource_of_the_revision() -> None:
    with pytest.raises(SchemaViolationError, match=r"ReadResourceDirectoryResult.*'name'"):
        validate_server_message(
            response({"resources": [{"uri": "skill://a/x"}]}),
            "2025-11-25",
            "resources/directory/read",
        )


def test_the_clients_requests_are_checked_too() -> None:
    checker = MessageChecker("2025-11-25")
    checker.check(
        "client", {"jsonrpc": "2.0", "id": 1, "method": "skills/get", "params": {"uri": "x"}}
    )
    checker.check("client", {"jsonrpc": "2.0", "id": 2, "method": "skills/list"})
    with pytest.raises(SchemaViolationError, match=r"GetSkillRequest.*'uri' is a required"):
        checker.check("client", {"jsonrpc": "2.0", "id": 3, "method": "skills/get", "params": {}})
    with pytest.raises(SchemaViolationError, match="ReadResourceDirectoryRequest"):
        checker.check(
            "client",
            {"jsonrpc": "2.0", "id": 4, "method": "resources/directory/read", "params": {"uri": 1}},
        )


def test_a_servers_answer_is_checked_against_the_method_it_answers() -> None:
    checker = MessageChecker("2026-07-28")
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    }
    checker.check(
        "client", {"jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": {"_meta": meta}}
    )
    with pytest.raises(SchemaViolationError, match="ListSkillsResult of MCP 2026-07-28"):
        checker.check("server", response({"resultType": "complete", "skills": []}))


def test_the_extensions_definitions_exist_in_every_revision() -> None:
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"):
        assert has_definition(version, "ListSkillsResult")
        assert has_definition(version, "GetSkillRequest")
