"""Validate what the server sends against the official MCP JSON Schema of a protocol revision.

The schemas live in `tests/data/schema/<version>/schema.json` (copies of the specification
repository's files, see `tests/data/schema/SOURCE.md`). Each file is one JSON Schema document
whose definitions sit under `definitions` (draft-07 revisions) or `$defs` (2020-12 revisions);
the dialect is taken from the document's own `$schema`, and `$ref`s into the same document are
resolved through a `referencing` registry.

A message is checked in two layers:
  1. its JSON-RPC envelope: `JSONRPCMessage` plus the specific response/error/notification
     definition of that revision (their names changed in 2025-11-25: `JSONRPCError` became
     `JSONRPCErrorResponse`, and result responses became `JSONRPCResultResponse`);
  2. its payload: a result against the result definition of the request's method (`RESULTS`),
     a notification against the definition of its method (`NOTIFICATIONS`, else the revision's
     `ServerNotification` union).

One deliberate exception, because the schemas and JSON-RPC 2.0 disagree: JSON-RPC 2.0 (section 5)
says an error response whose request id could not be read (parse error, invalid request) MUST
carry `"id": null`, and that is what this server sends (DESIGN.md, "Parse errors"). No MCP
schema admits a null id: up to 2025-06-18 `id` is a required string/integer, from 2025-11-25 it
is optional (omitted). So for -32700/-32600 error responses only, `"id": null` is accepted and
the rest of the envelope is validated as if the id were readable. Any other null id fails.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import jsonschema
import jsonschema.exceptions
from referencing import Registry
from referencing.jsonschema import specification_with

__all__ = [
    "NOTIFICATIONS",
    "RESULTS",
    "SCHEMA_DIR",
    "VERSIONS",
    "SchemaViolationError",
    "validate_definition",
    "validate_server_message",
    "validate_transcript",
]

SCHEMA_DIR: Final = Path(__file__).parent / "data" / "schema"
VERSIONS: Final = tuple(sorted(p.name for p in SCHEMA_DIR.iterdir() if p.is_dir()))

#: Request method -> definition of its result.
RESULTS: Final[Mapping[str, str]] = {
    "initialize": "InitializeResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "server/discover": "DiscoverResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
}

#: Notification method -> its definition (others are checked against `ServerNotification`).
NOTIFICATIONS: Final[Mapping[str, str]] = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
}

# JSON-RPC 2.0 section 5: the only errors that may be sent before the id is known.
_UNREADABLE_ID_CODES: Final = frozenset({-32700, -32600})
# Stands in for an unreadable (null) id while validating the rest of the envelope.
_ID_PLACEHOLDER: Final = 0


class SchemaViolationError(AssertionError):
    """A message the server sent does not match the revision's schema."""


@functools.cache
def _document(version: str) -> dict[str, Any]:
    path = SCHEMA_DIR / version / "schema.json"
    if not path.exists():
        raise ValueError(f"no schema for protocol version {version!r}; have {VERSIONS}")
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(document).check_schema(document)
    return document


def _definitions_key(version: str) -> str:
    return "$defs" if "$defs" in _document(version) else "definitions"


def has_definition(version: str, name: str) -> bool:
    """Whether the revision's schema defines `name`."""
    return name in _document(version)[_definitions_key(version)]


@functools.cache
def _validator(version: str, name: str) -> jsonschema.protocols.Validator:
    document = _document(version)
    if not has_definition(version, name):
        raise ValueError(f"schema {version} has no definition {name!r}")
    uri = f"urn:mcp-schema:{version}"
    resource = specification_with(document["$schema"]).create_resource(document)
    registry: Registry[Any] = Registry().with_resource(uri, resource)
    cls = jsonschema.validators.validator_for(document)
    entry = {"$schema": document["$schema"], "$ref": f"{uri}#/{_definitions_key(version)}/{name}"}
    return cls(entry, registry=registry)


def _check(instance: Any, version: str, name: str, what: str) -> None:
    errors = list(_validator(version, name).iter_errors(instance))
    if not errors:
        return
    best = jsonschema.exceptions.best_match(errors)
    path = "/".join(str(p) for p in best.absolute_path) or "(top)"
    raise SchemaViolationError(
        f"{what} does not match {name} of MCP {version} at {path}: {best.message}\n"
        f"message: {json.dumps(instance)[:2000]}"
    )


def _first_definition(version: str, *names: str) -> str:
    for name in names:
        if has_definition(version, name):
            return name
    raise ValueError(f"schema {version} defines none of {names}")


def _method_for(message: dict[str, Any], method: str | Mapping[Any, str] | None) -> str | None:
    if isinstance(method, Mapping):
        request_id = message.get("id")
        # bool ids would collide with 1/0 in a dict lookup; they are never valid ids anyway.
        return None if isinstance(request_id, bool) else method.get(request_id)
    return method


def _validate_one(message: Any, version: str, method: str | Mapping[Any, str] | None) -> None:
    what = "server message"
    if not isinstance(message, dict):
        raise SchemaViolationError(f"{what} is not a JSON object: {message!r}")
    if "method" in message:
        name = message["method"]
        if "id" in message:  # a server -> client request
            _check(message, version, "JSONRPCRequest", what)
            if has_definition(version, "ServerRequest"):
                _check(message, version, "ServerRequest", f"request {name}")
            return
        _check(message, version, "JSONRPCMessage", what)
        _check(message, version, "JSONRPCNotification", what)
        _check(
            message, version, NOTIFICATIONS.get(name, "ServerNotification"), f"notification {name}"
        )
        return
    if "error" in message:
        envelope = message
        code = message["error"].get("code") if isinstance(message["error"], dict) else None
        if "id" in message and message["id"] is None and code in _UNREADABLE_ID_CODES:
            envelope = {**message, "id": _ID_PLACEHOLDER}  # see the module docstring
        _check(envelope, version, "JSONRPCMessage", what)
        _check(
            envelope,
            version,
            _first_definition(version, "JSONRPCErrorResponse", "JSONRPCError"),
            what,
        )
        return
    _check(message, version, "JSONRPCMessage", what)
    _check(
        message,
        version,
        _first_definition(version, "JSONRPCResultResponse", "JSONRPCResponse"),
        what,
    )
    request_method = _method_for(message, method)
    if request_method is None:
        return
    result_name = RESULTS.get(request_method)
    if result_name is None:
        raise ValueError(f"no result definition known for method {request_method!r}")
    _check(message["result"], version, result_name, f"result of {request_method}")
    # 2026-07-28 also defines a per-method response envelope (e.g. CallToolResultResponse).
    response_name = f"{result_name}Response"
    if has_definition(version, response_name):
        _check(message, version, response_name, f"response to {request_method}")


def validate_server_message(
    message: dict[str, Any] | list[Any],
    version: str,
    method: str | Mapping[Any, str] | None = None,
) -> None:
    """Check one message (or a batch of them) that the server sent.

    Args:
        message: A decoded JSON-RPC message, or a list of them (a batch response).
        version: The protocol revision the message was sent under.
        method: For a result response, the method of the request it answers, so the result is
            checked against that method's result definition (`RESULTS`). A mapping from request
            id to method serves batches and transcripts. None checks the envelope only.

    Raises:
        SchemaViolationError: when the message does not match the schema.
        ValueError: for an unknown version, or a method with no known result definition.
    """
    if isinstance(message, list):
        if not message:
            raise SchemaViolationError("an empty array is not a valid JSON-RPC batch response")
        for item in message:
            _validate_one(item, version, method)
        if has_definition(version, "JSONRPCBatchResponse"):  # only 2025-03-26 has batches
            _check(
                [_null_id_placeholder(m) for m in message],
                version,
                "JSONRPCBatchResponse",
                "batch response",
            )
        return
    _validate_one(message, version, method)


def _null_id_placeholder(message: Any) -> Any:
    if isinstance(message, dict) and message.get("id", ...) is None and "error" in message:
        return {**message, "id": _ID_PLACEHOLDER}
    return message


def validate_definition(instance: Any, version: str, name: str) -> None:
    """Check `instance` against one named definition of the revision's schema.

    Raises:
        SchemaViolationError: when it does not match.
        ValueError: for an unknown version or definition.
    """
    _check(instance, version, name, "message")


def validate_transcript(sent: Iterable[Any], received: Iterable[Any], version: str) -> int:
    """Validate every received message, matching responses to the requests in `sent`.

    Args:
        sent: The messages the client sent (dicts or batches of dicts); their ids and methods
            tell which result definition each response must match.
        received: Everything the server sent.
        version: The revision of the session.

    Returns:
        How many messages were validated.
    """
    methods: dict[Any, str] = {}
    for item in sent:
        for message in item if isinstance(item, list) else [item]:
            if (
                isinstance(message, dict)
                and "id" in message
                and isinstance(message.get("method"), str)
            ):
                request_id = message["id"]
                if (type(request_id) is int or isinstance(request_id, str)) and message[
                    "method"
                ] in RESULTS:
                    methods[request_id] = message["method"]
    count = 0
    for message in received:
        validate_server_message(message, version, methods)
        count += 1
    return count
