"""`connect`: a real `Client` wired to a `Server` in this process, every message checked.

This module only composes: the in-process wiring is `_connect.open_in_process` (the same that
`open_client(server)` uses), the client is the real `Client`, and the check is a tap on the
memory channels. Each frame is checked as its receiver takes it, so a violation stops the side
that would have read it, and comes out of the `async with`. jsonschema is imported only when a
check is asked for; without it, the error says how to install it (the `testing` extra) or how to
go without.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .._connect import Tap, open_in_process
from .._core.versions import LATEST_HANDSHAKE_VERSION
from .._runtime.client import Client, open_session
from .._runtime.guard import require_trio
from .._runtime.options import (
    CLIENT_MOVED,
    Asking,
    LogHandler,
    RequestMetaHook,
    SessionOptions,
    moved_keywords,
)
from .._runtime.server import Server

__all__ = ["connect"]


@contextlib.asynccontextmanager
async def connect(
    server: Server,
    *,
    check_schema: bool = True,
    protocol_version: str = LATEST_HANDSHAKE_VERSION,
    client_info: Mapping[str, str] | None = None,
    log_handler: LogHandler | None = None,
    validate_output: bool = True,
    asking: Asking | None = None,
    tasks: bool = False,
    request_meta: RequestMetaHook | None = None,
    **moved: Any,
) -> AsyncIterator[Client]:
    """Serve `server` in this process and yield a connected, initialized `Client`.

    No subprocess and no network: the server runs in this task's nursery over memory channels
    for the `async with` block, and the client is the same `Client` that `open_client` gives.

    ```python
    async with trio_mcp.testing.connect(server) as client:
        result = await client.call_tool("calculator.add", {"a": 5, "b": 3})
    ```

    Args:
        server: The server under test.
        check_schema: Check every message, both ways, against the official MCP JSON Schema of
            the revision it speaks (needs the `jsonschema` package: the `testing` extra). The
            first one that breaks it ends the connection, and `SchemaViolationError` comes
            out of the `async with`.
        protocol_version: The revision the client asks for (see `open_client`).
        client_info: `{"name": ..., "version": ...}` sent to the server.
        log_handler: Receives each `LogMessage` the server sends.
        validate_output: Check structured results against the tools' output schemas.
        asking: How the client answers what the server asks (`Asking`, as in `open_client`).
        tasks: Declare the tasks extension (as in `open_client`): the server may run calls of
            its `task=` tools as tasks, which `call_tool` follows to their end (under
            2025-11-25 the client asks for them).
        request_meta: Adds entries to each request's `_meta` (as in `open_client`).
        **moved: The keywords `asking` replaced (as in `open_client`): still taken, with a
            `DeprecationWarning`.

    Yields:
        The connected client.

    Raises:
        SchemaViolationError: when a message breaks its revision's schema.
        TrioRequiredError: when called where no trio run is active (e.g. from an asyncio test).
        ImportError: when `check_schema` is on and jsonschema is not installed.
        ValueError: for a protocol revision this package does not speak.
        TypeError: for a keyword that does not exist.
    """
    require_trio("trio_mcp.testing.connect")
    # The body runs as the `async with` enters: the warning points through `__aenter__` at it.
    asking = moved_keywords(
        "connect", moved, CLIENT_MOVED, {"asking": asking or Asking()}, stacklevel=3
    )["asking"]
    tap: Tap | None = _schema_tap(protocol_version) if check_schema else None
    options = SessionOptions(
        client_info=client_info,
        protocol_version=protocol_version,
        log_handler=log_handler,
        validate_output=validate_output,
        asking=asking,
        tasks=tasks,
        request_meta=request_meta,
    )
    session = functools.partial(open_session, options=options)
    async with open_in_process(server, session, tap=tap) as client:
        yield client


def _schema_tap(protocol_version: str) -> Tap:
    try:
        from ._schema import MessageChecker  # noqa: PLC0415 - needs the optional jsonschema
    except ImportError as exc:
        raise ImportError(
            "trio_mcp.testing.connect(check_schema=True) checks every message against the "
            "official MCP JSON Schemas, which needs the jsonschema package: "
            'pip install "trio-mcp[testing]" (or pass check_schema=False)',
            name=exc.name,
        ) from exc
    return MessageChecker(protocol_version).check_frame
