"""Resources and resource templates: the `@resource` marker, their records and registries.

`@resource(uri)` only tags the function (as `@tool` does). A URI with `{variables}` makes a
template: the function's parameters are its variables, typed and validated like tool
arguments. A plain URI makes a resource whose function takes no arguments (a `Context` at most).
A static value or a file can be a resource too (`Server.add_resource(uri, value)`).

A URI is resolved against the resources first (exact URI), then the templates in registration
order: the first template that matches wins. A URI longer than `max_uri_length` is refused
(-32602) before any template sees it. A template's matched values pass the template's value
rules (`_features/uri_template` Rule 1) before they are validated and before the function runs:
decoded, a `{name}` holding "/", a backslash or NUL, or being "." or "..", is refused (-32602,
one line per problem), and a `{+path}` comes normalised, kept under its root. Variables named
in `verbatim` are passed as they are decoded.
"""

from __future__ import annotations

import dataclasses
import inspect
import mimetypes
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic_core import to_json

from .._core.jsonrpc import INVALID_PARAMS
from .._core.types import Annotations, CacheHint, EmbeddedResource, Icon, ResourceContents
from .._core.versions import revision
from .._exceptions import RemoteProtocolError, ToolDefinitionError
from .completion import Completer, completers_for, declared_completers
from .reflect import check_scopes, discover, marker, tag
from .registry import Registry, described
from .schema import ArgumentsInvalid, CompiledTool, compile_signature
from .signature import describe_function
from .uri_template import UnsafeValue, UriTemplate

__all__ = [
    "DEFAULT_MAX_URI_LENGTH",
    "Resource",
    "ResourceMeta",
    "ResourceRegistry",
    "ResourceTemplate",
    "contents_of",
    "discover_resources",
    "make_resource",
    "resource",
    "resource_meta",
]

_ATTR: Final = "__mcp_resource__"
F = TypeVar("F", bound=Callable[..., Any])

# 64 KiB: eight times the request line nginx and Apache accept (8 KiB), the MCP Python SDK's
# own default, and far longer than any real resource URI; it bounds what one match costs.
DEFAULT_MAX_URI_LENGTH: Final = 65536

TEXT: Final = "text/plain"
BINARY: Final = "application/octet-stream"
JSON: Final = "application/json"


@dataclass(frozen=True, slots=True)
class ResourceMeta:
    """What `@resource(...)` attached to a function, or what a registration gives.

    Every field but `uri` left None is not given: the function or the default applies.
    """

    uri: str | None = None
    name: str | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: Sequence[Icon | Mapping[str, Any]] | None = None
    annotations: Annotations | Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    inline: bool | None = None
    timeout: float | None = None
    cache: CacheHint | None = None
    completions: Mapping[str, Callable[..., Any]] | None = None
    scopes: Iterable[str] | None = None
    verbatim: Iterable[str] | None = None

    def over(self, base: ResourceMeta) -> ResourceMeta:
        """These options, with what they leave None taken from `base`."""
        given = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }
        return dataclasses.replace(base, **given)


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    annotations: Annotations | Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
    inline: bool = False,
    timeout: float | None = None,
    cache: CacheHint | None = None,
    completions: Mapping[str, Callable[..., Any]] | None = None,
    scopes: Iterable[str] | None = None,
    verbatim: Iterable[str] | None = None,
) -> Callable[[F], F]:
    """Mark a function as an MCP resource, or a resource template when `uri` has variables.

    It is registered later by `Server.add_resources(...)`. The function's return value becomes
    the resource's contents (`contents_of`); for a template, its parameters are the
    template's variables (`@resource("wh40k://units/{faction}/{unit_id}")` on
    `def unit(faction: Faction, unit_id: int)`).

    Args:
        uri: The resource's URI, or an RFC 6570 URI template.
        name: Its name; defaults to the function's name.
        title: A human-readable display name.
        description: What it holds; defaults to the docstring's summary.
        mime_type: The MIME type of its contents (default: from the value's type).
        size: Its size in bytes, when known in advance.
        icons: Icons for user interfaces.
        annotations: Audience, priority and last-modified hints.
        meta: `_meta` of its listing entry.
        inline: Declare a sync function fast and non-blocking, to run on the event loop.
        timeout: Seconds after which a read is cancelled and answered with an error.
        cache: Caching hints of its reads (2026-07-28 `ttlMs`, `cacheScope`).
        completions: Completers of template variables by name (see `Param(complete=...)`).
        scopes: OAuth scopes a caller's token must grant to read it, over HTTP with
            `HttpOptions(auth=...)` (403 insufficient_scope otherwise); by default it is
            also left out of its list for a token without them. Not enforced over stdio or
            in memory, where there is no token.
        verbatim: Template variables whose values reach the function as they are decoded,
            without the value rules: by default a `{name}` value holding "/", a backslash or
            NUL, or being "." or "..", is refused before the function runs, and a `{+path}`
            comes normalised (see the README's resources section).

    Returns:
        The function itself, unchanged but for the attached metadata.
    """
    options = ResourceMeta(
        uri, name, title, description, mime_type, size, icons, annotations, meta,
        inline, timeout, cache, completions, scopes, verbatim,
    )  # fmt: skip
    _check_options(options, "@resource")

    def mark(fn: F) -> F:
        return tag(fn, _ATTR, options, "@resource")

    return mark


def resource_meta(obj: Any) -> ResourceMeta | None:
    """The metadata `@resource` attached to `obj`, if any."""
    return marker(obj, _ATTR, ResourceMeta)


def discover_resources(obj: Any) -> list[Callable[..., Any]]:
    """The `@resource`-tagged functions of a module, class or instance, in definition order."""
    return discover(obj, _ATTR, ResourceMeta, "add_resources")


@dataclass(frozen=True, slots=True, eq=False)
class _Described:
    """What resources and templates share: how they are described and how they are read."""

    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    icons: tuple[dict[str, Any], ...] | None
    annotations: dict[str, Any] | None
    meta: dict[str, Any] | None
    cache: CacheHint | None
    fn: Callable[..., Any] | None
    context_param: str | None
    is_async: bool
    inline: bool
    timeout: float | None
    #: OAuth scopes a token must grant to read it (HTTP with `HttpOptions.auth` only).
    scopes: frozenset[str] = frozenset()
    _wire: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def _describe(self, wire: dict[str, Any], version: str) -> dict[str, Any]:
        known = revision(version)
        described(wire, self.title, self.description, known)
        if self.mime_type:
            wire["mimeType"] = self.mime_type
        if self.icons and known.icons:
            wire["icons"] = list(self.icons)
        if self.annotations:
            hints = dict(self.annotations)
            if not known.structured:
                hints.pop("lastModified", None)
            if hints:
                wire["annotations"] = hints
        if self.meta and known.structured:
            wire["_meta"] = self.meta
        return wire


@dataclass(frozen=True, slots=True, eq=False)
class Resource(_Described):
    """A resource with a fixed URI: a function, a static value or a file, read when asked."""

    uri: str = ""
    size: int | None = None
    #: The static value, when there is no function (`fn` is None).
    value: Any = None

    def definition(self, version: str) -> dict[str, Any]:
        """The resource as listed by `resources/list` for a client speaking `version`."""
        cached = self._wire.get(version)
        if cached is None:
            wire: dict[str, Any] = {"uri": self.uri, "name": self.name}
            self._describe(wire, version)
            if self.size is not None:
                wire["size"] = self.size
            cached = self._wire[version] = _ordered(wire, _RESOURCE_ORDER)
        return cached

    def contents(self, value: Any, uri: str | None = None) -> list[dict[str, Any]]:
        """The `contents` of a read that produced `value` (`contents_of`)."""
        return contents_of(value, uri or self.uri, self.mime_type)


@dataclass(frozen=True, slots=True, eq=False)
class ResourceTemplate(_Described):
    """A resource template: URIs that match it are read by calling its function."""

    template: UriTemplate = field(default_factory=lambda: UriTemplate("x:"))
    compiled: CompiledTool | None = None
    completers: Mapping[str, Completer] = field(default_factory=dict)
    #: Variables passed as they are decoded, without the value rules.
    verbatim: frozenset[str] = frozenset()
    #: For a template that serves a known set of URIs (a directory): lists them, as
    #: `resources/list` entries; it may block (it runs in a worker thread).
    listing: Callable[[], list[dict[str, Any]]] | None = None

    @property
    def uri_template(self) -> str:
        """The template as written."""
        return self.template.text

    def definition(self, version: str) -> dict[str, Any]:
        """The template as listed by `resources/templates/list` for `version`."""
        cached = self._wire.get(version)
        if cached is None:
            wire: dict[str, Any] = {"uriTemplate": self.template.text, "name": self.name}
            cached = self._wire[version] = _ordered(self._describe(wire, version), _TEMPLATE_ORDER)
        return cached

    def bind(self, uri: str) -> dict[str, Any] | None:
        """The function's keyword arguments for `uri`, or None when it does not match.

        Raises:
            ArgumentsInvalid: when a variable's value breaks the value rules or fails
                validation (one line each).
        """
        values = self.template.match(uri)
        if values is None:
            return None
        return self.validate(values)

    def validate(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The function's keyword arguments for the template's matched `values`.

        The value rules come first: an unsafe value is refused before any conversion.

        Raises:
            ArgumentsInvalid: when a variable's value breaks the value rules or fails
                validation (one line each).
        """
        try:
            values = self.template.safe(dict(values), self.verbatim)
        except UnsafeValue as exc:
            hint = "" if exc.path else f"; a path belongs in {{+{exc.name}}}, kept under its root"
            raise ArgumentsInvalid([f"{exc}{hint}"]) from None
        assert self.compiled is not None
        return self.compiled.validate(values)

    def contents(self, value: Any, uri: str) -> list[dict[str, Any]]:
        """The `contents` of a read of `uri` that produced `value` (`contents_of`)."""
        return contents_of(value, uri, self.mime_type)


_RESOURCE_ORDER: Final = (
    "uri", "name", "title", "description", "mimeType", "size", "icons", "annotations", "_meta"
)  # fmt: skip
_TEMPLATE_ORDER: Final = (
    "uriTemplate", "name", "title", "description", "mimeType", "icons", "annotations", "_meta"
)  # fmt: skip


def _ordered(wire: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    return {key: wire[key] for key in order if key in wire}


def contents_of(value: Any, uri: str, mime_type: str | None) -> list[dict[str, Any]]:
    """Turn what a read produced into the wire's `contents` list, by its type.

    `str` is text (text/plain), `bytes` a base64 blob (application/octet-stream),
    `ResourceContents` (or a list of them) goes as it is, anything else (a model, dataclass,
    TypedDict, dict, list, number) is JSON text (application/json). A `mime_type` given at
    registration names the type instead.
    """
    if isinstance(value, ResourceContents):
        return [value.to_wire(uri, mime_type)]
    if isinstance(value, EmbeddedResource):
        return [{**value.to_wire()["resource"]}]
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(item, ResourceContents) for item in value)
    ):
        return [item.to_wire(uri, mime_type) for item in value]
    if isinstance(value, str):
        return [{"uri": uri, "mimeType": mime_type or TEXT, "text": value}]
    if isinstance(value, bytes | bytearray | memoryview):
        return [ResourceContents(blob=bytes(value)).to_wire(uri, mime_type or BINARY)]
    text = to_json(value, by_alias=True).decode()
    return [{"uri": uri, "mimeType": mime_type or JSON, "text": text}]


class ResourceRegistry:
    """The resources (by URI) and the templates (by URI template) of one server.

    `changes` moves with every change of either: both are announced by one
    `notifications/resources/list_changed`.
    """

    def __init__(self, max_uri_length: int = DEFAULT_MAX_URI_LENGTH) -> None:
        #: The longest URI read or watched; a longer one is refused before any matching.
        self.max_uri_length = max_uri_length
        self.static: Registry[Resource] = Registry(
            "resources", _holder, key=lambda r: r.uri, key_label="URI"
        )
        self.templates: Registry[ResourceTemplate] = Registry(
            "templates", _holder, key=lambda t: t.template.text, key_label="URI template"
        )

    @property
    def changes(self) -> int:
        """How many changes either registry has seen."""
        return self.static.changes + self.templates.changes

    @property
    def on_change(self) -> Callable[[], None] | None:
        """Called after every change of either registry, if set."""
        return self.static.on_change

    @on_change.setter
    def on_change(self, hook: Callable[[], None] | None) -> None:
        self.static.on_change = self.templates.on_change = hook

    def __len__(self) -> int:
        return len(self.static) + len(self.templates)

    def add(self, new: Resource | ResourceTemplate) -> None:
        """Register a resource or a template (`ToolDefinitionError` when its key is taken)."""
        if isinstance(new, Resource):
            self.static.add(new)
        else:
            self.templates.add(new)

    def registry_of(self, key: str) -> Registry[Any]:
        """The registry that holds `key` (a URI or a URI template); KeyError if neither."""
        for registry in (self.static, self.templates):
            if key in registry:
                return registry
        raise KeyError(key)

    def check_length(self, uri: str) -> None:
        """Refuse a URI longer than `max_uri_length`, before any template sees it.

        Raises:
            RemoteProtocolError: -32602 naming the limit.
        """
        if len(uri) > self.max_uri_length:
            raise RemoteProtocolError(
                f"Invalid params: the URI is {len(uri):,} characters long; this server reads "
                f"URIs of at most {self.max_uri_length:,} (Limits(max_uri_length=...))",
                INVALID_PARAMS,
                {"maxUriLength": self.max_uri_length},
            )

    def match(
        self, uri: str
    ) -> tuple[Resource | ResourceTemplate, Mapping[str, str | list[str]]] | None:
        """What serves `uri` and the template's matched values; None if nothing.

        The values are not validated yet (`ResourceTemplate.validate`); a resource has none.

        Raises:
            RemoteProtocolError: -32602 for a URI longer than `max_uri_length`.
        """
        self.check_length(uri)
        found = self.static.get(uri)
        if found is not None:
            return found, {}
        for template in self.templates:
            values = template.template.match(uri)
            if values is not None:
                return template, values
        return None

    def resolve(self, uri: str) -> tuple[Resource | ResourceTemplate, dict[str, Any]] | None:
        """What serves `uri` and the arguments to call it with; None if nothing.

        Raises:
            RemoteProtocolError: -32602 for a URI longer than `max_uri_length`.
            ArgumentsInvalid: when a template matches but a variable breaks the value rules
                or fails validation.
        """
        found = self.match(uri)
        if found is None:
            return None
        target, values = found
        if isinstance(target, Resource):
            return target, {}
        return target, target.validate(values)

    def template_by_uri(self, uri_template: str) -> ResourceTemplate | None:
        """The enabled template written exactly `uri_template`, or None."""
        return self.templates.get(uri_template)


def _holder(item: Resource | ResourceTemplate) -> str:
    if item.fn is not None:
        return repr(getattr(item.fn, "__qualname__", item.fn))
    return "a static value"


# -- making records -------------------------------------------------------------------------------


def make_resource(
    target: Any, options: ResourceMeta = ResourceMeta()
) -> Resource | ResourceTemplate:
    """A resource or template from a function, a static value or a file.

    `target` is a function (its `@resource` metadata, overridden by `options`), a
    `pathlib.Path` (a file read at each read) or any other value (static contents); the last
    two need `options.uri`. A static value or a file is read when asked, never here: a file's
    bytes come off the disk at each read (in a worker thread), its MIME type guessed from its
    name.

    Raises:
        ToolDefinitionError: when it cannot be a resource, saying why (no URI, a template
            whose function does not take its variables, bad options...).
    """
    is_function = callable(target) and not isinstance(target, type)
    if is_function:
        options = options.over(resource_meta(target) or ResourceMeta())
    if not options.uri:
        where = getattr(target, "__qualname__", None) or repr(target)
        raise ToolDefinitionError(
            f"resource {where} has no URI: tag it with @resource(uri) or pass uri=..."
        )
    _check_options(options, f"resource {options.uri!r}")
    parsed = UriTemplate(options.uri)
    if options.verbatim and not parsed.is_template:
        raise ToolDefinitionError(
            f"resource {options.uri!r} has no variables: verbatim names none of them"
        )
    if isinstance(target, Path):
        return _file_resource(target, parsed, options)
    if not is_function:
        if parsed.is_template:
            raise ToolDefinitionError(
                f"resource {options.uri!r} is a URI template: register a function whose "
                "parameters are its variables, not a static value"
            )
        return Resource(
            **_common(options, name=options.uri, fn=None), uri=options.uri, size=options.size,
            value=target,
        )  # fmt: skip
    return _function_resource(target, parsed, options)


def _check_options(options: ResourceMeta, where: str) -> None:
    if options.timeout is not None and not options.timeout > 0:
        raise ToolDefinitionError(f"timeout of {where} must be positive seconds")
    if options.size is not None and (not isinstance(options.size, int) or options.size < 0):
        raise ToolDefinitionError(f"size of {where} must be a whole number of bytes >= 0")
    if options.cache is not None and not isinstance(options.cache, CacheHint):
        raise ToolDefinitionError(f"cache of {where} must be a trio_mcp.CacheHint")
    if options.scopes is not None:
        check_scopes(options.scopes, where)


def _common(
    options: ResourceMeta,
    *,
    name: str,
    fn: Callable[..., Any] | None,
    description: str | None = None,
    context_param: str | None = None,
    is_async: bool = False,
) -> dict[str, Any]:
    icons = tuple(
        icon.to_wire() if isinstance(icon, Icon) else dict(icon) for icon in options.icons or ()
    )
    hints = options.annotations
    return {
        "name": options.name or name,
        "title": options.title,
        "description": options.description or description,
        "mime_type": options.mime_type,
        "icons": icons or None,
        "annotations": hints.to_wire() if isinstance(hints, Annotations) else hints and dict(hints),
        "meta": dict(options.meta) if options.meta else None,
        "cache": options.cache,
        "fn": fn,
        "context_param": context_param,
        "is_async": is_async,
        "inline": bool(options.inline),
        "timeout": options.timeout,
        "scopes": frozenset(options.scopes or ()),
    }


def _file_resource(path: Path, parsed: UriTemplate, options: ResourceMeta) -> Resource:
    if parsed.is_template:
        raise ToolDefinitionError(
            f"resource {parsed.text!r} is a URI template: a file is one resource, give it a "
            "plain URI"
        )
    mime = options.mime_type or mimetypes.guess_type(path.name)[0] or BINARY
    as_text = mime.startswith("text/") or mime in (JSON, "application/xml")

    def read_file() -> str | bytes:
        data = path.read_bytes()
        if as_text:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                return data
        return data

    read_file.__qualname__ = f"file {str(path)!r}"
    options = dataclasses.replace(options, mime_type=mime)
    return Resource(
        **_common(options, name=path.name, fn=read_file), uri=parsed.text, size=options.size
    )


def _function_resource(
    fn: Callable[..., Any], parsed: UriTemplate, options: ResourceMeta
) -> Resource | ResourceTemplate:
    qualname = getattr(fn, "__qualname__", repr(fn))
    sig = describe_function(fn)
    names = [p.name for p in sig.params]
    is_inline = bool(options.inline)
    if is_inline and sig.is_async:
        raise ToolDefinitionError(
            f"{qualname} is async: inline=True is for sync functions (async ones always run "
            "on the event loop)"
        )
    common = _common(
        options,
        name=getattr(fn, "__name__", None) or parsed.text,
        fn=fn,
        description=sig.summary,
        context_param=sig.context_param,
        is_async=sig.is_async,
    )
    if not parsed.is_template:
        if names:
            raise ToolDefinitionError(
                f"resource {parsed.text!r} ({qualname}) takes {', '.join(names)} but its URI "
                "has no {variables}: make it a template (e.g. "
                f"{parsed.text.rstrip('/')}/{{{names[0]}}}) or drop the parameters"
            )
        if options.completions:
            raise ToolDefinitionError(
                f"resource {parsed.text!r} ({qualname}) has no variables to complete"
            )
        return Resource(**common, uri=parsed.text, size=options.size)
    variables = [v.name for v in parsed.variables]
    missing = [n for n in variables if n not in names]
    extra = [n for n in names if n not in variables]
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"the template names {', '.join(missing)}, which {qualname} lacks")
        if extra:
            problems.append(f"{qualname} takes {', '.join(extra)}, which the template lacks")
        raise ToolDefinitionError(
            f"resource template {parsed.text!r} and its function disagree: "
            f"{'; '.join(problems)}. Give the function one parameter per template variable, "
            "with the same names"
        )
    if options.size is not None:
        raise ToolDefinitionError(
            f"resource template {parsed.text!r}: size describes one resource; drop it"
        )
    # Only the parameters matter here: what a read returns is turned into contents by type.
    compiled = compile_signature(
        qualname, dataclasses.replace(sig, return_annotation=inspect.Signature.empty)
    )
    declared = {**declared_completers(fn), **(options.completions or {})}
    completers = completers_for(
        parsed.text,
        {p.name: p.annotation for p in sig.params},
        declared,
        where=f"resource template {parsed.text!r} ({qualname})",
    )
    given = options.verbatim or ()
    verbatim = frozenset([given] if isinstance(given, str) else given)
    unknown = sorted(verbatim - set(variables))
    if unknown:
        raise ToolDefinitionError(
            f"resource template {parsed.text!r}: verbatim names {', '.join(unknown)}, which the "
            f"template lacks; name some of {', '.join(variables)}"
        )
    return ResourceTemplate(
        **common, template=parsed, compiled=compiled, completers=completers, verbatim=verbatim
    )
