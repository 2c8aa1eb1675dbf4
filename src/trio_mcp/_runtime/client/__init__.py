"""The client runtime: one connection to an MCP server, its public API, its features.

    api            `Client` (every public method) and `open_session`, composed of the rest
    connection     the link, the reader and the peer engine (`_runtime/peer`): requests sent
                   and awaited, the server's requests answered in tasks, notifications routed
    asking         what the server asks (elicitation, sampling, roots): the user's handlers,
                   on the connection and in the input rounds of 2026-07-28
    subscriptions  resource updates and list changes: the callbacks, in every revision
    listen         the 2026-07-28 `subscriptions/listen` stream that serves them and the tasks
    tasks          following a call that became a task (SEP-2663)
    skills         skills listed, loaded and read, each file checked (SEP-2640; loaded on
                   first use)

A feature adds its handlers of the server's requests and notifications to the connection's
tables; the connection knows none of them.
"""

from ..options import (
    DEFAULT_MAX_INPUT_ROUNDS,
    ElicitationCompleteHandler,
    ElicitationHandler,
    LogHandler,
    RequestMetaHook,
    Roots,
    RootsProvider,
    SamplingHandler,
)
from .api import MAX_PAGES, Client, open_session
from .connection import ProgressHandler, ServerRequestHandler
from .subscriptions import ListChangedHandler, ListKind, UpdateHandler
from .tasks import TaskStatusHandler

__all__ = [
    "DEFAULT_MAX_INPUT_ROUNDS",
    "MAX_PAGES",
    "Client",
    "ElicitationCompleteHandler",
    "ElicitationHandler",
    "ListChangedHandler",
    "ListKind",
    "LogHandler",
    "ProgressHandler",
    "RequestMetaHook",
    "Roots",
    "RootsProvider",
    "SamplingHandler",
    "ServerRequestHandler",
    "TaskStatusHandler",
    "UpdateHandler",
    "open_session",
]
