"""What a request's handler may ask of the stream its answer goes out on.

A transport whose answers go out on a stream it can end early and resume later (a Streamable
HTTP POST's SSE stream with an event store, SEP-1699 polling) lends that stream here
(`current_stream`), so a tool can end it (`Context.close_sse_stream`) without knowing the
transport.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

__all__ = ["StreamControl", "current_stream"]


class StreamControl(Protocol):
    """The stream the request being answered goes out on."""

    async def close(self) -> bool:
        """End the stream now; False when it cannot be resumed (then it stays open).

        What the request sends afterwards, its answer included, is kept for the client to fetch
        by reconnecting; where nothing could be fetched that way, it does nothing.
        """
        ...


#: The stream of the request being answered in this task, if its transport has one: set in the
#: task that answers the request, so every task the handler starts inherits it (trio copies
#: the context into new tasks). Other transports leave it None.
current_stream: ContextVar[StreamControl | None] = ContextVar("current_stream", default=None)
