"""Attribute-style markers on functions, and finding the marked ones by reflection.

What `@tool`, `@resource` and `@prompt` share: a marker only attaches a metadata record to the
function under an attribute of its own and returns the function unchanged (`tag`), and
`Server.add_tools(obj)` and its siblings find the marked functions of a module, class or
instance (`discover`).
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from .._exceptions import ToolDefinitionError

__all__ = ["check_scopes", "discover", "marker", "tag"]

# RFC 6749, 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M")


def tag(fn: F, attr: str, meta: Any, decorator: str) -> F:
    """Attach `meta` to `fn` under `attr` and return `fn` unchanged.

    Static and class methods are tagged on the function inside them.

    Raises:
        ToolDefinitionError: when `fn` takes no attributes (a builtin, say).
    """
    target = fn.__func__ if isinstance(fn, staticmethod | classmethod) else fn
    try:
        setattr(target, attr, meta)
    except AttributeError:
        raise ToolDefinitionError(
            f"{decorator} cannot tag {fn!r}: it takes no attributes; wrap it in a function"
        ) from None
    return fn


def check_scopes(scopes: Iterable[str], where: str) -> frozenset[str]:
    """The OAuth scopes a tool, resource or prompt needs, checked (RFC 6749, 3.3).

    Raises:
        ToolDefinitionError: for one string instead of a list, or a name that is no
            scope-token (empty, with a space, a quote or a backslash).
    """
    if isinstance(scopes, str):
        raise ToolDefinitionError(
            f"scopes of {where} must be a list of scope names, not one string: scopes=[{scopes!r}]"
        )
    found = frozenset(scopes)
    for scope in found:
        if not isinstance(scope, str) or not _SCOPE_TOKEN.fullmatch(scope):
            raise ToolDefinitionError(
                f"scope {scope!r} of {where} is not a valid OAuth scope name (visible ASCII, "
                "no space, quote or backslash)"
            )
    return found


def marker(obj: Any, attr: str, kind: type[M]) -> M | None:
    """The metadata of type `kind` attached to `obj` under `attr`, if any."""
    target = obj.__func__ if isinstance(obj, staticmethod | classmethod | types.MethodType) else obj
    meta = getattr(target, attr, None)
    return meta if isinstance(meta, kind) else None


def discover(obj: Any, attr: str, kind: type[Any], adder: str) -> list[Callable[..., Any]]:
    """The functions of a module, class or instance that carry a `kind` marker.

    A module gives its tagged functions, a class its tagged static and class methods (an
    instance method is an error: nothing could bind it), an instance its tagged methods,
    bound; in definition order, base classes first.

    Args:
        obj: Where to look.
        attr: The marker's attribute.
        kind: The marker's record type.
        adder: The `Server` method that was called, for the error message.

    Raises:
        ToolDefinitionError: for a class whose tagged methods need an instance.
    """
    if isinstance(obj, types.ModuleType):
        found: dict[int, Callable[..., Any]] = {}
        for value in vars(obj).values():
            if callable(value) and marker(value, attr, kind) is not None:
                found.setdefault(id(value), value)
        return list(found.values())
    cls = obj if isinstance(obj, type) else type(obj)
    out: list[Callable[..., Any]] = []
    for name, raw in _members(cls):
        if marker(raw, attr, kind) is None:
            continue
        if isinstance(obj, type) and not isinstance(raw, staticmethod | classmethod):
            raise ToolDefinitionError(
                f"{cls.__qualname__}.{name} is an instance method: pass an instance to "
                f"{adder} ({adder}({cls.__qualname__}())), or make it a staticmethod"
            )
        out.append(getattr(obj, name))
    return out


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    names: dict[str, None] = {}
    for klass in reversed(cls.__mro__[:-1]):  # `object` itself is skipped
        names.update(dict.fromkeys(vars(klass)))
    for name in names:
        yield name, inspect.getattr_static(cls, name)
