"""@tool metadata, discovery, Tool records, raw tools and the registry (no event loop)."""

from __future__ import annotations

import base64
import inspect
import types
from collections.abc import Callable
from typing import Annotated, Any

import pytest

from trio_mcp import (
    Context,
    Param,
    RemoteProtocolError,
    Server,
    ToolAnnotations,
    ToolDefinitionError,
    tool,
)
from trio_mcp._features.schema import ArgumentsInvalid
from trio_mcp._features.tools import (
    TOOL_NAME_PATTERN,
    Tool,
    ToolMeta,
    ToolOptions,
    ToolRegistry,
    discover_tools,
    make_raw_tool,
    make_tool,
    tool_meta,
)

# -- @tool ------------------------------------------------------------------------------------


def test_tool_returns_the_same_function_unchanged() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    sig_before = inspect.signature(add)
    tagged = tool("math.add", "Add")(add)
    assert tagged is add
    assert add(2, 3) == 5
    assert inspect.signature(add) == sig_before
    assert add.__name__ == "add"
    assert tool_meta(add) == ToolMeta("math.add", "Add")


def test_bare_decorator() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert ping() == "pong"
    assert tool_meta(ping) == ToolMeta()


def test_decorator_keeps_async_function_a_coroutine_function() -> None:
    @tool(inline=False, timeout=2.0)
    async def slow() -> None: ...

    assert inspect.iscoroutinefunction(slow)
    assert tool_meta(slow) == ToolMeta(timeout=2.0)


def test_tool_meta_fields() -> None:
    hints = ToolAnnotations(read_only_hint=True)

    @tool("n", "d", title="T", annotations=hints, inline=True, timeout=1.5)
    def f() -> None: ...

    assert tool_meta(f) == ToolMeta("n", "d", "T", hints, True, 1.5)


@pytest.mark.parametrize("timeout", [0, -1, -0.5])
def test_non_positive_timeout_is_a_definition_error(timeout: float) -> None:
    with pytest.raises(ToolDefinitionError, match="timeout"):
        tool(timeout=timeout)


def test_untagged_has_no_meta() -> None:
    def f() -> None: ...

    assert tool_meta(f) is None
    assert tool_meta(42) is None


# -- make_tool defaults and overrides -------------------------------------------------------


def documented(x: Annotated[int, Param("An x")]) -> int:
    """Double a number.

    Works for any integer.
    """
    return 2 * x


def test_defaults_name_and_description() -> None:
    t = make_tool(documented)
    assert t.name == "documented"
    # The whole docstring: what follows the summary is often guidance written for the model.
    assert t.description == "Double a number.\n\nWorks for any integer."
    assert t.fn is documented
    assert t.title is None
    assert t.annotations is None
    assert t.inline is False
    assert t.timeout is None
    assert t.is_async is False
    assert t.context_param is None
    assert t.input_schema["properties"]["x"] == {"type": "integer", "description": "An x"}


def test_description_is_the_docstring_without_the_signature_sections() -> None:
    def search(
        query: str,
        limit: Annotated[int, Param("At most this many")] = 10,
    ) -> list[str]:
        """Search the catalogue by title or author.

        Prefer this tool over browsing: it sees every
        edition, including out-of-print ones.

        Use it when:
        - the user names a book or an author;
        - the user quotes a line from a book.

        Args:
            query: Words to look for; quote a phrase
                to match it exactly.
            limit: Ignored here (Param wins).

        Returns:
            Titles, best match first.

        Raises:
            ValueError: never.

        Note:
            Results are cached for an hour.
        """
        return []

    t = make_tool(search)
    assert t.description == (
        "Search the catalogue by title or author.\n\n"
        "Prefer this tool over browsing: it sees every edition, including out-of-print ones.\n\n"
        "Use it when:\n- the user names a book or an author;\n- the user quotes a line from a book."
        "\n\nNote:\n    Results are cached for an hour."
    )
    props = t.input_schema["properties"]
    assert props["query"]["description"] == (
        "Words to look for; quote a phrase to match it exactly."
    )
    assert props["limit"]["description"] == "At most this many"


def test_no_docstring_no_description() -> None:
    def bare(x: int) -> None: ...

    assert make_tool(bare).description is None


def test_meta_overrides_defaults_and_arguments_override_meta() -> None:
    @tool("meta.name", "meta description", title="Meta", inline=True, timeout=3)
    def f() -> None:
        """Docstring."""

    t = make_tool(f)
    assert (t.name, t.description, t.title, t.inline, t.timeout) == (
        "meta.name",
        "meta description",
        "Meta",
        True,
        3,
    )
    t = make_tool(
        f,
        ToolOptions(
            name="arg.name", description="arg description", title="Arg", inline=False, timeout=9
        ),
    )
    assert (t.name, t.description, t.title, t.inline, t.timeout) == (
        "arg.name",
        "arg description",
        "Arg",
        False,
        9,
    )


def test_async_tool_cannot_be_inline() -> None:
    @tool(inline=True)
    async def f() -> None: ...

    with pytest.raises(ToolDefinitionError, match="async"):
        make_tool(f)


def test_not_callable() -> None:
    with pytest.raises(ToolDefinitionError, match="not callable"):
        make_tool(42)  # type: ignore[arg-type]


def test_context_param_recorded() -> None:
    async def f(ctx: Context, n: int) -> None: ...

    t = make_tool(f)
    assert t.context_param == "ctx"
    assert t.is_async is True
    assert list(t.input_schema["properties"]) == ["n"]


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["a", "calculator.add", "A-b_c.9", "x" * 128, "0", "-", "."],
)
def test_good_names(name: str) -> None:
    def f() -> None: ...

    assert make_tool(f, ToolOptions(name=name)).name == name
    assert make_raw_tool(name, {"type": "object"}, lambda a: None).name == name


@pytest.mark.parametrize(
    "name",
    [
        "x" * 129,
        "has space",
        "slash/name",
        "ünïcode",
        "tab\t",
        "new\nline",
        "colon:x",
        "a,b",
        "trailing\n",
    ],
)
def test_bad_names(name: str) -> None:
    def f() -> None: ...

    assert not TOOL_NAME_PATTERN.fullmatch(name)
    with pytest.raises(ToolDefinitionError, match="invalid tool name") as info:
        make_tool(f, ToolOptions(name=name))
    assert "test_bad_names.<locals>.f" in str(info.value)
    with pytest.raises(ToolDefinitionError, match="invalid tool name"):
        make_raw_tool(name, {"type": "object"}, lambda a: None)


def test_bad_name_from_meta() -> None:
    @tool("bad name")
    def f() -> None: ...

    with pytest.raises(ToolDefinitionError, match="invalid tool name 'bad name'"):
        make_tool(f)


# -- discovery ----------------------------------------------------------------------------------


def _module(source: str) -> types.ModuleType:
    module = types.ModuleType("fake_tools")
    exec(source, module.__dict__)
    return module


MODULE_SOURCE = """
from trio_mcp import tool

@tool("z.first")
def zeta() -> None: ...

def untagged() -> None: ...

@tool
def alpha() -> None: ...

@tool("m.middle")
def middle() -> None: ...

alias = middle  # the same function twice: found once

class NotATool:
    pass
"""


def test_discover_module_in_definition_order() -> None:
    module = _module(MODULE_SOURCE)
    found = discover_tools(module)
    assert [fn.__name__ for fn in found] == ["zeta", "alpha", "middle"]
    assert found[0] is module.zeta


class Toolbox:
    """Tagged static, class and instance methods, plus untagged ones."""

    factor = 10

    @tool("box.static")
    @staticmethod
    def static(x: int) -> int:
        return x + 1

    @staticmethod
    @tool("box.static_inner")
    def static_inner(x: int) -> int:
        return x + 2

    @tool("box.cls")
    @classmethod
    def cls_method(cls, x: int) -> int:
        return x * cls.factor

    def untagged(self) -> None: ...

    @tool("box.instance")
    def instance_method(self, x: int) -> int:
        return x - self.factor


class StaticBox:
    @classmethod
    @tool("s.cls")
    def first(cls, x: int) -> int:
        return x * 2

    @tool("s.static")
    @staticmethod
    def second(x: int) -> int:
        return x


def test_discover_class_static_and_class_methods() -> None:
    found = discover_tools(StaticBox)
    assert [fn.__name__ for fn in found] == ["first", "second"]
    assert found[0](3) == 6  # the class method comes bound to the class
    assert found[1](3) == 3
    tools = [make_tool(fn) for fn in found]
    assert [t.name for t in tools] == ["s.cls", "s.static"]
    assert all(list(t.input_schema["properties"]) == ["x"] for t in tools)


def test_discover_class_with_instance_method_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        discover_tools(Toolbox)
    message = str(info.value)
    assert "Toolbox.instance_method" in message
    assert "instance" in message
    assert "Toolbox()" in message  # says how to fix it


def test_discover_instance_binds_methods_in_definition_order() -> None:
    box = Toolbox()
    box.factor = 100
    found = discover_tools(box)
    assert [fn.__name__ for fn in found] == [
        "static",
        "static_inner",
        "cls_method",
        "instance_method",
    ]
    by_name = {make_tool(fn).name: fn for fn in found}
    assert by_name["box.instance"](1) == -99  # bound to *this* instance
    assert by_name["box.cls"](1) == 10  # class methods stay bound to the class
    assert by_name["box.static"](1) == 2
    for fn in found:
        assert "self" not in make_tool(fn).input_schema.get("properties", {})
        assert "cls" not in make_tool(fn).input_schema.get("properties", {})


class Derived(Toolbox):
    @tool("box.instance")
    def instance_method(self, x: int) -> int:  # overrides: found once, the override
        return x

    @tool("derived.extra")
    def extra(self) -> None: ...


def test_discover_inherited_base_first_each_name_once() -> None:
    found = discover_tools(Derived())
    assert [fn.__name__ for fn in found] == [
        "static",
        "static_inner",
        "cls_method",
        "instance_method",
        "extra",
    ]
    assert found[3](5) == 5


def test_discover_nothing() -> None:
    assert discover_tools(_module("x = 1")) == []
    assert discover_tools(object()) == []


# -- Tool.definition --------------------------------------------------------------------------


def _full_tool() -> Tool:
    @tool(
        "t.full",
        "Does things",
        title="Full Tool",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    def f(x: int) -> float:
        return x

    return make_tool(f)


@pytest.mark.parametrize(
    ("version", "keys"),
    [
        ("2024-11-05", ["name", "description", "inputSchema"]),
        ("2025-03-26", ["name", "description", "inputSchema", "annotations"]),
        (
            "2025-06-18",
            ["name", "title", "description", "inputSchema", "outputSchema", "annotations"],
        ),
        (
            "2025-11-25",
            ["name", "title", "description", "inputSchema", "outputSchema", "annotations"],
        ),
        (
            "2026-07-28",
            ["name", "title", "description", "inputSchema", "outputSchema", "annotations"],
        ),
    ],
)
def test_definition_by_version(version: str, keys: list[str]) -> None:
    t = _full_tool()
    wire = t.definition(version)
    assert list(wire) == keys
    assert wire["name"] == "t.full"
    assert wire["description"] == "Does things"
    assert wire["inputSchema"] == t.input_schema
    if "title" in wire:
        assert wire["title"] == "Full Tool"
    if "outputSchema" in wire:
        assert wire["outputSchema"] == t.output_schema
    if "annotations" in wire:
        assert wire["annotations"] == {"readOnlyHint": True, "openWorldHint": False}


def test_definition_minimal_tool() -> None:
    def f() -> None: ...

    assert make_tool(f).definition("2025-11-25") == {
        "name": "f",
        "inputSchema": {"type": "object", "additionalProperties": False},
    }


def test_definition_empty_annotations_left_out() -> None:
    def f() -> None: ...

    t = make_tool(f, ToolOptions(annotations=ToolAnnotations()))
    assert "annotations" not in t.definition("2025-11-25")


def test_definition_is_cached_per_version() -> None:
    t = _full_tool()
    assert t.definition("2025-11-25") is t.definition("2025-11-25")
    assert t.definition("2024-11-05") is not t.definition("2025-11-25")


# -- raw tools ------------------------------------------------------------------------------------

RAW_SCHEMA = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "a": {"type": "array"},
        "o": {"type": "object"},
        "free": {},
    },
    "required": ["s"],
    "additionalProperties": False,
}


def _raw(schema: dict[str, Any] | None = None) -> Tool:
    return make_raw_tool(
        "raw",
        schema or RAW_SCHEMA,
        lambda arguments: arguments,
        ToolOptions(description="hand-written"),
    )


def test_raw_tool_record() -> None:
    async def handler(arguments: dict[str, Any]) -> str:
        return "x"

    t = make_raw_tool(
        "raw.async",
        RAW_SCHEMA,
        handler,
        ToolOptions(title="Raw", timeout=1),
        output_schema={"type": "object"},
    )
    assert t.compiled is None
    assert t.is_async is True
    assert t.input_schema is RAW_SCHEMA
    assert t.output_schema == {"type": "object"}
    assert t.definition("2025-11-25") == {
        "name": "raw.async",
        "title": "Raw",
        "inputSchema": RAW_SCHEMA,
        "outputSchema": {"type": "object"},
    }


@pytest.mark.parametrize(
    "arguments",
    [
        {"s": "x"},
        {"s": "x", "i": 1, "n": 1.5, "b": False, "a": [], "o": {}, "free": None},
        {"s": "x", "n": 2},  # an integer is a number
    ],
)
def test_raw_tool_accepts(arguments: dict[str, Any]) -> None:
    assert _raw().validate(arguments) is arguments


@pytest.mark.parametrize(
    ("arguments", "lines"),
    [
        ({}, ["s: missing required argument"]),
        (
            {"s": "x", "zz": 1},
            ["zz: unexpected argument (this tool takes: s, i, n, b, a, o, free)"],
        ),
        ({"s": 1}, ["s: expected string; got 1 (integer)"]),
        ({"s": "x", "i": "3"}, ['i: expected integer; got "3" (string)']),
        ({"s": "x", "i": 1.5}, ["i: expected integer; got 1.5 (number)"]),
        ({"s": "x", "i": True}, ["i: expected integer; got true (boolean)"]),
        ({"s": "x", "n": False}, ["n: expected number; got false (boolean)"]),
        ({"s": "x", "b": 1}, ["b: expected boolean; got 1 (integer)"]),
        ({"s": "x", "a": {}}, ["a: expected array; got {} (object)"]),
        ({"s": "x", "o": []}, ["o: expected object; got [] (array)"]),
        (
            {"i": "x", "q": 1},
            [
                "s: missing required argument",
                "q: unexpected argument (this tool takes: s, i, n, b, a, o, free)",
                'i: expected integer; got "x" (string)',
            ],
        ),
    ],
)
def test_raw_tool_rejects(arguments: dict[str, Any], lines: list[str]) -> None:
    with pytest.raises(ArgumentsInvalid) as info:
        _raw().validate(arguments)
    assert info.value.lines == lines


def test_raw_tool_open_schema_allows_extra() -> None:
    t = _raw({"type": "object", "properties": {"a": {"type": "string"}}})
    assert t.validate({"a": "x", "other": 1}) == {"a": "x", "other": 1}


def test_raw_tool_results_are_auto() -> None:
    t = _raw()
    assert t.to_result("hi") == {"content": [{"type": "text", "text": "hi"}]}
    assert t.to_result({"k": 1}) == {
        "content": [{"type": "text", "text": '{"k":1}'}],
        "structuredContent": {"k": 1},
    }
    assert t.to_result(None) == {"content": []}


@pytest.mark.parametrize(
    ("schema", "output", "fragment"),
    [
        ({"type": "string"}, None, "input_schema"),
        ({}, None, "input_schema"),
        ({"type": "object"}, {"type": "array"}, "output_schema"),
    ],
)
def test_raw_tool_bad_schemas(schema: Any, output: Any, fragment: str) -> None:
    with pytest.raises(ToolDefinitionError, match=fragment):
        make_raw_tool("raw", schema, lambda a: a, output_schema=output)


# -- registry -------------------------------------------------------------------------------------


def _named(name: str) -> Tool:
    def f() -> None: ...

    return make_tool(f, ToolOptions(name=name))


def _registry(n: int) -> ToolRegistry:
    registry = ToolRegistry()
    for i in range(n):
        registry.add(_named(f"t{i:02d}"))
    return registry


def test_registry_keeps_registration_order() -> None:
    registry = ToolRegistry()
    for name in ["zeta", "alpha", "mid"]:
        registry.add(_named(name))
    assert [t.name for t in registry] == ["zeta", "alpha", "mid"]
    assert len(registry) == 3
    assert registry.get("alpha") is not None
    assert registry.get("missing") is None


def test_registry_duplicate_name() -> None:
    registry = ToolRegistry()
    registry.add(_named("same"))
    with pytest.raises(ToolDefinitionError, match="duplicate tool name 'same'") as info:
        registry.add(_named("same"))
    assert "_named.<locals>.f" in str(info.value)  # names the one already registered
    assert len(registry) == 1


def test_registry_remove() -> None:
    registry = _registry(3)
    registry.remove("t01")
    assert [t.name for t in registry] == ["t00", "t02"]
    assert [t.name for t in registry.page(None, None)[0]] == ["t00", "t02"]
    with pytest.raises(KeyError):
        registry.remove("t01")


def test_page_without_size_returns_everything() -> None:
    tools, cursor = _registry(5).page(None, None)
    assert [t.name for t in tools] == ["t00", "t01", "t02", "t03", "t04"]
    assert cursor is None


@pytest.mark.parametrize(("n", "size"), [(0, 2), (1, 2), (5, 2), (6, 2), (6, 3), (7, 1), (3, 10)])
def test_paging_walks_every_tool_once_in_order(n: int, size: int) -> None:
    registry = _registry(n)
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        tools, cursor = registry.page(cursor, size)
        pages += 1
        assert len(tools) <= size
        seen.extend(t.name for t in tools)
        if cursor is None:
            break
        assert isinstance(cursor, str)
    assert seen == [f"t{i:02d}" for i in range(n)]
    assert pages == max(1, -(-n // size))


def test_cursor_is_stable() -> None:
    registry = _registry(6)
    _, cursor = registry.page(None, 2)
    assert cursor is not None
    first = registry.page(cursor, 2)
    again = registry.page(cursor, 2)
    assert [t.name for t in first[0]] == [t.name for t in again[0]] == ["t02", "t03"]
    assert first[1] == again[1]


def test_cursor_survives_a_new_registration() -> None:
    registry = _registry(4)
    _, cursor = registry.page(None, 2)
    registry.add(_named("late"))
    tools, _ = registry.page(cursor, 2)
    assert [t.name for t in tools] == ["t02", "t03"]


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage",
        "!!!",
        _b64("tools:x"),
        _b64("other:1"),
        _b64("tools:-1"),
        _b64("tools:"),
        "\u00e9",
        _b64("tools:99"),
    ],
)
def test_bad_cursor_is_invalid_params(cursor: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        _registry(3).page(cursor, 2)
    assert info.value.code == -32602
    assert info.value.message.startswith("Invalid params")


def test_non_string_cursor_is_invalid_params() -> None:
    with pytest.raises(RemoteProtocolError) as info:
        _registry(3).page(5, 2)  # type: ignore[arg-type]
    assert info.value.code == -32602


# -- Server registration (sync, no event loop) --------------------------------------------


def test_server_add_tools_with_duplicates_registers_none() -> None:
    module = _module(
        "from trio_mcp import tool\n"
        "@tool('dup')\ndef a() -> None: ...\n"
        "@tool('ok')\ndef b() -> None: ...\n"
        "@tool('dup')\ndef c() -> None: ...\n"
    )
    server = Server("t")
    with pytest.raises(ToolDefinitionError, match="duplicate tool name 'dup'"):
        server.add_tools(module)
    assert server.tools == []


def test_server_add_tools_clashing_with_registered_tool_registers_none() -> None:
    server = Server("t")
    server.add_tool(lambda: None, name="m.middle")
    with pytest.raises(ToolDefinitionError, match=r"duplicate tool name 'm\.middle'"):
        server.add_tools(_module(MODULE_SOURCE))
    assert [t.name for t in server.tools] == ["m.middle"]


def test_server_tool_decorator_registers_and_returns_the_function() -> None:
    server = Server("t")

    @server.tool("deco.add")
    def add(a: int, b: int) -> int:
        return a + b

    assert add(1, 2) == 3
    assert [t.name for t in server.tools] == ["deco.add"]
    assert server.tools[0].fn is add


def test_server_tool_decorator_bare_registers_the_function_by_its_name() -> None:
    server = Server("t")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    # The decorated name is still the function, with its own type (mypy checks this line).
    typed: Callable[[int, int], int] = add
    assert typed(1, 2) == 3
    assert [(t.name, t.description) for t in server.tools] == [("add", "Add two integers.")]
    assert server.tools[0].fn is add


def test_server_tool_decorator_in_every_spelling() -> None:
    server = Server("t")

    @server.tool()
    def empty() -> str:
        return "e"

    @server.tool("named", "Described")
    def positional() -> str:
        return "p"

    @server.tool(name="keyword", description="By keyword", inline=True, timeout=2)
    def keyword() -> str:
        return "k"

    @server.tool
    @tool("tagged", "From @tool")
    def tagged() -> str:
        return "t"

    typed: Callable[[], str] = empty
    assert typed() == "e"
    assert (empty(), positional(), keyword(), tagged()) == ("e", "p", "k", "t")
    listed = [(t.name, t.description, t.inline, t.timeout) for t in server.tools]
    assert listed == [
        ("empty", None, False, None),
        ("named", "Described", False, None),
        ("keyword", "By keyword", True, 2),
        ("tagged", "From @tool", False, None),
    ]
    assert [t.fn for t in server.tools] == [empty, positional, keyword, tagged]


# -- arguments mirrored into HTTP headers (x-mcp-header, spec 2026-07-28) -------------------------


def test_param_header_marks_the_property_and_names_its_path() -> None:
    def route(
        region: Annotated[str, Param("Where", header="Region")],
        zone: Annotated[int | None, Param(header="Zone")] = None,
        query: str = "",
    ) -> None: ...

    t = make_tool(route)
    assert t.input_schema["properties"]["region"] == {
        "description": "Where",
        "type": "string",
        "x-mcp-header": "Region",
    }
    assert t.input_schema["properties"]["zone"] == {"type": "integer", "x-mcp-header": "Zone"}
    assert "x-mcp-header" not in t.input_schema["properties"]["query"]
    assert t.param_headers == {"mcp-param-region": ("region",), "mcp-param-zone": ("zone",)}

    def unmarked(region: Annotated[str, Param("Where")]) -> None: ...

    assert make_tool(unmarked).param_headers == {}
    assert "x-mcp-header" not in make_tool(unmarked).input_schema["properties"]["region"]


def _number(x: Annotated[float, Param(header="X")]) -> None: ...


def _twice(
    a: Annotated[str, Param(header="Same")], b: Annotated[str, Param(header="sAME")]
) -> None: ...


def _spaced(a: Annotated[str, Param(header="Not A Token")]) -> None: ...


@pytest.mark.parametrize(
    ("fn", "reason"),
    [
        (_number, "not of type integer, string or boolean"),
        (_twice, "used twice"),
        (_spaced, "non-empty HTTP token"),
    ],
)
def test_an_invalid_header_mark_fails_at_registration(fn: Any, reason: str) -> None:
    with pytest.raises(ToolDefinitionError, match=reason) as info:
        make_tool(fn)
    assert fn.__name__ in str(info.value)
    assert "x-mcp-header" in str(info.value)


def test_a_raw_tool_schema_is_held_to_the_same_header_rules() -> None:
    marked = {"type": "string", "x-mcp-header": "R"}
    schema = {
        "type": "object",
        "properties": {"where": {"type": "object", "properties": {"r": marked}}},
    }
    assert make_raw_tool("raw", schema, lambda a: None).param_headers == {
        "mcp-param-r": ("where", "r")
    }
    bad = {
        "type": "object",
        "properties": {"l": {"type": "array", "items": {"type": "string", "x-mcp-header": "L"}}},
    }
    with pytest.raises(ToolDefinitionError, match=r"tool 'raw'.*through 'properties' alone"):
        make_raw_tool("raw", bad, lambda a: None)
