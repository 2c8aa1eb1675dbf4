"""NaN and infinities: refused in arguments unless admitted, never sent in a structured result.

JSON has neither: 1e400 is valid JSON that overflows to infinity, lax coercion turns "NaN" and
"Infinity" into floats, and an encoder writes either as `null`, which breaks an outputSchema
that requires a number. Both roads of the schema package (plain and pydantic) are checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from trio_mcp._features.schema import ArgumentsInvalid, ResultInvalid, compile_signature
from trio_mcp._features.schema.errors import non_finite_path
from trio_mcp._features.signature import describe_function


def scale(x: float, factor: float = 2.0) -> float:
    return x * factor


def total(values: list[float]) -> float:
    return sum(values)


def admitted(x: Annotated[float, Field(allow_inf_nan=True)]) -> str:
    return str(x)


@dataclass
class Point:
    x: float
    y: float


def norm(p: Point) -> float:
    return math.hypot(p.x, p.y)


class Stats(BaseModel):
    mean: float
    spread: list[float]


def stats(values: list[float]) -> Stats:
    return Stats(mean=sum(values), spread=values)


def compile_fn(fn: Callable[..., Any], *, plain: bool) -> Any:
    return compile_signature(fn.__qualname__, describe_function(fn), plain=plain)


NON_FINITE = [math.inf, -math.inf, math.nan, "NaN", "Infinity", "-inf", "nan"]


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "pydantic"])
@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_non_finite_arguments_are_refused(value: Any, plain: bool) -> None:
    with pytest.raises(ArgumentsInvalid) as refused:
        compile_fn(scale, plain=plain).validate({"x": value})
    assert refused.value.lines[0].startswith("x: expected a finite number")
    with pytest.raises(ArgumentsInvalid) as nested:
        compile_fn(total, plain=plain).validate({"values": [1.0, value]})
    assert nested.value.lines[0].startswith("values[1]: expected a finite number")


@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_non_finite_fields_of_a_dataclass_argument_are_refused(value: Any) -> None:
    with pytest.raises(ArgumentsInvalid) as refused:
        compile_fn(norm, plain=False).validate({"p": {"x": value, "y": 1}})
    assert refused.value.lines[0].startswith("p.x: expected a finite number")


def test_an_overflowing_number_is_described_as_such() -> None:
    with pytest.raises(ArgumentsInvalid) as refused:
        compile_fn(scale, plain=True).validate({"x": math.inf})
    assert refused.value.lines == [
        "x: expected a finite number; got a number too large for a float (number)"
    ]


def test_an_annotation_that_admits_non_finite_numbers_gets_them() -> None:
    assert math.isinf(compile_fn(admitted, plain=False).validate({"x": "Infinity"})["x"])


def test_finite_numbers_and_their_lax_strings_still_pass() -> None:
    assert compile_fn(scale, plain=True).validate({"x": "2.5"}) == {"x": 2.5}
    assert compile_fn(scale, plain=False).validate({"x": 1e308}) == {"x": 1e308}


@pytest.mark.parametrize(
    ("fn", "value", "where"),
    [
        (scale, math.inf, "structuredContent.result is Infinity"),
        (scale, -math.inf, "structuredContent.result is -Infinity"),
        (scale, math.nan, "structuredContent.result is NaN"),
        (stats, Stats(mean=1.0, spread=[1.0, math.nan]), "structuredContent.spread[1] is NaN"),
    ],
)
def test_a_result_with_a_non_finite_number_is_refused_naming_where(
    fn: Callable[..., Any], value: Any, where: str
) -> None:
    for plain in (True, False):
        with pytest.raises(ResultInvalid) as refused:
            compile_fn(fn, plain=plain).to_result(value)
        assert str(refused.value).startswith(where)


def test_finite_results_are_untouched() -> None:
    result = compile_fn(stats, plain=True).to_result(Stats(mean=1.5, spread=[1.0, 2.0]))
    assert result["structuredContent"] == {"mean": 1.5, "spread": [1.0, 2.0]}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (1.0, None),
        ("NaN", None),  # text, not a number
        ({"a": [1, {"b": math.inf}]}, "r.a[1].b is Infinity"),
        ([math.nan], "r[0] is NaN"),
        ({"ok": True, "n": None}, None),
    ],
)
def test_non_finite_path(data: Any, expected: str | None) -> None:
    assert non_finite_path(data, "r") == expected
