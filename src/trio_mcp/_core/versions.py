"""What each MCP revision has: one table that every version test in the package asks.

No other module compares revision strings. A question about a revision ("does it know
`structuredContent`?", "does it have a handshake?") is a field of its `Revision` here; a new
revision is one new row, and a new difference one new field. Facts come from the specification
texts of each revision (changelogs and schemas), and each field's comment names where.

Revisions are of two eras. The handshake era (2024-11-05 .. 2025-11-25) fixes one revision per
connection through `initialize`; the per-request era (2026-07-28) names the revision, the
client's capabilities and its log level in each request's `_meta`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "BATCH_VERSIONS",
    "HANDSHAKE_ONLY_METHODS",
    "HANDSHAKE_VERSIONS",
    "HEADER_MISMATCH",
    "HTTP_DEFAULT_VERSION",
    "LATEST_HANDSHAKE_VERSION",
    "MISSING_CLIENT_CAPABILITY",
    "MODERN_VERSIONS",
    "RESOURCE_NOT_FOUND",
    "SUPPORTED_VERSIONS",
    "TASK_METHODS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Revision",
    "TaskForm",
    "batch_refusal",
    "revision",
]


#: The tasks a revision speaks (`Revision.tasks`).
TaskForm = Literal["extension", "utility"] | None


@dataclass(frozen=True, slots=True)
class Revision:
    """One protocol revision and the features that tell it apart from the others.

    Attributes:
        name: The revision's date string, as sent on the wire.
        per_request: 2026-07-28 and later: no handshake; each request names its revision,
            capabilities and log level in `_meta`; results carry `resultType`; lists and
            discovery carry the caching hints `ttlMs` and `cacheScope` (SEP-2549).
        handshake_methods: Requests only a handshake-era revision has: 2026-07-28 removed
            `initialize`, `ping` and `logging/setLevel` (its changelog; its schema's
            ClientRequest lists none of them).
        tool_annotations: Tool `annotations` (since 2025-03-26).
        audio: Audio content blocks (since 2025-03-26).
        progress_message: A `message` in progress notifications (since 2025-03-26).
        structured: `structuredContent`, `outputSchema`, tool `title` and `resource_link`
            content blocks (since 2025-06-18); so do the `title` of resources, templates,
            prompts and prompt arguments, and `lastModified` in annotations (its schema).
        icons: `icons` on tools, resources, templates and prompts (since 2025-11-25).
        resource_not_found: The error code of `resources/read` for an unknown URI: -32002
            until 2025-11-25, -32602 (Invalid Params) from 2026-07-28 (its changelog; SEP-2164).
        batches: JSON-RPC batches (arrays of messages): 2025-03-26 only (its changelog added
            them, 2025-06-18's removed them; no other revision's schema has a batch type).
        elicitation_modes: The modes of `elicitation/create`: none before 2025-06-18 (which
            added elicitation, as a form), "form" and "url" from 2025-11-25 (its changelog;
            SEP-1036). Where a revision has only forms, the capability is declared as `{}`.
        tasks: Which tasks a session of this revision speaks: "extension", the tasks extension
            (SEP-2663: server-directed `CreateTaskResult` with `resultType: "task"`,
            `tasks/update`), from 2026-07-28; "utility", the revision's own experimental tasks
            (2025-11-25, basic/utilities/tasks: requestor-driven `params.task`,
            `tasks/result`, `tasks/list`, the `tasks` capability), and not the extension, which
            SEP-2663's Backward Compatibility section says is not defined there ("requests
            proceed as if the client had declared no task capability at all"); None before
            2025-11-25, whose schemas have no tasks of either kind: a call is answered with
            its result.
    """

    name: str
    per_request: bool
    tool_annotations: bool
    audio: bool
    progress_message: bool
    structured: bool
    icons: bool
    resource_not_found: int
    batches: bool
    elicitation_modes: tuple[str, ...]
    tasks: TaskForm

    @property
    def handshake(self) -> bool:
        """Whether `initialize` fixes this revision for the whole connection."""
        return not self.per_request


#: `resources/read` of an unknown URI before 2026-07-28 (spec 2025-11-25, resources: Error
#: Handling); later revisions answer -32602 Invalid Params.
RESOURCE_NOT_FOUND: Final = -32002

_FORM: Final = ("form",)
_FORM_URL: Final = ("form", "url")
_NF: Final = RESOURCE_NOT_FOUND
_EXT: Final = "extension"
_UTIL: Final = "utility"

_TABLE: Final = (
    # name   per_request annotations audio progress_msg structured icons not_found batches
    # elicitation_modes tasks
    Revision("2026-07-28", True, True, True, True, True, True, -32602, False, _FORM_URL, _EXT),
    Revision("2025-11-25", False, True, True, True, True, True, _NF, False, _FORM_URL, _UTIL),
    Revision("2025-06-18", False, True, True, True, True, False, _NF, False, _FORM, None),
    Revision("2025-03-26", False, True, True, True, False, False, _NF, True, (), None),
    Revision("2024-11-05", False, False, False, False, False, False, _NF, False, (), None),
)  # fmt: skip
_BY_NAME: Final = {row.name: row for row in _TABLE}

#: Handshake-era revisions, newest first.
HANDSHAKE_VERSIONS: Final = tuple(row.name for row in _TABLE if row.handshake)
LATEST_HANDSHAKE_VERSION: Final = HANDSHAKE_VERSIONS[0]
#: Revisions where every request carries its own revision in `_meta`.
MODERN_VERSIONS: Final = tuple(row.name for row in _TABLE if row.per_request)
#: Every revision this package speaks, newest first.
SUPPORTED_VERSIONS: Final = MODERN_VERSIONS + HANDSHAKE_VERSIONS

#: The revision a Streamable HTTP server assumes for a request with no MCP-Protocol-Version
#: header (spec 2025-06-18 and later, transports: "the server SHOULD assume 2025-03-26").
HTTP_DEFAULT_VERSION: Final = "2025-03-26"
#: Revisions that have JSON-RPC batches (see `Revision.batches`).
BATCH_VERSIONS: Final = tuple(row.name for row in _TABLE if row.batches)
#: Requests that only handshake-era revisions define (2026-07-28 changelog: ping and setLevel
#: removed; resources/subscribe and unsubscribe replaced by subscriptions/listen).
HANDSHAKE_ONLY_METHODS: Final = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)

#: spec 2026-07-28, basic/versioning: UnsupportedProtocolVersionError.
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
#: spec 2026-07-28, Streamable HTTP (Server Validation): HeaderMismatch, answered with 400.
HEADER_MISMATCH: Final = -32020
#: The `tasks/` requests of each kind of tasks (`Revision.tasks`): SEP-2663 removed
#: `tasks/result` and `tasks/list` and added `tasks/update`; 2025-11-25's schema has the four
#: of its ClientRequest union. Under a revision without tasks every one is -32601.
TASK_METHODS: Final = {
    "extension": frozenset({"tasks/get", "tasks/update", "tasks/cancel"}),
    "utility": frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}),
    None: frozenset(),
}

#: spec 2026-07-28, basic: MissingRequiredClientCapabilityError (HTTP 400).
MISSING_CLIENT_CAPABILITY: Final = -32021


def revision(name: str) -> Revision:
    """The table row of a supported revision.

    Raises:
        KeyError: for a revision this package does not speak (callers check support first).
    """
    return _BY_NAME[name]


def batch_refusal(version: str | None) -> str | None:
    """Why a JSON-RPC batch is refused under `version`; None when that revision has batches.

    Args:
        version: The revision in force (a session's, or a request's own); None when none is
            negotiated yet (`initialize` itself is never batched).

    Returns:
        The -32600 message, naming the revisions that have batches; None to accept the batch.
    """
    row = _BY_NAME.get(version) if version is not None else None
    if row is not None and row.batches:
        return None
    now = f"MCP {version} has none" if version else "no version is negotiated yet"
    return (
        f"Invalid Request: JSON-RPC batches are part of MCP {', '.join(BATCH_VERSIONS)} only, "
        f"and {now}; send the messages one by one"
    )
