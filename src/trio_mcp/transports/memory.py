"""In-memory transport: two pairs of trio memory channels, for tests and in-process use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import trio

__all__ = ["MemoryEnd", "memory_channel_pair"]

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
