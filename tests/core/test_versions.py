"""The revision table: its facts, and that no other module compares revision strings."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT
from trio_mcp._core.versions import (
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    batch_refusal,
    revision,
)

SRC = REPO_ROOT / "src" / "trio_mcp"
DATE = re.compile(r"20\d\d-\d\d-\d\d")


def test_eras_and_order() -> None:
    assert MODERN_VERSIONS == ("2026-07-28",)
    assert HANDSHAKE_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
    assert LATEST_HANDSHAKE_VERSION == "2025-11-25"
    assert SUPPORTED_VERSIONS == MODERN_VERSIONS + HANDSHAKE_VERSIONS
    assert list(SUPPORTED_VERSIONS) == sorted(SUPPORTED_VERSIONS, reverse=True)


# (revision, tool annotations, audio, progress message, structured content) as each revision's
# changelog introduced them: 2025-03-26 annotations, audio and progress messages; 2025-06-18
# structuredContent, outputSchema, titles and resource links.
FACTS = [
    ("2024-11-05", False, False, False, False),
    ("2025-03-26", True, True, True, False),
    ("2025-06-18", True, True, True, True),
    ("2025-11-25", True, True, True, True),
    ("2026-07-28", True, True, True, True),
]


@pytest.mark.parametrize(("name", "annotations", "audio", "message", "structured"), FACTS)
def test_features_per_revision(
    name: str, annotations: bool, audio: bool, message: bool, structured: bool
) -> None:
    row = revision(name)
    assert (row.tool_annotations, row.audio, row.progress_message, row.structured) == (
        annotations,
        audio,
        message,
        structured,
    )
    assert row.per_request == (name in MODERN_VERSIONS)
    assert row.handshake == (name in HANDSHAKE_VERSIONS)


def test_an_unknown_revision_is_no_row() -> None:
    with pytest.raises(KeyError):
        revision("1999-01-01")


@pytest.mark.parametrize("name", [*SUPPORTED_VERSIONS, None, "1999-01-01"])
def test_batches_are_taken_under_2025_03_26_only(name: str | None) -> None:
    refusal = batch_refusal(name)
    if name == "2025-03-26":
        assert refusal is None
        return
    assert refusal is not None
    assert refusal.startswith("Invalid Request: JSON-RPC batches are part of MCP 2025-03-26 only")
    assert (f"MCP {name} has none" if name else "no version is negotiated yet") in refusal


def _date_comparisons(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                found.extend(
                    f"{path.name}:{node.lineno}"
                    for const in ast.walk(operand)
                    if isinstance(const, ast.Constant)
                    and isinstance(const.value, str)
                    and DATE.fullmatch(const.value)
                )
    return found


def test_no_module_but_the_table_compares_revision_strings() -> None:
    offenders = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "versions.py"
        for hit in _date_comparisons(path)
    ]
    assert offenders == []


def test_the_scan_sees_a_comparison(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('ok = version >= "2025-06-18"\n')
    assert _date_comparisons(probe) == ["probe.py:1"]
