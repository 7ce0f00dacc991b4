"""The EventBus contract, over every adapter: in-process, and Redis on a real `redis-server`.

A Redis bus is one node; two of them on one Redis are two nodes of a cluster.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from palaver.bus.base import CONTROL, Event, EventBus, Listener, channel_topic, user_topic
from palaver.bus.inproc import InProcessBus
from palaver.bus.redis import RedisBus, RedisUnreachable
from tests.redis_server import RedisServer
from tests.support import free_port

Node = Callable[..., Awaitable[EventBus]]
WAIT = 5.0
"""Seconds an event may take to arrive."""


class Heard:
    """A listener that keeps what it hears, and can wait for more."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Event]] = []
        self._more = asyncio.Event()

    def __call__(self, topic: str, event: Event) -> None:
        self.events.append((topic, event))
        self._more.set()

    async def until(self, count: int) -> list[tuple[str, Event]]:
        async with asyncio.timeout(WAIT):
            while len(self.events) < count:
                self._more.clear()
                await self._more.wait()
        return self.events

    async def until_event(self, topic: str, event: Event) -> None:
        while event not in self.of(topic):
            self._more.clear()
            await self._more.wait()

    async def until_kind(self, topic: str, kind: str) -> list[Event]:
        """Every event of type `kind` heard on `topic`, once there is one."""
        while not (found := [e for e in self.of(topic) if e.get("type") == kind]):
            self._more.clear()
            await self._more.wait()
        return found

    def of(self, topic: str) -> list[Event]:
        return [event for t, event in self.events if t == topic]


@pytest.fixture(params=["inproc", "redis"])
async def node(request: pytest.FixtureRequest) -> AsyncIterator[Node]:
    """Starts a node's bus with the given listeners; on Redis, the nodes of one test share a
    database of their own."""
    buses: list[EventBus] = []
    url = request.getfixturevalue("redis_server").url() if request.param == "redis" else ""

    async def start(*listeners: Listener) -> EventBus:
        if request.param == "inproc" and buses:
            pytest.skip("an in-process bus is a single node")
        bus: EventBus = RedisBus(url) if url else InProcessBus()
        for listener in listeners:
            bus.listen(listener)
        await bus.start()
        buses.append(bus)
        return bus

    yield start
    for bus in buses:
        await bus.aclose()


def numbered(n: int, **fields: Any) -> Event:
    return {"type": "message", "data": {"n": n, **fields}}


async def test_events_of_one_topic_arrive_in_the_order_they_were_published(node: Node) -> None:
    heard = Heard()
    bus = await node(heard)
    a, b = channel_topic("a"), channel_topic("b")
    for n in range(300):
        await bus.publish(a if n % 3 else b, numbered(n))
    await heard.until(300)
    assert [e["data"]["n"] for e in heard.of(a)] == [n for n in range(300) if n % 3]
    assert [e["data"]["n"] for e in heard.of(b)] == [n for n in range(300) if not n % 3]


async def test_concurrent_publishers_each_keep_their_order(node: Node) -> None:
    heard = Heard()
    bus = await node(heard)

    async def publisher(name: str) -> None:
        for n in range(100):
            await bus.publish(channel_topic(name), numbered(n))

    await asyncio.gather(*(publisher(name) for name in "xyz"))
    await heard.until(300)
    for name in "xyz":
        assert [e["data"]["n"] for e in heard.of(channel_topic(name))] == list(range(100))


async def test_every_listener_hears_every_event(node: Node) -> None:
    listeners = [Heard() for _ in range(3)]
    bus = await node(*listeners)
    for n in range(20):
        await bus.publish(user_topic("u1"), numbered(n))
    for heard in listeners:
        assert [e["data"]["n"] for _, e in await heard.until(20)] == list(range(20))


async def test_control_events_reach_the_listeners_with_their_topic(node: Node) -> None:
    heard = Heard()
    bus = await node(heard)
    revoke = {"type": "revoke", "tokenHashes": ["h1"], "userIds": ["u1"]}
    await bus.publish(CONTROL, revoke)
    assert await heard.until(1) == [(CONTROL, revoke)]


async def test_the_publishing_node_hears_its_own_event_exactly_once(node: Node) -> None:
    heard = Heard()
    bus = await node(heard)
    await bus.publish(channel_topic("c"), numbered(1))
    await bus.publish(channel_topic("c"), numbered(2))
    await heard.until(2)
    await asyncio.sleep(0.1)
    assert [e["data"]["n"] for _, e in heard.events] == [1, 2]


async def test_the_publishing_node_has_heard_an_event_when_publish_returns(node: Node) -> None:
    """What lets a node that revoked a session refuse it on the very next request."""
    heard = Heard()
    bus = await node(heard)
    revoke = {"type": "revoke", "tokenHashes": ["h1"]}
    await bus.publish(CONTROL, revoke)
    assert heard.events == [(CONTROL, revoke)]
    await asyncio.gather(*(bus.publish(channel_topic("c"), numbered(n)) for n in range(100)))
    assert len(heard.events) == 101


async def test_enqueued_events_keep_the_order_of_the_calls_and_are_heard_once_done(
    node: Node,
) -> None:
    """What lets a post hold its channel's order only while its event is put in line."""
    heard = Heard()
    bus = await node(heard)
    topic = channel_topic("in-line")
    pending = [await bus.enqueue(topic, numbered(n)) for n in range(50)]
    await bus.publish(topic, numbered(50))
    await asyncio.gather(*pending)
    assert [e["data"]["n"] for e in heard.of(topic)] == list(range(51))


async def test_an_enqueued_event_is_heard_on_the_other_node_in_order(node: Node) -> None:
    heard = Heard()
    one = await node()
    await node(heard)
    topic = channel_topic("in-line")
    for n in range(20):
        await (await one.enqueue(topic, numbered(n)))
    assert [e["data"]["n"] for _, e in await heard.until(20)] == list(range(20))


async def test_events_arrive_as_the_json_they_were(node: Node) -> None:
    heard = Heard()
    bus = await node(heard)
    event = {
        "type": "stream_chunk",
        "data": {
            "messageId": "msg_1",
            "content": 'Grüße 👋 \u2028 "quoted" \\ back',
            "seq": 7,
            "score": 0.25,
            "done": False,
            "tool": None,
            "args": {"nested": [1, [2, {"three": 3}]], "empty": {}},
        },
    }
    await bus.publish(channel_topic("c"), event)
    assert await heard.until(1) == [(channel_topic("c"), event)]


async def test_a_failing_listener_does_not_stop_the_others(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(topic: str, event: Event) -> None:
        raise RuntimeError("listener broke")

    heard = Heard()
    bus = await node(failing, heard)
    await bus.publish(channel_topic("c"), numbered(1))
    await bus.publish(channel_topic("c"), numbered(2))
    assert len(await heard.until(2)) == 2
    assert "event listener failed" in caplog.text


async def test_two_nodes_each_hear_what_either_publishes(node: Node) -> None:
    heard_a, heard_b = Heard(), Heard()
    bus_a = await node(heard_a)
    bus_b = await node(heard_b)
    await bus_a.publish(channel_topic("c"), numbered(1, by="a"))
    await bus_b.publish(CONTROL, {"type": "settings_changed"})
    for heard in (heard_a, heard_b):
        await heard.until(2)
        assert sorted(heard.events, key=str) == sorted(
            [(channel_topic("c"), numbered(1, by="a")), (CONTROL, {"type": "settings_changed"})],
            key=str,
        )


async def test_events_published_just_before_aclose_still_reach_the_other_nodes(
    node: Node,
) -> None:
    heard = Heard()
    await node(heard)
    leaving = await node()
    for n in range(50):
        await leaving.publish(channel_topic("c"), numbered(n))
    await leaving.aclose()
    assert [e["data"]["n"] for _, e in await heard.until(50)] == list(range(50))


async def test_after_aclose_publishing_does_nothing(node: Node) -> None:
    heard = Heard()
    bus = await node(heard)
    await bus.aclose()
    await bus.publish(channel_topic("c"), numbered(1))
    await asyncio.sleep(0.1)
    assert heard.events == []


# Redis only: what a node does when Redis goes away.


async def redis_bus(url: str, heard: Heard) -> RedisBus:
    bus = RedisBus(url)
    bus.listen(heard)
    await bus.start()
    return bus


async def publish_until_heard(bus: RedisBus, heard: Heard) -> None:
    """Publish numbered events until one arrives: events sent while a node is away are lost."""
    async with asyncio.timeout(2 * WAIT):
        n = 0
        while not heard.events:
            n += 1
            await bus.publish(channel_topic("c"), numbered(n))
            await asyncio.sleep(0.05)


async def test_a_dropped_subscription_is_logged_and_made_again(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    url = redis_server.url()
    heard = Heard()
    bus = await redis_bus(url, heard)
    admin = Redis.from_url(url)
    try:
        assert await admin.client_kill_filter(_type="pubsub") >= 1
        await publish_until_heard(bus, heard)
    finally:
        await admin.aclose()
        await bus.aclose()
    assert "lost the Redis subscription" in caplog.text


async def test_a_subscription_that_goes_silent_is_made_again(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A connection can die without being closed; a PING that gets no answer tells."""
    url = redis_server.url()
    heard = Heard()
    bus = RedisBus(url, idle_ping=0.2)
    bus.listen(heard)
    await bus.start()
    admin = Redis.from_url(url)
    try:
        await admin.client_pause(1000)  # Redis answers no one for a second
        await asyncio.sleep(1.0)
        await publish_until_heard(bus, heard)
    finally:
        await admin.aclose()
        await bus.aclose()
    assert "Redis did not answer a PING" in caplog.text


async def test_a_dropped_publishing_connection_is_made_again(redis_server: RedisServer) -> None:
    url = redis_server.url()
    heard = Heard()
    bus = await redis_bus(url, heard)
    admin = Redis.from_url(url)
    try:
        await bus.publish(channel_topic("c"), numbered(0))
        await heard.until(1)
        assert await admin.client_kill_filter(_type="normal", skipme=True) >= 1
        await bus.publish(channel_topic("c"), numbered(1))
        await heard.until(2)
    finally:
        await admin.aclose()
        await bus.aclose()


async def test_a_node_outlives_a_redis_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """While Redis is down, publishing neither fails nor waits; once it is back, so is the bus."""
    redis = RedisServer(tmp_path)
    redis.start()
    heard = Heard()
    bus = await redis_bus(redis.url(), heard)
    try:
        await asyncio.to_thread(redis.stop)
        async with asyncio.timeout(2):
            for n in range(20_000):
                await bus.publish(channel_topic("c"), numbered(n))
        await asyncio.to_thread(redis.start)
        heard.events.clear()
        await publish_until_heard(bus, heard)
    finally:
        await bus.aclose()
        redis.stop()
    assert "could not publish to Redis" in caplog.text
    assert "lost the Redis subscription" in caplog.text


async def test_while_redis_is_away_a_node_hears_its_own_events_and_then_all_are_told(
    tmp_path: Path,
) -> None:
    """Events published while Redis is away reach the publishing node's own listeners only;
    once it is back, every node is told that it may have missed events, and since when
    (docs/FAULTS.md)."""
    redis = RedisServer(tmp_path)
    redis.start()
    heard_a, heard_b = Heard(), Heard()
    began = time.time()
    a = await redis_bus(redis.url(), heard_a)
    b = await redis_bus(redis.url(), heard_b)
    topic = channel_topic("c")
    try:
        await asyncio.to_thread(redis.stop)
        async with asyncio.timeout(WAIT):
            # The first events go to the writer, which finds Redis gone; the next are heard.
            n = 0
            while len(heard_a.of(topic)) < 3:
                n += 1
                await a.publish(topic, numbered(n))
                await asyncio.sleep(0.01)
        own = [e["data"]["n"] for e in heard_a.of(topic)]
        assert own == sorted(own) and own[-1] == n
        started = time.time()
        await asyncio.to_thread(redis.start)
        async with asyncio.timeout(2 * WAIT):
            missed = await heard_a.until_kind(CONTROL, "events_missed")
            missed += await heard_b.until_kind(CONTROL, "events_missed")
        # Since the last the subscription heard, or the first event not sent: during the outage.
        assert all(began <= event["since"] <= started for event in missed), (began, missed)
        assert heard_b.of(topic) == [], "what was not sent is not heard later either"
        await publish_until_heard(a, heard_b)
    finally:
        await a.aclose()
        await b.aclose()
        redis.stop()


async def test_a_node_refuses_to_start_without_redis() -> None:
    bus = RedisBus(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(RedisUnreachable, match=r"Redis cannot be reached at 127\.0\.0\.1:"):
        await bus.start()
    await bus.aclose()
