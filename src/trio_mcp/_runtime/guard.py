"""Entry points check that they run under trio before they touch it.

Rule: a public entry that needs a trio run (`open_client`, `serve_stdio`, `serve_http`,
`Server.serve_connection`, `trio_mcp.testing.connect`) calls `require_trio` first, so that code
run under asyncio (an asyncio test, anyio's asyncio backend) gets `TrioRequiredError` saying
what to change instead of trio's "must be called from async context" from deep inside.
"""

from __future__ import annotations

import sys

import trio

from .._exceptions import TrioRequiredError

__all__ = ["require_trio"]


def require_trio(entry: str) -> None:
    """Return if this code runs in a trio task; else raise `TrioRequiredError`.

    Args:
        entry: The public name that was called, for the message.

    Raises:
        TrioRequiredError: when an asyncio task runs this code, or no trio run is active.
    """
    if _in_asyncio_task():
        found = "asyncio (directly or through anyio's asyncio backend)"
    else:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            found = "outside any trio run"
        else:
            return
    raise TrioRequiredError(
        f"{entry} was called from {found}, but trio-mcp runs under trio. In pytest, run the "
        "test under trio: with pytest-trio, set `trio_mode = true` in the pytest "
        "configuration or mark the test `@pytest.mark.trio`; with anyio's pytest plugin, give "
        'it an `anyio_backend` fixture that returns "trio". Outside tests, start the program '
        "with `trio.run(main)`; from asyncio code, use trio-mcp in a thread of its own "
        "(`trio.run` there) or through trio-asyncio."
    )


def _in_asyncio_task() -> bool:
    # The task, not the loop: inside an open trio-asyncio loop a trio task sees a running
    # asyncio loop but no asyncio task; and once trio_asyncio is imported, `asyncio.run` runs
    # its coroutine on a loop that drives trio, so a trio token exists there too and only the
    # asyncio task tells. asyncio is looked up, not imported: unimported, it runs nothing.
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no asyncio loop runs in this thread
        return False
