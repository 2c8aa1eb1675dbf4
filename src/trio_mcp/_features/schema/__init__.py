"""From a `Signature` to JSON Schemas, an argument validator and a result serializer (pydantic).

What a registered function's arguments and results look like on the wire, and how they are
checked. Modules by job: `compile` (the schemas, validator and serializer of a function),
`plain` (the pydantic-free road of Rule 3), `clean` (what clients cope with best: titles and
`$ref`s), `errors` (messages, Rule 2), `unsupported` (the definition error for a type with no
JSON form).

Rule 1: built once, at registration. A call costs one pydantic-core validation of the arguments
        dict and, for structured results, one serialization: nothing is rebuilt per call.
Rule 2: validation failures become `ArgumentsInvalid` holding one line per field (path, what was
        expected, what arrived), written for a model to act on: no URLs, no model names.
Rule 3: the plain types most tools use (str, int, float, bool, Literal, lists and str-keyed
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
