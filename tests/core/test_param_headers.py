"""`x-mcp-header` (spec 2026-07-28): which annotations are valid, and header text and matching."""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp._core.param_headers import (
    InvalidHeaderAnnotation,
    argument_at,
    header_params,
    header_text,
    matches,
)


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def marked(kind: Any, header: Any = "Region", **extra: Any) -> dict[str, Any]:
    return {"type": kind, "x-mcp-header": header, **extra}


def test_the_spec_example_and_nested_properties() -> None:
    schema = obj(
        region=marked("string", description="The region"),
        query={"type": "string"},
        where=obj(zone=marked("integer", "Zone"), flag=marked("boolean", "Flag")),
    )
    assert header_params(schema) == {
        "mcp-param-region": ("region",),
        "mcp-param-zone": ("where", "zone"),
        "mcp-param-flag": ("where", "flag"),
    }


def test_no_annotation_no_headers() -> None:
    assert header_params(obj(a={"type": "string"})) == {}
    assert header_params({"type": "object"}) == {}


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (obj(a=marked("number")), "not of type integer, string or boolean"),
        (obj(a=marked("array", items={"type": "string"})), "not of type"),
        (obj(a=marked(["string", "integer"])), "not of type"),
        (obj(a=marked(["string", "null"])), "not of type"),  # a list of types: as the SDK reads it
        (obj(a={"enum": ["x", "y"], "x-mcp-header": "A"}), "not of type"),
        (obj(a=marked("string", "")), "non-empty HTTP token"),
        (obj(a=marked("string", "Has Space")), "non-empty HTTP token"),
        (obj(a=marked("string", "Line\r\nBreak")), "non-empty HTTP token"),
        (obj(a=marked("string", "Région")), "non-empty HTTP token"),
        (obj(a=marked("string", 7)), "non-empty HTTP token"),
        (obj(a=marked("string", "Dup"), b=marked("string", "dUP")), "used twice"),
        (obj(a={"type": "array", "items": marked("string")}), "through 'properties' alone"),
        (obj(a={"anyOf": [marked("string"), {"type": "null"}]}), "through 'properties' alone"),
        ({**obj(a={"$ref": "#/$defs/R"}), "$defs": {"R": marked("string")}}, "alone"),
        ({"patternProperties": {"^x": marked("string")}}, "through 'properties' alone"),
        ({"type": "object", "x-mcp-header": "Root"}, "the root"),
        (obj(a={"if": marked("string"), "then": {}}), "through 'properties' alone"),
    ],
)
def test_invalid_annotations_are_refused(schema: dict[str, Any], reason: str) -> None:
    with pytest.raises(InvalidHeaderAnnotation, match=reason):
        header_params(schema)


def test_names_and_data_that_only_look_like_the_keyword_are_ignored() -> None:
    # A property *named* x-mcp-header, the keyword inside values (default, enum, an OpenAPI
    # example) and inside a keyword JSON Schema does not define (a vendor extension); boolean
    # schemas; and "properties" that is not a map, where no property can be.
    schema = obj(
        **{"x-mcp-header": {"type": "string", "default": {"x-mcp-header": "D"}}},
        e={"enum": [{"x-mcp-header": "E"}]},
        x={"type": "string", "x-ui": {"x-mcp-header": "Ui"}, "example": {"x-mcp-header": "X"}},
        t=True,
        f=False,
        n={"type": "object", "properties": [{"type": "string", "x-mcp-header": "L"}]},
    )
    assert header_params(schema) == {}


def test_argument_at_a_path() -> None:
    arguments = {"region": "eu", "where": {"zone": 3, "gone": None}}
    assert argument_at(arguments, ("region",)) == "eu"
    assert argument_at(arguments, ("where", "zone")) == 3
    assert argument_at(arguments, ("where", "gone")) is None
    assert argument_at(arguments, ("where", "missing")) is None
    assert argument_at(arguments, ("region", "deeper")) is None
    assert argument_at("not an object", ("region",)) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("us-west1", "us-west1"),
        ("", ""),
        (42, "42"),
        (-7, "-7"),
        (True, "true"),
        (False, "false"),
        (2**53 - 1, str(2**53 - 1)),
        (2**70, str(2**70)),  # out of the spec's range, but sent: the server judges the argument
        (42.0, "42"),  # JSON Schema counts 42.0 as an integer
        (-0.0, "0"),
        (1.5, None),  # no header form: argument validation refuses it in its own words
        (float("inf"), None),
        (None, None),
        ([1], None),
        ({"a": 1}, None),
    ],
)
def test_header_text(value: Any, text: str | None) -> None:
    assert header_text(value) == text


@pytest.mark.parametrize(
    ("header", "value", "same"),
    [
        ("us-west1", "us-west1", True),
        ("us-west1", "us-west2", False),
        ("42", 42, True),
        ("42.0", 42, True),
        ("4.2e1", 42, True),
        ("42", 42.0, True),
        ("43", 42, False),
        ("4_2", 42, False),
        (" 42", 42, False),
        ("+42", 42, False),
        ("042", 42, False),
        ("0x2a", 42, False),
        ("9007199254740993.0", 2**53, False),  # exact, not through floats
        ("9" * 5000, 42, False),  # longer than int() converts
        ("1e" + "9" * 50, 1, False),  # an exponent too large even for Decimal
        ("42", 42.5, False),
        ("true", True, True),
        ("True", True, False),
        ("1", True, False),
        ("false", False, True),
        ("42", "42", True),
        ("42", None, False),
        ("[1]", [1], False),
    ],
)
def test_matching_a_header_to_the_body(header: str, value: Any, same: bool) -> None:
    assert matches(header, value) is same
