"""Tool records, the `@tool` marker, discovery by reflection, and the registry.

`@tool` only attaches a `ToolMeta` to the function (like a C# attribute) and returns it
unchanged: a decorated function is still an ordinary, callable function. Everything that can be
wrong with a tool is found when it is registered (`make_tool`) and raised as a
`ToolDefinitionError` naming the function, the parameter and the fix, never at its first call.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, overload

from .._core.param_headers import InvalidHeaderAnnotation, header_params
from .._core.types import ToolAnnotations
from .._core.versions import revision
from .._exceptions import ToolDefinitionError
from .reflect import check_scopes, discover, marker, tag
from .registry import Registry, described
from .schema import ArgumentsInvalid, CompiledTool, compile_signature, describe_json
from .signature import describe_function
from .task_utility import tool_execution
from .tasks import TaskSupport, task_support

__all__ = [
    "NO_OPTIONS",
    "TOOL_NAME_PATTERN",
    "RawHandler",
    "Tool",
    "ToolMeta",
    "ToolOptions",
    "ToolRegistry",
    "discover_tools",
    "make_raw_tool",
    "make_tool",
    "tool",
]

#: Tool names accepted at registration (spec 2025-11-25, tools: "Tool names").
TOOL_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_ATTR: Final = "__mcp_tool__"

F = TypeVar("F", bound=Callable[..., Any])
RawHandler = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """How a registration describes a tool, beyond its function: one record, passed along.

    Every field left None is not given: the function's `@tool` metadata, or the default,
    applies. `Server.add_tool`, `Server.tool` and `Server.add_raw_tool` take these as keyword
    arguments and hand them on as this record.
    """

    name: str | None = None
    description: str | None = None
    title: str | None = None
    annotations: ToolAnnotations | None = None
    inline: bool | None = None
    timeout: float | None = None
    task: bool | float | TaskSupport | None = None
    scopes: Iterable[str] | None = None


#: No options given: everything comes from the function and its `@tool` metadata.
NO_OPTIONS: Final = ToolOptions()


@dataclass(frozen=True, slots=True)
class ToolMeta:
    """What `@tool(...)` attached to a function."""

    name: str | None = None
    description: str | None = None
    title: str | None = None
    annotations: ToolAnnotations | None = None
    inline: bool = False
    timeout: float | None = None
    task: TaskSupport | None = None
    scopes: frozenset[str] = frozenset()


@overload
def tool(name: F, /) -> F: ...
@overload
def tool(
    name: str | None = None,
    description: str | None = None,
    *,
    title: str | None = None,
    annotations: ToolAnnotations | None = None,
    inline: bool = False,
    timeout: float | None = None,
    task: bool | float | TaskSupport | None = None,
    scopes: Iterable[str] = (),
) -> Callable[[F], F]: ...
def tool(
    name: Any = None,
    description: str | None = None,
    *,
    title: str | None = None,
    annotations: ToolAnnotations | None = None,
    inline: bool = False,
    timeout: float | None = None,
    task: bool | float | TaskSupport | None = None,
    scopes: Iterable[str] = (),
) -> Any:
    """Mark a function as an MCP tool. It is registered later by `Server.add_tools(...)`.

    Usable bare (`@tool`) or with arguments (`@tool("calculator.add", "Add two numbers")`).

    Args:
        name: The tool's name; defaults to the function's name.
        description: What the tool does; defaults to the docstring.
        title: A human-readable display name.
        annotations: Behaviour hints (read-only, destructive, ...).
        inline: Declare a sync function fast and non-blocking, to run on the event loop
            instead of in a worker thread.
        timeout: Seconds after which the call is cancelled and reported as an error.
        task: Whether a call may become a task (the tasks extension) for clients that
            declared it: True (a task from the start), seconds (a task when the call has not
            finished by then), or a `TaskSupport`; default: never.
        scopes: OAuth scopes a caller's token must grant to call it, over HTTP with
            `HttpOptions(auth=...)` (403 insufficient_scope otherwise); by default it is
            also left out of `tools/list` for a token without them. Not enforced over
            stdio or in memory, where there is no token.

    Returns:
        The function itself, unchanged but for the attached metadata.
    """
    if callable(name) and not isinstance(name, str):
        return tool()(name)
    _check_timeout(timeout, "@tool")
    support = task_support(task, "@tool")
    meta = ToolMeta(
        name, description, title, annotations, inline, timeout, support,
        check_scopes(scopes, "@tool"),
    )  # fmt: skip

    def mark(fn: F) -> F:
        return tag(fn, _ATTR, meta, "@tool")

    return mark


def tool_meta(obj: Any) -> ToolMeta | None:
    """The metadata `@tool` attached to `obj`, if any."""
    return marker(obj, _ATTR, ToolMeta)


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """A registered tool: its wire definition and how to call it."""

    name: str
    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    fn: Callable[..., Any]
    compiled: CompiledTool | None  # None for raw (hand-written schema) tools
    title: str | None = None
    annotations: ToolAnnotations | None = None
    context_param: str | None = None
    is_async: bool = False
    inline: bool = False
    timeout: float | None = None
    #: How a call may become a task; None: never (`_features/tasks`).
    task: TaskSupport | None = None
    #: OAuth scopes a token must grant to call it (HTTP with `HttpOptions.auth` only).
    scopes: frozenset[str] = frozenset()
    #: Arguments mirrored into HTTP headers (`x-mcp-header`): header name (lower case) -> path.
    param_headers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    _wire: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def definition(self, version: str) -> dict[str, Any]:
        """The tool as listed by `tools/list` for a client speaking `version`.

        Fields a revision does not know are left out: `annotations` came in 2025-03-26,
        `title` and `outputSchema` in 2025-06-18.
        """
        cached = self._wire.get(version)
        if cached is not None:
            return cached
        known = revision(version)
        wire = described({"name": self.name}, self.title, self.description, known)
        wire["inputSchema"] = self.input_schema
        if self.output_schema is not None and known.structured:
            wire["outputSchema"] = self.output_schema
        if self.annotations is not None and known.tool_annotations:
            hints = self.annotations.to_wire()
            if hints:
                wire["annotations"] = hints
        execution = tool_execution(self.task, version)
        if execution is not None:
            wire["execution"] = execution
        self._wire[version] = wire
        return wire

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate arguments (see `CompiledTool.validate`); raw tools get a light check.

        Raises:
            ArgumentsInvalid: one line per problem.
        """
        if self.compiled is not None:
            return self.compiled.validate(arguments)
        return _check_raw(self.input_schema, arguments)

    def to_result(self, value: Any) -> dict[str, Any]:
        """Turn a return value into a `CallToolResult` wire object."""
        if self.compiled is not None:
            return self.compiled.to_result(value)
        return _RAW_RESULT.to_result(value)


_RAW_RESULT = CompiledTool({}, None, "auto", (), None, None)


def _check_raw(schema: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The checks a hand-written schema gets: required keys, closed objects, top-level types."""
    lines: list[str] = []
    props: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in arguments:
            lines.append(f"{name}: missing required argument")
    if schema.get("additionalProperties") is False:
        lines.extend(
            f"{name}: unexpected argument (this tool takes: {', '.join(props) or 'no arguments'})"
            for name in arguments
            if name not in props
        )
    checks: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "integer": (int,),
        "number": (int, float),
        "boolean": (bool,),
        "array": (list,),
        "object": (dict,),
    }
    for name, value in arguments.items():
        expected = props.get(name, {}).get("type") if isinstance(props.get(name), dict) else None
        if isinstance(expected, str) and expected in checks:
            ok = isinstance(value, checks[expected]) and not (
                expected in ("integer", "number") and isinstance(value, bool)
            )
            if not ok:
                lines.append(f"{name}: expected {expected}; got {describe_json(value)}")
    if lines:
        raise ArgumentsInvalid(lines)
    return arguments


def _check_timeout(timeout: float | None, where: str) -> float | None:
    if timeout is not None and not timeout > 0:  # `not >` also refuses NaN
        raise ToolDefinitionError(f"timeout of {where} must be positive seconds, got {timeout!r}")
    return timeout


def _check_name(name: str, where: str) -> None:
    # fullmatch, not match: "$" also matches before a trailing newline.
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
        raise ToolDefinitionError(
            f"invalid tool name {name!r} for {where}: use 1-128 characters from A-Z, a-z, 0-9, "
            "'_', '-' and '.'"
        )


def make_tool(fn: Callable[..., Any], options: ToolOptions = NO_OPTIONS) -> Tool:
    """Introspect a function into a `Tool`; what `options` gives overrides `@tool` metadata.

    Raises:
        ToolDefinitionError: when the function cannot be a tool.
    """
    if not callable(fn):
        raise ToolDefinitionError(f"{fn!r} is not callable")
    meta = tool_meta(fn) or ToolMeta()
    qualname = getattr(fn, "__qualname__", repr(fn))
    tool_name = options.name or meta.name or getattr(fn, "__name__", None)
    if tool_name is None:
        raise ToolDefinitionError(f"{fn!r} has no __name__; pass name=...")
    _check_name(tool_name, qualname)
    sig = describe_function(fn)
    compiled = compile_signature(qualname, sig)
    is_inline = meta.inline if options.inline is None else options.inline
    if is_inline and sig.is_async:
        raise ToolDefinitionError(
            f"{qualname} is async: inline=True is for sync functions (async tools always run "
            "on the event loop)"
        )
    support = meta.task if options.task is None else task_support(options.task, qualname)
    _check_task(support, is_inline, qualname)
    return Tool(
        name=tool_name,
        description=options.description or meta.description or sig.description,
        input_schema=compiled.input_schema,
        output_schema=compiled.output_schema,
        fn=fn,
        compiled=compiled,
        title=options.title or meta.title,
        annotations=options.annotations or meta.annotations,
        context_param=sig.context_param,
        is_async=sig.is_async,
        inline=is_inline,
        timeout=(
            _check_timeout(options.timeout, qualname)
            if options.timeout is not None
            else meta.timeout
        ),
        task=support,
        scopes=(
            check_scopes(options.scopes, qualname) if options.scopes is not None else meta.scopes
        ),
        param_headers=_check_headers(compiled.input_schema, f"tool {tool_name!r} ({qualname})"),
    )


def make_raw_tool(
    name: str,
    input_schema: dict[str, Any],
    handler: RawHandler | Callable[[dict[str, Any]], Awaitable[Any]],
    options: ToolOptions = NO_OPTIONS,
    *,
    output_schema: dict[str, Any] | None = None,
) -> Tool:
    """A tool from a hand-written JSON Schema and a handler `(arguments: dict) -> result`.

    Raises:
        ToolDefinitionError: for a bad name or a schema that is not an object schema.
    """
    _check_name(name, f"handler {getattr(handler, '__qualname__', handler)!r}")
    if not isinstance(input_schema, dict) or input_schema.get("type") != "object":
        raise ToolDefinitionError(
            f'input_schema of tool {name!r} must be a JSON Schema with "type": "object"'
        )
    if output_schema is not None and output_schema.get("type") != "object":
        raise ToolDefinitionError(
            f'output_schema of tool {name!r} must be a JSON Schema with "type": "object"'
        )
    return Tool(
        name=name,
        description=options.description,
        input_schema=input_schema,
        output_schema=output_schema,
        fn=handler,
        compiled=None,
        title=options.title,
        annotations=options.annotations,
        is_async=inspect.iscoroutinefunction(handler),
        inline=bool(options.inline),
        timeout=_check_timeout(options.timeout, name),
        task=_check_task(task_support(options.task, name), bool(options.inline), name),
        scopes=check_scopes(options.scopes or (), name),
        param_headers=_check_headers(input_schema, f"tool {name!r}"),
    )


def _check_task(support: TaskSupport | None, inline: bool, where: str) -> TaskSupport | None:
    if support is not None and inline:
        raise ToolDefinitionError(
            f"{where}: inline=True runs on the reader and cannot become a task; drop one of "
            "inline= and task="
        )
    return support


def _check_headers(input_schema: dict[str, Any], where: str) -> dict[str, tuple[str, ...]]:
    try:
        return header_params(input_schema)
    except InvalidHeaderAnnotation as exc:
        raise ToolDefinitionError(f"{where}: {exc} (spec 2026-07-28, x-mcp-header)") from None


def discover_tools(obj: Any) -> list[Callable[..., Any]]:
    """Find the functions tagged with `@tool` on a module, a class or an instance.

    A module yields its tagged functions; a class its tagged static and class methods; an
    instance its tagged methods, bound. Order is definition order.

    Raises:
        ToolDefinitionError: when a class is given whose tagged methods need an instance.
    """
    return discover(obj, _ATTR, ToolMeta, "add_tools")


class ToolRegistry(Registry[Tool]):
    """Tools by name, in registration order (the order `tools/list` pages in); see `Registry`."""

    def __init__(self) -> None:
        super().__init__("tools", _holder)


def _holder(tool: Tool) -> str:
    return repr(getattr(tool.fn, "__qualname__", tool.fn))
