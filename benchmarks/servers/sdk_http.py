"""The `calculator.add` tool served by the official MCP SDK over Streamable HTTP (uvicorn).

    python benchmarks/servers/sdk_http.py

Binds a free loopback port, writes `listening on http://127.0.0.1:PORT/mcp` to stderr, then
serves the SDK's `streamable_http_app()` with its defaults (stateful, SSE responses). The
sync tool runs in a worker thread, as the SDK does for every sync tool.
"""

from __future__ import annotations

import socket
import sys

import uvicorn
from sdk_server import server_class


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def main() -> None:
    server = server_class()("bench-sdk-http", log_level="WARNING")
    server.add_tool(add, name="calculator.add")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # Accepted sockets inherit TCP_NODELAY from the listener. Without it, uvicorn on a socket
    # it did not bind itself sends the SSE body ~40 ms after the headers (Nagle's algorithm
    # waiting on the client's delayed ACK), which measures the kernel, not the SDK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(2048)  # connections queue from now on, so the URL is usable once printed
    port = sock.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
