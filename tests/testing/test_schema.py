"""The schema checker (`trio_mcp.testing._schema`): it accepts what the schemas allow and rejects
what they do not, both ways, in the revision each message speaks."""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

import jsonschema
import pytest

from tests.helpers import MODERN
from trio_mcp import SUPPORTED_VERSIONS
from trio_mcp.testing import SchemaViolationError
from trio_mcp.testing._schema import (
    SCHEMA_DIR,
    VERSIONS,
    MessageChecker,
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
    assert set(VERSIONS) == set(SUPPORTED_VERSIONS)  # the revisions we speak, no more
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
        validate_server_message(call_result("2025-06-18"), "2025-06-18", "x/unknown")
    with pytest.raises(ValueError, match="DiscoverResult"):
        validate_server_message(call_result("2025-06-18"), "2025-06-18", "server/discover")


# -- both ways, and where the rule is -------------------------------------------------------------


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(version: str) -> dict[str, Any]:
    return request(
        1,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "tests", "version": "0"},
        },
    )


def test_the_error_names_the_message_the_definition_and_the_schema_path() -> None:
    bad_block = call_result("2025-06-18")
    bad_block["result"]["content"][0] = {"type": "text"}  # no "text"
    with pytest.raises(SchemaViolationError) as caught:
        validate_server_message(bad_block, "2025-06-18", "tools/call")
    error = caught.value
    # The content block union fails as a whole; the text block's own rule is the one named.
    assert error.definition == "CallToolResult"
    assert error.schema_path == "#/definitions/TextContent/required"
    assert error.instance_path == "content/0"
    assert error.version == "2025-06-18"
    assert error.message == bad_block
    text = str(error)
    assert text.startswith("the result of the server's response to tools/call (id 'c')")
    assert "'text' is a required property" in text
    assert "schema: 2025-06-18/schema.json#/definitions/TextContent/required" in text


def test_an_untagged_union_failure_is_reported_as_the_union() -> None:
    # No alternative's tag matches: no one branch is closer than the others.
    unknown = call_result("2025-11-25")
    unknown["result"]["content"][0] = {"type": "video", "url": "x"}
    with pytest.raises(SchemaViolationError) as caught:
        validate_server_message(unknown, "2025-11-25", "tools/call")
    assert caught.value.schema_path == "#/$defs/ContentBlock/anyOf"


def test_client_requests_are_checked_against_their_method_definition() -> None:
    checker = MessageChecker("2025-11-25")
    checker.check("client", initialize("2025-11-25"))
    with pytest.raises(SchemaViolationError) as caught:
        checker.check("client", request(2, "tools/call", {"arguments": {}}))  # no name
    assert caught.value.definition == "CallToolRequest"
    assert str(caught.value).startswith("the client's request tools/call (id 2)")
    assert "'name' is a required property" in str(caught.value)


def test_a_method_outside_the_senders_union_breaks_the_schema() -> None:
    checker = MessageChecker("2025-11-25")
    with pytest.raises(SchemaViolationError, match="ClientRequest"):
        checker.check("client", request(2, "tools/run", {"name": "x"}))
    # A server may not send what only a client sends.
    with pytest.raises(SchemaViolationError, match="ServerRequest"):
        checker.check("server", request(3, "tools/call", {"name": "x"}))


def test_the_initialize_result_settles_the_revision() -> None:
    # Audio content exists from 2025-03-26 on: fine under the revision asked for, not under the
    # older one the server settles on.
    audio = call_result("2025-11-25")
    audio["result"]["content"] = [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]
    for settled, ok in (("2025-11-25", True), ("2024-11-05", False)):
        checker = MessageChecker("2025-11-25")
        checker.check("client", initialize("2025-11-25"))
        checker.check("server", init_result(settled))
        assert checker.version == settled
        checker.check("client", request("c", "tools/call", {"name": "t"}))
        if ok:
            checker.check("server", audio)
        else:
            with pytest.raises(SchemaViolationError, match="of MCP 2024-11-05"):
                checker.check("server", audio)


def test_a_request_naming_its_revision_in_meta_is_answered_in_that_revision() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    checker = MessageChecker("2025-11-25")
    checker.check("client", request("c", "tools/call", {"name": "t", "_meta": meta}))
    handshake_style = call_result("2025-11-25")  # no resultType, which 2026-07-28 requires
    with pytest.raises(SchemaViolationError, match=f"of MCP {MODERN}"):
        checker.check("server", handshake_style)
    checker.check("client", request("d", "tools/call", {"name": "t", "_meta": meta}))
    checker.check("server", {**call_result(MODERN), "id": "d"})
    assert checker.checked == 3


def test_client_answers_to_server_requests_are_checked() -> None:
    checker = MessageChecker("2025-11-25")
    checker.check("server", request(7, "roots/list"))
    checker.check("client", {"jsonrpc": "2.0", "id": 7, "result": {"roots": []}})
    checker.check("server", request(8, "roots/list"))
    with pytest.raises(SchemaViolationError, match="the client's response to roots/list"):
        checker.check("client", {"jsonrpc": "2.0", "id": 8, "result": {"roots": "none"}})


def test_an_answer_to_no_known_request_gets_the_envelope_check_only() -> None:
    checker = MessageChecker("2025-11-25")
    checker.check("server", {"jsonrpc": "2.0", "id": 99, "result": {"anything": 1}})
    with pytest.raises(SchemaViolationError, match="JSONRPCResultResponse"):
        checker.check("server", {"jsonrpc": "2.0", "id": 99})


def test_a_frame_that_is_not_json_is_a_violation() -> None:
    checker = MessageChecker("2025-11-25")
    with pytest.raises(SchemaViolationError, match="the server sent a frame that is not JSON"):
        checker.check_frame("server", b"{nope")


def test_a_batch_is_checked_both_ways() -> None:
    checker = MessageChecker("2025-03-26")
    checker.check("client", initialize("2025-03-26"))
    checker.check("server", init_result("2025-03-26"))
    checker.check("client", [request("a", "ping"), request("b", "tools/call", {"name": "t"})])
    broken_call = call_result("2025-03-26")
    broken_call["id"] = "b"
    broken_call["result"]["content"] = "text"
    with pytest.raises(SchemaViolationError, match="response to tools/call"):
        checker.check("server", [{"jsonrpc": "2.0", "id": "a", "result": {}}, broken_call])


def test_an_unknown_revision_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="no schema"):
        MessageChecker("2099-01-01")
