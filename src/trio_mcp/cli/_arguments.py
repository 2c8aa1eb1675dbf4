"""What a client command's words mean to the server: arguments, and names it may not know.

NAME=VALUE words become a tool's arguments as its input schema says (`convert_value`: the text
for a string parameter, JSON for the others); prompt arguments, strings on the wire, are sent
as written. A tool, parameter, resource URI, prompt or argument name that the server does not
list is answered with the close names (`suggest_names`, `unknown_name`).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .._core.jsonrpc import json_type
from ._parse import UsageError

__all__ = [
    "check_names",
    "convert_value",
    "json_types",
    "parse_arguments",
    "split_pairs",
    "suggest_names",
    "template_variables",
    "unknown_name",
]


def split_pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """NAME=VALUE words as (name, value) pairs; the value is still text.

    Raises:
        UsageError: for a word without `=` or without a name.
    """
    pairs = []
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise UsageError(f"{word!r} is not NAME=VALUE")
        pairs.append((name, value))
    return pairs


def parse_arguments(
    pairs: Sequence[str] | Sequence[tuple[str, str]],
    json_object: str | None,
    input_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Tool arguments from `--json` and NAME=VALUE pairs (the pairs win).

    Each VALUE is read as its parameter's schema says (`convert_value`); without a schema, or
    for a name the schema does not describe, a VALUE that parses as JSON is that, otherwise
    the text.

    Raises:
        UsageError: for a pair without `=`, `--json` that is not a JSON object, or a name the
            tool's closed schema does not have (with the names close to it).
    """
    arguments: dict[str, Any] = {}
    if json_object is not None:
        try:
            parsed = json.loads(json_object)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise UsageError("--json must be a JSON object, e.g. '{\"a\": 5}'")
        arguments.update(parsed)
    split = [pair if isinstance(pair, tuple) else split_pairs([pair])[0] for pair in pairs]
    schema: Mapping[str, Any] = input_schema or {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for name, value in split:
        if name not in properties and schema.get("additionalProperties") is False:
            raise UsageError(unknown_name("parameter", name, list(properties)))
        arguments[name] = convert_value(value, properties.get(name), schema)
    return arguments


def convert_value(text: str, schema: Any, root: Mapping[str, Any] | None = None) -> Any:
    """One NAME=VALUE value, read as the parameter's JSON Schema says.

    A parameter that takes only strings gets the text as it is (`query=2024` is "2024").
    One that takes no strings gets the text parsed as JSON when it parses (5, true, [1, 2],
    {"a": 1}, null), else the text, for the server to explain what it expected. One that
    takes a string or something else (`str | int`) gets the JSON reading when it is of a type
    the schema allows, else the text; a JSON string (`'"2024"'`) forces a string there.
    A schema that does not say (no type, or an open branch) gets the JSON reading when there
    is one.

    Args:
        text: What followed `NAME=`.
        schema: The parameter's JSON Schema (None when the tool does not describe it).
        root: The whole input schema, where `$ref`s point.
    """
    kinds = json_types(schema, root or {})
    if kinds == {"string"}:
        return text
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    if kinds is None or "string" not in kinds:
        return parsed
    kind = json_type(parsed)
    return parsed if kind in kinds or (kind == "integer" and "number" in kinds) else text


# Deep enough for any real schema; a `$ref` cycle stops here.
_MAX_SCHEMA_DEPTH: Final = 16


def json_types(schema: Any, root: Mapping[str, Any], depth: int = 0) -> set[str] | None:
    """The JSON types a JSON Schema accepts, or None when it accepts any or does not say."""
    if not isinstance(schema, Mapping) or depth > _MAX_SCHEMA_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#/"):
            return None
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        return json_types(target, root, depth + 1)
    kinds: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        kinds.add(declared)
    elif isinstance(declared, list):
        kinds.update(k for k in declared if isinstance(k, str))
    if "const" in schema:
        kinds.add(json_type(schema["const"]))
    if isinstance(schema.get("enum"), list):
        kinds.update(json_type(value) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                inner = json_types(branch, root, depth + 1)
                if inner is None:
                    return None  # one branch takes anything: so does the whole
                kinds |= inner
    return kinds or None


def suggest_names(name: str, known: Iterable[str], limit: int = 3) -> list[str]:
    """The names in `known` closest to a mistyped `name`, best first (for "did you mean").

    Case is ignored, and the last part of a dotted name counts on its own: "add" and
    "calc.add" both find "calculator.add". Only names about as close as the closest are
    offered, so that a shared namespace does not bring in all its neighbours.
    """
    wanted = name.lower()
    scored: dict[str, float] = {}
    for candidate in known:
        folded = candidate.lower()
        score = max(_likeness(wanted, folded), _likeness(_last_part(wanted), _last_part(folded)))
        if score >= _SUGGEST_CUTOFF:
            scored[candidate] = max(score, scored.get(candidate, 0.0))
    if not scored:
        return []
    best = max(scored.values())
    close = [c for c in sorted(scored, key=lambda c: -scored[c]) if scored[c] >= best - 0.1]
    return close[:limit]


# difflib's own default cutoff for get_close_matches.
_SUGGEST_CUTOFF: Final = 0.6


def _likeness(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def _last_part(name: str) -> str:
    return re.split(r"[./:]", name)[-1]


def unknown_name(kind: str, name: str, known: Sequence[str]) -> str:
    """The message for a `kind` ("tool", "parameter", ...) called `name` that is not in `known`.

    It offers the close names (`suggest_names`), or else the known ones.
    """
    close = suggest_names(name, known)
    if close:
        return f"unknown {kind} {name!r}; did you mean {_either(close)}?"
    if not known:
        return f"unknown {kind} {name!r}: there are no {kind}s"
    shown = ", ".join(repr(k) for k in known[:_MAX_LISTED])
    more = f" and {len(known) - _MAX_LISTED} more" if len(known) > _MAX_LISTED else ""
    return f"unknown {kind} {name!r}; the {kind}s are {shown}{more}"


# Names listed when none is close: enough to spot the right one without flooding the terminal.
_MAX_LISTED: Final = 10


def _either(names: Sequence[str]) -> str:
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def check_names(given: Iterable[str], known: Sequence[str]) -> None:
    """Refuse an argument name that is not among the `known` ones.

    Raises:
        UsageError: for the first unknown name, with the close ones (`unknown_name`).
    """
    for name in given:
        if name not in known:
            raise UsageError(unknown_name("argument", name, known))


#: A URI template's expressions (RFC 6570): an operator, then variables separated by commas.
_TEMPLATE_EXPRESSION: Final = re.compile(r"\{[+#./;?&=,!@|]?([^}]*)\}")


def template_variables(template: str) -> list[str]:
    """The variables of an RFC 6570 URI template, in order (`{+path}`, `{?q,limit}` ...)."""
    names = []
    for expression in _TEMPLATE_EXPRESSION.findall(template):
        for spec in expression.split(","):
            name = spec.split(":", 1)[0].rstrip("*")
            if name and name not in names:
                names.append(name)
    return names
