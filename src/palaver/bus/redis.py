"""Several nodes' bus: every event goes through Redis pub/sub, and every node hears every event.

Each topic is its own Redis channel (`palaver:<db>:channel:<id>`) and each node holds one
pattern subscription on `palaver:<db>:*`: every hub needs every channel's events (it follows
replies that stream, so that a socket joining mid-answer gets the answer so far), and one
subscription on one connection keeps Redis' delivery order. Pub/sub ignores the database number,
so the channel names carry it: installations on one Redis with different numbers do not hear
each other.

The publishing node hears its own events back through Redis like every other node, and only so:
one order for everyone. `publish` returns once that has happened, as the in-process bus returns
once its listeners have run: a change that empties a cache (a guest deleted, a session revoked)
is in force on the node that made it before that node answers. Each message is
`[node, [seq, sent], event]`: by `node` and `seq` a node knows its own, and `sent` (the
publisher's `time.time()` when it published) gives every node the bus lag (`lag`, a metric;
across nodes it includes their clocks' difference). The pair stands where a bare `seq` stood
before, which is all a node of an earlier version reads there, and only on its own events: the
nodes of a rolling upgrade still hear each other.

Publishing enqueues in a bounded queue (a slow Redis slows the publishers instead of filling
memory); one writer sends what is queued in pipelined batches, in queue order. Delivery is at
most once: while Redis is unreachable events are not sent (a subscriber that is away misses
them anyway; the data is in the database) but handed to this node's own listeners, and both the
writer and the subscription come back by themselves with growing pauses. What was missed is
then announced (`events_missed`, with the time from which events may have been missed): by the
reader to its own node once it has subscribed again, and by the writer through Redis to every
node once it can publish again. docs/SCALING.md and docs/FAULTS.md say more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable

import orjson
from redis.asyncio.client import PubSub
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from palaver.bus.base import CONTROL, Event, Listener, deliver, done, events_missed
from palaver.redis_client import connect

log = logging.getLogger(__name__)

QUEUE_SIZE = 10_000
"""Events waiting for the writer; past this, publishers wait for room."""
BATCH = 512
"""Events sent in one pipeline."""
FIRST_PAUSE = 0.1
LONGEST_PAUSE = 5.0
FLUSH_SECONDS = 5.0
"""How long `aclose` waits for queued events to reach Redis."""
IDLE_PING = 15.0
"""A subscription that has heard nothing for this long sends Redis a PING; one that then hears
nothing for as long again is taken as lost: a connection can die without being closed (a
dropped route, a NAT that forgot it), and a node must not go on serving deaf."""
ECHO_SECONDS = 5.0
"""How long `publish` waits for its event to come back; only a fault takes that long, and
then the event is given up as lost, not waited for."""

_Outgoing = tuple[str, bytes, int, float]
"""Redis channel, message, sequence number, when it was enqueued (Unix time)."""


class RedisUnreachable(RuntimeError):
    """A node cannot start without Redis: it would serve without hearing the others."""


class RedisBus:
    def __init__(
        self,
        url: str,
        namespace: str = "palaver",
        queue_size: int = QUEUE_SIZE,
        idle_ping: float = IDLE_PING,
        lag: Callable[[float], None] | None = None,
    ) -> None:
        """`lag(seconds)` is told, for each event heard, how long ago it was published."""
        self._redis = connect(url)
        self._lag = lag
        self._idle_ping = idle_ping
        where = self._redis.connection_pool.connection_kwargs
        self._where = where.get("path") or f"{where.get('host')}:{where.get('port')}"
        self._prefix = f"{namespace}:{where.get('db', 0)}:"
        self._node = os.urandom(8).hex()
        self._seq = 0
        self._echoes: dict[int, asyncio.Future[None]] = {}
        """Publishers waiting for their event to come back, by sequence number."""
        self._listeners: list[Listener] = []
        self._outbox: asyncio.Queue[_Outgoing] = asyncio.Queue(queue_size)
        self._pubsub: PubSub | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._reachable = True
        self._heard_at = time.time()
        """When the subscription last heard from Redis: a lost one may have missed what came
        after, however long the loss took to notice."""
        self._dropped = 0
        self._closed = False

    async def publish(self, topic: str, event: Event) -> None:
        await (await self.enqueue(topic, event))

    async def enqueue(self, topic: str, event: Event) -> asyncio.Future[None]:
        if self._closed:
            self._dropped += 1
            return done()
        if not self._reachable:
            # Never sent, so never heard back: this node's sockets and caches have it at once,
            # the others' catch up once Redis is back.
            self._dropped += 1
            deliver(self._listeners, topic, event)
            return done()
        self._seq += 1
        seq = self._seq
        now = time.time()
        item = (self._prefix + topic, orjson.dumps([self._node, [seq, now], event]), seq, now)
        if not self._tasks:
            # Not started: nothing drains the queue yet nor hears the echo, so never wait.
            try:
                self._outbox.put_nowait(item)
            except asyncio.QueueFull:
                self._dropped += 1
            return done()
        loop = asyncio.get_running_loop()
        echo = self._echoes[seq] = loop.create_future()
        late = loop.call_later(ECHO_SECONDS, self._not_heard, seq, topic)

        def settled(_: asyncio.Future[None]) -> None:
            late.cancel()
            self._echoes.pop(seq, None)

        echo.add_done_callback(settled)
        try:
            await self._outbox.put(item)
        except BaseException:
            self._give_up([seq])
            raise
        return echo

    def _not_heard(self, seq: int, topic: str) -> None:
        log.warning("an event published on %s did not come back from Redis", topic)
        self._give_up([seq])

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def start(self) -> None:
        """Subscribe before answering, so that every event published from now on is heard."""
        try:
            self._pubsub = await self._subscribe()
        except (RedisError, OSError) as exc:
            raise RedisUnreachable(f"Redis cannot be reached at {self._where}: {exc}") from None
        self._tasks = [
            asyncio.create_task(self._read(), name="redis-bus-reader"),
            asyncio.create_task(self._write(), name="redis-bus-writer"),
        ]

    async def aclose(self) -> None:
        """Send what is queued (for a while), then close the tasks and connections."""
        if self._tasks and self._reachable:
            try:
                await asyncio.wait_for(self._outbox.join(), FLUSH_SECONDS)
            except TimeoutError:
                log.warning("stopped with %d events not sent to Redis", self._outbox.qsize())
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self._give_up(list(self._echoes))
        await self._unsubscribe()
        await self._redis.aclose()
        self._listeners.clear()

    def _give_up(self, seqs: Iterable[int]) -> None:
        """Let the publishers of events that will not come back go on."""
        for seq in seqs:
            echo = self._echoes.get(seq)
            if echo is not None and not echo.done():
                echo.set_result(None)

    async def _subscribe(self) -> PubSub:
        pubsub = self._redis.pubsub()
        try:
            await pubsub.psubscribe(self._prefix + "*")
            # Once its confirmation is read, the subscription is in force.
            confirmation = await pubsub.get_message(timeout=LONGEST_PAUSE)
            if confirmation is None or confirmation["type"] != "psubscribe":
                raise RedisError("Redis did not confirm the subscription")
            self._heard_at = time.time()
        except BaseException:
            await pubsub.aclose()  # type: ignore[no-untyped-call]
            raise
        return pubsub

    async def _unsubscribe(self) -> None:
        if self._pubsub is not None:
            pubsub, self._pubsub = self._pubsub, None
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _read(self) -> None:
        pause = FIRST_PAUSE
        pinged = False
        lost_since: float | None = None
        while True:
            try:
                if self._pubsub is None:
                    self._pubsub = await self._subscribe()
                    # What was published while away is lost; what comes next is heard.
                    self._give_up(list(self._echoes))
                    log.warning("subscribed to Redis again; events sent meanwhile were missed")
                    deliver(self._listeners, CONTROL, events_missed(lost_since or time.time()))
                    lost_since = None
                    pause = FIRST_PAUSE
                    pinged = False
                pubsub = self._pubsub
                message = await pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=self._idle_ping
                )
                if message is None:
                    if pinged:
                        raise RedisConnectionError("Redis did not answer a PING")
                    await pubsub.ping()
                    pinged = True
                    continue
                self._heard_at = time.time()
                pinged = False
            except (RedisError, OSError) as exc:
                log.warning("lost the Redis subscription (%s); again in %.1f s", exc, pause)
                if lost_since is None:
                    lost_since = self._heard_at
                await self._unsubscribe()
                self._give_up(list(self._echoes))
                await asyncio.sleep(pause)
                pause = min(pause * 2, LONGEST_PAUSE)
                continue
            if message["type"] == "pmessage":
                self._receive(message["channel"], message["data"])

    def _receive(self, channel: bytes, data: bytes) -> None:
        topic = channel.decode()[len(self._prefix) :]
        try:
            node, stamp, event = orjson.loads(data)
            seq, sent = stamp if isinstance(stamp, list) else (stamp, None)
        except (orjson.JSONDecodeError, TypeError, ValueError):
            log.warning("ignored a message on %s that is not a Palaver event", topic)
            return
        if self._lag is not None and isinstance(sent, float | int):
            self._lag(max(0.0, time.time() - sent))
        if isinstance(event, dict):
            deliver(self._listeners, topic, event)
        if node == self._node:
            self._give_up([seq])

    async def _write(self) -> None:
        pause = FIRST_PAUSE
        while True:
            batch = [await self._outbox.get()]
            while len(batch) < BATCH and not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            try:
                await self._send(batch)
                pause = FIRST_PAUSE
            except (RedisError, OSError) as exc:
                self._dropped += len(batch)
                self._give_up(seq for _, _, seq, _ in batch)
                # The batch's first event is the oldest not sent: the queue is in order.
                await self._outage(exc, pause, since=batch[0][3])
                pause = min(pause * 2, LONGEST_PAUSE)
            finally:
                for _ in batch:
                    self._outbox.task_done()

    def _missed(self, since: float) -> bytes:
        """The `events_missed` announcement, sent directly: nobody waits for its echo."""
        self._seq += 1
        return orjson.dumps([self._node, [self._seq, time.time()], events_missed(since)])

    async def _send(self, batch: list[_Outgoing]) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            for channel, data, _, _ in batch:
                pipe.publish(channel, data)
            await pipe.execute()

    async def _outage(self, exc: Exception, pause: float, since: float) -> None:
        """Drop what is queued (part of it may have reached Redis), and send nothing of what is
        published, until Redis answers again; then tell every node that events were missed
        from `since` (when the oldest event not sent was enqueued) on."""
        log.warning(
            "could not publish to Redis (%s); events reach this node only until it is back", exc
        )
        self._reachable = False
        began = time.monotonic()
        while True:
            while not self._outbox.empty():
                _, _, seq, _ = self._outbox.get_nowait()
                self._outbox.task_done()
                self._give_up([seq])
                self._dropped += 1
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE)
            try:
                await self._redis.ping()
                # Nodes that kept their subscription did not hear what was not sent.
                await self._redis.publish(self._prefix + CONTROL, self._missed(since))
                break
            except (RedisError, OSError):
                continue
        self._reachable = True
        log.warning(
            "Redis is back after %.1f s; %d events were not sent to the other nodes",
            time.monotonic() - began,
            self._dropped,
        )
        self._dropped = 0
