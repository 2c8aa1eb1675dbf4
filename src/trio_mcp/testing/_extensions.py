"""JSON Schemas of the skills extension's messages (SEP-2640), over each revision's own schema.

No revision's `schema.json` defines `skills/list`, `skills/get` or `resources/directory/read`:
the extension's stable specification (modelcontextprotocol/ext-skills,
`specification/stable/skills.mdx`) gives them as TypeScript interfaces extending the base
types (`PaginatedRequest`, `PaginatedResult`, `CacheableResult`, `Resource`). These are those
interfaces written as JSON Schema, made per revision so that each base type is that revision's
own (`$ref` into its document: `_schema` registers both), in the document's dialect, with
`allOf` for "extends" (draft-07 ignores keywords beside a `$ref`).

A 2026-07-28 result also extends `CacheableResult` where the extension says so (`ttlMs` and
`cacheScope` are required then); earlier revisions have no caching hints, and the extension
asks for none there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["EXTENSION_DEFINITIONS", "EXTENSION_REQUESTS", "EXTENSION_RESULTS"]

#: A definition's schema, given the base revision's definition names and how to `$ref` one.
Maker = Callable[[Callable[[str], dict[str, Any] | None]], dict[str, Any]]


def _file() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["uri", "digest", "size"],
        "properties": {
            "uri": {"type": "string"},
            "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
            "size": {"type": "integer", "minimum": 0},
        },
    }


def _skill() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["uri", "frontmatter", "resources"],
        "properties": {
            "uri": {"type": "string"},
            "frontmatter": {
                "type": "object",
                "required": ["name", "description"],
                "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
            },
            "resources": {
                "anyOf": [{"type": "array", "items": _file()}, {"const": "dynamic"}],
            },
        },
    }


def _request(method: str, params: dict[str, Any], *, required: bool) -> Maker:
    def make(base: Callable[[str], dict[str, Any] | None]) -> dict[str, Any]:
        parts = [base("JSONRPCRequest"), base("PaginatedRequest") if "cursor" in params else None]
        own: dict[str, Any] = {
            "properties": {
                "method": {"const": method},
                "params": {
                    "allOf": [
                        *[p for p in [base("RequestParams")] if p is not None],
                        {"type": "object", "properties": params, **_needs(params)},
                    ]
                },
            },
        }
        if required:
            own["required"] = ["params"]
        return {"allOf": [*[p for p in parts if p is not None], own]}

    return make


def _needs(params: dict[str, Any]) -> dict[str, Any]:
    needed = [name for name in params if name != "cursor"]
    return {"required": needed} if needed else {}


def _result(fields: dict[str, Any], *, paginated: bool, cacheable: bool) -> Maker:
    def make(base: Callable[[str], dict[str, Any] | None]) -> dict[str, Any]:
        parts = [
            base("PaginatedResult" if paginated else "Result"),
            base("CacheableResult") if cacheable else None,
        ]
        own: dict[str, Any] = {"type": "object", "required": list(fields), "properties": fields}
        if not paginated:  # "the result carries no pagination cursor"
            own["not"] = {"required": ["nextCursor"]}
        return {"allOf": [*[p for p in parts if p is not None], own]}

    return make


def _resources(base: Callable[[str], dict[str, Any] | None]) -> dict[str, Any]:
    resource = base("Resource")
    return {"type": "array", "items": resource if resource is not None else {"type": "object"}}


#: Each definition's maker, by name.
EXTENSION_DEFINITIONS: Final[Mapping[str, Maker]] = {
    "ListSkillsRequest": _request("skills/list", {"cursor": {"type": "string"}}, required=False),
    "GetSkillRequest": _request("skills/get", {"uri": {"type": "string"}}, required=True),
    "ReadResourceDirectoryRequest": _request(
        "resources/directory/read",
        {"uri": {"type": "string"}, "cursor": {"type": "string"}},
        required=True,
    ),
    "ListSkillsResult": _result(
        {"skills": {"type": "array", "items": _skill()}}, paginated=True, cacheable=True
    ),
    "GetSkillResult": _result({"skill": _skill()}, paginated=False, cacheable=True),
    "ReadResourceDirectoryResult": lambda base: _result(
        {"resources": _resources(base)}, paginated=True, cacheable=False
    )(base),
}
#: A client request's method -> the definition it must match.
EXTENSION_REQUESTS: Final[Mapping[str, str]] = {
    "skills/list": "ListSkillsRequest",
    "skills/get": "GetSkillRequest",
    "resources/directory/read": "ReadResourceDirectoryRequest",
}
#: A client request's method -> the definition of the server's result.
EXTENSION_RESULTS: Final[Mapping[str, str]] = {
    "skills/list": "ListSkillsResult",
    "skills/get": "GetSkillResult",
    "resources/directory/read": "ReadResourceDirectoryResult",
}
