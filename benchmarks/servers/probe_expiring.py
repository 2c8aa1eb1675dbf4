"""The probe server over Streamable HTTP, with sessions that expire after a few idle seconds.

    python benchmarks/servers/probe_expiring.py SECONDS

For `benchmarks/reliability.py` (row 12), which must see a vanished client's session end within
the row: by default a session ends after 30 idle minutes. Binds a free loopback port and says
`serving MCP on <url>` on stderr, as `trio-mcp run` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_server import server  # found beside this file

import trio_mcp

if __name__ == "__main__":
    options = trio_mcp.http.HttpOptions(session_idle_timeout=float(sys.argv[1]))
    trio_mcp.run(server, "http", host="127.0.0.1", port=0, options=options)
