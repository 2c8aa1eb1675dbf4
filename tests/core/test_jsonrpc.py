"""JSON-RPC 2.0 wire: classify(), parse(), dumps()/loads() (sans-IO, no event loop)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp import RemoteProtocolError
from trio_mcp._core.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    Response,
    classify,
    dumps,
    encode_or_error,
    error_response,
    loads,
    parse,
    result_response,
)

V = {"jsonrpc": "2.0"}


# -- valid messages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            {**V, "id": 1, "method": "ping"}, Request(1, "ping", None), id="request-int-id"
        ),
        pytest.param(
            {**V, "id": "a", "method": "ping"}, Request("a", "ping", None), id="request-str-id"
        ),
        pytest.param({**V, "id": 0, "method": "m"}, Request(0, "m", None), id="request-zero-id"),
        pytest.param(
            {**V, "id": -7, "method": "m"}, Request(-7, "m", None), id="request-negative-id"
        ),
        pytest.param(
            {**V, "id": "", "method": "m"}, Request("", "m", None), id="request-empty-str-id"
        ),
        pytest.param(
            {**V, "id": 2**70, "method": "m"}, Request(2**70, "m", None), id="request-big-int-id"
        ),
        pytest.param(
            {**V, "id": 3, "method": "tools/call", "params": {"name": "x"}},
            Request(3, "tools/call", {"name": "x"}),
            id="request-with-params",
        ),
        pytest.param(
            {**V, "id": 3, "method": "m", "params": None},
            Request(3, "m", None),
            id="request-null-params",
        ),
        pytest.param(
            {**V, "id": 3, "method": "m", "params": {}},
            Request(3, "m", {}),
            id="request-empty-params",
        ),
        pytest.param(
            {**V, "method": "notifications/initialized"},
            Notification("notifications/initialized", None),
            id="notification",
        ),
        pytest.param(
            {**V, "method": "notifications/cancelled", "params": {"requestId": 1}},
            Notification("notifications/cancelled", {"requestId": 1}),
            id="notification-with-params",
        ),
        pytest.param({**V, "id": 5, "result": {}}, Response(5, {}), id="response"),
        pytest.param(
            {**V, "id": "s", "result": None}, Response("s", None), id="response-null-result"
        ),
        pytest.param(
            {**V, "id": 5, "error": {"code": -32601, "message": "nope"}},
            ErrorResponse(5, -32601, "nope"),
            id="error-response",
        ),
        pytest.param(
            {**V, "id": 5, "error": {"code": 1, "message": "m", "data": {"x": [1]}}},
            ErrorResponse(5, 1, "m", {"x": [1]}),
            id="error-response-with-data",
        ),
        pytest.param(
            {**V, "id": None, "error": {"code": -32700, "message": "Parse error"}},
            ErrorResponse(None, -32700, "Parse error"),
            id="error-response-null-id",
        ),
    ],
)
def test_classify_valid(obj: dict[str, Any], expected: Any) -> None:
    assert classify(obj) == expected


def test_ids_keep_their_exact_type() -> None:
    request = classify({**V, "id": 1, "method": "m"})
    assert isinstance(request, Request)
    assert type(request.id) is int
    request = classify({**V, "id": "1", "method": "m"})
    assert isinstance(request, Request)
    assert type(request.id) is str


# -- invalid messages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "code", "echo_id"),
    [
        # not an object at all
        pytest.param([], INVALID_REQUEST, None, id="array-in-classify"),
        pytest.param("x", INVALID_REQUEST, None, id="string"),
        pytest.param(1, INVALID_REQUEST, None, id="number"),
        pytest.param(None, INVALID_REQUEST, None, id="null"),
        pytest.param(True, INVALID_REQUEST, None, id="bool"),
        # jsonrpc member
        pytest.param({"id": 1, "method": "m"}, INVALID_REQUEST, 1, id="missing-jsonrpc"),
        pytest.param(
            {"jsonrpc": "1.0", "id": 1, "method": "m"}, INVALID_REQUEST, 1, id="jsonrpc-1.0"
        ),
        pytest.param(
            {"jsonrpc": 2.0, "id": "a", "method": "m"}, INVALID_REQUEST, "a", id="jsonrpc-number"
        ),
        pytest.param(
            {"jsonrpc": None, "id": 1, "method": "m"}, INVALID_REQUEST, 1, id="jsonrpc-null"
        ),
        pytest.param({"method": "m"}, INVALID_REQUEST, None, id="missing-jsonrpc-notification"),
        pytest.param(
            {"jsonrpc": "1.0", "id": True, "method": "m"},
            INVALID_REQUEST,
            None,
            id="bad-jsonrpc-and-bad-id",
        ),
        # method member
        pytest.param({**V, "id": 1, "method": 5}, INVALID_REQUEST, 1, id="method-number"),
        pytest.param({**V, "id": 1, "method": None}, INVALID_REQUEST, 1, id="method-null"),
        pytest.param({**V, "id": 1, "method": ["m"]}, INVALID_REQUEST, 1, id="method-array"),
        pytest.param({**V, "method": 5}, INVALID_REQUEST, None, id="notification-method-number"),
        pytest.param({**V, "id": 1}, INVALID_REQUEST, 1, id="no-method-no-result"),
        pytest.param({**V}, INVALID_REQUEST, None, id="only-jsonrpc"),
        # id member
        pytest.param({**V, "id": True, "method": "m"}, INVALID_REQUEST, None, id="id-true"),
        pytest.param({**V, "id": False, "method": "m"}, INVALID_REQUEST, None, id="id-false"),
        pytest.param(
            {**V, "id": 1.0, "method": "m"}, INVALID_REQUEST, None, id="id-float-integral"
        ),
        pytest.param({**V, "id": 1.5, "method": "m"}, INVALID_REQUEST, None, id="id-float"),
        pytest.param({**V, "id": None, "method": "m"}, INVALID_REQUEST, None, id="id-null"),
        pytest.param({**V, "id": {"a": 1}, "method": "m"}, INVALID_REQUEST, None, id="id-object"),
        pytest.param({**V, "id": [1], "method": "m"}, INVALID_REQUEST, None, id="id-array"),
        # params member
        pytest.param(
            {**V, "id": 1, "method": "m", "params": [1, 2]}, INVALID_PARAMS, 1, id="params-array"
        ),
        pytest.param(
            {**V, "id": "k", "method": "m", "params": "x"}, INVALID_PARAMS, "k", id="params-string"
        ),
        pytest.param(
            {**V, "id": 1, "method": "m", "params": 3}, INVALID_PARAMS, 1, id="params-number"
        ),
        # responses
        pytest.param(
            {**V, "id": 1, "result": 1, "error": {"code": 1, "message": "m"}},
            INVALID_REQUEST,
            1,
            id="result-and-error",
        ),
        pytest.param({**V, "result": 1}, INVALID_REQUEST, None, id="result-without-id"),
        pytest.param({**V, "id": True, "result": 1}, INVALID_REQUEST, None, id="result-bool-id"),
        pytest.param({**V, "id": 1, "error": "boom"}, INVALID_REQUEST, 1, id="error-not-object"),
        pytest.param(
            {**V, "id": 1, "error": {"code": "x", "message": "m"}},
            INVALID_REQUEST,
            1,
            id="error-code-string",
        ),
        pytest.param(
            {**V, "id": 1, "error": {"code": True, "message": "m"}},
            INVALID_REQUEST,
            1,
            id="error-code-bool",
        ),
        pytest.param(
            {**V, "id": 1, "error": {"code": 1.5, "message": "m"}},
            INVALID_REQUEST,
            1,
            id="error-code-float",
        ),
        pytest.param(
            {**V, "id": 1, "error": {"code": 1}}, INVALID_REQUEST, 1, id="error-without-message"
        ),
        pytest.param(
            {**V, "id": 1.5, "error": {"code": 1, "message": "m"}},
            INVALID_REQUEST,
            None,
            id="error-float-id",
        ),
    ],
)
def test_classify_invalid(obj: Any, code: int, echo_id: Any) -> None:
    result = classify(obj)
    assert isinstance(result, InvalidMessage)
    error = result.error
    assert error.code == code
    assert error.id == echo_id
    assert type(error.id) is type(echo_id)
    assert error.message.startswith(
        "Invalid Request" if code == INVALID_REQUEST else "Invalid params"
    )


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        ({**V, "id": True, "method": "m"}, "got boolean"),
        ({**V, "id": 1.5, "method": "m"}, "got number"),
        ({**V, "id": None, "method": "m"}, "got null"),
        ({**V, "id": {}, "method": "m"}, "got object"),
        ({**V, "id": [], "method": "m"}, "got array"),
        ({**V, "id": 1, "method": 1}, '"method" must be a string'),
        ({"id": 1, "method": "m"}, '"jsonrpc" must be exactly "2.0"'),
        ([1], "got array"),
        ("s", "got string"),
    ],
)
def test_invalid_messages_say_what_is_wrong(obj: Any, fragment: str) -> None:
    result = classify(obj)
    assert isinstance(result, InvalidMessage)
    assert fragment in result.error.message


@pytest.mark.parametrize(
    ("obj", "echo_id", "reason"),
    [
        pytest.param(
            {**V, "id": 777, "result": 1, "error": {"code": 1, "message": "m"}},
            777,
            "it carries both result and error",
            id="result-and-error",
        ),
        pytest.param({**V, "id": 5}, 5, "it carries neither result nor error", id="neither"),
        pytest.param(
            {**V, "id": "k", "method": None}, "k", "neither result nor error", id="null-method"
        ),
        pytest.param(
            {"jsonrpc": "1.0", "id": 3, "result": {}}, 3, '"jsonrpc" must be', id="jsonrpc-1.0"
        ),
        pytest.param({"id": 3, "result": {}}, 3, '"jsonrpc" must be', id="no-jsonrpc"),
        pytest.param({**V, "result": 1}, None, "got null", id="result-without-id"),
        pytest.param({**V, "id": 1.0, "result": 1}, None, "got number", id="result-float-id"),
        pytest.param(
            {**V, "id": [2], "error": {"code": 1, "message": "m"}},
            None,
            "got array",
            id="error-array-id",
        ),
        pytest.param({**V, "id": 4, "error": "boom"}, 4, '"error" must be', id="error-string"),
        pytest.param(
            {**V, "id": 4, "error": {"code": 1.5, "message": "m"}},
            4,
            'an integer "code"',
            id="error-float-code",
        ),
    ],
)
def test_a_malformed_response_is_never_answered(obj: Any, echo_id: Any, reason: str) -> None:
    """JSON-RPC: a response gets no response, malformed or not (Rule 4)."""
    result = classify(obj)
    assert isinstance(result, InvalidMessage)
    assert result.response is True
    assert result.answer is False
    assert result.error.id == echo_id  # the request of ours it may have been meant to answer
    assert type(result.error.id) is type(echo_id)
    assert reason in result.reason
    assert not result.reason.startswith("Invalid Request")
    assert result.error.message.startswith("Invalid Request: malformed response: ")


@pytest.mark.parametrize(
    "obj",
    [
        {**V, "id": 1, "method": 5},
        {"id": 1, "method": "m"},
        {**V},
        {},
        {**V, "method": "m", "params": [1]},
    ],
)
def test_other_invalid_messages_are_no_responses(obj: Any) -> None:
    result = classify(obj)
    assert isinstance(result, InvalidMessage)
    assert result.response is False
    assert result.reason == result.error.message


# -- parse --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        b"{",
        b"not json",
        b'{"jsonrpc":"2.0","id":1,"method":"m"',
        b'{"a":NaN}',
        b'{"a":Infinity}',
        b"[1,]",
        b"\xff\xfe",
        b"",
        b"   ",
        b'{"jsonrpc":"2.0","id":1,"method":"m"} {}',
        b"{'jsonrpc':'2.0'}",
    ],
)
def test_parse_error_answers_with_null_id(frame: bytes) -> None:
    messages, is_batch = parse(frame)
    assert is_batch is False
    assert len(messages) == 1
    (message,) = messages
    assert isinstance(message, InvalidMessage)
    assert message.error.code == PARSE_ERROR
    assert message.error.id is None
    assert message.error.message.startswith("Parse error")


def test_parse_single_message() -> None:
    assert parse(b'{"jsonrpc":"2.0","id":"x","method":"ping"}') == (
        [Request("x", "ping", None)],
        False,
    )


def test_parse_accepts_str_and_bytes() -> None:
    frame = '{"jsonrpc":"2.0","method":"n","params":{"k":"\u00e9"}}'
    assert parse(frame) == parse(frame.encode()) == ([Notification("n", {"k": "\u00e9"})], False)


def test_parse_batch() -> None:
    frame = json.dumps(
        [
            {**V, "id": 1, "method": "ping"},
            {**V, "method": "notifications/initialized"},
            {**V, "id": True, "method": "ping"},
            7,
            {**V, "id": 2, "result": {}},
        ]
    )
    messages, is_batch = parse(frame)
    assert is_batch is True
    assert messages[0] == Request(1, "ping", None)
    assert messages[1] == Notification("notifications/initialized", None)
    assert isinstance(messages[2], InvalidMessage)
    assert messages[2].error.code == INVALID_REQUEST
    assert isinstance(messages[3], InvalidMessage)
    assert messages[3].error.code == INVALID_REQUEST
    assert messages[4] == Response(2, {})
    assert len(messages) == 5


def test_parse_batch_of_one_is_still_a_batch() -> None:
    assert parse(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]') == (
        [Request(1, "ping", None)],
        True,
    )


@pytest.mark.parametrize("frame", [b"[]", b" [ ] "])
def test_parse_empty_batch_is_one_invalid_request(frame: bytes) -> None:
    messages, is_batch = parse(frame)
    assert is_batch is False  # JSON-RPC 2.0: the answer is a single error, not an array
    (message,) = messages
    assert isinstance(message, InvalidMessage)
    assert message.error == ErrorResponse(None, INVALID_REQUEST, message.error.message)
    assert "empty batch" in message.error.message


def test_parse_nested_array_in_batch_is_invalid_not_recursed() -> None:
    messages, is_batch = parse(b'[[{"jsonrpc":"2.0","id":1,"method":"ping"}]]')
    assert is_batch is True
    (message,) = messages
    assert isinstance(message, InvalidMessage)
    assert message.error.code == INVALID_REQUEST


# -- loads / dumps ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [b"NaN", b"Infinity", b"-Infinity", b"[NaN]"])
def test_loads_rejects_non_finite(text: bytes) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        loads(text)
    assert info.value.code == PARSE_ERROR


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (math.nan, b"null"),
        (math.inf, b"null"),
        (-math.inf, b"null"),
        ([1.5, math.nan], b"[1.5,null]"),
        ({"x": {"y": math.inf}}, b'{"x":{"y":null}}'),
        ({"a": 1, "b": [True, None]}, b'{"a":1,"b":[true,null]}'),
        ("line\nbreak", b'"line\\nbreak"'),
        ("cr\r", b'"cr\\r"'),
    ],
)
def test_dumps(value: Any, expected: bytes) -> None:
    out = dumps(value)
    assert out == expected
    assert b"\n" not in out
    json.loads(out)  # the standard library agrees it is valid JSON


def test_dumps_is_utf8() -> None:
    assert dumps("\u00e9\u4e2d") == '"\u00e9\u4e2d"'.encode()


def test_response_builders() -> None:
    assert result_response(1, {}) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert error_response(None, -32700, "Parse error") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    assert error_response("a", -32601, "m", {"method": "x"})["error"]["data"] == {"method": "x"}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(json_values)
def test_dumps_loads_round_trip(value: Any) -> None:
    out = dumps(value)
    assert b"\n" not in out
    assert loads(out) == value
    assert json.loads(out) == value


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda children: st.lists(children) | st.dictionaries(st.text(), children),
        max_leaves=20,
    )
)
def test_dumps_is_always_strict_json(value: Any) -> None:
    out = dumps(value)
    assert b"\n" not in out
    loads(out)  # strict: would raise on NaN / Infinity


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_parse_never_raises(frame: bytes) -> None:
    messages, _ = parse(frame)
    assert messages
    for message in messages:
        assert isinstance(
            message, Request | Notification | Response | ErrorResponse | InvalidMessage
        )


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_classify_never_raises(value: Any) -> None:
    result = classify(value)
    if isinstance(result, InvalidMessage):
        assert result.error.code in (INVALID_REQUEST, INVALID_PARAMS)


ENCODE_CASES = [
    # (message, expected frame as JSON, whether encoding failed)
    ({"jsonrpc": "2.0", "id": 1, "result": {}}, {"jsonrpc": "2.0", "id": 1, "result": {}}, False),
    (
        {"jsonrpc": "2.0", "id": 7, "result": {"text": "\ud800"}},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "no JSON form"}},
        True,
    ),
    (  # no id to answer under: the error says so with null
        {"jsonrpc": "2.0", "method": "n", "params": {"text": "\ud800"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "no JSON form"}},
        True,
    ),
    (
        [{"jsonrpc": "2.0", "id": 1, "result": "\ud800"}],
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "no JSON form"}},
        True,
    ),
]


@pytest.mark.parametrize(("message", "expected", "failed"), ENCODE_CASES)
def test_encode_or_error(message: Any, expected: Any, *, failed: bool) -> None:
    frame, error = encode_or_error(message, lambda _: "no JSON form")
    assert json.loads(frame) == expected
    assert (error is not None) == failed
    assert error is None or isinstance(error, ValueError)
