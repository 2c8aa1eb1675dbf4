"""Prompts: the `@prompt` marker, the prompt record, its arguments and its messages.

`@prompt(name)` only tags the function (as `@tool` does). The prompt's arguments are the
function's parameters: name, description (from `Param` or the docstring), required unless
defaulted. What the function returns becomes the wire's messages (`messages_of`).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, overload

from .._core.types import CONTENT_BLOCK_TYPES, Icon, PromptMessage, TextContent
from .._core.versions import revision
from .._exceptions import ToolDefinitionError
from .completion import Completer, completers_for, declared_completers
from .reflect import check_scopes, discover, marker, tag
from .registry import Registry, described
from .schema import CompiledTool, compile_signature
from .signature import describe_function

__all__ = [
    "Prompt",
    "PromptMeta",
    "PromptRegistry",
    "discover_prompts",
    "make_prompt",
    "messages_of",
    "prompt",
    "prompt_meta",
]

_ATTR: Final = "__mcp_prompt__"
#: Prompt names accepted at registration: as tool names (spec 2025-11-25, tools: "Tool names").
PROMPT_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_ROLES: Final = frozenset({"user", "assistant"})
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class PromptMeta:
    """What `@prompt(...)` attached to a function, or what a registration gives.

    Every field left None is not given: the function's metadata or the default applies.
    """

    name: str | None = None
    description: str | None = None
    title: str | None = None
    icons: Sequence[Icon | Mapping[str, Any]] | None = None
    meta: Mapping[str, Any] | None = None
    inline: bool | None = None
    timeout: float | None = None
    completions: Mapping[str, Callable[..., Any]] | None = None
    scopes: Iterable[str] | None = None

    def over(self, base: PromptMeta) -> PromptMeta:
        """These options, with what they leave None taken from `base`."""
        given = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }
        return dataclasses.replace(base, **given)


@overload
def prompt(name: F, /) -> F: ...
@overload
def prompt(
    name: str | None = None,
    description: str | None = None,
    *,
    title: str | None = None,
    icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    meta: Mapping[str, Any] | None = None,
    inline: bool = False,
    timeout: float | None = None,
    completions: Mapping[str, Callable[..., Any]] | None = None,
    scopes: Iterable[str] | None = None,
) -> Callable[[F], F]: ...
def prompt(
    name: Any = None,
    description: str | None = None,
    *,
    title: str | None = None,
    icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    meta: Mapping[str, Any] | None = None,
    inline: bool = False,
    timeout: float | None = None,
    completions: Mapping[str, Callable[..., Any]] | None = None,
    scopes: Iterable[str] | None = None,
) -> Any:
    """Mark a function as an MCP prompt. It is registered later by `Server.add_prompts(...)`.

    Usable bare (`@prompt`), empty (`@prompt()`) or with arguments, like `@tool`.

    Args:
        name: The prompt's name; defaults to the function's name.
        description: What the prompt is for; defaults to the docstring's summary.
        title: A human-readable display name.
        icons: Icons for user interfaces.
        meta: `_meta` of its listing entry.
        inline: Declare a sync function fast and non-blocking, to run on the event loop.
        timeout: Seconds after which a `prompts/get` is cancelled and answered with an error.
        completions: Completers of arguments by name (see `Param(complete=...)`).
        scopes: OAuth scopes a caller's token must grant to get it, over HTTP with
            `HttpOptions(auth=...)` (403 insufficient_scope otherwise); by default it is
            also left out of `prompts/list` for a token without them. Not enforced over stdio or
            in memory, where there is no token.

    Returns:
        The function itself (bare use), or a decorator that tags one and returns it.
    """
    if callable(name) and not isinstance(name, str):  # bare `@prompt`: the function came
        return prompt()(name)
    if scopes is not None:
        check_scopes(scopes, "@prompt")
    options = PromptMeta(
        name, description, title, icons, meta, inline, timeout, completions, scopes
    )  # fmt: skip

    def mark(fn: F) -> F:
        return tag(fn, _ATTR, options, "@prompt")

    return mark


def prompt_meta(obj: Any) -> PromptMeta | None:
    """The metadata `@prompt` attached to `obj`, if any."""
    return marker(obj, _ATTR, PromptMeta)


def discover_prompts(obj: Any) -> list[Callable[..., Any]]:
    """The `@prompt`-tagged functions of a module, class or instance, in definition order."""
    return discover(obj, _ATTR, PromptMeta, "add_prompts")


@dataclass(frozen=True, slots=True, eq=False)
class Prompt:
    """A registered prompt: its wire definition and how to get its messages."""

    name: str
    title: str | None
    description: str | None
    arguments: tuple[dict[str, Any], ...]
    icons: tuple[dict[str, Any], ...] | None
    meta: dict[str, Any] | None
    fn: Callable[..., Any]
    compiled: CompiledTool
    completers: Mapping[str, Completer]
    context_param: str | None
    is_async: bool
    inline: bool
    timeout: float | None
    #: OAuth scopes a token must grant to get it (HTTP with `HttpOptions.auth` only).
    scopes: frozenset[str] = frozenset()
    _wire: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def definition(self, version: str) -> dict[str, Any]:
        """The prompt as listed by `prompts/list` for a client speaking `version`."""
        cached = self._wire.get(version)
        if cached is not None:
            return cached
        known = revision(version)
        wire = described({"name": self.name}, self.title, self.description, known)
        if self.arguments:
            wire["arguments"] = list(self.arguments)
        if self.icons and known.icons:
            wire["icons"] = list(self.icons)
        if self.meta and known.structured:
            wire["_meta"] = self.meta
        self._wire[version] = wire
        return wire

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Coerce the string arguments to the function's annotations.

        Prompt arguments travel as strings; each is coerced to its annotation (`int`,
        `Literal`, `Enum`, dates...), and a failure is one line per argument, as for tools.

        Raises:
            ArgumentsInvalid: one line per problem.
        """
        return self.compiled.validate(arguments)


def messages_of(value: Any) -> list[dict[str, Any]]:
    """Turn what a prompt function returned into the wire's `messages`.

    By its type: a `str` is one user message; a content block is one user message holding it;
    a `PromptMessage`, a `(role, content)` pair or a `{"role", "content"}` dict is one message;
    a list or tuple of any of these is those messages in order. Anything else is the
    function's error, reported as such.

    Raises:
        TypeError: for a value that is no message, naming what was found.
    """
    items = value if isinstance(value, list) else [value]
    if isinstance(value, tuple) and not _is_pair(value):
        items = list(value)
    return [_message(item) for item in items]


def _is_pair(value: tuple[Any, ...]) -> bool:
    # Any 2-tuple that starts with a string is meant as (role, content): a wrong role is an
    # error to report, not two messages to guess at.
    return len(value) == 2 and isinstance(value[0], str)


def _content(content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return TextContent(content).to_wire()
    if isinstance(content, CONTENT_BLOCK_TYPES):
        return content.to_wire()
    if isinstance(content, dict) and isinstance(content.get("type"), str):
        return content
    raise TypeError(
        f"a prompt message's content must be a string or a content block, not "
        f"{type(content).__name__}"
    )


def _message(item: Any) -> dict[str, Any]:
    if isinstance(item, PromptMessage):
        return item.to_wire()
    if isinstance(item, tuple) and _is_pair(item):
        if item[0] not in _ROLES:
            raise TypeError(
                f'a prompt message\'s role must be "user" or "assistant", not {item[0]!r}'
            )
        return {"role": item[0], "content": _content(item[1])}
    if isinstance(item, dict) and "role" in item and "content" in item:
        if item["role"] not in _ROLES:
            raise TypeError(
                f'a prompt message\'s role must be "user" or "assistant", not {item["role"]!r}'
            )
        return {"role": item["role"], "content": _content(item["content"])}
    if isinstance(item, (str, *CONTENT_BLOCK_TYPES)):
        return {"role": "user", "content": _content(item)}
    raise TypeError(
        "a prompt returns a string, a content block, a PromptMessage, a (role, content) "
        f"pair or a list of them, not {type(item).__name__}"
    )


class PromptRegistry(Registry[Prompt]):
    """Prompts by name, in registration order; see `Registry`."""

    def __init__(self) -> None:
        super().__init__("prompts", _holder)


def _holder(item: Prompt) -> str:
    return repr(getattr(item.fn, "__qualname__", item.fn))


def make_prompt(fn: Callable[..., Any], options: PromptMeta = PromptMeta()) -> Prompt:
    """Introspect a function into a `Prompt`; `options` override its `@prompt` metadata.

    Raises:
        ToolDefinitionError: when the function cannot be a prompt.
    """
    if not callable(fn):
        raise ToolDefinitionError(f"{fn!r} is not callable")
    options = options.over(prompt_meta(fn) or PromptMeta())
    qualname = getattr(fn, "__qualname__", repr(fn))
    name = options.name or getattr(fn, "__name__", None)
    if name is None:
        raise ToolDefinitionError(f"{fn!r} has no __name__; pass name=...")
    if not isinstance(name, str) or not PROMPT_NAME_PATTERN.fullmatch(name):
        raise ToolDefinitionError(
            f"invalid prompt name {name!r} for {qualname}: use 1-128 characters from A-Z, "
            "a-z, 0-9, '_', '-' and '.'"
        )
    if options.timeout is not None and not options.timeout > 0:
        raise ToolDefinitionError(f"timeout of prompt {name!r} must be positive seconds")
    sig = describe_function(fn)
    if options.inline and sig.is_async:
        raise ToolDefinitionError(
            f"{qualname} is async: inline=True is for sync functions (async ones always run "
            "on the event loop)"
        )
    compiled = compile_signature(
        qualname, dataclasses.replace(sig, return_annotation=inspect.Signature.empty)
    )
    arguments = []
    for param in sig.params:
        argument: dict[str, Any] = {"name": param.name}
        if param.description:
            argument["description"] = param.description
        argument["required"] = param.required
        arguments.append(argument)
    completers = completers_for(
        name,
        {p.name: p.annotation for p in sig.params},
        {**declared_completers(fn), **(options.completions or {})},
        where=f"prompt {name!r} ({qualname})",
    )
    icons = tuple(
        icon.to_wire() if isinstance(icon, Icon) else dict(icon) for icon in options.icons or ()
    )
    return Prompt(
        name=name,
        title=options.title,
        description=options.description or sig.summary,
        arguments=tuple(arguments),
        icons=icons or None,
        meta=dict(options.meta) if options.meta else None,
        fn=fn,
        compiled=compiled,
        completers=completers,
        context_param=sig.context_param,
        is_async=sig.is_async,
        inline=bool(options.inline),
        timeout=options.timeout,
        scopes=check_scopes(options.scopes or (), f"prompt {name!r}"),
    )
