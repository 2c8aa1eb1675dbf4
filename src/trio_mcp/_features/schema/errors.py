"""Validation messages written for a model to act on (`_features/schema` Rule 2).

One line per problem: the field's path in the arguments, what was expected, what arrived (a
short JSON rendering with its JSON type). No pydantic URLs, no model or class names: pydantic's
`loc` also names union members and validators, which are dropped by walking the data itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic_core import PydanticSerializationError, ValidationError, to_json

from ..._core.jsonrpc import json_type

__all__ = ["ArgumentsInvalid", "ResultInvalid", "describe_json", "explain", "non_finite_path"]


class ArgumentsInvalid(Exception):  # noqa: N818 - an outcome, not a fault of ours
    """Arguments did not validate; `lines` explain each problem, one per field."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class ResultInvalid(ValueError):  # noqa: N818 - an outcome, not a fault of ours
    """A function's result has no faithful JSON form under its output schema; says where."""


def non_finite_path(data: Any, prefix: str = "result") -> str | None:
    """Where a JSON-able value holds NaN or an infinity (JSON has neither), and which; or None.

    Returns:
        E.g. "result.scores[2] is NaN"; None when every number is finite.

    JSON encoders write such a number as `null`, which a schema requiring a number refuses: a
    structured result carrying one would break its own `outputSchema`.
    """
    stack: list[tuple[str, Any]] = [(prefix, data)]
    while stack:
        path, value = stack.pop()
        if type(value) is float:
            if math.isnan(value):
                return f"{path} is NaN"
            if value in (_INF, -_INF):
                return f"{path} is {'-' if value < 0 else ''}Infinity"
        elif isinstance(value, dict):
            stack.extend((f"{path}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
    return None


_INF = float("inf")


def describe_json(value: Any, limit: int = 60) -> str:
    """A short JSON rendering of a received value, with its JSON type."""
    if type(value) is float and not math.isfinite(value):  # 1e400 in JSON arrives as inf
        return f"{'NaN' if math.isnan(value) else 'a number too large for a float'} (number)"
    try:
        text = to_json(value, inf_nan_mode="null").decode()
    except PydanticSerializationError:
        text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{text} ({json_type(value)})"


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


def explain(exc: ValidationError, names: tuple[str, ...], arguments: Any) -> list[str]:
    """The lines of `ArgumentsInvalid` for a pydantic validation error of `arguments`."""
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
