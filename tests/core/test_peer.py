"""Peer: two-way in-flight and pending request ids of one connection (sans-IO, no event loop)."""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp import LocalProtocolError, RemoteProtocolError
from trio_mcp._core.jsonrpc import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ErrorResponse,
    InvalidMessage,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    dumps,
    error_response,
    parse,
    result_response,
)
from trio_mcp._core.peer import CANCELLED, ErrorDetail, Outcome, Peer

# Values that are not JSON-RPC ids although Python compares some of them equal to 1.
NOT_IDS: list[Any] = [True, False, 1.0, None, [1], {"id": 1}]


def wire(message: dict[str, Any]) -> Message | InvalidMessage:
    """Send one message over the wire and back: the id's type must survive the trip."""
    (parsed,), batch = parse(dumps(message))
    assert not batch
    return parsed


class PeerPair:
    """Two peers wired back to back through plain Python (h11's ConnectionPair).

    Every message goes through the JSON codec, as it would between two processes; the
    helper plays both runtimes: it begins, answers and ends inbound requests as they would.
    """

    def __init__(self) -> None:
        self.client = Peer()
        self.server = Peer()

    def other(self, peer: Peer) -> Peer:
        return self.server if peer is self.client else self.client

    def request(self, sender: Peer, method: str, params: dict[str, Any] | None = None) -> Request:
        sent = sender.start_request(method, params)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": sent.id, "method": sent.method}
        if sent.params is not None:
            message["params"] = sent.params
        received = wire(message)
        assert isinstance(received, Request)
        assert received == sent
        self.other(sender).begin_inbound(received.id)
        return received

    def answer(self, responder: Peer, request: Request, result: Any) -> Outcome | None:
        responder.end_inbound(request.id)
        reply = wire(result_response(request.id, result))
        assert isinstance(reply, Response)
        return self.other(responder).receive_response(reply)

    def fail(self, responder: Peer, request: Request, code: int, message: str) -> Outcome | None:
        responder.end_inbound(request.id)
        reply = wire(error_response(request.id, code, message))
        assert isinstance(reply, ErrorResponse)
        return self.other(responder).receive_response(reply)

    def cancel(self, sender: Peer, request: Request, reason: str | None = None) -> RequestId | None:
        """Cancel `request`; returns the id the receiver stopped (None: nothing was sent)."""
        note = sender.cancel_outbound(request.id, reason)
        if note is None:
            return None
        received = wire({"jsonrpc": "2.0", "method": note.method, "params": note.params})
        assert isinstance(received, Notification)
        assert received.method == CANCELLED
        receiver = self.other(sender)
        stopped = receiver.receive_cancelled(received.params)
        if stopped is not None:
            receiver.end_inbound(stopped)  # the runtime stops it and sends no answer
        return stopped


def raises(code: int) -> Any:
    return pytest.raises(RemoteProtocolError, check=lambda e: e.code == code)


# -- Rule 1 and 2: inbound requests in flight ---------------------------------------------------


def test_inbound_begin_end() -> None:
    peer = Peer()
    assert peer.inbound_count == 0
    peer.begin_inbound(1)
    peer.begin_inbound("a")
    assert peer.inbound_in_flight(1)
    assert peer.inbound_in_flight("a")
    assert peer.inbound_count == 2
    peer.end_inbound(1)
    assert not peer.inbound_in_flight(1)
    assert peer.inbound_count == 1
    peer.end_inbound(1)  # ending twice, or an unknown id, is harmless
    peer.end_inbound(99)
    assert peer.inbound_count == 1


@pytest.mark.parametrize(
    ("request_id", "text"),
    [
        (3, "Invalid Request: id 3 is already in use by a request in flight"),
        ("x", "Invalid Request: id 'x' is already in use by a request in flight"),
        (0, "Invalid Request: id 0 is already in use by a request in flight"),
        ("", "Invalid Request: id '' is already in use by a request in flight"),
    ],
)
def test_duplicate_inbound_id_is_rejected(request_id: RequestId, text: str) -> None:
    peer = Peer()
    peer.begin_inbound(request_id)
    with raises(INVALID_REQUEST) as info:
        peer.begin_inbound(request_id)
    assert info.value.message == text
    assert peer.inbound_count == 1


def test_inbound_id_is_reusable_once_ended() -> None:
    peer = Peer()
    peer.begin_inbound(3)
    peer.end_inbound(3)
    peer.begin_inbound(3)
    assert peer.inbound_in_flight(3)


@pytest.mark.parametrize("bad", NOT_IDS)
def test_begin_inbound_refuses_what_is_no_id(bad: Any) -> None:
    peer = Peer()
    peer.begin_inbound(1)
    with raises(INVALID_REQUEST):
        peer.begin_inbound(bad)
    assert peer.inbound_count == 1


# -- Rule 3: ids keep their exact type ----------------------------------------------------------


def test_inbound_str_and_int_ids_are_different() -> None:
    peer = Peer()
    peer.begin_inbound(1)
    peer.begin_inbound("1")  # not a duplicate
    peer.end_inbound("1")
    assert peer.inbound_in_flight(1)
    assert not peer.inbound_in_flight("1")


@pytest.mark.parametrize("lookalike", [True, 1.0, "1"])
def test_lookalikes_of_1_never_name_request_1(lookalike: Any) -> None:
    peer = Peer()
    peer.begin_inbound(1)
    request = peer.start_request("ping")
    assert request.id == 1
    assert not peer.inbound_in_flight(lookalike)
    assert not peer.is_pending(lookalike)
    peer.end_inbound(lookalike)
    assert peer.receive_response(Response(lookalike, {})) is None
    assert peer.cancel_outbound(lookalike) is None
    assert peer.receive_cancelled({"requestId": lookalike}) is None
    assert peer.inbound_in_flight(1)
    assert peer.is_pending(1)


@pytest.mark.parametrize("bad", [[1], {"id": 1}])
def test_unhashable_ids_are_looked_up_safely(bad: Any) -> None:
    peer = Peer()
    assert not peer.inbound_in_flight(bad)
    assert not peer.is_pending(bad)
    peer.end_inbound(bad)


# -- outbound requests ----------------------------------------------------------------------------


def test_start_request_ids_are_unique_and_increasing() -> None:
    peer = Peer()
    ids = [peer.start_request("ping").id for _ in range(50)]
    assert ids == list(range(1, 51))
    assert all(type(i) is int for i in ids)
    assert peer.pending_count == 50


def test_start_request_returns_the_record_to_send() -> None:
    peer = Peer(first_id=100)
    request = peer.start_request("roots/list", {"_meta": {"progressToken": 100}})
    assert request == Request(100, "roots/list", {"_meta": {"progressToken": 100}})
    assert peer.start_request("ping") == Request(101, "ping", None)
    assert peer.is_pending(100)
    assert peer.is_pending(101)
    assert not peer.is_pending(102)


@pytest.mark.parametrize("first_id", [True, "1", 1.0])
def test_first_id_must_be_an_int(first_id: Any) -> None:
    with pytest.raises(TypeError, match="first_id must be an int"):
        Peer(first_id=first_id)


def test_outbound_and_inbound_ids_live_apart() -> None:
    peer = Peer()
    peer.begin_inbound(1)
    request = peer.start_request("sampling/createMessage")
    assert request.id == 1  # the same number in the other direction: no clash
    assert peer.inbound_in_flight(1)
    assert peer.is_pending(1)
    peer.end_inbound(1)
    assert peer.is_pending(1)
    assert peer.receive_response(Response(1, {})) is not None
    peer.begin_inbound(1)
    assert peer.inbound_in_flight(1)


# -- Rule 4: answers to our requests --------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Response(1, {"roots": []}), Outcome(1, "roots/list", result={"roots": []})),
        (Response(1, None), Outcome(1, "roots/list", result=None)),
        (
            ErrorResponse(1, METHOD_NOT_FOUND, "Method not found: roots/list"),
            Outcome(
                1, "roots/list", error=ErrorDetail(METHOD_NOT_FOUND, "Method not found: roots/list")
            ),
        ),
        (
            ErrorResponse(1, -32002, "Resource not found", {"uri": "file:///x"}),
            Outcome(
                1,
                "roots/list",
                error=ErrorDetail(-32002, "Resource not found", {"uri": "file:///x"}),
            ),
        ),
    ],
)
def test_receive_response_matches_and_forgets(
    answer: Response | ErrorResponse, expected: Outcome
) -> None:
    peer = Peer()
    peer.start_request("roots/list")
    outcome = peer.receive_response(answer)
    assert outcome == expected
    assert outcome.ok is (expected.error is None)
    assert not peer.is_pending(1)
    assert peer.pending_count == 0
    assert peer.receive_response(answer) is None  # a second answer is dropped


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(Response(99, {}), id="unknown"),
        pytest.param(Response("1", {}), id="str-for-int"),
        pytest.param(Response(True, {}), id="bool"),
        pytest.param(ErrorResponse(None, -32700, "Parse error"), id="null-id"),
        pytest.param(ErrorResponse(2, -32600, "Invalid Request"), id="unknown-error"),
    ],
)
def test_receive_response_for_no_pending_request(answer: Response | ErrorResponse) -> None:
    peer = Peer()
    peer.start_request("ping")
    assert peer.receive_response(answer) is None
    assert peer.is_pending(1)


def test_late_response_after_cancel_is_dropped() -> None:
    peer = Peer()
    request = peer.start_request("tools/call", {"name": "slow"})
    assert peer.cancel_outbound(request.id, "timeout") is not None
    assert peer.receive_response(Response(request.id, {"content": []})) is None
    assert peer.receive_response(ErrorResponse(request.id, -32603, "cancelled")) is None


def test_a_malformed_answer_fails_its_request_once() -> None:
    peer = Peer()
    asked = peer.start_request("elicitation/create")
    outcome = peer.receive_malformed(asked.id, "it carries both result and error")
    assert outcome == Outcome(
        asked.id, "elicitation/create", malformed="it carries both result and error"
    )
    assert not outcome.ok
    assert not peer.is_pending(asked.id)
    # Forgotten: a second malformed answer, or a late good one, names nothing.
    assert peer.receive_malformed(asked.id, "again") is None
    assert peer.receive_response(Response(asked.id, {})) is None


@pytest.mark.parametrize("request_id", [None, 99, "1", *NOT_IDS])
def test_a_malformed_answer_to_no_pending_request_names_nothing(request_id: Any) -> None:
    peer = Peer()
    peer.start_request("ping")
    assert peer.receive_malformed(request_id, "why") is None
    assert peer.is_pending(1)


# -- Rule 4 and 6: cancelling our requests ---------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "params"),
    [
        ("timeout", {"requestId": 1, "reason": "timeout"}),
        (None, {"requestId": 1}),
        ("", {"requestId": 1, "reason": ""}),  # given, though empty: sent
    ],
)
def test_cancel_outbound_returns_the_notification(
    reason: str | None, params: dict[str, Any]
) -> None:
    peer = Peer()
    peer.start_request("tools/call")
    note = peer.cancel_outbound(1, reason)
    assert note == Notification(CANCELLED, params)
    assert CANCELLED == "notifications/cancelled"
    assert not peer.is_pending(1)


@pytest.mark.parametrize(
    "before",
    [
        pytest.param(lambda p: p.receive_response(Response(1, {})), id="answered"),
        pytest.param(lambda p: p.cancel_outbound(1), id="cancelled-twice"),
        pytest.param(lambda p: p.close("eof"), id="closed"),
    ],
)
def test_cancel_outbound_after_the_end_sends_nothing(before: Any) -> None:
    peer = Peer()
    peer.start_request("tools/call")
    before(peer)
    assert peer.cancel_outbound(1, "too late") is None


def test_cancel_outbound_unknown_id_sends_nothing() -> None:
    assert Peer().cancel_outbound(5) is None


def test_initialize_is_never_cancelled_but_forgotten() -> None:
    peer = Peer()
    request = peer.start_request("initialize", {"protocolVersion": "2025-11-25"})
    assert peer.cancel_outbound(request.id, "gave up") is None
    assert not peer.is_pending(request.id)
    assert peer.receive_response(Response(request.id, {})) is None


# -- Rule 5: cancellations from the peer -----------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"requestId": 1}, 1),
        ({"requestId": "a", "reason": "user pressed stop"}, "a"),
        ({"requestId": 1, "reason": 5}, 1),  # a malformed reason does not hide a valid id
        ({"requestId": 2}, None),  # unknown
        ({"requestId": "1"}, None),  # str for an int id
        ({"requestId": True}, None),
        ({"requestId": 1.0}, None),
        ({"requestId": None}, None),
        ({"requestId": [1]}, None),  # unhashable: must not raise
        ({"requestId": {"id": 1}}, None),
        ({"reason": "no id"}, None),
        ({}, None),
        (None, None),
        (["requestId", 1], None),  # not an object at all
    ],
)
def test_receive_cancelled(params: Any, expected: RequestId | None) -> None:
    peer = Peer()
    peer.begin_inbound(1)
    peer.begin_inbound("a")
    assert peer.receive_cancelled(params) == expected
    assert peer.inbound_count == 2  # named, not ended: the runtime calls end_inbound


def test_receive_cancelled_for_an_ended_request() -> None:
    peer = Peer()
    peer.begin_inbound(5)
    peer.end_inbound(5)
    assert peer.receive_cancelled({"requestId": 5}) is None


def test_receive_cancelled_never_names_our_own_requests() -> None:
    # spec: a cancellation references requests issued in the same direction.
    peer = Peer()
    peer.start_request("sampling/createMessage")
    assert peer.receive_cancelled({"requestId": 1}) is None
    assert peer.is_pending(1)


def test_cancelled_id_stays_in_flight_until_ended() -> None:
    peer = Peer()
    peer.begin_inbound(4)
    assert peer.receive_cancelled({"requestId": 4}) == 4
    with raises(INVALID_REQUEST):
        peer.begin_inbound(4)  # the cancelled request is still winding down
    peer.end_inbound(4)
    peer.begin_inbound(4)


# -- close ----------------------------------------------------------------------------------------


def test_close_returns_pending_ids_in_order_and_clears_them() -> None:
    peer = Peer()
    ids = [peer.start_request(method).id for method in ("ping", "roots/list", "tools/call", "x")]
    peer.receive_response(Response(ids[1], {}))
    peer.cancel_outbound(ids[3])
    peer.begin_inbound(ids[0])
    assert peer.closed is None
    assert peer.close("server exited with code 1") == [ids[0], ids[2]]
    assert peer.pending_count == 0
    assert peer.closed == "server exited with code 1"
    assert peer.inbound_in_flight(ids[0])  # its task still ends and calls end_inbound
    assert peer.receive_response(Response(ids[2], {})) is None
    assert peer.close("again") == []
    assert peer.closed == "server exited with code 1"


def test_close_with_nothing_pending() -> None:
    peer = Peer()
    assert peer.close("eof") == []
    assert peer.closed == "eof"


def test_no_request_starts_after_close() -> None:
    peer = Peer()
    peer.close("eof")
    with pytest.raises(LocalProtocolError, match="'ping': the connection ended: eof"):
        peer.start_request("ping")
    assert peer.pending_count == 0


# -- two peers back to back -----------------------------------------------------------------------

DIRECTIONS = [
    pytest.param("client", id="client-asks-server"),
    pytest.param("server", id="server-asks-client"),
]


def sides(pair: PeerPair, asker: str) -> tuple[Peer, Peer]:
    return (pair.client, pair.server) if asker == "client" else (pair.server, pair.client)


@pytest.mark.parametrize("asker", DIRECTIONS)
def test_pair_request_and_answer(asker: str) -> None:
    pair = PeerPair()
    sender, receiver = sides(pair, asker)
    request = pair.request(sender, "ping", {"n": 1})
    assert sender.is_pending(request.id)
    assert receiver.inbound_in_flight(request.id)
    assert pair.answer(receiver, request, {"ok": True}) == Outcome(
        request.id, "ping", result={"ok": True}
    )
    assert sender.pending_count == 0
    assert receiver.inbound_count == 0


@pytest.mark.parametrize("asker", DIRECTIONS)
def test_pair_request_and_error(asker: str) -> None:
    pair = PeerPair()
    sender, receiver = sides(pair, asker)
    request = pair.request(sender, "elicitation/create")
    outcome = pair.fail(receiver, request, METHOD_NOT_FOUND, "Method not found")
    assert outcome is not None
    assert not outcome.ok
    assert outcome.error == ErrorDetail(METHOD_NOT_FOUND, "Method not found")


@pytest.mark.parametrize("asker", DIRECTIONS)
def test_pair_request_and_cancel(asker: str) -> None:
    pair = PeerPair()
    sender, receiver = sides(pair, asker)
    request = pair.request(sender, "tools/call", {"name": "slow"})
    assert pair.cancel(sender, request, "timeout") == request.id
    assert sender.pending_count == 0
    assert receiver.inbound_count == 0
    # The receiver answered anyway before it saw the cancellation: the answer is dropped.
    assert pair.answer(receiver, request, {"content": []}) is None


@pytest.mark.parametrize("asker", DIRECTIONS)
def test_pair_cancel_crossing_an_answer(asker: str) -> None:
    pair = PeerPair()
    sender, receiver = sides(pair, asker)
    request = pair.request(sender, "tools/call")
    assert pair.answer(receiver, request, {"content": []}) is not None
    assert pair.cancel(sender, request, "timeout") is None  # answered: nothing is sent
    # A cancellation already on the wire finds the request ended and is ignored.
    assert receiver.receive_cancelled({"requestId": request.id}) is None


def test_pair_both_directions_at_once_with_the_same_ids() -> None:
    pair = PeerPair()
    up = pair.request(pair.client, "tools/call", {"name": "ask"})
    down = pair.request(pair.server, "sampling/createMessage", {"messages": []})
    assert up.id == down.id == 1
    # Cancelling the server's request touches nothing of the client's.
    assert pair.cancel(pair.server, down) == 1
    assert pair.server.inbound_in_flight(1)
    assert pair.client.is_pending(1)
    assert pair.answer(pair.server, up, {"content": []}) == Outcome(
        1, "tools/call", result={"content": []}
    )
    assert (pair.client.pending_count, pair.client.inbound_count) == (0, 0)
    assert (pair.server.pending_count, pair.server.inbound_count) == (0, 0)


def test_pair_close_fails_only_the_closing_sides_waiters() -> None:
    pair = PeerPair()
    pair.request(pair.client, "tools/call")
    pair.request(pair.client, "resources/read")
    pair.request(pair.server, "roots/list")
    assert pair.client.close("server exited") == [1, 2]
    assert pair.client.inbound_in_flight(1)  # the server's roots/list, still being answered
