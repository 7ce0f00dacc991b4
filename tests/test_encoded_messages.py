"""The encoded-message cache holds no more memory than its byte budget, however many messages
pass through it (issue 25's soak: a node grew 5.5 MiB a minute, one message at a time).

orjson returns each message's JSON in the buffer it wrote into, 4 KiB for a message of a few
hundred bytes; counting `len()` against the budget let the cache hold ten times its budget.
The memory is measured with tracemalloc, not taken from the cache's own count.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import orjson
import pytest

from palaver.caches import EncodedMessages
from palaver.ids import new_id

BUDGET = 256 * 1024


def _message(n: int) -> bytes:
    """A post as the API encodes it: a few hundred bytes."""
    return orjson.dumps(
        {
            "id": new_id("msg"),
            "channelId": "ch_01JD4S0M3CHANNEL00000000000",
            "authorId": "usr_01JD4S0M3AUTH0R000000000000",
            "content": f"post {n} of the soak: a line of ordinary chat about the day's work",
            "type": "text",
            "createdAt": "2026-11-26T12:00:00.000000Z",
            "reactions": [],
            "metadata": {},
        }
    )


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def test_the_cache_holds_no_more_memory_than_its_budget(traced: None) -> None:
    cache = EncodedMessages(BUDGET)
    before = tracemalloc.get_traced_memory()[0]
    for n in range(6_000):  # about ten times what fits
        cache.put(new_id("msg"), _message(n))
    held = tracemalloc.get_traced_memory()[0] - before
    assert cache.held <= BUDGET
    assert held <= BUDGET * 1.1, f"{held / 2**20:.1f} MiB held for a budget of 0.25 MiB"
    entry = len(_message(0)) + 300
    assert len(cache) >= BUDGET // entry, "the budget is used, not left empty"


def test_what_the_cache_counts_returns_to_nothing_once_every_message_is_forgotten() -> None:
    cache = EncodedMessages(BUDGET)
    ids = [new_id("msg") for _ in range(100)]
    for n, message_id in enumerate(ids):
        cache.put(message_id, _message(n))
    assert cache.get(ids[0]) == cache.get(ids[0]) is not None
    for message_id in ids:
        cache.forget(message_id)
    assert (len(cache), cache.held) == (0, 0)
