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
    """Return if a trio run is active in this thread; else raise `TrioRequiredError`.

    Args:
        entry: The public name that was called, for the message.

    Raises:
        TrioRequiredError: when no trio run is active (asyncio's, say, or none at all).
    """
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        pass
    else:
        return
    raise TrioRequiredError(
        f"{entry} was called from {_what_runs()}, but trio-mcp runs under trio. In pytest, run "
        "the test under trio: with pytest-trio, set `trio_mode = true` in the pytest "
        "configuration or mark the test `@pytest.mark.trio`; with anyio's pytest plugin, give "
        'it an `anyio_backend` fixture that returns "trio". Outside tests, start the program '
        "with `trio.run(main)`; from asyncio code, use trio-mcp in a thread of its own "
        "(`trio.run` there) or through trio-asyncio."
    )


def _what_runs() -> str:
    # asyncio is looked up, not imported: if nobody imported it, no asyncio loop runs.
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return "asyncio (directly or through anyio's asyncio backend)"
    return "outside any trio run"
