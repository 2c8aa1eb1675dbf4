"""Rate limiting: a token bucket per client, per session or per target, in memory or in Redis.

```python
from trio_mcp.middleware import Rate, RateLimiter

server = Server("api", middleware=[RateLimiter(Rate(10, burst=20))])  # per client
```

The bucket: each key (a client, a session, a target: `key`) has a bucket of at most `burst`
tokens, refilled at `requests / per` tokens a second and full at first. A request takes one
token; one that finds less than one is refused and told how long until there is one, and takes
nothing. A bucket that would be full again is the same as none, so it is forgotten: evicted from
memory, expired in Redis. Each rule (the method or family `methods` names, or the default) has
buckets of its own.

The key: `by_client` (the default) is the verified token's principal; without a token, the
client's address over Streamable HTTP (`ResolvedRequest.peer`; an IPv6 one by its /64), since a
session id is no identity there: `initialize` is free, so a client can mint one per request, and
every 2026-07-28 request has one of its own. Behind a reverse proxy that address is the proxy's,
one bucket for every client without a token. Over stdio and in memory, the session (one
connection, one client). `by_session` and `by_target` (the tool's or prompt's name, the
resource's URI: one bucket shared by every client) are the others; a key function of one's own
returns a string, or None to leave the request unlimited.

The answer: a refused `tools/call` is a tool error result (`isError`) saying the limit and when
to retry: a model reads it and can wait, or do something else meanwhile, where a JSON-RPC error
is taken by most clients for a failed request, and only some show it to the model (the spec:
clients SHOULD give tool execution errors to the model, MAY give protocol errors).
`tool_errors=False` makes it the JSON-RPC error that every other refused request gets: -32000
(`SERVER_UNAVAILABLE`: cannot take it now), with `data` `{"retryAfterSeconds": ..., "limit":
{"requests", "perSeconds", "burst"}}`.

What is limited: every request the middleware chain sees (see `Middleware`: not `initialize`,
nor what the protocol layer refuses first), except the families and methods of `exempt` (by
default `DEFAULT_EXEMPT`: pings, discovery, the lists and task polling), unless `methods` names
them. Each 2026-07-28 input round is a request and takes a token. Notifications are not limited
(there is no answer to refuse them with).
"""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, NamedTuple, NoReturn, Protocol

from .._core.jsonrpc import SERVER_UNAVAILABLE
from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest
from .._exceptions import RequestError, ToolError
from ..transports.http.asgi import client_key

__all__ = [
    "DEFAULT_EXEMPT",
    "DEFAULT_MAX_KEYS",
    "KeyFunction",
    "MemoryRateStore",
    "Rate",
    "RateDecision",
    "RateLimiter",
    "RateStore",
    "by_client",
    "by_session",
    "by_target",
]

#: Families and methods not limited unless `methods` names them: a ping is how a
#: client learns the server is alive, and refused it would take the server for dead;
#: `server/discover` and `logging/setLevel` are the protocol's housekeeping; the lists are a
#: client's discovery (cached by clients, cheap to answer, and a client refused them cannot
#: start); `tasks/*` polls a task whose call was counted already, and refusing it strands the
#: task's result.
DEFAULT_EXEMPT: Final = frozenset({"protocol", "list", "task"})

#: Buckets a `MemoryRateStore` keeps at most: past it, the least recently used is forgotten
#: (that key starts again with a full bucket). About 350 bytes each with its key, so some 35 MB:
#: more distinct clients than that within one refill period is a crowd no per-client limit
#: holds.
DEFAULT_MAX_KEYS: Final = 100_000

#: Tolerance of the bucket arithmetic: a client that waits exactly the time it was told is not
#: refused again for a rounding error.
_EPSILON: Final = 1e-9


@dataclass(frozen=True, slots=True)
class Rate:
    """A limit: `requests` every `per` seconds, in bursts of up to `burst`.

    `Rate(10)` is ten a second; `Rate(100, per=60, burst=20)` a hundred a minute, no more than
    twenty at once.

    Attributes:
        requests: Requests allowed every `per` seconds (the rate tokens come back at).
        per: The period, in seconds.
        burst: Requests allowed at once after a quiet spell: the bucket's size (None: as many
            as `requests`).

    Raises:
        ValueError: for a count below one or a period that is not a positive number.
    """

    requests: int
    per: float = 1.0
    burst: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.requests, bool) or not isinstance(self.requests, int):
            raise TypeError(f"Rate: requests must be an int, not {self.requests!r}")
        if self.requests < 1:
            raise ValueError(f"Rate: requests must be at least 1, not {self.requests}")
        if not (isinstance(self.per, int | float) and math.isfinite(self.per) and self.per > 0):
            raise ValueError(f"Rate: per must be a positive number of seconds, not {self.per!r}")
        if self.burst is not None and (
            isinstance(self.burst, bool) or not isinstance(self.burst, int) or self.burst < 1
        ):
            raise ValueError(f"Rate: burst must be an int of at least 1, not {self.burst!r}")

    @property
    def capacity(self) -> int:
        """The bucket's size: `burst`, or `requests` when it is None."""
        return self.requests if self.burst is None else self.burst

    @property
    def per_second(self) -> float:
        """Tokens that come back each second."""
        return self.requests / self.per

    def describe(self) -> str:
        """The limit in words, e.g. "10 per second, bursts of up to 20"."""
        period = _PERIODS.get(self.per, f"{self.per:g} s")
        return f"{self.requests} per {period}, bursts of up to {self.capacity}"

    def to_wire(self) -> dict[str, Any]:
        """The limit as a refusal's `data.limit` tells it."""
        return {"requests": self.requests, "perSeconds": self.per, "burst": self.capacity}


_PERIODS: Final[Mapping[float, str]] = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}


class RateDecision(NamedTuple):
    """What a store answered for one request.

    Attributes:
        allowed: Whether it took a token.
        retry_after: Seconds until a token is there (0 when allowed).
        remaining: Tokens left in the bucket.
        unavailable: Refused because the shared store cannot be reached (and fails closed),
            not because the bucket is empty.
    """

    allowed: bool
    retry_after: float
    remaining: float
    unavailable: bool = False


class Bucket(NamedTuple):
    """A bucket's state: its tokens, counted at `at` (seconds, on its store's clock)."""

    tokens: float
    at: float


def take(bucket: Bucket | None, now: float, rate: Rate) -> tuple[Bucket, RateDecision]:
    """Take one token at `now`: the bucket's new state and the decision (module docstring).

    Args:
        bucket: Its state, or None for a bucket never seen (or forgotten): full.
        now: The store's clock; one that went back refills nothing.
        rate: The limit.
    """
    capacity = rate.capacity
    if bucket is None:
        tokens, at = float(capacity), now
    else:
        tokens, at = bucket
        if now > at:
            tokens = min(float(capacity), tokens + (now - at) * rate.per_second)
            at = now
    if tokens >= 1 - _EPSILON:
        left = max(0.0, tokens - 1)
        return Bucket(left, at), RateDecision(True, 0.0, left)
    return Bucket(tokens, at), RateDecision(False, (1 - tokens) / rate.per_second, tokens)


def full_at(bucket: Bucket, rate: Rate) -> float:
    """When the bucket would be full again, and so forgettable."""
    return bucket.at + (rate.capacity - bucket.tokens) / rate.per_second


class RateStore(Protocol):
    """Where a `RateLimiter` keeps its buckets: `MemoryRateStore`, `RedisRateStore`."""

    async def take(self, key: str, rate: Rate) -> RateDecision:
        """Take one token from `key`'s bucket under `rate`."""
        ...


class MemoryRateStore:
    """Buckets in this process's memory (the default): each worker of a fleet limits alone.

    Args:
        max_keys: Buckets kept at most (`DEFAULT_MAX_KEYS`); the least recently used goes
            first, and those full again go as soon as they come first.
        clock: Seconds, monotonic (default `time.monotonic`); a test passes a fake one.
    """

    def __init__(
        self,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be positive")
        self.max_keys = max_keys
        self.clock = clock
        # Least recently used first: key -> (bucket, when it is full again).
        self._buckets: OrderedDict[str, tuple[Bucket, float]] = OrderedDict()

    def __len__(self) -> int:
        """Buckets kept now."""
        return len(self._buckets)

    async def take(self, key: str, rate: Rate) -> RateDecision:
        """Take one token from `key`'s bucket (`take_now`)."""
        return self.take_now(key, rate)

    def take_now(self, key: str, rate: Rate) -> RateDecision:
        """Take one token from `key`'s bucket, at the store's clock's now."""
        now = self.clock()
        buckets = self._buckets
        found = buckets.pop(key, None)
        bucket, decision = take(None if found is None else found[0], now, rate)
        buckets[key] = (bucket, full_at(bucket, rate))
        # Forget a bucket or two that are full again, oldest first: each take adds at most one,
        # so idle buckets go about as fast as new ones come (amortized O(1)).
        for _ in range(2):
            oldest, (_, full) = next(iter(buckets.items()))
            if full > now:
                break
            del buckets[oldest]
        while len(buckets) > self.max_keys:
            buckets.popitem(last=False)
        return decision


#: What a key function is: the request -> its bucket's key, or None to leave it unlimited.
KeyFunction = Callable[[ResolvedRequest], "str | None"]


def by_client(request: ResolvedRequest) -> str:
    """The client: the token's principal, else its address, else its session (module docstring).

    An IPv6 address counts by its /64, as the connection cap per address counts it: a host
    has the block whole, and its privacy addresses change within it.
    """
    principal = request.principal
    if principal is not None:
        return "principal:" + json.dumps(principal)
    peer = request.peer
    if peer is not None:
        return "peer:" + (client_key((peer,)) or peer)
    return f"session:{request.session_id}"


def by_session(request: ResolvedRequest) -> str:
    """The session: one connection, or one Streamable HTTP session (2026-07-28: one request)."""
    return f"session:{request.session_id}"


def by_target(request: ResolvedRequest) -> str:
    """What the request names: a tool, a prompt, a resource's URI; else its method."""
    if request.name is not None and request.kind != "task":
        return f"{request.kind}:{request.name}"
    return request.method


class RateLimiter(Middleware):
    """Refuses requests past a rate, per client by default (see the module docstring).

    Put it first in `Server(middleware=[...])`, so a refused request costs nothing further.
    Stack two for two limits (per client and per tool, say); limiters sharing a store need
    different `name`s.

    Args:
        rate: The limit of every request that `methods` or `exempt` does not name; None
            limits only what `methods` names.
        key: Whose bucket a request takes from: `by_client`, `by_session`, `by_target`, or a
            function of the `ResolvedRequest` (None: not limited).
        methods: Limits of their own by method ("tools/call") or family ("tool", "resource",
            "prompt", "completion", "list", "task", "listen", "subscribe", "protocol"); the
            method wins over its family, and None exempts.
        exempt: Families and methods not limited unless `methods` names them.
        store: Where the buckets live (default: a `MemoryRateStore` of this limiter's own);
            `RedisRateStore` shares them across a fleet.
        name: Tells this limiter's buckets from another's in a shared store (default: the key
            function's name).
        tool_errors: A refused `tools/call` is a tool error result (True) or the JSON-RPC
            error of the other requests (False).
    """

    def __init__(
        self,
        rate: Rate | None,
        *,
        key: KeyFunction = by_client,
        methods: Mapping[str, Rate | None] | None = None,
        exempt: Collection[str] = DEFAULT_EXEMPT,
        store: RateStore | None = None,
        name: str | None = None,
        tool_errors: bool = True,
    ) -> None:
        for limit in (rate, *(methods or {}).values()):
            if limit is not None and not isinstance(limit, Rate):
                raise TypeError(f"RateLimiter: a limit must be a Rate or None, not {limit!r}")
        if not callable(key):
            raise TypeError(f"RateLimiter: key must be a function of the request, not {key!r}")
        self.rate = rate
        self.key = key
        self.methods: Mapping[str, Rate | None] = MappingProxyType(dict(methods or {}))
        self.exempt = frozenset(exempt)
        self.store: RateStore = store if store is not None else MemoryRateStore()
        self.name = name if name is not None else getattr(key, "__name__", "key")
        self.tool_errors = tool_errors
        # The rule of each method seen: (its label, its limit), or None when not limited.
        self._rules: dict[str, tuple[str, Rate] | None] = {}

    @property
    def inline(self) -> bool:  # type: ignore[override]
        """It never waits with buckets in memory; with Redis it waits for the round trip."""
        return isinstance(self.store, MemoryRateStore)

    def __repr__(self) -> str:
        return f"RateLimiter({self.rate!r}, name={self.name!r}, store={self.store!r})"

    def rule(self, request: ResolvedRequest) -> tuple[str, Rate] | None:
        """The rule that limits `request`: (the method, family or "*" it is keyed by, its limit).

        None when it is not limited.
        """
        method = request.method
        try:
            return self._rules[method]  # a method's family never changes
        except KeyError:
            pass
        kind = request.kind
        found: tuple[str, Rate] | None
        if method in self.methods or kind in self.methods:
            label = method if method in self.methods else kind
            limit = self.methods[label]
            found = None if limit is None else (label, limit)
        elif method in self.exempt or kind in self.exempt or self.rate is None:
            found = None
        else:
            found = ("*", self.rate)
        self._rules[method] = found
        return found

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Take a token for the request, or refuse it."""
        rule = self.rule(request)
        if rule is not None:
            who = self.key(request)
            if who is not None:
                label, rate = rule
                decision = await self.store.take(f"{self.name}|{label}|{who}", rate)
                if not decision.allowed:
                    self.refuse(request, rate, decision)
        return await call_next(request)

    def refuse(self, request: ResolvedRequest, rate: Rate, decision: RateDecision) -> NoReturn:
        """Raise the refusal of `request` (the answer: module docstring).

        Raises:
            ToolError: for a `tools/call`, with `tool_errors`.
            RequestError: -32000 with `retryAfterSeconds` and `limit`, for the rest.
        """
        retry = math.ceil(decision.retry_after * 1000) / 1000  # a retry then finds a token
        shown = math.ceil(decision.retry_after * 10) / 10
        if decision.unavailable:
            message = (
                f"Rate limit of {request.method} cannot be checked now (its store cannot be "
                f"reached); retry in {shown:.1f} s"
            )
        else:
            message = (
                f"Rate limit exceeded for {request.method} ({rate.describe()}); "
                f"retry in {shown:.1f} s"
            )
        if request.kind == "tool" and self.tool_errors:
            raise ToolError(message)
        raise RequestError(
            message, SERVER_UNAVAILABLE, {"retryAfterSeconds": retry, "limit": rate.to_wire()}
        )
