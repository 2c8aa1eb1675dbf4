"""Ctrl-C and a reader that went away: how a command is cut short, and what Ctrl-C may end.

A command cut short ends as other command-line tools do, with no traceback and the exit code a
shell reports for a process the signal ended (`cut_short`). While a question is put to the
user or a tool runs as a task, Ctrl-C ends only that (`interruptible`): the form is cancelled,
or the task is cancelled at the server before the command ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Final, TypeVar

import trio

from .._exceptions import reraise_lone

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "Interrupted", "cut_short", "interruptible"]

T = TypeVar("T")

#: Exit codes of a command cut short, as shells report a process ended by the signal
#: (128 + its number): the reader of stdout went away (`trio-mcp tools x | head -1`: SIGPIPE),
#: or the user pressed Ctrl-C (SIGINT).
EXIT_BROKEN_PIPE: Final = 128 + signal.SIGPIPE
EXIT_INTERRUPTED: Final = 128 + signal.SIGINT


def cut_short(exc: BaseException) -> int | None:
    """The exit code for a command cut short by Ctrl-C or a broken pipe; None for all else.

    Either may come wrapped in exception groups by the tasks it went through.
    """
    leaves = list(_leaves(exc))
    if not all(isinstance(leaf, KeyboardInterrupt | BrokenPipeError) for leaf in leaves):
        return None
    if any(isinstance(leaf, BrokenPipeError) for leaf in leaves):
        # Whatever is still buffered for the pipe would fail again at exit, with a message:
        # send it nowhere instead.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        return EXIT_INTERRUPTED
    return EXIT_BROKEN_PIPE


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


class Interrupted(Exception):  # noqa: N818 - an event, not a fault: the user pressed Ctrl-C
    """Ctrl-C ended what `interruptible` ran, and nothing else."""


async def interruptible(fn: Callable[[], Awaitable[T]]) -> T:
    """`await fn()`, which Ctrl-C (SIGINT) cancels instead of ending the program.

    A lone exception of `fn` comes out as itself.

    Raises:
        Interrupted: when Ctrl-C cancelled `fn`.
    """
    with trio.open_signal_receiver(signal.SIGINT) as signals, trio.CancelScope() as scope:

        async def watch() -> None:
            async for _ in signals:
                scope.cancel()
                return

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                result = await fn()
                nursery.cancel_scope.cancel()
                return result
        except BaseExceptionGroup as group:
            reraise_lone(group)
    raise Interrupted
