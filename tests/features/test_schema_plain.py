"""Plain types on the pydantic-free road (`_features/schema` Rule 3) behave as through pydantic.

Every plain form is compiled both ways, and the two must agree to the letter: the same input and
output schemas (key order included, since that is what goes on the wire), the same coerced
arguments (types included: 3 is not 3.0), the same validation messages, the same results.
"""

from __future__ import annotations

import datetime
import enum
import inspect
import json
import typing
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from tests.helpers import python_json
from trio_mcp._features.schema import ArgumentsInvalid, CompiledTool, compile_signature, plain_type
from trio_mcp._features.signature import ParamSpec, Signature


class Color(enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int


class Name(str):
    pass


PLAIN: list[Any] = [
    int,
    float,
    str,
    bool,
    Literal["a"],
    Literal["a", "b"],
    Literal[1, 2],
    Literal[True],
    Literal[False, True],
    list[int],
    list[str],
    typing.List[float],  # noqa: UP006 - the old spelling is a plain list too
    list[list[int]],
    list[bool],
    dict[str, int],
    dict[str, list[str]],
    dict[str, dict[str, bool]],
    int | None,
    None | str,
    typing.Optional[list[int]],  # noqa: UP045 - the old spelling is plain too
    list[int | None],
    dict[str, float | None],
    Literal["x", "y"] | None,
    typing.Union[None, bool],  # noqa: UP007
]

NOT_PLAIN: list[Any] = [
    int | str,
    int | str | None,
    list[int | str],
    Literal[1, "a"],
    Literal[1, True],
    Literal[1.5],
    Literal[Color.RED],
    tuple[int, int],
    dict[int, str],
    list,
    dict,
    Any,
    Annotated[int, Field(ge=1)],
    Color,
    datetime.date,
    Point,
    Name,
    bytes,
    set[int],
    type(None),
]

PROBES: list[Any] = [
    0,
    1,
    -7,
    2**70,
    1.5,
    2.0,
    float("inf"),
    float("nan"),
    "3",
    "2.5",
    "a",
    "b",
    "x",
    "true",
    "",
    True,
    False,
    None,
    [],
    [1, 2],
    ["a", None],
    [[1]],
    {"k": 1},
    {"k": ["v"]},
    {"k": {"j": True}},
    {"k": None},
]

EMPTY = inspect.Parameter.empty


def signature(annotation: Any) -> Signature:
    """Three parameters of one type: required and described, optional with None, with 7."""
    params = (
        ParamSpec("p", annotation, EMPTY, "What p is", ("e", 1)),
        ParamSpec("q", annotation, None, None, None),
        ParamSpec("r", annotation, 7, "r", None),
    )
    return Signature(params, None, EMPTY, False, None, None)


def returning(annotation: Any) -> Signature:
    return Signature((), None, annotation, False, None, None)


def both(sig: Signature) -> tuple[CompiledTool, CompiledTool]:
    return compile_signature("f", sig), compile_signature("f", sig, plain=False)


def wire(schema: Any) -> str:
    return json.dumps(schema)  # key order kept: it is what a client receives


def validated(tool: CompiledTool, arguments: dict[str, Any]) -> str:
    try:
        return repr(tool.validate(arguments))
    except ArgumentsInvalid as exc:
        return f"invalid: {exc.lines}"


def result(tool: CompiledTool, value: Any) -> str:
    try:
        return repr(tool.to_result(value))
    except Exception as exc:
        return f"raised {type(exc).__name__}"


@pytest.mark.parametrize("annotation", PLAIN, ids=repr)
def test_plain_types_have_a_direct_form(annotation: Any) -> None:
    assert plain_type(annotation) is not None


@pytest.mark.parametrize("annotation", NOT_PLAIN, ids=repr)
def test_other_types_are_left_to_pydantic(annotation: Any) -> None:
    assert plain_type(annotation) is None


@pytest.mark.parametrize("annotation", PLAIN, ids=repr)
def test_plain_parameters_compile_as_pydantic_would(annotation: Any) -> None:
    direct, through = both(signature(annotation))
    assert wire(direct.input_schema) == wire(through.input_schema)
    for value in PROBES:
        for arguments in ({"p": value}, {"p": value, "q": value, "r": value}, {"q": value}):
            assert validated(direct, arguments) == validated(through, arguments), arguments
    extra = {"p": PROBES[0], "z": 1}
    assert validated(direct, extra) == validated(through, extra)


@pytest.mark.parametrize("annotation", PLAIN, ids=repr)
def test_plain_results_serialize_as_pydantic_would(annotation: Any) -> None:
    direct, through = both(returning(annotation))
    assert direct.result_mode == through.result_mode
    assert wire(direct.output_schema) == wire(through.output_schema)
    for value in PROBES:
        assert result(direct, value) == result(through, value), value


def test_the_comparison_notices_a_difference() -> None:
    # The probes are only worth something if they tell types apart: int and float schemas differ
    # on the wire and in what they accept.
    as_int, as_float = (compile_signature("f", signature(t)) for t in (int, float))
    assert wire(as_int.input_schema) != wire(as_float.input_schema)
    assert {validated(as_int, {"p": v}) for v in PROBES} != {
        validated(as_float, {"p": v}) for v in PROBES
    }


_REGISTER_PLAIN = """
import json, sys
from typing import Annotated, Literal
from trio_mcp import Param, Server, tool

@tool("calc.add", inline=True)
def add(a: Annotated[float, Param("First")], b: float = 0.0) -> float:
    return a + b

@tool("pick")
async def pick(options: list[str], order: Literal["asc", "desc"] = "asc") -> dict[str, int]:
    return {}

server = Server("plain")
server.add_tool(add)
server.add_tool(pick)
print(json.dumps("pydantic" in sys.modules))
"""


def test_a_server_of_plain_tools_never_loads_pydantic() -> None:
    # Loading pydantic and building its adapters was a third of a server's start-up.
    assert python_json(_REGISTER_PLAIN) is False
