"""Definition errors for parameter and return types that have no JSON form.

pydantic's own message is written for people configuring pydantic (`arbitrary_types_allowed`,
`__get_pydantic_core_schema__`, "if you got this error by calling handler(...)"), none of which
helps a tool author: arguments arrive as JSON and results leave as JSON, so a type without a
JSON form cannot be either. The error made here says instead which function and parameter,
which type, why it cannot cross the wire, and what to write instead.

The type at fault is found by trying the parts of the annotation (type arguments, the fields of
a dataclass, TypedDict or NamedTuple) one by one, the innermost failing one named: `list[Job]`
whose `Job.lock` is a `Lock` names the lock. This runs only once a registration has failed, so
its cost never reaches a server that starts cleanly.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Annotated, Any, Final, Literal, get_args, get_origin, get_type_hints

from typing_extensions import is_typeddict

from ..._exceptions import ToolDefinitionError
from ..signature import ParamSpec

__all__ = ["parameters_error", "return_error", "type_name"]

# pydantic's codes for "no schema for this type" and "no JSON Schema for this schema": the
# type has no JSON form. Other codes (a typing.TypedDict on Python 3.11, ...) are advice that
# does apply, and keep pydantic's own words.
_NO_JSON_FORM: Final = frozenset({"schema-for-unknown-type", "invalid-for-json-schema"})
# Deep enough for any real nesting; a recursive type that fails would otherwise be walked on.
_MAX_DEPTH: Final = 8
_NOISE_MODULES: Final = re.compile(r"\b(?:__main__|builtins|typing|collections\.abc)\.")

_Mode = Literal["validation", "serialization"]

_ARGUMENT_ADVICE: Final = (
    "Use a type that has one: a pydantic model, a dataclass or a TypedDict (whose fields have "
    "one too), or a plain type (str, int, float, bool, list, dict, Literal, an Enum). If the "
    "value is something the server holds rather than something the model sends (a connection, "
    "a client, a lock), it is not an argument: reach it from the function's module, or "
    "register the methods of an instance that holds it (server.add_tools(instance)). The only "
    "parameter the server fills in itself is one annotated Context."
)
_RESULT_ADVICE: Final = (
    "Return a type that has one: a pydantic model, a dataclass or a TypedDict (whose fields "
    "have one too), a plain type (str, int, float, bool, list, dict), or content blocks "
    "(TextContent, ImageContent, ...); or convert the value yourself and annotate what you "
    "return."
)


def type_name(annotation: Any) -> str:
    """How a type is named in a message: qualified, without builtins/typing noise."""
    if get_origin(annotation) is None and hasattr(annotation, "__qualname__"):
        module = getattr(annotation, "__module__", None)
        text = f"{module}.{annotation.__qualname__}" if module else annotation.__qualname__
    else:
        text = repr(annotation)
    return _NOISE_MODULES.sub("", text)


def _failure(annotation: Any, mode: _Mode) -> Exception | None:
    """Why pydantic cannot describe `annotation` on its own, or None when it can."""
    from pydantic import TypeAdapter  # noqa: PLC0415 - loaded already by the failed attempt

    try:
        TypeAdapter(annotation).json_schema(mode=mode)
    except Exception as exc:  # any failure marks the part; the caller reports it
        return exc
    return None


def _parts(annotation: Any) -> Iterator[tuple[str | None, Any]]:
    """What `annotation` is made of, each with where it sits (None for a type argument)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        yield None, get_args(annotation)[0]
    elif origin is Literal:
        return  # its arguments are values, not types
    elif origin is not None:
        for arg in get_args(annotation):
            # Callable[[A, B], R] holds its parameter types in a list.
            yield from ((None, a) for a in (arg if isinstance(arg, list) else [arg]))
    elif isinstance(annotation, type):
        if dataclasses.is_dataclass(annotation):
            names = [f.name for f in dataclasses.fields(annotation)]
            kind = "field"
        elif is_typeddict(annotation):
            names, kind = list(getattr(annotation, "__annotations__", {})), "key"
        elif issubclass(annotation, tuple) and hasattr(annotation, "_fields"):
            names, kind = list(annotation._fields), "field"
        else:
            return
        try:
            hints = get_type_hints(annotation, include_extras=True)
        except Exception:  # unresolvable hints: name the type itself
            return
        for name in names:
            if name in hints:
                yield f"{kind} {name!r} of {type_name(annotation)}", hints[name]


def _culprit(annotation: Any, mode: _Mode, depth: int = 0) -> tuple[str | None, Any]:
    """The innermost part of `annotation` pydantic cannot describe, and where it sits."""
    if depth < _MAX_DEPTH:
        for where, part in _parts(annotation):
            if part is not Ellipsis and _failure(part, mode) is not None:
                inner_where, found = _culprit(part, mode, depth + 1)
                return inner_where or where, found
    return None, annotation


def _pydantic_words(exc: Exception) -> str:
    """What pydantic said, without its documentation link."""
    text = str(exc).split("\n\nFor further information visit", 1)[0]
    return " ".join(text.split()).rstrip(".")


def _explain(subject: str, annotation: Any, exc: Exception, mode: _Mode) -> ToolDefinitionError:
    role, crossing, advice = (
        ("tool argument", "Arguments arrive as JSON", _ARGUMENT_ADVICE)
        if mode == "validation"
        else ("tool result", "A result leaves as JSON", _RESULT_ADVICE)
    )
    shown = type_name(annotation)
    if getattr(exc, "code", None) not in _NO_JSON_FORM:
        return ToolDefinitionError(
            f"{subject}: pydantic cannot use type {shown} as a {role}: {_pydantic_words(exc)}. "
            f"{advice}"
        )
    where, culprit = _culprit(annotation, mode)
    name = type_name(culprit)
    inside = ""
    if culprit is not annotation:
        inside = f" ({where} has type {name})" if where else f" (it holds {name})"
    return ToolDefinitionError(
        f"{subject}: type {shown} cannot be a {role}{inside}. {crossing}, and {name} has no "
        f"JSON form: pydantic can neither {'build' if mode == 'validation' else 'serialize'} "
        f"it {'from' if mode == 'validation' else 'to'} JSON nor describe it in a JSON Schema. "
        f"{advice}"
    )


def parameters_error(
    qualname: str, params: tuple[ParamSpec, ...], exc: Exception
) -> ToolDefinitionError:
    """The error for a function whose parameters pydantic could not describe.

    Args:
        qualname: The function, for the message.
        params: Its parameters; the first one pydantic cannot describe on its own is named.
        exc: What pydantic raised for the parameters as a whole.
    """
    for p in params:
        failure = _failure(p.annotation, "validation")
        if failure is not None:
            return _explain(
                f"parameter {p.name!r} of {qualname}", p.annotation, failure, "validation"
            )
    # Each parameter is fine alone: say what pydantic said of them together.
    return ToolDefinitionError(
        f"parameters of {qualname}: pydantic cannot describe them together: "
        f"{_pydantic_words(exc)}. {_ARGUMENT_ADVICE}"
    )


def return_error(qualname: str, annotation: Any, exc: Exception) -> ToolDefinitionError:
    """The error for a return annotation pydantic could not describe."""
    return _explain(f"return type of {qualname}", annotation, exc, "serialization")
