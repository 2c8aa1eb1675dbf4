"""PeerRuntime: the one trio engine of a connection's requests, with no transport and no side.

The server session and the client both stand on it (`test_two_way` runs them against each
other); here it runs alone: what it sends goes to a list, what the peer answers is handed in.
Time is the `autojump_clock`'s, and no test sleeps to wait for anything.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
import trio
import trio.testing

from tests.timing import scaled
from trio_mcp import ConnectionClosed, RemoteProtocolError, RequestError
from trio_mcp._core.jsonrpc import ErrorResponse, Response
from trio_mcp._core.peer import CANCELLED, Peer
from trio_mcp._runtime.peer import CANCEL_NOTICE_SECONDS, PeerRuntime

# Virtual seconds (autojump_clock): far longer than anything here takes when it works.
TIMEOUT = scaled(60)


class Wire:
    """What the engine sent, in order; `send` is the carrier it is given."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.stuck = False  # the next send waits for ever (a congested stream)

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if self.stuck:
            self.stuck = False
            await trio.sleep_forever()

    def cancellations(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.sent if m.get("method") == CANCELLED]


def engine() -> PeerRuntime:
    return PeerRuntime(Peer(), us="server", them="client")


async def _call(peer: PeerRuntime, wire: Wire, outcome: list[Any], **options: Any) -> None:
    try:
        outcome.append(await peer.request("roots/list", {"a": 1}, wire.send, **options))
    except Exception as exc:
        outcome.append(exc)


# -- requests we send -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Response(1, {"roots": []}), {"roots": []}),
        (ErrorResponse(1, -32601, "Method not found", {"m": 1}), RequestError),
    ],
)
async def test_the_answer_reaches_the_caller_that_waits_for_it(
    autojump_clock: trio.testing.MockClock, answer: Any, expected: Any
) -> None:
    peer, wire = engine(), Wire()
    outcome: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_call, peer, wire, outcome)
            await trio.testing.wait_all_tasks_blocked()
            assert wire.sent == [
                {"jsonrpc": "2.0", "id": 1, "method": "roots/list", "params": {"a": 1}}
            ]
            assert peer.waiting == 1
            assert peer.deliver(answer) is not None
    assert peer.waiting == 0
    if expected is RequestError:
        (error,) = outcome
        assert isinstance(error, RequestError)
        assert (error.code, error.data) == (-32601, {"m": 1})
    else:
        assert outcome == [expected]
    assert peer.deliver(answer) is None  # a second answer names nothing: the caller logs it


async def test_a_malformed_answer_fails_the_caller_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer, wire = engine(), Wire()
    outcome: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_call, peer, wire, outcome)
            await trio.testing.wait_all_tasks_blocked()
            assert peer.deliver_malformed(2, "no result") is None  # nobody waits for id 2
            found = peer.deliver_malformed(1, "both result and error")
            assert found is not None
            assert found.method == "roots/list"
    (error,) = outcome
    assert isinstance(error, RemoteProtocolError)
    assert str(error) == (
        "the client answered roots/list with a malformed response (both result and error)"
    )
    assert error.code == -32600
    assert wire.cancellations() == []  # answered, however badly: nothing to cancel


async def test_the_end_fails_every_caller_with_its_reason(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer, wire = engine(), Wire()
    outcome: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_call, peer, wire, outcome)
            nursery.start_soon(_call, peer, wire, outcome)
            await trio.testing.wait_all_tasks_blocked()
            assert peer.close("the client went away") == 2
    assert [str(exc) for exc in outcome] == ["the client went away"] * 2
    assert all(isinstance(exc, ConnectionClosed) for exc in outcome)
    with pytest.raises(ConnectionClosed, match="the client went away"):
        await peer.request("ping", None, wire.send)
    assert len(wire.sent) == 2  # nothing sent after the end, and no cancellations


async def test_a_caller_that_stops_waiting_tells_the_peer_and_drops_the_late_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer, wire, notices = engine(), Wire(), Wire()
    with trio.fail_after(TIMEOUT):
        with trio.move_on_after(1):
            await peer.request("roots/list", None, wire.send, notice=notices.send)
    assert [m["method"] for m in wire.sent] == ["roots/list"]
    assert notices.cancellations() == [{"requestId": 1, "reason": "cancelled by the server"}]
    assert peer.waiting == 0
    assert peer.deliver(Response(1, {})) is None


async def test_a_timeout_cancels_the_request_and_raises_too_slow(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer, wire = engine(), Wire()
    start = trio.current_time()
    with trio.fail_after(TIMEOUT), pytest.raises(trio.TooSlowError):
        await peer.request("roots/list", None, wire.send, timeout=5)
    assert trio.current_time() - start == 5
    assert wire.cancellations() == [{"requestId": 1, "reason": "cancelled by the server"}]


async def test_a_send_cancelled_midway_still_tells_the_peer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A send interrupted by the cancellation may have delivered (a frame queued for a pipe):
    # the peer is told to stop, and ignores the notice if it never saw the request.
    peer, wire, notices = engine(), Wire(), Wire()
    wire.stuck = True
    with trio.fail_after(TIMEOUT):
        with trio.move_on_after(1):
            await peer.request("roots/list", None, wire.send, notice=notices.send)
    assert notices.cancellations() == [{"requestId": 1, "reason": "cancelled by the server"}]


async def test_a_send_that_fails_tells_nothing() -> None:
    peer, notices = engine(), Wire()

    async def gone(message: dict[str, Any]) -> None:
        raise ConnectionClosed("the stream has ended")

    with pytest.raises(ConnectionClosed, match="the stream has ended"):
        await peer.request("roots/list", None, gone, notice=notices.send)
    assert notices.sent == []
    assert peer.waiting == 0
    assert peer.peer.pending_count == 0


async def test_a_notice_that_cannot_go_out_holds_the_caller_only_briefly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer, wire, stuck = engine(), Wire(), Wire()
    stuck.stuck = True  # the notice's stream is congested
    with trio.fail_after(TIMEOUT):
        with trio.move_on_after(1):
            await peer.request("roots/list", None, wire.send, notice=stuck.send)
    assert trio.current_time() == pytest.approx(1 + CANCEL_NOTICE_SECONDS)


async def test_the_id_stamps_the_params_and_finds_the_progress_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer, wire = PeerRuntime(Peer(first_id=7), us="client", them="server"), Wire()
    outcome: list[Any] = []

    def stamp(request_id: Any) -> dict[str, Any]:
        return {"_meta": {"progressToken": request_id}}

    def progress(update: Any) -> None:
        raise AssertionError(update)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                functools.partial(_call, peer, wire, outcome, stamp=stamp, progress=progress)
            )
            await trio.testing.wait_all_tasks_blocked()
            assert wire.sent[0]["params"] == {"_meta": {"progressToken": 7}}
            assert peer.progress_handler(7) is progress
            assert peer.progress_handler(True) is None  # True is no id, though it equals 1
            assert peer.progress_handler("7") is None
            peer.deliver(Response(7, {}))
    assert outcome == [{}]
    assert peer.progress_handler(7) is None


# -- requests the peer sent -------------------------------------------------------------------


async def test_an_admitted_request_is_stopped_by_its_cancellation_only() -> None:
    peer = engine()
    scope = peer.admit(1)
    assert not peer.cancelled({"requestId": True})  # True names no request, though it equals 1
    assert not peer.cancelled({"requestId": "1"})
    assert not peer.cancelled(None)
    assert not scope.cancel_called
    assert peer.cancelled({"requestId": 1, "reason": "changed my mind"})
    assert scope.cancel_called
    # The id stays in flight until its runner releases it: it cannot be reused meanwhile.
    with pytest.raises(RemoteProtocolError, match="already in use"):
        peer.admit(1)
    peer.release(1)
    assert 1 not in peer.admitted
    assert not peer.cancelled({"requestId": 1})
    assert not peer.admit(1).cancel_called


async def test_cancel_admitted_stops_every_admitted_request() -> None:
    peer = engine()
    scopes = [peer.admit(1), peer.admit("a")]
    peer.cancel_admitted()
    assert all(scope.cancel_called for scope in scopes)
