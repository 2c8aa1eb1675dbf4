"""The schema checker itself: it accepts what the schemas allow and rejects what they do not."""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

import jsonschema
import pytest

from tests.helpers import MODERN
from tests.schema_check import (
    SCHEMA_DIR,
    VERSIONS,
    SchemaViolationError,
    _validator,
    validate_server_message,
    validate_transcript,
)

HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def init_result(version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}, "logging": {}},
            "serverInfo": {"name": "s", "version": "1"},
        },
    }


def call_result(version: str) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": "8"}], "isError": False}
    if version == MODERN:
        result["resultType"] = "complete"
    return {"jsonrpc": "2.0", "id": "c", "result": result}


def test_every_revision_is_present_with_its_recorded_hash() -> None:
    assert (*HANDSHAKE, MODERN) == VERSIONS
    source = (SCHEMA_DIR / "SOURCE.md").read_text()
    assert "modelcontextprotocol/modelcontextprotocol" in source
    for version in VERSIONS:
        digest = hashlib.sha256((SCHEMA_DIR / version / "schema.json").read_bytes()).hexdigest()
        assert re.search(rf"\| {version} .*`{digest}`", source), version


def test_each_revision_uses_its_own_dialect() -> None:
    assert isinstance(_validator("2024-11-05", "Result"), jsonschema.Draft7Validator)
    assert isinstance(_validator("2025-06-18", "Result"), jsonschema.Draft7Validator)
    assert isinstance(_validator("2025-11-25", "Result"), jsonschema.Draft202012Validator)
    assert isinstance(_validator(MODERN, "Result"), jsonschema.Draft202012Validator)


@pytest.mark.parametrize("version", HANDSHAKE)
def test_accepts_valid_handshake_messages(version: str) -> None:
    validate_server_message(init_result(version), version, "initialize")
    validate_server_message(call_result(version), version, "tools/call")
    validate_server_message({"jsonrpc": "2.0", "id": 2, "result": {}}, version, "ping")
    validate_server_message(
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found"}},
        version,
    )
    validate_server_message(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1, "total": 3},
        },
        version,
    )
    validate_server_message(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "data": "careful"},
        },
        version,
    )


def test_accepts_a_stateless_exchange() -> None:
    discover = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "public",
        },
    }
    validate_server_message(discover, MODERN, "server/discover")
    validate_server_message(call_result(MODERN), MODERN, "tools/call")


@pytest.mark.parametrize("version", VERSIONS)
def test_null_id_is_accepted_only_for_unreadable_requests(version: str) -> None:
    for code in (-32700, -32600):
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": "m"}}
        validate_server_message(error, version)
    with pytest.raises(SchemaViolationError):
        validate_server_message(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "m"}}, version
        )


def broken(version: str) -> list[tuple[str, Any, str | None]]:
    """Messages that each break one rule of the schema."""
    no_jsonrpc = call_result(version)
    del no_jsonrpc["jsonrpc"]
    no_content = call_result(version)
    del no_content["result"]["content"]
    bad_block = call_result(version)
    bad_block["result"]["content"][0] = {"type": "text"}  # no "text"
    bool_id = call_result(version)
    bool_id["id"] = True
    no_server_info = init_result(version)
    del no_server_info["result"]["serverInfo"]
    tool_without_schema: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 4,
        "result": {"tools": [{"name": "t"}]},
    }
    if version == MODERN:
        tool_without_schema["result"].update(resultType="complete", ttlMs=0, cacheScope="public")
    cases: list[tuple[str, Any, str | None]] = [
        ("no-jsonrpc", no_jsonrpc, "tools/call"),
        ("no-content", no_content, "tools/call"),
        ("text-block-without-text", bad_block, "tools/call"),
        ("bool-id", bool_id, "tools/call"),
        ("tool-without-inputSchema", tool_without_schema, "tools/list"),
        (
            "error-code-string",
            {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
            None,
        ),
        (
            "progress-without-token",
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
            None,
        ),
        (
            "log-with-unknown-level",
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "loud", "data": "x"},
            },
            None,
        ),
        ("not-an-object", "hello", None),
        ("empty-batch", [], None),
    ]
    if version in HANDSHAKE:  # `initialize` has no result definition in 2026-07-28
        cases.append(("no-serverInfo", no_server_info, "initialize"))
    if version == MODERN:
        no_result_type = call_result(version)
        del no_result_type["result"]["resultType"]
        cases.append(("no-resultType", no_result_type, "tools/call"))
    return cases


@pytest.mark.parametrize("version", VERSIONS)
def test_rejects_broken_messages(version: str) -> None:
    passed = []
    for case, message, method in broken(version):
        try:
            validate_server_message(copy.deepcopy(message), version, method)
        except SchemaViolationError:
            continue
        passed.append(case)
    assert passed == [], f"broken messages accepted under {version}"


def test_batch_is_checked_item_by_item_and_as_a_batch() -> None:
    batch = [call_result("2025-03-26"), {"jsonrpc": "2.0", "id": 9, "result": {}}]
    validate_server_message(batch, "2025-03-26", {"c": "tools/call", 9: "ping"})
    batch[0]["result"]["content"] = "not a list"
    with pytest.raises(SchemaViolationError, match="tools/call"):
        validate_server_message(batch, "2025-03-26", {"c": "tools/call", 9: "ping"})


def test_transcript_matches_responses_to_their_request_methods() -> None:
    sent = [{"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "x"}}]
    received = [call_result("2025-06-18")]
    assert validate_transcript(sent, received, "2025-06-18") == 1
    received[0]["result"]["isError"] = "yes"
    with pytest.raises(SchemaViolationError, match="isError"):
        validate_transcript(sent, received, "2025-06-18")


def test_unknown_version_and_method_are_usage_errors() -> None:
    with pytest.raises(ValueError, match="no schema"):
        validate_server_message(init_result("2099-01-01"), "2099-01-01")
    with pytest.raises(ValueError, match="no result definition"):
        validate_server_message(call_result("2025-06-18"), "2025-06-18", "sampling/createMessage")
    with pytest.raises(ValueError, match="DiscoverResult"):
        validate_server_message(call_result("2025-06-18"), "2025-06-18", "server/discover")
