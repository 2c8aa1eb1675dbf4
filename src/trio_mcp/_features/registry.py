"""A registry of named primitives (tools today; resources, templates and prompts next).

Rule 1: order is registration order, and listing pages through it in that order with opaque
        cursors of the registry's own kind ("tools:20"); a cursor of another kind, or one that
        does not decode, is a -32602 error, never a silent first page.
Rule 2: names are unique within a registry; a second registration under a taken name is a
        `ToolDefinitionError` naming both the holder and the newcomer.
Rule 3: every change (add, remove) bumps `changes`, the counter that tells a runtime that a
        `notifications/<kind>/list_changed` is due.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from .._core.jsonrpc import INVALID_PARAMS
from .._exceptions import RemoteProtocolError, ToolDefinitionError

__all__ = ["Named", "Registry"]


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
    """

    def __init__(self, kind: str, describe: Callable[[T], str] | None = None) -> None:
        self.kind = kind
        self._describe = describe or (lambda item: repr(item.name))
        self._items: dict[str, T] = {}
        self._order: list[T] | None = None
        #: Bumped by every add and remove (Rule 3).
        self.changes = 0

    def add(self, new: T) -> None:
        """Register `new`.

        Raises:
            ToolDefinitionError: when the name is taken.
        """
        existing = self._items.get(new.name)
        if existing is not None:
            singular = self.kind.removesuffix("s")
            raise ToolDefinitionError(
                f"duplicate {singular} name {new.name!r}: already registered by "
                f"{self._describe(existing)}; give one a different name"
            )
        self._items[new.name] = new
        self._changed()

    def remove(self, name: str) -> None:
        """Unregister the item called `name` (KeyError if there is none)."""
        del self._items[name]
        self._changed()

    def get(self, name: str) -> T | None:
        """The item called `name`, or None."""
        return self._items.get(name)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items.values())

    def page(self, cursor: str | None, page_size: int | None) -> tuple[list[T], str | None]:
        """One page of items and the cursor of the next (None on the last page).

        Raises:
            RemoteProtocolError: -32602 for a cursor this registry did not issue.
        """
        if self._order is None:
            self._order = list(self._items.values())
        items = self._order
        start = 0
        if cursor is not None:
            start = self._decode_cursor(cursor)
            if start > len(items):
                raise RemoteProtocolError(
                    f"Invalid params: stale cursor {cursor!r}", INVALID_PARAMS
                )
        if page_size is None:
            return items[start:], None
        end = start + page_size
        return items[start:end], (self._encode_cursor(end) if end < len(items) else None)

    def _changed(self) -> None:
        self._order = None
        self.changes += 1

    def _encode_cursor(self, offset: int) -> str:
        return base64.urlsafe_b64encode(f"{self.kind}:{offset}".encode()).decode("ascii")

    def _decode_cursor(self, cursor: Any) -> int:
        try:
            text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
            prefix, _, number = text.partition(":")
            if prefix == self.kind and number.isdigit():
                return int(number)
        except (ValueError, AttributeError, UnicodeError):
            pass
        raise RemoteProtocolError(f"Invalid params: unknown cursor {cursor!r}", INVALID_PARAMS)
