"""`ResponseCache`: the server's lists and reads kept for as long as their caching hints say.

What is cached: the results of the four lists (`tools/list`, `resources/list`,
`resources/templates/list`, `prompts/list`) and of `resources/read`; never a tool's call or a
prompt (their functions may do anything each time), never an error, never a 2026-07-28
round that asked the client for input.

For how long: the hint the server sends (2026-07-28 `ttlMs`), for every revision alike: a
list's from `Server(list_cache={"tools/list": CacheHint(ttl_ms=...)})`, a read's from its
resource's or template's `cache=CacheHint(...)`. The default hint is a TTL of 0 (the lists may
change at any time), and a TTL of 0 caches nothing: with no hints set, this middleware only
passes requests on, unless it is given a TTL of its own (`ttl=`), which then holds for every
list and read whatever its hint's TTL (its `cacheScope` still holds). A result served from
the cache tells the client the time it has left (`ttlMs` lowered), never more than its hint.

For whom: a public result is shared by every client. A private one (`cacheScope: "private"`,
from its hint, or a list cut to the request's token because the server hides what the token
may not use) is kept per principal and per token scopes (a user's narrower token does not get
the list of a wider one), and not at all without a verified token (over stdio or in memory
there is no user to key it by). Turn private caching off with `private=False`.

Keyed by: method, protocol revision (a 2026-07-28 result carries `resultType` and `ttlMs`
that a handshake-era one must not), the list's cursor or the read's URI, and for a private
result its principal and scopes. A request with other parameters than those (a 2026-07-28
round's `inputResponses`, say) is not cached.

Until when: besides its TTL, an entry goes when the list it depends on changes (a tool,
resource or prompt added, removed, enabled or disabled, or `announce_list_changed`, from this
worker or, through the broker, another): the lists of that kind, and for "resources" the
reads too, are dropped. `server.resource_updated(uri)` (here or on another worker) drops the
reads of that URI. Bounded: at most `max_entries` entries and `max_bytes` of JSON, the least
recently used going first; a result larger than a quarter of `max_bytes` is not kept.

Concurrent misses of one key each run the request (no coalescing): the cache saves repeated
work, it does not queue requests behind one another.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .._core.jsonrpc import dumps, loads
from .._core.types import CacheHint
from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest

if TYPE_CHECKING:
    from .._runtime.server import Server

__all__ = ["CacheStats", "ResponseCache"]

# 1,024 entries: every page of the four lists under each of 5 revisions for ~50 principals,
# beside hundreds of reads; functools.lru_cache keeps 128 per function, a whole server's
# results are a few such functions.
DEFAULT_MAX_ENTRIES: Final = 1024
# 32 MiB of JSON: what a small container spares for a cache beside a ~100 MB Python server.
DEFAULT_MAX_BYTES: Final = 32 * 1024 * 1024

#: The list whose changes drop an entry, by method.
_KIND_OF: Final = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "prompts/list": "prompts",
    "resources/read": "resources",
}
#: The only parameters a cached request may carry, by method (besides `_meta`).
_PARAM_OF: Final = dict.fromkeys(_KIND_OF, "cursor") | {"resources/read": "uri"}


@dataclass(slots=True)
class _Entry:
    body: bytes  # the result as JSON: each hit decodes a copy of its own to hand out
    expires: float
    kind: str
    count: int  # the list's change count when the result was made
    uri: str | None
    private: bool


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What a `ResponseCache` holds and has done.

    Attributes:
        hits: Requests answered from the cache.
        misses: Cacheable requests that ran (nothing kept, or it had expired or been dropped).
        entries: Results kept now.
        bytes: Their size as JSON.
        evictions: Entries dropped to stay within the bounds.
    """

    hits: int
    misses: int
    entries: int
    bytes: int
    evictions: int


class ResponseCache(Middleware):
    """Answer lists and reads from memory while their hints allow (module docstring).

    ```python
    server = Server("docs", list_cache={"tools/list": CacheHint(ttl_ms=60_000)})
    server.add_middleware(ResponseCache(server))
    ```

    Args:
        server: The server it caches for: its hints, and the changes that drop entries.
        ttl: Seconds every list and read is kept, whatever its hint's TTL; None (the
            default) keeps each as long as its hint says, and nothing with a TTL of 0.
        private: Cache private results per principal (True) or not at all.
        max_entries: The most results kept.
        max_bytes: The most JSON kept, all results together.
        clock: Seconds, monotonic (tests give a clock of their own).
    """

    inline = True  # its hooks never wait: calls answered at once stay on the reader

    def __init__(
        self,
        server: Server,
        *,
        ttl: float | None = None,
        private: bool = True,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl is not None and ttl < 0:
            raise ValueError("ttl must be 0 or more seconds (or None: as the hints say)")
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be positive")
        self.server = server
        self.ttl = ttl
        self.private = private
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.clock = clock
        self._entries: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self._by_uri: dict[str, set[tuple[Any, ...]]] = {}
        self._bytes = 0
        self._hits = self._misses = self._evictions = 0
        server._update_watchers.append(self.forget_uri)

    # -- the hooks ---------------------------------------------------------------------------

    async def on_list(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """A list: from the cache, or made and kept."""
        return await self._cached(request, call_next)

    async def on_read_resource(
        self, request: ResolvedRequest, call_next: CallNext
    ) -> dict[str, Any]:
        """A read: from the cache, or made and kept."""
        return await self._cached(request, call_next)

    async def _cached(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        hint = self._hint(request)
        ttl = self.ttl if self.ttl is not None else (hint.ttl_ms / 1000 if hint else 0.0)
        key = self._key(request, hint) if ttl > 0 and request.error is None else None
        if key is None:
            return await call_next(request)
        kind = _KIND_OF[request.method]
        count = self.server._hub.count(kind)
        now = self.clock()
        entry = self._entries.get(key)
        if entry is not None:
            if entry.count == count and entry.expires > now:
                self._entries.move_to_end(key)
                self._hits += 1
                return _served(entry, now)
            self._drop(key)
        self._misses += 1
        result = await call_next(request)
        if result.get("resultType", "complete") != "complete":
            return result  # a round that asked the client for input
        private = key[-1] is not None
        if not private and result.get("cacheScope") == "private":
            return result  # the result says it is private where its hint did not: trust it
        body = dumps(result)
        if len(body) * 4 <= self.max_bytes:
            uri = request.name if request.method == "resources/read" else None
            self._store(key, _Entry(body, now + ttl, kind, count, uri, private))
        return result

    def _hint(self, request: ResolvedRequest) -> CacheHint | None:
        if request.method == "resources/read":
            hint: CacheHint | None = getattr(request.target, "cache", None)
            return hint
        return self.server._dispatcher.cache_hints.get(request.method)

    def _key(self, request: ResolvedRequest, hint: CacheHint | None) -> tuple[Any, ...] | None:
        """The request's key, or None when it is not to be cached."""
        method = request.method
        param = _PARAM_OF.get(method)
        if param is None:
            return None
        params = request.params or {}
        if any(name not in (param, "_meta") for name in params):
            return None  # a parameter the key would not tell apart
        private = hint is not None and hint.scope == "private"
        auth = request.auth
        if method != "resources/read" and auth is not None:
            private = private or self.server._dispatcher.hide_unauthorized  # cut to the token
        who: tuple[Any, ...] | None = None
        if private:
            if not self.private or auth is None:
                return None
            who = (request.principal, frozenset(auth.scopes))
        return (method, request.version, params.get(param), who)

    # -- keeping -----------------------------------------------------------------------------

    def _store(self, key: tuple[Any, ...], entry: _Entry) -> None:
        self._drop(key)
        self._entries[key] = entry
        self._bytes += len(entry.body)
        if entry.uri is not None:
            self._by_uri.setdefault(entry.uri, set()).add(key)
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))
            self._evictions += 1

    def _drop(self, key: tuple[Any, ...]) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._bytes -= len(entry.body)
        if entry.uri is not None:
            keys = self._by_uri.get(entry.uri)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_uri[entry.uri]

    def forget_uri(self, uri: str) -> None:
        """Drop every read of `uri` (the server calls it on `resource_updated`)."""
        for key in list(self._by_uri.get(uri, ())):
            self._drop(key)

    def clear(self) -> None:
        """Drop everything."""
        self._entries.clear()
        self._by_uri.clear()
        self._bytes = 0

    def stats(self) -> CacheStats:
        """What the cache holds and has done."""
        return CacheStats(
            self._hits, self._misses, len(self._entries), self._bytes, self._evictions
        )

    def __len__(self) -> int:
        return len(self._entries)


def _served(entry: _Entry, now: float) -> dict[str, Any]:
    """A copy of the kept result, telling the client the time it has left."""
    result: dict[str, Any] = loads(entry.body)
    ttl_ms = result.get("ttlMs")
    if isinstance(ttl_ms, int):
        result["ttlMs"] = min(ttl_ms, max(0, int((entry.expires - now) * 1000)))
    return result
