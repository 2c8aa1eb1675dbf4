"""The client session's protocol rules as tables, over `SessionPair` (no event loop)."""

from __future__ import annotations

import pytest

from tests.helpers import LATEST, MODERN
from tests.session_pair import SessionPair
from trio_mcp import RemoteProtocolError, RequestError
from trio_mcp._core.client_session import ClientSession, Next
from trio_mcp._core.versions import HANDSHAKE_VERSIONS

EVERYTHING = (MODERN, *HANDSHAKE_VERSIONS)


@pytest.mark.parametrize(
    ("wanted", "server_versions", "sent", "version", "per_request"),
    [
        # A modern client and server: one probe, no handshake.
        (MODERN, EVERYTHING, ["server/discover"], MODERN, True),
        (MODERN, (MODERN,), ["server/discover"], MODERN, True),
        # A modern client and a handshake-era server: -32022 lists handshake revisions.
        (MODERN, HANDSHAKE_VERSIONS, ["server/discover", "initialize"], LATEST, False),
        # A handshake-era client never probes; the server echoes each revision it speaks...
        *[(version, EVERYTHING, ["initialize"], version, False) for version in HANDSHAKE_VERSIONS],
        # ...or offers its newest, which the client speaks too, older or newer than asked.
        ("2024-11-05", ("2025-11-25",), ["initialize"], "2025-11-25", False),
        (LATEST, ("2024-11-05",), ["initialize"], "2024-11-05", False),
    ],
)
def test_start(
    wanted: str,
    server_versions: tuple[str, ...],
    sent: list[str],
    version: str,
    per_request: bool,
) -> None:
    pair = SessionPair(wanted, server_versions=server_versions)
    pair.start()
    assert pair.sent == sent
    assert pair.client.protocol_version == version
    assert pair.client.per_request is per_request
    assert pair.client.server_info == {"name": "pair-server", "version": "1"}
    assert pair.client.server_capabilities == {"tools": {"listChanged": False}}


def test_a_handshake_client_and_a_modern_only_server_have_nothing_in_common() -> None:
    pair = SessionPair(LATEST, server_versions=(MODERN,))
    with pytest.raises(RequestError) as info:
        pair.start()
    assert info.value.code == -32022
    assert pair.client.server_info == {}


def test_modern_requests_carry_their_meta_and_get_modern_results() -> None:
    pair = SessionPair(MODERN)
    pair.start()
    pair.client.set_log_level("debug")
    result = pair.send("tools/list")
    assert result == {"tools": [], "ttlMs": 0, "cacheScope": "public", "resultType": "complete"}
    meta = pair.client.request_meta({"progressToken": 7})
    assert meta["progressToken"] == 7
    assert meta["io.modelcontextprotocol/logLevel"] == "debug"
    assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
    # A modern request to a server session gets no handshake-era method.
    with pytest.raises(RequestError) as info:
        pair.send("ping")
    assert info.value.code == -32601


def test_handshake_requests_carry_no_per_request_meta() -> None:
    pair = SessionPair(LATEST)
    pair.start()
    assert pair.client.request_meta({}) == {}
    assert pair.send("ping") == {}


@pytest.mark.parametrize(
    ("code", "data", "first", "second"),
    [
        (-32022, {"supported": [MODERN]}, Next.RETRY, Next.RAISE),
        (-32022, {"supported": [MODERN, LATEST]}, Next.RETRY, Next.INITIALIZE),
        (-32022, {"supported": [LATEST]}, Next.INITIALIZE, Next.INITIALIZE),
        (-32022, {"supported": ["1999-01-01"]}, Next.RAISE, Next.RAISE),
        (-32022, None, Next.RAISE, Next.RAISE),
        (-32601, None, Next.INITIALIZE, Next.INITIALIZE),
    ],
)
def test_discover_failures(code: int, data: object, first: Next, second: Next) -> None:
    client = ClientSession(MODERN, {"name": "c"})
    client.begin_discover()
    assert client.discover_failed(code, data) is first
    assert client.per_request is False
    assert client.discover_failed(code, data) is second  # one retry at most


@pytest.mark.parametrize(
    ("result", "match"),
    [
        ([], "malformed initialize result"),
        ({"protocolVersion": "1999-01-01"}, "1999-01-01"),
        ({"protocolVersion": MODERN}, "does not speak"),
    ],
)
def test_bad_initialize_results(result: object, match: str) -> None:
    client = ClientSession(LATEST, {"name": "c"})
    with pytest.raises(RemoteProtocolError, match=match):
        client.initialized(result)


def test_a_discover_result_without_our_revision_means_initialize() -> None:
    client = ClientSession(MODERN, {"name": "c"})
    client.begin_discover()
    assert client.discovered({"supportedVersions": [LATEST]}) is False
    assert client.per_request is False
    with pytest.raises(RemoteProtocolError, match="malformed server/discover"):
        client.discovered("nope")


def test_unknown_revision_and_log_level_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported protocol version"):
        ClientSession("1999-01-01", {})
    with pytest.raises(ValueError, match="unknown log level"):
        ClientSession(MODERN, {}).set_log_level("loud")
