"""The bare-Hypercorn baseline: the practical limit of an MCP server on Hypercorn's trio worker.

    python benchmarks/servers/hypercorn_baseline.py

A minimal ASGI application under the same Hypercorn configuration as `trio_mcp.serve_http`
(trio worker, no access log). It reads the body, parses it with the standard `json` and
answers with canned JSON carrying the request's id: the `initialize` result (with an
`Mcp-Session-Id`), a `calculator.add` result the driver can check, 202 for notifications and
204 for DELETE. No header checks, no session, no validation, no schema. What trio-mcp's server
costs beyond this is ours; what this costs is Hypercorn's, h11's and trio's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

Message = MutableMapping[str, Any]

INIT = (
    '"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
    '"serverInfo":{"name":"bench-hypercorn-baseline","version":"0"}}}'
)
ADD = '"result":{"content":[{"type":"text","text":"%r"}],"structuredContent":{"result":%r}}}'


async def app(
    scope: Message,
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    chunks = []
    while True:
        event = await receive()
        chunks.append(event.get("body", b""))
        if not event.get("more_body", False):
            break
    headers = [(b"content-type", b"application/json")]
    if scope["method"] == "DELETE":
        status, body = 204, b""
        headers = []
    else:
        message = json.loads(b"".join(chunks))
        if "id" not in message:
            status, body = 202, b""
            headers = []
        else:
            head = '{"jsonrpc":"2.0","id":' + json.dumps(message["id"]) + ","
            if message["method"] == "initialize":
                text = head + INIT
                headers.append((b"mcp-session-id", b"baseline"))
            else:
                arguments = message["params"]["arguments"]
                total = arguments["a"] + arguments["b"]
                text = head + ADD % (total, total)
            status, body = 200, text.encode()
    if status != 204:
        headers.append((b"content-length", b"%d" % len(body)))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def main() -> None:
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, app, config)
        print(f"listening on {binds[0]}/mcp", file=sys.stderr, flush=True)


if __name__ == "__main__":
    trio.run(main)
