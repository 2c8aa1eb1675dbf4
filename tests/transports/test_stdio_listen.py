"""`subscriptions/listen` (2026-07-28) over real stdio: the demo server as a subprocess.

On stdio every stream shares one channel: the client tells them apart by the id each message
carries, ends one with `notifications/cancelled`, and closing its input ends the rest at once,
each with a plain result, without waiting out the shutdown grace.
"""

from __future__ import annotations

import trio

from tests.helpers import MODERN
from tests.stdio_peer import MODERN_META, open_server

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


async def test_listens_over_stdio_end_by_cancellation_and_by_end_of_input() -> None:
    async with open_server() as peer:
        peer.version = MODERN
        params = {"_meta": MODERN_META, "notifications": {"toolsListChanged": True}}
        cancelled = await peer.start("subscriptions/listen", params, request_id="first")
        kept = await peer.start("subscriptions/listen", params, request_id="second")
        acks = [await peer.receive(), await peer.receive()]
        assert sorted(a["params"]["_meta"][SUBSCRIPTION_ID] for a in acks) == [cancelled, kept]
        assert all(a["method"] == "notifications/subscriptions/acknowledged" for a in acks)
        assert all(a["params"]["notifications"] == {"toolsListChanged": True} for a in acks)
        await peer.notify("notifications/cancelled", {"requestId": cancelled})
        await peer.ping_answers()
        started = trio.current_time()
        assert await peer.finish() == 0
        assert trio.current_time() - started < 5  # the grace is 10 s: the listen did not hold it
        answered = [m for m in peer.received if "id" in m and "method" not in m]
        assert answered[-1] == {
            "jsonrpc": "2.0",
            "id": kept,
            "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: kept}},
        }
        assert not [m for m in peer.received if m.get("id") == cancelled]
