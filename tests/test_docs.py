"""docs/testing.md runs as written: its files are written out and its tests pass.

Each fenced block whose first line is a comment naming a file (`# weather.py`,
`# pyproject.toml`) is that file of a small project; a fresh pytest runs the project's tests,
and every test the page defines must pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import trio_mcp.testing
from tests.helpers import REPO_ROOT, run_pytest
from tests.testing.test_connect import buggy_server

DOC = REPO_ROOT / "docs" / "testing.md"
_FILE_BLOCK = re.compile(r"```(?:python|toml)\n# ([\w.]+\.(?:py|toml))\n(.*?)```", re.DOTALL)


def doc_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for match in _FILE_BLOCK.finditer(DOC.read_text()):
        name = match.group(1)
        assert name not in files, f"docs/testing.md has two blocks for {name}"
        files[name] = f"# {name}\n{match.group(2)}"
    return files


def test_the_page_is_a_whole_project() -> None:
    assert set(doc_files()) == {
        "pyproject.toml",
        "weather.py",
        "weather_aio.py",
        "conftest.py",
        "test_weather.py",
        "test_weather_fixtures.py",
        "test_weather_aio.py",
        "test_from_asyncio.py",
    }


@pytest.mark.slow
def test_every_test_on_the_page_passes(tmp_path: Path) -> None:
    files = doc_files()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    defined = {
        f"{name.removesuffix('.py')}::{test}"
        for name, text in files.items()
        if name.startswith("test_")
        for test in re.findall(r"^(?:async )?def (test_\w+)", text, re.MULTILINE)
    }
    outcomes = run_pytest(tmp_path)
    failed = {name: result for name, result in outcomes.items() if result[0] != "passed"}
    assert failed == {}
    # Parametrized tests run once per revision; each defined test ran at least once.
    assert {name.split("[")[0] for name in outcomes} == defined


async def test_the_sample_violation_is_what_connect_raises() -> None:
    (sample,) = re.findall(r"```text\n(.*?)\n```", DOC.read_text(), re.DOTALL)
    server = buggy_server()  # the page's tool that reports its progress as "half"
    with pytest.raises(trio_mcp.testing.SchemaViolationError) as caught:
        async with trio_mcp.testing.connect(server) as client:
            await client.call_tool("halfway", progress=lambda _: None)
    assert str(caught.value) == sample
