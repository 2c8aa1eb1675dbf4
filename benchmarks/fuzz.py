"""Seeded mutations of valid MCP requests, and an oracle that says what each line is owed.

Rule 1: the oracle is written from JSON-RPC 2.0 and the MCP specification, not from the
        server's code. It decodes with the standard library, strictly (no NaN or Infinity, no
        lone surrogates: I-JSON, RFC 7493), and says for each line how many answers it is owed
        and with which ids (null when the id cannot be read, as JSON-RPC says), so that a
        disagreement with the server is a finding. Where the specifications leave a choice it
        follows the server's documented one: a trailing CR is dropped and blank lines are
        skipped (NDJSON framing), and a message with no method (or a null one) but an `id`, a
        `result` or an `error` is the client's response: never answered, well formed or not
        (JSON-RPC 2.0 answers requests only, and an answer would use the client's own ids).
Rule 2: the fuzzer leaves out only what no oracle could judge from the bytes alone:
        `notifications/cancelled` (it takes back an answer that was owed, or not, depending on
        timing), and nesting between 64 and 5,000 levels (JSON decoders stop at different
        depths, RFC 8259 section 9; above 1,000 levels the oracle counts a line as unreadable).
Rule 3: everything comes from one `random.Random(seed)`: the same seed gives the same lines.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["NULL", "Fuzzer", "Owed", "owed"]

#: The id key of an answer to an unreadable request.
NULL: Final = "null"
#: Nesting the oracle counts as unreadable (Rule 2): any decoder's limit is below it.
TOO_DEEP: Final = 1000
SHALLOW: Final = (1, 64)
DEEP: Final = (5_000, 50_000)

HUGE_NUMBERS: Final = (
    "1e400",
    "-1e400",
    "1e-400",
    "-0",
    "18446744073709551616",
    "-9223372036854775809",
    "1" + "0" * 300,
    "9" * 5000,
    "0.1e99999",
)
NAN_TOKENS: Final = ("NaN", "Infinity", "-Infinity", "nan", "inf")
NAN_STRINGS: Final = ("NaN", "Infinity", "-Infinity", "nan", "1e400", "")
UNICODE: Final = (
    "\u00e9\u00e8\u00ea",
    "\U0001f600\U0001f4a9",
    "\u202e\u200f\u200b",
    "e\u0301\u0308\u20dd",
    "\u0000\u001f",
    "\ufeff\ufffe\uffff",
    "\U0010ffff",
    "\u4f60\u597d",
)
# Raw bytes inserted into the encoded line: invalid UTF-8, overlong forms, a lone surrogate
# escape, a UTF-8-encoded surrogate, a raw control character inside a string.
BAD_BYTES: Final = (
    b"\xff",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\\ud800",
    b"\\udfff\\ud800",
    b"\x00",
    b"\x1b",
    b"\xf4\x90\x80\x80",
)
WRONG_VALUES: Final[tuple[Any, ...]] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "x",
    [],
    {},
    [1],
    {"a": 1},
)


@dataclass(frozen=True, slots=True)
class Owed:
    """What one physical line is owed: an answer per entry of `answers`.

    Each entry is the answer's id key (`json.dumps` of the id, `NULL` for an unreadable
    request) and whether the answer must be an error. A batch's answers come as one array line.
    """

    answers: tuple[tuple[str, bool], ...] = ()
    batch: bool = False

    @property
    def lines(self) -> int:
        """Response lines owed: one (an object or an array) when anything is owed."""
        return 1 if self.answers else 0


class Unjudgeable(Exception):  # noqa: N818 - a verdict, not a failure
    """The line holds something the oracle leaves out (Rule 2)."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _walk(value: Any) -> Iterator[tuple[Any, int]]:
    """Every value inside `value`, with its depth; iterative, for deep documents."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        yield item, depth
        if isinstance(item, dict):
            stack.extend((k, depth) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _readable(line: bytes) -> tuple[bool, Any]:
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
        return False, None
    for item, depth in _walk(value):
        if depth > TOO_DEEP:
            return False, None
        if isinstance(item, str) and any("\ud800" <= ch <= "\udfff" for ch in item):
            return False, None
    return True, value


def _is_id(value: Any) -> bool:
    # MCP: a request id is a string or an integer (a JSON true is not an integer).
    return type(value) is int or isinstance(value, str)


def _owed_by(obj: Any) -> list[tuple[str, bool]]:
    """The answers one JSON-RPC message (a batch entry, or a line) is owed."""
    if not isinstance(obj, dict):
        return [(NULL, True)]
    rid = obj.get("id")
    key = json.dumps(rid) if "id" in obj and _is_id(rid) else NULL
    method = obj.get("method")
    if method is None and ("id" in obj or "result" in obj or "error" in obj):
        return []  # a response, well formed or not (Rule 1)
    if obj.get("jsonrpc") != "2.0":
        return [(key, True)]
    if not isinstance(method, str):
        return [(key, True)]
    if "id" not in obj:  # a notification: never answered, even a malformed one
        if method == "notifications/cancelled":
            raise Unjudgeable(method)
        return []
    params = obj.get("params")
    return [(key, not (params is None or isinstance(params, dict)))]


def owed(line: bytes) -> Owed:
    """What the server owes one physical line (no newline inside).

    Raises:
        Unjudgeable: for a line the fuzzer must not send (Rule 2).
    """
    line = line.removesuffix(b"\r")
    if not line.strip():
        return Owed()
    ok, value = _readable(line)
    if not ok:
        return Owed(((NULL, True),))
    if isinstance(value, list):
        if not value:
            return Owed(((NULL, True),))
        return Owed(tuple(a for item in value for a in _owed_by(item)), batch=True)
    return Owed(tuple(_owed_by(value)))


# -- the fuzzer -----------------------------------------------------------------------------------


def _number(rng: random.Random) -> float | int:
    return rng.choice((rng.randint(-1000, 1000), round(rng.uniform(-1e6, 1e6), 3), 0, 2, -1))


@dataclass
class Fuzzer:
    """Lines of valid requests, most of them mutated, from one seed (Rule 3).

    Attributes:
        kinds: How many lines each mutation made (after `line()` calls).
    """

    seed: int
    kinds: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._next_id = 0
        self._recent: list[Any] = []
        self._mutations: list[tuple[str, int, Callable[[], bytes]]] = [
            ("valid", 20, lambda: self._encode(self._request())),
            ("bit flips", 10, self._bit_flips),
            ("truncated", 8, self._truncated),
            ("wrong types", 10, self._wrong_type),
            ("huge numbers", 6, self._huge_number),
            ("NaN and Infinity", 6, self._nan),
            ("unicode", 8, self._unicode),
            ("bad bytes", 5, self._bad_bytes),
            ("deep nesting", 3, self._deep),
            ("duplicate ids", 8, self._duplicate_id),
            ("duplicate keys", 3, self._duplicate_key),
            ("missing or extra keys", 6, self._reshaped),
            ("batches", 6, self._batch),
            ("whitespace and CR", 3, self._whitespace),
        ]
        self._weights = [weight for _, weight, _ in self._mutations]

    def line(self) -> tuple[str, bytes]:
        """One line (newline-terminated) and the name of the mutation that made it."""
        while True:
            name, _, make = self.rng.choices(self._mutations, self._weights)[0]
            data = make().replace(b"\n", b"")  # bit flips may make a newline: keep one line
            try:
                owed(data)
            except Unjudgeable:
                continue
            self.kinds[name] += 1
            return name, data + b"\n"

    # -- valid requests ---------------------------------------------------------------------------

    def _id(self) -> Any:
        self._next_id += 1
        rid: Any = self._next_id
        roll = self.rng.random()
        if roll < 0.2:
            rid = f"s{self._next_id}"
        elif roll < 0.22:
            rid = self.rng.choice((0, -self._next_id, 2**63 + self._next_id, "", "\u00e9" * 3))
        self._recent = [*self._recent[-15:], rid]
        return rid

    def _arguments(self) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        roll = rng.randrange(7)
        if roll < 4:
            op = ("add", "subtract", "multiply", "divide")[roll]
            return f"calculator.{op}", {"a": _number(rng), "b": _number(rng)}
        if roll == 4:
            return "calculator.power", {"base": _number(rng), "exponent": rng.randint(-5, 500)}
        if roll == 5:
            return "wh40k.roll_dice", {
                "dice_count": rng.randint(1, 100),
                "dice_sides": rng.randint(1, 20),
                "flavor": rng.choice(("hit", "wound", "save")),
            }
        return "wh40k.inquisitor_name", {"include_title": rng.random() < 0.5}

    def _request(self) -> dict[str, Any]:
        rng = self.rng
        roll = rng.random()
        message: dict[str, Any] = {"jsonrpc": "2.0"}
        if roll < 0.1:
            message["method"] = rng.choice(
                ("notifications/initialized", "notifications/roots/list_changed")
            )
            return message
        message["id"] = self._id()
        if roll < 0.25:
            message["method"] = "ping"
        elif roll < 0.35:
            message["method"] = "tools/list"
        elif roll < 0.38:
            message["method"] = rng.choice(("resources/list", "no/such/method", "initialize"))
        else:
            name, arguments = self._arguments()
            message["method"] = "tools/call"
            message["params"] = {"name": name, "arguments": arguments}
        return message

    def _encode(self, message: Any) -> bytes:
        return json.dumps(message, ensure_ascii=self.rng.random() < 0.5).encode()

    # -- mutations --------------------------------------------------------------------------------

    def _bit_flips(self) -> bytes:
        data = bytearray(self._encode(self._request()))
        for _ in range(self.rng.randint(1, 3)):
            data[self.rng.randrange(len(data))] ^= 1 << self.rng.randrange(8)
        return bytes(data)

    def _truncated(self) -> bytes:
        data = self._encode(self._request())
        return data[: self.rng.randrange(len(data))]

    def _slots(self, message: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
        """Every (object, key) whose value a mutation may replace."""
        found = [(message, key) for key in message]
        params = message.get("params")
        if isinstance(params, dict):
            found += [(params, key) for key in params]
            arguments = params.get("arguments")
            if isinstance(arguments, dict):
                found += [(arguments, key) for key in arguments]
        return found

    def _wrong_type(self) -> bytes:
        message = self._request()
        owner, key = self.rng.choice(self._slots(message))
        owner[key] = self.rng.choice(WRONG_VALUES)
        return self._encode(message)

    def _replace_number(self, tokens: tuple[str, ...]) -> bytes:
        message = self._request()
        marker = "__number__"
        owner, key = self.rng.choice(self._slots(message))
        owner[key] = marker
        return self._encode(message).replace(
            b'"%s"' % marker.encode(), self.rng.choice(tokens).encode()
        )

    def _huge_number(self) -> bytes:
        return self._replace_number(HUGE_NUMBERS)

    def _nan(self) -> bytes:
        if self.rng.random() < 0.5:
            return self._replace_number(NAN_TOKENS)  # bare tokens: not JSON
        message = self._request()
        owner, key = self.rng.choice(self._slots(message))
        owner[key] = self.rng.choice(NAN_STRINGS)  # valid JSON, a string where a number goes
        return self._encode(message)

    def _unicode(self) -> bytes:
        message = self._request()
        owner, key = self.rng.choice(self._slots(message))
        text = "".join(self.rng.choices(UNICODE, k=self.rng.randint(1, 4)))
        if self.rng.random() < 0.3:
            owner[text] = owner.pop(key)  # a key, not a value
        else:
            owner[key] = text if not isinstance(owner[key], str) else owner[key] + text
        return self._encode(message)

    def _bad_bytes(self) -> bytes:
        data = self._encode(self._request())
        at = self.rng.randrange(len(data) + 1)
        return data[:at] + self.rng.choice(BAD_BYTES) + data[at:]

    def _deep(self) -> bytes:
        message = self._request()
        depth = self.rng.randint(*(SHALLOW if self.rng.random() < 0.7 else DEEP))
        opening, closing = ("[", "]") if self.rng.random() < 0.5 else ('{"a":', "}")
        nested = opening * depth + "1" + closing * depth
        marker = "__deep__"
        owner, key = self.rng.choice(self._slots(message))
        owner[key] = marker
        return self._encode(message).replace(b'"%s"' % marker.encode(), nested.encode())

    def _duplicate_id(self) -> bytes:
        message = self._request()
        if "id" in message and self._recent:
            message["id"] = self.rng.choice(self._recent)
        return self._encode(message)

    def _duplicate_key(self) -> bytes:
        message = self._request()
        key = self.rng.choice(("id", "method", "jsonrpc", "params"))
        value = json.dumps(self.rng.choice((*WRONG_VALUES, self._id(), "ping")))
        body = self._encode(message)
        return b'{"%s":%s,' % (key.encode(), value.encode()) + body[1:]

    def _reshaped(self) -> bytes:
        message = self._request()
        if self.rng.random() < 0.5:
            message.pop(self.rng.choice(list(message)))
        else:
            extra = self.rng.choice(("result", "error", "extra", "_meta", "ID"))
            message[extra] = self.rng.choice(WRONG_VALUES)
        return self._encode(message)

    def _batch(self) -> bytes:
        if self.rng.random() < 0.05:
            return b"[]"
        entries: list[Any] = []
        for _ in range(self.rng.randint(1, 8)):
            entry: Any = self._request()
            if self.rng.random() < 0.2:
                entry = self.rng.choice(WRONG_VALUES)
            entries.append(entry)
        return self._encode(entries)

    def _whitespace(self) -> bytes:
        data = self._encode(self._request())
        pad = self.rng.choice((b" ", b"\t", b"  \t ", b"\r"))
        return self.rng.choice((pad + data, data + pad, data + b"\r", pad))
