"""What a client answers when the server asks, sans-IO (`_core/answering`).

Capabilities per revision, the elicitation modes a capabilities object declares, schema
defaults (SEP-1034), and the strict reading of `input_required` results and their retries.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.session_pair import SessionPair
from trio_mcp import RemoteProtocolError
from trio_mcp._core.answering import (
    Answerable,
    InputRound,
    declared_modes,
    input_round,
    retry_params,
    with_defaults,
)
from trio_mcp._core.meta import CAPABILITIES
from trio_mcp._core.versions import HANDSHAKE_VERSIONS

ALL = Answerable(("form", "url"), sampling=True, roots=True)


# -- capabilities ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (
            "2026-07-28",
            {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}},
        ),
        (
            "2025-11-25",
            {
                "elicitation": {"form": {}, "url": {}},
                "sampling": {},
                "roots": {"listChanged": True},
            },
        ),
        ("2025-06-18", {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}),
        ("2025-03-26", {"sampling": {}, "roots": {"listChanged": True}}),
        ("2024-11-05", {"sampling": {}, "roots": {"listChanged": True}}),
    ],
)
def test_capabilities_are_spelt_as_each_revision_knows_them(
    version: str, expected: dict[str, Any]
) -> None:
    assert ALL.capabilities(version) == expected


def test_nothing_is_declared_without_handlers() -> None:
    assert Answerable().capabilities("2025-11-25") == {}
    assert Answerable().capabilities("2026-07-28") == {}


def test_narrowed_modes_are_declared_as_narrowed() -> None:
    forms = Answerable(("form",))
    assert forms.capabilities("2025-11-25") == {"elicitation": {"form": {}}}
    urls = Answerable(("url",))
    assert urls.capabilities("2026-07-28") == {"elicitation": {"url": {}}}
    # A revision without URL mode cannot take a URL-only client's elicitations at all.
    assert urls.capabilities("2025-06-18") == {}


@pytest.mark.parametrize(
    ("capabilities", "modes"),
    [
        ({}, ()),
        ({"elicitation": {}}, ("form",)),
        ({"elicitation": {"url": {}}}, ("url",)),
        ({"elicitation": {"form": {}, "url": {}}}, ("form", "url")),
        ({"elicitation": True}, ()),
    ],
)
def test_declared_modes(capabilities: dict[str, Any], modes: tuple[str, ...]) -> None:
    assert declared_modes(capabilities) == modes


def test_the_session_declares_them_at_initialize_and_in_each_modern_request() -> None:
    handshake = SessionPair("2025-11-25", answerable=ALL)
    handshake.start()
    assert handshake.server.client_capabilities == ALL.capabilities("2025-11-25")
    assert handshake.client.declared == handshake.server.client_capabilities

    experimental: dict[str, Any] = {"experimental": {"x": {}}}
    modern = SessionPair("2026-07-28", capabilities=experimental, answerable=ALL)
    modern.start()
    meta = modern.client.request_meta({})
    assert meta[CAPABILITIES] == {**experimental, **ALL.capabilities("2026-07-28")}
    # Falling back to the handshake declares what that revision knows.
    fallback = SessionPair(
        "2026-07-28", server_versions=HANDSHAKE_VERSIONS, capabilities=experimental, answerable=ALL
    )
    fallback.start()
    assert fallback.sent == ["server/discover", "initialize"]
    assert fallback.server.client_capabilities["roots"] == {"listChanged": True}
    assert fallback.server.client_capabilities["experimental"] == {"x": {}}
    assert fallback.client.declared == fallback.server.client_capabilities


# -- defaults (SEP-1034) --------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "verified": {"type": "boolean", "default": True},
        "nickname": {"type": "string"},
    },
}


def test_defaults_fill_what_the_answer_leaves_out() -> None:
    answer = with_defaults(SCHEMA, {"age": 41, "nickname": "JD"})
    assert answer == {"name": "John Doe", "age": 41, "verified": True, "nickname": "JD"}
    assert with_defaults(SCHEMA, None) == {"name": "John Doe", "age": 30, "verified": True}
    # A value the user gave wins, even a falsy one.
    assert with_defaults(SCHEMA, {"verified": False})["verified"] is False


def test_without_defaults_the_answer_is_left_alone() -> None:
    plain = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert with_defaults(plain, None) is None
    assert with_defaults(plain, {"a": "x"}) == {"a": "x"}
    assert with_defaults(None, {"a": "x"}) == {"a": "x"}
    assert with_defaults(SCHEMA, "not a dict") == "not a dict"


# -- input rounds ---------------------------------------------------------------------------------


def test_a_complete_result_has_no_round() -> None:
    assert input_round({"content": []}, "tools/call") is None
    assert input_round({"resultType": "complete", "content": []}, "tools/call") is None
    assert input_round("odd", "tools/call") is None


def test_an_input_round_is_read_as_sent() -> None:
    state = 'opaque "state" \u2028 with ünïcode'
    result = {
        "resultType": "input_required",
        "inputRequests": {
            "b": {"method": "roots/list"},
            "a": {"method": "elicitation/create", "params": {"message": "?"}},
        },
        "requestState": state,
    }
    round_ = input_round(result, "tools/call")
    assert round_ == InputRound(
        {"b": ("roots/list", {}), "a": ("elicitation/create", {"message": "?"})}, state
    )
    assert round_ is not None
    assert list(round_.requests) == ["b", "a"]


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({}, "neither inputRequests nor requestState"),
        ({"requestState": 5}, "requestState that is not a string"),
        ({"inputRequests": []}, "inputRequests that is not an object"),
        ({"inputRequests": {"x": {"method": "tools/call"}}}, "of method 'tools/call'"),
        ({"inputRequests": {"x": "roots/list"}}, "of method None"),
        (
            {"inputRequests": {"x": {"method": "roots/list", "params": []}}},
            "params are no object",
        ),
    ],
)
def test_a_malformed_input_round_is_the_servers_error(result: dict[str, Any], message: str) -> None:
    with pytest.raises(RemoteProtocolError, match=message):
        input_round({"resultType": "input_required", **result}, "tools/call")


def test_a_retry_echoes_the_state_and_answers_by_key() -> None:
    params = {
        "name": "t",
        "arguments": {"a": 1},
        "inputResponses": {"old": 1},
        "requestState": "old",
    }
    round_ = InputRound({"k": ("roots/list", {})}, "s1")
    assert retry_params(params, round_, {"k": {"roots": []}}) == {
        "name": "t",
        "arguments": {"a": 1},
        "inputResponses": {"k": {"roots": []}},
        "requestState": "s1",
    }
    # No state sent: none echoed (not even the one of an earlier round); nothing asked: no
    # inputResponses.
    assert retry_params(params, InputRound({"k": ("roots/list", {})}, None), {"k": 1}) == {
        "name": "t",
        "arguments": {"a": 1},
        "inputResponses": {"k": 1},
    }
    assert retry_params(params, InputRound({}, "s2"), {}) == {
        "name": "t",
        "arguments": {"a": 1},
        "requestState": "s2",
    }
