r"""Newline-delimited JSON framing, sans-IO: byte chunks in, one frame per line out.

The stdio transports feed what they read to a `LineBuffer` and get back the lines it completes,
each one JSON-RPC message for `_core/jsonrpc` to parse.

Rule 1: a frame is the bytes between two b"\n" (a trailing b"\r" is dropped; blank lines are
        skipped). Frames are never split or merged, whatever chunk sizes arrive.
Rule 2: memory is bounded. A line longer than `max_line_bytes` is reported once as `LineTooLong`
        and its bytes are discarded up to the next newline, so the stream stays in sync.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_MAX_LINE_BYTES", "LineBuffer", "LineTooLong"]

# 16 MiB: the official TypeScript and Python SDKs accept messages of several MiB (images and
# embedded resources travel base64-encoded inside one line); 16 MiB leaves room for those while
# bounding what one bad peer can make us hold.
DEFAULT_MAX_LINE_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """A line went past the limit; its content was discarded."""

    limit: int


class LineBuffer:
    """Turns a stream of byte chunks into complete lines.

    Args:
        max_line_bytes: The longest line kept, newline excluded.
    """

    __slots__ = ("_buf", "_discarding", "_scan_from", "max_line_bytes")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._buf = bytearray()
        self._scan_from = 0
        self._discarding = False

    def feed(self, data: bytes | bytearray) -> list[bytes | LineTooLong]:
        """Add a chunk; return the lines (or overflow events) it completes, in order."""
        out: list[bytes | LineTooLong] = []
        buf = self._buf
        buf += data
        start = 0
        scan = self._scan_from
        while True:
            nl = buf.find(b"\n", scan)
            if nl < 0:
                break
            if self._discarding:
                self._discarding = False
            else:
                end = nl
                if end > start and buf[end - 1] == 0x0D:
                    end -= 1
                if end - start > self.max_line_bytes:
                    out.append(LineTooLong(self.max_line_bytes))
                elif buf[start:end].strip():
                    out.append(bytes(buf[start:end]))
            start = scan = nl + 1
        if start:
            del buf[:start]
        if len(buf) > self.max_line_bytes + 1:  # + 1: room for a trailing b"\r"
            if not self._discarding:
                out.append(LineTooLong(self.max_line_bytes))
                self._discarding = True
            buf.clear()
        self._scan_from = len(buf)
        return out

    @property
    def pending(self) -> int:
        """How many bytes of an unfinished line are held."""
        return len(self._buf)
