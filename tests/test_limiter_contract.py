"""The RateLimiter contract, over every adapter: in memory, and Redis on a real `redis-server`.

Time is real here (Redis answers with its own clock), so the rates are high and the waits short.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from redis.asyncio import Redis

from palaver.auth import limiter_redis
from palaver.auth.limiter import MemoryRateLimiter, RateLimiter
from palaver.auth.limiter_redis import UNREACHABLE_RETRY, RedisRateLimiter
from tests.redis_server import RedisServer
from tests.support import free_port

Node = Callable[[], RateLimiter]


@pytest.fixture(params=["memory", "redis"])
async def node(request: pytest.FixtureRequest) -> AsyncIterator[Node]:
    """Makes a node's limiter; on Redis, the nodes of one test share a database of their own."""
    limiters: list[RateLimiter] = []
    url = request.getfixturevalue("redis_server").url() if request.param == "redis" else ""

    def make() -> RateLimiter:
        if request.param == "memory" and limiters:
            pytest.skip("an in-memory limiter is a single node")
        limiter: RateLimiter = RedisRateLimiter(url) if url else MemoryRateLimiter()
        limiters.append(limiter)
        return limiter

    yield make
    for limiter in limiters:
        await limiter.aclose()


async def test_a_bucket_allows_its_burst_at_once_then_refuses(node: Node) -> None:
    limiter = node()
    decisions = [await limiter.take("msg:u1", per_minute=60, burst=5) for _ in range(6)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False]
    assert [d.remaining for d in decisions] == [4, 3, 2, 1, 0, 0]
    refused = decisions[-1]
    assert refused.limit == 60
    assert 0.5 < refused.retry_after <= 1.0, "one token comes back each second"
    assert 4.5 < refused.reset_seconds <= 5.0
    assert refused.headers()["Retry-After"] == "1"
    assert decisions[0].retry_after == 0.0
    assert "Retry-After" not in decisions[0].headers()


async def test_a_bucket_refills_at_its_rate(node: Node) -> None:
    limiter = node()
    for _ in range(2):
        assert (await limiter.take("msg:u1", per_minute=120, burst=2)).allowed
    refused = await limiter.take("msg:u1", per_minute=120, burst=2)
    assert not refused.allowed
    await asyncio.sleep(refused.retry_after + 0.02)
    assert (await limiter.take("msg:u1", per_minute=120, burst=2)).allowed
    assert not (await limiter.take("msg:u1", per_minute=120, burst=2)).allowed


async def test_a_bucket_never_holds_more_than_its_burst(node: Node) -> None:
    limiter = node()
    assert (await limiter.take("msg:u1", per_minute=600, burst=3)).allowed
    await asyncio.sleep(0.5)  # five tokens' worth of time
    decisions = [await limiter.take("msg:u1", per_minute=600, burst=3) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]


async def test_buckets_of_different_keys_are_apart(node: Node) -> None:
    limiter = node()
    assert (await limiter.take("msg:u1", per_minute=1, burst=1)).allowed
    assert not (await limiter.take("msg:u1", per_minute=1, burst=1)).allowed
    assert (await limiter.take("msg:u2", per_minute=1, burst=1)).allowed


async def test_attempts_are_counted_up_to_the_limit_within_the_window(node: Node) -> None:
    limiter = node()
    assert [await limiter.reserve_attempt("login:a", 0.5, 3) for _ in range(3)] == [0, 0, 0]
    wait = await limiter.reserve_attempt("login:a", 0.5, 3)
    assert 0 < wait <= 0.5, "until the oldest attempt leaves the window"
    assert await limiter.reserve_attempt("login:b", 0.5, 3) == 0, "another key has its own"
    await asyncio.sleep(wait + 0.02)
    assert await limiter.reserve_attempt("login:a", 0.5, 3) == 0


async def test_a_released_attempt_is_no_longer_counted(node: Node) -> None:
    limiter = node()
    for _ in range(5):
        assert await limiter.reserve_attempt("login:a", 60, 3) == 0
        await limiter.release_attempt("login:a")
    for _ in range(3):
        assert await limiter.reserve_attempt("login:a", 60, 3) == 0
    assert await limiter.reserve_attempt("login:a", 60, 3) > 0
    await limiter.release_attempt("login:never-used")


async def test_limiters_of_two_nodes_share_one_budget(node: Node) -> None:
    a, b = node(), node()
    decisions = [await (a, b)[n % 2].take("msg:u1", per_minute=60, burst=4) for n in range(6)]
    assert [d.allowed for d in decisions] == [True] * 4 + [False] * 2
    for n in range(3):
        assert await (a, b)[n % 2].reserve_attempt("login:a", 60, 3) == 0
    assert await a.reserve_attempt("login:a", 60, 3) > 0
    await b.release_attempt("login:a")
    assert await a.reserve_attempt("login:a", 60, 3) == 0


async def test_every_redis_key_expires_once_it_is_back_to_empty(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    limiter, admin = RedisRateLimiter(url), Redis.from_url(url)
    try:
        await limiter.take("msg:u1", per_minute=60, burst=10)
        await limiter.reserve_attempt("login:a", 300, 10)
        keys = sorted(await admin.keys("*"))
        assert keys == [b"palaver:limit:login:a", b"palaver:limit:msg:u1"]
        assert 0 < await admin.pttl(keys[1]) <= 1000, "one token to refill: one second"
        assert 299_000 < await admin.pttl(keys[0]) <= 300_000, "the attempt leaves in 300 s"
    finally:
        await limiter.aclose()
        await admin.aclose()


async def test_a_limiter_outlives_a_redis_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its old connections and its loaded scripts are gone; the next call needs neither."""
    redis = RedisServer(tmp_path)
    redis.start()
    limiter = RedisRateLimiter(redis.url())
    try:
        assert (await limiter.take("msg:u1", per_minute=60, burst=2)).remaining == 1
        assert await limiter.reserve_attempt("login:a", 60, 1) == 0
        # In threads, so that the event loop notices the closed connections, as a node's would.
        await asyncio.to_thread(redis.stop)
        await asyncio.to_thread(redis.start)
        assert (await limiter.take("msg:u1", per_minute=60, burst=2)).remaining == 1
        assert await limiter.reserve_attempt("login:a", 60, 1) == 0
        assert await limiter.reserve_attempt("login:a", 60, 1) > 0
    finally:
        await limiter.aclose()
        redis.stop()
    assert "unreachable" not in caplog.text


async def test_without_redis_messages_keep_a_local_budget_and_logins_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Chat stays usable while Redis is down, a flood is still held by this node's own budget,
    and guessing the owner key does not get easier. The outage is logged once."""
    limiter = RedisRateLimiter(f"redis://127.0.0.1:{free_port()}/0")
    try:
        first = await limiter.take("msg:u1", per_minute=1, burst=1)
        second = await limiter.take("msg:u1", per_minute=1, burst=1)
        assert first.allowed and not second.allowed and second.retry_after > 0
        assert (await limiter.take("msg:u2", per_minute=1, burst=1)).allowed
        assert caplog.text.count("unreachable") == 1
        assert await limiter.reserve_attempt("login:a", 300, 10) == UNREACHABLE_RETRY
        await limiter.release_attempt("login:a")
    finally:
        await limiter.aclose()


async def _script_calls(admin: Redis) -> int:
    stats = await admin.info("commandstats")
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval")
    )


async def test_a_large_bucket_lends_a_node_tokens_and_the_budget_holds_across_nodes(
    redis_server: RedisServer,
) -> None:
    """A node spends most of a large bucket's takes from what it reserved, without a script
    call each; two nodes together are still allowed exactly the burst, no more."""
    url = redis_server.url()
    a, b, admin = RedisRateLimiter(url), RedisRateLimiter(url), Redis.from_url(url)
    try:
        before = await _script_calls(admin)
        burst = 600
        decisions = []
        # One token a minute: what comes back while the test runs is below one.
        for n in range(2 * burst):
            decisions.append(await (a, b)[(n // 7) % 2].take("msg:bot", 1, burst))
        assert sum(d.allowed for d in decisions) == burst
        assert all(d.allowed for d in decisions[: burst - 2 * limiter_redis.CREDIT_MOST])
        assert not any(d.allowed for d in decisions[-10:])
        calls = await _script_calls(admin) - before
        refused = len(decisions) - burst  # each asks Redis: nothing is lent when none is left
        assert calls - refused < burst / 4, "most takes were spent from a credit"
        remaining = [d.remaining for d in decisions if d.allowed]
        assert remaining[0] == burst - 1 and remaining[-1] <= 1
    finally:
        for closing in (a, b):
            await closing.aclose()
        await admin.aclose()


async def test_a_credit_not_spent_goes_back_with_the_next_take(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limiter_redis, "CREDIT_SECONDS", 0.05)
    url = redis_server.url()
    a, b, admin = RedisRateLimiter(url), RedisRateLimiter(url), Redis.from_url(url)
    try:
        burst = 400
        first = await a.take("msg:bot", 1, burst)
        assert first.allowed and first.remaining == burst - 1
        held = float(await admin.hget("palaver:limit:msg:bot", "tokens") or 0)
        assert held < burst - 2, "a took more than its one token"
        await asyncio.sleep(0.1)
        # Expired: a's next take gives its unspent tokens back before it takes one.
        assert (await a.take("msg:bot", 1, burst)).allowed
        allowed = 2
        while (await b.take("msg:bot", 1, burst)).allowed:
            allowed += 1
        await asyncio.sleep(0.1)
        while (await a.take("msg:bot", 1, burst)).allowed:
            allowed += 1
        assert allowed == burst
    finally:
        for closing in (a, b):
            await closing.aclose()
        await admin.aclose()


async def test_a_bucket_of_the_default_size_never_lends(redis_server: RedisServer) -> None:
    """Every take is the shared bucket's own: ten tokens are too few to lend any."""
    url = redis_server.url()
    a, admin = RedisRateLimiter(url), Redis.from_url(url)
    try:
        before = await _script_calls(admin)
        decisions = [await a.take("msg:u1", per_minute=30, burst=10) for _ in range(11)]
        assert [d.allowed for d in decisions] == [True] * 10 + [False]
        assert await _script_calls(admin) - before == 11
    finally:
        await a.aclose()
        await admin.aclose()


async def test_lent_tokens_count_as_taken_until_their_loan_is_settled(
    redis_server: RedisServer,
) -> None:
    """A bucket that refills while a node holds a credit refills to its burst less the loan:
    the credit and the bucket together never allow more than a token bucket would."""
    url = redis_server.url()
    limiter, admin = RedisRateLimiter(url), Redis.from_url(url)
    try:
        per_minute, burst = 1200, 200  # 20 tokens a second
        assert (await limiter.take("msg:bot", per_minute, burst)).allowed
        lent = float(await admin.hget("palaver:limit:msg:bot", "lent") or 0)
        assert lent >= 10
        # Long enough for the bucket to fill again, short enough for the credit to be held.
        await asyncio.sleep(0.8)
        started = time.monotonic()
        allowed = 0
        while (await limiter.take("msg:bot", per_minute, burst)).allowed:
            allowed += 1
        elapsed = time.monotonic() - started
        assert allowed <= burst + elapsed * per_minute / 60 + 1
        assert allowed >= burst - 1
    finally:
        await limiter.aclose()
        await admin.aclose()
