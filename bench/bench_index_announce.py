"""What telling other nodes of a vector write costs, on SQLite with Redis (docs/SCALING.md,
"Caches across nodes").

1. A memory's vector written in its own transaction (`Database.write`, `put`), as the memory
   write rule does: without a bus (one node), and with a Redis bus (the write is announced
   after commit and the writer waits for its echo).
2. The other node's side: the time to read an agent's matrix again after an announcement made
   it drop the matrix, for `--memories` vectors.

    python -m bench.bench_index_announce [--writes 300] [--memories 1000]

Starts its own redis-server; prints the figures (they go into docs/SCALING.md by hand).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from tests.knowledge.helpers import knowledge_template, open_copy
from tests.redis_server import RedisServer

from palaver.bus.redis import RedisBus
from palaver.knowledge.index.base import Entry, Space
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.store.db import Database

AGENT = "agent_bench"
SPACE = Space("bench", 384)


def _vectors(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, SPACE.dim)).astype(np.float32)
    norms: np.ndarray = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / norms


async def _writes(db: Database, index: SqliteSearchIndex, count: int, tag: str) -> list[float]:
    vectors = _vectors(count, hash(tag) % 1000)
    timings = []
    for n in range(count):
        started = time.perf_counter()
        async with db.write() as tx:
            await index.put(tx, AGENT, "memory", [Entry(f"{tag}{n}")], vectors[n : n + 1], SPACE)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def _summary(name: str, timings: list[float]) -> str:
    ordered = sorted(timings)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{name}: p50 {statistics.median(ordered):.2f} ms, p99 {p99:.2f} ms"


async def _run(folder: Path, redis_url: str, writes: int, memories: int) -> None:
    db = await open_copy(knowledge_template(folder), folder, AGENT)
    bus = RedisBus(redis_url)
    await bus.start()
    alone = SqliteSearchIndex(db)
    shared = SqliteSearchIndex(db, bus=bus)
    other = SqliteSearchIndex(db, bus=bus)
    bus.listen(other.on_event)
    try:
        for index in (alone, shared):  # cached matrices, as a node that has searched holds
            await index.vector_search(AGENT, "memory", _vectors(1, 0)[0], SPACE, 1)
        await _writes(db, alone, 20, "warm")
        print(_summary("one node, no announcement", await _writes(db, alone, writes, "a")))
        print(_summary("announced on Redis", await _writes(db, shared, writes, "s")))
        await _writes(db, alone, memories, "m")
        reloads = []
        for _ in range(20):
            other.on_event(
                "control",
                {
                    "type": "vectors_changed",
                    "agentId": AGENT,
                    "kind": "memory",
                    "node": "elsewhere",
                },
            )
            started = time.perf_counter()
            await other.vector_search(AGENT, "memory", _vectors(1, 1)[0], SPACE, 1)
            reloads.append((time.perf_counter() - started) * 1000)
        total = memories + writes * 2 + 20
        print(_summary(f"search after a drop, {total} vectors", reloads))
    finally:
        await bus.aclose()
        await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer(Path(tmp) / "redis")
        redis.start()
        try:
            asyncio.run(_run(Path(tmp), redis.url(), args.writes, args.memories))
        finally:
            redis.stop()


if __name__ == "__main__":
    main()
