"""The Redis bus against the in-process one, and the ways a node can subscribe on Redis.

1. Latency: one event at a time, from `publish` to a listener: in-process; Redis with the
   listener on the publishing node; Redis with the listener on a second node.
2. A burst: `--events` events over `--topics` topics, until both of two nodes have heard all
   of them: from one publisher (each `publish` waits for its event to come back, as a
   streaming reply's chunks do), and from `--publishers` at once (as many requests do).
3. Subscribing, on plain redis-py: one pattern (`palaver:0:*`, what `RedisBus` does), one
   channel per topic subscribed by name, one channel for all topics with the topic inside
   the message. Each gets the same burst; Redis' own CPU time is read from `INFO cpu`.

    python -m bench.bench_redis_bus [--events 50000] [--topics 1000] [--rounds 2000]
                                   [--publishers 100]

Starts its own redis-server; writes bench/results/redis_bus.json and .md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from redis.asyncio import Redis
from tests.redis_server import RedisServer

from palaver.bus.base import Event, EventBus
from palaver.bus.inproc import InProcessBus
from palaver.bus.redis import RedisBus

RESULTS = Path(__file__).parent / "results"


def ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
    }


async def latency(publisher: EventBus, listener: EventBus, rounds: int) -> dict[str, float]:
    arrived = asyncio.Event()
    listener.listen(lambda topic, event: arrived.set())
    samples = []
    for n in range(rounds):
        arrived.clear()
        began = time.perf_counter()
        await publisher.publish(f"channel:c{n % 10}", {"type": "message", "data": {"n": n}})
        await arrived.wait()
        samples.append(time.perf_counter() - began)
    return ms(samples[rounds // 10 :])


async def burst(
    nodes: list[RedisBus], events: int, topics: int, publishers: int
) -> dict[str, float]:
    heard = [0] * len(nodes)
    done = asyncio.Event()

    def counter(i: int) -> Callable[[str, Event], None]:
        def count(topic: str, event: Event) -> None:
            heard[i] += 1
            if min(heard) == events:
                done.set()

        return count

    for i, node in enumerate(nodes):
        node.listen(counter(i))

    async def publisher(first: int) -> None:
        for n in range(first, events, publishers):
            await nodes[0].publish(f"channel:c{n % topics}", {"type": "stream_chunk", "n": n})

    began = time.perf_counter()
    await asyncio.gather(*(publisher(first) for first in range(publishers)))
    await done.wait()
    seconds = time.perf_counter() - began
    return {"seconds": round(seconds, 3), "events_per_s": round(events / seconds)}


async def redis_cpu(admin: Redis) -> float:
    info = await admin.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def subscription(url: str, how: str, events: int, topics: int) -> dict[str, float]:
    """One publisher, one subscriber, on plain redis-py: what the subscription costs."""
    publisher, subscriber = Redis.from_url(url), Redis.from_url(url)
    pubsub = subscriber.pubsub()
    names = [f"palaver:0:channel:c{n}" for n in range(topics)]
    if how == "pattern":
        await pubsub.psubscribe("palaver:0:*")
    elif how == "channel per topic":
        for start in range(0, topics, 500):
            await pubsub.subscribe(*names[start : start + 500])
    else:
        await pubsub.subscribe("palaver:0:all")
    confirmations = 1 if how != "channel per topic" else topics
    for _ in range(confirmations):
        await pubsub.get_message(timeout=5)

    async def receive() -> None:
        got = 0
        while got < events:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            if message is not None:
                if how == "one channel":
                    orjson.loads(message["data"])
                got += 1

    cpu = await redis_cpu(publisher)
    began = time.perf_counter()
    receiving = asyncio.create_task(receive())
    for start in range(0, events, 512):
        async with publisher.pipeline(transaction=False) as pipe:
            for n in range(start, min(events, start + 512)):
                event = {"type": "stream_chunk", "n": n}
                if how == "one channel":
                    pipe.publish("palaver:0:all", orjson.dumps({"t": names[n % topics], **event}))
                else:
                    pipe.publish(names[n % topics], orjson.dumps(event))
            await pipe.execute()
    await receiving
    seconds = time.perf_counter() - began
    used = await redis_cpu(publisher) - cpu
    await pubsub.aclose()  # type: ignore[no-untyped-call]
    await publisher.aclose()
    await subscriber.aclose()
    return {
        "seconds": round(seconds, 3),
        "events_per_s": round(events / seconds),
        "redis_cpu_us_per_event": round(used / events * 1e6, 2),
    }


async def started(url: str) -> RedisBus:
    bus = RedisBus(url)
    await bus.start()
    return bus


async def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    inproc = InProcessBus()
    out["latency in-process"] = await latency(inproc, inproc, args.rounds)
    a = await started(url)
    out["latency Redis, same node"] = await latency(a, a, args.rounds)
    await a.aclose()
    a, b = await started(url), await started(url)
    out["latency Redis, other node"] = await latency(a, b, args.rounds)
    await a.aclose()
    await b.aclose()
    for publishers in (1, args.publishers):
        a, b = await started(url), await started(url)
        figures = await burst([a, b], args.events, args.topics, publishers)
        out[f"burst to two nodes, {publishers} publishers"] = figures
        await a.aclose()
        await b.aclose()
    for how in ("pattern", "channel per topic", "one channel"):
        out[f"subscription: {how}"] = await subscription(url, how, args.events, args.topics)
    return out


def write(results: dict[str, Any], args: argparse.Namespace) -> None:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = [round(x, 2) for x in os.getloadavg()]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "redis_bus.json").write_text(
        json.dumps({"run": when, "load": load, "args": vars(args), **results}, indent=2) + "\n"
    )
    lines = [
        "# Event bus: in-process against Redis",
        "",
        f"Run {when}, load average {load}; {args.rounds} single events for latency (the first "
        f"tenth dropped), bursts of {args.events:,} events over {args.topics:,} topics.",
        "",
        "| measure | result |",
        "|---|---|",
    ]
    for name, figures in results.items():
        lines.append(f"| {name} | " + ", ".join(f"{k} {v}" for k, v in figures.items()) + " |")
    (RESULTS / "redis_bus.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--publishers", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        redis = RedisServer(Path(folder))
        redis.start()
        try:
            results = asyncio.run(run(args, redis.url()))
        finally:
            redis.stop()
    write(results, args)


if __name__ == "__main__":
    main()
