"""Transports: they move frames (one JSON text each) and know nothing of MCP or tools."""

from .memory import memory_channel_pair
from .stdio import open_stdio_frames, stdout_guard

__all__ = ["memory_channel_pair", "open_stdio_frames", "stdout_guard"]
