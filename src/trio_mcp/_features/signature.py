"""From a Python function to a description of its parameters, by `inspect` alone.

What a tool, resource template or prompt takes, read once at registration: each parameter's
name, annotation, default and description, and the function's description from its docstring.
Every parameter a client fills is keyword-addressable and annotated; anything else (`*args`,
`**kwargs`, positional-only, unannotated) is a `ToolDefinitionError` naming the function and the
parameter, raised at registration. A parameter annotated `Context` is injected by the runtime
and never described.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final, get_args, get_origin

from .._exceptions import ToolDefinitionError
from .context import Context

__all__ = ["Param", "ParamSpec", "Signature", "describe_function", "parse_docstring"]


@dataclass(frozen=True, slots=True)
class Param:
    """Metadata for one tool parameter, used as `Annotated[T, Param("what it is")]`.

    Args:
        description: What the parameter means, written for the model.
        examples: Example values, shown in the schema.
        header: Mirror the argument into the HTTP header `Mcp-Param-<header>` (spec
            2026-07-28, `x-mcp-header`), so that proxies and load balancers can route on it
            without reading the body; for integer, string and boolean parameters only, and
            never for secrets (headers are visible to every intermediary).
        complete: For a prompt argument or a resource template variable: completes what the
            user typed (`completion/complete`), called as `complete(value)` or
            `complete(value, arguments)` (the other arguments chosen so far), sync or async,
            returning the candidate values.
    """

    description: str | None = None
    examples: tuple[Any, ...] | None = None
    header: str | None = None
    complete: Callable[..., Any] | None = None


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One client-supplied parameter."""

    name: str
    annotation: Any  # the type with `Param` markers removed, other Annotated metadata kept
    default: Any  # inspect.Parameter.empty when required
    description: str | None
    examples: tuple[Any, ...] | None
    header: str | None = None  # x-mcp-header, from Param(header=...)

    @property
    def required(self) -> bool:
        """Whether the client must supply this parameter."""
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class Signature:
    """What registration needs to know about a function."""

    params: tuple[ParamSpec, ...]
    context_param: str | None
    return_annotation: Any  # inspect.Signature.empty when unannotated
    is_async: bool
    summary: str | None
    description: str | None


def _qualname(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _strip_params(annotation: Any) -> tuple[Any, Param | None]:
    """Split `Annotated[T, Param(...), ...]` into the annotation without Param, and the Param."""
    if get_origin(annotation) is not Annotated:
        return annotation, None
    base, *extras = get_args(annotation)
    params = [m for m in extras if isinstance(m, Param)]
    others = [m for m in extras if not isinstance(m, Param)]
    stripped = Annotated[(base, *others)] if others else base
    return stripped, (params[-1] if params else None)


def _is_context(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    origin = get_origin(annotation)
    if origin is not None:  # `Context[AppState]`
        annotation = origin
    return isinstance(annotation, type) and issubclass(annotation, Context)


def _field_description(annotation: Any) -> str | None:
    # A `Field(...)` can only exist once pydantic is loaded; loading it just to look for one
    # would cost every server a third of its start-up (`_features/schema` Rule 3).
    fields = sys.modules.get("pydantic.fields")
    if fields is None or get_origin(annotation) is not Annotated:
        return None
    for meta in reversed(get_args(annotation)[1:]):
        if isinstance(meta, fields.FieldInfo) and meta.description:
            return meta.description  # type: ignore[no-any-return]
    return None


def describe_function(fn: Callable[..., Any]) -> Signature:
    """Inspect `fn` into a `Signature`.

    Raises:
        ToolDefinitionError: for a parameter a client could not fill (see the module docstring).
    """
    name = _qualname(fn)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"cannot inspect the signature of {name}: {exc}") from exc
    try:
        # A callable object's annotations live on its __call__ (get_type_hints rejects instances).
        routine = inspect.isroutine(fn) or isinstance(fn, type)
        annotated = fn if routine else getattr(type(fn), "__call__", fn)  # noqa: B004
        hints = typing.get_type_hints(annotated, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"cannot resolve the annotations of {name}: {str(exc).rstrip('.')}. Make every "
            "type in the signature importable from the function's module."
        ) from exc
    doc = parse_docstring(inspect.getdoc(fn))
    params: list[ParamSpec] = []
    context_param: str | None = None
    for p in sig.parameters.values():
        where = f"parameter {p.name!r} of {name}"
        if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise ToolDefinitionError(
                f"{where}: {star}{p.name} cannot be described by a JSON Schema; "
                "declare each argument as a named, annotated parameter"
            )
        if p.kind is p.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"{where} is positional-only; MCP arguments are passed by name, so remove the '/'"
            )
        if p.name not in hints:
            raise ToolDefinitionError(
                f"{where} has no type annotation; annotate it (e.g. `{p.name}: str`) so the "
                "schema can describe it"
            )
        annotation = hints[p.name]
        if _is_context(annotation):
            if context_param is not None:
                raise ToolDefinitionError(f"{where}: a tool takes at most one Context parameter")
            context_param = p.name
            continue
        stripped, marker = _strip_params(annotation)
        # In order of precedence: `Param(...)`, pydantic `Field(description=...)`, the
        # docstring's Args/Parameters section (Google, NumPy or reST style).
        description = (
            (marker.description if marker else None)
            or _field_description(annotation)
            or doc.params.get(p.name)
        )
        params.append(
            ParamSpec(
                name=p.name,
                annotation=stripped,
                default=p.default,
                description=description,
                # Once, as a tuple: a generator would be used up by the first reader.
                examples=tuple(marker.examples) if marker and marker.examples else None,
                header=marker.header if marker else None,
            )
        )
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an async callable object counts too
    )
    return Signature(
        params=tuple(params),
        context_param=context_param,
        return_annotation=hints.get("return", inspect.Signature.empty),
        is_async=is_async,
        summary=doc.summary,
        description=doc.description,
    )


# -- docstrings ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Docstring:
    """The parts of a docstring that a tool definition uses."""

    summary: str | None  # the first paragraph, on one line
    description: str | None  # the docstring for the model: see `parse_docstring`
    params: dict[str, str]


#: Sections that restate the Python signature (Google and NumPy names, matched without case):
#: the parameters reach the model through the input schema, the result through the output
#: schema, and exceptions as error results, so in the description they would only repeat it.
#: Every other section (Note, Warning, Example, See Also, "When to use", ...) is guidance for
#: whoever calls the tool, and stays. Examples stay too: a tool's examples are how a model
#: learns to call it, even when they are written as Python calls.
_SIGNATURE_SECTIONS: Final = frozenset(
    {
        "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
        "kwargs", "other parameters", "returns", "return", "yields", "yield", "receives",
        "raises", "raise", "exceptions", "warns",
    }
)  # fmt: skip
_GOOGLE_ARGS = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$", re.IGNORECASE)
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*?)\s*:(.*)$")
_NUMPY_UNDERLINE = re.compile(r"^-{3,}\s*$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_REST_FIELD = re.compile(r"^:\w+")
#: reST fields that restate the signature (Sphinx's info field lists).
_REST_SIGNATURE_FIELD = re.compile(
    r"^:(param|parameter|arg|argument|key|keyword|type|kwtype|returns?|rtype|raises?|except"
    r"|exception|yields?|ytype)\b"
)
#: A line that is laid out by hand: a list item, a doctest, a table or a literal block marker.
_LAID_OUT = re.compile(r"^(?:[-*+\u2022]\s|\d+[.)]\s|>>>|\||\.\.\s)|::$")


def parse_docstring(doc: str | None) -> Docstring:
    """Read a Google, NumPy or reST docstring: its summary, description and parameters.

    The description is the whole docstring without the sections that restate the signature
    (`_SIGNATURE_SECTIONS`, and the matching reST fields `:param x:`, `:returns:`, ...): text
    after the summary is usually guidance for the model, and is kept. A paragraph of plain
    prose is joined into one line (docstrings are wrapped for the source, not for the reader);
    a paragraph laid out by hand (list items, deeper indented lines, doctests, tables) keeps
    its lines.
    """
    if not doc:
        return Docstring(None, None, {})
    lines = textwrap.dedent(doc).strip().splitlines()
    paragraphs = _paragraphs(_without_signature_sections(lines))
    summary = " ".join(paragraphs[0].split()) if paragraphs else None
    description = "\n\n".join(paragraphs) if paragraphs else None
    params = _google_params(lines) or _numpy_params(lines) or _rest_params(lines)
    return Docstring(summary, description, params)


def _is_numpy_header(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and bool(lines[i].strip())
        and bool(_NUMPY_UNDERLINE.match(lines[i + 1].strip()))
    )


def _without_signature_sections(lines: list[str]) -> list[str]:
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _is_numpy_header(lines, i):
            if stripped.lower() not in _SIGNATURE_SECTIONS:
                kept += lines[i : i + 2]
                i += 2
                continue
            # A NumPy section's items sit at its header's indentation: it ends at the next
            # header, not where the indentation does.
            i += 2
            while i < len(lines) and not _is_numpy_header(lines, i):
                i += 1
            continue
        header = _GOOGLE_HEADER.match(stripped)
        rest_field = _REST_SIGNATURE_FIELD.match(stripped)
        if rest_field or (header and header.group(1).lower() in _SIGNATURE_SECTIONS):
            # The header (or field) and everything indented under it, blank lines included.
            base = _indent(line)
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
                i += 1
            continue
        kept.append(line)
        i += 1
    return kept


def _paragraphs(lines: list[str]) -> list[str]:
    out: list[str] = []
    block: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            block.append(line.rstrip())
            continue
        if block:
            out.append(_paragraph(block))
            block = []
    return out


def _paragraph(block: list[str]) -> str:
    first = _indent(block[0])
    laid_out = any(
        _LAID_OUT.search(line.strip()) or _NUMPY_UNDERLINE.match(line.strip()) for line in block
    ) or any(_indent(line) > first for line in block[1:])
    if not laid_out:
        return " ".join(" ".join(block).split())
    margin = min(_indent(line) for line in block)
    return "\n".join(line[margin:] for line in block)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_params(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    i = next((k for k, ln in enumerate(lines) if _GOOGLE_ARGS.match(ln.strip())), None)
    if i is None:
        return out
    base = _indent(lines[i])
    current: str | None = None
    item_indent = base  # read only once `current` is set, which sets it too
    for line in lines[i + 1 :]:
        if not line.strip():
            continue
        if _indent(line) <= base:
            break
        m = re.match(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
        if m and (current is None or _indent(line) <= item_indent):
            current, item_indent = m.group(1), _indent(line)
            out[current] = m.group(2).strip()
        elif current is not None:
            out[current] = (out[current] + " " + line.strip()).strip()
    return out


def _numpy_params(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, line in enumerate(lines[:-1]):
        if line.strip().lower() in ("parameters", "params", "arguments") and _NUMPY_UNDERLINE.match(
            lines[i + 1].strip()
        ):
            base = _indent(line)
            current: str | None = None
            for item in lines[i + 2 :]:
                if not item.strip():
                    continue
                if _indent(item) <= base:
                    if current is not None and _NUMPY_UNDERLINE.match(item.strip()):
                        out.pop(current, None)  # that "parameter" was the next section's title
                        break
                    m = re.match(r"^\s*(\w+)\s*(?::.*)?$", item)
                    if not m:
                        break
                    current = m.group(1)
                    out[current] = ""
                elif current is not None:
                    out[current] = (out[current] + " " + item.strip()).strip()
            break
    return {k: v for k, v in out.items() if v}


def _rest_params(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        m = _REST_PARAM.match(line.strip())
        if m:
            current = m.group(1)
            out[current] = m.group(2).strip()
        elif (
            current is not None
            and line.strip()
            and not _REST_FIELD.match(line.strip())
            and _indent(line) > 0
        ):
            out[current] = (out[current] + " " + line.strip()).strip()
        else:
            current = None
    return out
