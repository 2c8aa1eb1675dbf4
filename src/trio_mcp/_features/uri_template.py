"""RFC 6570 URI templates, both ways: expanding values into a URI, and matching a URI back.

What a resource template is made of: a template is parsed once, at registration, and a read's
URI is matched against it (`match`), its values checked (`safe`) before any function sees them.
Matching is expansion run backwards, for the forms MCP servers use (`{var}`, `{+path}`,
`{#frag}`, `{.ext}`, `{/seg}`, `{;param}`, `{?query,params}`, `{&more}`, several variables per
expression, explode and prefix modifiers), and lenient where expansion would have been strict:
a simple `{var}` takes any characters but the URI delimiters `/`, `?` and `#` (so
`units/Space Marines` matches although an expander would have written `Space%20Marines`).

Rule 1: `safe` (what a resource template applies before its function runs) refuses, once
        decoded, a value that holds "/", a backslash or NUL, or is "." or "..", in every
        expression but the path forms: `{+path}`, `{#path}` and the segments of `{/path*}`,
        whose values are normalised instead (empty and "." segments dropped, ".." taking the
        segment before it away; a ".." with none before it, a backslash or a NUL refused), so
        that `root / value` stays under `root`.
Rule 2: matching takes time and memory linear in the URI, whatever the template: no backtracking
        (see "matching the path" below). A `%XX` triplet and a character are one unit each, so a
        value never ends inside one, and `{var:3}` counts `%20` as one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias
from urllib.parse import quote, unquote

from .._exceptions import ToolDefinitionError

__all__ = ["Expression", "UnsafeValue", "UriTemplate", "Variable"]

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPRESSION: Final = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class _Operator:
    """How one RFC 6570 operator expands (RFC 6570, appendix A's table)."""

    first: str  # written before the first defined value
    sep: str  # written between values
    named: bool  # values written as name=value
    if_empty: str  # after the name when the value is empty ("" or "=")
    reserved: bool  # reserved characters pass unencoded
    # The characters a matched value never holds: the delimiters around it.
    stops: str


_OPERATORS: Final = {
    "": _Operator("", ",", False, "", False, "/?#"),
    "+": _Operator("", ",", False, "", True, "?#"),
    "#": _Operator("#", ",", False, "", True, "#"),
    ".": _Operator(".", ".", False, "", False, "/?#."),
    "/": _Operator("/", "/", False, "", False, "/?#"),
    ";": _Operator(";", ";", True, "", False, "/?#;"),
    "?": _Operator("?", "&", True, "=", False, "&#"),
    "&": _Operator("&", "&", True, "=", False, "&#"),
}
_QUERY_OPERATORS: Final = frozenset({"?", "&"})
# Operators whose values are paths, normalised rather than refused for a "/" (Rule 1); "/" only
# when exploded (`{/path*}`: a list of segments).
_PATH_OPERATORS: Final = frozenset({"+", "#"})
# Operators RFC 6570 reserves for future use.
_RESERVED_OPERATORS: Final = frozenset("=,!@|")


class UnsafeValue(ValueError):  # noqa: N818 - an outcome, not a fault of ours
    """A matched value that no function may be given (Rule 1): the variable, and what is wrong."""

    def __init__(self, name: str, value: str, problem: str, *, path: bool) -> None:
        super().__init__(f"{name}: {value!r} {problem}")
        #: The variable's name.
        self.name = name
        #: Whether it is a path form's value (`{+name}`), else a plain one (`{name}`).
        self.path = path


@dataclass(frozen=True, slots=True)
class Variable:
    """One variable of an expression: `name`, `name*` (explode) or `name:3` (prefix)."""

    name: str
    explode: bool = False
    prefix: int | None = None


@dataclass(frozen=True, slots=True)
class Expression:
    """One `{...}` of a template: its operator and its variables."""

    operator: str
    variables: tuple[Variable, ...]

    @property
    def is_query(self) -> bool:
        """Whether it expands to query parameters (`{?...}` or `{&...}`)."""
        return self.operator in _QUERY_OPERATORS


class UriTemplate:
    """A parsed RFC 6570 URI template, parsed once (at registration, for a resource's).

    Args:
        text: The template, e.g. `"wh40k://units/{faction}/{unit_id}"`.

    Raises:
        ToolDefinitionError: for a malformed template (an unclosed brace, an unknown operator,
            a variable that is no Python identifier or comes twice), quoting it and saying what
            to change.
    """

    __slots__ = ("_fixed_query", "_kinds", "_path", "_query", "parts", "text", "variables")

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts: tuple[str | Expression, ...] = tuple(_parse(text))
        names = [
            v.name for part in self.parts if isinstance(part, Expression) for v in part.variables
        ]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ToolDefinitionError(
                f"URI template {text!r} names {', '.join(duplicates)} more than once; "
                "give each variable one place"
            )
        #: Every variable, in the order the template names them.
        self.variables: tuple[Variable, ...] = tuple(
            v for part in self.parts if isinstance(part, Expression) for v in part.variables
        )
        # Each variable's operator, for the value rules (Rule 1).
        self._kinds = {
            v.name: part.operator
            for part in self.parts
            if isinstance(part, Expression)
            for v in part.variables
        }
        self._path, self._fixed_query, self._query = self._compile()

    @property
    def is_template(self) -> bool:
        """Whether there is any expression at all (else it is a plain URI)."""
        return bool(self.variables)

    def __repr__(self) -> str:
        return f"UriTemplate({self.text!r})"

    # -- expansion -------------------------------------------------------------------------------

    def expand(self, values: Mapping[str, str | Sequence[str] | None]) -> str:
        """The URI for `values`, by RFC 6570 expansion.

        A value that is None or missing is undefined and left out, as the RFC says.
        """
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(_expand(part, values))
        return "".join(out)

    # -- matching --------------------------------------------------------------------------------

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables that expand to `uri`, or None when it does not match.

        Path-like expressions must match in full and in order; query expressions (`?`, `&`)
        come last, and their parameters may come in any order and may be left out (the
        variable is then absent from the result, and the function's default applies). A query
        parameter the template does not name makes the URI not match. Values are
        percent-decoded strings (`%2F` is a "/" inside a `{var}`), an exploded variable's a
        list of them: typing them is the job of whoever owns the variables. Time and memory are
        linear in the length of `uri` (Rule 2).
        """
        path, question, query = uri.partition("?")
        if (question and self._query is None) or (not question and self._fixed_query):
            return None
        values = self._path.match(path)
        if values is None:
            return None
        if question and not self._match_query(query, values):
            return None
        return values

    def safe(
        self, values: dict[str, str | list[str]], verbatim: frozenset[str] = frozenset()
    ) -> dict[str, str | list[str]]:
        """`values` (of `match`) checked and normalised by Rule 1; those named in `verbatim` pass.

        Raises:
            UnsafeValue: for the first value refused.
        """
        out: dict[str, str | list[str]] = {}
        for name, value in values.items():
            kind = self._kinds[name]
            if name in verbatim:
                out[name] = value
            elif kind in _PATH_OPERATORS:
                out[name] = (
                    _path(name, value)
                    if isinstance(value, str)
                    else [_path(name, item) for item in value]
                )
            elif kind == "/" and isinstance(value, list):
                joined = _path(name, "/".join(value))
                out[name] = joined.split("/") if joined else []
            else:
                for item in [value] if isinstance(value, str) else value:
                    _plain(name, item, kind)
                out[name] = value
        return out

    def _match_query(self, query: str, values: dict[str, str | list[str]]) -> bool:
        fixed = dict(self._fixed_query)
        wanted = {v.name: v for v in self._query or ()}
        seen: set[str] = set()
        for pair in query.split("&") if query else ():
            raw_name, _, raw_value = pair.partition("=")
            name, value = unquote(raw_name), unquote(raw_value)
            if name in fixed:
                if fixed.pop(name) != value:
                    return False
                continue
            variable = wanted.get(name)
            if variable is None or (name in seen and not variable.explode):
                return False
            seen.add(name)
            if variable.explode:
                listed = values.setdefault(name, [])
                assert isinstance(listed, list)
                listed.append(value)
            else:
                values[name] = value
        return not fixed  # every fixed parameter of the template was there

    def _compile(
        self,
    ) -> tuple[_PathMatcher, tuple[tuple[str, str], ...], tuple[Variable, ...] | None]:
        """The path's matcher, the template's literal query pairs, its query variables."""
        atoms: list[_Atom] = []
        slots: list[_Slot] = []
        fixed: list[tuple[str, str]] = []
        query: list[Variable] | None = None
        in_query = False
        for part in self.parts:
            if isinstance(part, str):
                if in_query:
                    fixed.extend(_literal_pairs(part))
                    continue
                before, question, after = part.partition("?")
                _append_literal(atoms, before)
                if question:
                    in_query = True
                    query = []
                    fixed.extend(_literal_pairs(after))
                continue
            if part.is_query:
                if part.operator == "?" and in_query:
                    raise ToolDefinitionError(
                        f"URI template {self.text!r}: a second query start '{{?...}}'; "
                        "continue the query with '{&...}'"
                    )
                in_query = True
                query = query if query is not None else []
                query.extend(part.variables)
                continue
            if in_query:
                raise ToolDefinitionError(
                    f"URI template {self.text!r}: expression {{{_show(part)}}} comes after the "
                    "query; put path expressions before '?' and query ones ({?...}, {&...}) last"
                )
            _append_expression(atoms, slots, part)
        return (
            _PathMatcher(tuple(atoms), tuple(slots)),
            tuple(fixed),
            (tuple(query) if query is not None else None),
        )


# -- parsing --------------------------------------------------------------------------------------


def _parse(text: str) -> list[str | Expression]:
    if not isinstance(text, str) or not text:
        raise ToolDefinitionError(f"URI template must be a non-empty string, got {text!r}")
    parts: list[str | Expression] = []
    position = 0
    for found in _EXPRESSION.finditer(text):
        literal = text[position : found.start()]
        _check_literal(literal, text)
        if literal:
            parts.append(literal)
        parts.append(_expression(found.group(1), text))
        position = found.end()
    tail = text[position:]
    _check_literal(tail, text)
    if tail:
        parts.append(tail)
    return parts


def _check_literal(literal: str, text: str) -> None:
    if "{" in literal or "}" in literal:
        raise ToolDefinitionError(
            f"URI template {text!r} has an unmatched or nested brace; write each variable as "
            "{name}"
        )


def _expression(body: str, text: str) -> Expression:
    operator = body[:1] if body[:1] in _OPERATORS or body[:1] in _RESERVED_OPERATORS else ""
    if operator in _RESERVED_OPERATORS:
        raise ToolDefinitionError(
            f"URI template {text!r}: operator {operator!r} in {{{body}}} is reserved by RFC 6570; "
            "use one of + # . / ; ? &"
        )
    variables: list[Variable] = []
    for spec in body[len(operator) :].split(","):
        name, colon, length = spec.partition(":")
        explode = name.endswith("*") and not colon
        name = name.removesuffix("*") if explode else name
        if not _NAME.fullmatch(name):
            raise ToolDefinitionError(
                f"URI template {text!r}: {spec!r} in {{{body}}} is not a variable name; use "
                "letters, digits and '_' (a Python identifier), optionally with '*' or ':N'"
            )
        prefix = None
        if colon:
            if not length.isdigit() or not 0 < int(length) < 10000:
                raise ToolDefinitionError(
                    f"URI template {text!r}: prefix {spec!r} needs a length from 1 to 9999"
                )
            prefix = int(length)
        variables.append(Variable(name, explode, prefix))
    if explode_named := [v for v in variables if v.explode and operator == ";"]:
        raise ToolDefinitionError(
            f"URI template {text!r}: exploded path parameters ({explode_named[0].name}*) "
            "cannot be matched back; drop the '*'"
        )
    return Expression(operator, tuple(variables))


def _literal_pairs(literal: str) -> list[tuple[str, str]]:
    pairs = []
    for pair in literal.split("&"):
        if pair:
            name, _, value = pair.partition("=")
            pairs.append((unquote(name), unquote(value)))
    return pairs


def _show(expression: Expression) -> str:
    names = ",".join(
        v.name + ("*" if v.explode else "") + (f":{v.prefix}" if v.prefix else "")
        for v in expression.variables
    )
    return expression.operator + names


# -- value rules (Rule 1) ------------------------------------------------------------------------


def _plain(name: str, value: str, operator: str) -> None:
    """Refuse a value that could name another thing than one item: see Rule 1."""
    if "/" in value or "\\" in value:
        what = "holds '/'" if "/" in value else "holds '\\'"
    elif "\0" in value:
        what = "holds NUL"
    elif value in (".", ".."):
        what = f"is {value!r}"
    else:
        return
    form = f"{{{operator}{name}}}"
    raise UnsafeValue(name, value, f"{what} once decoded, which a {form} value may not", path=False)


def _path(name: str, value: str) -> str:
    """A path value normalised: no empty, "." or ".." segment left; see Rule 1."""
    if "\\" in value or "\0" in value:
        what = "'\\'" if "\\" in value else "NUL"
        problem = f"holds {what} once decoded, which no path value may"
        raise UnsafeValue(name, value, problem, path=True)
    kept: list[str] = []
    for segment in value.split("/"):
        if segment == "..":
            if not kept:
                raise UnsafeValue(name, value, "climbs above its start with '..'", path=True)
            kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    return "/".join(kept)


# -- matching the path, in linear time (Rule 2) ---------------------------------------------------
#
# The path is matched as its UTF-8 bytes, positions 0 to n. A `%XX` triplet and a character's
# UTF-8 bytes are one unit each: a value starts and ends between units only (`{var:3}` counts
# `%20` as one, and no value splits a character). A set of positions is an int whose bit n - p
# stands for position p, so "the next position" is one bit lower, and the carry of an addition
# runs from a position to the one before it: that is how a value's run of bytes is crossed in a
# few operations whatever its length.
#
# Backwards, atom by atom (`_plan`), come the sets of positions from which the rest of the
# template can match: a fixed number of operations on ints of about n bits per atom, plus
# O(log(N)^2) for a `{var:N}`. Forwards (`_walk`), each value then takes the longest span after
# which the rest can still match: the leftmost-greedy answer a backtracking regex would give,
# without the backtracking. Most templates need none of this: where every value is followed by
# the end or by a delimiter it never holds (`units/{faction}/{unit_id}`), one scan of the path
# from left to right is the match (`_PathMatcher.direct`).


@dataclass(frozen=True, slots=True)
class _Lit:
    """Literal bytes of the template."""

    text: bytes
    overlaps: bool  # whether two occurrences can overlap (".." in "..."): not found by replace


@dataclass(frozen=True, slots=True)
class _Var:
    """A value: a run of the bytes `table` admits, of at most `prefix` units when set."""

    slot: int  # where its span goes
    table: bytes  # a translate table: "1" for a byte the value may hold, "0" for a delimiter
    run: re.Pattern[bytes]  # the longest such run from a position
    prefix: int | None


@dataclass(frozen=True, slots=True)
class _Opt:
    """Atoms matched when they can be, else skipped: a `{;name}` parameter, its `=value`."""

    body: tuple[_Atom, ...]


_Atom: TypeAlias = "_Lit | _Var | _Opt"


@dataclass(frozen=True, slots=True)
class _Slot:
    """What a matched span is: a variable's raw text, or its items split at `sep` (explode)."""

    name: str
    sep: str | None


def _literal(text: str) -> _Lit:
    raw = text.encode("utf-8", "surrogatepass")
    overlaps = any(raw[:size] == raw[-size:] for size in range(1, len(raw)))
    return _Lit(raw, overlaps)


def _append_literal(atoms: list[_Atom], text: str) -> None:
    if not text:
        return
    if atoms and isinstance(atoms[-1], _Lit):
        text = atoms.pop().text.decode("utf-8", "surrogatepass") + text  # type: ignore[union-attr]
    atoms.append(_literal(text))


@functools.lru_cache(maxsize=64)
def _var_kind(stops: str, prefix: int | None) -> tuple[bytes, re.Pattern[bytes]]:
    """The translate table and the longest-run pattern of values that hold none of `stops`."""
    table = bytes(ord("0") if chr(byte) in stops else ord("1") for byte in range(256))
    others = b"[^" + re.escape(stops.encode("ascii")) + b"]"
    if prefix is None:
        return table, re.compile(others + b"*")
    unit = rb"(?:%[0-9A-Fa-f]{2}|[\xc0-\xf7][\x80-\xbf]{1,3}|" + others + b")"
    return table, re.compile(unit + b"{0,%d}" % prefix)


def _append_expression(atoms: list[_Atom], slots: list[_Slot], expression: Expression) -> None:
    op = _OPERATORS[expression.operator]
    single = len(expression.variables) == 1
    for number, variable in enumerate(expression.variables):
        # Several values in one expression are separated by ","; an exploded one holds its
        # separator between items.
        stops = op.stops if single or variable.explode else op.stops + ","
        if variable.explode:
            stops = stops.replace(op.sep, "")
        table, run = _var_kind(stops, variable.prefix)
        value = _Var(len(slots), table, run, variable.prefix)
        slots.append(_Slot(variable.name, op.sep if variable.explode else None))
        if op.named:  # ";name=value", ";name" (the variable then left out), or nothing
            atoms.append(_Opt((_literal(";" + variable.name), _Opt((_literal("="), value)))))
            continue
        _append_literal(atoms, op.first if number == 0 else op.sep)
        atoms.append(value)


class _PathMatcher:
    """Matches the path part of URIs (what precedes "?") against a template's path atoms."""

    __slots__ = ("body", "direct", "head", "slots", "tail")

    def __init__(self, atoms: tuple[_Atom, ...], slots: tuple[_Slot, ...]) -> None:
        self.slots = slots
        # A leading and a trailing literal are compared as bytes, not made into sets.
        body = list(atoms)
        self.head = self.tail = b""
        if body and isinstance(body[0], _Lit):
            self.head = body.pop(0).text  # type: ignore[union-attr]
        if body and isinstance(body[-1], _Lit):
            self.tail = body.pop().text  # type: ignore[union-attr]
        self.body = tuple(body)
        #: Whether one left-to-right scan matches (`_scan`): each value is followed by the end
        #: or by a literal whose first byte it never holds, so it can only take its whole run.
        self.direct = (
            all(
                _ends_its_run(atom, [*body[index + 1 : index + 2], self.tail][0])
                if isinstance(atom, _Var)
                else isinstance(atom, _Lit) and b"%" not in atom.text[-2:]
                for index, atom in enumerate(body)
            )
            and b"%" not in self.head[-2:]
        )

    def match(self, path: str) -> dict[str, str | list[str]] | None:
        """The variables of `path` (percent-decoded), or None when it does not match."""
        data = path.encode("utf-8", "surrogatepass")
        spans = self.spans(data)
        if spans is None:
            return None
        values: dict[str, str | list[str]] = {}
        for slot, span in zip(self.slots, spans, strict=True):
            if span is None:  # only a ";" parameter can be left out: undefined
                continue
            raw = data[span[0] : span[1]].decode("utf-8", "surrogatepass")
            if slot.sep is None:
                values[slot.name] = unquote(raw)
            elif "%" in raw:
                values[slot.name] = [unquote(item) for item in raw.split(slot.sep)]
            else:
                values[slot.name] = raw.split(slot.sep)
        return values

    def spans(self, data: bytes, bits: _Bits | None = None) -> list[tuple[int, int] | None] | None:
        """Where each variable's value is in `data`, or None when it does not match."""
        head, tail = self.head, self.tail
        end = len(data) - len(tail)
        if end < len(head) or not (data.startswith(head) and data.endswith(tail)):
            return None
        spans: list[tuple[int, int] | None] = [None] * len(self.slots)
        if not self.body:
            return spans if end == len(head) else None
        if self.direct:
            return spans if self._scan(data, end, spans) else None
        bits = bits if bits is not None else _Bits(data)
        # The trailing literal starts between units too (not in "%41" for a "1").
        plan = _plan(self.body, bits.point(end) & bits.units, bits)
        if not bits.has(plan.sets[0], len(head)):
            return None
        _walk(self.body, plan, bits, len(head), spans)
        return spans

    def _scan(self, data: bytes, end: int, spans: list[tuple[int, int] | None]) -> bool:
        position = len(self.head)
        for atom in self.body:
            if isinstance(atom, _Lit):
                if not data.startswith(atom.text, position):
                    return False
                position += len(atom.text)
            else:
                assert isinstance(atom, _Var)
                found = atom.run.match(data, position)
                assert found is not None  # a run may be empty: it always matches
                spans[atom.slot] = (position, found.end())
                position = found.end()
        return position == end


def _ends_its_run(value: _Atom, following: _Atom | bytes) -> bool:
    """Whether `value` is a value that what follows it (an atom, the tail) ends at its run's end.

    The tail is b"" at the end of the path. A value followed by the end, or by a literal whose
    first byte it never holds, can take nothing but its whole run (a delimiter, never inside a
    unit, or the end), which is also what the longest-match rule would give it.
    """
    if not isinstance(value, _Var) or value.prefix is not None:
        return False
    if isinstance(following, bytes):
        text = following
    elif isinstance(following, _Lit):
        text = following.text
    else:
        return False
    return not text or value.table[text[0]] == ord("0")


@dataclass(slots=True)
class _Plan:
    """For atoms followed by a known set: from where each suffix of them can match."""

    sets: list[int]  # sets[i]: positions from which atoms[i:], then the set after, match
    inner: dict[int, _Plan]  # the plans of the `_Opt` atoms' bodies, by index


def _plan(atoms: tuple[_Atom, ...], after: int, bits: _Bits) -> _Plan:
    sets = [0] * len(atoms) + [after]
    inner: dict[int, _Plan] = {}
    here = after
    for index in range(len(atoms) - 1, -1, -1):
        if not here:
            break  # nothing after can match: neither can anything before
        atom = atoms[index]
        if isinstance(atom, _Lit):
            here = bits.before_literal(atom, here)
        elif isinstance(atom, _Var):
            here = bits.before_value(atom, here)
        else:
            body = inner[index] = _plan(atom.body, here, bits)
            here = (body.sets[0] | here) & bits.units
        sets[index] = here
    return _Plan(sets, inner)


def _walk(
    atoms: tuple[_Atom, ...],
    plan: _Plan,
    bits: _Bits,
    position: int,
    spans: list[tuple[int, int] | None],
) -> int:
    """Match `atoms` from `position` (where `plan` says they can), filling in `spans`."""
    for index, atom in enumerate(atoms):
        if isinstance(atom, _Lit):
            position += len(atom.text)
        elif isinstance(atom, _Var):
            found = atom.run.match(bits.data, position)
            assert found is not None  # a run may be empty: it always matches
            end = bits.last(plan.sets[index + 1], position, found.end())
            spans[atom.slot] = (position, end)
            position = end
        else:
            body = plan.inner[index]
            if bits.has(body.sets[0], position):
                position = _walk(atom.body, body, bits, position, spans)
    return position


def _table(ones: bytes) -> bytes:
    """A translate table mapping the bytes `ones` to "1" and every other byte to "0"."""
    return bytes(ord("1") if byte in ones else ord("0") for byte in range(256))


_PERCENT: Final = _table(b"%")
_HEXDIGIT: Final = _table(b"0123456789ABCDEFabcdef")
_CONTINUATION: Final = _table(bytes(range(0x80, 0xC0)))
_MARKED: Final = _table(b"\xff")
# Position strings ("0" and "1" per position) to the byte values added in `_Bits._unit_space`.
_TWO_WHERE_ONE: Final = bytes.maketrans(b"01", b"\x00\x02")
_EIGHT_WHERE_ONE: Final = bytes.maketrans(b"01", b"\x00\x08")
_HIGH_WHERE_ONE: Final = bytes.maketrans(b"01", b"\x00\x80")
# A UTF-8 lead byte to 4 x the number of bytes that follow it in its character.
_FOLLOWERS: Final = bytes(
    4 * (1 if 0xC0 <= byte < 0xE0 else 2 if 0xE0 <= byte < 0xF0 else 3 if byte >= 0xF0 else 0)
    for byte in range(256)
)
# A unit's bit plus 4 x its following bytes, back to the unit's positions.
_WIDEN: Final = {
    ord("0") + 4 * extra + bit: str(bit) + "0" * extra for extra in range(4) for bit in (0, 1)
}


@functools.lru_cache(maxsize=256)
def _byte_table(byte: int) -> bytes:
    return _table(bytes((byte,)))


def _row(found: int, width: int) -> bytes:
    """A set as one ASCII "0" or "1" per position, position 0 first."""
    return format(found, f"0{width}b").encode("ascii")


class _Bits:
    """Sets of positions of one path's bytes (see above), made and combined by C code.

    `operations` counts the operations on ints as long as the path: a match does a number of
    them that depends on the template only, not on the path (Rule 2; the tests check it).
    """

    __slots__ = (
        "_found",
        "_masks",
        "_triplets",
        "_unit_space",
        "data",
        "full",
        "n",
        "operations",
        "units",
    )

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.n = len(data)
        self.full = (1 << (self.n + 1)) - 1
        self.operations = 0
        self._masks: dict[bytes, int] = {}
        self._found: dict[bytes, int] = {}
        self._triplets = 0
        self._unit_space: tuple[int, int, int] | None = None
        #: The positions between units (all of them, for ASCII without "%").
        self.units = self.full if data.isascii() and b"%" not in data else self._boundaries()

    def point(self, position: int) -> int:
        """The set of one position."""
        return 1 << (self.n - position)

    def has(self, found: int, position: int) -> bool:
        """Whether `position` is in the set `found`."""
        return bool(found >> (self.n - position) & 1)

    def last(self, found: int, low: int, high: int) -> int:
        """The greatest position of `found` from `low` to `high` (there is one)."""
        window = (found >> (self.n - high)) & ((1 << (high - low + 1)) - 1)
        self.operations += 3
        assert window, "a value was planned to end in its run"
        return high - ((window & -window).bit_length() - 1)

    def mask(self, table: bytes) -> int:
        """The positions of the bytes `table` maps to "1"."""
        found = self._masks.get(table)
        if found is None:
            found = self._masks[table] = int(self.data.translate(table) + b"0", 2)
            self.operations += 2
        return found

    def _boundaries(self) -> int:
        percent, hexdigit = self.mask(_PERCENT), self.mask(_HEXDIGIT)
        self._triplets = percent & (hexdigit << 1) & (hexdigit << 2)
        inside = (self._triplets >> 1) | (self._triplets >> 2) | self.mask(_CONTINUATION)
        self.operations += 8
        return self.full & ~inside

    def occurrences(self, literal: _Lit) -> int:
        """The positions where `literal` starts."""
        text = literal.text
        found = self._found.get(text)
        if found is not None:
            return found
        if literal.overlaps:
            found = self.full
            for offset, byte in enumerate(text):
                found &= self.mask(_byte_table(byte)) << offset
            self.operations += 2 * len(text)
        else:
            # Occurrences cannot overlap, so one replace marks them all (UTF-8 has no 0xFF
            # nor 0xFE byte).
            marked = self.data.replace(text, b"\xff" + b"\xfe" * (len(text) - 1))
            found = int(marked.translate(_MARKED) + b"0", 2)
            self.operations += 3
        self._found[text] = found
        return found

    def before_literal(self, literal: _Lit, after: int) -> int:
        """The positions where `literal` starts and ends in `after`."""
        self.operations += 3
        return self.occurrences(literal) & (after << len(literal.text)) & self.units

    def before_value(self, value: _Var, after: int) -> int:
        """The positions where a run of `value` starts and can end in `after`."""
        inside = self.mask(value.table)
        if value.prefix is not None:
            return self._within(value.prefix, inside & self.units, after & self.units)
        # Each position of `after` spreads to the run of `inside` positions before it, by one
        # carry per run: adding a seed to a run of ones clears it up to the run's start.
        seeds = (after << 1) & inside
        spread = (((inside + seeds) ^ inside) | seeds) & inside
        self.operations += 9
        return (after | spread) & self.units

    def _within(self, limit: int, inside: int, after: int) -> int:
        """`before_value` for a value of at most `limit` units, counted in unit positions."""
        if self.units == self.full:
            return self._reach(limit, inside, after)
        marks, lengths, count = self._units_space()
        reached = self._reach(limit, self._compress(inside, marks), self._compress(after, marks))
        row = _row(reached, count)
        coded = (int.from_bytes(row, "big") + lengths).to_bytes(count, "big")
        self.operations += 6
        return int(coded.decode("latin-1").translate(_WIDEN), 2)

    def _reach(self, limit: int, inside: int, after: int) -> int:
        """Positions p with some q of `after`, p <= q <= p + limit, all of [p, q) `inside`.

        By doubling: `spans[j]` are the positions p with all of [p, p + 2**j) inside, and j
        rounds of "or the set shifted by 2**j, within spans[j]" reach 2**(j+1) - 1 back.
        """
        spans = [inside]
        reached, left = after, limit
        while left:
            rounds = (left + 1).bit_length() - 1  # 2**rounds - 1 <= left
            while len(spans) < rounds:
                width = 1 << (len(spans) - 1)
                spans.append(spans[-1] & (spans[-1] << width))
                self.operations += 2
            for j in range(rounds):
                reached |= (reached << (1 << j)) & spans[j]
            self.operations += 3 * rounds
            left -= (1 << rounds) - 1
        return reached

    def _compress(self, found: int, marks: int) -> int:
        """`found` with the positions inside units left out: a set of unit positions."""
        moved = (int.from_bytes(_row(found, self.n + 1), "big") + marks).to_bytes(self.n + 1, "big")
        self.operations += 6
        return int(moved.translate(None, b"23"), 2)

    def _units_space(self) -> tuple[int, int, int]:
        """What maps sets to units and back: marks of inner positions, unit lengths, count."""
        if self._unit_space is None:
            width = self.n + 1
            inner = _row(self.full & ~self.units, width)
            marks = int.from_bytes(inner.translate(_TWO_WHERE_ONE), "big")
            codes = (
                (
                    int.from_bytes(self.data.translate(_FOLLOWERS) + b"\x00", "big")
                    + int.from_bytes(_row(self._triplets, width).translate(_EIGHT_WHERE_ONE), "big")
                    + int.from_bytes(inner.translate(_HIGH_WHERE_ONE), "big")
                )
                .to_bytes(width, "big")
                .translate(None, bytes(range(0x80, 0x100)))
            )
            self._unit_space = (marks, int.from_bytes(codes, "big"), len(codes))
            self.operations += 12
        return self._unit_space


# -- expansion helpers ---------------------------------------------------------------------------


def _encode(value: str, reserved: bool) -> str:
    # Unreserved characters always pass; reserved ones only for + and #; an existing
    # percent-encoded triplet passes for those too (RFC 6570, 3.2.3).
    if reserved:
        return quote(value, safe=":/?#[]@!$&'()*+,;=%")
    return quote(value, safe="")


def _expand(expression: Expression, values: Mapping[str, str | Sequence[str] | None]) -> str:
    op = _OPERATORS[expression.operator]
    pieces: list[str] = []
    for variable in expression.variables:
        value = values.get(variable.name)
        if value is None:
            continue
        if isinstance(value, str):
            text = value[: variable.prefix] if variable.prefix else value
            encoded = _encode(text, op.reserved)
            if op.named:
                pieces.append(variable.name + (f"={encoded}" if encoded else op.if_empty))
            else:
                pieces.append(encoded)
            continue
        items = [_encode(item, op.reserved) for item in value]
        if not items:
            continue
        if variable.explode:
            if op.named:
                pieces.extend(
                    variable.name + (f"={item}" if item else op.if_empty) for item in items
                )
            else:
                pieces.extend(items)
        else:
            joined = ",".join(items)
            pieces.append(f"{variable.name}={joined}" if op.named else joined)
    if not pieces:
        return ""
    return op.first + op.sep.join(pieces)
