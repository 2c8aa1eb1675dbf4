"""The README's quick start runs as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.timing import scaled
from trio_mcp import Asking
from trio_mcp.testing import connect

README = Path(__file__).resolve().parent.parent / "README.md"


def quick_start_source() -> str:
    text = README.read_text()
    match = re.search(r"```python\n(# tools\.py\n.*?)```", text, re.DOTALL)
    assert match, "README lost its tools.py quick start"
    return match.group(1)


def test_quick_start_serves_its_tool(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(quick_start_source())
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "readme", "version": "0"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "calculator.divide", "arguments": {"a": 9, "b": 3}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "calculator.divide", "arguments": {"a": 1, "b": 0}},
        },
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "trio_mcp", "run", "tools.py"],
        input="".join(json.dumps(m) + "\n" for m in lines).encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=scaled(60),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}
    assert out[1]["result"]["serverInfo"]["name"] == "my-tools"
    assert out[2]["result"]["structuredContent"] == {"result": 3.0}
    assert out[3]["result"] == {
        "content": [{"type": "text", "text": "Cannot divide by zero"}],
        "isError": True,
    }


def test_readme_opens_with_the_two_setup_commands() -> None:
    block = re.search(r"```sh\n(.*?)```", README.read_text(), re.DOTALL)
    assert block
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "demo_tools" in commands[0]
    assert commands[1].startswith("bash .ci/run")


def fuller_example_source() -> str:
    match = re.search(r"```python\n(# planner\.py\n.*?)```", README.read_text(), re.DOTALL)
    assert match, "README lost its planner.py example"
    return match.group(1)


async def test_the_fuller_example_plans_reports_progress_and_refuses_bad_squads(
    tmp_path: Path,
) -> None:
    from trio_mcp import Progress, open_client  # noqa: PLC0415

    (tmp_path / "planner.py").write_text(fuller_example_source())
    planner = load(tmp_path / "planner.py", "readme_planner")
    progress: list[tuple[float, float | None, str | None]] = []

    def on_progress(update: Progress) -> None:
        progress.append((update.progress, update.total, update.message))

    squads = [
        {"name": "Tactical", "models": 10, "faction": "Space Marines"},
        {"name": "Boyz", "models": 20, "faction": "Orks"},
    ]
    async with open_client(planner.server) as client:
        [listed] = await client.list_tools()
        result = await client.call_tool("planner.plan", {"squads": squads}, progress=on_progress)
        empty = await client.call_tool("planner.plan", {"squads": []})
        bad = await client.call_tool(
            "planner.plan", {"squads": [{**squads[0], "models": 0}], "rounds": 3}
        )
    assert listed.title == "Plan a battle"
    assert listed.input_schema["required"] == ["squads"]
    assert result.structured == {
        "squads": 2,
        "total_models": 30,
        "advice": "Hold the centre for 5 rounds",
    }
    assert progress == [(1, 2, "placed Tactical"), (2, 2, "placed Boyz")]
    assert empty.is_error
    assert empty.text == "Give at least one squad"
    assert bad.is_error
    assert "squads[0].models: expected greater than or equal to 1; got 0 (integer)" in bad.text


def test_relative_links_in_the_readme_and_docs_resolve() -> None:
    root = README.parent
    for page in [README, *sorted((root / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


@pytest.mark.slow
def test_the_readme_testing_example_passes_against_the_quick_start(tmp_path: Path) -> None:
    from tests.helpers import run_pytest  # noqa: PLC0415

    match = re.search(
        r"## Testing your server\n.*?```python\n(.*?)```", README.read_text(), re.DOTALL
    )
    assert match, "README lost its testing example"
    (tmp_path / "tools.py").write_text(quick_start_source())
    (tmp_path / "test_tools.py").write_text(match.group(1))
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    assert run_pytest(tmp_path) == {"test_tools::test_divide": ("passed", "")}


def codex_source() -> str:
    match = re.search(r"```python\n(# codex\.py\n.*?)```", README.read_text(), re.DOTALL)
    assert match, "README lost its codex.py example"
    return match.group(1)


async def test_the_codex_example_reads_prompts_and_completes(tmp_path: Path) -> None:
    import trio_mcp.testing  # noqa: PLC0415
    from trio_mcp import RequestError  # noqa: PLC0415

    (tmp_path / "codex.py").write_text(codex_source())
    codex = load(tmp_path / "codex.py", "readme_codex")
    async with trio_mcp.testing.connect(codex.server) as client:
        motto = await client.request("resources/read", {"uri": "wh40k://codex/motto"})
        unit = await client.request("resources/read", {"uri": "wh40k://units/orks/7"})
        templates = await client.request("resources/templates/list", {})
        prompt = await client.request(
            "prompts/get", {"name": "wh40k.battle_briefing", "arguments": {"attacker": "orks"}}
        )
        with pytest.raises(RequestError) as bad:
            await client.request("resources/read", {"uri": "wh40k://units/orks/x"})
        with pytest.raises(RequestError) as missing:
            await client.request("resources/read", {"uri": "wh40k://units/orks/100"})
        done = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "wh40k.battle_briefing"},
                "argument": {"name": "attacker", "value": "n"},
            },
        )
    assert motto["contents"][0]["text"] == "Waaagh!"
    assert json.loads(unit["contents"][0]["text"]) == {"faction": "orks", "unit_id": 7}
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
        "wh40k://units/{faction}/{unit_id}"
    ]
    assert prompt["messages"][0]["content"]["text"] == (
        "The orks attack for 3 rounds. Plan the defence."
    )
    assert done["completion"]["values"] == ["necrons"]
    assert bad.value.code == -32602
    assert "unit_id" in str(bad.value)
    assert missing.value.code == -32002
    assert missing.value.data == {"uri": "wh40k://units/orks/100"}


def readme_block(name: str) -> str:
    match = re.search(rf"```python\n(# {re.escape(name)}\n.*?)```", README.read_text(), re.DOTALL)
    assert match, f"README lost its {name} example"
    return match.group(1)


def load(path: Path, name: str) -> Any:
    import importlib.util  # noqa: PLC0415 - only these tests load modules from files

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_asking_example_musters_in_both_eras(tmp_path: Path, version: str) -> None:
    from trio_mcp import RequestError, open_client  # noqa: PLC0415

    (tmp_path / "muster.py").write_text(readme_block("muster.py"))
    (tmp_path / "orders.py").write_text(readme_block("orders.py"))
    muster = load(tmp_path / "muster.py", "readme_muster")
    orders = load(tmp_path / "orders.py", "readme_orders")
    async with open_client(
        muster.server,
        protocol_version=version,
        asking=Asking(elicitation=orders.commander, sampling=orders.model),
    ) as client:
        result = await client.call_tool("muster")
    assert result.text == "Three Catachan companies, present."
    async with open_client(muster.server, protocol_version=version) as client:
        if version == "2026-07-28":
            with pytest.raises(RequestError) as missing:
                await client.call_tool("muster")
            assert missing.value.code == -32021
            assert missing.value.data == {"requiredCapabilities": {"elicitation": {}}}
            return
        bare = await client.call_tool("muster")
    assert bare.is_error
    assert "'elicitation' capability" in bare.text


def test_every_test_the_docs_name_exists() -> None:
    root = README.parent
    tests = "".join(path.read_text() for path in (root / "tests").rglob("*.py"))
    for page in sorted((root / "docs").glob("*.md")):
        for name in re.findall(r"::(test_\w+)", page.read_text()):
            assert f"def {name}(" in tests, f"{page.name} names a test that does not exist: {name}"


def lifespan_example_source() -> str:
    text = README.read_text()
    match = re.search(r"```python\n(# notes\.py\n.*?)```", text, re.DOTALL)
    assert match, "README lost its lifespan and middleware example"
    return match.group(1)


async def test_the_lifespan_and_middleware_example_runs_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace: dict[str, Any] = {"__name__": "notes"}
    exec(compile(lifespan_example_source(), "notes.py", "exec"), namespace)
    async with connect(namespace["server"], client_info={"name": "reader", "version": "1"}) as c:
        result = await c.call_tool("count_notes")
    assert result.structured == {"result": 3}
    printed = capsys.readouterr().out
    assert "count_notes None False" in printed  # the middleware's line: no token in process
    assert "from {'name': 'reader', 'version': '1'}" in printed  # the session hook's
