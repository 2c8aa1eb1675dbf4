"""How the public namespaces (`trio_mcp`, `trio_mcp.http`, `trio_mcp.tasks`, ...) show their names.

Each public class and function reports the namespace a user imports it from as its
`__module__` (httpx and trio do the same), so that reprs, tracebacks, `help()` and
documentation say `trio_mcp.Server`, not the private module it lives in. A name loaded on first
use gets it when it loads, and so does every other lazy name of its namespace whose module is
loaded by then (a `Client` made by `open_client` reports `trio_mcp.Client` without anyone naming
it). A name that was renamed or moved keeps working for a while: it warns (`DeprecationWarning`)
and gives the new one.

The rewrite has a cost that every library doing it accepts: `typing.get_type_hints` on a
public record resolves its annotations in the public namespace, which does not hold every
name they use.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Mapping
from types import FunctionType
from typing import Any

__all__ = ["lazy_attribute", "publish"]


def publish(namespace: str, scope: Mapping[str, Any], names: Iterable[str]) -> None:
    """Make the classes and functions named `names` in `scope` report `namespace`.

    Args:
        namespace: The public module's name ("trio_mcp", "trio_mcp.http", ...).
        scope: That module's globals.
        names: Its public names present in `scope` (others are skipped).
    """
    for name in names:
        obj = scope.get(name)
        if isinstance(obj, type | FunctionType) and obj.__module__.startswith("trio_mcp."):
            obj.__module__ = namespace


def lazy_attribute(
    namespace: str,
    scope: dict[str, Any],
    lazy: Mapping[str, str],
    deprecated: Mapping[str, tuple[str, str, str]],
    name: str,
) -> Any:
    """The module `__getattr__` of a public namespace: load `name` on first use.

    Args:
        namespace: The public module's name.
        scope: Its globals: loaded names are kept there, so this runs once per name.
        lazy: Each name loaded on first use, and the module it lives in (relative, ".x").
        deprecated: Each old name: the module (relative) and name of what replaced it, and
            the replacement as the warning names it.
        name: The name asked for.

    Returns:
        The object.

    Raises:
        AttributeError: for a name the namespace does not have.
    """
    if name in deprecated:
        module, attr, replacement = deprecated[name]
        warnings.warn(
            f"{namespace}.{name} is deprecated; use {replacement}",
            DeprecationWarning,
            stacklevel=3,
        )
        return getattr(_load(module, attr, scope), attr)
    home = lazy.get(name)
    if home is None:
        raise AttributeError(f"module {namespace!r} has no attribute {name!r}")
    value = getattr(_load(home, name, scope), name)
    scope[name] = value
    # Every lazy name whose module is loaded now reports the public namespace, asked for or not.
    for other, where in lazy.items():
        loaded = sys.modules.get(_absolute(where, scope["__name__"]))
        if loaded is not None:
            scope.setdefault(other, getattr(loaded, other))
    publish(namespace, scope, lazy)
    return value


def _load(module: str, name: str, scope: dict[str, Any]) -> Any:
    # The import statement's own machinery (not importlib.import_module), so that
    # `python -X importtime` shows these modules like any other when people profile start-up.
    level = len(module) - len(module.lstrip("."))
    return __import__(module[level:], scope, None, [name], level)


def _absolute(module: str, package: str) -> str:
    """The absolute name of `module` (".x", "..x") relative to the package `package`."""
    level = len(module) - len(module.lstrip("."))
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{module[level:]}"
