"""From a `Signature` to the input schema, validator, output schema and result serializer.

`compile_signature` is called once, at registration (`_features/schema` Rule 1), and takes the
plain road where it can (Rule 3 there): pydantic proper is imported only for the types `plain`
does not take. Schemas are JSON Schema 2020-12, inputs closed objects, and `X | None = None`
parameters are shown as a plain optional `X`.
"""

from __future__ import annotations

import contextlib
import inspect
import math
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

from pydantic_core import (
    PydanticSerializationError,
    SchemaSerializer,
    SchemaValidator,
    ValidationError,
    to_json,
    to_jsonable_python,
)
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic.plugin._schema_validator import PluggableSchemaValidator

from ..._core.param_headers import KEYWORD as HEADER_KEYWORD
from ..._core.types import CONTENT_BLOCK_TYPES, ToolResult
from ..signature import ParamSpec, Signature
from .clean import inline_refs, strip_titles
from .errors import ArgumentsInvalid, ResultInvalid, explain, non_finite_path
from .plain import plain_input, plain_type
from .unsupported import parameters_error, return_error

__all__ = ["CompiledTool", "ResultMode", "compile_signature"]


ResultMode = Literal["none", "text", "content", "structured", "wrapped", "auto"]


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
            raise ArgumentsInvalid(explain(exc, self.param_names, arguments)) from None

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
        # JSON has no NaN or infinity; an encoder would write null where a number is required.
        kind = type(data)
        if kind is dict or kind is list or (isinstance(data, float) and not math.isfinite(data)):
            bad = non_finite_path(structured, "structuredContent")
            if bad is not None:
                raise ResultInvalid(f"{bad}, which JSON cannot carry (it would arrive as null)")
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
    if isinstance(value, (ToolResult, *CONTENT_BLOCK_TYPES)):
        return True
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(v, CONTENT_BLOCK_TYPES) for v in value)
    )


def _content_result(value: Any) -> dict[str, Any]:
    if isinstance(value, ToolResult):
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


def _adapter_for(params: tuple[ParamSpec, ...]) -> TypeAdapter[Any]:
    from pydantic import ConfigDict, TypeAdapter  # noqa: PLC0415 - see _field_annotation

    fields = {p.name: _field_annotation(p) for p in params}
    # A TypedDict rather than a model: validation returns a plain dict of only the keys given,
    # so the function's own defaults apply to what was left out.
    arguments = TypedDict("arguments", fields)  # type: ignore[misc]
    # NaN and infinities are refused unless a parameter admits them (`Field(allow_inf_nan=True)`):
    # 1e400 is valid JSON that overflows to infinity, and "NaN" coerces in lax mode, but no JSON
    # result can carry either back.
    arguments.__pydantic_config__ = ConfigDict(  # type: ignore[attr-defined]
        extra="forbid", allow_inf_nan=False
    )
    return TypeAdapter(arguments)


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

    try:
        adapter = _adapter_for(params)
        # Validatable is not enough: a Callable validates, but has no JSON Schema.
        schema = inline_refs(strip_titles(adapter.json_schema(mode="validation")))
    except PydanticUserError as exc:
        raise parameters_error(qualname, params, exc) from None
    return adapter.validator, schema


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
        isinstance(c, type) and issubclass(c, (ToolResult, *CONTENT_BLOCK_TYPES))
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
        plain: Compile plain types straight to pydantic-core (`_features/schema` Rule 3);
            False sends every type through pydantic (the tests compare the two).

    Raises:
        ToolDefinitionError: when a parameter or the return type has no JSON Schema.
    """
    names = tuple(p.name for p in sig.params)
    validator: SchemaValidator | PluggableSchemaValidator | None = None
    input_schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if sig.params:
        compiled = (plain_input(sig.params) if plain else None) or _pydantic_input(
            qualname, sig.params
        )
        validator = compiled[0]
        input_schema = _input_schema(compiled[1], sig.params)
    ret = sig.return_annotation
    mode = _result_mode(ret)
    if mode is not None:
        return CompiledTool(input_schema, None, mode, names, validator, None)
    direct = plain_type(ret) if plain else None
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
        schema = inline_refs(strip_titles(adapter.json_schema(mode="serialization")))
    except PydanticUserError as exc:
        raise return_error(qualname, ret, exc) from None
    return adapter.serializer, schema
