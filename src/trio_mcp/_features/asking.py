"""Asking the client from inside a call: the same tool code in both protocol eras.

A question is an `Ask`: a method, its params, the capability it needs, the key it is filed
under, and how to read the answer. `await ask` asks it alone; `Context.gather` asks several in
one round. The `Context` decides how it travels, not the tool: up to 2025-11-25 each ask is a
real request to the client on the connection (or the call's own SSE stream), awaited with a
timeout; under 2026-07-28 it is an entry of an `input_required` result (`AskBook`).

2026-07-28 (multi round-trip requests): the call runs from the start on every round. An ask
whose key has an answer (from this round's `inputResponses`, or earlier rounds' carried in the
sealed `requestState`) returns it at once; the first one without ends the attempt
(`InputRequired`, a BaseException so that a tool's `except Exception` does not swallow it), and
the server answers `input_required` with every ask still open in that round and the answers so
far sealed into a new `requestState`. Keys are the caller's (`key=`) or numbered in asking order
("elicitation-1", "sampling-2"...): a tool must ask in the same order on every run, and do
nothing it cannot repeat before its last question (ask first, or make the step idempotent).

An answer is attacker-controlled: it is read with the records' `from_wire` and an elicitation's
content is validated against the answer type; a malformed one raises `AnswerInvalidError`
(-32602) and never reaches the tool as data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from .._core.asking import (
    ASK_METHODS,
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    WireFormatError,
    elicit_outcome_from_wire,
)
from .._core.jsonrpc import INVALID_PARAMS
from .._exceptions import RemoteProtocolError

if TYPE_CHECKING:  # pydantic loads when an answer type is first compiled, not with the context
    from pydantic import TypeAdapter
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import core_schema

__all__ = [
    "AnswerInvalidError",
    "Ask",
    "AskBook",
    "Choices",
    "ElicitForm",
    "InputRequired",
    "elicit_form",
]

T = TypeVar("T")
_MISSING: Final = object()


class AnswerInvalidError(RemoteProtocolError):
    """The client's answer to an ask is malformed: -32602 under 2026-07-28."""

    def __init__(self, key: str, why: str) -> None:
        super().__init__(
            f"Invalid params: the answer to {key!r} is malformed: {why}", INVALID_PARAMS
        )
        self.key = key


class InputRequired(BaseException):
    """Ends a 2026-07-28 attempt at its first unanswered ask; no `except Exception` stops it."""


@dataclass(frozen=True, slots=True)
class Choices:
    """Titles for the values of a string field: a titled single- or multi-select (SEP-1330).

    ```python
    side: Annotated[str, Choices({"imperium": "The Imperium", "chaos": "Chaos"})]
    allies: Annotated[list[str], Choices({"eldar": "Aeldari", "tau": "T'au Empire"})]
    ```

    The value must be one of the keys; the client shows the titles.
    """

    titles: Mapping[str, str]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: Callable[[Any], core_schema.CoreSchema]
    ) -> core_schema.CoreSchema:
        from pydantic_core import core_schema  # noqa: PLC0415 - pydantic is calling us

        allowed = tuple(self.titles)

        def check(value: Any) -> Any:
            values = value if isinstance(value, list) else [value]
            for item in values:
                if item not in allowed:
                    raise ValueError(f"{item!r} is not one of {', '.join(allowed)}")
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: Callable[[Any], JsonSchemaValue]
    ) -> JsonSchemaValue:
        value = handler(schema)
        options = [{"const": k, "title": v} for k, v in self.titles.items()]
        if value.get("type") == "array":
            value["items"] = {"anyOf": options}
        else:
            value["oneOf"] = options
        return value


@dataclass(frozen=True, slots=True)
class ElicitForm:
    """A form elicitation's answer type, compiled: its schema and its validator."""

    schema: dict[str, Any]
    validate: Callable[[Any], Any]


_FORMS: dict[Any, ElicitForm] = {}
_FORMATS: Final = frozenset({"email", "uri", "date", "date-time"})
_KEYS: Final = {
    "string": {"type", "title", "description", "minLength", "maxLength", "format", "default"},
    "number": {"type", "title", "description", "minimum", "maximum", "default"},
    "integer": {"type", "title", "description", "minimum", "maximum", "default"},
    "boolean": {"type", "title", "description", "default"},
    "enum": {"type", "title", "description", "enum", "oneOf", "enumNames", "default"},
    "array": {"type", "title", "description", "items", "minItems", "maxItems", "default"},
}


def elicit_form(answer: Any) -> ElicitForm:
    """The compiled form of an answer type, or of a raw JSON Schema dict.

    An answer type is a pydantic model, a dataclass or a TypedDict of the flat fields the spec
    allows (string, with the formats email, uri, date and date-time; number; integer; boolean;
    single- and multi-select enums, titled through `Choices`); defaults become the schema's
    `default` (SEP-1034). Any other shape fails the first time the type is used.

    A raw schema (a dict) is sent as given and its answers come back as dicts, checked only
    for being an object; a type's answers are validated into the type.

    Raises:
        TypeError: for a type the elicitation schema cannot express, naming the field.
    """
    if isinstance(answer, Mapping):
        if answer.get("type") != "object" or not isinstance(answer.get("properties"), Mapping):
            raise TypeError(
                'a raw elicitation schema must be {"type": "object", "properties": ...}'
            )
        return ElicitForm(dict(answer), dict)
    try:
        found = _FORMS.get(answer)
    except TypeError:  # unhashable
        found = None
    if found is not None:
        return found
    name = getattr(answer, "__name__", repr(answer))
    from pydantic import TypeAdapter  # noqa: PLC0415 - see the TYPE_CHECKING import

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(answer)
        raw = adapter.json_schema()
    except Exception as exc:
        raise TypeError(f"{name} cannot be an elicitation answer: {exc}") from None
    if raw.get("type") != "object" or "properties" not in raw:
        raise TypeError(
            f"{name} cannot be an elicitation answer: use a pydantic model, a dataclass or a "
            "TypedDict of flat fields"
        )
    defs = raw.get("$defs", {})
    properties = {
        key: _flat_field(name, key, value, defs) for key, value in raw["properties"].items()
    }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if raw.get("required"):
        schema["required"] = list(raw["required"])

    def validate(content: Any) -> Any:
        return adapter.validate_python(content)

    form = ElicitForm(schema, validate)
    with contextlib.suppress(TypeError):  # an unhashable type is compiled on every use
        _FORMS[answer] = form
    return form


def _flat_field(
    owner: str, key: str, value: dict[str, Any], defs: dict[str, Any]
) -> dict[str, Any]:
    def fail(why: str) -> TypeError:
        return TypeError(
            f"{owner}.{key} cannot be asked for in an elicitation: {why} (allowed: str, int, "
            "float, bool, date, datetime, an Enum or Literal of strings, a list of those, "
            "optionally with a default)"
        )

    value = _resolved(value, defs)
    if "anyOf" in value and "type" not in value:  # Optional[X]: X, with null left out
        options = [_resolved(v, defs) for v in value["anyOf"] if v.get("type") != "null"]
        if len(options) != 1:
            raise fail("a union of several types")
        rest = {k: v for k, v in value.items() if k != "anyOf"}
        value = {**options[0], **rest}
        if value.get("default", _MISSING) is None:
            del value["default"]
    if value.get("title") == key.replace("_", " ").title():
        del value["title"]  # pydantic's generated title says nothing the key does not
    kind = value.get("type")
    if kind == "string" and ("enum" in value or "oneOf" in value):
        allowed = _KEYS["enum"]
        if not all(isinstance(v, str) for v in value.get("enum", [])):
            raise fail("an enum of non-string values")
    elif kind == "array":
        items = _resolved(value.get("items", {}), defs)
        if not (items.get("type") == "string" and "enum" in items) and "anyOf" not in items:
            raise fail("a list of anything but enum strings")
        value["items"] = {k: v for k, v in items.items() if k in ("type", "enum", "anyOf")}
        allowed = _KEYS["array"]
    elif kind in _KEYS:
        allowed = _KEYS[kind]
        if kind == "string" and "format" in value and value["format"] not in _FORMATS:
            raise fail(f"the string format {value['format']!r}")
    else:
        raise fail("a nested or composite type" if kind in (None, "object") else f"type {kind!r}")
    return {k: v for k, v in value.items() if k in allowed}


def _resolved(value: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(defs.get(ref.removeprefix("#/$defs/"), {}))
        target.pop("title", None)  # the Enum class's name is no title for the field
        return {**target, **{k: v for k, v in value.items() if k != "$ref"}}
    return dict(value)


@dataclass(eq=False, slots=True)
class Ask(Generic[T]):
    """One question for the client; `await` it, or pass several to `Context.gather`.

    Attributes:
        method: The request method ("elicitation/create", "sampling/createMessage",
            "roots/list").
        params: Its params.
        key: Where the answer is filed under 2026-07-28 (None: numbered in asking order).
        read: Turns the client's wire answer into the record the tool gets.
        timeout: Handshake era: seconds to wait for the answer (None: the server's default).
        capability: The client capability needed, with a sub-capability for URL mode.
    """

    method: str
    params: dict[str, Any]
    key: str | None
    read: Callable[[Any], T]
    timeout: float | None
    context: Any = field(repr=False)
    capability: tuple[str, str | None] = ("", None)

    def __await__(self) -> Generator[Any, None, T]:
        results = yield from self.context.gather(self).__await__()
        value: T = results[0]
        return value

    @property
    def kind(self) -> str:
        """The capability's name: "elicitation", "sampling" or "roots"."""
        return ASK_METHODS[self.method]


def read_elicitation(
    form: ElicitForm,
) -> Callable[[Any], AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation]:
    """How to read an `ElicitResult` answering `form`: its accepted content validated."""
    from pydantic import ValidationError  # noqa: PLC0415 - loaded by elicit_form already

    def read(wire: Any) -> AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation:
        outcome = elicit_outcome_from_wire(wire)
        if not isinstance(outcome, AcceptedElicitation):
            return outcome
        try:
            return AcceptedElicitation(form.validate(outcome.data or {}))
        except ValidationError as exc:
            lines = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'content'}: {error['msg']}"
                for error in exc.errors()
            )
            raise WireFormatError(f"the accepted content does not fit the form: {lines}") from None

    return read


class AskBook:
    """One 2026-07-28 attempt's answers and open questions.

    Args:
        answers: Answers by key: earlier rounds' (from the state), then this round's.
        bound: The digest of the request the attempt answers (`request_state.binding`): what
            the next round's state is sealed to.
    """

    def __init__(self, answers: Mapping[str, Any], bound: str = "") -> None:
        self.answers = dict(answers)
        self.bound = bound
        #: Answers this attempt used: what the next round's state carries.
        self.used: dict[str, Any] = {}
        #: Questions still open: what the `input_required` result asks.
        self.pending: dict[str, dict[str, Any]] = {}
        self._asked = 0
        self._keys: set[str] = set()

    def key_of(self, ask: Ask[Any]) -> str:
        """The key `ask` is filed under; a key used twice in one attempt is a bug of the tool."""
        self._asked += 1
        key = ask.key if ask.key is not None else f"{ask.kind}-{self._asked}"
        if key in self._keys:
            raise ValueError(
                f"the ask key {key!r} was used twice in one call; give each question its own key"
            )
        self._keys.add(key)
        return key

    def take(self, asks: Sequence[Ask[Any]]) -> list[Any]:
        """The answers to `asks`, or `InputRequired` with those still open filed as pending."""
        results: list[Any] = []
        for ask in asks:
            key = self.key_of(ask)
            wire = self.answers.get(key, _MISSING)
            if wire is _MISSING:
                self.pending[key] = {"method": ask.method, "params": ask.params}
                continue
            try:
                results.append(ask.read(wire))
            except WireFormatError as exc:
                raise AnswerInvalidError(key, str(exc)) from None
            self.used[key] = wire
        if self.pending:
            raise InputRequired
        return results
