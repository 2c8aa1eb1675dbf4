"""The client side of one MCP session, sans-IO: which revision, what to send, what was learned.

The start of a session is decided here and its I/O is the runtime's (`_runtime/client`). A
client that wants 2026-07-28 probes with `server/discover`; the answer (`discovered`) or the
error (`discover_failed`) says whether that revision is in use or the handshake of `initialize`
follows (`initialize_params`, `initialized`). Spec 2026-07-28, versioning: an
UnsupportedProtocolVersionError (-32022) lists the server's revisions; a list that names ours
gets one retry, a list with handshake-era revisions means initialize, and a list with neither is
the caller's error to raise.

Under a per-request revision every request carries the revision, the client's capabilities and
info, and the log level it wants in `_meta` (`request_meta`): the server keeps no session state
to hold them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final

from .._exceptions import RemoteProtocolError
from .answering import Answerable
from .meta import (
    CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SERVER_INFO,
    TASKS_EXTENSION,
)
from .types import LOG_LEVELS
from .versions import (
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    revision,
)

__all__ = ["DEFAULT_MODERN_LOG_LEVEL", "ClientSession", "Next"]

# The log level a 2026-07-28 request asks for until the user sets one: what servers of the
# handshake era send by default (trio-mcp's among them), so a log handler hears the same in
# both eras. That revision's servers send no log at all to a request that names no level.
DEFAULT_MODERN_LOG_LEVEL: Final = "info"


class Next(Enum):
    """What the runtime does after a failed `server/discover`."""

    RETRY = "retry"  # send server/discover once more
    INITIALIZE = "initialize"  # the server is of the handshake era (or speaks both)
    RAISE = "raise"  # nothing in common: the error goes to the caller


class ClientSession:
    """The protocol state of one client connection.

    Args:
        wanted_version: The revision to speak: 2026-07-28 when the server does, else the
            handshake; a handshake-era revision starts with `initialize` at once.
        client_info: `{"name", "version", ...}` sent to the server.
        capabilities: The client's capabilities object, besides those of `answerable`.
        answerable: What the client answers when the server asks (`capabilities_for`).
        extensions: The extensions declared, by identifier (`capabilities_for`).

    Raises:
        ValueError: for a revision this package does not speak.
    """

    def __init__(
        self,
        wanted_version: str,
        client_info: dict[str, Any],
        capabilities: dict[str, Any] | None = None,
        answerable: Answerable | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> None:
        if wanted_version not in SUPPORTED_VERSIONS:
            raise ValueError(
                f"unsupported protocol version {wanted_version!r}; "
                f"choose one of {', '.join(SUPPORTED_VERSIONS)}"
            )
        self.wanted_version = wanted_version
        self.client_info = client_info
        self.capabilities = capabilities or {}
        self.answerable = answerable or Answerable()
        self.extensions = extensions or {}
        #: The capabilities the server was last told of: what it may ask for.
        self.declared: dict[str, Any] = {}
        #: The revision in use; the wanted one until the start has settled it.
        self.protocol_version = wanted_version
        #: Whether requests carry the per-request `_meta`.
        self.per_request = False
        self.log_level: str = DEFAULT_MODERN_LOG_LEVEL
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._retried = False

    # -- the start ----------------------------------------------------------------------------

    @property
    def probes(self) -> bool:
        """Whether the start begins with `server/discover` rather than `initialize`."""
        return revision(self.wanted_version).per_request

    def begin_discover(self) -> None:
        """A `server/discover` is about to go out: it speaks the wanted revision."""
        self.per_request = True

    def discovered(self, result: Any) -> bool:
        """Take a `server/discover` result; whether the wanted revision is now in use.

        Raises:
            RemoteProtocolError: for a result that is no object.
        """
        if not isinstance(result, dict):
            self.per_request = False
            raise RemoteProtocolError(f"malformed server/discover result: {str(result)[:200]}")
        supported = result.get("supportedVersions")
        if isinstance(supported, list) and self.wanted_version not in supported:
            self.per_request = False
            return False
        meta = result.get("_meta")
        self._adopt(
            self.wanted_version, meta.get(SERVER_INFO) if isinstance(meta, dict) else None, result
        )
        return True

    def discover_failed(self, code: int, data: Any) -> Next:
        """What follows a `server/discover` answered with a JSON-RPC error."""
        self.per_request = False
        if code != UNSUPPORTED_PROTOCOL_VERSION:
            return Next.INITIALIZE  # a handshake-era server: it does not know the method
        supported = data.get("supported") if isinstance(data, dict) else None
        if not isinstance(supported, list):
            return Next.RAISE
        if self.wanted_version in supported and not self._retried:
            self._retried = True
            return Next.RETRY
        if set(supported) & set(HANDSHAKE_VERSIONS):
            return Next.INITIALIZE
        return Next.RAISE

    def initialize_params(self) -> dict[str, Any]:
        """The params of `initialize`: the wanted revision, or the newest handshake one."""
        wanted = self.wanted_version
        version = wanted if revision(wanted).handshake else LATEST_HANDSHAKE_VERSION
        return {
            "protocolVersion": version,
            "capabilities": self.capabilities_for(version),
            "clientInfo": self.client_info,
        }

    def capabilities_for(self, version: str) -> dict[str, Any]:
        """The capabilities object to declare under `version`; remembered as `declared`.

        Those given, with what the client can answer (`Answerable`) spelt for `version`:
        `initialize` declares them for the revision it asks for, each 2026-07-28 request for
        that revision. The `extensions` (the tasks extension) are added for per-request
        revisions only: the handshake's schema has no such field, and a request opts in on its
        own there.
        """
        declared = {**self.capabilities, **self.answerable.capabilities(version)}
        if self.extensions and revision(version).per_request:
            declared["extensions"] = {**declared.get("extensions", {}), **self.extensions}
        if TASKS_EXTENSION in self.extensions and revision(version).tasks == "utility":
            # A client that does tasks does 2025-11-25's there (`Revision.tasks`): it runs
            # the server's sampling and elicitation as tasks when asked.
            declared["tasks"] = {
                "list": {},
                "cancel": {},
                "requests": {
                    **({"sampling": {"createMessage": {}}} if self.answerable.sampling else {}),
                    **(
                        {"elicitation": {"create": {}}} if self.answerable.elicitation_modes else {}
                    ),
                },
            }
        self.declared = declared
        return declared

    def initialized(self, result: Any) -> None:
        """Take the `initialize` result.

        Raises:
            RemoteProtocolError: for a malformed result or a revision this client does not
                speak.
        """
        if not isinstance(result, dict):
            raise RemoteProtocolError(f"malformed initialize result: {str(result)[:200]}")
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_VERSIONS:
            raise RemoteProtocolError(
                f"the server chose protocol version {version!r}, which this client does not "
                f"speak (it speaks {', '.join(HANDSHAKE_VERSIONS)})"
            )
        self._adopt(version, result.get("serverInfo"), result)

    def _adopt(self, version: str, info: Any, result: dict[str, Any]) -> None:
        # What the server said of itself, as received; malformed parts become empty values.
        self.protocol_version = version
        self.server_info = info if isinstance(info, dict) else {}
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None

    # -- requests -----------------------------------------------------------------------------

    def request_meta(self, meta: dict[str, Any]) -> dict[str, Any]:
        """`meta` with the per-request fields added when the revision in use wants them."""
        if not self.per_request:
            return meta
        return {
            **meta,
            PROTOCOL_VERSION: self.wanted_version,
            CAPABILITIES: self.capabilities_for(self.wanted_version),
            CLIENT_INFO: self.client_info,
            LOG_LEVEL: self.log_level,
        }

    def set_log_level(self, level: str) -> None:
        """The level to ask for in each request from now on (in its `_meta`, per-request revisions).

        Raises:
            ValueError: for a level the specification does not name.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; choose one of {', '.join(LOG_LEVELS)}")
        self.log_level = level
