"""From a `Signature` to JSON Schemas, an argument validator and a result serializer (pydantic).

Rule 1: built once, at registration. A call costs one pydantic-core validation of the arguments
        dict and, for structured results, one serialization: nothing is rebuilt per call.
Rule 2: schemas are what clients cope with best: JSON Schema 2020-12, closed objects, no
        pydantic titles, `$ref` inlined (kept under `$defs` only where a type is recursive),
        `X | None = None` parameters shown as plain optional `X`.
Rule 3: validation failures become `ArgumentsInvalid` holding one line per field (path, what was
        expected, what arrived), written for a model to act on: no URLs, no model names.
Rule 4: the plain types most tools use (str, int, float, bool, Literal, lists and str-keyed
        dicts of them, and `X | None`) are compiled straight to pydantic-core, exactly as pydantic
        would compile them, without importing pydantic: loading pydantic and building its
        adapters was a third of a server's start-up. Every other type goes through pydantic.
        tests/test_schema_plain.py checks that both roads give the same schemas and outcomes.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
)

from pydantic_core import (
    PydanticSerializationError,
    SchemaSerializer,
    SchemaValidator,
    ValidationError,
    to_json,
    to_jsonable_python,
)
from pydantic_core import core_schema as cs
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic.plugin._schema_validator import PluggableSchemaValidator

from .._core.param_headers import KEYWORD as HEADER_KEYWORD
from .._core.types import CONTENT_BLOCK_TYPES, CallToolResult
from .._exceptions import ToolDefinitionError
from .signature import ParamSpec, Signature

__all__ = [
    "ArgumentsInvalid",
    "CompiledTool",
    "ResultMode",
    "compile_signature",
    "describe_json",
    "inline_refs",
]

ResultMode = Literal["none", "text", "content", "structured", "wrapped", "auto"]


class ArgumentsInvalid(Exception):  # noqa: N818 - an outcome, not a fault of ours
    """Arguments did not validate; `lines` explain each problem, one per field."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True, slots=True)
class CompiledTool:
    """Schemas and (de)serialisers for one function, made once at registration."""

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    result_mode: ResultMode
    param_names: tuple[str, ...]
    _validator: SchemaValidator | PluggableSchemaValidator | None
    _serializer: SchemaSerializer | None
    #: For a return annotation of exactly int, float, bool or str: a value of exactly that type
    #: is already its own JSON form, and skips the serializer.
    _scalar: type | None = None

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and coerce arguments (lax mode: "3" becomes 3 for an int).

        Returns:
            Keyword arguments for the function; absent optional parameters are left out so the
            function's own defaults apply.

        Raises:
            ArgumentsInvalid: one line per problem.
        """
        if self._validator is None:
            if arguments:
                names = ", ".join(sorted(arguments))
                raise ArgumentsInvalid([f"{names}: unexpected argument (this tool takes none)"])
            return {}
        try:
            # The core validator itself: TypeAdapter.validate_python adds Python-level overhead
            # (a third of the cost for a two-number tool) that buys nothing here.
            return self._validator.validate_python(arguments)  # type: ignore[no-any-return]
        except ValidationError as exc:
            raise ArgumentsInvalid(_explain(exc, self.param_names, arguments)) from None

    def to_result(self, value: Any) -> dict[str, Any]:
        """Turn what the function returned into a `CallToolResult` wire object.

        Raises:
            PydanticSerializationError: when the value does not fit the return annotation.
        """
        mode = self.result_mode
        if mode == "auto":
            mode = _auto_mode(value)
        if mode == "none":
            return {"content": []}
        if mode == "text":
            return {
                "content": [
                    {"type": "text", "text": value if isinstance(value, str) else str(value)}
                ]
            }
        if mode == "content":
            return _content_result(value)
        if type(value) is self._scalar:
            data = value
        elif self._serializer is not None:
            data = self._serializer.to_python(value, mode="json", warnings="error")
        else:
            data = to_jsonable_python(value)
        # A declared non-object result is always wrapped, as its outputSchema says (even when a
        # union member's value happens to be an object). Without a declaration (auto), an
        # object is structured as it is, like an annotated model or dataclass.
        wrap = mode == "wrapped" or not isinstance(data, dict)
        structured = {"result": data} if wrap else data
        text = data if isinstance(data, str) else to_json(data, inf_nan_mode="null").decode()
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


def _auto_mode(value: Any) -> ResultMode:
    if value is None:
        return "none"
    if isinstance(value, str):
        return "text"
    if _is_content(value):
        return "content"
    return "structured"


def _is_content(value: Any) -> bool:
    if isinstance(value, (CallToolResult, *CONTENT_BLOCK_TYPES)):
        return True
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(v, CONTENT_BLOCK_TYPES) for v in value)
    )


def _content_result(value: Any) -> dict[str, Any]:
    if isinstance(value, CallToolResult):
        return value.to_wire()
    if isinstance(value, CONTENT_BLOCK_TYPES):
        return {"content": [value.to_wire()]}
    return {"content": [block.to_wire() for block in value]}


# -- input ----------------------------------------------------------------------------------------


def _optional_inner(annotation: Any) -> Any | None:
    """For `X | None` return X (or `A | B` for `A | B | None`); None if not optional."""
    if get_origin(annotation) is Annotated:
        return None
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) < len(get_args(annotation)):
            return args[0] if len(args) == 1 else Union[tuple(args)]  # noqa: UP007
    return None


def _field_annotation(p: ParamSpec) -> Any:
    extra: dict[str, Any] = {}
    if p.description:
        extra["description"] = p.description
    if p.examples:
        extra["examples"] = list(p.examples)
    from pydantic import Field  # noqa: PLC0415 - pydantic proper loads at registration only

    ann = Annotated[p.annotation, Field(**extra)] if extra else p.annotation
    return Required[ann] if p.required else NotRequired[ann]


def _adapter_for(qualname: str, params: tuple[ParamSpec, ...]) -> TypeAdapter[Any]:
    from pydantic import ConfigDict, PydanticUserError, TypeAdapter  # noqa: PLC0415 - see above

    fields = {p.name: _field_annotation(p) for p in params}
    # A TypedDict rather than a model: validation returns a plain dict of only the keys given,
    # so the function's own defaults apply to what was left out.
    arguments = TypedDict("arguments", fields)  # type: ignore[misc]
    arguments.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
    try:
        return TypeAdapter(arguments)
    except PydanticUserError:
        for p in params:  # find the parameter at fault, to name it
            try:
                TypeAdapter(p.annotation)
            except PydanticUserError as exc:
                raise ToolDefinitionError(
                    f"parameter {p.name!r} of {qualname}: pydantic cannot validate type "
                    f"{p.annotation!r} ({exc}). Use a JSON-compatible type (str, int, float, "
                    "bool, list, dict, a pydantic model, a dataclass or a TypedDict)."
                ) from None
        raise


def _input_schema(schema: dict[str, Any], params: tuple[ParamSpec, ...]) -> dict[str, Any]:
    """The `inputSchema` from the arguments' JSON Schema (titles stripped, refs inlined)."""
    props: dict[str, Any] = schema.get("properties", {})
    for p in params:
        prop = props[p.name]
        if not p.required:
            default = p.default
            inner = _optional_inner(p.annotation)
            if default is None and inner is not None and "anyOf" in prop:
                # `x: T | None = None` is shown as an optional T: clients and models read a
                # plain type far better than anyOf-with-null; null is still accepted.
                branches = [b for b in prop["anyOf"] if b != {"type": "null"}]
                rest = {k: v for k, v in prop.items() if k != "anyOf"}
                prop = {**(branches[0] if len(branches) == 1 else {"anyOf": branches}), **rest}
                props[p.name] = prop
            elif default is not None:
                # A default with no JSON form is simply not shown.
                with contextlib.suppress(PydanticSerializationError):
                    prop["default"] = to_jsonable_python(default)
        if p.header is not None:
            props[p.name] = prop = {**prop, HEADER_KEYWORD: p.header}
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = schema["required"]
    out["additionalProperties"] = False
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    return out


def _pydantic_input(
    qualname: str, params: tuple[ParamSpec, ...]
) -> tuple[SchemaValidator | PluggableSchemaValidator, dict[str, Any]]:
    from pydantic import PydanticUserError  # noqa: PLC0415 - see _field_annotation

    adapter = _adapter_for(qualname, params)
    try:
        schema = inline_refs(_strip_titles(adapter.json_schema(mode="validation")))
    except PydanticUserError as exc:  # validatable, but with no JSON Schema (a Callable...)
        raise ToolDefinitionError(
            f"parameters of {qualname}: pydantic cannot describe them as JSON Schema "
            f"({exc}); use JSON-compatible types"
        ) from None
    return adapter.validator, schema


# -- plain types, straight to pydantic-core (Rule 4) --------------------------------------------

_SCALARS: dict[type, tuple[cs.CoreSchema, str]] = {
    bool: (cs.bool_schema(), "boolean"),
    int: (cs.int_schema(), "integer"),
    float: (cs.float_schema(), "number"),
    str: (cs.str_schema(), "string"),
}
_LITERAL_TYPES = {bool: "boolean", int: "integer", str: "string"}
_JSON_SCALARS = (str, int, float, bool, type(None))


_Plain = tuple[cs.CoreSchema, dict[str, Any]]


def _plain(annotation: Any) -> _Plain | None:
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
    item = _plain(args[0]) if len(args) == 1 else None
    if item is None:
        return None
    return cs.list_schema(item[0]), {"items": item[1], "type": "array"}


def _plain_dict(args: tuple[Any, ...]) -> _Plain | None:
    value = _plain(args[1]) if len(args) == 2 and args[0] is str else None
    if value is None:
        return None
    return cs.dict_schema(cs.str_schema(), value[0]), {
        "additionalProperties": value[1],
        "type": "object",
    }


def _plain_optional(args: tuple[Any, ...]) -> _Plain | None:
    """`X | None` (in either order); other unions are pydantic's."""
    others = [a for a in args if a is not type(None)]
    inner = _plain(others[0]) if len(args) == 2 and len(others) == 1 else None
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


def _plain_input(
    params: tuple[ParamSpec, ...],
) -> tuple[SchemaValidator, dict[str, Any]] | None:
    """Validator and JSON Schema of the arguments when every parameter has a plain type."""
    fields: dict[str, cs.TypedDictField] = {}
    props: dict[str, Any] = {}
    for p in params:
        plain = _plain(p.annotation)
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
    validator = SchemaValidator(cs.typed_dict_schema(fields, extra_behavior="forbid"), config)
    schema: dict[str, Any] = {"additionalProperties": False, "properties": props}
    required = [p.name for p in params if p.required]
    if required:
        schema["required"] = required
    return validator, schema


# -- output ---------------------------------------------------------------------------------------


def _result_mode(annotation: Any) -> ResultMode | None:
    if annotation is inspect.Signature.empty or annotation is Any:
        return "auto"
    if annotation is None or annotation is type(None):
        return "none"
    if annotation is str:
        return "text"
    base = get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation
    candidates = list(get_args(base)) if get_origin(base) in (Union, types.UnionType) else [base]
    origin = get_origin(base)
    if origin in (list, tuple, typing.Sequence) and get_args(base):
        candidates = [a for a in get_args(base) if a is not Ellipsis]
        # list[TextContent | ImageContent]: the item type may itself be a union.
        candidates = [
            m
            for a in candidates
            for m in (get_args(a) if get_origin(a) in (Union, types.UnionType) else (a,))
        ]
    if all(
        isinstance(c, type) and issubclass(c, (CallToolResult, *CONTENT_BLOCK_TYPES))
        for c in candidates
    ):
        return "content"
    return None


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


def compile_signature(qualname: str, sig: Signature, *, plain: bool = True) -> CompiledTool:
    """Build the schemas, validator and serializer for a function.

    Args:
        qualname: The function's name, for error messages.
        sig: What `describe_function` read from it.
        plain: Compile plain types straight to pydantic-core (Rule 4); False sends every type
            through pydantic (the tests compare the two).

    Raises:
        ToolDefinitionError: when a parameter or the return type has no JSON Schema.
    """
    names = tuple(p.name for p in sig.params)
    validator: SchemaValidator | PluggableSchemaValidator | None = None
    input_schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if sig.params:
        compiled = (_plain_input(sig.params) if plain else None) or _pydantic_input(
            qualname, sig.params
        )
        validator = compiled[0]
        input_schema = _input_schema(compiled[1], sig.params)
    ret = sig.return_annotation
    mode = _result_mode(ret)
    if mode is not None:
        return CompiledTool(input_schema, None, mode, names, validator, None)
    direct = _plain(ret) if plain else None
    if direct is not None:
        serializer, schema = SchemaSerializer(direct[0]), direct[1]
    else:
        serializer, schema = _pydantic_output(qualname, ret)
    if _is_object_schema(schema):
        return CompiledTool(input_schema, schema, "structured", names, validator, serializer)
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    scalar = ret if ret in (int, float, bool, str) else None
    return CompiledTool(input_schema, wrapped, "wrapped", names, validator, serializer, scalar)


def _pydantic_output(qualname: str, ret: Any) -> tuple[SchemaSerializer, dict[str, Any]]:
    from pydantic import PydanticUserError, TypeAdapter  # noqa: PLC0415 - see _field_annotation

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(ret)
        schema = inline_refs(_strip_titles(adapter.json_schema(mode="serialization")))
    except PydanticUserError as exc:
        raise ToolDefinitionError(
            f"return type of {qualname}: pydantic cannot serialize {ret!r} ({exc}); "
            "return a JSON-compatible type or leave the return unannotated"
        ) from None
    return adapter.serializer, schema


# -- schema clean-up -------------------------------------------------------------------------------

# Keywords whose value is a map from *names* to schemas: a "title" key there is a property name,
# not the title keyword.
_NAME_MAPS = frozenset(
    {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
)


def _strip_titles(node: Any, in_name_map: bool = False) -> Any:
    if isinstance(node, dict):
        return {
            k: _strip_titles(v, in_name_map=(k in _NAME_MAPS and not in_name_map))
            for k, v in node.items()
            if in_name_map or k != "title"
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
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


# -- validation messages --------------------------------------------------------------------------


def describe_json(value: Any, limit: int = 60) -> str:
    """A short JSON rendering of a received value, with its JSON type."""
    try:
        text = to_json(value, inf_nan_mode="null").decode()
    except PydanticSerializationError:
        text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{text} ({_json_type(value)})"


# Tried in order: bool before int, since bool is a subclass of int.
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    ((list, tuple), "array"),
)


def _json_type(value: Any) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "object")


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(arguments)"


def _data_loc(loc: tuple[int | str, ...], arguments: Any, kind: str) -> tuple[int | str, ...]:
    """Keep the parts of a pydantic `loc` that address the data itself.

    pydantic also puts union members (`int`, a model's class name) and validator names into
    `loc`; walking the arguments tells them apart from real keys and indexes.
    """
    out: list[int | str] = []
    node = arguments
    for i, part in enumerate(loc):
        in_map = isinstance(node, Mapping) and part in node
        in_seq = isinstance(node, list | tuple) and type(part) is int and 0 <= part < len(node)
        if in_map or in_seq:
            node = node[part]
        elif not (i == len(loc) - 1 and kind.startswith("missing")):
            continue  # a union member or validator name, not a key of the data
        out.append(part)
    return tuple(out)


_INSTANCE_OF = re.compile(r" or (?:an )?instance of \w+")


def _explain(exc: ValidationError, names: tuple[str, ...], arguments: Any) -> list[str]:
    lines: list[str] = []
    for err in exc.errors(include_url=False, include_context=True):
        kind = err["type"]
        loc = _data_loc(tuple(err["loc"]), arguments, kind)
        path = _path(loc)
        if kind == "missing":
            what = "argument" if len(loc) == 1 else "field"
            lines.append(f"{path}: missing required {what}")
        elif kind in ("extra_forbidden", "unexpected_keyword_argument"):
            if len(loc) == 1:
                takes = ", ".join(names) if names else "no arguments"
                lines.append(f"{path}: unexpected argument (this tool takes: {takes})")
            else:
                lines.append(f"{path}: unexpected field")
        else:
            msg = err["msg"]
            if msg.startswith("Input should be "):
                msg = "expected " + msg[len("Input should be ") :]
            elif msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            # "a valid dictionary or instance of Point": class names mean nothing to the model.
            msg = _INSTANCE_OF.sub("", msg)
            lines.append(f"{path}: {msg}; got {describe_json(err.get('input'))}")
    return lines
