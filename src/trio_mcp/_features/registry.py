"""A registry of primitives of one kind (tools, resources, resource templates, prompts).

A server keeps one per kind: its lists page through it, its requests find their target in it. Keys
are unique within a registry (a name; a URI for resources, a URI template for templates). Order is
registration order, and a list pages through it in that order with opaque cursors of the registry's
own kind ("tools:20"); a cursor of another kind, or one that does not decode, is a -32602 error,
never a silent first page. Every change (add, remove, enable, disable) bumps `changes`, the counter
that tells the runtime a `notifications/<kind>/list_changed` is due; a disabled item stays
registered but is neither listed nor found by `get` until it is enabled again.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from .._core.jsonrpc import INVALID_PARAMS
from .._core.versions import Revision
from .._exceptions import RemoteProtocolError, ToolDefinitionError

__all__ = ["Named", "Registry", "described", "page_of"]


class Named(Protocol):
    """What a registry holds: anything with a name."""

    @property
    def name(self) -> str:
        """The name it is registered and called by."""
        ...


T = TypeVar("T", bound=Named)


class Registry(Generic[T]):
    """Primitives of one kind by name, in registration order.

    Args:
        kind: The plural name of what is held ("tools"): the cursor prefix and the wording of
            errors.
        describe: How a duplicate's holder is named in the error (default: its name).
        key: What an item is registered and found by (default: its name).
        key_label: What the key is called in errors ("name", "URI").
    """

    def __init__(
        self,
        kind: str,
        describe: Callable[[T], str] | None = None,
        *,
        key: Callable[[T], str] | None = None,
        key_label: str = "name",
    ) -> None:
        self.kind = kind
        self._describe = describe or (lambda item: repr(item.name))
        self._key: Callable[[T], str] = key or (lambda item: item.name)
        self._key_label = key_label
        self._items: dict[str, T] = {}
        self._disabled: set[str] = set()
        self._order: list[T] | None = None
        #: Bumped by every change: add, remove, enable, disable.
        self.changes = 0
        #: Called after every change (the hub's wake-up), if set.
        self.on_change: Callable[[], None] | None = None

    def add(self, new: T) -> None:
        """Register `new`.

        Raises:
            ToolDefinitionError: when the key is taken, naming both the holder and `new`.
        """
        key = self._key(new)
        existing = self._items.get(key)
        if existing is not None:
            singular = self.kind.removesuffix("s")
            raise ToolDefinitionError(
                f"duplicate {singular} {self._key_label} {key!r}: already registered by "
                f"{self._describe(existing)}; give one a different {self._key_label}"
            )
        self._items[key] = new
        self._changed()

    def remove(self, key: str) -> T:
        """Unregister the item under `key` and return it (KeyError if there is none)."""
        item = self._items.pop(key)
        self._disabled.discard(key)
        self._changed()
        return item

    def set_enabled(self, key: str, enabled: bool) -> bool:
        """Enable or disable the item under `key` (KeyError if there is none).

        Returns:
            Whether that changed anything (enabling an enabled item does not).
        """
        if key not in self._items:
            raise KeyError(key)
        if enabled == (key not in self._disabled):
            return False
        if enabled:
            self._disabled.discard(key)
        else:
            self._disabled.add(key)
        self._changed()
        return True

    def get(self, key: str) -> T | None:
        """The enabled item under `key`, or None."""
        if self._disabled and key in self._disabled:
            return None
        return self._items.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items) - len(self._disabled)

    def __iter__(self) -> Iterator[T]:
        return iter(self._listed())

    def registered(self) -> list[T]:
        """Every registered item, disabled ones too (iterating gives the enabled ones)."""
        return list(self._items.values())

    def _listed(self) -> list[T]:
        if self._order is None:
            disabled = self._disabled
            self._order = [item for key, item in self._items.items() if key not in disabled]
        return self._order

    def page(self, cursor: str | None, page_size: int | None) -> tuple[list[T], str | None]:
        """One page of items and the cursor of the next (None on the last page).

        Raises:
            RemoteProtocolError: -32602 for a cursor this registry did not issue.
        """
        return page_of(self.kind, self._listed(), cursor, page_size)

    def _changed(self) -> None:
        self._order = None
        self.changes += 1
        if self.on_change is not None:
            self.on_change()


def page_of(
    kind: str, items: list[Any], cursor: str | None, page_size: int | None
) -> tuple[list[Any], str | None]:
    """One page of `items` and the cursor of the next; cursors name `kind`.

    Raises:
        RemoteProtocolError: -32602 for a cursor of another kind, one that does not decode, or
            one past the end.
    """
    start = 0
    if cursor is not None:
        start = _decode_cursor(kind, cursor)
        if start > len(items):
            raise RemoteProtocolError(f"Invalid params: stale cursor {cursor!r}", INVALID_PARAMS)
    if page_size is None:
        return items[start:], None
    end = start + page_size
    return items[start:end], (_encode_cursor(kind, end) if end < len(items) else None)


def described(
    wire: dict[str, Any], title: str | None, description: str | None, known: Revision
) -> dict[str, Any]:
    """A listing entry `wire` with the item's `title` (2025-06-18 on) and its `description`."""
    if title and known.structured:
        wire["title"] = title
    if description:
        wire["description"] = description
    return wire


def _encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode("ascii")


def _decode_cursor(kind: str, cursor: Any) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
        prefix, _, number = text.partition(":")
        if prefix == kind and number.isdigit():
            return int(number)
    except (ValueError, AttributeError, UnicodeError):
        pass
    raise RemoteProtocolError(f"Invalid params: unknown cursor {cursor!r}", INVALID_PARAMS)
