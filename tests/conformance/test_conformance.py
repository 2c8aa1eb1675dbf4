"""The conformance fixtures and the runner's own logic, checked without Node or the suite.

The suite itself runs in `scripts/conformance`; these tests make sure the fixture server gives
each scenario what its text asks for (so a failure there is trio-mcp's, not the fixture's), and
that the runner reads the suite's listings and results the way the suite writes them.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import everything_server, suite
from tests.helpers import MODERN, open_memory_peer
from tests.timing import scaled
from trio_mcp import LogMessage, Progress, open_client


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


# What each no-argument tool must return, as the scenario texts spell it out.
EXPECTED_CONTENT: dict[str, list[dict[str, Any]]] = {
    "test_simple_text": [_text("This is a simple text response for testing.")],
    "test_embedded_resource": [
        {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }
    ],
}


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
@pytest.mark.parametrize("tool", sorted(EXPECTED_CONTENT))
async def test_fixed_content_tools(tool: str, version: str) -> None:
    async with open_client(everything_server.server, protocol_version=version) as client:
        result = await client.call_tool(tool)
    assert result.raw["content"] == EXPECTED_CONTENT[tool]
    assert not result.is_error


async def test_media_tools_return_valid_png_and_wav() -> None:
    async with open_client(everything_server.server) as client:
        image = (await client.call_tool("test_image_content")).raw["content"]
        audio = (await client.call_tool("test_audio_content")).raw["content"]
        mixed = (await client.call_tool("test_multiple_content_types")).raw["content"]
    assert [block["type"] for block in image] == ["image"]
    assert image[0]["mimeType"] == "image/png"
    assert base64.b64decode(image[0]["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert [(block["type"], block["mimeType"]) for block in audio] == [("audio", "audio/wav")]
    wav = base64.b64decode(audio[0]["data"])
    assert wav[:4] == b"RIFF"
    assert wav[8:12] == b"WAVE"
    assert [block["type"] for block in mixed] == ["text", "image", "resource"]
    assert mixed[0]["text"] == "Multiple content types test:"
    assert mixed[2]["resource"] == {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": '{"test":"data","value":123}',
    }


async def test_error_tool_reports_is_error() -> None:
    async with open_client(everything_server.server) as client:
        result = await client.call_tool("test_error_handling")
    assert result.is_error
    assert result.raw["content"] == [_text("This tool intentionally returns an error for testing")]


async def test_logging_tool_sends_three_info_messages(autojump_clock: object) -> None:
    logs: list[LogMessage] = []
    async with open_client(everything_server.server, log_handler=logs.append) as client:
        await client.call_tool("test_tool_with_logging")
    assert logs == [
        LogMessage("info", "Tool execution started"),
        LogMessage("info", "Tool processing data"),
        LogMessage("info", "Tool execution completed"),
    ]


async def test_progress_tool_reports_0_50_100(autojump_clock: object) -> None:
    progress: list[Progress] = []
    async with open_client(everything_server.server) as client:
        await client.call_tool("test_tool_with_progress", progress=progress.append)
    assert [(p.progress, p.total) for p in progress] == [(0, 100), (50, 100), (100, 100)]


async def test_trigger_tools_add_then_remove_a_tool_and_a_prompt() -> None:
    async with open_client(everything_server.server, protocol_version=MODERN) as client:
        for present in (True, False):
            await client.call_tool("test_trigger_tool_change", {})
            await client.call_tool("test_trigger_prompt_change", {})
            tools = {tool.name for tool in await client.list_tools()}
            prompts = {prompt.name for prompt in await client.list_prompts()}
            assert (everything_server.DYNAMIC_TOOL in tools) is present
            assert (everything_server.DYNAMIC_PROMPT in prompts) is present


async def test_json_schema_tool_keeps_2020_12_keywords() -> None:
    async with open_client(everything_server.server, protocol_version=MODERN) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
    schema = tools["json_schema_2020_12_tool"].input_schema
    assert schema == everything_server.JSON_SCHEMA_2020_12
    for keyword in ("$schema", "$defs", "allOf", "if", "then", "else", "additionalProperties"):
        assert keyword in schema
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"


async def test_custom_header_tool_marks_a_string_parameter() -> None:
    # http-custom-header-server-validation looks for a string parameter with x-mcp-header.
    async with open_client(everything_server.server, protocol_version=MODERN) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        result = await client.call_tool("test_custom_headers", {"region": "eu"})
    region = tools["test_custom_headers"].input_schema["properties"]["region"]
    assert region["type"] == "string"
    assert region["x-mcp-header"] == "Region"
    assert result.text == "region=eu"


async def test_task_states_go_on_a_listen_stream_that_asks_for_them(autojump_clock: object) -> None:
    # tasks-status-notifications (which the suite itself skips for now): `notifications/tasks`
    # on the subscriptions/listen stream, carrying taskId and status, a result inlined at the end.
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }
    async with open_memory_peer(everything_server.server, initialize=False) as peer:
        created = await peer.call("slow_compute", {"seconds": 5, "label": "x"}, _meta=meta)
        task_id = created["result"]["taskId"]
        await peer.start_request(
            "subscriptions/listen", {"_meta": meta, "notifications": {"taskIds": [task_id]}}
        )
        ack = await peer.receive()
        told = await peer.receive()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    assert told["method"] == "notifications/tasks"
    assert told["params"]["taskId"] == task_id
    assert told["params"]["status"] == "completed"
    assert told["params"]["result"]["content"] == [_text("computed x after 5 s")]


async def test_logging_tool_logs_one_info_message() -> None:
    logs: list[LogMessage] = []
    async with open_client(everything_server.server, log_handler=logs.append) as client:
        assert (await client.call_tool("test_logging_tool")).text == "logged"
    assert logs == [LogMessage("info", "test_logging_tool ran")]


# -- the runner ---------------------------------------------------------------------------------

LISTING = """Required for 2025-11-25 (5 scenarios, frozen; run at the 2025-11-25 wire):

Server scenarios (test against a server):
  - server-initialize
  - tools-list

Client scenarios (test against a client):
  - initialize
  - auth/metadata-default

Run and reported, but never scored:
  pending (1):
    - json-schema-2020-12 [server]
"""


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("server", {"server-initialize", "tools-list"}),
        ("client", {"initialize", "auth/metadata-default"}),
    ],
)
def test_parse_required_reads_one_section(role: str, expected: set[str]) -> None:
    assert suite.parse_required(LISTING, role) == expected


def test_parse_required_refuses_a_listing_without_the_section() -> None:
    with pytest.raises(suite.SuiteError, match="no server scenarios"):
        suite.parse_required("Client scenarios (test against a client):\n  - x\n", "server")


def _write_checks(folder: Path, statuses: list[str]) -> None:
    folder.mkdir(parents=True)
    checks = [{"id": f"check-{i}", "status": status} for i, status in enumerate(statuses)]
    (folder / "checks.json").write_text(json.dumps(checks))


def test_read_results_counts_warnings_as_failures(tmp_path: Path) -> None:
    _write_checks(tmp_path / "server-tools-list-2026-11-23T21-36-53-645Z", ["SUCCESS", "INFO"])
    _write_checks(tmp_path / "server-caching-2026-11-23T21-36-54-001Z", ["SUCCESS", "WARNING"])
    _write_checks(tmp_path / "auth" / "metadata-default-2026-11-23T21-36-55-123Z", ["FAILURE"])
    _write_checks(tmp_path / "server-sse-polling-2026-11-23T21-36-56-000Z", ["SKIPPED", "INFO"])
    results = {result.name: result for result in suite.read_results(tmp_path)}
    assert set(results) == {"tools-list", "caching", "auth/metadata-default", "sse-polling"}
    assert results["tools-list"].passed
    assert results["sse-polling"].passed  # skipped and informational checks fail nothing
    assert results["caching"].failing == ("check-1: WARNING",)
    assert results["auth/metadata-default"].failing == ("check-0: FAILURE",)


def test_read_results_fails_a_skills_scenario_that_skipped_a_check(tmp_path: Path) -> None:
    # Without the skills extension declared every sep-2640 check is SKIPPED: not a pass.
    _write_checks(
        tmp_path / "server-sep-2640-skills-directory-2026-11-28T07-28-15-824Z", ["SKIPPED"]
    )
    _write_checks(tmp_path / "sep-2640-client-verify-size-2026-11-28T07-28-31-684Z", ["SUCCESS"])
    results = {result.name: result for result in suite.read_results(tmp_path)}
    assert results["sep-2640-skills-directory"].failing == ("check-0: SKIPPED",)
    assert results["sep-2640-client-verify-size"].passed


def test_report_counts_only_scored_scenarios() -> None:
    results = [
        suite.ScenarioResult("a", 2, ()),
        suite.ScenarioResult("b", 1, ("x: FAILURE",)),
        suite.ScenarioResult("c", 1, ()),
    ]
    text = suite.report("server 2025-11-25", results, frozenset({"a", "b"}))
    assert text.splitlines()[-1] == (
        "server 2025-11-25: 1/2 scenarios pass (and 1/1 run but not scored)"
    )
    assert "  FAIL  b  x: FAILURE" in text
    assert "  pass  c  (not scored)" in text


def test_install_without_npm_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with (tmp_path / "npm.log").open("w") as log, pytest.raises(suite.SuiteError, match="npm"):
        suite.install(tmp_path / "home", log)


# -- the baseline -------------------------------------------------------------------------------


def _baseline_entries() -> list[tuple[str, str, str]]:
    """(role, entry, its group's heading) for each baseline entry.

    Entries stand in groups under a heading comment `# -- <feature> (issue N): ...`.
    """
    entries = []
    role = heading = ""
    for line in suite.BASELINE.read_text().splitlines():
        stripped = line.strip()
        if re.fullmatch(r"(server|client):.*", stripped):
            role, heading = stripped.split(":")[0], ""
        elif stripped.startswith("# --"):
            heading = stripped
        elif stripped.startswith("- "):
            entries.append((role, stripped[2:], heading))
    return entries


def test_every_baseline_entry_names_the_issue_it_waits_for() -> None:
    entries = _baseline_entries()
    # Nothing parsed is right only when every role says it has nothing ("client: []"); else
    # the parser above lost track of the file's format.
    empty_roles = re.findall(r"^(server|client): \[\]", suite.BASELINE.read_text(), re.M)
    assert entries or sorted(empty_roles) == ["client", "server"], "the baseline parses to nothing"
    for role, entry, heading in entries:
        assert role in {"server", "client"}
        assert re.search(r"\(issue \d+\)", heading), f"{entry}: its group names no issue"
    names = [(role, entry) for role, entry, _ in entries]
    assert len(names) == len(set(names)), "an entry is listed twice"


@pytest.mark.parametrize(
    "script",
    [
        "import time; time.sleep(30)",  # hangs without a word
        "import sys; print('boom', file=sys.stderr)",  # ends before serving
    ],
)
def test_a_fixture_server_that_never_serves_fails_the_start(
    script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite, "SERVER_START_TIMEOUT", 0.5)
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    errors: list[BaseException] = []

    def start() -> None:
        with (tmp_path / "server.log").open("w") as log:
            try:
                suite._read_url(proc, log)
            except suite.SuiteError as exc:
                errors.append(exc)

    try:
        # The silent server sleeps 30 s: reading its stderr to the end would outlast the join,
        # which is only a guard against a hang (the start's own timeout here is 0.5 s).
        reader = threading.Thread(target=start)
        reader.start()
        reader.join(timeout=scaled(60))
        assert not reader.is_alive(), "the start waited for the server's stderr to end"
        assert len(errors) == 1
    finally:
        proc.kill()
        proc.wait()


def test_the_fixture_servers_url_is_read_from_its_stderr(tmp_path: Path) -> None:
    script = "import sys; print('trio-mcp: serving MCP on http://127.0.0.1:9/mcp', file=sys.stderr)"
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    try:
        with (tmp_path / "server.log").open("w") as log:
            assert suite._read_url(proc, log) == "http://127.0.0.1:9/mcp"
    finally:
        proc.wait()
