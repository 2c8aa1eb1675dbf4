"""ServerSession: lifecycle, versions, in-flight ids, log levels, per-request scopes (sans-IO)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import MODERN
from trio_mcp import RemoteProtocolError
from trio_mcp._core.jsonrpc import METHOD_NOT_FOUND
from trio_mcp._core.server_session import RequestScope, ServerSession
from trio_mcp._core.types import LOG_LEVELS
from trio_mcp._core.versions import (
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
)

INFO = {"name": "srv", "version": "1"}
CAPS = {"tools": {"listChanged": False}, "logging": {}}
V = "io.modelcontextprotocol/protocolVersion"


def session(**kwargs: Any) -> ServerSession:
    return ServerSession(server_info=INFO, capabilities=CAPS, **kwargs)


def init(s: ServerSession, version: str = "2025-11-25", **extra: Any) -> dict[str, Any]:
    return s.initialize({"protocolVersion": version, "capabilities": {}, **extra})


def modern_meta(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    return {"_meta": {V: version, "io.modelcontextprotocol/clientCapabilities": {}, **extra}}


def raises(code: int) -> Any:
    return pytest.raises(RemoteProtocolError, check=lambda e: e.code == code)


def test_version_constants() -> None:
    assert LATEST_HANDSHAKE_VERSION == "2025-11-25"
    assert HANDSHAKE_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
    assert MODERN_VERSIONS == (MODERN,)
    assert (MODERN, *HANDSHAKE_VERSIONS) == SUPPORTED_VERSIONS
    assert UNSUPPORTED_PROTOCOL_VERSION == -32022


# -- initialize / negotiation -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [
        *[(v, v) for v in HANDSHAKE_VERSIONS],
        ("2099-01-01", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
        ("", "2025-11-25"),
        ("latest", "2025-11-25"),
        (MODERN, "2025-11-25"),  # the modern revision has no handshake
    ],
)
def test_version_negotiation(requested: str, negotiated: str) -> None:
    s = session()
    result = init(s, requested)
    assert result["protocolVersion"] == negotiated
    assert s.protocol_version == negotiated


def test_initialize_result() -> None:
    s = session(instructions="Use the tools.")
    result = s.initialize(
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "c", "version": "2"},
        }
    )
    assert result == {
        "protocolVersion": "2025-06-18",
        "capabilities": CAPS,
        "serverInfo": INFO,
        "instructions": "Use the tools.",
    }
    assert s.client_info == {"name": "c", "version": "2"}
    assert s.client_capabilities == {"roots": {}}


def test_initialize_without_instructions_leaves_them_out() -> None:
    assert "instructions" not in init(session())


def test_initialize_with_restricted_versions_offers_newest_of_those() -> None:
    s = session(versions=("2025-06-18", "2024-11-05"))
    assert init(s, "2025-11-25")["protocolVersion"] == "2025-06-18"
    s = session(versions=("2025-06-18", "2024-11-05"))
    assert init(s, "2024-11-05")["protocolVersion"] == "2024-11-05"


def test_modern_only_server_refuses_initialize() -> None:
    s = session(versions=(MODERN,))
    with raises(UNSUPPORTED_PROTOCOL_VERSION) as info:
        init(s)
    assert info.value.data == {"supported": [MODERN], "requested": None}


def test_unknown_versions_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="2030-01-01"):
        session(versions=("2030-01-01",))


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"protocolVersion": 20251125},
        {"protocolVersion": None},
        {"protocolVersion": "2025-11-25", "capabilities": []},
        {"protocolVersion": "2025-11-25", "capabilities": "x"},
        {"protocolVersion": "2025-11-25", "clientInfo": "me"},
    ],
)
def test_initialize_bad_params(params: dict[str, Any] | None) -> None:
    s = session()
    with raises(-32602) as info:
        s.initialize(params)
    assert info.value.message.startswith("Invalid params")
    assert s.protocol_version is None


def test_discover() -> None:
    result = session(instructions="hi").discover()
    assert result == {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": CAPS,
        "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
        "ttlMs": 0,
        "cacheScope": "public",
        "instructions": "hi",
    }


# -- requests before initialize ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["initialize", "ping", "server/discover"])
def test_allowed_before_initialize(method: str) -> None:
    scope = session().scope(method, None)
    assert scope.version == "2025-11-25"
    assert scope.modern is False
    assert scope.log_level is None


@pytest.mark.parametrize(
    "method", ["tools/list", "tools/call", "logging/setLevel", "resources/list", "whatever"]
)
def test_rejected_before_initialize(method: str) -> None:
    with raises(-32600) as info:
        session().scope(method, {})
    assert method in info.value.message
    assert "initialize" in info.value.message


def test_after_initialize_scope_carries_session_facts() -> None:
    s = session()
    s.initialize(
        {
            "protocolVersion": "2025-03-26",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "c", "version": "1"},
        }
    )
    scope = s.scope("tools/call", {"name": "x", "_meta": {"progressToken": "tok"}})
    assert scope == RequestScope(
        version="2025-03-26",
        client_info={"name": "c", "version": "1"},
        client_capabilities={"sampling": {}},
        log_level="info",
        progress_token="tok",
    )
    assert scope.modern is False


# -- in-flight ids ------------------------------------------------------------------------------


def test_duplicate_in_flight_id_rejected() -> None:
    s = session()
    s.begin(1)
    with raises(-32600) as info:
        s.begin(1)
    assert "already in use" in info.value.message
    assert s.in_flight_count == 1


def test_end_frees_the_id() -> None:
    s = session()
    s.begin(1)
    assert s.in_flight(1)
    s.end(1)
    assert not s.in_flight(1)
    assert s.in_flight_count == 0
    s.begin(1)  # reusable once answered
    assert s.in_flight(1)


def test_end_of_unknown_id_is_harmless() -> None:
    s = session()
    s.end("never")
    assert s.in_flight_count == 0


def test_int_and_str_ids_are_distinct() -> None:
    s = session()
    s.begin(1)
    s.begin("1")
    assert s.in_flight_count == 2
    s.end(1)
    assert s.in_flight("1")
    assert not s.in_flight(1)


# -- logging ------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", LOG_LEVELS)
def test_set_log_level(level: str) -> None:
    s = session()
    s.set_log_level({"level": level})
    assert s.log_level == level


@pytest.mark.parametrize(
    "params", [None, {}, {"level": "verbose"}, {"level": "INFO"}, {"level": 3}, {"level": None}]
)
def test_set_log_level_invalid(params: dict[str, Any] | None) -> None:
    s = session()
    with raises(-32602) as info:
        s.set_log_level(params)
    assert "debug" in info.value.message  # lists the valid levels
    assert s.log_level == "info"  # unchanged


def test_default_log_level_is_info() -> None:
    assert session().log_level == "info"


def _scope(level: Any) -> RequestScope:
    return RequestScope("2025-11-25", None, {}, level, None)


@pytest.mark.parametrize(
    ("threshold", "level", "enabled"),
    [
        ("debug", "debug", True),
        ("info", "debug", False),
        ("info", "info", True),
        ("info", "emergency", True),
        ("warning", "notice", False),
        ("warning", "warning", True),
        ("warning", "error", True),
        ("emergency", "alert", False),
        ("emergency", "emergency", True),
        (None, "emergency", False),
        (None, "debug", False),
    ],
)
def test_log_enabled(threshold: Any, level: Any, enabled: bool) -> None:
    assert ServerSession.log_enabled(_scope(threshold), level) is enabled


def test_set_level_reaches_later_scopes() -> None:
    s = session()
    init(s)
    s.set_log_level({"level": "error"})
    scope = s.scope("tools/call", {})
    assert scope.log_level == "error"
    assert not ServerSession.log_enabled(scope, "warning")
    assert ServerSession.log_enabled(scope, "critical")


# -- per-request versions (2026-07-28) --------------------------------------------------------


def test_modern_scope_needs_no_initialize() -> None:
    s = session()
    scope = s.scope(
        "tools/call",
        {
            "name": "x",
            "_meta": {
                V: MODERN,
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
                "io.modelcontextprotocol/clientInfo": {"name": "m", "version": "9"},
                "io.modelcontextprotocol/logLevel": "warning",
                "progressToken": 7,
            },
        },
    )
    assert scope == RequestScope(
        MODERN, {"name": "m", "version": "9"}, {"elicitation": {}}, "warning", 7
    )
    assert scope.modern is True
    assert s.protocol_version is None  # the session itself stays un-negotiated


def test_modern_scope_defaults() -> None:
    scope = session().scope("tools/list", modern_meta())
    assert scope == RequestScope(MODERN, None, {}, None, None)
    assert not ServerSession.log_enabled(scope, "emergency")  # no level: no logs


def test_modern_scope_beside_a_handshake_session() -> None:
    s = session()
    init(s, "2025-06-18")
    assert s.scope("tools/list", modern_meta()).version == MODERN
    assert s.scope("tools/list", {}).version == "2025-06-18"


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel"])
def test_methods_the_modern_revision_removed_are_not_found(method: str) -> None:
    # spec 2026-07-28, changelog: no handshake, no ping, no logging/setLevel (the log level
    # travels in _meta). A handshake session beside it still answers them for its own era.
    s = session()
    init(s)
    with raises(METHOD_NOT_FOUND) as info:
        s.scope(method, modern_meta())
    assert info.value.data == {"method": method}
    assert s.scope(method, {}).version == "2025-11-25"


@pytest.mark.parametrize("requested", ["2025-11-25", "2024-11-05", "2027-01-01", "nonsense", 5, ""])
def test_unsupported_per_request_version(requested: Any) -> None:
    with raises(UNSUPPORTED_PROTOCOL_VERSION) as info:
        session().scope("tools/list", modern_meta(requested))
    assert info.value.data == {"supported": list(SUPPORTED_VERSIONS), "requested": requested}


def test_modern_version_not_enabled_on_this_server() -> None:
    s = session(versions=HANDSHAKE_VERSIONS)
    with raises(UNSUPPORTED_PROTOCOL_VERSION) as info:
        s.scope("tools/list", modern_meta())
    assert info.value.data == {"supported": list(HANDSHAKE_VERSIONS), "requested": MODERN}


@pytest.mark.parametrize(
    "extra",
    [
        {"io.modelcontextprotocol/clientCapabilities": []},
        {"io.modelcontextprotocol/clientInfo": "me"},
        {"io.modelcontextprotocol/logLevel": "loud"},
    ],
)
def test_modern_bad_meta(extra: dict[str, Any]) -> None:
    with raises(-32602):
        session().scope("tools/list", modern_meta(**extra))


@pytest.mark.parametrize(
    "meta", [{V: MODERN}, {V: MODERN, "io.modelcontextprotocol/logLevel": "info"}]
)
def test_modern_request_without_client_capabilities_is_malformed(meta: dict[str, Any]) -> None:
    # spec 2026-07-28, basic: clientCapabilities is a required per-request field; a request
    # missing one is malformed (-32602), not served with empty capabilities.
    with raises(-32602) as info:
        session().scope("tools/list", {"_meta": meta})
    assert "clientCapabilities" in info.value.message


def test_non_object_meta_is_handshake_era() -> None:
    s = session()
    with raises(-32600):
        s.scope("tools/list", {"_meta": "x"})


# -- progress tokens ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "token"),
    [
        (None, None),
        ({}, None),
        ({"_meta": {}}, None),
        ({"_meta": None}, None),
        ({"_meta": "x"}, None),
        ({"_meta": {"progressToken": 1}}, 1),
        ({"_meta": {"progressToken": 0}}, 0),
        ({"_meta": {"progressToken": "abc"}}, "abc"),
        ({"_meta": {"progressToken": ""}}, ""),
        ({"_meta": {"progressToken": True}}, None),
        ({"_meta": {"progressToken": 1.5}}, None),
        ({"_meta": {"progressToken": None}}, None),
        ({"_meta": {"progressToken": {"a": 1}}}, None),
        ({"progressToken": 1}, None),  # only inside _meta
    ],
)
def test_progress_token(params: dict[str, Any] | None, token: Any) -> None:
    s = session()
    init(s)
    scope = s.scope("tools/call", params)
    assert scope.progress_token == token
    assert type(scope.progress_token) is type(token)


def test_progress_token_in_modern_scope_and_before_initialize() -> None:
    s = session()
    assert s.scope("tools/call", modern_meta(progressToken="p")).progress_token == "p"
    assert s.scope("ping", {"_meta": {"progressToken": 3}}).progress_token == 3


# -- complete -------------------------------------------------------------------------------------


def test_complete_adds_result_type_only_for_modern() -> None:
    s = session()
    init(s)
    old = s.scope("tools/list", {})
    assert s.complete(old, {"tools": []}) == {"tools": []}
    new = s.scope("tools/list", modern_meta())
    assert s.complete(new, {"tools": []}) == {"tools": [], "resultType": "complete"}


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_complete_leaves_every_handshake_version_alone(version: str) -> None:
    scope = RequestScope(version, None, {}, "info", None)
    assert session().complete(scope, {"x": 1}) == {"x": 1}
