"""Check MCP messages against the official JSON Schema of their protocol revision.

What `trio_mcp.testing.connect` checks every message with (`MessageChecker`), and the checks
the package's own tests call directly. The schemas ship in this package:
`schema/<version>/schema.json` are unmodified copies of the specification repository's files,
one per revision this package speaks (`schema/SOURCE.md` names their origin and hashes). Each is
one JSON Schema document whose definitions sit under `definitions` (draft-07 revisions) or
`$defs` (2020-12 revisions); the dialect is taken from the document's own `$schema`, and `$ref`s
into the same document are resolved through a `referencing` registry. This module needs the
`jsonschema` package (the `testing` extra).

Two deliberate exceptions to the schemas, and no other:

- JSON-RPC 2.0 (section 5) says an error response whose request id could not be read (parse
  error, invalid request) MUST carry `"id": null`, and that is what this server sends
  (DESIGN.md, "Parse errors"). No MCP schema admits a null id: up to 2025-06-18 `id` is a
  required string or integer, from 2025-11-25 it is optional (omitted). So for -32700 and -32600
  error responses only, `"id": null` is accepted and the rest of the envelope is checked as if
  the id were readable. Any other null id fails.
- The messages of the tasks extension (SEP-2663) are in no revision's schema (2025-11-25 has
  tasks of an older, different design), so only their JSON-RPC envelope is checked: the
  `tasks/` requests and their results, the `notifications/tasks` notifications (the prefixes
  the extension reserves), and a `CreateTaskResult` (`resultType: "task"`) answering a
  `tools/call`. A client sends them only once it declared the extension. 2025-11-25's own
  tasks are checked in full where that schema has them: a request augmented with `task` is
  answered `CreateTaskResult`, and `tasks/result` with the result of the request that made the
  task (`MessageChecker` saw it made).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any, Final, Literal

import jsonschema
import jsonschema.exceptions
from referencing import Registry
from referencing.jsonschema import specification_with

from .._core.meta import PROTOCOL_VERSION, is_request_id
from .._exceptions import SchemaViolationError
from ._extensions import EXTENSION_DEFINITIONS, EXTENSION_REQUESTS, EXTENSION_RESULTS

__all__ = [
    "CLIENT_RESULTS",
    "RESULTS",
    "SCHEMA_DIR",
    "VERSIONS",
    "MessageChecker",
    "Sender",
    "has_definition",
    "validate_definition",
    "validate_server_message",
    "validate_transcript",
]

#: Who sent a message.
Sender = Literal["client", "server"]

SCHEMA_DIR: Final[Traversable] = files(__package__) / "schema"
#: The revisions whose schemas ship here, oldest first.
VERSIONS: Final = tuple(sorted(p.name for p in SCHEMA_DIR.iterdir() if p.is_dir()))

#: A client request's method -> the definition of the server's result.
RESULTS: Final[Mapping[str, str]] = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
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
    "subscriptions/listen": "SubscriptionsListenResult",
    **EXTENSION_RESULTS,  # the skills extension's (`_extensions`)
}

#: A server request's method -> the definition of the client's result.
CLIENT_RESULTS: Final[Mapping[str, str]] = {
    "ping": "EmptyResult",
    "roots/list": "ListRootsResult",
    "sampling/createMessage": "CreateMessageResult",
    "elicitation/create": "ElicitResult",
}

# The unions that list what each side may send.
_REQUESTS: Final[Mapping[Sender, str]] = {"client": "ClientRequest", "server": "ServerRequest"}
_NOTIFICATIONS: Final[Mapping[Sender, str]] = {
    "client": "ClientNotification",
    "server": "ServerNotification",
}
# JSON-RPC 2.0 section 5: the only errors that may be sent before the id is known (a null id).
_UNREADABLE_ID_CODES: Final = frozenset({-32700, -32600})
# Stands in for an unreadable (null) id while checking the rest of the envelope.
_ID_PLACEHOLDER: Final = 0
# How much of an offending message the error shows.
_SHOWN_CHARS: Final = 2000
#: The method prefixes the tasks extension reserves: only their envelope is checked.
_TASKS_PREFIXES: Final = ("tasks/", "notifications/tasks")
#: The results of 2025-11-25's own `tasks/` requests, either way (Rule 5). `tasks/result`'s is
#: that of the request that made the task, when the checker saw it made.
_TASK_RESULTS: Final[Mapping[str, str]] = {
    "tasks/get": "GetTaskResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
    "tasks/result": "GetTaskPayloadResult",
}
#: The requests 2025-11-25 lets a requestor augment with `task` (answered `CreateTaskResult`).
_TASK_AUGMENTED: Final = frozenset({"tools/call", "sampling/createMessage", "elicitation/create"})


def _created_task(result: Any) -> bool:
    """Whether a result is the tasks extension's `CreateTaskResult` (its envelope only)."""
    return isinstance(result, dict) and result.get("resultType") == "task"


def _input_required(result: Any) -> bool:
    """Whether a result is a 2026-07-28 `InputRequiredResult` (questions for the client)."""
    return isinstance(result, dict) and result.get("resultType") == "input_required"


@functools.cache
def _document(version: str) -> dict[str, Any]:
    if version not in VERSIONS:
        raise ValueError(f"no schema for protocol version {version!r}; have {VERSIONS}")
    text = (SCHEMA_DIR / version / "schema.json").read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    jsonschema.validators.validator_for(document).check_schema(document)
    return document


def _definitions_key(version: str) -> str:
    return "$defs" if "$defs" in _document(version) else "definitions"


@functools.cache
def _pointers(version: str) -> dict[int, str]:
    """id() of every object and array in the document -> its JSON pointer (`#/...`)."""
    out: dict[int, str] = {}

    def walk(node: Any, pointer: str) -> None:
        if isinstance(node, dict):
            out[id(node)] = pointer
            for key, value in node.items():
                walk(value, f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}")
        elif isinstance(node, list):
            out[id(node)] = pointer
            for index, value in enumerate(node):
                walk(value, f"{pointer}/{index}")

    walk(_document(version), "#")
    return out


def has_definition(version: str, name: str) -> bool:
    """Whether the revision's schema defines `name` (an extension's definitions: every one)."""
    return name in EXTENSION_DEFINITIONS or name in _document(version)[_definitions_key(version)]


@functools.cache
def _validator(version: str, name: str) -> jsonschema.protocols.Validator:
    document = _document(version)
    if not has_definition(version, name):
        raise ValueError(f"schema {version} has no definition {name!r}")
    uri = f"urn:mcp-schema:{version}"
    resource = specification_with(document["$schema"]).create_resource(document)
    registry: Registry[Any] = Registry().with_resource(uri, resource)
    cls = jsonschema.validators.validator_for(document)
    key = _definitions_key(version)
    entry: dict[str, Any] = {"$schema": document["$schema"], "$ref": f"{uri}#/{key}/{name}"}
    made = EXTENSION_DEFINITIONS.get(name)
    if made is not None:  # an extension's definition, over this revision's base types

        def base(name: str) -> dict[str, Any] | None:
            return {"$ref": f"{uri}#/{key}/{name}"} if name in document[key] else None

        entry = {"$schema": document["$schema"], **made(base)}
    return cls(entry, registry=registry)


@functools.cache
def _methods(version: str, union: str) -> dict[str, str]:
    """Method -> definition, for each member of a union such as `ClientRequest`.

    Read from the schema's own union (each member's `method` constant), so a new revision needs
    no table here; results name no method in the schemas, so their maps are written out above.
    """
    if not has_definition(version, union):
        return {}
    definitions = _document(version)[_definitions_key(version)]
    node = definitions[union]
    members = node.get("anyOf", node.get("oneOf", [node]))
    out: dict[str, str] = {}
    for member in members:
        name = str(member.get("$ref", "")).rsplit("/", 1)[-1]
        method = definitions.get(name, {}).get("properties", {}).get("method", {}).get("const")
        if isinstance(method, str):
            out[method] = name
    return out


def _closest(error: jsonschema.exceptions.ValidationError) -> jsonschema.exceptions.ValidationError:
    # An `anyOf` of tagged alternatives (content blocks by `type`) fails as a whole; when all but
    # one alternative fail on their tag (`const`, `enum`), that one's own failure says more.
    while error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict[Any, list[jsonschema.exceptions.ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        tagged = [
            errors
            for errors in branches.values()
            if not any(sub.validator in ("const", "enum") and sub.relative_path for sub in errors)
        ]
        if len(tagged) != 1:
            break
        error = jsonschema.exceptions.best_match(tagged[0])
    return error


def _check(instance: Any, version: str, name: str, what: str, shown: Any = None) -> None:
    errors = list(_validator(version, name).iter_errors(instance))
    if not errors:
        return
    best = _closest(jsonschema.exceptions.best_match(errors))
    where = "/".join(str(p) for p in best.absolute_path) or "(top)"
    base = _pointers(version).get(id(best.schema))
    schema_path = f"{base}/{best.validator}" if base is not None else None
    message = instance if shown is None else shown
    lines = [f"{what} does not match {name} of MCP {version} at {where}: {best.message}"]
    if schema_path is not None:
        lines.append(f"  schema: {version}/schema.json{schema_path}")
    lines.append(f"  message: {json.dumps(message, default=repr)[:_SHOWN_CHARS]}")
    raise SchemaViolationError(
        "\n".join(lines),
        message=message,
        version=version,
        definition=name,
        schema_path=schema_path,
        instance_path=where,
    )


def _first_definition(version: str, *names: str) -> str:
    for name in names:
        if has_definition(version, name):
            return name
    raise ValueError(f"schema {version} defines none of {names}")


def _with_readable_id(message: dict[str, Any]) -> dict[str, Any]:
    error = message.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if "id" in message and message["id"] is None and code in _UNREADABLE_ID_CODES:
        return {**message, "id": _ID_PLACEHOLDER}  # the null id: see the module docstring
    return message


def _check_one(
    message: Any, version: str, sender: Sender, result: str | None, context: str = ""
) -> None:
    """Check one message; `result` names the definition a result must match.

    In layers: its JSON-RPC envelope (the request, notification, result or error definition of
    that revision, whose failures say more than the `JSONRPCMessage` union's, then that union;
    their names changed in 2025-11-25: `JSONRPCError` became `JSONRPCErrorResponse`, result
    responses `JSONRPCResultResponse`), then its payload: a request or notification against the
    definition its method has in the sender's union (`ClientRequest`, `ServerNotification`, ...;
    a method outside the union fails against the union), a result against the result definition
    of the method it answers (`RESULTS`, `CLIENT_RESULTS`), and under 2026-07-28 against that
    method's response envelope too (`CallToolResultResponse`, ...).
    """
    who = f"the {sender}'s"
    if not isinstance(message, dict):
        raise SchemaViolationError(
            f"{who} message is not a JSON object: {message!r}"[:_SHOWN_CHARS],
            message=message,
            version=version,
        )
    request_id = f" (id {message['id']!r})" if "id" in message else ""
    if "method" in message:
        method = message["method"]
        extension = isinstance(method, str) and method.startswith(_TASKS_PREFIXES)
        kind, unions = (
            ("request", _REQUESTS) if "id" in message else ("notification", _NOTIFICATIONS)
        )
        what = f"{who} {kind} {method}{request_id}"
        _check(
            message, version, "JSONRPCRequest" if "id" in message else "JSONRPCNotification", what
        )
        _check(message, version, "JSONRPCMessage", what)
        union = unions[sender]
        known = _methods(version, union)
        if extension and method not in known:  # Rule 5
            return
        specific = known.get(method) if isinstance(method, str) else None
        if specific is None and sender == "client" and isinstance(method, str):
            specific = EXTENSION_REQUESTS.get(method)  # the skills extension's (`_extensions`)
        if specific is not None:
            _check(message, version, specific, what)
        elif has_definition(version, union):
            try:
                _check(message, version, union, what)
            except SchemaViolationError as exc:
                # The union's own error lists every alternative; the method is what is wrong.
                raise SchemaViolationError(
                    f"{what} does not match {union} of MCP {version}: {method!r} is not "
                    f"one of its methods ({', '.join(sorted(known))})\n"
                    f"  schema: {version}/schema.json#/{_definitions_key(version)}/{union}\n"
                    f"  message: {json.dumps(message, default=repr)[:_SHOWN_CHARS]}",
                    message=message,
                    version=version,
                    definition=union,
                    schema_path=f"#/{_definitions_key(version)}/{union}",
                    instance_path="method",
                ) from exc
        return
    if "error" in message:
        what = f"{who} error response{context}{request_id}"
        envelope = _with_readable_id(message)
        _check(
            envelope,
            version,
            _first_definition(version, "JSONRPCErrorResponse", "JSONRPCError"),
            what,
            message,
        )
        _check(envelope, version, "JSONRPCMessage", what, message)
        return
    what = f"{who} response{context}{request_id}"
    _check(
        message,
        version,
        _first_definition(version, "JSONRPCResultResponse", "JSONRPCResponse"),
        what,
    )
    _check(message, version, "JSONRPCMessage", what)
    if result is None or _created_task(message.get("result")):
        return
    if _input_required(message.get("result")) and has_definition(version, "InputRequiredResult"):
        # 2026-07-28: a request may be answered with a round of questions instead.
        result = "InputRequiredResult"
    _check(message["result"], version, result, f"the result of {what}", message)
    # 2026-07-28 also defines a per-method response envelope (e.g. CallToolResultResponse).
    if has_definition(version, f"{result}Response"):
        _check(message, version, f"{result}Response", what)


def _check_batch(
    batch: list[Any],
    version: str,
    sender: Sender,
    method_of: Callable[[Any], str | None],
    result_of: Callable[[str], str | None],
) -> None:
    """Check each message of a batch, then the batch where the revision has batches.

    `method_of` names the method an item answers; only 2025-03-26 defines batches.
    """
    if not batch:
        raise SchemaViolationError(
            f"the {sender} sent an empty array, which is not a valid JSON-RPC batch",
            message=batch,
            version=version,
        )
    for item in batch:
        method = method_of(item)
        result = result_of(method) if method is not None else None
        _check_one(item, version, sender, result, f" to {method}" if method else "")
    name = "JSONRPCBatchResponse" if sender == "server" else "JSONRPCBatchRequest"
    if has_definition(version, name):
        shown = [_with_readable_id(m) if isinstance(m, dict) else m for m in batch]
        _check(shown, version, name, f"the {sender}'s batch", batch)


def _augmented(capabilities: Any) -> frozenset[str]:
    """The requests a 2025-11-25 `tasks.requests` capability says its side runs as tasks."""
    tasks = capabilities.get("tasks") if isinstance(capabilities, dict) else None
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    if not isinstance(requests, dict):
        return frozenset()
    return frozenset(
        f"{category}/{name}"
        for category, names in requests.items()
        if isinstance(names, dict)
        for name in names
    )


def _method_for(message: Any, method: str | Mapping[Any, str] | None) -> str | None:
    if not isinstance(method, Mapping):
        return method
    request_id = message.get("id") if isinstance(message, dict) else None
    # bool ids would collide with 1/0 in a dict lookup; they are never valid ids anyway.
    if isinstance(request_id, bool):
        return None
    try:
        return method.get(request_id)
    except TypeError:  # an unhashable id: the envelope check reports it
        return None


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
    _document(version)
    named = method.values() if isinstance(method, Mapping) else [method] if method else []
    for name in named:
        if name not in RESULTS:
            raise ValueError(f"no result definition known for method {name!r}")
        _first_definition(version, RESULTS[name])
    if isinstance(message, list):
        _check_batch(message, version, "server", lambda m: _method_for(m, method), RESULTS.get)
        return
    answered = _method_for(message, method)
    context = f" to {answered}" if answered else ""
    _check_one(message, version, "server", RESULTS[answered] if answered else None, context)


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
            if not isinstance(message, dict) or "id" not in message:
                continue
            request_id, name = message["id"], message.get("method")
            if is_request_id(request_id) and isinstance(name, str) and name in RESULTS:
                methods[request_id] = name
    count = 0
    for message in received:
        validate_server_message(message, version, methods)
        count += 1
    return count


class MessageChecker:
    """Checks every message of one connection, both ways, against its revision's schema.

    Feed it each message as its receiver takes it (`check`, or `check_frame` for raw frames);
    the first message that breaks its schema raises `SchemaViolationError`. It learns which
    revision each message speaks from the wire itself: a request's `_meta` protocol version
    (2026-07-28), the revision an `initialize` asks for and the one its result settles on, else
    the connection's revision so far; and it matches each response to the method of the
    request it answers.

    Args:
        version: The revision the client asks for: the connection's revision until a message
            says otherwise.
    """

    def __init__(self, version: str) -> None:
        _document(version)  # an unknown revision fails here, not at the first message
        self.version = version
        # (who asked, request id) -> (method, revision, the result's definition when another
        # than the method's: a 2025-11-25 task's) of requests not yet answered.
        self._pending: dict[tuple[Sender, Any], tuple[str, str, str | None]] = {}
        # (who asked, task id) -> the method of the request that made the 2025-11-25 task.
        self._tasks: dict[tuple[Sender, str], str] = {}
        # Who runs which requests as tasks, as each side declared (`tasks.requests`) in the
        # handshake: a receiver that did not declare one answers it as usual.
        self._augments: dict[Sender, frozenset[str]] = {
            "client": frozenset(),
            "server": frozenset(),
        }
        #: How many messages were checked.
        self.checked = 0

    def check_frame(self, sender: Sender, frame: bytes) -> None:
        """Decode one frame and check the message (or batch) in it.

        Raises:
            SchemaViolationError: when the frame is not JSON or breaks the schema.
        """
        try:
            message = json.loads(frame)
        except ValueError:
            raise SchemaViolationError(
                f"the {sender} sent a frame that is not JSON: {frame[:200]!r}",
                message=frame,
                version=self.version,
            ) from None
        self.check(sender, message)

    def check(self, sender: Sender, message: Any) -> None:
        """Check one decoded message (or batch) that `sender` sent.

        Raises:
            SchemaViolationError: when it breaks the schema of the revision it speaks.
        """
        if isinstance(message, list):
            for item in message:  # requests first: an answer in the batch is to an earlier one
                if isinstance(item, dict):
                    self._track(sender, item)
            answered = {
                id(item): found
                for item in message
                if isinstance(item, dict) and (found := self._answered(sender, item)) is not None
            }

            def method_of(item: Any) -> str | None:
                found = answered.get(id(item))
                return found[0] if found is not None else None

            def result_of(method: str) -> str | None:
                return self._result_definition(sender, method, self.version)

            _check_batch(message, self.version, sender, method_of, result_of)
        else:
            self._check_single(sender, message)
        self.checked += 1

    def _check_single(self, sender: Sender, message: Any) -> None:
        if not isinstance(message, dict):
            _check_one(message, self.version, sender, None)
            return
        version = self._track(sender, message)
        answered = self._answered(sender, message)
        if answered is None:
            _check_one(message, version, sender, None)
            return
        method, version, result_name = answered
        result = message.get("result")
        if method == "initialize" and isinstance(result, dict):
            settled = result.get("protocolVersion")
            if isinstance(settled, str) and settled in VERSIONS:
                version = self.version = settled
            self._augments["server"] = _augmented(result.get("capabilities"))
        if result_name is None:
            result_name = self._result_definition(sender, method, version)
        elif result_name == "CreateTaskResult" and isinstance(result, dict):
            task = result.get("task")
            if isinstance(task, dict) and isinstance(task.get("taskId"), str):
                asker: Sender = "client" if sender == "server" else "server"
                self._tasks[(asker, task["taskId"])] = method
        _check_one(message, version, sender, result_name, f" to {method}")

    def _track(self, sender: Sender, message: dict[str, Any]) -> str:
        """The revision `message` speaks; a request is remembered until it is answered."""
        method = message.get("method")
        if not isinstance(method, str):
            return self.version
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        named = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
        if not (isinstance(named, str) and named in VERSIONS):
            named = None
        if named is None and method == "initialize" and isinstance(params, dict):
            asked = params.get("protocolVersion")
            named = asked if isinstance(asked, str) and asked in VERSIONS else None
            self._augments["client"] = _augmented(params.get("capabilities"))
        version = named or self.version
        request_id = message.get("id")
        if "id" in message and not isinstance(request_id, bool):
            self._pending[(sender, request_id)] = (
                method,
                version,
                self._task_result(sender, method, params, version),
            )
        return version

    def _task_result(self, sender: Sender, method: str, params: Any, version: str) -> str | None:
        """The result definition of a 2025-11-25 task's request, when not the method's own."""
        if not isinstance(params, dict) or not has_definition(version, "CreateTaskResult"):
            return None
        receiver: Sender = "client" if sender == "server" else "server"
        if method in _TASK_AUGMENTED and "task" in params:
            return "CreateTaskResult" if method in self._augments[receiver] else None
        task_id = params.get("taskId")
        made = None
        if method == "tasks/result" and isinstance(task_id, str):
            made = self._tasks.get((sender, task_id))
        if made is None:
            return None
        name = self._result_definition(receiver, made, version)
        return name if name is not None else _TASK_RESULTS[method]

    def _answered(
        self, sender: Sender, message: dict[str, Any]
    ) -> tuple[str, str, str | None] | None:
        """(method, revision) of the other side's request that `message` answers, if any."""
        if "method" in message or "id" not in message or isinstance(message["id"], bool):
            return None
        asker: Sender = "client" if sender == "server" else "server"
        try:
            return self._pending.pop((asker, message["id"]), None)
        except TypeError:  # an unhashable id: the envelope check reports it
            return None

    @staticmethod
    def _result_definition(sender: Sender, method: str, version: str) -> str | None:
        if method.startswith(_TASKS_PREFIXES):  # the extension: envelope only; 2025-11-25: in full
            name = _TASK_RESULTS.get(method)
            return name if name is not None and has_definition(version, name) else None
        name = (RESULTS if sender == "server" else CLIENT_RESULTS).get(method)
        return name if name is not None and has_definition(version, name) else None
