"""The RateLimiter port on Redis: one budget per key for all nodes, as `MemoryRateLimiter` keeps
it for one.

Each operation is one Lua script, so that reading, deciding and writing a key is atomic across
nodes; the time is Redis' own (`TIME`), so that nodes whose clocks disagree still agree on a
bucket. Every key expires once it would be back to its empty state (a full bucket, no attempts
in the window), so nothing is kept for people who went away.

A node that finds many tokens left in a bucket borrows a few more with the one it takes
(`CREDIT_SHARE` of what is left, at most `CREDIT_MOST`) and spends them for `CREDIT_SECONDS`
without asking Redis: a bot or a load test posting hundreds of messages a second costs one
script call in dozens, not one each. They are taken from the shared bucket, and Redis counts
the loan as taken until it is settled or its time is up (the bucket refills only to the burst
less what is lent), so the budget holds across nodes and over time. What a node has not spent
goes back with its next call for that bucket; if none comes (the poster went to another
node), it comes back only as the bucket refills: the limit is then stricter for a while,
never looser. A bucket of the default size never has enough left to lend, and every take is
the script's, as before.

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
import time
from collections import OrderedDict
from dataclasses import dataclass

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
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at', 'lent', 'lent_until')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
local lent = tonumber(state[3]) or 0
local lent_until = tonumber(state[4]) or 0
if now >= lent_until then
  lent = 0
end
tokens = math.min(burst - lent, tokens + math.max(0, now - at) * rate)
lent = math.max(0, lent - tonumber(ARGV[4]))
tokens = math.min(burst - lent, tokens + tonumber(ARGV[3]))
local allowed = 0
local lends = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
  lends = math.min(tonumber(ARGV[6]), math.floor(tokens * tonumber(ARGV[5])))
  if lends > 0 then
    tokens = tokens - lends
    lent = lent + lends
    lent_until = now + tonumber(ARGV[7])
  end
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
  'at', string.format('%.17g', now), 'lent', string.format('%.17g', lent),
  'lent_until', string.format('%.17g', lent_until))
local full = math.max((burst - tokens) / rate, lent_until - now)
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(full * 1000)))
return {allowed, string.format('%.17g', tokens), lends}
"""
)
"""Token bucket that lends. KEYS: the bucket. ARGV: per minute, burst, tokens a node gives
back (unspent), the loan they settle (all it was lent), the share of what is left to lend, at
most how many, how long a loan counts. Tokens lent and not settled count as taken until the
loan's time is up: the bucket refills only to `burst` less them (the loans out since the last
call were out all that time: settling comes after the refill), so that the tokens nodes hold
and the tokens in the bucket never add up to more than `burst`. Answers allowed, the tokens
left (as text: Redis would cut a Lua number to an integer) and the tokens lent."""

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


CREDIT_SHARE = 1 / 16
"""What share of a bucket's tokens left a take reserves for this node to spend alone: with
several nodes each reserving, the others still find most of the bucket."""
CREDIT_MOST = 64
CREDIT_SECONDS = 1.0
"""How long a credit is spent before the next take asks Redis again (and gives back the rest)."""
LOAN_SECONDS = CREDIT_SECONDS + 1.0
"""How long Redis counts a loan not settled as taken: longer than a node spends it, by more than
a script call takes."""
CREDIT_KEYS = 10_000
"""Credits kept at most, the least recently used dropped (their tokens come back as the bucket
refills)."""


@dataclass
class _Credit:
    tokens: int
    """Reserved in the shared bucket, not spent yet."""
    lent: int
    """All the loans it holds: what giving back settles."""
    left: float
    """The shared bucket's tokens when they were reserved."""
    per_minute: int
    burst: int
    until: float

    def spendable(self, per_minute: int, burst: int, now: float) -> bool:
        return (
            self.tokens >= 1
            and now < self.until
            and (self.per_minute, self.burst) == (per_minute, burst)
        )


class RedisRateLimiter:
    def __init__(self, url: str, namespace: str = "palaver") -> None:
        self._redis = connect(url)
        self._prefix = f"{namespace}:limit:"
        self._take = self._redis.register_script(_TAKE)
        self._reserve = self._redis.register_script(_RESERVE)
        self._local = MemoryRateLimiter()
        """The budgets while Redis is away."""
        self._away = False
        self._credits: OrderedDict[str, _Credit] = OrderedDict()

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
        now = time.monotonic()
        credit = self._credits.get(key)
        if credit is not None and credit.spendable(per_minute, burst, now):
            credit.tokens -= 1
            self._credits.move_to_end(key)
            tokens = credit.left + credit.tokens
            return Decision(True, per_minute, int(tokens), (burst - tokens) / rate, 0.0)
        # Taken out before the call: a take meanwhile cannot spend what goes back.
        returned = self._credits.pop(key) if credit is not None else None
        given_back, settled = (returned.tokens, returned.lent) if returned else (0, 0)
        try:
            allowed, left, lent = await self._take(
                keys=[self._prefix + key],
                args=[
                    per_minute,
                    burst,
                    given_back,
                    settled,
                    CREDIT_SHARE,
                    CREDIT_MOST,
                    LOAN_SECONDS,
                ],
            )
        except (RedisError, OSError) as exc:
            self._unreachable(exc, "this node keeps the message budgets")
            return await self._local.take(key, per_minute, burst)
        self._reachable()
        tokens = float(left)
        if allowed and lent:
            self._lend(key, int(lent), tokens, per_minute, burst)
        return Decision(
            allowed=bool(allowed),
            limit=per_minute,
            remaining=int(tokens + int(lent)),
            reset_seconds=(burst - tokens - int(lent)) / rate,
            retry_after=0.0 if allowed else (1.0 - tokens) / rate,
        )

    def _lend(self, key: str, lent: int, left: float, per_minute: int, burst: int) -> None:
        """Keep a credit of `lent` tokens; added to one another take got meanwhile."""
        now = time.monotonic()
        held = self._credits.get(key)
        if held is not None and held.spendable(per_minute, burst, now):
            held.tokens += lent
            held.lent += lent
            held.left = min(held.left, left)
        else:
            # A credit another take got meanwhile and could not spend any more: its loan is
            # settled with this one's (its unspent tokens come back as the bucket refills).
            owed = lent + (held.lent if held is not None else 0)
            credit = _Credit(lent, owed, left, per_minute, burst, now + CREDIT_SECONDS)
            self._credits[key] = credit
        self._credits.move_to_end(key)
        while len(self._credits) > CREDIT_KEYS:
            self._credits.popitem(last=False)

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
