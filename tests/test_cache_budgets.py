"""The session and channel caches hold no more memory than their byte budgets
(`PALAVER_SESSION_CACHE_MB`, `PALAVER_CHANNEL_CACHE_MB`; issue 26), whatever the size of what
passes through them: a channel of a thousand members weighs what it holds, not one entry.

The memory is measured with tracemalloc, not taken from the caches' own count; each must also
use its budget (an estimate far too high would leave it empty)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from palaver.caches import BoundedCache, CachedSession, channel_weight, session_weight
from palaver.domain import Channel, User
from palaver.ids import new_id

BUDGET = 512 * 1024


@pytest.fixture
def traced() -> Iterator[None]:
    gc.collect()
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _session(n: int) -> tuple[str, CachedSession]:
    now = datetime.now(UTC)
    person = User(new_id("user"), f"person number {n} " + "x" * (n % 40), "guest", now)
    return f"{n:064x}", CachedSession(person, now)


def _channel(members: int) -> Callable[[int], tuple[str, Channel]]:
    def make(n: int) -> tuple[str, Channel]:
        now = datetime.now(UTC)
        return new_id("ch"), Channel(
            new_id("ch"),
            f"channel {n}",
            "group",
            [new_id("agent") for _ in range(2)],
            [new_id("user") for _ in range(members)],
            now,
            now,
        )

    return make


@pytest.mark.parametrize(
    ("make", "weigh"),
    [
        (_session, session_weight),
        (_channel(0), channel_weight),
        (_channel(5), channel_weight),
        (_channel(1000), channel_weight),
    ],
    ids=["sessions", "channels", "channels of 5", "channels of 1000"],
)
def test_a_cache_holds_no_more_memory_than_its_budget_and_uses_it(
    traced: None, make: Callable[[int], tuple[str, object]], weigh: Callable[[object], int]
) -> None:
    cache: BoundedCache[str, object] = BoundedCache(BUDGET, weigh)
    before = tracemalloc.get_traced_memory()[0]
    n = 0
    while n < 3 * len(cache) or n < 20:  # until three times what fits has passed
        key, value = make(n)
        cache.put(key, value, cache.generation)
        n += 1
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    assert cache.held <= BUDGET
    assert held <= BUDGET * 1.15, f"{held / 1024:.0f} KiB held for a budget of 512 KiB"
    assert held >= BUDGET * 0.7, f"{held / 1024:.0f} KiB held: the weights are far too high"


def test_what_a_cache_counts_returns_to_nothing_whichever_way_entries_leave() -> None:
    cache: BoundedCache[str, Channel] = BoundedCache(BUDGET, channel_weight)
    made = [_channel(3)(n) for n in range(30)]
    for key, channel in made:
        cache.put(key, channel, cache.generation)
    cache.put(made[0][0], made[1][1], cache.generation)  # a key filled again
    cache.forget([key for key, _ in made[:10]])
    cache.forget_where(lambda channel: channel.name.endswith("7"))
    assert cache.held == sum(channel_weight(c) for k, c in made[10:] if not c.name.endswith("7"))
    cache.clear()
    assert (len(cache), cache.held) == (0, 0)


def test_an_entry_larger_than_the_budget_is_not_kept_and_evicts_nothing() -> None:
    cache: BoundedCache[str, Channel] = BoundedCache(64 * 1024, channel_weight)
    key, small = _channel(1)(0)
    cache.put(key, small, cache.generation)
    huge_key, huge = _channel(1000)(1)
    cache.put(huge_key, huge, cache.generation)
    assert cache.get(huge_key) is None and cache.get(key) is small
