"""MCP payload shapes that users touch: content blocks and tool results.

Rule: these are frozen, slotted records with a `to_wire()` that returns the exact JSON object the
specification names (camelCase keys, optional fields left out when unset). Pydantic is not used
here: these records are built on the hot path of every call.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AudioContent",
    "CallToolResult",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "ResourceLink",
    "TextContent",
    "ToolAnnotations",
]


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _with_meta(
    wire: dict[str, Any], annotations: dict[str, Any] | None, meta: dict[str, Any] | None
) -> dict[str, Any]:
    if annotations:
        wire["annotations"] = annotations
    if meta:
        wire["_meta"] = meta
    return wire


@dataclass(frozen=True, slots=True)
class TextContent:
    """A block of text."""

    text: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The block as the specification's `TextContent` object."""
        return _with_meta({"type": "text", "text": self.text}, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class ImageContent:
    """An image; `data` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The block as the specification's `ImageContent` object."""
        wire = {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}
        return _with_meta(wire, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class AudioContent:
    """Audio; `data` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The block as the specification's `AudioContent` object."""
        wire = {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}
        return _with_meta(wire, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource's contents embedded in the result: give `text` or `blob` (bytes)."""

    uri: str
    text: str | None = None
    blob: bytes | str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("EmbeddedResource takes exactly one of text= or blob=")

    def to_wire(self) -> dict[str, Any]:
        """The block as the specification's `EmbeddedResource` object."""
        resource: dict[str, Any] = {"uri": self.uri}
        if self.mime_type is not None:
            resource["mimeType"] = self.mime_type
        if self.text is not None:
            resource["text"] = self.text
        else:
            assert self.blob is not None
            resource["blob"] = _b64(self.blob)
        return _with_meta({"type": "resource", "resource": resource}, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class ResourceLink:
    """A link to a resource the client may read."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The block as the specification's `ResourceLink` object."""
        wire: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("size", self.size),
        ):
            if value is not None:
                wire[key] = value
        return _with_meta(wire, self.annotations, self.meta)


ContentBlock = TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink
CONTENT_BLOCK_TYPES = (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink)


@dataclass(frozen=True, slots=True)
class CallToolResult:
    """A complete `tools/call` result, returned by a tool that wants full control."""

    content: list[ContentBlock] = field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The result as the specification's `CallToolResult` object."""
        wire: dict[str, Any] = {"content": [block.to_wire() for block in self.content]}
        if self.structured_content is not None:
            wire["structuredContent"] = self.structured_content
        if self.is_error:
            wire["isError"] = True
        if self.meta:
            wire["_meta"] = self.meta
        return wire


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """Hints about a tool's behaviour (spec: `ToolAnnotations`); untrusted by clients."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        """The hints as the specification's object, unset hints left out."""
        pairs: tuple[tuple[str, Any], ...] = (
            ("title", self.title),
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("idempotentHint", self.idempotent_hint),
            ("openWorldHint", self.open_world_hint),
        )
        return {key: value for key, value in pairs if value is not None}


LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[LogLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
