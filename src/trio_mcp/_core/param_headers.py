"""Tool parameters mirrored into HTTP headers: `x-mcp-header` (spec 2026-07-28), sans-IO.

A tool's `inputSchema` may mark a property with `"x-mcp-header": "Region"`; over Streamable HTTP
a client then sends the argument's value as `Mcp-Param-Region`, and the server checks that the
header matches the body, so that intermediaries can route on the header alone. This module
finds the marked parameters, spells an argument as header text and compares the two; encoding
for the wire (the base64 sentinel) is the HTTP transport's business.

An annotation is valid only where the spec allows it: a non-empty RFC 9110 token, unique
(case-insensitively) in the schema, on a property whose `type` is exactly "integer", "string" or
"boolean" (not a list of types, as the official SDK reads it too), reached from the root through
`properties` keys alone (never through `items`, `anyOf`, `$ref`...). Only schema positions are
searched: the keyword inside a value (`default`, `examples`) or inside a keyword JSON Schema
does not define (a vendor extension) is no annotation. One invalid annotation makes the whole
tool definition invalid: a server refuses to register it, a client leaves it out of
`tools/list`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "HEADER_PREFIX",
    "InvalidHeaderAnnotation",
    "argument_at",
    "header_params",
    "header_text",
    "matches",
]

#: The header a marked parameter travels in is this prefix and the annotation's value.
HEADER_PREFIX: Final = "Mcp-Param-"
#: The annotation keyword.
KEYWORD: Final = "x-mcp-header"

# RFC 9110 section 5.6.2: token = 1*tchar.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE: Final = frozenset({"integer", "string", "boolean"})
# The JSON Schema keywords (2020-12, and drafts before it) whose values hold schemas: a map
# from names to schemas, one schema, or a list of schemas. Nothing else is searched.
_SCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
_SCHEMA_ONE: Final = frozenset(
    {
        "additionalProperties",
        "additionalItems",
        "items",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})


class InvalidHeaderAnnotation(ValueError):  # noqa: N818 - reads as the fact it reports
    """An `x-mcp-header` annotation where the spec allows none (see the module docstring)."""


def header_params(input_schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The parameters a tool mirrors into headers: lower-cased header name -> property path.

    The header name is `Mcp-Param-` and the annotation, lower-cased (header names are
    case-insensitive); the path is the chain of property names from the schema's root.

    Raises:
        InvalidHeaderAnnotation: naming the first annotation that is not valid.
    """
    found: dict[str, tuple[str, ...]] = {}
    for where, node in _annotated(input_schema, ()):
        value = node[KEYWORD]
        path = _property_path(where)
        if path is None:
            raise InvalidHeaderAnnotation(
                f"{KEYWORD} at {'/'.join(where) or 'the root'} is not on a property reached "
                "through 'properties' alone"
            )
        shown = ".".join(path)
        if not isinstance(value, str) or not _TOKEN.fullmatch(value):
            raise InvalidHeaderAnnotation(
                f"{KEYWORD} of {shown} must be a non-empty HTTP token, not {value!r}"
            )
        if _declared_type(node) not in _PRIMITIVE:
            raise InvalidHeaderAnnotation(
                f"{KEYWORD} of {shown} is on a property that is not of type integer, string "
                "or boolean"
            )
        name = (HEADER_PREFIX + value).lower()
        if name in found:
            raise InvalidHeaderAnnotation(
                f"{KEYWORD} {value!r} of {shown} is used twice (header names ignore case)"
            )
        found[name] = path
    return found


def _annotated(node: Any, where: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every schema under `node` that carries the keyword, with its location (keys from root).

    Boolean schemas and anything that is not a schema where a schema belongs are skipped.
    """
    if not isinstance(node, Mapping):
        return
    if KEYWORD in node:
        yield where, node
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            for name, sub in value.items():
                yield from _annotated(sub, (*where, key, str(name)))
        elif key in _SCHEMA_ONE and isinstance(value, Mapping):
            yield from _annotated(value, (*where, key))
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for index, sub in enumerate(value):
                yield from _annotated(sub, (*where, key, str(index)))


def _property_path(where: tuple[str, ...]) -> tuple[str, ...] | None:
    """`properties/a/properties/b` -> ("a", "b"); None for any other location."""
    if not where or len(where) % 2:
        return None
    keywords, names = where[0::2], where[1::2]
    return names if all(k == "properties" for k in keywords) else None


def _declared_type(node: Mapping[str, Any]) -> str | None:
    kind = node.get("type")
    return kind if isinstance(kind, str) else None


_ABSENT: Final = object()


def argument_at(arguments: Any, path: tuple[str, ...]) -> Any:
    """The argument at a property path, or None when it is absent (or null)."""
    node = arguments
    for name in path:
        node = node.get(name, _ABSENT) if isinstance(node, Mapping) else _ABSENT
        if node is _ABSENT:
            return None
    return node


def header_text(value: Any) -> str | None:
    """What a header carries for an argument; None when it has no header form.

    A string as it is, an integer (or a float with no fraction) in decimal, a boolean as
    `true` / `false`. An absent or null argument has no header, and neither has a value of
    another kind (a list, a fraction), which the tool's argument validation refuses in its own
    words.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return None


# A JSON number: what an integer parameter's header may hold (`42`, `-7`, `42.0`, `4.2e1`).
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def matches(header: str, value: Any) -> bool:
    """Whether a received header value (already decoded) matches the body's argument.

    Numbers compare exactly as numbers (`42`, `42.0` and `4.2e1` are the same value, with no
    rounding through floats); anything else compares as its header text.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return header == header_text(value)
    if _NUMBER.fullmatch(header) is None:
        return False
    # Decimal compares exactly with ints and floats and has no digit limit; an exponent too
    # large even for it is no number this argument can be.
    try:
        return Decimal(header) == value
    except ArithmeticError:
        return False
