"""`Timing`: how long requests take, per method and per target, in bounded memory.

Each series (a method, and a method with one target: a tool, prompt, resource or template)
keeps a count, the errors, the cancelled requests, the total, the least and the most, and a
histogram of fixed logarithmic buckets from which the percentiles are read:

- buckets grow by 4% from 1 us to beyond an hour (562 of them, kept sparse: only those that
  were hit), so a percentile is within 2% of the true value (the bucket's geometric middle,
  clamped to the least and the most seen); memory does not grow with the number of requests,
  and every request counts (no sampling: a rare slow call shows in p99 and max);
- targets are what the server declares (a template's every URI is one series, a name the
  server does not know is "(unknown)"), and past `max_targets` series new targets share
  "(other)": a client cannot grow the statistics without bound.

Statistics are updated under a lock: `stats()` and `snapshot()` may be called from any thread
(a metrics exporter's) while the server runs.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from .._dispatch.middleware import CallNext, Middleware
from .._dispatch.resolve import ResolvedRequest
from ._outcome import outcome_of_exception, series_target

__all__ = ["Timing", "TimingStats"]

#: The shortest time told apart (seconds): the lower edge of the first bucket.
_BASE: Final = 1e-6
#: Each bucket is this much wider than the one before: a 2% error at the bucket's middle.
_GROWTH: Final = 1.04
_LOG_GROWTH: Final = math.log(_GROWTH)
#: Buckets from 1 us to 1 us * 1.04**562 (about 3,900 s); longer requests share the last.
_BUCKETS: Final = 562
#: The series kept past which new targets share OTHER.
DEFAULT_MAX_TARGETS: Final = 1000  # a server of ~100 tools, prompts and resources, 10 methods
#: The target of requests past `max_targets`.
OTHER: Final = "(other)"


@dataclass(frozen=True, slots=True)
class TimingStats:
    """The statistics of one method, or of one target of a method. Times in seconds.

    Attributes:
        method: The JSON-RPC method.
        target: The tool's or prompt's name, the resource's URI or template; None for the
            method's requests as a whole.
        count: Requests that ended (with an answer).
        errors: Those that ended with an `isError` result or a JSON-RPC error.
        cancelled: Requests cancelled before their answer (not in the times).
        total: The sum of their times.
        mean: total / count (0 without requests).
        min: The shortest.
        max: The longest.
        p50: The median (within 2%: module docstring).
        p95: The 95th percentile.
        p99: The 99th percentile.
    """

    method: str
    target: str | None
    count: int
    errors: int
    cancelled: int
    total: float
    mean: float
    min: float
    max: float
    p50: float
    p95: float
    p99: float


class _Series:
    __slots__ = ("buckets", "cancelled", "count", "errors", "longest", "shortest", "total")

    def __init__(self) -> None:
        self.count = 0
        self.errors = 0
        self.cancelled = 0
        self.total = 0.0
        self.shortest = math.inf
        self.longest = 0.0
        self.buckets: dict[int, int] = {}

    def add(self, seconds: float, error: bool, bucket: int) -> None:
        self.count += 1
        if error:
            self.errors += 1
        self.total += seconds
        self.shortest = min(self.shortest, seconds)
        self.longest = max(self.longest, seconds)
        buckets = self.buckets
        buckets[bucket] = buckets.get(bucket, 0) + 1

    def percentile(self, fraction: float) -> float:
        rank = max(1, math.ceil(fraction * self.count))
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen >= rank:
                middle: float = _BASE * math.exp((bucket + 0.5) * _LOG_GROWTH)
                return min(max(middle, self.shortest), self.longest)
        return self.longest  # pragma: no cover - the counts add up to `count`

    def record(self, method: str, target: str | None) -> TimingStats:
        count = self.count
        if not count:
            return TimingStats(
                method, target, 0, 0, self.cancelled, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
            )
        return TimingStats(
            method, target, count, self.errors, self.cancelled, self.total, self.total / count,
            self.shortest, self.longest,
            self.percentile(0.50), self.percentile(0.95), self.percentile(0.99),
        )  # fmt: skip


def _bucket(seconds: float) -> int:
    if seconds <= _BASE:
        return 0
    return min(int(math.log(seconds / _BASE) / _LOG_GROWTH), _BUCKETS - 1)


class Timing(Middleware):
    """Count and time every request, per method and per target (module docstring).

    ```python
    timing = Timing()
    server = Server("timed", middleware=[timing])
    ...
    for row in timing.stats():
        print(row.method, row.target, row.count, f"{row.p99 * 1000:.1f} ms")
    ```

    Args:
        max_targets: How many (method, target) series are kept; later targets share "(other)".
        clock: Seconds, monotonic (tests give a clock of their own).
    """

    inline = True  # its hooks never wait: calls answered at once stay on the reader

    def __init__(
        self,
        *,
        max_targets: int = DEFAULT_MAX_TARGETS,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if max_targets < 0:
            raise ValueError("max_targets must be 0 or more")
        self.max_targets = max_targets
        self.clock = clock
        self._lock = threading.Lock()
        self._methods: dict[str, _Series] = {}
        self._targets: dict[tuple[str, str], _Series] = {}
        # Each (method, target) seen, with the series its requests count in: one lookup each.
        self._series: dict[tuple[str, str | None], tuple[_Series, ...]] = {}

    async def on_request(self, request: ResolvedRequest, call_next: CallNext) -> dict[str, Any]:
        """Time the rest of the chain."""
        clock = self.clock
        started = clock()
        try:
            result = await call_next(request)
        except BaseException as exc:
            cancelled = outcome_of_exception(request, exc)[0] == "cancelled"
            self._add(request, clock() - started, None if cancelled else True)
            raise
        self._add(request, clock() - started, result.get("isError") is True)
        return result

    def _add(self, request: ResolvedRequest, seconds: float, error: bool | None) -> None:
        key = (request.method, series_target(request))
        bucket = _bucket(seconds)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._new_series(*key)
            for one in series:
                if error is None:
                    one.cancelled += 1
                else:
                    one.add(seconds, error, bucket)

    def _new_series(self, method: str, target: str | None) -> tuple[_Series, ...]:
        """The series a request of (method, target) counts in: its method's, and its target's."""
        own = self._methods.get(method) or self._methods.setdefault(method, _Series())
        if target is None:
            series: tuple[_Series, ...] = (own,)
        else:
            if (method, target) not in self._targets and len(self._targets) >= self.max_targets:
                found = self._targets.setdefault((method, OTHER), _Series())
                return (own, found)  # not remembered under its own name: a client could grow it
            series = (own, self._targets.setdefault((method, target), _Series()))
        self._series[(method, target)] = series
        return series

    def stats(self) -> list[TimingStats]:
        """The statistics now: each method's, then those of its targets, sorted by name."""
        with self._lock:
            return self._records()

    def reset(self) -> None:
        """Forget every statistic."""
        with self._lock:
            self._methods.clear()
            self._targets.clear()
            self._series.clear()

    def snapshot(self) -> list[TimingStats]:
        """The statistics now, and start afresh, at once (for reports of each interval)."""
        with self._lock:
            records = self._records()
            self._methods.clear()
            self._targets.clear()
            self._series.clear()
        return records

    def _records(self) -> list[TimingStats]:
        records: list[TimingStats] = []
        for method in sorted(self._methods):
            records.append(self._methods[method].record(method, None))
            records.extend(
                self._targets[key].record(*key)
                for key in sorted(k for k in self._targets if k[0] == method)
            )
        return records
