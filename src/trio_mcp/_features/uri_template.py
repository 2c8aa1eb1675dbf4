"""RFC 6570 URI templates, both ways: expanding values into a URI, and matching a URI back.

Rule 1: a template is parsed once, at registration; a malformed one (an unclosed brace, an
        unknown operator, a variable that is no Python identifier or comes twice) is a
        `ToolDefinitionError` that quotes the template and says what to change.
Rule 2: matching is expansion run backwards, for the forms MCP servers use: `{var}`,
        `{+path}`, `{#frag}`, `{.ext}`, `{/seg}`, `{;param}`, `{?query,params}` and
        `{&more}`, with several variables per expression, the explode modifier (`{/seg*}`:
        a list) and prefixes (`{var:3}`). Path-like expressions must match in full and in
        order; query expressions (`?`, `&`) come last, and their parameters may come in any
        order and may be left out (the variable is then absent, and the function's default
        applies). A query parameter the template does not name makes the URI not match.
Rule 3: matched values are percent-decoded (`%2F` is a "/" inside a `{var}`); an exploded
        variable is a list of decoded items. Values are strings: typing them is the job of
        whoever owns the variables (a resource template's function signature).
Rule 4: matching is lenient where expansion would have been strict: a simple `{var}` takes any
        characters but the URI delimiters `/`, `?` and `#` (so `units/Space Marines` matches
        although an expander would have written `Space%20Marines`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

from .._exceptions import ToolDefinitionError

__all__ = ["Expression", "UriTemplate", "Variable"]

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
    # What a value may contain when matched (Rule 4): a character class without brackets.
    chars: str


_OPERATORS: Final = {
    "": _Operator("", ",", False, "", False, r"^/?#"),
    "+": _Operator("", ",", False, "", True, r"^?#"),
    "#": _Operator("#", ",", False, "", True, r"^#"),
    ".": _Operator(".", ".", False, "", False, r"^/?#."),
    "/": _Operator("/", "/", False, "", False, r"^/?#"),
    ";": _Operator(";", ";", True, "", False, r"^/?#;"),
    "?": _Operator("?", "&", True, "=", False, r"^&#"),
    "&": _Operator("&", "&", True, "=", False, r"^&#"),
}
_QUERY_OPERATORS: Final = frozenset({"?", "&"})
# Operators RFC 6570 reserves for future use.
_RESERVED_OPERATORS: Final = frozenset("=,!@|")


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
    """A parsed RFC 6570 URI template (see the module rules).

    Args:
        text: The template, e.g. `"wh40k://units/{faction}/{unit_id}"`.

    Raises:
        ToolDefinitionError: for a malformed template (Rule 1).
    """

    __slots__ = ("_expressions", "_fixed_query", "_path", "_query", "parts", "text", "variables")

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
        # The path expressions by their index among the parts (their regex groups name it).
        self._expressions = tuple(
            (index, part)
            for index, part in enumerate(self.parts)
            if isinstance(part, Expression) and not part.is_query
        )
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
        """The variables that expand to `uri`, or None when it does not match (Rule 2).

        Variables the URI leaves out (query parameters) are absent from the result.
        """
        path, question, query = uri.partition("?")
        if (question and self._query is None) or (not question and self._fixed_query):
            return None
        found = self._path.fullmatch(path)
        if found is None:
            return None
        values: dict[str, str | list[str]] = {}
        for index, expression in self._expressions:
            _collect(expression, index, found, values)
        if question and not self._match_query(query, values):
            return None
        return values

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
    ) -> tuple[re.Pattern[str], tuple[tuple[str, str], ...], tuple[Variable, ...] | None]:
        """The regex of the path part, the template's literal query pairs, its query variables."""
        pattern: list[str] = []
        fixed: list[tuple[str, str]] = []
        query: list[Variable] | None = None
        in_query = False
        for index, part in enumerate(self.parts):
            if isinstance(part, str):
                if in_query:
                    fixed.extend(_literal_pairs(part))
                    continue
                before, question, after = part.partition("?")
                pattern.append(re.escape(before))
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
            pattern.append(_pattern(part, index))
        return (
            re.compile("".join(pattern), re.DOTALL),
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


# -- matching helpers ----------------------------------------------------------------------------


def _group(expression_index: int, variable_index: int) -> str:
    return f"e{expression_index}v{variable_index}"


def _value(op: _Operator, variable: Variable, single: bool) -> str:
    """The regex of one value of `variable` (a character class repeated; Rule 4)."""
    chars = op.chars if single or variable.explode else op.chars + ","
    one = f"(?:%[0-9A-Fa-f]{{2}}|[{chars}])"
    if variable.prefix is not None:
        return f"{one}{{0,{variable.prefix}}}"
    return f"{one}*"


def _pattern(expression: Expression, index: int) -> str:
    op = _OPERATORS[expression.operator]
    single = len(expression.variables) == 1
    out: list[str] = []
    for number, variable in enumerate(expression.variables):
        group = _group(index, number)
        value = _value(op, variable, single)
        if op.named:  # ";": each parameter optional, name=value or a bare name when empty
            out.append(f"(?:;{re.escape(variable.name)}(?P<{group}>=(?:{value}))?)?")
            continue
        lead = re.escape(op.first if number == 0 else op.sep)
        if variable.explode:
            sep = re.escape(op.sep)
            out.append(f"{lead}(?P<{group}>{value}(?:{sep}{value})*)")
        else:
            out.append(f"{lead}(?P<{group}>{value})")
    return "".join(out)


def _collect(
    expression: Expression, index: int, found: re.Match[str], values: dict[str, str | list[str]]
) -> None:
    op = _OPERATORS[expression.operator]
    for number, variable in enumerate(expression.variables):
        raw = found.group(_group(index, number))
        if raw is None:  # only a ";" parameter can be left out: undefined
            continue
        if op.named:
            raw = raw[1:]  # the "="
        if variable.explode:
            values[variable.name] = [unquote(item) for item in raw.split(op.sep)]
        else:
            values[variable.name] = unquote(raw)


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
