"""`ResultSizeLimit`: results over a size are cut, with a note saying so, in a valid shape.

The size is that of the result object as JSON (UTF-8 bytes), what the transport sends less
the JSON-RPC envelope. A result over `max_bytes` keeps a prefix of its items that fits, and
says what happened in a note the model reads ("...truncated: the result was 123,456 bytes,
over the 100,000 limit"):

- a tool's result: its `content` blocks in order while they fit; the first that does not is
  cut at a character boundary if it is text (a text block, or an embedded text resource) and
  left out otherwise (an image cannot be cut), and so are the blocks after it; the note is a
  text block of its own, last. `structuredContent` is kept whole when it fits beside the note
  (a tool's text mirror of it is what gets cut), and left out when it does not; a tool that
  declares an output schema then answers `isError: true` (a result without structured
  content would break its schema, and clients check it);
- a read: its `contents` the same way (text cut, blobs left out), the note an item of its own
  (`text/plain`, the URI read);
- a prompt: its `messages` the same way, the note a last user message.

Only finished results are looked at: a 2026-07-28 `input_required` round passes as it is (a
call that becomes a task is cut inside the task, its final result). Measuring costs one JSON
encoding of each result (the transport encodes it again), so the limit costs about what
sending the result costs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .._core.jsonrpc import dumps
from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest

__all__ = ["ResultSizeLimit"]

# 100,000 bytes: Claude Code refuses MCP tool output over 25,000 tokens by default
# (MAX_MCP_OUTPUT_TOKENS), about 100 KB of English text at 4 characters a token; a result
# larger than that fills a model's context instead of informing it.
DEFAULT_MAX_RESULT_BYTES: Final = 100_000
# Room for the note and a result's own fields: a smaller limit could not hold them.
_MIN_BYTES: Final = 1024
# Keys every result keeps however small the room (2026-07-28 requires them).
_REQUIRED: Final = frozenset({"isError", "resultType", "ttlMs", "cacheScope"})

_Cut = Callable[[dict[str, Any], int], dict[str, Any] | None]


def _size(value: Any) -> int:
    return len(dumps(value))


def _cut_string(text: str, room: int) -> str:
    """The longest prefix of `text` whose JSON string takes at most `room` bytes."""
    low, high = 0, min(len(text), room)  # a character takes a byte at least
    while low < high:
        middle = (low + high + 1) // 2
        if _size(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _cut_field(item: dict[str, Any], key: str, room: int) -> dict[str, Any] | None:
    """`item` with its string `key` cut to fit `room` bytes in all; None when nothing fits."""
    overhead = _size({**item, key: ""})
    if overhead >= room:
        return None
    cut = _cut_string(item[key], room - overhead + 2)  # +2: the empty string's quotes
    return {**item, key: cut} if cut else None


def _cut_block(block: dict[str, Any], room: int) -> dict[str, Any] | None:
    """A content block cut to `room` bytes: text, or an embedded text resource."""
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return _cut_field(block, "text", room)
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict):
        if not isinstance(resource.get("text"), str):
            return None
        inner = _cut_field(resource, "text", room - _size({**block, "resource": {}}) + 2)
        return None if inner is None else {**block, "resource": inner}
    return None


def _cut_contents(item: dict[str, Any], room: int) -> dict[str, Any] | None:
    if isinstance(item.get("text"), str):
        return _cut_field(item, "text", room)
    return None  # a blob: cut, it would decode to a broken file


def _cut_message(message: dict[str, Any], room: int) -> dict[str, Any] | None:
    content = message.get("content")
    if not isinstance(content, dict):
        return None
    block = _cut_block(content, room - _size({**message, "content": {}}) + 2)
    return None if block is None else {**message, "content": block}


def _fill(
    shell: dict[str, Any], key: str, items: list[Any], max_bytes: int, cut: _Cut
) -> dict[str, Any]:
    """`shell` (whose `key` holds the note alone) with a prefix of `items` before the note."""
    room = max_bytes - _size(shell)
    kept: list[Any] = []
    for item in items:
        cost = _size(item) + 1  # and a comma
        if cost <= room:
            kept.append(item)
            room -= cost
            continue
        if isinstance(item, dict):
            part = cut(item, room - 1)
            if part is not None:
                kept.append(part)
        break
    shell[key] = kept + shell[key]
    return shell


class ResultSizeLimit(Middleware):
    """Cut tool results, reads and prompts over `max_bytes` of JSON (module docstring).

    Args:
        max_bytes: The largest result sent whole (1,024 at least).
        tools: Limit `tools/call` results.
        resources: Limit `resources/read` results.
        prompts: Limit `prompts/get` results.
    """

    inline = True  # its hooks never wait: calls answered at once stay on the reader

    def __init__(
        self,
        max_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        *,
        tools: bool = True,
        resources: bool = True,
        prompts: bool = True,
    ) -> None:
        if max_bytes < _MIN_BYTES:
            raise ValueError(f"max_bytes must be {_MIN_BYTES} or more (room for the note)")
        self.max_bytes = max_bytes
        self.tools = tools
        self.resources = resources
        self.prompts = prompts

    def _over(self, limited: bool, result: dict[str, Any], key: str) -> int | None:
        """The size of a result to cut: limited, with its `key`, over `max_bytes`; else None."""
        if not limited or key not in result:
            return None
        size = _size(result)
        return size if size > self.max_bytes else None

    def _note(self, size: int) -> str:
        return f"...truncated: the result was {size:,} bytes, over the {self.max_bytes:,} limit"

    def _shell(
        self,
        result: dict[str, Any],
        key: str,
        note: Any,
        drop: tuple[str, ...] = (),
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`result` without `key` and `drop`, with `extra`, `key` holding the note alone.

        A result whose own fields leave no room (a huge `_meta`) keeps the required ones only.
        """
        shell = {k: v for k, v in result.items() if k != key and k not in drop}
        shell.update(extra or {})
        shell[key] = [note]
        if _size(shell) > self.max_bytes:
            shell = {k: v for k, v in shell.items() if k in _REQUIRED or k == key}
        return shell

    async def on_call_tool(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Cut a tool's result that is too large."""
        result = await call_next(request)
        size = self._over(self.tools, result, "content")  # no content: an input_required round
        if size is None:
            return result
        note = self._note(size)
        drop = ("structuredContent",)
        shell = self._shell(result, "content", {"type": "text", "text": note}, drop)
        structured = result.get("structuredContent")
        if structured is not None:
            kept = {**shell, "structuredContent": structured}
            if _size(kept) <= self.max_bytes:
                shell = kept
            else:
                # No structured result: a tool that declares an output schema does not meet it.
                failed = getattr(request.target, "output_schema", None) is not None
                text = f"{note} (structuredContent left out)"
                block = {"type": "text", "text": text}
                shell = self._shell(
                    result, "content", block, drop, {"isError": True} if failed else None
                )
        return _fill(shell, "content", list(result["content"]), self.max_bytes, _cut_block)

    async def on_read_resource(
        self, request: ResolvedRequest, call_next: CallNext
    ) -> dict[str, Any]:
        """Cut a read's contents that are too large."""
        result = await call_next(request)
        size = self._over(self.resources, result, "contents")
        if size is None:
            return result
        note = {"uri": request.name or "", "mimeType": "text/plain", "text": self._note(size)}
        shell = self._shell(result, "contents", note)
        return _fill(shell, "contents", list(result["contents"]), self.max_bytes, _cut_contents)

    async def on_get_prompt(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Cut a prompt's messages that are too large."""
        result = await call_next(request)
        size = self._over(self.prompts, result, "messages")
        if size is None:
            return result
        note = {"role": "user", "content": {"type": "text", "text": self._note(size)}}
        shell = self._shell(result, "messages", note)
        return _fill(shell, "messages", list(result["messages"]), self.max_bytes, _cut_message)
