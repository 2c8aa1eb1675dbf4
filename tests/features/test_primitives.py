"""Resources, templates and prompts as records: registration errors and value conversions."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest

from trio_mcp import (
    Context,
    EmbeddedResource,
    ImageContent,
    Param,
    PromptMessage,
    ResourceContents,
    Server,
    ToolDefinitionError,
    prompt,
    resource,
)
from trio_mcp._features.completion import choices_of, completion_result
from trio_mcp._features.prompts import make_prompt, messages_of
from trio_mcp._features.resources import (
    Resource,
    ResourceMeta,
    ResourceTemplate,
    contents_of,
    make_resource,
)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


# -- registration errors -------------------------------------------------------------------------


def unit(faction: str, unit_id: int) -> str:
    return f"{faction}/{unit_id}"


def no_args() -> str:
    return "x"


@pytest.mark.parametrize(
    ("uri", "fn", "message"),
    [
        (
            "x://units/{faction}",
            unit,
            "the template names faction, which unit lacks|unit takes unit_id, which the template",
        ),
        ("x://units/{faction}/{id}", unit, "the template names id, which unit lacks"),
        ("x://units", unit, r"takes faction, unit_id but its URI has no \{variables\}"),
        ("x://units/{a", no_args, "unmatched or nested brace"),
    ],
)
def test_a_template_and_its_signature_must_agree(uri: str, fn: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        Server().add_resource(uri, fn)


def test_registration_errors_name_what_to_fix() -> None:
    server = Server()
    server.add_resource("x://a", "a")
    with pytest.raises(ToolDefinitionError, match="duplicate resource URI 'x://a'"):
        server.add_resource("x://a", "b")
    with pytest.raises(ToolDefinitionError, match="register a function whose parameters"):
        server.add_resource("x://{a}", "static")
    with pytest.raises(ToolDefinitionError, match="needs the value"):
        server.add_resource("x://b")
    with pytest.raises(ToolDefinitionError, match="has no URI"):
        server.add_resource(no_args)
    with pytest.raises(ToolDefinitionError, match="completions given for nope"):
        server.add_resource("x://u/{faction}/{unit_id}", unit, completions={"nope": len})
    with pytest.raises(ToolDefinitionError, match="size describes one resource"):
        server.add_resource("x://s/{faction}/{unit_id}", unit, size=3)
    with pytest.raises(ToolDefinitionError, match="invalid prompt name"):
        server.add_prompt(no_args, name="no spaces please")
    with pytest.raises(ToolDefinitionError, match="inline=True is for sync functions"):

        @server.prompt(inline=True)
        async def slow() -> str:
            return "x"

    assert [r.uri for r in server.resources] == ["x://a"]


def test_reflection_finds_tagged_functions_and_keyword_arguments_override() -> None:
    class Codex:
        @resource("x://codex/{name}", title="Entry")
        def entry(self, name: str, ctx: Context) -> str:
            return name

        @prompt("codex.ask")
        def ask(self, question: Annotated[str, Param("What to ask")]) -> str:
            """Ask the codex."""
            return question

    server = Server()
    (template,) = server.add_resources(Codex())
    assert isinstance(template, ResourceTemplate)
    assert (template.title, template.context_param) == ("Entry", "ctx")
    (asked,) = server.add_prompts(Codex())
    assert asked.arguments == (
        {"name": "question", "description": "What to ask", "required": True},
    )
    with pytest.raises(ToolDefinitionError, match="is an instance method"):
        Server().add_prompts(Codex)
    renamed = make_resource(Codex().entry, ResourceMeta(title="Other"))
    assert renamed.title == "Other"


def test_prompt_arguments_come_from_parameters_and_docstrings() -> None:
    def briefing(attacker: Literal["orks", "necrons"], turns: int = 3) -> str:
        """Brief a battle.

        Args:
            attacker: Who attacks.
            turns: How long.
        """
        return attacker

    made = make_prompt(briefing)
    assert made.description == "Brief a battle."
    assert made.arguments == (
        {"name": "attacker", "description": "Who attacks.", "required": True},
        {"name": "turns", "description": "How long.", "required": False},
    )
    assert made.validate({"attacker": "orks", "turns": "4"}) == {"attacker": "orks", "turns": 4}


# -- conversions ---------------------------------------------------------------------------------

CONTENTS: list[tuple[Any, str | None, list[dict[str, Any]]]] = [
    ("hi", None, [{"uri": "x://r", "mimeType": "text/plain", "text": "hi"}]),
    ("# hi", "text/markdown", [{"uri": "x://r", "mimeType": "text/markdown", "text": "# hi"}]),
    (b"\x00\x01", None, [{"uri": "x://r", "mimeType": "application/octet-stream", "blob": "AAE="}]),
    ({"a": 1}, None, [{"uri": "x://r", "mimeType": "application/json", "text": '{"a":1}'}]),
    (
        Point(1, 2),
        None,
        [{"uri": "x://r", "mimeType": "application/json", "text": '{"x":1,"y":2}'}],
    ),
    (
        Movie(title="Dune", year=2021),
        None,
        [{"uri": "x://r", "mimeType": "application/json", "text": '{"title":"Dune","year":2021}'}],
    ),
    ([1, 2], None, [{"uri": "x://r", "mimeType": "application/json", "text": "[1,2]"}]),
    (
        ResourceContents(text="a", mime_type="text/csv"),
        None,
        [{"uri": "x://r", "mimeType": "text/csv", "text": "a"}],
    ),
    (
        [ResourceContents(text="a", uri="x://r/1"), ResourceContents(blob=b"b", uri="x://r/2")],
        "text/plain",
        [
            {"uri": "x://r/1", "mimeType": "text/plain", "text": "a"},
            {"uri": "x://r/2", "mimeType": "text/plain", "blob": "Yg=="},
        ],
    ),
    (
        EmbeddedResource("x://other", text="o", mime_type="text/plain"),
        None,
        [{"uri": "x://other", "mimeType": "text/plain", "text": "o"}],
    ),
]


@pytest.mark.parametrize(("value", "mime", "expected"), CONTENTS)
def test_contents_of(value: Any, mime: str | None, expected: list[dict[str, Any]]) -> None:
    assert contents_of(value, "x://r", mime) == expected


def test_a_file_is_read_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    made = make_resource(path, ResourceMeta(uri="x://notes"))
    assert isinstance(made, Resource)
    assert made.mime_type == "text/markdown"
    path.write_text("# later")  # written after registration: read at each read
    assert made.fn is not None
    assert made.contents(made.fn()) == [
        {"uri": "x://notes", "mimeType": "text/markdown", "text": "# later"}
    ]


MESSAGES: list[tuple[Any, list[dict[str, Any]]]] = [
    ("hi", [{"role": "user", "content": {"type": "text", "text": "hi"}}]),
    (("assistant", "ok"), [{"role": "assistant", "content": {"type": "text", "text": "ok"}}]),
    (
        [PromptMessage("user", ImageContent(b"\x00", "image/png")), ("assistant", "seen")],
        [
            {"role": "user", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}},
            {"role": "assistant", "content": {"type": "text", "text": "seen"}},
        ],
    ),
    (
        {"role": "user", "content": {"type": "text", "text": "raw"}},
        [{"role": "user", "content": {"type": "text", "text": "raw"}}],
    ),
]


@pytest.mark.parametrize(("value", "expected"), MESSAGES)
def test_messages_of(value: Any, expected: list[dict[str, Any]]) -> None:
    assert messages_of(value) == expected


@pytest.mark.parametrize(
    "value", [42, [None], ("narrator", "x"), {"role": "system", "content": "x"}]
)
def test_what_is_no_message_is_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        messages_of(value)


def test_choices_of_literals_and_enums() -> None:
    assert choices_of(Literal["a", "b"]) == ("a", "b")
    assert choices_of(Color) == ("red", "blue")
    assert choices_of(Color | None) == ("red", "blue")
    assert choices_of(Annotated[Literal[1, 2], "meta"]) == ("1", "2")
    assert choices_of(str) is None
    assert completion_result([Color.RED, 3]) == {
        "completion": {"values": ["red", "3"], "total": 2, "hasMore": False}
    }


def test_prompt_decorators_work_bare_empty_and_with_arguments() -> None:
    server = Server("bare")

    @server.prompt
    def plain() -> str:
        """Say hello."""
        return "hello"

    @server.prompt()
    def empty() -> str:
        return "empty"

    @prompt
    def tagged() -> str:
        return "tagged"

    server.add_prompt(tagged)
    assert plain() == "hello"  # the function itself comes back, not a decorator
    assert tagged() == "tagged"
    assert [p.name for p in server.prompts] == ["plain", "empty", "tagged"]
