"""Connections, their subscriptions and bounded send queues; the only code that feeds sockets.

The hub also follows every reply that is streaming from the events it relays, so that a
client subscribing mid-answer first gets the answer so far and never shows half of one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from palaver.bus.base import CONTROL, Event
from palaver.ids import first_id_at

log = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_TRY_LATER = 1013
CLOSE_CATCH_UP = 1012
"""Service Restart: events for the socket may have been missed (Redis was away), so it is
closed, and its client reconnects and catches up from history as after any reconnect, back to
the boundary the reason names (`catch_up_reason`)."""
MISSED_MARGIN = 10.0
"""Seconds the catch-up boundary is put before the time a node lost Redis. A message's id is
made by the node that stores it, from that node's clock, before the message is stored and its
event published: the boundary must sort before every id whose event was missed, across the
nodes' clocks' difference (NTP keeps it to milliseconds; a second is already a badly kept
clock) and a slow store under load (a few seconds at worst). Paging back 10 s further than
needed costs a client a page or two once per outage; missing a message is not made good."""


def catch_up_reason(boundary: str) -> str:
    """The 1012 close reason: catch up on every message whose id sorts after `boundary`. Ids
    are `msg_` and 26 characters, well under the 123 bytes a close reason may hold."""
    return f"events missed after {boundary}"


@dataclass(eq=False, slots=True)
class Connection:
    """One authenticated socket. `send` writes to the socket; the hub only enqueues.

    Thousands stay open and idle, so each holds only its queue and its sending task (`sender`,
    set by the endpoint): being killed ends that task, which ends the connection."""

    user_id: str
    is_owner: bool
    token_hash: str
    send: Callable[[str], Awaitable[None]]
    queue_size: int
    queue: asyncio.Queue[str] = field(init=False)
    channels: set[str] = field(default_factory=set)
    close_code: int | None = None
    missed_after: str | None = None
    """With `CLOSE_CATCH_UP`: the earliest boundary of the outages that closed it."""
    sender: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(self.queue_size)

    @property
    def killed(self) -> bool:
        return self.close_code is not None

    def offer(self, text: str) -> None:
        if self.killed:
            return
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            log.warning("closing a connection of %s: it does not keep up", self.user_id)
            self.kill(CLOSE_TRY_LATER)

    def kill(self, code: int) -> None:
        if not self.killed:
            self.close_code = code
            if self.sender is not None:
                self.sender.cancel()

    def missed(self, boundary: str | None) -> None:
        """Close for a catch-up back to `boundary`; outages that overlap before the socket is
        closed keep the earliest (none known: the client catches up as after any reconnect)."""
        self.kill(CLOSE_CATCH_UP)
        if self.close_code == CLOSE_CATCH_UP and boundary is not None:
            self.missed_after = min(boundary, self.missed_after or boundary)

    @property
    def close_reason(self) -> str:
        if self.close_code == CLOSE_CATCH_UP and self.missed_after is not None:
            return catch_up_reason(self.missed_after)
        return ""

    async def send_loop(self) -> None:
        while True:
            text = await self.queue.get()
            await self.send(text)


@dataclass
class _Stream:
    start: Event
    parts: list[str] = field(default_factory=list)
    seq: int = 0


class Hub:
    def __init__(self, count_fanned_out: Callable[[float], None] | None = None) -> None:
        """`count_fanned_out(n)` is told how many sockets each event was queued for (metrics)."""
        self._count_fanned_out = count_fanned_out
        self._connections: set[Connection] = set()
        self._by_channel: dict[str, set[Connection]] = defaultdict(set)
        self._streams: dict[str, dict[str, _Stream]] = defaultdict(dict)
        self._unauthenticated: dict[str, int] = {}

    def admit_unauthenticated(self, address: str, limit: int) -> bool:
        """Count a socket that has not authenticated yet, unless `address` has `limit` already:
        such sockets cost memory and a timer each, and need no session to open."""
        count = self._unauthenticated.get(address, 0)
        if count >= limit:
            return False
        self._unauthenticated[address] = count + 1
        return True

    def release_unauthenticated(self, address: str) -> None:
        count = self._unauthenticated.get(address, 0) - 1
        if count > 0:
            self._unauthenticated[address] = count
        else:
            self._unauthenticated.pop(address, None)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def authenticating_count(self) -> int:
        """Sockets accepted that have not authenticated yet."""
        return sum(self._unauthenticated.values())

    def add(self, conn: Connection) -> None:
        self._connections.add(conn)

    def remove(self, conn: Connection) -> None:
        self._connections.discard(conn)
        for channel_id in conn.channels:
            subscribers = self._by_channel.get(channel_id)
            if subscribers is not None:
                subscribers.discard(conn)
                if not subscribers:
                    del self._by_channel[channel_id]
        conn.channels.clear()

    def subscribe(self, conn: Connection, channel_id: str) -> None:
        """Acknowledge, replay the replies in flight, then deliver live: all without a pause,
        so no event can slip in between."""
        conn.offer(_dumps({"type": "subscribed", "data": {"channelId": channel_id}}))
        if channel_id in conn.channels:
            return
        for message_id, stream in self._streams.get(channel_id, {}).items():
            conn.offer(_dumps(stream.start))
            if stream.parts:
                chunk = {
                    "messageId": message_id,
                    "content": "".join(stream.parts),
                    "seq": stream.seq,
                }
                conn.offer(_dumps({"type": "stream_chunk", "data": chunk}))
        conn.channels.add(channel_id)
        self._by_channel[channel_id].add(conn)

    def unsubscribe(self, conn: Connection, channel_id: str) -> None:
        conn.channels.discard(channel_id)
        subscribers = self._by_channel.get(channel_id)
        if subscribers is not None:
            subscribers.discard(conn)

    def dispatch(self, topic: str, event: Event) -> None:
        """The bus listener: route one event to the queues of the connections that want it."""
        kind, _, target = topic.partition(":")
        if topic == CONTROL:
            self._control(event)
        elif kind == "channel":
            self._track(target, event)
            text = _dumps(event)
            subscribers = list(self._by_channel.get(target, ()))
            for conn in subscribers:
                conn.offer(text)
            if self._count_fanned_out is not None and subscribers:
                self._count_fanned_out(len(subscribers))
        elif kind == "user":
            text = _dumps(event)
            told = 0
            for conn in list(self._connections):
                if conn.user_id == target:
                    conn.offer(text)
                    told += 1
            if self._count_fanned_out is not None and told:
                self._count_fanned_out(told)

    def _track(self, channel_id: str, event: Event) -> None:
        kind = event.get("type")
        data: dict[str, Any] = event.get("data", {})
        if kind == "stream_start":
            self._streams[channel_id][data["messageId"]] = _Stream(start=event)
        elif kind == "stream_chunk":
            stream = self._streams.get(channel_id, {}).get(data["messageId"])
            if stream is not None:
                stream.parts.append(data["content"])
                stream.seq = int(data.get("seq", stream.seq + 1))
        elif kind in ("stream_end", "message"):
            # A reply stored without its stream's end (its node died, another stored it as
            # interrupted) ends its stream too: a later subscriber must not be replayed it.
            streams = self._streams.get(channel_id)
            if streams is not None:
                streams.pop(str(data.get("messageId" if kind == "stream_end" else "id")), None)
                if not streams:
                    del self._streams[channel_id]

    def _control(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "events_missed":
            since = event.get("since")
            # A node of an earlier version says not since when: no boundary then.
            boundary = (
                first_id_at("msg", since - MISSED_MARGIN)
                if isinstance(since, int | float)
                else None
            )
            for conn in list(self._connections):
                conn.missed(boundary)
            # A reply whose end was missed must not be replayed to a later subscriber.
            self._streams.clear()
        elif kind == "revoke":
            hashes = set(event.get("tokenHashes", ()))
            users = set(event.get("userIds", ()))
            for conn in list(self._connections):
                if conn.token_hash in hashes or conn.user_id in users:
                    conn.kill(CLOSE_UNAUTHENTICATED)
        elif kind == "channel_access":
            channel_id = event["channelId"]
            members = set(event.get("memberIds", ()))
            for conn in list(self._by_channel.get(channel_id, ())):
                if not conn.is_owner and conn.user_id not in members:
                    self.unsubscribe(conn, channel_id)
        elif kind == "channel_deleted":
            channel_id = event["channelId"]
            for conn in list(self._by_channel.pop(channel_id, ())):
                conn.channels.discard(channel_id)
            self._streams.pop(channel_id, None)


def _dumps(event: Event) -> str:
    """Compact UTF-8 JSON, encoded once per event whatever the number of subscribers."""
    return orjson.dumps(event).decode()
