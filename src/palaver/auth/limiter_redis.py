"""The RateLimiter port on Redis: one budget per key for all nodes, as `MemoryRateLimiter` keeps
it for one.

Each operation is one Lua script, so that reading, deciding and writing a key is atomic across
nodes; the time is Redis' own (`TIME`), so that nodes whose clocks disagree still agree on a
bucket. Every key expires once it would be back to its empty state (a full bucket, no attempts
in the window), so nothing is kept for people who went away.

While Redis cannot be reached, messages are counted against a budget of this node's own, the
same as the shared one (chat stays usable, and a flood is still held: across N nodes at most N
times the budget instead of no limit at all), and logins are refused for a moment (guessing must
not get easier when Redis is down). Once Redis answers, the shared budget is back. An outage is
logged when it begins and when it ends, not for every request. docs/SCALING.md and
docs/FAULTS.md say why.
"""

from __future__ import annotations

import logging
import os

from redis.exceptions import RedisError

from palaver.auth.limiter import Decision, MemoryRateLimiter
from palaver.redis_client import connect

log = logging.getLogger(__name__)

UNREACHABLE_RETRY = 5.0
"""What a login is told to wait while Redis is unreachable."""

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

_TAKE = (
    _NOW
    + """
local rate = tonumber(ARGV[1]) / 60
local burst = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
  'at', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((burst - tokens) / rate * 1000)))
return {allowed, string.format('%.17g', tokens)}
"""
)
"""Token bucket. KEYS: the bucket. ARGV: per minute, burst. Answers allowed and the tokens
left, as text: Redis would cut a Lua number to an integer."""

_RESERVE = (
    _NOW
    + """
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.17g', now - window))
if redis.call('ZCARD', KEYS[1]) >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return string.format('%.17g', tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', KEYS[1], string.format('%.17g', now), ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
return '0'
"""
)
"""Attempts in a sliding window, as a sorted set by time. KEYS: the attempts. ARGV: window in
seconds, limit, a member name of its own. Answers 0, or the seconds until the oldest leaves."""


class RedisRateLimiter:
    def __init__(self, url: str, namespace: str = "palaver") -> None:
        self._redis = connect(url)
        self._prefix = f"{namespace}:limit:"
        self._take = self._redis.register_script(_TAKE)
        self._reserve = self._redis.register_script(_RESERVE)
        self._local = MemoryRateLimiter()
        """The budgets while Redis is away."""
        self._away = False

    def _unreachable(self, exc: Exception, meanwhile: str) -> None:
        if not self._away:
            self._away = True
            log.warning("rate limiter unreachable (%s); %s until Redis is back", exc, meanwhile)

    def _reachable(self) -> None:
        if self._away:
            self._away = False
            log.warning("rate limiter reaches Redis again; budgets are shared again")

    async def take(self, key: str, per_minute: int, burst: int) -> Decision:
        rate = per_minute / 60.0
        try:
            allowed, left = await self._take(keys=[self._prefix + key], args=[per_minute, burst])
        except (RedisError, OSError) as exc:
            self._unreachable(exc, "this node keeps the message budgets")
            return await self._local.take(key, per_minute, burst)
        self._reachable()
        tokens = float(left)
        return Decision(
            allowed=bool(allowed),
            limit=per_minute,
            remaining=int(tokens),
            reset_seconds=(burst - tokens) / rate,
            retry_after=0.0 if allowed else (1.0 - tokens) / rate,
        )

    async def reserve_attempt(self, key: str, window: float, limit: int) -> float:
        member = os.urandom(8).hex()
        try:
            wait = await self._reserve(keys=[self._prefix + key], args=[window, limit, member])
        except (RedisError, OSError) as exc:
            self._unreachable(exc, "logins are refused")
            return UNREACHABLE_RETRY
        self._reachable()
        return max(0.0, float(wait))

    async def release_attempt(self, key: str) -> None:
        try:
            await self._redis.zpopmax(self._prefix + key)
        except (RedisError, OSError) as exc:
            self._unreachable(exc, "attempts stay counted")

    async def aclose(self) -> None:
        await self._redis.aclose()
