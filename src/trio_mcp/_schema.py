"""From a `Signature` to JSON Schemas, an argument validator and a result serializer (pydantic).

Rule 1: built once, at registration. A call costs one pydantic-core validation of the arguments
        dict and, for structured results, one serialization: nothing is rebuilt per call.
Rule 2: schemas are what clients cope with best: JSON Schema 2020-12, closed objects, no
        pydantic titles, `$ref` inlined (kept under `$defs` only where a type is recursive),
        `X | None = None` parameters shown as plain optional `X`.
Rule 3: validation failures become `ArgumentsInvalid` holding one line per field (path, what was
        expected, what arrived), written for a model to act on: no URLs, no model names.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import re
import types
import typing
from collections.abc import Mapping
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

from pydantic_core import PydanticSerializationError, ValidationError, to_json, to_jsonable_python
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from pydantic import TypeAdapter

from ._exceptions import ToolDefinitionError
from ._signature import ParamSpec, Signature
from ._types import CONTENT_BLOCK_TYPES, CallToolResult

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
    _adapter: TypeAdapter[Any] | None
    _result_adapter: TypeAdapter[Any] | None
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
        if self._adapter is None:
            if arguments:
                names = ", ".join(sorted(arguments))
                raise ArgumentsInvalid([f"{names}: unexpected argument (this tool takes none)"])
            return {}
        try:
            # The core validator itself: TypeAdapter.validate_python adds Python-level overhead
            # (a third of the cost for a two-number tool) that buys nothing here.
            return self._adapter.validator.validate_python(arguments)  # type: ignore[no-any-return]
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
        elif self._result_adapter is not None:
            data = self._result_adapter.serializer.to_python(value, mode="json", warnings="error")
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


def _input_schema(adapter: TypeAdapter[Any], params: tuple[ParamSpec, ...]) -> dict[str, Any]:
    schema = inline_refs(_strip_titles(adapter.json_schema(mode="validation")))
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
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = schema["required"]
    out["additionalProperties"] = False
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    return out


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


def compile_signature(qualname: str, sig: Signature) -> CompiledTool:
    """Build the schemas, validator and serializer for a function.

    Raises:
        ToolDefinitionError: when a parameter or the return type has no JSON Schema.
    """
    from pydantic import PydanticUserError, TypeAdapter  # noqa: PLC0415 - see _field_annotation

    names = tuple(p.name for p in sig.params)
    if sig.params:
        adapter: TypeAdapter[Any] | None = _adapter_for(qualname, sig.params)
        assert adapter is not None
        try:
            input_schema = _input_schema(adapter, sig.params)
        except PydanticUserError as exc:  # validatable, but with no JSON Schema (a Callable...)
            raise ToolDefinitionError(
                f"parameters of {qualname}: pydantic cannot describe them as JSON Schema "
                f"({exc}); use JSON-compatible types"
            ) from None
    else:
        adapter = None
        input_schema = {"type": "object", "additionalProperties": False}
    ret = sig.return_annotation
    mode = _result_mode(ret)
    if mode is not None:
        return CompiledTool(input_schema, None, mode, names, adapter, None)
    try:
        result_adapter: TypeAdapter[Any] = TypeAdapter(ret)
        schema = inline_refs(_strip_titles(result_adapter.json_schema(mode="serialization")))
    except PydanticUserError as exc:
        raise ToolDefinitionError(
            f"return type of {qualname}: pydantic cannot serialize {ret!r} ({exc}); "
            "return a JSON-compatible type or leave the return unannotated"
        ) from None
    if _is_object_schema(schema):
        return CompiledTool(input_schema, schema, "structured", names, adapter, result_adapter)
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    scalar = ret if ret in (int, float, bool, str) else None
    return CompiledTool(input_schema, wrapped, "wrapped", names, adapter, result_adapter, scalar)


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
