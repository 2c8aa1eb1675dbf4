"""Running a tool's function under trio: threads, limiters, timeouts, inline calls.

Resources, templates, prompts and completers are called the same way (a `Callee`): "tool"
below stands for any of them.

Rule 1: an async tool runs on the event loop; a sync tool runs in a worker thread so that it
        never blocks the loop, unless it was declared `inline=True` (fast and non-blocking),
        in which case it runs right here.
Rule 2: each sync tool has its own thread limiter. A thread abandoned by a cancellation or a
        timeout keeps its token until it really ends (Python cannot stop a thread), so with
        trio's one process-wide limiter a single hanging tool could starve every sync tool of
        every client.
Rule 3: a tool's `timeout` cancels the call and raises `ToolTimedOut`; the dispatcher turns it
        into an error result. Cancellation from outside (the client cancelled, the server stops)
        is never turned into anything: it propagates.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Final

import trio

from .._dispatch import Callee, ToolTimedOut
from .._features.tools import Tool

__all__ = ["THREADS_PER_TOOL", "TrioInvoker"]

# Worker threads per sync tool: trio's own default for all threads of a process is 40; per tool
# we allow as many, so a tool gets what a whole trio program would and hangs only itself.
THREADS_PER_TOOL: Final = 40


class TrioInvoker:
    """Calls tools (and the other callees) for a `Dispatcher` (its `Invoker`), one per server."""

    def __init__(self) -> None:
        # By kind and name: a tool and a prompt of the same name do not share threads.
        self._limiters: dict[tuple[str, str], trio.CapacityLimiter] = {}

    async def invoke(self, tool: Callee, kwargs: dict[str, Any]) -> Any:
        """Call `tool` with validated arguments; its return value.

        Raises:
            ToolTimedOut: when the tool's own timeout expired first.
        """
        with trio.move_on_after(tool.timeout if tool.timeout is not None else float("inf")) as cs:
            return await self._run(tool, kwargs)
        assert cs.cancelled_caught
        raise ToolTimedOut(tool)

    def _limiter(self, tool: Callee) -> trio.CapacityLimiter:
        key = (type(tool).__name__, tool.name)
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = trio.CapacityLimiter(THREADS_PER_TOOL)
        return limiter

    async def _run(self, tool: Callee, kwargs: dict[str, Any]) -> Any:
        fn = tool.fn
        assert fn is not None
        if isinstance(tool, Tool) and tool.compiled is None:
            fn, kwargs = functools.partial(fn, kwargs), {}  # a raw tool takes the dict itself
        if tool.is_async or tool.inline:
            value = fn(**kwargs)
        else:
            # On cancellation the thread is abandoned (Rule 2) and finishes alone.
            value = await trio.to_thread.run_sync(
                functools.partial(fn, **kwargs),
                abandon_on_cancel=True,
                limiter=self._limiter(tool),
            )
        if inspect.isawaitable(value):
            value = await value
        return value
