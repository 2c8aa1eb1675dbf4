"""What a client reads off the wire: the public records of a client and their decoding, sans-IO.

The records a client's calls return (`ToolInfo`, `ToolResult`, `ResourceResult`, `TaskInfo`...)
and the decoders that make them from a server's results. The client runtime (`_runtime/client`)
sends and receives, then hands the answers to these decoders; nothing here imports trio or does
I/O, so a record can be imported, built and tested without loading the runtime.

Decoding is lenient where the specification lets a server say less (a missing or mistyped
optional field becomes None, an unknown content block stays its raw object, `raw` keeps what the
server sent), and strict where a wrong guess would mislead the caller: a result or tool that is
not an object of the right shape raises `RemoteProtocolError`, and so does a result whose
`resultType` is not "complete", which is never taken for an empty success. (Under 2026-07-28
the runtime answers "input_required" results before they reach these decoders, and follows a
"task" to its end; what comes here is the final result, or a kind this client does not know.)
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._exceptions import RemoteProtocolError
from .types import (
    CONTENT_BLOCK_TYPES,
    AudioContent,
    CacheHint,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    ResourceContents,
    ResourceLink,
    TextContent,
    ToolResult,
)

__all__ = [
    "Completion",
    "LogMessage",
    "Progress",
    "PromptArgument",
    "PromptInfo",
    "PromptResult",
    "ResourceInfo",
    "ResourceResult",
    "ResourceTemplateInfo",
    "TaskInfo",
    "ToolInfo",
    "ToolParameter",
    "ToolResult",
    "completion",
    "content_block",
    "describe_type",
    "list_page",
    "prompt_info",
    "prompt_result",
    "resource_info",
    "resource_result",
    "resource_template_info",
    "task_info",
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


#: The statuses of a task (SEP-2663); the last three are terminal.
TASK_STATUSES: Final = ("working", "input_required", "completed", "cancelled", "failed")
TERMINAL_STATUSES: Final = frozenset({"completed", "cancelled", "failed"})


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A task the server runs for a call (the tasks extension), as last seen.

    Attributes:
        task_id: The task's id, for `Client.get_task`, `update_task` and `cancel_task`.
        status: "working", "input_required", "completed", "cancelled" or "failed".
        status_message: What the task is doing, in words, when the server says.
        created_at: When the task was made (ISO 8601), when given.
        last_updated_at: When it last changed (ISO 8601), when given.
        ttl: Seconds the server keeps the task after it settled, when given.
        poll_interval: Seconds the server asks the client to wait between polls, when given.
        result: A completed task's `CallToolResult` object, as sent (`Client` decodes it).
        error: A failed task's JSON-RPC error object (`code`, `message`, `data`).
        input_requests: An input_required task's questions, by key, as sent.
        raw: The object exactly as the server sent it.
    """

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl: float | None = None
    poll_interval: float | None = None
    result: dict[str, Any] | None = field(default=None, repr=False)
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] = field(default_factory=dict, repr=False)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def terminal(self) -> bool:
        """Whether the task has settled for good (completed, cancelled or failed)."""
        return self.status in TERMINAL_STATUSES


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return value / 1000


def task_info(wire: Any, method: str = "tasks/get") -> TaskInfo:
    """A `CreateTaskResult` or a `tasks/get` result as a `TaskInfo` (the tasks extension, SEP-2663).

    Its id and a status the extension names are required; durations are integer milliseconds
    on the wire and seconds here. What a settled task carries (the tool's result, the JSON-RPC
    error) is kept as sent, for the runtime to decode; it may come without either (a
    `CreateTaskResult` has neither): `tasks/get` inlines them.

    Raises:
        RemoteProtocolError: for an object without a string `taskId` or a known `status`, a
            `result` that is no object, or an `error` that is no JSON-RPC error.
    """
    if not isinstance(wire, dict) or not isinstance(wire.get("taskId"), str):
        raise RemoteProtocolError(f"malformed task in the {method} result: {str(wire)[:200]}")
    status = wire.get("status")
    if status not in TASK_STATUSES:
        raise RemoteProtocolError(f"{method} answered a task with unknown status {status!r}")
    result = wire.get("result")
    error = wire.get("error")
    if "result" in wire and not isinstance(result, dict):
        raise RemoteProtocolError(f"{method} answered a task whose result is no object")
    if "error" in wire and not (isinstance(error, dict) and isinstance(error.get("code"), int)):
        raise RemoteProtocolError(f"{method} answered a task whose error is no JSON-RPC error")
    requests = wire.get("inputRequests")
    return TaskInfo(
        task_id=wire["taskId"],
        status=status,
        status_message=_text(wire, "statusMessage"),
        created_at=_text(wire, "createdAt"),
        last_updated_at=_text(wire, "lastUpdatedAt"),
        ttl=_seconds(wire.get("ttlMs")),
        poll_interval=_seconds(wire.get("pollIntervalMs")),
        result=_object(wire, "result"),
        error=_object(wire, "error"),
        input_requests=dict(requests) if isinstance(requests, dict) else {},
        raw=wire,
    )


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
        RemoteProtocolError: the result is malformed, or not a complete one.
    """
    if not isinstance(result, dict) or not isinstance(result.get("content", []), list):
        raise RemoteProtocolError(f"malformed tools/call result: {str(result)[:200]}")
    kind = result.get("resultType", "complete")
    if kind != "complete":
        # spec 2026-07-28: an absent resultType means complete. Anything else (a task, or an
        # "input_required" round outside 2026-07-28) asks for what this client does not
        # handle: never mistake it for an empty success.
        raise RemoteProtocolError(
            f"tools/call answered with resultType {kind!r}, which this client does not handle"
        )
    return ToolResult(
        content=tuple(content_block(block) for block in result.get("content", [])),
        structured=_object(result, "structuredContent"),
        is_error=result.get("isError") is True,
        meta=_object(result, "_meta"),
        raw=result,
    )


def tool_info(wire: Any) -> ToolInfo:
    """One tool of a `tools/list` result as a `ToolInfo`.

    Raises:
        RemoteProtocolError: the tool is not an object with a string name.
    """
    if not isinstance(wire, dict) or not isinstance(wire.get("name"), str):
        raise RemoteProtocolError(f"malformed tool in tools/list: {str(wire)[:200]}")
    schema = _object(wire, "inputSchema")
    return ToolInfo(
        name=wire["name"],
        description=_text(wire, "description"),
        input_schema={"type": "object"} if schema is None else schema,
        output_schema=_object(wire, "outputSchema"),
        title=_text(wire, "title"),
        annotations=_object(wire, "annotations"),
        raw=wire,
    )


# -- resources, prompts, completion --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """A resource as the server lists it (`resources/list`).

    Attributes:
        uri: The URI to read it by.
        name: Its name.
        title: A display name.
        description: What it holds.
        mime_type: The MIME type of its contents, when known.
        size: Its size in bytes, when known.
        annotations: Audience, priority and lastModified hints, untrusted.
        raw: The resource object exactly as the server sent it.
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class ResourceTemplateInfo:
    """A resource template as the server lists it (`resources/templates/list`).

    Attributes:
        uri_template: The RFC 6570 template whose expansions the server can read.
        name: Its name.
        title: A display name.
        description: What its resources hold.
        mime_type: The MIME type of its resources' contents, when they share one.
        annotations: Audience, priority and lastModified hints, untrusted.
        raw: The template object exactly as the server sent it.
    """

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class ResourceResult:
    """The result of `resources/read`.

    Attributes:
        contents: What the server read: `ResourceContents` with `text`, or with `blob` as the
            decoded bytes, each naming its `uri` and `mime_type`.
        cache: The caching hint of a 2026-07-28 answer (`ttlMs`, `cacheScope`), else None.
        meta: The result's `_meta`, when present.
        raw: The result object exactly as the server sent it.
    """

    contents: tuple[ResourceContents, ...]
    cache: CacheHint | None = None
    meta: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text contents joined by newlines ("" when there are none)."""
        return "\n".join(part.text for part in self.contents if part.text is not None)


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt (`prompts/list`).

    Attributes:
        name: The argument's name.
        description: What it means, when the server says.
        required: Whether `get_prompt` must give it.
        title: A display name.
    """

    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """A prompt as the server lists it (`prompts/list`).

    Attributes:
        name: The name to get it by.
        title: A display name.
        description: What it is for.
        arguments: The arguments it takes (their values are strings on the wire).
        raw: The prompt object exactly as the server sent it.
    """

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class PromptResult:
    """The result of `prompts/get`.

    Attributes:
        messages: The messages, each a `PromptMessage` whose content is a block record
            (`TextContent`, `ImageContent`, `AudioContent`, `EmbeddedResource`,
            `ResourceLink`).
        description: A description of this rendering of the prompt, when given.
        meta: The result's `_meta`, when present.
        raw: The result object exactly as the server sent it.
    """

    messages: tuple[PromptMessage, ...]
    description: str | None = None
    meta: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text of the text messages joined by newlines ("" when there are none)."""
        return "\n".join(
            message.content.text
            for message in self.messages
            if isinstance(message.content, TextContent)
        )


@dataclass(frozen=True, slots=True)
class Completion:
    """The result of `completion/complete`.

    Attributes:
        values: The suggested values, best first (at most 100).
        total: How many values there are in all, when the server knows.
        has_more: Whether there are values beyond those sent.
    """

    values: tuple[str, ...]
    total: int | None = None
    has_more: bool = False


def _checked(result: Any, method: str, field_name: str) -> dict[str, Any]:
    # Strict, and never taking an interim answer for a final one.
    if not isinstance(result, dict) or not isinstance(result.get(field_name), list):
        raise RemoteProtocolError(f"malformed {method} result: {str(result)[:200]}")
    kind = result.get("resultType", "complete")
    if kind != "complete":
        raise RemoteProtocolError(
            f"{method} answered with resultType {kind!r}, which this client does not handle"
        )
    return result


def _text(wire: Mapping[str, Any], key: str) -> str | None:
    value = wire.get(key)
    return value if isinstance(value, str) else None


def _object(wire: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = wire.get(key)
    return value if isinstance(value, dict) else None


def list_page(result: Any, method: str, field_name: str) -> tuple[list[Any], str | None]:
    """One page of a list result: its items (still wire objects) and its `nextCursor`.

    Raises:
        RemoteProtocolError: the result is malformed or not a complete one.
    """
    result = _checked(result, method, field_name)
    cursor = result.get("nextCursor")
    return result[field_name], cursor if isinstance(cursor, str) and cursor else None


def resource_info(wire: Any) -> ResourceInfo:
    """One resource of a `resources/list` result as a `ResourceInfo`.

    Raises:
        RemoteProtocolError: the resource is not an object with a string uri and name.
    """
    if not isinstance(wire, dict) or not isinstance(wire.get("uri"), str):
        raise RemoteProtocolError(f"malformed resource in resources/list: {str(wire)[:200]}")
    size = wire.get("size")
    return ResourceInfo(
        uri=wire["uri"],
        name=_text(wire, "name") or wire["uri"],
        title=_text(wire, "title"),
        description=_text(wire, "description"),
        mime_type=_text(wire, "mimeType"),
        size=size if type(size) is int else None,
        annotations=_object(wire, "annotations"),
        raw=wire,
    )


def resource_template_info(wire: Any) -> ResourceTemplateInfo:
    """One template of a `resources/templates/list` result as a `ResourceTemplateInfo`.

    Raises:
        RemoteProtocolError: the template is not an object with a string uriTemplate.
    """
    if not isinstance(wire, dict) or not isinstance(wire.get("uriTemplate"), str):
        raise RemoteProtocolError(
            f"malformed template in resources/templates/list: {str(wire)[:200]}"
        )
    return ResourceTemplateInfo(
        uri_template=wire["uriTemplate"],
        name=_text(wire, "name") or wire["uriTemplate"],
        title=_text(wire, "title"),
        description=_text(wire, "description"),
        mime_type=_text(wire, "mimeType"),
        annotations=_object(wire, "annotations"),
        raw=wire,
    )


def _contents(wire: Any) -> ResourceContents:
    if not isinstance(wire, dict) or not isinstance(wire.get("uri"), str):
        raise RemoteProtocolError(f"malformed resource contents: {str(wire)[:200]}")
    text = wire.get("text")
    blob = wire.get("blob")
    data: dict[str, Any]
    if isinstance(text, str):
        data = {"text": text}
    elif isinstance(blob, str):
        try:
            data = {"blob": base64.b64decode(blob, validate=True)}
        except binascii.Error:
            raise RemoteProtocolError(f"resource blob is not base64: {str(wire)[:200]}") from None
    else:
        raise RemoteProtocolError(f"resource contents without text or blob: {str(wire)[:200]}")
    return ResourceContents(
        **data, uri=wire["uri"], mime_type=_text(wire, "mimeType"), meta=_object(wire, "_meta")
    )


def resource_result(result: Any) -> ResourceResult:
    """The `result` of a `resources/read` as a `ResourceResult`.

    Raises:
        RemoteProtocolError: the result is malformed, or not a complete one.
    """
    result = _checked(result, "resources/read", "contents")
    ttl = result.get("ttlMs")
    scope = result.get("cacheScope")
    cache = None
    if type(ttl) is int and ttl >= 0 and scope in ("public", "private"):
        cache = CacheHint(ttl, scope)
    return ResourceResult(
        contents=tuple(_contents(part) for part in result["contents"]),
        cache=cache,
        meta=_object(result, "_meta"),
        raw=result,
    )


def prompt_info(wire: Any) -> PromptInfo:
    """One prompt of a `prompts/list` result as a `PromptInfo`.

    Raises:
        RemoteProtocolError: the prompt is not an object with a string name.
    """
    if not isinstance(wire, dict) or not isinstance(wire.get("name"), str):
        raise RemoteProtocolError(f"malformed prompt in prompts/list: {str(wire)[:200]}")
    arguments = wire.get("arguments")
    return PromptInfo(
        name=wire["name"],
        title=_text(wire, "title"),
        description=_text(wire, "description"),
        arguments=tuple(
            PromptArgument(
                name=argument["name"],
                description=_text(argument, "description"),
                required=argument.get("required") is True,
                title=_text(argument, "title"),
            )
            for argument in (arguments if isinstance(arguments, list) else [])
            if isinstance(argument, dict) and isinstance(argument.get("name"), str)
        ),
        raw=wire,
    )


def prompt_result(result: Any) -> PromptResult:
    """The `result` of a `prompts/get` as a `PromptResult`.

    Raises:
        RemoteProtocolError: the result is malformed (a message without a known role or with
            a content block this client does not know), or not a complete one.
    """
    result = _checked(result, "prompts/get", "messages")
    messages = []
    for wire in result["messages"]:
        role = wire.get("role") if isinstance(wire, dict) else None
        block = content_block(wire.get("content")) if isinstance(wire, dict) else None
        if role not in ("user", "assistant") or not isinstance(block, CONTENT_BLOCK_TYPES):
            raise RemoteProtocolError(f"malformed prompt message: {str(wire)[:200]}")
        messages.append(PromptMessage(role, block))
    return PromptResult(
        messages=tuple(messages),
        description=_text(result, "description"),
        meta=_object(result, "_meta"),
        raw=result,
    )


def completion(result: Any) -> Completion:
    """The `result` of a `completion/complete` as a `Completion`.

    Raises:
        RemoteProtocolError: the result is malformed, or not a complete one.
    """
    if not isinstance(result, dict) or not isinstance(result.get("completion"), dict):
        raise RemoteProtocolError(f"malformed completion/complete result: {str(result)[:200]}")
    inner = _checked(result["completion"], "completion/complete", "values")
    kind = result.get("resultType", "complete")
    if kind != "complete":
        raise RemoteProtocolError(
            f"completion/complete answered with resultType {kind!r}, which this client does "
            "not handle"
        )
    total = inner.get("total")
    return Completion(
        values=tuple(str(value) for value in inner["values"]),
        total=total if type(total) is int else None,
        has_more=inner.get("hasMore") is True,
    )
