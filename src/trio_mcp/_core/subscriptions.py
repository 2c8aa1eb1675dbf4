"""Resource subscriptions, sans-IO: what a listen asks and is granted, what a session holds.

Two designs: the 2026-07-28 `subscriptions/listen` request opens a stream whose filter
(`SubscriptionFilter`) says which notifications it carries; a handshake-era session subscribes
to URIs one by one with `resources/subscribe` (`SessionSubscriptions`).

A listen stream carries only what was granted, and the server grants only what it announces
(`granted`): a list kind whose capability has `listChanged`, resource URIs when the resources
capability has `subscribe`, task ids when it announces the tasks extension. Every message of a
stream carries the id of the request that opened it (`tagged`).

What one handshake-era session subscribes to is bounded: at most `max_count` URIs and
`max_bytes` bytes of them (UTF-8) at once. A subscription past either is refused with a JSON-RPC
error naming the bound, and nothing changes. The set lives and dies with its session: the
runtime empties it when the session ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._exceptions import RemoteProtocolError
from .jsonrpc import INVALID_PARAMS, SERVER_UNAVAILABLE, RequestId
from .meta import SUBSCRIPTION_ID, TASKS_EXTENSION

__all__ = [
    "ACKNOWLEDGED",
    "DEFAULT_MAX_SUBSCRIPTIONS",
    "DEFAULT_MAX_SUBSCRIPTION_BYTES",
    "LISTEN",
    "RESOURCE_UPDATED",
    "TASK_STATUS",
    "SessionSubscriptions",
    "SubscriptionFilter",
    "tagged",
]

#: URIs one session may be subscribed to at once: as `MAX_FOLLOWED_TASKS` and the
#: requests in flight per connection (1,024), far more than a client shows a person or a model
#: reads, while a client that subscribes in a loop is stopped long before memory matters.
DEFAULT_MAX_SUBSCRIPTIONS: Final = 1024
#: Bytes of subscribed URIs one session may hold: 1 MiB, the bound of one session's
#: unsent notifications (`HttpOptions.max_unsent_bytes`, a listen stream's queue), so 1,000
#: sessions hold at most 1 GiB. 1,024 URIs of a typical length (under 1 KiB) fit; 3,000 of 16
#: KiB each (48 MiB) do not.
DEFAULT_MAX_SUBSCRIPTION_BYTES: Final = 1 << 20

LISTEN: Final = "subscriptions/listen"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
RESOURCE_UPDATED: Final = "notifications/resources/updated"
#: A task's new state (SEP-2663, Task Status Notifications): its `DetailedTask` as params.
TASK_STATUS: Final = "notifications/tasks"

# The filter's list fields, by the kind of list (the capability and notification it names).
_LIST_FIELDS: Final = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}
_URIS: Final = "resourceSubscriptions"
_TASK_IDS: Final = "taskIds"


def _invalid(what: str) -> RemoteProtocolError:
    return RemoteProtocolError(f"Invalid params: {what}", INVALID_PARAMS)


@dataclass(frozen=True, slots=True)
class SubscriptionFilter:
    """The notifications one listen stream carries.

    Attributes:
        lists: The kinds of list ("tools", "prompts", "resources") whose changes it carries.
        uris: The resource URIs whose updates it carries, in the order asked, each once.
        task_ids: The tasks whose status changes it carries, in the order asked, each once.
    """

    lists: frozenset[str] = frozenset()
    uris: tuple[str, ...] = ()
    task_ids: tuple[str, ...] = ()

    @classmethod
    def parse(cls, params: Mapping[str, Any] | None) -> SubscriptionFilter:
        """The filter a request's params ask for, read strictly (spec 2026-07-28, Subscriptions).

        `params.notifications` is an object whose fields are all optional; the three list
        fields are booleans, `resourceSubscriptions` and `taskIds` (the tasks extension,
        SEP-2663) are lists of strings.

        Raises:
            RemoteProtocolError: -32602 naming what is malformed.
        """
        notifications = params.get("notifications") if params else None
        if not isinstance(notifications, dict):
            raise _invalid('subscriptions/listen needs "notifications" (an object)')
        lists = set()
        for kind, name in _LIST_FIELDS.items():
            value = notifications.get(name, False)
            if not isinstance(value, bool):
                raise _invalid(f'"notifications.{name}" must be a boolean')
            if value:
                lists.add(kind)
        strings = {}
        for name in (_URIS, _TASK_IDS):
            value = notifications.get(name, [])
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise _invalid(f'"notifications.{name}" must be a list of strings')
            strings[name] = tuple(dict.fromkeys(value))
        return cls(frozenset(lists), strings[_URIS], strings[_TASK_IDS])

    @property
    def empty(self) -> bool:
        """Whether it asks for nothing at all."""
        return not (self.lists or self.uris or self.task_ids)

    def granted(self, capabilities: Mapping[str, Any]) -> SubscriptionFilter:
        """The part of this filter a server with these capabilities honours."""

        def announces(kind: str, flag: str) -> bool:
            capability = capabilities.get(kind)
            return isinstance(capability, dict) and capability.get(flag) is True

        lists = frozenset(kind for kind in self.lists if announces(kind, "listChanged"))
        uris = self.uris if announces("resources", "subscribe") else ()
        extensions = capabilities.get("extensions")
        tasks = isinstance(extensions, dict) and TASKS_EXTENSION in extensions
        return SubscriptionFilter(lists, uris, self.task_ids if tasks else ())

    def wire(self) -> dict[str, Any]:
        """The filter as the acknowledgement's `notifications` names it: granted fields only."""
        wire: dict[str, Any] = {
            name: True for kind, name in _LIST_FIELDS.items() if kind in self.lists
        }
        if self.uris:
            wire[_URIS] = list(self.uris)
        if self.task_ids:
            wire[_TASK_IDS] = list(self.task_ids)
        return wire

    def wants(self, method: str, params: Mapping[str, Any] | None = None) -> bool:
        """Whether a notification belongs on the stream (nothing else may go there)."""
        if method == RESOURCE_UPDATED:
            uri = params.get("uri") if params else None
            return uri in self.uris
        if method == TASK_STATUS:
            task_id = params.get("taskId") if params else None
            return task_id in self.task_ids
        kind = method.removeprefix("notifications/").removesuffix("/list_changed")
        return method == f"notifications/{kind}/list_changed" and kind in self.lists


def tagged(params: Mapping[str, Any] | None, subscription_id: RequestId) -> dict[str, Any]:
    """`params` with the stream's id in `_meta`; other `_meta` keys are kept."""
    out = dict(params or {})
    meta = out.get("_meta")
    out["_meta"] = {**(meta if isinstance(meta, dict) else {}), SUBSCRIPTION_ID: subscription_id}
    return out


class SessionSubscriptions:
    """The URIs one session subscribed to (`resources/subscribe`), bounded.

    Args:
        max_count: URIs held at once.
        max_bytes: Bytes of URIs (UTF-8) held at once.
    """

    __slots__ = ("_uris", "bytes", "max_bytes", "max_count")

    def __init__(
        self,
        max_count: int = DEFAULT_MAX_SUBSCRIPTIONS,
        max_bytes: int = DEFAULT_MAX_SUBSCRIPTION_BYTES,
    ) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._uris: dict[str, int] = {}  # URI -> its size in bytes
        #: Bytes of the URIs held now.
        self.bytes = 0

    def __contains__(self, uri: object) -> bool:
        return uri in self._uris

    def __len__(self) -> int:
        return len(self._uris)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._uris))

    def add(self, uri: str) -> None:
        """Subscribe to `uri` (a URI held already is kept as it is).

        Raises:
            RemoteProtocolError: -32000 naming the bound when `uri` would pass one; nothing
                changed then.
        """
        size = self.check(uri)
        if size:
            self._uris[uri] = size
            self.bytes += size

    def check(self, uri: str) -> int:
        """Whether `uri` may be added: its size in bytes, or 0 when it is held already.

        Raises:
            RemoteProtocolError: -32000 naming the bound when `uri` would pass one.
        """
        if uri in self._uris:
            return 0
        size = len(uri.encode("utf-8", "surrogatepass"))
        if len(self._uris) >= self.max_count:
            raise _over(
                f"this session holds {len(self._uris)}, the most it may "
                f"(max_subscriptions={self.max_count})",
                "max_subscriptions",
                self.max_count,
            )
        if self.bytes + size > self.max_bytes:
            raise _over(
                f"this session's URIs would take {self.bytes + size} bytes "
                f"(max_subscription_bytes={self.max_bytes})",
                "max_subscription_bytes",
                self.max_bytes,
            )
        return size

    def discard(self, uri: str) -> None:
        """Unsubscribe from `uri`, if subscribed."""
        size = self._uris.pop(uri, None)
        if size is not None:
            self.bytes -= size

    def clear(self) -> None:
        """Forget every subscription (the session ended)."""
        self._uris = {}
        self.bytes = 0


def _over(what: str, limit: str, value: int) -> RemoteProtocolError:
    return RemoteProtocolError(
        f"Too many subscriptions: {what}; unsubscribe from some first",
        SERVER_UNAVAILABLE,
        {"limit": limit, "max": value},
    )
