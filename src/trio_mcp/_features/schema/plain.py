"""Plain types compiled straight to pydantic-core, without pydantic (`_features/schema` Rule 3).

For str, int, float, bool, `Literal` of one of str/int/bool, lists and str-keyed dicts of these,
and `X | None`, build exactly the core schema and the JSON Schema (keys sorted) that pydantic
itself would build, without importing pydantic. Anything else returns None and goes through
pydantic. tests/features/test_schema_plain.py compares the two roads.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

from pydantic_core import SchemaValidator
from pydantic_core import core_schema as cs

from ..signature import ParamSpec

__all__ = ["plain_input", "plain_type"]


_SCALARS: dict[type, tuple[cs.CoreSchema, str]] = {
    bool: (cs.bool_schema(), "boolean"),
    int: (cs.int_schema(), "integer"),
    float: (cs.float_schema(), "number"),
    str: (cs.str_schema(), "string"),
}
_LITERAL_TYPES = {bool: "boolean", int: "integer", str: "string"}
_JSON_SCALARS = (str, int, float, bool, type(None))


_Plain = tuple[cs.CoreSchema, dict[str, Any]]


def plain_type(annotation: Any) -> _Plain | None:
    """The core schema and JSON Schema pydantic would build for a plain type; None otherwise.

    JSON Schema keys are sorted, as pydantic sorts them.
    """
    if type(annotation) is type:
        scalar = _SCALARS.get(annotation)
        return None if scalar is None else (scalar[0], {"type": scalar[1]})
    form = _PLAIN_FORMS.get(get_origin(annotation))
    return None if form is None else form(get_args(annotation))


def _plain_literal(args: tuple[Any, ...]) -> _Plain | None:
    kinds = {type(v) for v in args}
    kind = _LITERAL_TYPES.get(kinds.pop()) if len(kinds) == 1 else None
    if kind is None:
        return None
    values = list(args)
    one: dict[str, Any] = {"const": values[0]} if len(values) == 1 else {"enum": values}
    return cs.literal_schema(values), {**one, "type": kind}


def _plain_list(args: tuple[Any, ...]) -> _Plain | None:
    item = plain_type(args[0]) if len(args) == 1 else None
    if item is None:
        return None
    return cs.list_schema(item[0]), {"items": item[1], "type": "array"}


def _plain_dict(args: tuple[Any, ...]) -> _Plain | None:
    value = plain_type(args[1]) if len(args) == 2 and args[0] is str else None
    if value is None:
        return None
    return cs.dict_schema(cs.str_schema(), value[0]), {
        "additionalProperties": value[1],
        "type": "object",
    }


def _plain_optional(args: tuple[Any, ...]) -> _Plain | None:
    """`X | None` (in either order); other unions are pydantic's."""
    others = [a for a in args if a is not type(None)]
    inner = plain_type(others[0]) if len(args) == 2 and len(others) == 1 else None
    if inner is None:
        return None
    return cs.nullable_schema(inner[0]), {"anyOf": [inner[1], {"type": "null"}]}


_PLAIN_FORMS: dict[Any, Callable[[tuple[Any, ...]], _Plain | None]] = {
    Literal: _plain_literal,
    list: _plain_list,
    dict: _plain_dict,
    Union: _plain_optional,
    types.UnionType: _plain_optional,
}


def plain_input(
    params: tuple[ParamSpec, ...],
) -> tuple[SchemaValidator, dict[str, Any]] | None:
    """Validator and JSON Schema of the arguments when every parameter has a plain type."""
    fields: dict[str, cs.TypedDictField] = {}
    props: dict[str, Any] = {}
    for p in params:
        plain = plain_type(p.annotation)
        if plain is None or not all(type(v) in _JSON_SCALARS for v in p.examples or ()):
            return None
        core, prop = plain
        fields[p.name] = cs.typed_dict_field(core, required=p.required)
        if p.description:
            prop = {**prop, "description": p.description}
        if p.examples:
            prop = {**prop, "examples": list(p.examples)}
        props[p.name] = dict(sorted(prop.items()))
    config = cs.CoreConfig(title="arguments", extra_fields_behavior="forbid")
    # As the pydantic road's config: no NaN or infinities in arguments (compile._adapter_for).
    # It belongs on the schema: a validator's own config does not reach the fields.
    finite = cs.CoreConfig(allow_inf_nan=False)
    validator = SchemaValidator(
        cs.typed_dict_schema(fields, extra_behavior="forbid", config=finite), config
    )
    schema: dict[str, Any] = {"additionalProperties": False, "properties": props}
    required = [p.name for p in params if p.required]
    if required:
        schema["required"] = required
    return validator, schema
