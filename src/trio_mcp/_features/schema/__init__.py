"""From a `Signature` to JSON Schemas, an argument validator and a result serializer (pydantic).

Modules by job: `compile` (the schemas, validator and serializer of a function), `plain` (the
pydantic-free road of Rule 4), `clean` (titles and `$ref`s, Rule 2), `errors` (messages, Rule 3),
`unsupported` (the definition error for a type with no JSON form).

Rule 1: built once, at registration. A call costs one pydantic-core validation of the arguments
        dict and, for structured results, one serialization: nothing is rebuilt per call.
Rule 2: schemas are what clients cope with best: JSON Schema 2020-12, closed objects, no
        pydantic titles, `$ref` inlined (kept under `$defs` only where a type is recursive),
        `X | None = None` parameters shown as plain optional `X`.
Rule 3: validation failures become `ArgumentsInvalid` holding one line per field (path, what was
        expected, what arrived), written for a model to act on: no URLs, no model names.
Rule 4: the plain types most tools use (str, int, float, bool, Literal, lists and str-keyed
        dicts of them, and `X | None`) are compiled straight to pydantic-core, exactly as pydantic
        would compile them, without importing pydantic: loading pydantic and building its
        adapters was a third of a server's start-up. Every other type goes through pydantic.
        tests/features/test_schema_plain.py checks that both roads give the same schemas and
        outcomes.
"""

from .clean import inline_refs
from .compile import CompiledTool, ResultMode, compile_signature
from .errors import ArgumentsInvalid, ResultInvalid, describe_json
from .plain import plain_type

__all__ = [
    "ArgumentsInvalid",
    "CompiledTool",
    "ResultInvalid",
    "ResultMode",
    "compile_signature",
    "describe_json",
    "inline_refs",
    "plain_type",
]
