"""What a client reads off the wire: the public records of a client and their decoding, sans-IO.

Rule 1: pure data. Nothing here imports trio or does I/O; the client runtime
        (`_runtime/client`) sends and receives, then hands the answers to these decoders. So a
        record can be imported, built and tested without loading the runtime.
Rule 2: decoding is lenient where the specification lets a server say less (a missing or
        mistyped optional field becomes None, an unknown content block stays its raw object,
        `raw` keeps what the server sent), and strict where a wrong guess would mislead the
        caller: a result or tool that is not an object of the right shape raises
        `RemoteProtocolError`.
Rule 3: a `tools/call` result whose `resultType` is not "complete" is refused, never taken for
        an empty success (this client declares no capability that would ask for another).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._exceptions import RemoteProtocolError
from .types import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

__all__ = [
    "LogMessage",
    "Progress",
    "ToolInfo",
    "ToolParameter",
    "ToolResult",
    "content_block",
    "describe_type",
    "tool_info",
    "tool_result",
]


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress notification for a call (`notifications/progress`).

    Attributes:
        progress: How far the call got; increases with each notification.
        total: The value `progress` will reach, when the server knows it.
        message: A human-readable description of the current step.
    """

    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class LogMessage:
    """A log notification from the server (`notifications/message`).

    Attributes:
        level: The syslog level name ("debug" .. "emergency").
        data: What was logged: usually a string, any JSON value is allowed.
        logger: The name of the server-side logger, when given.
    """

    level: str
    data: Any
    logger: str | None = None


_NO_DEFAULT: Final[Any] = object()


@dataclass(frozen=True, slots=True)
class ToolParameter:
    """One top-level parameter of a tool, read from its input schema.

    Attributes:
        name: The argument's name.
        type: A short description of the JSON type ("number", "integer 1..100", "hit|wound").
        required: Whether the call must give it.
        description: What the parameter means, when the schema says.
        default: The default value (see `has_default`).
    """

    name: str
    type: str
    required: bool
    description: str | None = None
    default: Any = _NO_DEFAULT

    @property
    def has_default(self) -> bool:
        """Whether the schema names a default value."""
        return self.default is not _NO_DEFAULT


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as the server lists it (`tools/list`).

    Attributes:
        name: The name to call it by.
        description: What it does, for the model.
        input_schema: JSON Schema of its arguments object.
        output_schema: JSON Schema of its `structuredContent`, when it declares one.
        title: A display name.
        annotations: Behaviour hints (readOnlyHint, ...), untrusted.
        raw: The tool object exactly as the server sent it.
    """

    name: str
    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def parameters(self) -> tuple[ToolParameter, ...]:
        """The top-level parameters of `input_schema`, in schema order."""
        properties = self.input_schema.get("properties")
        if not isinstance(properties, dict):
            return ()
        required = self.input_schema.get("required")
        required_names = set(required) if isinstance(required, list) else set()
        out = []
        for name, value in properties.items():
            schema = value if isinstance(value, dict) else {}
            description = schema.get("description")
            out.append(
                ToolParameter(
                    name=str(name),
                    type=describe_type(schema),
                    required=name in required_names,
                    description=description if isinstance(description, str) else None,
                    default=schema.get("default", _NO_DEFAULT),
                )
            )
        return tuple(out)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of `tools/call`.

    Attributes:
        content: The content blocks: `TextContent`, `ImageContent`, `AudioContent`,
            `EmbeddedResource`, `ResourceLink`, or the raw object of a block type this
            client does not know.
        structured: The `structuredContent` object, when the tool returned one.
        is_error: Whether the tool reported a failure (the reason is in `content`).
        meta: The result's `_meta`, when present.
        raw: The result object exactly as the server sent it.
    """

    content: tuple[ContentBlock | dict[str, Any], ...]
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text blocks joined by newlines ("" when there are none)."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))


def describe_type(schema: Mapping[str, Any]) -> str:
    """A short, human-readable form of a JSON Schema's type, for tables and messages."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "|".join(str(value) for value in enum)
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        text = "|".join(str(k) for k in kind)
    elif isinstance(kind, str):
        text = kind
        if kind == "array" and isinstance(schema.get("items"), dict):
            text = f"array[{describe_type(schema['items'])}]"
    else:
        variants = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(variants, list) and variants:
            return "|".join(describe_type(v) for v in variants if isinstance(v, dict))
        return "any"
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None or high is not None:
        text += f" {'' if low is None else low}..{'' if high is None else high}"
    return text


def content_block(wire: Any) -> ContentBlock | dict[str, Any]:
    """One content block as a record, or the wire object itself when it is not one we know."""
    if not isinstance(wire, dict):
        return {"type": "unknown", "value": wire}
    kind = wire.get("type")
    annotations = wire.get("annotations")
    meta = wire.get("_meta")
    try:
        if kind == "text" and isinstance(wire.get("text"), str):
            return TextContent(wire["text"], annotations, meta)
        if kind in ("image", "audio") and isinstance(wire.get("data"), str):
            cls = ImageContent if kind == "image" else AudioContent
            return cls(wire["data"], str(wire.get("mimeType", "")), annotations, meta)
        if kind == "resource" and isinstance(wire.get("resource"), dict):
            resource = wire["resource"]
            return EmbeddedResource(
                str(resource.get("uri", "")),
                text=resource.get("text"),
                blob=resource.get("blob"),
                mime_type=resource.get("mimeType"),
                annotations=annotations,
                meta=meta,
            )
        if kind == "resource_link" and isinstance(wire.get("uri"), str):
            return ResourceLink(
                wire["uri"],
                str(wire.get("name", "")),
                title=wire.get("title"),
                description=wire.get("description"),
                mime_type=wire.get("mimeType"),
                size=wire.get("size"),
                annotations=annotations,
                meta=meta,
            )
    except ValueError:  # e.g. a resource with both text and blob
        pass
    return wire


def tool_result(result: Any) -> ToolResult:
    """The `result` of a `tools/call` as a `ToolResult`.

    Raises:
        RemoteProtocolError: the result is malformed, or not a complete one (Rule 3).
    """
    if not isinstance(result, dict) or not isinstance(result.get("content", []), list):
        raise RemoteProtocolError(f"malformed tools/call result: {str(result)[:200]}")
    kind = result.get("resultType", "complete")
    if kind != "complete":
        # spec 2026-07-28: an absent resultType means complete. Anything else (an
        # "input_required" round, a task) asks for what this client neither declared nor
        # handles: never mistake it for an empty success.
        raise RemoteProtocolError(
            f"tools/call answered with resultType {kind!r}, which this client does not "
            "handle (it declares no client capabilities)"
        )
    structured = result.get("structuredContent")
    meta = result.get("_meta")
    return ToolResult(
        content=tuple(content_block(block) for block in result.get("content", [])),
        structured=structured if isinstance(structured, dict) else None,
        is_error=result.get("isError") is True,
        meta=meta if isinstance(meta, dict) else None,
        raw=result,
    )


def tool_info(wire: Any) -> ToolInfo:
    """One tool of a `tools/list` result as a `ToolInfo`.

    Raises:
        RemoteProtocolError: the tool is not an object with a string name.
    """
    if not isinstance(wire, dict) or not isinstance(wire.get("name"), str):
        raise RemoteProtocolError(f"malformed tool in tools/list: {str(wire)[:200]}")
    schema = wire.get("inputSchema")
    output = wire.get("outputSchema")
    annotations = wire.get("annotations")
    description = wire.get("description")
    title = wire.get("title")
    return ToolInfo(
        name=wire["name"],
        description=description if isinstance(description, str) else None,
        input_schema=schema if isinstance(schema, dict) else {"type": "object"},
        output_schema=output if isinstance(output, dict) else None,
        title=title if isinstance(title, str) else None,
        annotations=annotations if isinstance(annotations, dict) else None,
        raw=wire,
    )
