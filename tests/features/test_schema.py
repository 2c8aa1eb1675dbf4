"""Signature -> JSON Schemas, argument validation and result serialization (no event loop)."""

from __future__ import annotations

import enum
import math
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field
from pydantic_core import PydanticSerializationError
from typing_extensions import TypedDict

from demo_tools import server
from trio_mcp import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    Param,
    ResourceLink,
    TextContent,
    ToolDefinitionError,
    ToolResult,
)
from trio_mcp._features.schema import (
    ArgumentsInvalid,
    CompiledTool,
    ResultInvalid,
    compile_signature,
    inline_refs,
)
from trio_mcp._features.signature import describe_function


def compiled(fn: Callable[..., Any]) -> CompiledTool:
    return compile_signature(fn.__qualname__, describe_function(fn))


def walk_keys(node: Any) -> list[tuple[str, ...]]:
    """Every (path..., key) of every dict in a JSON document."""
    out: list[tuple[str, ...]] = []

    def walk(n: Any, path: tuple[str, ...]) -> None:
        if isinstance(n, dict):
            for k, v in n.items():
                out.append((*path, k))
                walk(v, (*path, k))
        elif isinstance(n, list):
            for i, v in enumerate(n):
                walk(v, (*path, str(i)))

    walk(node, ())
    return out


def keyword_used(schema: Any, keyword: str) -> bool:
    """Whether `keyword` appears as a schema keyword (not as a property name)."""
    return any(
        path[-1] == keyword and (len(path) < 2 or path[-2] not in ("properties", "$defs"))
        for path in walk_keys(schema)
    )


# -- golden schemas of the demo tools ---------------------------------------------------------

WRAPPED_NUMBER = {
    "type": "object",
    "properties": {"result": {"type": "number"}},
    "required": ["result"],
}


def _two_numbers(a: str, b: str, first: str = "a", second: str = "b") -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            first: {"description": a, "type": "number"},
            second: {"description": b, "type": "number"},
        },
        "required": [first, second],
        "additionalProperties": False,
    }


def _forces(imperial: str, enemy: str, description: str = "") -> dict[str, Any]:
    """The two sides a wh40k tool takes, with their defaults and `description` after each name."""
    return {
        "imperial_force": {
            "description": "Imperial force" + description,
            "type": "string",
            "default": imperial,
        },
        "enemy_force": {
            "description": "Enemy force" + description,
            "type": "string",
            "default": enemy,
        },
    }


#: Both sides chosen at random when left empty (the battle simulation and the wager).
RANDOM_FORCES = {
    "type": "object",
    "properties": _forces("", "", " (random when empty)"),
    "additionalProperties": False,
}

DEMO_GOLDEN: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "calculator.add": (_two_numbers("First number", "Second number"), WRAPPED_NUMBER),
    "calculator.subtract": (
        _two_numbers("Number to subtract from", "Number to subtract"),
        WRAPPED_NUMBER,
    ),
    "calculator.multiply": (_two_numbers("First number", "Second number"), WRAPPED_NUMBER),
    "calculator.divide": (
        _two_numbers("Dividend (number to be divided)", "Divisor (number to divide by)"),
        WRAPPED_NUMBER,
    ),
    "calculator.power": (
        _two_numbers("Base number", "Exponent", "base", "exponent"),
        WRAPPED_NUMBER,
    ),
    "wh40k.inquisitor_name": (
        {
            "type": "object",
            "properties": {
                "include_title": {
                    "description": "Prefix the name with a rank such as Lord Inquisitor",
                    "type": "boolean",
                    "default": True,
                }
            },
            "additionalProperties": False,
        },
        {
            "description": "A generated Inquisitor.",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "full_title": {"type": "string"},
                "ordo": {"type": "string"},
                "description": {"type": "string"},
            },
            "required": ["name", "full_title", "ordo", "description"],
        },
    ),
    "wh40k.roll_dice": (
        {
            "type": "object",
            "properties": {
                "dice_count": {
                    "description": "Number of dice to roll",
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100,
                },
                "dice_sides": {
                    "description": "Sides on each die",
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 6,
                },
                "flavor": {
                    "description": "What the roll is for: hit, wound or save",
                    "type": "string",
                    "enum": ["hit", "wound", "save"],
                    "default": "hit",
                },
            },
            "required": ["dice_count"],
            "additionalProperties": False,
        },
        {
            "description": "The outcome of a roll.",
            "type": "object",
            "properties": {
                "rolls": {"type": "array", "items": {"type": "integer"}},
                "total": {"type": "integer"},
                "successes": {"type": "integer"},
                "flavor_text": {"type": "string"},
            },
            "required": ["rolls", "total", "successes", "flavor_text"],
        },
    ),
    "wh40k.battle_simulation": (
        RANDOM_FORCES,
        {
            "description": "How a simulated battle went.",
            "type": "object",
            "properties": {
                "imperial_force": {"type": "string"},
                "enemy_force": {"type": "string"},
                "battlefield": {"type": "string"},
                "imperial_victory": {"type": "boolean"},
                "imperial_casualties": {"type": "integer"},
                "enemy_casualties": {"type": "integer"},
                "report": {"type": "string"},
            },
            "required": [
                "imperial_force",
                "enemy_force",
                "battlefield",
                "imperial_victory",
                "imperial_casualties",
                "enemy_casualties",
                "report",
            ],
        },
    ),
    # The two that ask the client return text: no output schema.
    "wh40k.wager": (
        RANDOM_FORCES,
        None,
    ),
    "wh40k.battle_report": (
        {
            "type": "object",
            "properties": _forces("Ultramarines", "Orks of the Goff clan"),
            "additionalProperties": False,
        },
        None,
    ),
    "wh40k.campaign": (
        {
            "type": "object",
            "properties": {
                "battles": {
                    "description": "Battles to fight",
                    "maximum": 100,
                    "minimum": 1,
                    "type": "integer",
                    "default": 5,
                },
                "seed": {
                    "description": "Seeds the campaign: the same seed, the same campaign",
                    "type": "integer",
                    "default": 40000,
                },
                **_forces("Cadian 8th", "Black Legion"),
            },
            "additionalProperties": False,
        },
        {
            "description": "How a campaign went, battle by battle.",
            "properties": {
                "imperial_force": {"type": "string"},
                "enemy_force": {"type": "string"},
                "battles": {"items": {"type": "string"}, "type": "array"},
                "imperial_victories": {"type": "integer"},
                "enemy_victories": {"type": "integer"},
                "verdict": {"type": "string"},
            },
            "required": [
                "imperial_force",
                "enemy_force",
                "battles",
                "imperial_victories",
                "enemy_victories",
                "verdict",
            ],
            "type": "object",
        },
    ),
}


def _demo_tools() -> dict[str, Any]:
    return {t.name: t for t in server.tools}


def test_demo_tool_names_are_exactly_the_golden_set() -> None:
    assert list(_demo_tools()) == list(DEMO_GOLDEN)


@pytest.mark.parametrize("name", list(DEMO_GOLDEN))
def test_demo_tool_golden_schemas(name: str) -> None:
    tool = _demo_tools()[name]
    input_schema, output_schema = DEMO_GOLDEN[name]
    assert tool.input_schema == input_schema
    assert tool.output_schema == output_schema


# -- input schemas --------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    x: int
    y: int = 0


@dataclass
class Item:
    name: str
    qty: int = 1


class Pair(TypedDict):
    key: str
    value: float


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


class Titled(BaseModel):
    title: str


def no_params() -> None: ...
def scalars(i: int, f: float, s: str, b: bool) -> None: ...
def defaults(n: int = 3, s: str = "x", b: bool = False, f: float = 0.5) -> None: ...
def enums(c: Color, lv: Level = Level.LOW, lit: Literal["a", "b"] = "a") -> None: ...
def constrained(
    g: Annotated[int, Field(ge=1, le=5)],
    s: Annotated[str, Field(min_length=2, max_length=4)] = "ab",
) -> None: ...
def optional(x: int | None = None, y: str | None = None, z: int | str | None = None) -> None: ...
def optional_non_none_default(x: int | None = 3) -> None: ...
def containers(
    lst: list[int], d: dict[str, float], nested: list[list[str]] | None = None
) -> None: ...
def nested(p: Point, items: list[Item], pair: Pair) -> None: ...
def recursive(t: Tree) -> None: ...
def title_named(title: str, t: Titled) -> None: ...
def described(
    a: Annotated[int, Param("The a", examples=(1, 2))],
    b: Annotated[int, Field(description="The b")],
) -> None: ...


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        pytest.param(no_params, {"type": "object", "additionalProperties": False}, id="no-params"),
        pytest.param(
            scalars,
            {
                "type": "object",
                "properties": {
                    "i": {"type": "integer"},
                    "f": {"type": "number"},
                    "s": {"type": "string"},
                    "b": {"type": "boolean"},
                },
                "required": ["i", "f", "s", "b"],
                "additionalProperties": False,
            },
            id="scalars",
        ),
        pytest.param(
            defaults,
            {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "default": 3},
                    "s": {"type": "string", "default": "x"},
                    "b": {"type": "boolean", "default": False},
                    "f": {"type": "number", "default": 0.5},
                },
                "additionalProperties": False,
            },
            id="defaults",
        ),
        pytest.param(
            enums,
            {
                "type": "object",
                "properties": {
                    "c": {"type": "string", "enum": ["red", "blue"]},
                    "lv": {"type": "integer", "enum": [1, 2], "default": 1},
                    "lit": {"type": "string", "enum": ["a", "b"], "default": "a"},
                },
                "required": ["c"],
                "additionalProperties": False,
            },
            id="enum-and-literal",
        ),
        pytest.param(
            constrained,
            {
                "type": "object",
                "properties": {
                    "g": {"type": "integer", "minimum": 1, "maximum": 5},
                    "s": {"type": "string", "minLength": 2, "maxLength": 4, "default": "ab"},
                },
                "required": ["g"],
                "additionalProperties": False,
            },
            id="field-constraints",
        ),
        pytest.param(
            optional,
            {
                "type": "object",
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "string"},
                    "z": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                },
                "additionalProperties": False,
            },
            id="optional-none-default-is-plain",
        ),
        pytest.param(
            optional_non_none_default,
            {
                "type": "object",
                "properties": {
                    "x": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 3},
                },
                "additionalProperties": False,
            },
            id="optional-with-value-default-keeps-null",
        ),
        pytest.param(
            containers,
            {
                "type": "object",
                "properties": {
                    "lst": {"type": "array", "items": {"type": "integer"}},
                    "d": {"type": "object", "additionalProperties": {"type": "number"}},
                    "nested": {
                        "type": "array",
                        "items": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "required": ["lst", "d"],
                "additionalProperties": False,
            },
            id="list-and-dict",
        ),
        pytest.param(
            nested,
            {
                "type": "object",
                "properties": {
                    "p": {
                        "type": "object",
                        "properties": {
                            "x": {"type": "integer"},
                            "y": {"type": "integer", "default": 0},
                        },
                        "required": ["x"],
                    },
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "qty": {"type": "integer", "default": 1},
                            },
                            "required": ["name"],
                            "additionalProperties": False,
                        },
                    },
                    "pair": {
                        "type": "object",
                        "properties": {
                            "key": {"type": "string"},
                            "value": {"type": "number"},
                        },
                        "required": ["key", "value"],
                        "additionalProperties": False,
                    },
                },
                "required": ["p", "items", "pair"],
                "additionalProperties": False,
            },
            id="nested-model-dataclass-typeddict",
        ),
        pytest.param(
            title_named,
            {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "t": {
                        "type": "object",
                        "properties": {"title": {"type": "string"}},
                        "required": ["title"],
                    },
                },
                "required": ["title", "t"],
                "additionalProperties": False,
            },
            id="property-named-title",
        ),
        pytest.param(
            described,
            {
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "description": "The a", "examples": [1, 2]},
                    "b": {"type": "integer", "description": "The b"},
                },
                "required": ["a", "b"],
                "additionalProperties": False,
            },
            id="descriptions-and-examples",
        ),
    ],
)
def test_input_schema(fn: Callable[..., Any], expected: dict[str, Any]) -> None:
    schema = compiled(fn).input_schema
    assert schema == expected
    assert not keyword_used(schema, "title")
    assert not keyword_used(schema, "$ref")
    assert "$defs" not in schema


def test_nested_schema_has_no_ref_and_no_title_and_no_model_names() -> None:
    schema = compiled(nested).input_schema
    text = repr(schema)
    assert "$ref" not in text
    assert "$defs" not in text
    assert "title" not in text
    for name in ("Point", "Item", "Pair"):
        assert name not in text


def test_recursive_model_keeps_defs() -> None:
    schema = compiled(recursive).input_schema
    tree = {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}, "default": []},
        },
        "required": ["value"],
    }
    assert schema == {
        "type": "object",
        "properties": {"t": tree},
        "required": ["t"],
        "additionalProperties": False,
        "$defs": {"Tree": tree},
    }
    assert not keyword_used(schema, "title")


def test_recursive_return_type_keeps_defs() -> None:
    def f() -> Tree:
        raise NotImplementedError

    out = compiled(f).output_schema
    assert out is not None
    assert out["type"] == "object"
    assert out["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert set(out["$defs"]) == {"Tree"}


def test_recursive_wrapped_return_moves_defs_to_the_top() -> None:
    def f() -> list[Tree]:
        raise NotImplementedError

    out = compiled(f).output_schema
    assert out is not None
    assert out["properties"]["result"]["type"] == "array"
    assert set(out["$defs"]) == {"Tree"}
    assert "$defs" not in out["properties"]["result"]


def test_inline_refs_keeps_sibling_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "description": "an a"}},
        "$defs": {"A": {"type": "integer"}},
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {"a": {"type": "integer", "description": "an a"}},
    }


def test_inline_refs_without_defs_is_identity() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert inline_refs(schema) == schema


# -- definition errors ----------------------------------------------------------------------------


class Opaque:
    pass


@dataclass
class Job:
    name: str
    handle: Opaque


class Slot(typing.NamedTuple):
    position: int
    handle: Opaque


class Spec(TypedDict):
    handle: Opaque


#: What pydantic's own message says, which means nothing to a tool author.
PYDANTIC_ADVICE = ("arbitrary_types_allowed", "handler(", "__get_pydantic_core_schema__", "http")


def _definition_error(fn: Callable[..., Any]) -> str:
    with pytest.raises(ToolDefinitionError) as info:
        compiled(fn)
    message = str(info.value)
    for noise in PYDANTIC_ADVICE:
        assert noise not in message
    return message


def test_parameter_type_without_json_form_says_what_and_what_instead() -> None:
    def f(ok: int, bad: Opaque) -> None: ...

    message = _definition_error(f)
    where = f"parameter 'bad' of {f.__qualname__}"
    assert message.startswith(f"{where}: type {__name__}.Opaque cannot be a tool argument. ")
    assert f"Arguments arrive as JSON, and {__name__}.Opaque has no JSON form" in message
    for advice in ("a pydantic model, a dataclass or a TypedDict", "str, int", "Context"):
        assert advice in message


def test_return_type_without_json_form_says_what_and_what_instead() -> None:
    def f() -> Opaque:
        raise NotImplementedError

    message = _definition_error(f)
    assert message.startswith(
        f"return type of {f.__qualname__}: type {__name__}.Opaque cannot be a tool result. "
    )
    assert "A result leaves as JSON" in message
    for advice in ("a pydantic model, a dataclass or a TypedDict", "content blocks"):
        assert advice in message


def test_the_innermost_type_without_json_form_is_named() -> None:
    def f(jobs: list[Job]) -> None: ...

    def g() -> dict[str, Job | None]:
        raise NotImplementedError

    def h(slot: Slot) -> None: ...

    def k(spec: Spec) -> None: ...

    for fn, subject, part in (
        (f, "parameter 'jobs'", "field 'handle' of {}.Job"),
        (g, "return type", "field 'handle' of {}.Job"),
        (h, "parameter 'slot'", "field 'handle' of {}.Slot"),
        (k, "parameter 'spec'", "key 'handle' of {}.Spec"),
    ):
        message = _definition_error(fn)
        assert message.startswith(f"{subject} of {fn.__qualname__}: type ")
        assert f"({part.format(__name__)} has type {__name__}.Opaque)" in message


def test_a_type_arguments_part_is_named() -> None:
    def f(handles: list[Opaque] | None = None) -> None: ...

    message = _definition_error(f)
    assert message.startswith(f"parameter 'handles' of {f.__qualname__}: type ")
    assert f"(it holds {__name__}.Opaque)" in message


def test_a_callable_parameter_is_named_too() -> None:
    # Validatable, but with no JSON Schema: the failure comes from the arguments as a whole.
    def f(n: int, callback: Callable[[int], int]) -> None: ...

    message = _definition_error(f)
    assert message.startswith(
        f"parameter 'callback' of {f.__qualname__}: type Callable[[int], int] cannot be a tool "
        "argument."
    )


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="typing.TypedDict is fine on 3.12+")
def test_typing_typeddict_on_311_is_a_definition_error() -> None:
    namespace: dict[str, Any] = {}
    exec(  # a typing.TypedDict, not typing_extensions'
        "class Legacy(typing.TypedDict):\n    a: int\n", {"typing": typing}, namespace
    )

    def f(x: int) -> None: ...

    f.__annotations__["x"] = namespace["Legacy"]
    # pydantic's advice applies here, and is kept; its link is not.
    message = _definition_error(f)
    assert message.startswith(f"parameter 'x' of {f.__qualname__}: pydantic cannot use type ")
    assert "typing_extensions.TypedDict" in message


# -- validation -----------------------------------------------------------------------------------


def validate(fn: Callable[..., Any], arguments: dict[str, Any]) -> dict[str, Any]:
    return compiled(fn).validate(arguments)


def problems(fn: Callable[..., Any], arguments: Any) -> list[str]:
    with pytest.raises(ArgumentsInvalid) as info:
        compiled(fn).validate(arguments)
    assert str(info.value) == "\n".join(info.value.lines)
    return info.value.lines


@pytest.mark.parametrize(
    ("fn", "arguments", "expected"),
    [
        pytest.param(
            scalars,
            {"i": "3", "f": "1.5", "s": "x", "b": "true"},
            {"i": 3, "f": 1.5, "s": "x", "b": True},
            id="lax-coercion",
        ),
        pytest.param(
            scalars,
            {"i": 2.0, "f": 1, "s": "", "b": 0},
            {"i": 2, "f": 1.0, "s": "", "b": False},
            id="lax-numbers",
        ),
        pytest.param(defaults, {}, {}, id="absent-defaults-left-to-the-function"),
        pytest.param(defaults, {"n": "7"}, {"n": 7}, id="only-given-keys"),
        pytest.param(optional, {"x": None}, {"x": None}, id="explicit-null-for-optional"),
        pytest.param(enums, {"c": "blue"}, {"c": Color.BLUE}, id="enum-value"),
        pytest.param(
            enums, {"c": "red", "lv": 2}, {"c": Color.RED, "lv": Level.HIGH}, id="int-enum"
        ),
        pytest.param(
            nested,
            {"p": {"x": "1"}, "items": [{"name": "a"}], "pair": {"key": "k", "value": "2"}},
            {"p": Point(x=1), "items": [Item("a")], "pair": {"key": "k", "value": 2.0}},
            id="nested-built",
        ),
        pytest.param(no_params, {}, {}, id="no-params"),
    ],
)
def test_validate_ok(fn: Callable[..., Any], arguments: dict[str, Any], expected: Any) -> None:
    assert validate(fn, arguments) == expected


@pytest.mark.parametrize(
    ("fn", "arguments", "expected"),
    [
        pytest.param(
            scalars,
            {"f": 1, "s": "", "b": True, "i": "x"},
            ['i: expected a valid integer, unable to parse string as an integer; got "x" (string)'],
            id="bad-int",
        ),
        pytest.param(
            scalars, {"i": 1, "f": 1, "s": ""}, ["b: missing required argument"], id="missing"
        ),
        pytest.param(
            scalars,
            {"i": 1.5, "f": [], "s": 1, "b": "maybe"},
            [
                "i: expected a valid integer, got a number with a fractional part; "
                "got 1.5 (number)",
                "f: expected a valid number; got [] (array)",
                "s: expected a valid string; got 1 (integer)",
                'b: expected a valid boolean, unable to interpret input; got "maybe" (string)',
            ],
            id="one-line-per-field",
        ),
        pytest.param(
            defaults,
            {"nope": 1},
            ["nope: unexpected argument (this tool takes: n, s, b, f)"],
            id="unknown-argument",
        ),
        pytest.param(
            no_params,
            {"a": 1, "b": 2},
            ["a, b: unexpected argument (this tool takes none)"],
            id="unknown-argument-no-params",
        ),
        pytest.param(
            constrained,
            {"g": 9},
            ["g: expected less than or equal to 5; got 9 (integer)"],
            id="ge-le",
        ),
        pytest.param(
            enums,
            {"c": "green"},
            ["c: expected 'red' or 'blue'; got \"green\" (string)"],
            id="enum",
        ),
        pytest.param(
            enums,
            {"c": "red", "lit": "c"},
            ["lit: expected 'a' or 'b'; got \"c\" (string)"],
            id="literal",
        ),
        pytest.param(
            nested,
            {
                "p": {"x": 1},
                "items": [{"name": "a"}, {"qty": "z"}],
                "pair": {"key": "k", "value": 1},
            },
            [
                "items[1].name: missing required field",
                "items[1].qty: expected a valid integer, unable to parse string as an integer; "
                'got "z" (string)',
            ],
            id="nested-path",
        ),
        pytest.param(
            nested,
            {"p": 3, "items": {}, "pair": {"key": "k", "value": 1, "extra": 0}},
            [
                "p: expected a valid dictionary; got 3 (integer)",
                "items: expected a valid list; got {} (object)",
                "pair.extra: unexpected field",
            ],
            id="nested-shapes",
        ),
        pytest.param(
            containers,
            {"lst": [1, "a"], "d": {"k": "z"}},
            [
                "lst[1]: expected a valid integer, unable to parse string as an integer; "
                'got "a" (string)',
                "d.k: expected a valid number, unable to parse string as a number; "
                'got "z" (string)',
            ],
            id="list-and-dict-paths",
        ),
    ],
)
def test_validate_problems(fn: Callable[..., Any], arguments: Any, expected: list[str]) -> None:
    assert problems(fn, arguments) == expected


class A(BaseModel):
    x: int


@dataclass
class B:
    name: str


def union_of_models(u: A | B) -> None: ...
def union_of_scalars(u: int | str) -> None: ...


def test_union_member_names_stay_out_of_paths() -> None:
    lines = problems(union_of_models, {"u": {"x": "a"}})
    assert lines == [
        'u.x: expected a valid integer, unable to parse string as an integer; got "a" (string)',
        "u.name: missing required field",
        "u.x: unexpected field",
    ]
    assert problems(union_of_scalars, {"u": []}) == [
        "u: expected a valid integer; got [] (array)",
        "u: expected a valid string; got [] (array)",
    ]


def test_dataclass_class_name_not_in_message() -> None:
    assert problems(nested, {"p": {"x": 1}, "items": [3], "pair": {"key": "", "value": 0}}) == [
        "items[0]: expected a dictionary; got 3 (integer)"
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        {"p": 1, "items": 2, "pair": 3},
        {"p": {"x": []}, "items": [{"name": 1, "zz": 1}], "pair": {}},
        {"p": {}, "items": [None], "pair": {"key": [], "value": {}}, "more": 1},
    ],
)
def test_messages_have_no_pydantic_noise(arguments: dict[str, Any]) -> None:
    lines = problems(nested, arguments)
    assert lines
    for line in lines:
        assert "\n" not in line
        assert ": " in line
        for banned in (
            "pydantic",
            "https://",
            "http://",
            "Point",
            "Item",
            "Pair",
            "TypedDict",
            "function-",
            "tagged-union",
            "For further information",
            "Traceback",
        ):
            assert banned not in line, (banned, line)


def test_long_received_value_is_shortened() -> None:
    (line,) = problems(scalars, {"i": "x" * 500, "f": 1, "s": "", "b": True})
    assert len(line) < 200
    assert '..." (string)' not in line  # the JSON type follows the cut text
    assert line.endswith("... (string)")


def test_validate_non_dict_arguments() -> None:
    assert problems(scalars, [1]) == ["(arguments): expected a valid dictionary; got [1] (array)"]


# -- results --------------------------------------------------------------------------------------


@dataclass
class Report:
    a: int
    s: str


class Model(BaseModel):
    v: float


def r_str() -> str:

    raise NotImplementedError


def r_none() -> None: ...
def r_float() -> float:
    raise NotImplementedError


def r_int() -> int:
    raise NotImplementedError


def r_list() -> list[int]:
    raise NotImplementedError


def r_dict() -> dict[str, int]:
    raise NotImplementedError


def r_report() -> Report:
    raise NotImplementedError


def r_model() -> Model:
    raise NotImplementedError


def r_optional() -> int | None:
    raise NotImplementedError


def r_text() -> TextContent:
    raise NotImplementedError


def r_blocks() -> list[TextContent | ImageContent]:
    raise NotImplementedError


def r_result() -> ToolResult:
    raise NotImplementedError


def r_auto():  # type: ignore[no-untyped-def]
    ...
def r_any() -> Any:
    raise NotImplementedError


@pytest.mark.parametrize(
    ("fn", "mode", "output_schema"),
    [
        (r_str, "text", None),
        (r_none, "none", None),
        (r_float, "wrapped", WRAPPED_NUMBER),
        (
            r_int,
            "wrapped",
            {
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            },
        ),
        (
            r_list,
            "wrapped",
            {
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
                "required": ["result"],
            },
        ),
        (r_dict, "structured", {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            r_report,
            "structured",
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "s": {"type": "string"}},
                "required": ["a", "s"],
            },
        ),
        (
            r_model,
            "structured",
            {"type": "object", "properties": {"v": {"type": "number"}}, "required": ["v"]},
        ),
        (r_text, "content", None),
        (r_blocks, "content", None),
        (r_result, "content", None),
        (r_auto, "auto", None),
        (r_any, "auto", None),
    ],
)
def test_output_schema_and_mode(
    fn: Callable[..., Any], mode: str, output_schema: dict[str, Any] | None
) -> None:
    tool = compiled(fn)
    assert tool.result_mode == mode
    assert tool.output_schema == output_schema


PNG = b"\x89PNG"


@pytest.mark.parametrize(
    ("fn", "value", "expected"),
    [
        pytest.param(r_str, "hello", {"content": [{"type": "text", "text": "hello"}]}, id="str"),
        pytest.param(r_str, "", {"content": [{"type": "text", "text": ""}]}, id="empty-str"),
        pytest.param(r_none, None, {"content": []}, id="none"),
        pytest.param(
            r_float,
            2.5,
            {"content": [{"type": "text", "text": "2.5"}], "structuredContent": {"result": 2.5}},
            id="float-wrapped-with-text-mirror",
        ),
        pytest.param(
            r_float,
            2,
            {"content": [{"type": "text", "text": "2.0"}], "structuredContent": {"result": 2.0}},
            id="int-for-float",
        ),
        pytest.param(
            r_list,
            [1, 2],
            {
                "content": [{"type": "text", "text": "[1,2]"}],
                "structuredContent": {"result": [1, 2]},
            },
            id="list-wrapped",
        ),
        pytest.param(
            r_report,
            Report(1, "x"),
            {
                "content": [{"type": "text", "text": '{"a":1,"s":"x"}'}],
                "structuredContent": {"a": 1, "s": "x"},
            },
            id="dataclass-structured-with-json-mirror",
        ),
        pytest.param(
            r_model,
            Model(v=0.5),
            {"content": [{"type": "text", "text": '{"v":0.5}'}], "structuredContent": {"v": 0.5}},
            id="model-structured",
        ),
        pytest.param(
            r_optional,
            None,
            {"content": [{"type": "text", "text": "null"}], "structuredContent": {"result": None}},
            id="optional-none-wrapped",
        ),
        pytest.param(
            r_text, TextContent("t"), {"content": [{"type": "text", "text": "t"}]}, id="text-block"
        ),
        pytest.param(
            r_blocks,
            [TextContent("t"), ImageContent(PNG, "image/png")],
            {
                "content": [
                    {"type": "text", "text": "t"},
                    {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
                ]
            },
            id="list-of-blocks",
        ),
        pytest.param(
            r_result,
            ToolResult([TextContent("x")], {"k": 1}, is_error=True, meta={"m": 1}),
            {
                "content": [{"type": "text", "text": "x"}],
                "structuredContent": {"k": 1},
                "isError": True,
                "_meta": {"m": 1},
            },
            id="call-tool-result-passes-through",
        ),
        # unannotated: decided by the value
        pytest.param(r_auto, None, {"content": []}, id="auto-none"),
        pytest.param(r_auto, "s", {"content": [{"type": "text", "text": "s"}]}, id="auto-str"),
        pytest.param(
            r_auto,
            3,
            {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}},
            id="auto-int",
        ),
        pytest.param(
            r_auto,
            {"a": 1},
            {"content": [{"type": "text", "text": '{"a":1}'}], "structuredContent": {"a": 1}},
            id="auto-dict",
        ),
        pytest.param(
            r_any,
            [1],
            {"content": [{"type": "text", "text": "[1]"}], "structuredContent": {"result": [1]}},
            id="any-list",
        ),
        pytest.param(
            r_auto, TextContent("t"), {"content": [{"type": "text", "text": "t"}]}, id="auto-block"
        ),
        pytest.param(
            r_auto,
            [TextContent("a"), TextContent("b")],
            {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            id="auto-blocks",
        ),
        pytest.param(
            r_auto,
            ToolResult([], is_error=True),
            {"content": [], "isError": True},
            id="auto-call-tool-result",
        ),
    ],
)
def test_to_result(fn: Callable[..., Any], value: Any, expected: dict[str, Any]) -> None:
    assert compiled(fn).to_result(value) == expected


def test_a_float_nan_result_is_refused_not_mirrored_as_null() -> None:
    # Was {"result": null} with a "null" text mirror, against an outputSchema requiring a number.
    with pytest.raises(ResultInvalid, match="is NaN"):
        compiled(r_float).to_result(math.nan)


@pytest.mark.parametrize(
    ("fn", "value"),
    [
        (r_int, "abc"),
        (r_int, 2.5),
        (r_report, {"a": 1, "s": "x"}),
        (r_report, 5),
        (r_model, {"v": 1.0}),
        (r_list, "not a list"),
    ],
)
def test_return_value_not_matching_annotation_raises(fn: Callable[..., Any], value: Any) -> None:
    with pytest.raises(PydanticSerializationError):
        compiled(fn).to_result(value)


@pytest.mark.parametrize(
    ("block", "wire"),
    [
        (
            TextContent("t", annotations={"priority": 1}),
            {"type": "text", "text": "t", "annotations": {"priority": 1}},
        ),
        (
            AudioContent("QUJD", "audio/wav"),
            {"type": "audio", "data": "QUJD", "mimeType": "audio/wav"},
        ),
        (
            EmbeddedResource("file:///a", text="hi", mime_type="text/plain"),
            {
                "type": "resource",
                "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "hi"},
            },
        ),
        (
            EmbeddedResource("file:///b", blob=b"ABC"),
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "QUJD"}},
        ),
        (
            ResourceLink("file:///c", "c", size=3),
            {"type": "resource_link", "uri": "file:///c", "name": "c", "size": 3},
        ),
    ],
)
def test_every_content_block_passes_through(block: Any, wire: dict[str, Any]) -> None:
    def f():  # type: ignore[no-untyped-def]
        ...

    assert compiled(f).to_result(block) == {"content": [wire]}


def test_a_declared_union_result_is_wrapped_even_when_the_value_is_an_object() -> None:
    def either(flag: bool) -> dict[str, int] | int:
        return {"x": 1} if flag else 2

    compiled = compile_signature("either", describe_function(either))
    assert compiled.output_schema is not None
    assert compiled.output_schema["required"] == ["result"]
    assert compiled.to_result({"x": 1})["structuredContent"] == {"result": {"x": 1}}
    assert compiled.to_result(2)["structuredContent"] == {"result": 2}
