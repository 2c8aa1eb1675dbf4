"""The server side of one MCP session, sans-IO: lifecycle, protocol versions, in-flight ids.

Each request that arrives is checked here and resolved to a `RequestScope` that carries *its*
revision, so the code above never asks "which version is this connection?". Two eras are spoken
side by side (`_core/versions`):

- handshake era (2024-11-05 .. 2025-11-25): `initialize` fixes one version for the connection;
  only `ping` (and `initialize`) may come before it;
- per-request era (2026-07-28): no handshake; each request names its version, capabilities and
  log level in `params._meta`, and the session only checks and reads them. That revision has no
  `initialize`, `ping` or `logging/setLevel`: a request naming it gets -32601 for them, as for
  any method the revision does not define.

A request id is in flight from `begin()` to `end()`, in the session's `Peer` (its inbound table,
`_core/peer` Rule 2): a second request with the same id meanwhile is rejected (-32600), never
run. Nothing here performs I/O or knows about tools: a refusal is a `RemoteProtocolError` with
the code to answer, which the dispatcher writes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._exceptions import RemoteProtocolError
from .jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, RequestId
from .meta import CAPABILITIES as _META_CAPABILITIES
from .meta import CLIENT_INFO as _META_CLIENT_INFO
from .meta import LOG_LEVEL as _META_LOG_LEVEL
from .meta import PROTOCOL_VERSION as _META_VERSION
from .meta import SERVER_INFO, progress_token
from .peer import Peer
from .subscriptions import (
    DEFAULT_MAX_SUBSCRIPTION_BYTES,
    DEFAULT_MAX_SUBSCRIPTIONS,
    SessionSubscriptions,
)
from .types import LOG_LEVELS, LogLevel
from .versions import (
    HANDSHAKE_ONLY_METHODS,
    HANDSHAKE_VERSIONS,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    batch_refusal,
    revision,
)

__all__ = [
    "CACHE_HINTS",
    "RequestScope",
    "ServerSession",
    "check_request_meta",
    "requested_version",
]

#: The caching hints of a cacheable result (spec 2026-07-28, SEP-2549: lists, reads and
#: discovery): what this server lists may change at any time (list_changed), so a client may
#: not reuse it (0 ms), and it holds nothing user-specific.
CACHE_HINTS: Final = {"ttlMs": 0, "cacheScope": "public"}
#: Tasks one handshake-era session follows at once: more than any client runs side by side.
MAX_FOLLOWED_TASKS: Final = 1024

# Methods that a handshake-era client may send before `initialize` completes.
_BEFORE_INIT: Final = frozenset({"initialize", "ping"})


@dataclass(frozen=True, slots=True)
class RequestScope:
    """What one request runs under: its version, its peer's facts, where its progress goes."""

    version: str
    client_info: dict[str, Any] | None
    client_capabilities: dict[str, Any]
    #: Minimum level of log notifications this request may send, or None for none at all.
    log_level: LogLevel | None
    progress_token: int | str | None

    @property
    def modern(self) -> bool:
        """Whether this request speaks a per-request (2026-07-28 or later) revision."""
        return revision(self.version).per_request


def requested_version(params: dict[str, Any] | None) -> Any:
    """The protocol version a request names in `params._meta` (2026-07-28 and later), or None.

    Whatever is there is returned as it is (it may be no string at all): a request that names
    anything there is a per-request one, and `check_request_meta` judges the value.
    """
    meta = params.get("_meta") if params else None
    return meta.get(_META_VERSION) if isinstance(meta, dict) else None


def check_request_meta(params: dict[str, Any] | None) -> None:
    """Check the per-request fields of a per-request (2026-07-28) request's `_meta`.

    spec 2026-07-28, basic (General fields: `_meta`): the protocol version and the client
    capabilities are required on every request; "a request missing any required field is
    malformed; the server MUST reject it with JSON-RPC error code -32602 (Invalid params)".
    Client info, when given, is an object; a log level, when given, is a known level.

    Raises:
        RemoteProtocolError: -32602 naming what is missing or malformed.
    """
    meta = params.get("_meta") if params else None
    if not isinstance(meta, dict):
        raise RemoteProtocolError(
            f"Invalid params: params._meta must be an object with {_META_VERSION!r} and "
            f"{_META_CAPABILITIES!r}",
            INVALID_PARAMS,
        )
    missing = [key for key in (_META_VERSION, _META_CAPABILITIES) if key not in meta]
    if missing:
        raise RemoteProtocolError(
            f"Invalid params: params._meta lacks the required {' and '.join(map(repr, missing))}",
            INVALID_PARAMS,
        )
    if not isinstance(meta[_META_VERSION], str):
        raise RemoteProtocolError(
            f"Invalid params: {_META_VERSION!r} must be a string", INVALID_PARAMS
        )
    info = meta.get(_META_CLIENT_INFO)
    if not isinstance(meta[_META_CAPABILITIES], dict) or (
        info is not None and not isinstance(info, dict)
    ):
        raise RemoteProtocolError(
            "Invalid params: _meta client capabilities and info must be objects",
            INVALID_PARAMS,
        )
    level = meta.get(_META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise RemoteProtocolError(f"Invalid params: unknown log level {level!r}", INVALID_PARAMS)


def _log_rank(level: str) -> int:
    return LOG_LEVELS.index(level)


class ServerSession:
    """State of one client's session with the server.

    Args:
        server_info: `{"name": ..., "version": ...}` sent in `initialize` and discovery results.
        capabilities: The server's capabilities object.
        instructions: Optional text telling the model how to use this server.
        versions: The revisions this server accepts, newest first.
        peer: The connection's two-way request bookkeeping; a fresh one when None.
        discover_capabilities: The capabilities `server/discover` (2026-07-28) announces, when
            they differ from the handshake's (default: `capabilities`).
        max_subscriptions: URIs the client may be subscribed to at once.
        max_subscription_bytes: Bytes of URIs the client may be subscribed to at once.
    """

    def __init__(
        self,
        *,
        server_info: dict[str, Any],
        capabilities: dict[str, Any],
        instructions: str | None = None,
        versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        peer: Peer | None = None,
        discover_capabilities: dict[str, Any] | None = None,
        max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS,
        max_subscription_bytes: int = DEFAULT_MAX_SUBSCRIPTION_BYTES,
    ) -> None:
        unknown = [v for v in versions if v not in SUPPORTED_VERSIONS]
        if unknown:
            raise ValueError(f"unsupported protocol versions: {unknown}")
        self.server_info = server_info
        self.capabilities = capabilities
        self.discover_capabilities = (
            capabilities if discover_capabilities is None else discover_capabilities
        )
        self.instructions = instructions
        self.versions = versions
        self._handshake_versions = tuple(v for v in versions if v in HANDSHAKE_VERSIONS)
        #: Negotiated handshake-era version, None until `initialize` succeeded.
        self.protocol_version: str | None = None
        self.client_info: dict[str, Any] | None = None
        self.client_capabilities: dict[str, Any] = {}
        #: Set by `logging/setLevel`; handshake-era default sends info and above.
        self.log_level: LogLevel | None = "info"
        #: Requests in flight both ways: the client's (`begin`..`end`) and the server's own.
        self.peer = peer if peer is not None else Peer()
        #: URIs the client subscribed to (`resources/subscribe`): where updates go; bounded.
        self.subscriptions = SessionSubscriptions(max_subscriptions, max_subscription_bytes)
        #: The tasks whose status changes the client hears of (handshake era), oldest first.
        self.followed_tasks: dict[str, None] = {}
        #: Names the client as the requestor of its 2025-11-25 tasks when it has no token:
        #: random, never sent; None until `initialize` (a session adopted for one stateless
        #: request names nobody).
        self.requestor_key: str | None = None
        # The scope of a request with no `_meta`, shared while the session's state holds;
        # every change of that state (initialize, adopt, setLevel) clears it.
        self._plain_scope: RequestScope | None = None

    def follow_task(self, task_id: str) -> None:
        """Let the client hear of the task's status changes (one of its calls became it).

        At most `MAX_FOLLOWED_TASKS` at once: past it the oldest is forgotten (its client
        still polls it).
        """
        self.followed_tasks[task_id] = None
        while len(self.followed_tasks) > MAX_FOLLOWED_TASKS:
            del self.followed_tasks[next(iter(self.followed_tasks))]

    # -- lifecycle ---------------------------------------------------------------------------

    def initialize(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """Handle `initialize`: negotiate a version and return the result object.

        Raises:
            RemoteProtocolError: -32602 when params are malformed; -32600 when the session is
                already initialized (a version, once negotiated, holds for the connection).
        """
        if self.protocol_version is not None:
            raise RemoteProtocolError(
                f"Invalid Request: already initialized with protocol {self.protocol_version}",
                INVALID_REQUEST,
            )
        if not self._handshake_versions:
            raise RemoteProtocolError(
                "This server speaks only per-request protocol versions; call server/discover",
                UNSUPPORTED_PROTOCOL_VERSION,
                {"supported": list(self.versions), "requested": None},
            )
        params = params or {}
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RemoteProtocolError(
                'Invalid params: initialize needs "protocolVersion" (a string)', INVALID_PARAMS
            )
        capabilities = params.get("capabilities", {})
        client_info = params.get("clientInfo")
        if not isinstance(capabilities, dict):
            raise RemoteProtocolError(
                'Invalid params: "capabilities" must be an object', INVALID_PARAMS
            )
        if client_info is not None and not isinstance(client_info, dict):
            raise RemoteProtocolError(
                'Invalid params: "clientInfo" must be an object', INVALID_PARAMS
            )
        # spec, lifecycle: echo the client's version if supported, else offer our latest.
        version = (
            requested if requested in self._handshake_versions else self._handshake_versions[0]
        )
        self.protocol_version = version
        self._plain_scope = None
        self.client_info = client_info
        self.client_capabilities = capabilities
        self.requestor_key = secrets.token_hex(16)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "serverInfo": self.server_info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def check_batch(self) -> None:
        """Whether this session may take a JSON-RPC batch: only under a revision that has them.

        Raises:
            RemoteProtocolError: -32600 naming the revisions with batches, when the session
                speaks another or has not negotiated one yet (`initialize` is never batched).
        """
        refusal = batch_refusal(self.protocol_version)
        if refusal is not None:
            raise RemoteProtocolError(refusal, INVALID_REQUEST)

    def adopt(self, version: str) -> None:
        """Act as if `initialize` had negotiated `version` (stateless HTTP: no handshake).

        Raises:
            RemoteProtocolError: -32022 when the version is not a supported handshake version.
        """
        if version not in self._handshake_versions:
            raise RemoteProtocolError(
                "Unsupported protocol version",
                UNSUPPORTED_PROTOCOL_VERSION,
                {"supported": list(self.versions), "requested": version},
            )
        self.protocol_version = version
        self._plain_scope = None

    def discover(self) -> dict[str, Any]:
        """Handle `server/discover` (2026-07-28): versions, capabilities, identity."""
        result: dict[str, Any] = {
            "supportedVersions": list(self.versions),
            "capabilities": self.discover_capabilities,
            "_meta": {SERVER_INFO: self.server_info},
            **CACHE_HINTS,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def set_log_level(self, params: dict[str, Any] | None) -> None:
        """Handle `logging/setLevel`.

        Raises:
            RemoteProtocolError: -32602 for an unknown level.
        """
        level = (params or {}).get("level")
        if level not in LOG_LEVELS:
            raise RemoteProtocolError(
                f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}; got {level!r}",
                INVALID_PARAMS,
            )
        self.log_level = level
        self._plain_scope = None

    # -- requests ----------------------------------------------------------------------------

    def scope(self, method: str, params: dict[str, Any] | None) -> RequestScope:
        """Resolve the version and peer facts a request runs under.

        Raises:
            RemoteProtocolError: -32022 for an unsupported per-request version, -32600 for a
                handshake-era request before `initialize`.
        """
        meta = params.get("_meta") if params else None
        if meta is None and self._plain_scope is not None:
            return self._plain_scope  # the common case: nothing per-request to read
        requested = meta.get(_META_VERSION) if isinstance(meta, dict) else None
        if requested is not None:
            return self._modern_scope(method, requested, meta, params)  # type: ignore[arg-type]
        if self.protocol_version is None:
            if method in _BEFORE_INIT or method == "server/discover":
                return RequestScope(
                    self._handshake_versions[0] if self._handshake_versions else self.versions[0],
                    None,
                    {},
                    None,
                    progress_token(params),
                )
            raise RemoteProtocolError(
                f"Invalid Request: {method!r} before initialize; send initialize first"
                " (or name a protocol version in params._meta)",
                INVALID_REQUEST,
            )
        scope = RequestScope(
            self.protocol_version,
            self.client_info,
            self.client_capabilities,
            self.log_level,
            progress_token(params),
        )
        if meta is None:
            self._plain_scope = scope
        return scope

    def _modern_scope(
        self, method: str, requested: Any, meta: dict[str, Any], params: dict[str, Any] | None
    ) -> RequestScope:
        if requested not in self.versions or requested not in MODERN_VERSIONS:
            raise RemoteProtocolError(
                "Unsupported protocol version",
                UNSUPPORTED_PROTOCOL_VERSION,
                {"supported": list(self.versions), "requested": requested},
            )
        if method in HANDSHAKE_ONLY_METHODS:
            raise RemoteProtocolError(
                f"Method not found: {method} (protocol version {requested} has no such method)",
                METHOD_NOT_FOUND,
                {"method": method},
            )
        check_request_meta(params)
        return RequestScope(
            requested,
            meta.get(_META_CLIENT_INFO),
            meta[_META_CAPABILITIES],
            meta.get(_META_LOG_LEVEL),
            progress_token(params),
        )

    def begin(self, request_id: RequestId) -> None:
        """Mark a request id as in flight.

        Raises:
            RemoteProtocolError: -32600 when the id is already in flight.
        """
        self.peer.begin_inbound(request_id)

    def end(self, request_id: RequestId) -> None:
        """Forget a request id once its response is written (or it was cancelled)."""
        self.peer.end_inbound(request_id)

    def in_flight(self, request_id: RequestId) -> bool:
        """Whether a request with this id is running."""
        return self.peer.inbound_in_flight(request_id)

    @property
    def in_flight_count(self) -> int:
        """How many requests are running."""
        return self.peer.inbound_count

    @staticmethod
    def log_enabled(scope: RequestScope, level: LogLevel) -> bool:
        """Whether a log message at `level` may be sent under `scope`."""
        return scope.log_level is not None and _log_rank(level) >= _log_rank(scope.log_level)

    @staticmethod
    def cacheable(
        scope: RequestScope, result: dict[str, Any], hints: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Add the caching hints a cacheable result carries under `scope`'s revision.

        Args:
            scope: The request's scope.
            result: The result object.
            hints: `ttlMs` and `cacheScope` to send (default: `CACHE_HINTS`).
        """
        if scope.modern:
            result.update(CACHE_HINTS if hints is None else hints)
        return result

    def complete(self, scope: RequestScope, result: dict[str, Any]) -> dict[str, Any]:
        """Add what the request's version requires of every result (2026-07-28: resultType)."""
        if scope.modern:
            result["resultType"] = "complete"
        return result
