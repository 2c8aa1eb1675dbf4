"""In-process workloads, run by `run.py` in a fresh interpreter each and printed as one JSON line.

    python benchmarks/inproc.py dispatch trio-mcp N WINDOW TOOL
    python benchmarks/inproc.py dispatch sdk N WINDOW TOOL MODE     # MODE: auto | legacy
    python benchmarks/inproc.py register trio-mcp|sdk COUNT
    python benchmarks/inproc.py codec N
    python benchmarks/inproc.py ratelimit N WINDOW VARIANT [REDIS_URL]  # none|chain|memory|redis

A fresh process per measurement keeps one library's imports, caches and garbage out of the
other's numbers, and keeps this work out of the stdio driver's CPU accounting.

- dispatch: calls/s through the server with no transport. trio-mcp: frames over
  `memory_channel_pair()` into `Server.serve_connection`, `WINDOW` in flight (the channel
  buffer). SDK: its own in-memory client path, `mcp.Client(server)`, with `WINDOW` concurrent
  callers; mode "auto" is the SDK's direct in-process dispatch (no JSON-RPC framing), "legacy"
  its JSON-RPC message streams with the initialize handshake. Results are checked after the
  clock stops. The SDK's numbers include its client's result validation; that is its path.
- register: seconds to register COUNT generated tools (see toolgen.py), then `tools/list` of
  them through the same in-memory path (first call, and the median of five more).
- codec: encode+decode of a typical request and response with each JSON codec available, for
  the choice `trio_mcp._core.jsonrpc` made (pydantic-core's).
- ratelimit: what a `RateLimiter` costs: trio-mcp's inline `calculator.add` calls/s, at most
  `WINDOW` in flight, with no middleware (none), a middleware that only calls on (chain: what
  any middleware costs), a limiter in memory (memory) or in Redis at `REDIS_URL` (redis), its
  rate too high to refuse any call.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "servers"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from toolgen import generate_tools

WARMUP = 200
LIST_REPEATS = 5
INIT_FRAME = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
).encode()
INITIALIZED_FRAME = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def _call_frame(request_id: int, tool: str) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s",'
        % (
            request_id,
            tool.encode(),
        )
        + b'"arguments":{"a":%d,"b":0.5}}}' % request_id
    )


def _check_sum(request_id: int, value: Any) -> None:
    if value != request_id + 0.5:
        raise SystemExit(f"id {request_id}: wrong result {value!r}")


# -- trio-mcp ------------------------------------------------------------------------------------


async def _trio_session(
    server: Any, body: Callable[[Any, Any], Awaitable[dict[str, Any]]], window: int = 256
) -> dict[str, Any]:
    import trio  # noqa: PLC0415 - imported per library, in its own process

    from trio_mcp.transports import memory_channel_pair  # noqa: PLC0415

    client, server_end = memory_channel_pair(window)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_connection, server_end.receive, server_end.send)
        await client.send.send(INIT_FRAME)
        await client.receive.receive()
        await client.send.send(INITIALIZED_FRAME)
        result = await body(client, nursery)
        nursery.cancel_scope.cancel()
    return result


async def _trio_pump(client: Any, nursery: Any, frames: list[bytes]) -> list[bytes]:
    # The driver must not be the limit: frames go in and replies come out without a trip
    # through the scheduler each while the channels have room or replies waiting; it waits
    # only when the window is full or nothing has come back yet.
    import trio  # noqa: PLC0415

    async def sender() -> None:
        send_nowait = client.send.send_nowait
        for frame in frames:
            try:
                send_nowait(frame)
            except trio.WouldBlock:
                await client.send.send(frame)

    nursery.start_soon(sender)
    receive_nowait = client.receive.receive_nowait
    replies: list[bytes] = []
    while len(replies) < len(frames):
        try:
            replies.append(receive_nowait())
        except trio.WouldBlock:
            replies.append(await client.receive.receive())
    return replies


def trio_dispatch(n: int, window: int, tool: str) -> dict[str, Any]:
    import trio  # noqa: PLC0415
    import trio_mcp_server  # noqa: PLC0415

    async def body(client: Any, nursery: Any) -> dict[str, Any]:
        await _trio_pump(client, nursery, [_call_frame(-i - 1, tool) for i in range(WARMUP)])
        frames = [_call_frame(i, tool) for i in range(n)]
        start = time.perf_counter()
        replies = await _trio_pump(client, nursery, frames)
        wall = time.perf_counter() - start
        seen = set()
        for reply in replies:
            message = json.loads(reply)
            seen.add(message["id"])
            _check_sum(message["id"], message["result"]["structuredContent"]["result"])
        if len(seen) != n:
            raise SystemExit(f"{n - len(seen)} calls unanswered")
        return {"calls_per_s": n / wall, "wall_s": wall, "calls": n}

    server = trio_mcp_server.build(inline=True)
    return trio.run(_trio_session, server, body, window)


def trio_register(count: int) -> dict[str, Any]:
    import trio  # noqa: PLC0415

    import trio_mcp  # noqa: PLC0415

    fns = generate_tools(count)
    server = trio_mcp.Server(name="bench-register")
    start = time.perf_counter()
    for fn in fns:
        server.add_tool(fn)
    register = time.perf_counter() - start

    async def body(client: Any, _nursery: Any) -> dict[str, Any]:
        times = []
        for i in range(1 + LIST_REPEATS):
            start = time.perf_counter()
            await client.send.send(b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}' % (i + 1))
            listed = json.loads(await client.receive.receive())["result"]
            times.append(time.perf_counter() - start)
            if len(listed["tools"]) != count or listed.get("nextCursor"):
                raise SystemExit(f"tools/list gave {len(listed['tools'])} of {count} tools")
        return _register_result(register, times, count)

    return trio.run(_trio_session, server, body)


def _register_result(register: float, list_times: list[float], count: int) -> dict[str, Any]:
    return {
        "register_ms": register * 1000,
        "list_first_ms": list_times[0] * 1000,
        "list_ms": statistics.median(list_times[1:]) * 1000,
        "tools": count,
    }


# -- official SDK --------------------------------------------------------------------------------


def _sdk_run(main: Callable[[], Coroutine[Any, Any, dict[str, Any]]]) -> dict[str, Any]:
    import anyio  # noqa: PLC0415

    return anyio.run(main)


def sdk_dispatch(n: int, window: int, tool: str, mode: str) -> dict[str, Any]:
    import anyio  # noqa: PLC0415
    import sdk_server  # noqa: PLC0415
    from mcp import Client  # noqa: PLC0415

    async def calls(client: Any, ids: range) -> None:
        async def caller(offset: int) -> None:
            for i in ids[offset::window]:
                result = await client.call_tool(tool, {"a": i, "b": 0.5})
                _check_sum(i, result.structured_content["result"])

        async with anyio.create_task_group() as group:
            for offset in range(min(window, len(ids))):
                group.start_soon(caller, offset)

    async def main() -> dict[str, Any]:
        async with Client(sdk_server.build(), mode=mode, cache=None) as client:
            await calls(client, range(-WARMUP, 0))
            start = time.perf_counter()
            await calls(client, range(n))
            wall = time.perf_counter() - start
        return {"calls_per_s": n / wall, "wall_s": wall, "calls": n}

    return _sdk_run(main)


def sdk_register(count: int) -> dict[str, Any]:
    import sdk_server  # noqa: PLC0415
    from mcp import Client  # noqa: PLC0415

    fns = generate_tools(count)
    server = sdk_server.server_class()("bench-register", log_level="WARNING")
    start = time.perf_counter()
    for fn in fns:
        server.add_tool(fn)
    register = time.perf_counter() - start

    async def main() -> dict[str, Any]:
        times = []
        async with Client(server, cache=None) as client:
            for _ in range(1 + LIST_REPEATS):
                start = time.perf_counter()
                tools: list[Any] = []
                cursor = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools += page.tools
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                times.append(time.perf_counter() - start)
                if len(tools) != count:
                    raise SystemExit(f"tools/list gave {len(tools)} of {count} tools")
        return _register_result(register, times, count)

    return _sdk_run(main)


# -- JSON codecs ---------------------------------------------------------------------------------


def codec(n: int) -> dict[str, Any]:
    request = _call_frame(12345, "calculator.add")
    response = (
        b'{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"12345.5"}],'
        b'"structuredContent":{"result":12345.5}}}'
    )
    response_obj = json.loads(response)
    codecs: dict[str, tuple[Callable[[bytes], Any], Callable[[Any], Any]]] = {
        "json": (json.loads, lambda obj: json.dumps(obj, separators=(",", ":")).encode())
    }
    try:
        import pydantic_core  # noqa: PLC0415

        codecs["pydantic_core"] = (pydantic_core.from_json, pydantic_core.to_json)
    except ImportError:
        pass
    try:
        import orjson  # type: ignore[import-not-found, unused-ignore]  # noqa: PLC0415

        codecs["orjson"] = (orjson.loads, orjson.dumps)
    except ImportError:
        pass
    result = {}
    for name, (loads, dumps) in codecs.items():
        start = time.perf_counter()
        for _ in range(n):
            loads(request)
            dumps(response_obj)
        result[name] = n / (time.perf_counter() - start)
    return {"roundtrips_per_s": result}


# -- what a rate limit costs ---------------------------------------------------------------------


def trio_ratelimit(n: int, window: int, variant: str, url: str | None) -> dict[str, Any]:
    import trio  # noqa: PLC0415
    import trio_mcp_server  # noqa: PLC0415

    from trio_mcp.middleware import (  # noqa: PLC0415
        Middleware,
        Rate,
        RateLimiter,
        RedisRateStore,
    )

    class Through(Middleware):
        async def on_request(self, request: Any, call_next: Any) -> Any:
            return await call_next(request)

    server = trio_mcp_server.build(inline=True)
    if variant == "chain":
        server.add_middleware(Through())
    elif variant == "memory":
        server.add_middleware(RateLimiter(Rate(10**9)))
    elif variant == "redis":
        assert url is not None, "redis needs REDIS_URL"
        store = RedisRateStore(url, key_prefix="trio-mcp-bench:rate:")
        server.add_middleware(RateLimiter(Rate(10**9), store=store))
    elif variant != "none":
        raise SystemExit(__doc__)

    async def pump(client: Any, ids: range) -> None:
        # At most `window` in flight: the server is never asked to queue past its bounds.
        room = trio.Semaphore(window)

        async def sender() -> None:
            for i in ids:
                await room.acquire()
                await client.send.send(_call_frame(i, "calculator.add"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            for _ in ids:
                message = json.loads(await client.receive.receive())
                room.release()
                _check_sum(message["id"], message["result"]["structuredContent"]["result"])

    async def body(client: Any, nursery: Any) -> dict[str, Any]:
        await pump(client, range(-WARMUP, 0))
        start = time.perf_counter()
        await pump(client, range(n))
        wall = time.perf_counter() - start
        return {"variant": variant, "calls_per_s": n / wall, "wall_s": wall, "calls": n}

    return trio.run(_trio_session, server, body, window)


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "dispatch" and args[0] == "trio-mcp":
        result = trio_dispatch(int(args[1]), int(args[2]), args[3])
    elif command == "dispatch" and args[0] == "sdk":
        result = sdk_dispatch(int(args[1]), int(args[2]), args[3], args[4])
    elif command == "register" and args[0] == "trio-mcp":
        result = trio_register(int(args[1]))
    elif command == "register" and args[0] == "sdk":
        result = sdk_register(int(args[1]))
    elif command == "codec":
        result = codec(int(args[0]))
    elif command == "ratelimit":
        url = args[3] if len(args) > 3 else None
        result = trio_ratelimit(int(args[0]), int(args[1]), args[2], url)
    else:
        raise SystemExit(__doc__)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
