"""In-memory transport: two pairs of trio memory channels, for tests and in-process use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import trio

__all__ = ["MemoryEnd", "TappedReceiveChannel", "memory_channel_pair"]

# Frames buffered in each direction before a sender waits: enough to pipeline freely, small
# enough that a stalled peer applies back-pressure instead of growing memory without bound.
DEFAULT_BUFFER: Final = 256


@dataclass(frozen=True, slots=True)
class MemoryEnd:
    """One side of an in-memory connection."""

    send: trio.MemorySendChannel[bytes]
    receive: trio.MemoryReceiveChannel[bytes]


def memory_channel_pair(buffer: int = DEFAULT_BUFFER) -> tuple[MemoryEnd, MemoryEnd]:
    """Two connected ends: what one sends, the other receives.

    Returns:
        (client end, server end).
    """
    to_server_send, to_server_receive = trio.open_memory_channel[bytes](buffer)
    to_client_send, to_client_receive = trio.open_memory_channel[bytes](buffer)
    return MemoryEnd(to_server_send, to_client_receive), MemoryEnd(
        to_client_send, to_server_receive
    )


class TappedReceiveChannel(trio.abc.ReceiveChannel[bytes]):
    """A receive channel that shows each frame to `tap` as its receiver takes it.

    What `tap` raises is raised to the receiver in place of the frame, so a tap that finds
    something wrong stops whoever reads the channel (used by `trio_mcp.testing` to check
    every message against its schema).

    Args:
        inner: The channel the frames come from.
        tap: Called with each frame before it is handed over.
    """

    def __init__(self, inner: trio.MemoryReceiveChannel[bytes], tap: Callable[[bytes], None]):
        self._inner = inner
        self._tap = tap

    async def receive(self) -> bytes:
        """The next frame, once `tap` has seen it."""
        frame = await self._inner.receive()
        self._tap(frame)
        return frame

    def receive_nowait(self) -> bytes:
        """The next frame if one is waiting (else `trio.WouldBlock`), once `tap` has seen it."""
        frame = self._inner.receive_nowait()
        self._tap(frame)
        return frame

    async def aclose(self) -> None:
        """Close the underlying channel."""
        await self._inner.aclose()
