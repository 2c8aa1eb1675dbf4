"""Resource updates and list changes: the client's callbacks for them, in every revision.

`subscribe` keeps one callback per URI and `on_list_changed` one per kind of list. In the
handshake era the server sends `notifications/resources/updated` for a URI after
`resources/subscribe`, and `notifications/<kind>/list_changed` unasked; over Streamable HTTP
both come on the session's GET stream, which the link opens (`Link.listen`) before a
subscription is asked for, or in the background for a list handler. Under 2026-07-28 they
come on the client's `subscriptions/listen` stream (`_runtime/client/listen`), opened (or
opened anew) with what the callbacks want, and only the current stream's reach a callback;
`subscribe` returns once the server acknowledged it, `on_list_changed` does not wait. An async
callback runs in a task of its own (it may read the resource or list again, whose answers the
reader must be free to deliver), a plain function at once, before the messages that follow.

A subscription that fails (refused, cancelled, not acknowledged) leaves the callbacks as they
were before it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

from ..._core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from ..._core.subscriptions import RESOURCE_UPDATED, SubscriptionFilter
from ..._exceptions import RequestError, TrioMCPError
from .connection import ServerConnection
from .listen import Listening, subscription_of

__all__ = ["LIST_KINDS", "ListChangedHandler", "ListKind", "Subscriptions", "UpdateHandler"]

logger = logging.getLogger("trio_mcp.client")

#: Called with the URI of a subscribed resource that changed (`Client.subscribe`).
UpdateHandler = Callable[[str], Awaitable[None] | None]
#: The lists whose changes a server announces.
ListKind = Literal["tools", "resources", "prompts"]
LIST_KINDS: Final = ("tools", "resources", "prompts")
#: Called with the kind of list that changed (`Client.on_list_changed`).
ListChangedHandler = Callable[[str], Awaitable[None] | None]


class Subscriptions:
    """One client's callbacks for resource updates and list changes (see the module docstring).

    Args:
        connection: The client's connection: notifications arrive there.
        listening: The client's listen stream (2026-07-28).
    """

    def __init__(self, connection: ServerConnection, listening: Listening) -> None:
        self._connection = connection
        self._listening = listening
        #: URI -> the callback of its updates.
        self.updates: dict[str, UpdateHandler] = {}
        #: Kind of list -> the callback of its changes.
        self.list_handlers: dict[str, ListChangedHandler] = {}
        connection.notices[RESOURCE_UPDATED] = self._updated
        for kind in LIST_KINDS:
            changed = functools.partial(self._list_changed, kind)
            connection.notices[f"notifications/{kind}/list_changed"] = changed

    async def subscribe(self, uri: str, on_update: UpdateHandler) -> None:
        """`Client.subscribe`: returns once the server acknowledged it."""
        connection = self._connection
        if connection.modern:
            await self._listen_for(uri, on_update)
            return
        self.updates[uri] = on_update
        try:
            await connection.link.listen()
            await connection.request("resources/subscribe", {"uri": uri}, retry_safe=True)
        except BaseException:
            self.updates.pop(uri, None)
            raise

    async def unsubscribe(self, uri: str) -> None:
        """`Client.unsubscribe`."""
        self.updates.pop(uri, None)
        connection = self._connection
        if connection.modern:
            try:
                await self._listening.changed().settled()
            except TrioMCPError:
                if connection.closed is not None:
                    raise
                # What is still wanted was refused or given up on: the URI is gone either way.
        else:
            await connection.request("resources/unsubscribe", {"uri": uri}, retry_safe=True)

    def on_list_changed(self, kind: str, handler: ListChangedHandler | None) -> None:
        """`Client.on_list_changed`: does not wait for the server."""
        if kind not in LIST_KINDS:
            raise ValueError(f"unknown list kind {kind!r}; choose one of {', '.join(LIST_KINDS)}")
        if handler is None:
            self.list_handlers.pop(kind, None)
        else:
            self.list_handlers[kind] = handler
        connection = self._connection
        if connection.modern:
            self._listening.changed()
        elif handler is not None and connection.nursery is not None:
            connection.nursery.start_soon(connection.link.listen)

    async def _listen_for(self, uri: str, on_update: UpdateHandler) -> None:
        # 2026-07-28: the listen stream asks for the URI too, once the server announces it.
        capabilities = self._connection.session.server_capabilities
        if uri not in SubscriptionFilter(uris=(uri,)).granted(capabilities).uris:
            raise RequestError(
                "the server announces no resource subscriptions (capabilities.resources.subscribe)",
                METHOD_NOT_FOUND,
            )
        replaced = self.updates.get(uri)
        self.updates[uri] = on_update
        try:
            acknowledged = await self._listening.changed().settled()
            if uri not in acknowledged.uris:
                raise RequestError(  # noqa: TRY301 - undone below like any other failure
                    f"the server did not acknowledge updates of {uri}", INVALID_PARAMS
                )
        except BaseException:
            if replaced is None:
                self.updates.pop(uri, None)
            else:
                self.updates[uri] = replaced
            self._listening.changed()
            raise

    def _updated(self, params: dict[str, Any]) -> None:
        uri = params.get("uri")
        if self._delivered(RESOURCE_UPDATED, params) and isinstance(uri, str):
            handler = self.updates.get(uri)
            if handler is not None:
                self._connection.run_callback(handler, uri)

    def _list_changed(self, kind: str, params: dict[str, Any]) -> None:
        if self._delivered(f"notifications/{kind}/list_changed", params):
            handler = self.list_handlers.get(kind)
            if handler is not None:
                self._connection.run_callback(handler, kind)

    def _delivered(self, method: str, params: dict[str, Any]) -> bool:
        # On a listen stream, only the current one's are delivered (`_runtime/client/listen`
        # Rule 2).
        tag = subscription_of(params)
        if self._listening.delivers(tag):
            return True
        logger.debug("ignored %s of listen stream %r", method, tag)
        return False
