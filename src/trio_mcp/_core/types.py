"""MCP payload shapes that users touch: content blocks, tool results, resource and prompt parts.

Each is a frozen, slotted record with a `to_wire()` that returns the exact JSON object the
specification names (camelCase keys, optional fields left out when unset). Pydantic is not used
here: these records are built on the hot path of every call.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "Annotations",
    "AudioContent",
    "CacheHint",
    "ContentBlock",
    "EmbeddedResource",
    "Icon",
    "ImageContent",
    "LegacyCallToolResult",
    "PromptMessage",
    "ResourceContents",
    "ResourceLink",
    "TextContent",
    "ToolAnnotations",
    "ToolResult",
]


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _with_meta(
    wire: dict[str, Any],
    annotations: Annotations | dict[str, Any] | None,
    meta: dict[str, Any] | None,
) -> dict[str, Any]:
    if isinstance(annotations, Annotations):
        annotations = annotations.to_wire()
    if annotations:
        wire["annotations"] = annotations
    if meta:
        wire["_meta"] = meta
    return wire


@dataclass(frozen=True, slots=True)
class Annotations:
    """Hints for the client about a resource or a content block (spec: `Annotations`).

    Attributes:
        audience: Who it is for: "user", "assistant" or both.
        priority: How important it is, from 0 (entirely optional) to 1 (effectively required).
        last_modified: When it last changed: a `datetime` or an ISO 8601 string (sent to
            2025-06-18 and later clients).
    """

    audience: tuple[Literal["user", "assistant"], ...] | None = None
    priority: float | None = None
    last_modified: datetime | str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The hints as the specification's object, unset ones left out."""
        wire: dict[str, Any] = {}
        if self.audience is not None:
            wire["audience"] = list(self.audience)
        if self.priority is not None:
            wire["priority"] = self.priority
        if self.last_modified is not None:
            when = self.last_modified
            wire["lastModified"] = when.isoformat() if isinstance(when, datetime) else when
        return wire


@dataclass(frozen=True, slots=True)
class Icon:
    """An icon for a resource, template or prompt (spec 2025-11-25: `Icon`).

    Attributes:
        src: An `https:` or `data:` URI of the image.
        mime_type: Its MIME type, when the URI does not say.
        sizes: Sizes it fits, e.g. `("48x48", "any")`.
        theme: "light" or "dark", when it is meant for one background.
    """

    src: str
    mime_type: str | None = None
    sizes: tuple[str, ...] | None = None
    theme: Literal["light", "dark"] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The icon as the specification's object."""
        wire: dict[str, Any] = {"src": self.src}
        if self.mime_type is not None:
            wire["mimeType"] = self.mime_type
        if self.sizes is not None:
            wire["sizes"] = list(self.sizes)
        if self.theme is not None:
            wire["theme"] = self.theme
        return wire


@dataclass(frozen=True, slots=True)
class CacheHint:
    """How long a client may reuse a result, and who may share it (spec 2026-07-28, caching).

    Sent as `ttlMs` and `cacheScope` on list results and resource reads to 2026-07-28 clients.

    Attributes:
        ttl_ms: Milliseconds the result stays fresh (0: re-fetch every time).
        scope: "public" (nothing user-specific: shared caches may keep it) or "private".
    """

    ttl_ms: int = 0
    scope: Literal["public", "private"] = "public"

    def __post_init__(self) -> None:
        if not isinstance(self.ttl_ms, int) or isinstance(self.ttl_ms, bool) or self.ttl_ms < 0:
            raise ValueError(
                f"ttl_ms must be a whole number of milliseconds >= 0, not {self.ttl_ms!r}"
            )
        if self.scope not in ("public", "private"):
            raise ValueError(f'scope must be "public" or "private", not {self.scope!r}')

    def to_wire(self) -> dict[str, Any]:
        """The two fields of a cacheable result."""
        return {"ttlMs": self.ttl_ms, "cacheScope": self.scope}


@dataclass(frozen=True, slots=True)
class ResourceContents:
    """What a resource read returns, as it is: give `text` or `blob` (bytes).

    A resource function may return one of these (or a list of them) to choose the contents'
    URI and MIME type itself; `uri` defaults to the URI that was read.
    """

    text: str | None = None
    blob: bytes | str | None = None
    uri: str | None = None
    mime_type: str | None = None
    meta: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("ResourceContents takes exactly one of text= or blob=")

    def to_wire(self, uri: str, mime_type: str | None = None) -> dict[str, Any]:
        """The contents as the specification's text or blob resource contents.

        Args:
            uri: The URI to name when the contents do not name their own.
            mime_type: The MIME type to name when the contents do not name their own.
        """
        wire: dict[str, Any] = {"uri": self.uri or uri}
        mime = self.mime_type or mime_type
        if mime is not None:
            wire["mimeType"] = mime
        if self.text is not None:
            wire["text"] = self.text
        else:
            assert self.blob is not None
            wire["blob"] = _b64(self.blob)
        if self.meta:
            wire["_meta"] = self.meta
        return wire


@dataclass(frozen=True, slots=True)
class TextContent:
    """A block of text."""

    text: str
    annotations: Annotations | dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The block as the specification's `TextContent` object."""
        return _with_meta({"type": "text", "text": self.text}, self.annotations, self.meta)


@dataclass(frozen=True, slots=True)
class ImageContent:
    """An image; `data` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str
    annotations: Annotations | dict[str, Any] | None = None
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
    annotations: Annotations | dict[str, Any] | None = None
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
    annotations: Annotations | dict[str, Any] | None = None
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
    annotations: Annotations | dict[str, Any] | None = None
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
class PromptMessage:
    """One message of a prompt: who says it, and what (a string is a text block)."""

    role: Literal["user", "assistant"]
    content: str | ContentBlock

    def to_wire(self) -> dict[str, Any]:
        """The message as the specification's `PromptMessage` object."""
        content = self.content
        block = TextContent(content) if isinstance(content, str) else content
        return {"role": self.role, "content": block.to_wire()}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A `tools/call` result: what a tool returns to say it all, and what a client receives.

    One record for both sides of the same wire object. A tool that wants full control returns
    `ToolResult([TextContent("...")], structured={...}, is_error=True)`; `Client.call_tool`
    returns the server's answer as a `ToolResult` (with `raw` set), which a proxying tool may
    return as it is.

    Attributes:
        content: The content blocks: `TextContent`, `ImageContent`, `AudioContent`,
            `EmbeddedResource`, `ResourceLink`, or the raw object of a block type this
            package does not know (it goes out as it is).
        structured: The `structuredContent` object, when there is one.
        is_error: Whether the tool reported a failure (the reason is in `content`).
        meta: The result's `_meta`, when present.
        raw: A received result exactly as the server sent it; empty for one a tool made.
    """

    content: Sequence[ContentBlock | dict[str, Any]] = ()
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text blocks joined by newlines ("" when there are none)."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))

    def to_wire(self) -> dict[str, Any]:
        """The result as the specification's `CallToolResult` object."""
        blocks = [block if isinstance(block, dict) else block.to_wire() for block in self.content]
        wire: dict[str, Any] = {"content": blocks}
        if self.structured is not None:
            wire["structuredContent"] = self.structured
        if self.is_error:
            wire["isError"] = True
        if self.meta:
            wire["_meta"] = self.meta
        return wire


class LegacyCallToolResult(ToolResult):
    """`trio_mcp.CallToolResult` of earlier versions: a `ToolResult` made the old way.

    It took the structured content as `structured_content`; `trio_mcp.CallToolResult` still
    gives this class, with a `DeprecationWarning`.
    """

    __slots__ = ()

    def __init__(
        self,
        content: Sequence[ContentBlock | dict[str, Any]] = (),
        structured_content: dict[str, Any] | None = None,
        is_error: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> None:
        ToolResult.__init__(self, content, structured_content, is_error, meta)

    @property
    def structured_content(self) -> dict[str, Any] | None:
        """The `structuredContent` object (`ToolResult.structured`)."""
        return self.structured


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
