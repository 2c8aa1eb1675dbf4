"""The bare-Python baseline: the practical limit of a line-at-a-time Python stdio server.

    python benchmarks/servers/baseline_server.py

It reads a line, parses it with the standard `json`, and writes a canned response carrying the
request's id: the `initialize` result, a `tools/call` result (`calculator.add` adds its two
arguments so the driver can check it; every other tool answers at once, without sleeping), an
empty `tools/list`. Notifications get nothing. One write and flush per response, as a server
that answers each request as it completes must do. No validation, no session, no schema.
"""

from __future__ import annotations

import json
import sys

INIT = (
    '"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
    '"serverInfo":{"name":"bench-baseline","version":"0"}}}\n'
)
ADD = '"result":{"content":[{"type":"text","text":"%r"}],"structuredContent":{"result":%r}}}\n'
OTHER = '"result":{"content":[{"type":"text","text":"slept"}]}}\n'
EMPTY = '"result":{"tools":[]}}\n'


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message:
            continue
        head = '{"jsonrpc":"2.0","id":' + json.dumps(message["id"]) + ","
        method = message.get("method")
        if method == "tools/call":
            params = message["params"]
            if params["name"] == "calculator.add":
                arguments = params["arguments"]
                total = arguments["a"] + arguments["b"]
                body = ADD % (total, total)
            else:
                body = OTHER
        elif method == "initialize":
            body = INIT
        else:
            body = EMPTY
        out.write((head + body).encode())
        out.flush()


if __name__ == "__main__":
    main()
