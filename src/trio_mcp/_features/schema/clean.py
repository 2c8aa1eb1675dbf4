"""Schema clean-up: what pydantic generates, made into what clients cope with best.

Schemas go out without pydantic's `title` keywords (noise to a model; a property *named* "title"
is kept) and with local `$ref`s inlined (many clients do not resolve them): only references
inside a cycle (recursive types) stay, with their definitions under `$defs`.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["inline_refs", "strip_titles"]


# Keywords whose value is a map from *names* to schemas: a "title" key there is a property name,
# not the title keyword.
_NAME_MAPS = frozenset(
    {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
)


def strip_titles(node: Any, in_name_map: bool = False) -> Any:
    """`node` without `title` keywords (a property named "title" is kept)."""
    if isinstance(node, dict):
        return {
            k: strip_titles(v, in_name_map=(k in _NAME_MAPS and not in_name_map))
            for k, v in node.items()
            if in_name_map or k != "title"
        }
    if isinstance(node, list):
        return [strip_titles(v) for v in node]
    return node


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace every local `$ref` by the schema it names.

    References that are part of a cycle (recursive types) stay as `$ref` and their definitions
    are kept under `$defs`; everything else is inlined and `$defs` dropped.
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    if not defs:
        return schema
    kept: set[str] = set()

    def resolve(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref[len("#/$defs/") :]
                if name in stack:
                    kept.add(name)
                    return node
                target = resolve(copy.deepcopy(defs[name]), (*stack, name))
                siblings = {k: resolve(v, stack) for k, v in node.items() if k != "$ref"}
                return {**target, **siblings}
            return {k: resolve(v, stack) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v, stack) for v in node]
        return node

    out: dict[str, Any] = resolve(schema, ())
    if kept:
        # Definitions of recursive types keep their own recursive references only.
        out["$defs"] = {name: resolve(copy.deepcopy(defs[name]), (name,)) for name in sorted(kept)}
    return out
