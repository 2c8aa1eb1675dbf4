"""The `_meta` keys of MCP messages and the predicates on ids and tokens, defined once.

Both the server and the client read the keys from here. The per-request keys of 2026-07-28
live under the `io.modelcontextprotocol/` prefix (spec 2026-07-28, basic: General fields).
"""

from __future__ import annotations

from typing import Any, Final

from .jsonrpc import is_request_id

__all__ = [
    "CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "PROGRESS_TOKEN",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "TASKS_EXTENSION",
    "is_request_id",
    "progress_token",
]

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
#: In a `server/discover` result's `_meta`: who the server is (spec PR #3002).
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
PROGRESS_TOKEN: Final = "progressToken"
#: On every message of a `subscriptions/listen` stream: the id of the request that opened it.
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
#: The tasks extension's identifier (SEP-2663), under `capabilities.extensions`.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"


def progress_token(params: dict[str, Any] | None) -> int | str | None:
    """The progress token a request's `_meta` carries, or None when it asks for no progress.

    A token is what a request id may be (`_core/jsonrpc` Rule 3): an `int` or a `str`, never a
    `bool`, a float or null.
    """
    meta = params.get("_meta") if params else None
    token = meta.get(PROGRESS_TOKEN) if isinstance(meta, dict) else None
    return token if is_request_id(token) else None
