"""What the server asks the client, and what the client answers: elicitation, sampling, roots.

One record per message, shared by both halves: the server builds a request record and reads
the answer record; a client's handler receives the request record and returns the answer
record. The records are the same in both protocol eras; only the carriage differs (a request on
the connection, or an entry of `inputRequests` / `inputResponses` under 2026-07-28).

An answer is attacker-controlled input: every `from_wire()` refuses a malformed object with a
`WireFormatError` naming the field. An elicitation's outcome is one of three records
(`AcceptedElicitation`, `DeclinedElicitation`, `CancelledElicitation`), so that a tool handles
each case by its type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from .types import AudioContent, ContentBlock, ImageContent, TextContent

__all__ = [
    "ASK_METHODS",
    "AcceptedElicitation",
    "CancelledElicitation",
    "DeclinedElicitation",
    "ElicitOutcome",
    "ElicitRequest",
    "Root",
    "SamplingContent",
    "SamplingMessage",
    "SamplingRequest",
    "SamplingResult",
    "WireFormatError",
    "elicit_outcome_from_wire",
    "roots_from_wire",
    "sampling_messages",
]

T = TypeVar("T")


class WireFormatError(ValueError):
    """An object received does not have the shape its message type needs (says which field)."""


#: The requests a server may ask a client, and the client capability each needs.
ASK_METHODS: dict[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


@dataclass(frozen=True, slots=True)
class AcceptedElicitation(Generic[T]):
    """The user accepted an elicitation; `data` is the answer (validated by the server).

    A client's elicitation handler returns `AcceptedElicitation({...})` with the form's values
    (a dict), or `AcceptedElicitation(None)` for a URL-mode elicitation, which carries no data.
    """

    data: T

    def to_wire(self) -> dict[str, Any]:
        """The specification's `ElicitResult` object."""
        wire: dict[str, Any] = {"action": "accept"}
        if self.data is not None:
            wire["content"] = self.data
        return wire


@dataclass(frozen=True, slots=True)
class DeclinedElicitation:
    """The user explicitly declined to answer."""

    def to_wire(self) -> dict[str, Any]:
        """The specification's `ElicitResult` object."""
        return {"action": "decline"}


@dataclass(frozen=True, slots=True)
class CancelledElicitation:
    """The user dismissed the question without choosing (closed the dialog)."""

    def to_wire(self) -> dict[str, Any]:
        """The specification's `ElicitResult` object."""
        return {"action": "cancel"}


#: What `Context.elicit` returns and a client's elicitation handler answers with.
ElicitOutcome = AcceptedElicitation[T] | DeclinedElicitation | CancelledElicitation


def elicit_outcome_from_wire(
    result: Any,
) -> AcceptedElicitation[dict[str, Any] | None] | DeclinedElicitation | CancelledElicitation:
    """An `ElicitResult` object as its outcome record; its `content` is not checked further.

    Raises:
        WireFormatError: for anything but an object with `action` accept, decline or cancel, and an
            accepted `content` that is not an object.
    """
    if not isinstance(result, Mapping):
        raise WireFormatError("an elicitation result must be an object")
    action = result.get("action")
    if action == "decline":
        return DeclinedElicitation()
    if action == "cancel":
        return CancelledElicitation()
    if action != "accept":
        raise WireFormatError(
            f'an elicitation result needs "action": "accept", "decline" or "cancel", not {action!r}'
        )
    content = result.get("content")
    if content is not None and not isinstance(content, Mapping):
        raise WireFormatError('the "content" of an accepted elicitation must be an object')
    return AcceptedElicitation(None if content is None else dict(content))


@dataclass(frozen=True, slots=True)
class ElicitRequest:
    """An `elicitation/create` request, as a client's handler receives it.

    Attributes:
        message: What to show the user.
        requested_schema: Form mode: the flat JSON Schema of the answer (properties of string,
            number, integer, boolean and enum types); None in URL mode.
        mode: "form" (answer in the client) or "url" (the user continues at `url`).
        url: URL mode: where the user goes.
        elicitation_id: URL mode, 2025-11-25: the id that `notifications/elicitation/complete`
            names (2026-07-28 has none).
    """

    message: str
    requested_schema: dict[str, Any] | None = None
    mode: Literal["form", "url"] = "form"
    url: str | None = None
    elicitation_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The request's `params` (form mode leaves `mode` out, as 2025-06-18 clients expect)."""
        if self.mode == "url":
            wire = {"mode": "url", "message": self.message, "url": self.url}
            if self.elicitation_id is not None:
                wire["elicitationId"] = self.elicitation_id
            return wire
        return {"message": self.message, "requestedSchema": self.requested_schema or {}}

    @staticmethod
    def from_wire(params: Any) -> ElicitRequest:
        """The record of an `elicitation/create` request's `params`.

        Raises:
            WireFormatError: naming the field that is missing or of the wrong type.
        """
        if not isinstance(params, Mapping):
            raise WireFormatError("elicitation/create needs params (an object)")
        message = params.get("message")
        if not isinstance(message, str):
            raise WireFormatError('elicitation/create needs "message" (a string)')
        mode = params.get("mode", "form")
        if mode == "url":
            # 2026-07-28 removed `elicitationId` (its changelog, item 11); 2025-11-25 has it.
            url, elicitation_id = params.get("url"), params.get("elicitationId")
            if not isinstance(url, str):
                raise WireFormatError('a URL-mode elicitation needs "url" (a string)')
            if elicitation_id is not None and not isinstance(elicitation_id, str):
                raise WireFormatError('"elicitationId" must be a string')
            return ElicitRequest(message, None, "url", url, elicitation_id)
        if mode != "form":
            raise WireFormatError(f'unknown elicitation "mode" {mode!r}')
        schema = params.get("requestedSchema")
        if not isinstance(schema, Mapping):
            raise WireFormatError('a form elicitation needs "requestedSchema" (an object)')
        return ElicitRequest(message, dict(schema))


def _block_to_wire(block: ContentBlock | dict[str, Any]) -> dict[str, Any]:
    return block if isinstance(block, dict) else block.to_wire()


def _block_from_wire(wire: Any) -> TextContent | ImageContent | AudioContent | dict[str, Any]:
    """A sampling content block: text, image and audio as records, others (tool use) as dicts."""
    if not isinstance(wire, Mapping):
        raise WireFormatError("a sampling content block must be an object")
    kind = wire.get("type")
    if kind == "text" and isinstance(wire.get("text"), str):
        return TextContent(wire["text"], wire.get("annotations"), wire.get("_meta"))
    if kind in ("image", "audio"):
        data, mime = wire.get("data"), wire.get("mimeType")
        if not isinstance(data, str) or not isinstance(mime, str):
            raise WireFormatError(f'an {kind} block needs "data" and "mimeType" strings')
        cls = ImageContent if kind == "image" else AudioContent
        return cls(data, mime, wire.get("annotations"), wire.get("_meta"))
    if not isinstance(kind, str):
        raise WireFormatError('a content block needs "type" (a string)')
    return dict(wire)


SamplingContent = TextContent | ImageContent | AudioContent | dict[str, Any]


def _content_from_wire(wire: Any) -> SamplingContent | list[SamplingContent]:
    if isinstance(wire, list):
        return [_block_from_wire(item) for item in wire]
    return _block_from_wire(wire)


def _content_to_wire(content: Any) -> Any:
    if isinstance(content, (list, tuple)):
        return [_block_to_wire(block) for block in content]
    return _block_to_wire(content)


def _text_of(content: SamplingContent | list[SamplingContent]) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "".join(block.text for block in blocks if isinstance(block, TextContent))


@dataclass(frozen=True, slots=True)
class SamplingMessage:
    """One message of a sampling conversation.

    Attributes:
        role: "user" or "assistant".
        content: A text, image or audio block, or a list of blocks (2025-11-25 adds tool use
            blocks, kept as dicts).
    """

    role: Literal["user", "assistant"]
    content: SamplingContent | list[SamplingContent]

    @property
    def text(self) -> str:
        """The message's text blocks joined ("" when it has none)."""
        return _text_of(self.content)

    def to_wire(self) -> dict[str, Any]:
        """The specification's `SamplingMessage` object."""
        return {"role": self.role, "content": _content_to_wire(self.content)}

    @staticmethod
    def from_wire(wire: Any) -> SamplingMessage:
        """The record of a `SamplingMessage` object.

        Raises:
            WireFormatError: for a wrong role or malformed content.
        """
        if not isinstance(wire, Mapping):
            raise WireFormatError("a sampling message must be an object")
        role = wire.get("role")
        if role not in ("user", "assistant"):
            raise WireFormatError(
                f'a sampling message needs "role" "user" or "assistant", not {role!r}'
            )
        if "content" not in wire:
            raise WireFormatError('a sampling message needs "content"')
        return SamplingMessage(role, _content_from_wire(wire["content"]))


def sampling_messages(messages: str | SamplingMessage | Sequence[Any]) -> list[SamplingMessage]:
    """Messages as records: a string is one user text message; dicts are wire objects.

    Raises:
        WireFormatError: for an empty list or a message that is neither a record nor a wire object.
    """
    if isinstance(messages, str):
        return [SamplingMessage("user", TextContent(messages))]
    if isinstance(messages, SamplingMessage):
        return [messages]
    out = [m if isinstance(m, SamplingMessage) else SamplingMessage.from_wire(m) for m in messages]
    if not out:
        raise WireFormatError("sampling needs at least one message")
    return out


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A `sampling/createMessage` request, as a client's handler receives it.

    Attributes:
        messages: The conversation so far.
        max_tokens: The most tokens the client's model may produce.
        system_prompt: A system prompt the server suggests.
        model_preferences: The server's `ModelPreferences` object (hints, priorities), as sent.
        temperature: Sampling temperature.
        stop_sequences: Sequences that end the generation.
        include_context: "none", "thisServer" or "allServers" (soft-deprecated in 2025-11-25).
        metadata: Provider-specific metadata, passed through.
    """

    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | None = None
    model_preferences: dict[str, Any] | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    metadata: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The request's `params`, optional fields left out when unset."""
        wire: dict[str, Any] = {
            "messages": [m.to_wire() for m in self.messages],
            "maxTokens": self.max_tokens,
        }
        optional = {
            "systemPrompt": self.system_prompt,
            "modelPreferences": self.model_preferences,
            "temperature": self.temperature,
            "stopSequences": self.stop_sequences,
            "includeContext": self.include_context,
            "metadata": self.metadata,
        }
        wire.update((k, v) for k, v in optional.items() if v is not None)
        return wire

    @staticmethod
    def from_wire(params: Any) -> SamplingRequest:
        """The record of a `sampling/createMessage` request's `params`.

        Raises:
            WireFormatError: naming the field that is missing or of the wrong type.
        """
        if not isinstance(params, Mapping):
            raise WireFormatError("sampling/createMessage needs params (an object)")
        messages = params.get("messages")
        if not isinstance(messages, list):
            raise WireFormatError('sampling/createMessage needs "messages" (an array)')
        max_tokens = params.get("maxTokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
            raise WireFormatError('sampling/createMessage needs "maxTokens" (an integer)')
        system = params.get("systemPrompt")
        preferences = params.get("modelPreferences")
        temperature = params.get("temperature")
        stops = params.get("stopSequences")
        include = params.get("includeContext")
        metadata = params.get("metadata")
        return SamplingRequest(
            [SamplingMessage.from_wire(m) for m in messages],
            max_tokens,
            system if isinstance(system, str) else None,
            dict(preferences) if isinstance(preferences, Mapping) else None,
            float(temperature) if isinstance(temperature, (int, float)) else None,
            [s for s in stops if isinstance(s, str)] if isinstance(stops, list) else None,
            include if include in ("none", "thisServer", "allServers") else None,
            dict(metadata) if isinstance(metadata, Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class SamplingResult:
    """The client's answer to `sampling/createMessage`: one message from its model.

    Attributes:
        content: A text, image or audio block, or a list of blocks.
        model: The model that wrote it.
        stop_reason: Why it stopped ("endTurn", "stopSequence", "maxTokens", or another).
        role: Always "assistant" in practice.
    """

    content: SamplingContent | list[SamplingContent]
    model: str
    stop_reason: str | None = None
    role: Literal["user", "assistant"] = "assistant"

    @property
    def text(self) -> str:
        """The answer's text blocks joined ("" when it has none)."""
        return _text_of(self.content)

    def to_wire(self) -> dict[str, Any]:
        """The specification's `CreateMessageResult` object."""
        wire: dict[str, Any] = {
            "role": self.role,
            "content": _content_to_wire(self.content),
            "model": self.model,
        }
        if self.stop_reason is not None:
            wire["stopReason"] = self.stop_reason
        return wire

    @staticmethod
    def from_wire(result: Any) -> SamplingResult:
        """The record of a `CreateMessageResult` object.

        Raises:
            WireFormatError: naming the field that is missing or of the wrong type.
        """
        if not isinstance(result, Mapping):
            raise WireFormatError("a sampling result must be an object")
        message = SamplingMessage.from_wire(result)
        model = result.get("model")
        if not isinstance(model, str):
            raise WireFormatError('a sampling result needs "model" (a string)')
        stop = result.get("stopReason")
        return SamplingResult(
            message.content, model, stop if isinstance(stop, str) else None, message.role
        )


@dataclass(frozen=True, slots=True)
class Root:
    """A root the client exposes: a `file://` URI and an optional name."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = field(default=None, compare=False)

    def to_wire(self) -> dict[str, Any]:
        """The specification's `Root` object."""
        wire: dict[str, Any] = {"uri": self.uri}
        if self.name is not None:
            wire["name"] = self.name
        if self.meta:
            wire["_meta"] = self.meta
        return wire


def roots_from_wire(result: Any) -> list[Root]:
    """The roots of a `ListRootsResult` object.

    Raises:
        WireFormatError: for a result without a `roots` array, or a root without a string `uri`.
    """
    if not isinstance(result, Mapping) or not isinstance(result.get("roots"), list):
        raise WireFormatError('a roots/list result needs "roots" (an array)')
    roots = []
    for wire in result["roots"]:
        if not isinstance(wire, Mapping) or not isinstance(wire.get("uri"), str):
            raise WireFormatError('every root needs "uri" (a string)')
        name = wire.get("name")
        meta = wire.get("_meta")
        roots.append(
            Root(
                wire["uri"],
                name if isinstance(name, str) else None,
                dict(meta) if isinstance(meta, Mapping) else None,
            )
        )
    return roots
