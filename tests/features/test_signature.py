"""Signature inspection and docstring parsing (sans-IO, no event loop)."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import pytest
from pydantic import Field

from trio_mcp import Context, Param, ToolDefinitionError
from trio_mcp._features.schema import compile_signature
from trio_mcp._features.signature import describe_function, parse_docstring

# -- docstrings ---------------------------------------------------------------------------------

GOOGLE = """Add two numbers.

    The sum is exact for integers
    and rounded for floats.

    Second paragraph.

    Args:
        a: The first number,
            which may span lines.
        b (int): The second number.
        c:
            Described on the next line.
        d (list[int], optional): Has a colon: inside.

    Returns:
        The sum.

    Raises:
        ValueError: never.
    """

NUMPY = """Add two numbers.

    More detail here.

    Parameters
    ----------
    a : int
        The first number,
        which may span lines.
    b : float
        The second number.
    c
        No type given.
    d : int
    e : str
        After an undescribed one.

    Returns
    -------
    int
        The sum.
    """

REST = """Add two numbers.

    More detail here.

    :param a: The first number,
        which may span lines.
    :param int b: The second number.
    :type a: int
    :param c: Third.
    :returns: The sum.
    :rtype: int
    """


@pytest.mark.parametrize(
    ("doc", "summary", "description", "params"),
    [
        pytest.param(
            GOOGLE,
            "Add two numbers.",
            "Add two numbers.\n\nThe sum is exact for integers and rounded for floats.\n\n"
            "Second paragraph.",
            {
                "a": "The first number, which may span lines.",
                "b": "The second number.",
                "c": "Described on the next line.",
                "d": "Has a colon: inside.",
            },
            id="google",
        ),
        pytest.param(
            NUMPY,
            "Add two numbers.",
            "Add two numbers.\n\nMore detail here.",
            {
                "a": "The first number, which may span lines.",
                "b": "The second number.",
                "c": "No type given.",
                "e": "After an undescribed one.",
            },
            id="numpy",
        ),
        pytest.param(
            REST,
            "Add two numbers.",
            "Add two numbers.\n\nMore detail here.",
            {
                "a": "The first number, which may span lines.",
                "b": "The second number.",
                "c": "Third.",
            },
            id="rest",
        ),
        pytest.param("One line.", "One line.", "One line.", {}, id="summary-only"),
        pytest.param(
            "Summary that\n    wraps over two lines.\n\n    Body.",
            "Summary that wraps over two lines.",
            "Summary that wraps over two lines.\n\nBody.",
            {},
            id="wrapped-summary",
        ),
        pytest.param(None, None, None, {}, id="none"),
        pytest.param("", None, None, {}, id="empty"),
        pytest.param("   \n  ", None, None, {}, id="blank"),
        pytest.param(
            "\n    Args:\n        x: only args\n    ",
            None,
            None,
            {"x": "only args"},
            id="google-no-summary",
        ),
        pytest.param(
            "Do.\n\nArguments:\n    x: via Arguments",
            "Do.",
            "Do.",
            {"x": "via Arguments"},
            id="google-arguments-header",
        ),
        pytest.param(
            "Do.\n\nArgs:\n    a: first\nRaises:\n    ValueError: bad",
            "Do.",
            "Do.",
            {"a": "first"},
            id="google-next-section-ends-args",
        ),
        pytest.param(
            """Find books.

            Use it when:
                the user names a title.

            Returns: a list of titles,
                best first.
            Yields:
                Nothing, really.

            Examples:
                >>> find("dune")
                ['Dune']

            Keyword Args:
                extra: dropped with its section.
            """,
            "Find books.",
            "Find books.\n\nUse it when:\n    the user names a title.\n\n"
            "Examples:\n    >>> find(\"dune\")\n    ['Dune']",
            {},
            id="google-guidance-kept-signature-sections-dropped",
        ),
        pytest.param(
            """Find books.

            Parameters
            ----------
            q : str
                The query.

            Notes
            -----
            Quote a phrase to match it
            exactly.

            Raises
            ------
            ValueError
                Never.
            Yields
            ------
            str
                Titles.
            """,
            "Find books.",
            "Find books.\n\nNotes\n-----\nQuote a phrase to match it\nexactly.",
            {"q": "The query."},
            id="numpy-notes-kept",
        ),
        pytest.param(
            """Find books.

            :param q: The query,
                wrapped.
            :type q: str
            :returns: Titles.
            :rtype: list[str]
            :raises ValueError: never.

            Quote a phrase to match it exactly.

            .. note:: Cached for an hour.
            """,
            "Find books.",
            "Find books.\n\nQuote a phrase to match it exactly.\n\n.. note:: Cached for an hour.",
            {"q": "The query, wrapped."},
            id="rest-text-after-the-fields-kept",
        ),
        pytest.param(
            """Roll dice.

            Steps:
              1. roll every die;
              2. count the successes.

                Indented literal text.
            """,
            "Roll dice.",
            "Roll dice.\n\nSteps:\n  1. roll every die;\n  2. count the successes.\n\n"
            "Indented literal text.",
            {},
            id="hand-laid-out-lines-kept",
        ),
    ],
)
def test_parse_docstring(
    doc: str | None, summary: str | None, description: str | None, params: dict[str, str]
) -> None:
    parsed = parse_docstring(inspect.cleandoc(doc) if doc else doc)
    assert parsed.summary == summary
    assert parsed.description == description
    assert parsed.params == params


# -- describe_function: parameters ----------------------------------------------------------------


def test_plain_function() -> None:
    def f(a: int, b: str = "x", *, c: float = 1.5) -> bool:
        """Summary.

        Args:
            a: The a.
        """
        return True

    sig = describe_function(f)
    assert [p.name for p in sig.params] == ["a", "b", "c"]
    assert [p.annotation for p in sig.params] == [int, str, float]
    assert [p.required for p in sig.params] == [True, False, False]
    assert sig.params[1].default == "x"
    assert sig.params[2].default == 1.5
    assert sig.params[0].default is inspect.Parameter.empty
    assert [p.description for p in sig.params] == ["The a.", None, None]
    assert sig.return_annotation is bool
    assert sig.is_async is False
    assert sig.context_param is None
    assert sig.summary == "Summary."
    assert sig.description == "Summary."


def test_unannotated_return_is_empty() -> None:
    def f(a: int):  # type: ignore[no-untyped-def]
        return a

    assert describe_function(f).return_annotation is inspect.Signature.empty


def test_none_return() -> None:
    def f() -> None:
        pass

    sig = describe_function(f)
    assert sig.params == ()
    assert sig.return_annotation is type(None)


def test_async_function() -> None:
    async def f(a: int) -> int:
        return a

    assert describe_function(f).is_async is True


def test_async_callable_object() -> None:
    class Tool:
        async def __call__(self, a: int) -> int:
            return a

    sig = describe_function(Tool())
    assert sig.is_async is True
    assert [p.name for p in sig.params] == ["a"]


def test_bound_method_drops_self() -> None:
    class K:
        def m(self, a: int) -> int:
            return a

    assert [p.name for p in describe_function(K().m).params] == ["a"]


# -- definition errors ----------------------------------------------------------------------------


def _varargs(a: int, *rest: int) -> None: ...
def _varkw(a: int, **extra: int) -> None: ...
def _posonly(a: int, /, b: int) -> None: ...
def _unannotated(a: int, b) -> None: ...  # type: ignore[no-untyped-def]
def _two_contexts(a: Context, n: int, b: Context) -> None: ...
def _unresolvable(a: DoesNotExist) -> None: ...  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize(
    ("fn", "param", "fragment"),
    [
        pytest.param(_varargs, "rest", "*rest", id="varargs"),
        pytest.param(_varkw, "extra", "**extra", id="varkw"),
        pytest.param(_posonly, "a", "positional-only", id="positional-only"),
        pytest.param(_unannotated, "b", "no type annotation", id="unannotated"),
        pytest.param(_two_contexts, "b", "at most one Context", id="two-contexts"),
        pytest.param(_unresolvable, None, "cannot resolve the annotations", id="unresolvable"),
    ],
)
def test_definition_errors(fn: Any, param: str | None, fragment: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        describe_function(fn)
    message = str(info.value)
    assert fn.__name__ in message  # names the function
    if param is not None:
        assert f"parameter {param!r}" in message  # ... and the parameter
    assert fragment in message


def test_definition_error_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        describe_function(_varargs)


def test_unannotated_error_says_how_to_fix() -> None:
    with pytest.raises(ToolDefinitionError, match=r"annotate it \(e\.g\. `b: str`\)"):
        describe_function(_unannotated)


# -- Context ----------------------------------------------------------------------------------


class MyContext(Context):
    __slots__ = ()


@pytest.mark.parametrize(
    "annotation",
    [Context, Annotated[Context, "meta"], MyContext],
    ids=["plain", "annotated", "subclass"],
)
def test_context_parameter_is_excluded(annotation: Any) -> None:
    def f(a: int, ctx: Any, b: str = "") -> None: ...

    f.__annotations__["ctx"] = annotation
    sig = describe_function(f)
    assert sig.context_param == "ctx"
    assert [p.name for p in sig.params] == ["a", "b"]


def test_context_parameter_may_come_first_with_any_name() -> None:
    async def f(context: Context, x: int) -> None: ...

    sig = describe_function(f)
    assert sig.context_param == "context"
    assert [p.name for p in sig.params] == ["x"]


# -- description precedence -------------------------------------------------------------------


def _precedence(
    *,
    all_three: Annotated[int, Param("from Param"), Field(description="from Field")],
    field_first: Annotated[int, Field(description="from Field"), Param("from Param")],
    field_and_doc: Annotated[int, Field(description="from Field")],
    doc_only: int,
    empty_param: Annotated[int, Param()],
    nothing: int,
) -> None:
    """Check precedence.

    Args:
        all_three: from docstring
        field_first: from docstring
        field_and_doc: from docstring
        doc_only: from docstring
        empty_param: from docstring
    """


@pytest.mark.parametrize(
    ("name", "description"),
    [
        ("all_three", "from Param"),
        ("field_first", "from Param"),
        ("field_and_doc", "from Field"),
        ("doc_only", "from docstring"),
        ("empty_param", "from docstring"),
        ("nothing", None),
    ],
)
def test_description_precedence(name: str, description: str | None) -> None:
    params = {p.name: p for p in describe_function(_precedence).params}
    assert params[name].description == description


def test_param_marker_is_stripped_other_metadata_kept() -> None:
    def f(
        a: Annotated[int, Param("d")],
        b: Annotated[int, Param("d"), Field(ge=1)],
        c: Annotated[int, Param("d", examples=(1, 2))],
    ) -> None: ...

    params = {p.name: p for p in describe_function(f).params}
    assert params["a"].annotation is int
    b = params["b"].annotation
    assert b.__origin__ is int
    assert not any(isinstance(m, Param) for m in b.__metadata__)
    assert any(getattr(m, "metadata", None) for m in b.__metadata__)  # Field(ge=1) survives
    assert params["c"].examples == (1, 2)
    assert params["a"].examples is None


def test_examples_are_read_once_into_a_tuple() -> None:
    # A generator would be used up by whoever read it first, leaving an empty list in the schema.
    def f(a: Annotated[int, Param("d", examples=(n for n in (1, 2)))]) -> None: ...

    sig = describe_function(f)
    assert sig.params[0].examples == (1, 2)
    schema = compile_signature("f", sig).input_schema
    assert schema["properties"]["a"]["examples"] == [1, 2]


def test_last_param_marker_wins() -> None:
    def f(a: Annotated[int, Param("first"), Param("second")]) -> None: ...

    assert describe_function(f).params[0].description == "second"
