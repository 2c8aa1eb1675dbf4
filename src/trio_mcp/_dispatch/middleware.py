"""Middleware: code of the user's that runs around every request, on the resolved path.

A middleware sees each request once it is resolved (`ResolvedRequest`: its tool, resource or
prompt found, its arguments validated, its revision known) and calls the rest of the chain
with `await call_next(request)`. It may:

- look at the request and at what `call_next` returns (the JSON-RPC `result` object) or
  raises, and time it (logging, timing, tracing);
- answer it itself without calling on (a cached result, or by raising: `ToolError` is a tool
  error result for a `tools/call` and -32603 for a read or a get, `RequestError` is that
  JSON-RPC error, as for the server's own errors);
- hand on a changed request (`request.replace(arguments=...)`): new arguments are validated
  again before the function runs.

Hooks, each `async (request, call_next) -> result`: `on_request` (every request) wraps the
family's hook: `on_call_tool`, `on_read_resource`, `on_get_prompt`, `on_list` (the four
lists), `on_complete`; other methods (ping, discovery, tasks, subscriptions) see only
`on_request`. `on_notification(notification, call_next)` sees the client's notifications.
Middleware run in the order given, the first outermost. A plain `async def mw(request,
call_next)` is an `on_request` middleware.

Where the chain runs, and what it sees:
- A `tools/call` of a tool that may become a task: the chain runs around the call's work, so
  it goes on inside the task when the call becomes one; it sees the tool's final result (the
  client gets the task's handle meanwhile), and what it raises fails the task.
- 2026-07-28 input rounds: each round is a request of its own (the call is replayed with the
  answers): the chain sees every round, an unfinished one returning its `input_required`
  result.
- A request of the server's to the client (2025-11-25 and older: elicitation, sampling,
  roots) is not a request to the server: no middleware sees it; the tool's call that asked
  is still inside its `call_next` meanwhile.
- Requests the protocol layer refuses before they reach the server's features (malformed
  JSON, a duplicate id, a request before `initialize`, an unsupported revision, an unknown
  method) are answered without the chain, and so is `initialize` itself: it fixes the
  revision every later request is checked against, so it is answered at once and in order
  (`Server.on_session_start` hears of it).
- `on_notification` runs on the connection's reader: keep it short; the runtime's own
  handling of the notification (a cancellation, say) is its `call_next`.

A middleware whose hooks never wait (no I/O, no sleeping: logging, timing, a check against
memory) says so with `inline = True`. Requests that need no waiting (an `inline=True` tool, a
list, a ping) are then still answered on the reader's own task, through the chain, as they
are without middleware; with any middleware that may wait in a family's chain, every request
of that family runs in a task of its own. An `inline` middleware that does wait holds the
reader meanwhile (nothing breaks, but nothing else is read).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from .._core.jsonrpc import Notification
from .resolve import Kind, ResolvedRequest

__all__ = [
    "CallNext",
    "Chain",
    "Middleware",
    "MiddlewareLike",
    "NotifyNext",
]

#: The rest of the chain: call it with the request (changed or not) for its result.
CallNext = Callable[[ResolvedRequest], Awaitable[dict[str, Any]]]
#: The rest of the chain for a notification.
NotifyNext = Callable[[Notification], Awaitable[None]]
_Hook = Callable[[ResolvedRequest, CallNext], Awaitable[dict[str, Any]]]


class Middleware:
    """Base class of middleware: override the hooks you need (module docstring).

    Every hook's default calls on unchanged, and a hook left as it is costs nothing (the chain
    skips it).

    Attributes:
        inline: True when no hook ever waits (module docstring): calls that need no waiting
            then keep answering on the reader's task. False (the default) for a middleware
            that awaits I/O (Redis, a network call, a lock others hold).
    """

    inline: bool = False

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Every request: wraps the family's hook."""
        return await call_next(request)

    async def on_call_tool(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """`tools/call`: the result is a `CallToolResult` object (`content`, `isError`, ...)."""
        return await call_next(request)

    async def on_read_resource(
        self, request: ResolvedRequest, call_next: CallNext
    ) -> dict[str, Any]:
        """`resources/read`: the result holds `contents`."""
        return await call_next(request)

    async def on_get_prompt(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """`prompts/get`: the result holds `messages`."""
        return await call_next(request)

    async def on_list(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`."""
        return await call_next(request)

    async def on_complete(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """`completion/complete`: the result holds `completion`."""
        return await call_next(request)

    async def on_notification(self, notification: Notification, call_next: NotifyNext) -> None:
        """A notification from the client (cancelled, initialized, roots changed...)."""
        await call_next(notification)


#: What `Server(middleware=...)` takes: a `Middleware`, or a plain `on_request` function.
MiddlewareLike = Middleware | _Hook

#: The hook of each family, by the record's `kind` (other kinds have only `on_request`).
_FAMILY_HOOKS: Final[dict[Kind, str]] = {
    "tool": "on_call_tool",
    "resource": "on_read_resource",
    "prompt": "on_get_prompt",
    "list": "on_list",
    "completion": "on_complete",
}
_KINDS: Final[tuple[Kind, ...]] = (
    "tool", "resource", "prompt", "list", "completion", "task", "listen", "subscribe", "protocol"
)  # fmt: skip


def _overridden(middleware: Middleware, name: str) -> bool:
    return getattr(type(middleware), name) is not getattr(Middleware, name)


class Chain:
    """The middleware of one server, in order, with the hooks each family runs through.

    Args:
        middleware: Outermost first.
    """

    def __init__(self, middleware: Sequence[MiddlewareLike] = ()) -> None:
        self._middleware: list[MiddlewareLike] = []
        self._hooks: dict[Kind, tuple[_Hook, ...]] = dict.fromkeys(_KINDS, ())
        # Whether every hook a kind runs through never waits (`Middleware.inline`).
        self._inline: dict[Kind, bool] = dict.fromkeys(_KINDS, True)
        self._notification_hooks: tuple[Callable[..., Awaitable[None]], ...] = ()
        for item in middleware:
            self.add(item)

    def __bool__(self) -> bool:
        return bool(self._middleware)

    def __len__(self) -> int:
        return len(self._middleware)

    def add(self, middleware: MiddlewareLike) -> None:
        """Add one, innermost of those there.

        Raises:
            TypeError: for something that is neither a `Middleware` nor a callable.
        """
        if not isinstance(middleware, Middleware) and not callable(middleware):
            raise TypeError(
                f"middleware must be a trio_mcp.middleware.Middleware or an async function "
                f"(request, call_next), not {middleware!r}"
            )
        self._middleware.append(middleware)
        self._rebuild()

    def _rebuild(self) -> None:
        hooks: dict[Kind, list[_Hook]] = {kind: [] for kind in _KINDS}
        inline: dict[Kind, bool] = dict.fromkeys(_KINDS, True)
        notification: list[Callable[..., Awaitable[None]]] = []
        for item in self._middleware:
            waits = not getattr(item, "inline", False)
            if not isinstance(item, Middleware):
                for kind in _KINDS:
                    hooks[kind].append(item)
                    inline[kind] = inline[kind] and not waits
                continue
            generic = _overridden(item, "on_request")
            for kind in _KINDS:
                family = _FAMILY_HOOKS.get(kind)
                specific = family is not None and _overridden(item, family)
                if generic:
                    hooks[kind].append(item.on_request)
                if specific:
                    hooks[kind].append(getattr(item, family))  # type: ignore[arg-type]
                if generic or specific:
                    inline[kind] = inline[kind] and not waits
            if _overridden(item, "on_notification"):
                notification.append(item.on_notification)
        self._hooks = {kind: tuple(found) for kind, found in hooks.items()}
        self._inline = inline
        self._notification_hooks = tuple(notification)

    def wraps(self, kind: Kind) -> bool:
        """Whether any hook runs for requests of `kind`."""
        return bool(self._hooks[kind])

    def never_waits(self, kind: Kind) -> bool:
        """Whether no hook `kind` runs through ever waits (none at all, or all `inline`)."""
        return self._inline[kind]

    @property
    def sees_notifications(self) -> bool:
        """Whether any middleware has an `on_notification`."""
        return bool(self._notification_hooks)

    def around(self, kind: Kind, innermost: CallNext) -> CallNext:
        """`innermost` wrapped in the hooks of `kind`, the first middleware outermost."""
        call = innermost
        for hook in reversed(self._hooks[kind]):
            call = _link(hook, call)
        return call

    def around_notification(self, innermost: NotifyNext) -> NotifyNext:
        """`innermost` wrapped in every `on_notification`, the first middleware outermost."""
        call = innermost
        for hook in reversed(self._notification_hooks):
            call = _link(hook, call)
        return call


def _link(hook: Callable[[Any, Any], Awaitable[Any]], call_next: Any) -> Any:
    """`hook` with the rest of the chain bound (positionally: hooks may name it as they like)."""

    def linked(item: Any) -> Awaitable[Any]:
        return hook(item, call_next)

    return linked
