"""How the `trio-mcp` client commands answer what a server asks: elicitation, sampling, roots.

On a terminal, an elicitation shows the server's message, then each field of the form in turn on
stderr, read a line at a time from stdin: its title, description, default (Enter keeps it) and,
for a choice, the numbered options; a line is read as the field's type says (`read_value`):
numbers checked against their bounds, booleans as y/n, several choices comma-separated, by
number, value or title. A line that does not fit says why and asks again. `!decline` at any
prompt declines; Ctrl-D (end of input) and Ctrl-C cancel, and Ctrl-C stops nothing else while a
question is open.

Sampling is declared only when a sampling command is given (without one a tool knows not to ask,
and may fall back, in both eras); the command runs with the conversation as text on stdin
(`conversation_text`), and its stdout, trimmed, is the model's answer, from the model
"command:<program>"; a command that fails fails the request with its exit code. `--root PATH`
exposes each PATH as a `file://` URI of its absolute path, named after its last part.

The parsing and rendering are plain functions (`form_fields`, `read_value`, `field_lines`,
`conversation_text`), tested without a terminal; `TerminalElicitor` does the I/O.

Rule 1: an elicitation is put to the user only on a terminal (stdin and stderr both TTYs).
        Without one there is no one to ask, and the answer is a decline (with a line on stderr
        saying so), never a guess.
Rule 2: one question at a time: elicitations that arrive together wait for each other, so two
        forms never share the terminal.
Rule 3: a URL-mode elicitation shows the URL, never opened for the user (spec 2025-11-25), and
        waits for Enter, which accepts.
"""

from __future__ import annotations

import datetime
import math
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO
from urllib.parse import urlsplit

import trio

from .._core.asking import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitRequest,
    Root,
    SamplingMessage,
    SamplingRequest,
    SamplingResult,
)
from .._core.types import AudioContent, ImageContent, TextContent
from ._interrupts import Interrupted, interruptible

__all__ = [
    "DECLINE",
    "NOTHING",
    "CommandSampler",
    "FormField",
    "InvalidAnswerError",
    "TerminalElicitor",
    "conversation_text",
    "field_lines",
    "form_fields",
    "read_value",
    "roots_from_paths",
]


#: Typed at any prompt, declines the elicitation.
DECLINE: Final = "!decline"
# Bytes read from stdin at once.
_READ_SIZE: Final = 4096
_YES: Final = frozenset({"y", "yes", "true", "1"})
_NO: Final = frozenset({"n", "no", "false", "0"})
#: A field's default when it has none, and the value of an optional field left empty.
NOTHING: Final = object()


class InvalidAnswerError(ValueError):
    """A line that does not fit its field; the message says what would."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of an elicited form, as the terminal asks it.

    Attributes:
        name: The property's name (the answer's key).
        label: Its title, or its name.
        kind: "string", "number", "integer", "boolean", "choice" (one) or "choices" (several).
        required: Whether the form requires it.
        description: What the server says of it.
        default: The schema's default, or `NOTHING`.
        options: For choices: (value, title) pairs, in order.
        schema: The property's schema (bounds, format).
    """

    name: str
    label: str
    kind: str
    required: bool
    description: str | None
    default: Any
    options: tuple[tuple[str, str], ...]
    schema: Mapping[str, Any]

    @property
    def has_default(self) -> bool:
        """Whether the schema gives a default."""
        return self.default is not NOTHING


def form_fields(schema: Mapping[str, Any] | None) -> list[FormField]:
    """The fields of a form's `requestedSchema`, in the order the server listed them."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    wanted = set(required) if isinstance(required, list) else set()
    fields = []
    for name, prop in (properties if isinstance(properties, Mapping) else {}).items():
        if not isinstance(prop, Mapping):
            continue
        title, description = prop.get("title"), prop.get("description")
        fields.append(
            FormField(
                name=str(name),
                label=title if isinstance(title, str) and title else str(name),
                kind=_kind(prop),
                required=name in wanted,
                description=description if isinstance(description, str) else None,
                default=prop.get("default", NOTHING),
                options=_options(prop),
                schema=prop,
            )
        )
    return fields


def _kind(prop: Mapping[str, Any]) -> str:
    if prop.get("type") == "array":
        return "choices"
    if "enum" in prop or "oneOf" in prop:
        return "choice"
    kind = prop.get("type")
    return kind if kind in ("number", "integer", "boolean") else "string"


def _options(prop: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    # The spec's enum shapes (2025-11-25, SEP-1330): untitled `enum`, legacy `enum` with
    # `enumNames`, titled `oneOf` of {const, title}; for several choices the same under `items`
    # (`enum`, or `anyOf` of {const, title}).
    source = prop.get("items") if prop.get("type") == "array" else prop
    if not isinstance(source, Mapping):
        return ()
    titled = source.get("oneOf") or source.get("anyOf")
    if isinstance(titled, list):
        return tuple(
            (str(item["const"]), str(item.get("title", item["const"])))
            for item in titled
            if isinstance(item, Mapping) and "const" in item
        )
    values = source.get("enum")
    if not isinstance(values, list):
        return ()
    names = source.get("enumNames")
    if isinstance(names, list) and len(names) == len(values):
        return tuple((str(v), str(n)) for v, n in zip(values, names, strict=True))
    return tuple((str(v), str(v)) for v in values)


def field_lines(field: FormField) -> list[str]:
    """What the terminal shows before the prompt of `field`."""
    head = field.label + (" (required)" if field.required else "")
    if field.description:
        head += f": {field.description}"
    lines = [head]
    hint = _hint(field)
    if hint:
        lines.append(f"  {hint}")
    for number, (value, title) in enumerate(field.options, 1):
        lines.append(f"  {number}) {title}" + (f" [{value}]" if title != value else ""))
    return lines


def _hint(field: FormField) -> str:
    schema = field.schema
    if field.kind == "boolean":
        return "yes or no (y/n)"
    if field.kind == "choice":
        return "choose one: its number, value or title"
    if field.kind == "choices":
        bounds = _bounds(schema, "minItems", "maxItems", "choices")
        return "choose any, comma-separated" + (f" ({bounds})" if bounds else "")
    if field.kind in ("number", "integer"):
        bounds = _bounds(schema, "minimum", "maximum", "")
        return ("a whole number" if field.kind == "integer" else "a number") + (
            f" ({bounds})" if bounds else ""
        )
    parts = []
    fmt = schema.get("format")
    if isinstance(fmt, str):
        parts.append(_FORMATS.get(fmt, f"format {fmt}"))
    bounds = _bounds(schema, "minLength", "maxLength", "characters")
    if bounds:
        parts.append(bounds)
    return ", ".join(parts)


# How each string format of the spec is named to the user.
_FORMATS: Final = {
    "email": "an email address",
    "uri": "a URI",
    "date": "a date, 2025-01-31",
    "date-time": "a date and time, 2025-01-31T12:00:00",
}


def _bounds(schema: Mapping[str, Any], low_key: str, high_key: str, unit: str) -> str:
    low, high = schema.get(low_key), schema.get(high_key)
    unit = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{_show(low)} to {_show(high)}{unit}"
    if low is not None:
        return f"at least {_show(low)}{unit}"
    if high is not None:
        return f"at most {_show(high)}{unit}"
    return ""


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_show(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def prompt_text(field: FormField) -> str:
    """The prompt itself: the default in brackets when there is one."""
    if field.kind == "boolean" and field.has_default:
        return "[Y/n] > " if field.default is True else "[y/N] > "
    return f"[{_show(field.default)}] > " if field.has_default else "> "


def read_value(field: FormField, text: str) -> Any:
    """The value a line gives `field`; `NOTHING` for an optional field left empty.

    Raises:
        InvalidAnswerError: for a line that does not fit (says what would), or an empty line for a
            required field without a default.
    """
    text = text.strip()
    if not text:
        if field.has_default:
            return field.default
        if field.required:
            raise InvalidAnswerError("this field is required")
        return NOTHING
    reader = _READERS[field.kind]
    return reader(field, text)


def _read_string(field: FormField, text: str) -> str:
    schema = field.schema
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        raise InvalidAnswerError(f"at least {low} characters, please")
    if isinstance(high, int) and len(text) > high:
        raise InvalidAnswerError(f"at most {high} characters, please")
    fmt = schema.get("format")
    if fmt == "email" and ("@" not in text or text.startswith("@") or text.endswith("@")):
        raise InvalidAnswerError("that is not an email address")
    if fmt == "uri" and not urlsplit(text).scheme:
        raise InvalidAnswerError("that is not a URI (it needs a scheme, such as https:)")
    try:
        if fmt == "date":
            datetime.date.fromisoformat(text)
        elif fmt == "date-time":
            datetime.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidAnswerError(f"that is not {_hint(field)}") from None
    return text


def _read_number(field: FormField, text: str) -> int | float:
    try:
        value: int | float = int(text) if field.kind == "integer" else float(text)
    except ValueError:
        raise InvalidAnswerError(f"that is not {_hint(field).split(' (')[0]}") from None
    if not math.isfinite(value):
        raise InvalidAnswerError("that is not a finite number")
    low, high = field.schema.get("minimum"), field.schema.get("maximum")
    if isinstance(low, int | float) and value < low:
        raise InvalidAnswerError(f"at least {_show(low)}, please")
    if isinstance(high, int | float) and value > high:
        raise InvalidAnswerError(f"at most {_show(high)}, please")
    if field.kind == "number" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _read_boolean(field: FormField, text: str) -> bool:
    word = text.lower()
    if word in _YES:
        return True
    if word in _NO:
        return False
    raise InvalidAnswerError("answer y or n")


def _choose(field: FormField, text: str) -> str:
    if text.isdigit() and 1 <= int(text) <= len(field.options):
        return field.options[int(text) - 1][0]
    folded = text.casefold()
    for value, title in field.options:
        if text == value or folded in (value.casefold(), title.casefold()):
            return value
    if not field.options:
        return text
    raise InvalidAnswerError(f"{text!r} is not one of the choices; give its number")


def _read_choices(field: FormField, text: str) -> list[str]:
    chosen: list[str] = []
    for part in text.split(","):
        if part.strip():
            value = _choose(field, part.strip())
            if value not in chosen:
                chosen.append(value)
    low, high = field.schema.get("minItems"), field.schema.get("maxItems")
    if isinstance(low, int) and len(chosen) < low:
        raise InvalidAnswerError(f"choose at least {low}")
    if isinstance(high, int) and len(chosen) > high:
        raise InvalidAnswerError(f"choose at most {high}")
    return chosen


_READERS: Final[dict[str, Callable[[FormField, str], Any]]] = {
    "string": _read_string,
    "number": _read_number,
    "integer": _read_number,
    "boolean": _read_boolean,
    "choice": _choose,
    "choices": _read_choices,
}


# -- the terminal ---------------------------------------------------------------------------------


class _Cancel(Exception):  # noqa: N818 - control flow: the user ended the form
    pass


class _Decline(Exception):  # noqa: N818 - control flow: the user declined
    pass


class _LineReader:
    """Lines from a file descriptor, read without a thread.

    It waits until the descriptor is readable, then reads what is there: a terminal in its
    usual line mode has a whole line by then, or the end of input.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""

    async def line(self) -> str:
        """The next line, without its line break.

        Raises:
            _Cancel: at the end of input (Ctrl-D), even after part of a line.
        """
        while b"\n" not in self._buffer:
            await trio.lowlevel.wait_readable(self._fd)
            chunk = os.read(self._fd, _READ_SIZE)
            if not chunk:
                self._buffer = b""
                raise _Cancel
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")


def on_a_terminal() -> bool:
    """Whether there is someone to ask: stdin and stderr are both terminals (Rule 1)."""
    try:
        return os.isatty(sys.stdin.fileno()) and os.isatty(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        return False


class TerminalElicitor:
    """Answers elicitations by asking the user on a terminal, or declines without one.

    Args:
        interactive: Whether to ask (default: `on_a_terminal()`, Rule 1).
        out: Where questions go (stderr).
        fd: Where answers are read from (stdin).

    Attributes:
        server_name: How the server is named to the user (set once it is known).
    """

    def __init__(
        self,
        *,
        interactive: bool | None = None,
        out: TextIO | None = None,
        fd: int | None = None,
    ) -> None:
        self.server_name = "the server"
        self._interactive = on_a_terminal() if interactive is None else interactive
        self._out = out
        self._fd = fd
        self._reader: _LineReader | None = None
        self._lock = trio.Lock()  # Rule 2

    def _say(self, text: str = "") -> None:
        out = self._out or sys.stderr
        print(text, file=out, flush=True)

    async def __call__(
        self, request: ElicitRequest
    ) -> AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation:
        """Ask the user (Rule 1), one elicitation at a time (Rule 2)."""
        who = self.server_name
        if not self._interactive:
            self._say(f"trio-mcp: {who} asks: {request.message}")
            self._say("trio-mcp: declined: there is no terminal to ask on")
            return DeclinedElicitation()
        async with self._lock:
            if self._reader is None:
                self._reader = _LineReader(sys.stdin.fileno() if self._fd is None else self._fd)
            ask = self._url if request.mode == "url" else self._form
            try:
                return await interruptible(lambda: ask(who, request))
            except _Decline:
                self._say("(declined)")
                return DeclinedElicitation()
            except (_Cancel, Interrupted):
                self._say("\n(cancelled)")
                return CancelledElicitation()

    async def _form(self, who: str, request: ElicitRequest) -> AcceptedElicitation[dict[str, Any]]:
        self._say(f"\n{who} asks: {request.message}")
        self._say(f"(Enter keeps the [default]; {DECLINE} declines; Ctrl-D or Ctrl-C cancels)")
        answers: dict[str, Any] = {}
        for field in form_fields(request.requested_schema):
            self._say()
            for line in field_lines(field):
                self._say(line)
            while True:
                text = await self._ask(prompt_text(field))
                try:
                    value = read_value(field, text)
                except InvalidAnswerError as exc:
                    self._say(f"  {exc}")
                    continue
                if value is not NOTHING:
                    answers[field.name] = value
                break
        return AcceptedElicitation(answers)

    async def _url(self, who: str, request: ElicitRequest) -> AcceptedElicitation[None]:
        self._say(f"\n{who} asks you to continue in your browser: {request.message}")
        self._say(f"  {request.url}")
        self._say(
            "(it is not opened for you; open it yourself if you trust it, then press Enter; "
            f"{DECLINE} declines; Ctrl-D or Ctrl-C cancels)"
        )
        await self._ask("> ")
        return AcceptedElicitation(None)

    async def _ask(self, prompt: str) -> str:
        out = self._out or sys.stderr
        out.write(prompt)
        out.flush()
        assert self._reader is not None
        text = await self._reader.line()
        if text.strip().lower() == DECLINE:
            raise _Decline
        return text


# -- sampling -------------------------------------------------------------------------------------


def _block_text(block: Any) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        media = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{media} {block.mime_type}]"
    kind = block.get("type") if isinstance(block, Mapping) else None
    return f"[{kind or 'content'}]"


def _message_text(message: SamplingMessage) -> str:
    blocks = message.content if isinstance(message.content, list) else [message.content]
    return "\n".join(_block_text(block) for block in blocks)


def conversation_text(request: SamplingRequest) -> str:
    """The conversation as the sampling command reads it.

    One `role: text` paragraph a message, after a `system:` one for the system prompt.
    """
    parts = []
    if request.system_prompt:
        parts.append(f"system: {request.system_prompt}")
    parts += [f"{m.role}: {_message_text(m)}" for m in request.messages]
    return "\n\n".join(parts) + "\n"


class CommandSampler:
    """Answers sampling requests with a command.

    The command gets the conversation on stdin and `TRIO_MCP_MAX_TOKENS` in its environment;
    its stderr goes to ours.

    Raises:
        ValueError: for an empty command.
    """

    def __init__(self, command: str) -> None:
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("--sampling-command is empty")
        self.model = f"command:{self.argv[0]}"

    async def __call__(self, request: SamplingRequest) -> SamplingResult:
        """Run the command once for this request."""
        env = {**os.environ, "TRIO_MCP_MAX_TOKENS": str(request.max_tokens)}
        try:
            done = await trio.run_process(
                self.argv,
                stdin=conversation_text(request).encode(),
                capture_stdout=True,
                check=False,
                env=env,
            )
        except OSError as exc:
            raise RuntimeError(f"cannot run the sampling command {self.argv[0]!r}: {exc}") from exc
        if done.returncode != 0:
            raise RuntimeError(
                f"the sampling command {self.argv[0]!r} failed with exit code {done.returncode}"
            )
        text = done.stdout.decode("utf-8", "replace").strip()
        return SamplingResult(TextContent(text), self.model, "endTurn")


# -- roots ----------------------------------------------------------------------------------------


def roots_from_paths(paths: Sequence[str]) -> list[Root]:
    """`--root` paths as roots."""
    roots = []
    for given in paths:
        path = Path(given).expanduser().resolve()
        roots.append(Root(path.as_uri(), path.name or str(path)))
    return roots
