"""The generic registry: order, pages and cursors of its own kind, duplicates, change counter."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest

from trio_mcp import ToolDefinitionError
from trio_mcp._exceptions import RemoteProtocolError
from trio_mcp._features.registry import Registry


@dataclass(frozen=True)
class Item:
    name: str


def _filled(kind: str, n: int) -> Registry[Item]:
    registry: Registry[Item] = Registry(kind)
    for i in range(n):
        registry.add(Item(f"i{i}"))
    return registry


def test_pages_follow_registration_order() -> None:
    registry = _filled("prompts", 5)
    first, cursor = registry.page(None, 2)
    assert [item.name for item in first] == ["i0", "i1"]
    assert cursor is not None
    assert base64.urlsafe_b64decode(cursor).decode() == "prompts:2"
    rest, end = registry.page(cursor, 10)
    assert [item.name for item in rest] == ["i2", "i3", "i4"]
    assert end is None


def test_a_cursor_of_another_kind_is_refused() -> None:
    tools = _filled("tools", 3)
    _, cursor = tools.page(None, 1)
    assert cursor is not None
    with pytest.raises(RemoteProtocolError, match="unknown cursor") as info:
        _filled("resources", 3).page(cursor, 1)
    assert info.value.code == -32602


def test_duplicates_name_the_kind_and_the_holder() -> None:
    registry: Registry[Item] = Registry("resources", lambda item: f"<{item.name}>")
    registry.add(Item("a"))
    with pytest.raises(ToolDefinitionError, match=r"duplicate resource name 'a'.*<a>"):
        registry.add(Item("a"))
    assert len(registry) == 1


def test_every_change_bumps_the_counter() -> None:
    registry = _filled("tools", 2)
    assert registry.changes == 2
    registry.page(None, None)  # reading is no change
    registry.remove("i0")
    assert registry.changes == 3
    assert [item.name for item in registry] == ["i1"]
    with pytest.raises(KeyError):
        registry.remove("i0")
    assert registry.changes == 3
