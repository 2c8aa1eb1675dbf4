"""A minimal blocking HTTP/1.1 keep-alive client for `http_bench.py`: one socket, no library.

Rule 1: the driver must never be the bottleneck, and must cost the same whatever the server.
        A general-purpose client (httpx) spends ~0.2-0.3 ms of Python per request on URL
        merging, header models and pools, about as much as the servers measured; this one
        writes prepared bytes and reads the answer with as few calls as it can: the whole
        request goes out in one `send` (TCP_NODELAY, so the kernel sends it at once) and the
        answer is taken from what one or two `recv` calls return.
Rule 2: it reads what HTTP/1.1 allows a server to send back: a status line, headers, then a
        body framed by Content-Length, by chunked transfer coding, or (with `Connection: close`
        or neither header) by the end of the connection, which then reconnects for the next
        request. It checks nothing about the body: callers parse and check it, after the clock.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

__all__ = ["HttpConnection", "HttpError", "RawResponse"]

READ_SIZE: Final = 1 << 16
MAX_HEAD: Final = 64 * 1024  # a server that sends more header bytes than this is broken
NO_BODY: Final = frozenset({204, 304})


class HttpError(Exception):
    """The server broke HTTP/1.1 framing or the connection."""


@dataclass(slots=True)
class RawResponse:
    """One answer: status, headers (names lower-cased, latin-1 text) and the whole body."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class HttpConnection:
    """One keep-alive connection to the server of `url`; requests go to its path.

    Args:
        url: `http://host:port/path`.
        headers: Sent with every request, after Host.
        timeout: Seconds a single send or receive may block before it fails.
        source: The local address to connect from (e.g. a second loopback address, 127.0.0.2,
            for a client the server must tell from others on 127.0.0.1); None: the kernel's.
    """

    def __init__(
        self, url: str, headers: dict[str, str], timeout: float, *, source: str | None = None
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"not an http:// URL: {url!r}")
        self.address = (parts.hostname, parts.port or 80)
        self.path = parts.path or "/"
        self.timeout = timeout
        self.source = None if source is None else (source, 0)
        self.headers = dict(headers)
        host = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname
        self._host = host
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._prefix: dict[str, bytes] = {}

    def set_header(self, name: str, value: str) -> None:
        """Send this header with every later request."""
        self.headers[name] = value
        self._prefix.clear()

    def prepare(self, method: str, body: bytes = b"") -> bytes:
        """The request's bytes, to build before a clock starts and send with `send_prepared`."""
        prefix = self._prefix.get(method)
        if prefix is None:
            lines = [f"{method} {self.path} HTTP/1.1", f"Host: {self._host}"]
            lines += [f"{name}: {value}" for name, value in self.headers.items()]
            prefix = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
            self._prefix[method] = prefix
        return b"%s%d\r\n\r\n%s" % (prefix, len(body), body)

    def request(self, method: str, body: bytes = b"") -> RawResponse:
        """Send one request (not HEAD: its answer's framing differs) and read its answer."""
        return self.send_prepared(self.prepare(method, body))

    def send_prepared(self, request: bytes) -> RawResponse:
        """Send bytes from `prepare` and read the whole answer."""
        sock = self._sock
        if sock is None:
            sock = self._connect()
        sock.sendall(request)
        response, keep = self._read_response(sock)
        if not keep:
            self.close()
        return response

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer.clear()

    # -- reading ------------------------------------------------------------------------------

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(
            self.address, timeout=self.timeout, source_address=self.source
        )
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._buffer.clear()
        return sock

    def _fill(self, sock: socket.socket) -> bool:
        """Read more into the buffer; False at the end of the connection."""
        data = sock.recv(READ_SIZE)
        if not data:
            return False
        self._buffer += data
        return True

    def _read_head(self, sock: socket.socket) -> tuple[str, int, dict[str, str]]:
        buf = self._buffer
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(buf) > MAX_HEAD:
                raise HttpError("response head too long")
            if not self._fill(sock):
                raise HttpError("connection closed before a response head")
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        del buf[: end + 4]
        version, _, rest = lines[0].partition(" ")
        if not version.startswith("HTTP/1."):
            raise HttpError(f"not an HTTP/1.x status line: {lines[0]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError(f"bad header line {line!r}")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        return version, int(rest[:3]), headers

    def _read_response(self, sock: socket.socket) -> tuple[RawResponse, bool]:
        version, status, headers = self._read_head(sock)
        while 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            version, status, headers = self._read_head(sock)
        connection = headers.get("connection", "").lower()
        keep = "close" not in connection and (version != "HTTP/1.0" or "keep-alive" in connection)
        if status in NO_BODY:
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._read_chunked(sock)
        elif "content-length" in headers:
            body = self._read_exactly(sock, int(headers["content-length"]))
        else:  # delimited by the end of the connection
            while self._fill(sock):
                pass
            body = bytes(self._buffer)
            self._buffer.clear()
            keep = False
        return RawResponse(status, headers, body), keep

    def _read_exactly(self, sock: socket.socket, size: int) -> bytes:
        buf = self._buffer
        while len(buf) < size:
            if not self._fill(sock):
                raise HttpError(f"connection closed with {len(buf)} of {size} body bytes")
        body = bytes(buf[:size])
        del buf[:size]
        return body

    def _read_line(self, sock: socket.socket) -> bytes:
        buf = self._buffer
        while True:
            end = buf.find(b"\r\n")
            if end >= 0:
                line = bytes(buf[:end])
                del buf[: end + 2]
                return line
            if len(buf) > MAX_HEAD:
                raise HttpError("chunk header or trailer line too long")
            if not self._fill(sock):
                raise HttpError("connection closed inside a chunked body")

    def _read_chunked(self, sock: socket.socket) -> bytes:
        parts: list[bytes] = []
        while True:
            size_text = self._read_line(sock).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpError(f"bad chunk size {size_text!r}") from None
            if size == 0:
                while self._read_line(sock):  # trailer fields, up to an empty line
                    pass
                return b"".join(parts)
            parts.append(self._read_exactly(sock, size))
            if self._read_line(sock):
                raise HttpError("chunk data not followed by CRLF")
