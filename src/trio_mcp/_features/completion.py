"""Completion of prompt arguments and template variables (`completion/complete`).

Which arguments complete, and how: an argument whose annotation is a `Literal` or an `Enum`
completes for free, from its allowed values, answered at once; any other completes only through
a completer declared for it (`Param(complete=fn)` or `completions={"name": fn}` on the
decorator). An argument with nothing to complete with gets an empty list, never an error.
"""

from __future__ import annotations

import enum
import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args, get_origin

from .._exceptions import ToolDefinitionError
from .signature import Param

__all__ = [
    "MAX_VALUES",
    "Completer",
    "choices_of",
    "completers_for",
    "completion_result",
    "declared_completers",
]

#: spec, completion: "Maximum 100 items per response".
MAX_VALUES: Final = 100


@dataclass(frozen=True, slots=True, eq=False)
class Completer:
    """How one argument of one prompt or template completes.

    Fixed choices complete with those that start with what was typed (ignoring case), in
    declaration order; nothing runs for them. A completer is `fn(value)` or `fn(value,
    arguments)`, sync or async, returning an iterable of values; `arguments` holds what the
    client already chose for the others (`context.arguments`). It filters as it likes, and what
    it returns is taken in its order.

    Attributes:
        name: Names the argument and its owner (for logs and thread limiters).
        choices: The fixed values of a `Literal` or `Enum` argument, as strings, or None.
        fn: The declared completer as `fn(value=..., arguments=...)`, or None.
        is_async: Whether `fn` must be awaited (run on the event loop, not in a thread).
    """

    name: str
    choices: tuple[str, ...] | None = None
    fn: Callable[..., Any] | None = None
    is_async: bool = False
    inline: bool = False
    timeout: float | None = None

    def immediate(self, value: str) -> dict[str, Any] | None:
        """The result when nothing must run (fixed choices), else None."""
        if self.fn is not None:
            return None
        typed = value.casefold()
        found = [choice for choice in self.choices or () if choice.casefold().startswith(typed)]
        return completion_result(found)

    @staticmethod
    def call_args(value: str, arguments: Mapping[str, str]) -> dict[str, Any]:
        """The keyword arguments for `fn`, which always takes `value` and `arguments`."""
        return {"value": value, "arguments": dict(arguments)}


def completion_result(values: Iterable[Any]) -> dict[str, Any]:
    """The `CompleteResult` object for `values`.

    At most `MAX_VALUES` go out, with `total` (how many there were) and `hasMore` (whether
    some were left out).
    """
    found = [str(v.value) if isinstance(v, enum.Enum) else str(v) for v in values]
    return {
        "completion": {
            "values": found[:MAX_VALUES],
            "total": len(found),
            "hasMore": len(found) > MAX_VALUES,
        }
    }


def choices_of(annotation: Any) -> tuple[str, ...] | None:
    """The values a `Literal`, `Enum` or `Optional` of either allows, as strings; else None."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return choices_of(get_args(annotation)[0])
    if origin is Literal:
        return tuple(
            str(v.value) if isinstance(v, enum.Enum) else str(v) for v in get_args(annotation)
        )
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(str(member.value) for member in annotation)
    args = get_args(annotation)
    if args and type(None) in args:  # Optional[X] / X | None
        inner = [arg for arg in args if arg is not type(None)]
        if len(inner) == 1:
            return choices_of(inner[0])
    return None


def declared_completers(fn: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    """The completers declared with `Param(complete=...)` on the parameters of `fn`."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # registration reports unresolvable annotations on its own
        return {}
    found: dict[str, Callable[..., Any]] = {}
    for name, hint in hints.items():
        if get_origin(hint) is typing.Annotated:
            for meta in get_args(hint)[1:]:
                if isinstance(meta, Param) and meta.complete is not None:
                    found[name] = meta.complete
    return found


def completers_for(
    owner: str,
    annotations: Mapping[str, Any],
    declared: Mapping[str, Callable[..., Any]],
    *,
    where: str,
) -> dict[str, Completer]:
    """One `Completer` per argument that can complete: fixed choices, or a declared completer.

    Args:
        owner: Names the prompt or template in completer names.
        annotations: Each argument's annotation.
        declared: Completers the user declared, by argument name.
        where: Names the function, for errors.

    Raises:
        ToolDefinitionError: for a completer of an argument that does not exist, or one that
            is not callable.
    """
    unknown = sorted(set(declared) - set(annotations))
    if unknown:
        raise ToolDefinitionError(
            f"{where}: completions given for {', '.join(unknown)}, which "
            f"{'is' if len(unknown) == 1 else 'are'} not among its arguments "
            f"({', '.join(annotations) or 'none'})"
        )
    out: dict[str, Completer] = {}
    for name, annotation in annotations.items():
        fn = declared.get(name)
        if fn is not None:
            if not callable(fn):
                raise ToolDefinitionError(f"{where}: the completer of {name!r} is not callable")
            params = [
                p
                for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            if not params:
                raise ToolDefinitionError(
                    f"{where}: the completer of {name!r} must take the typed value: "
                    "def complete(value: str) or def complete(value: str, arguments: dict)"
                )
            out[name] = Completer(
                name=f"{owner}/{name}",
                fn=_adapt(fn, takes_arguments=len(params) > 1),
                is_async=inspect.iscoroutinefunction(fn),
            )
            continue
        choices = choices_of(annotation)
        if choices is not None:
            out[name] = Completer(name=f"{owner}/{name}", choices=choices)
    return out


def _adapt(fn: Callable[..., Any], *, takes_arguments: bool) -> Callable[..., Any]:
    """`fn` called as `(value=..., arguments=...)`, whatever its own parameters are named."""

    def complete(value: str, arguments: dict[str, str]) -> Any:
        return fn(value, arguments) if takes_arguments else fn(value)

    return complete
