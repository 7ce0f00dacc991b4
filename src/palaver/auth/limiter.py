"""The RateLimiter port and its in-memory adapter (a Redis one serves several nodes)."""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: float
    """Until the bucket is full again."""
    retry_after: float
    """Until the next request would be allowed; 0 when allowed."""

    def headers(self) -> dict[str, str]:
        out = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(math.ceil(self.reset_seconds)),
        }
        if not self.allowed:
            out["Retry-After"] = str(max(1, math.ceil(self.retry_after)))
        return out


def message_budget(user_id: str) -> str:
    """The bucket of a person's messages: what they post, and what their schedules post."""
    return f"msg:{user_id}"


class RateLimiter(Protocol):
    async def take(self, key: str, per_minute: int, burst: int) -> Decision:
        """Token bucket: `burst` at once, refilled at `per_minute`."""
        ...

    async def reserve_attempt(self, key: str, window: float, limit: int) -> float:
        """Count an attempt against `key` before it is evaluated, unless `limit` attempts are
        already counted within `window` seconds; answers 0 when counted, else the seconds until
        the oldest leaves. Reserving first is what holds the limit under concurrency."""
        ...

    async def release_attempt(self, key: str) -> None:
        """Take back the latest reserved attempt: it succeeded, so it is no failure."""
        ...

    async def aclose(self) -> None: ...


class MemoryRateLimiter:
    """Bounded in memory: at most `max_keys` keys are tracked, least recently used dropped."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000):
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _bound(self, table: OrderedDict[str, Any], key: str) -> None:
        table.move_to_end(key)
        while len(table) > self._max_keys:
            table.popitem(last=False)

    async def take(self, key: str, per_minute: int, burst: int) -> Decision:
        now = self._clock()
        rate = per_minute / 60.0
        tokens, last = self._buckets.get(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - last) * rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        self._buckets[key] = (tokens, now)
        self._bound(self._buckets, key)
        return Decision(
            allowed=allowed,
            limit=per_minute,
            remaining=int(tokens),
            reset_seconds=(burst - tokens) / rate,
            retry_after=0.0 if allowed else (1.0 - tokens) / rate,
        )

    async def reserve_attempt(self, key: str, window: float, limit: int) -> float:
        now = self._clock()
        times = self._failures.setdefault(key, deque(maxlen=max(64, limit)))
        while times and times[0] <= now - window:
            times.popleft()
        self._bound(self._failures, key)
        if len(times) >= limit:
            return times[0] + window - now
        times.append(now)
        return 0.0

    async def release_attempt(self, key: str) -> None:
        times = self._failures.get(key)
        if times:
            times.pop()

    async def aclose(self) -> None:
        return None
