"""What the hot paths ask again and again, answered from memory: sessions, channels, and
messages as their JSON.

Each cache is filled on a miss and emptied by the change itself, through a control event on
the bus, so that every node forgets at once whichever node made the change; never by a timer.
A fill that raced with an invalidation is dropped (`generation`), so a reader that loaded the
old row before the change committed cannot put it back after the event. A missing row is
never remembered: something created on another node is found on its first request.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from palaver.bus.base import CONTROL, Event
from palaver.domain import Channel, User

K = TypeVar("K")
V = TypeVar("V")

MIB = 1024 * 1024
SESSION_BYTES = 8 * MIB
CHANNEL_BYTES = 16 * MIB
MESSAGE_JSON_BYTES = 32 * MIB


class BoundedCache(Generic[K, V]):
    """Least recently used entries leave first beyond `budget` bytes, each entry counted as
    `weigh` says it holds."""

    def __init__(self, budget: int, weigh: Callable[[V], int]) -> None:
        self.budget = budget
        self.held = 0
        self.generation = 0
        """Counts invalidations; `put` refuses a value read before the latest one."""
        self._weigh = weigh
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        entry = self._items.get(key)
        if entry is None:
            return None
        self._items.move_to_end(key)
        return entry[0]

    def put(self, key: K, value: V, generation: int) -> None:
        if generation != self.generation:
            return
        weight = self._weigh(value)
        if weight > self.budget:
            return
        self._drop(key)
        self._items[key] = (value, weight)
        self.held += weight
        while self.held > self.budget:
            _, (_, dropped) = self._items.popitem(last=False)
            self.held -= dropped

    def forget(self, keys: Iterable[K]) -> None:
        self.generation += 1
        for key in keys:
            self._drop(key)

    def clear(self) -> None:
        self.forget(list(self._items))

    def forget_where(self, stale: Callable[[V], bool]) -> None:
        self.generation += 1
        for key in [k for k, (v, _) in self._items.items() if stale(v)]:
            self._drop(key)

    def _drop(self, key: K) -> None:
        entry = self._items.pop(key, None)
        if entry is not None:
            self.held -= entry[1]


SESSION_ENTRY = 700
"""What a cached session holds beside its person's name (the token hash, the `User`, the
times, its place in the cache), measured with tracemalloc (tests/test_cache_budgets.py)."""
CHANNEL_ENTRY = 660
ID_ENTRY = 80
"""A channel's entry beside its name and ids, and each agent or member id (a string of 31
characters and its list slot), measured as above."""


def session_weight(session: CachedSession) -> int:
    return SESSION_ENTRY + len(session.user.name)


def channel_weight(channel: Channel) -> int:
    ids = len(channel.agent_ids) + len(channel.member_ids)
    return CHANNEL_ENTRY + len(channel.name) + ID_ENTRY * ids


ENTRY_BYTES = 192
"""What an entry of `EncodedMessages` holds beyond its JSON: the bytes object's header, its
key (a message id) and its place in the ordered dict, measured with tracemalloc."""


class EncodedMessages:
    """Messages as their JSON bytes, least recently used first out beyond `budget` bytes,
    counted as the memory the entries really hold.

    A message changes when it is edited, deleted, reacted to or replied to in a thread
    (`message_changed`), and in one rare case more: a reply stored as interrupted by another
    node, which its own node, judged dead while only slow, finishes after all
    (`message_replaced`). Every node forgets it on the control event. Read on the event loop
    only; a unit of work on a database thread may test `in`, which is atomic."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held = 0
        self.generation = 0
        """Counts forgets; a `put` of bytes read before the latest one is refused."""
        self._items: OrderedDict[str, bytes] = OrderedDict()

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._items

    def __len__(self) -> int:
        return len(self._items)

    def get(self, message_id: str) -> bytes | None:
        encoded = self._items.get(message_id)
        if encoded is not None:
            self._items.move_to_end(message_id)
        return encoded

    def put(self, message_id: str, encoded: bytes, generation: int | None = None) -> None:
        """`generation`: the one read before the message was loaded (None: a message just
        made, which nothing can have changed yet)."""
        if _cost(encoded) > self.budget or message_id in self._items:
            return
        if generation is not None and generation != self.generation:
            return
        # A copy of the exact size: orjson's own bytes keep the whole buffer it wrote into
        # (4 KiB for a message of 400 bytes), so the cache held ten times what it counted.
        self._items[message_id] = bytes(memoryview(encoded))
        self.held += _cost(encoded)
        while self.held > self.budget:
            _, dropped = self._items.popitem(last=False)
            self.held -= _cost(dropped)

    def forget(self, message_id: str) -> None:
        self.generation += 1
        dropped = self._items.pop(message_id, None)
        if dropped is not None:
            self.held -= _cost(dropped)

    def clear(self) -> None:
        self._items.clear()
        self.held = 0


def _cost(encoded: bytes) -> int:
    return len(encoded) + ENTRY_BYTES


@dataclass(frozen=True)
class CachedSession:
    user: User
    last_used_at: datetime


@dataclass
class Caches:
    """The caches of one process, and the control events that empty them."""

    sessions: BoundedCache[str, CachedSession] = field(
        default_factory=lambda: BoundedCache(SESSION_BYTES, session_weight)
    )
    """By token hash: the person and when the session was last used (as far as we know)."""
    channels: BoundedCache[str, Channel] = field(
        default_factory=lambda: BoundedCache(CHANNEL_BYTES, channel_weight)
    )
    """By id: the channel with its agents and members, which decide who may see it."""
    messages: EncodedMessages = field(default_factory=lambda: EncodedMessages(MESSAGE_JSON_BYTES))
    """By id: a stored message's JSON, as history pages send it."""

    def clear(self) -> None:
        self.sessions.clear()
        self.channels.clear()
        self.messages.clear()

    def on_event(self, topic: str, event: Event) -> None:
        """The bus listener."""
        if topic != CONTROL:
            return
        kind = event.get("type")
        if kind == "events_missed":
            # Which of them was emptied by an event not heard is unknown: all are.
            self.clear()
        elif kind == "revoke":
            users = set(event.get("userIds", ()))
            self.sessions.forget(event.get("tokenHashes", ()))
            if users:
                self.sessions.forget_where(lambda s: s.user.id in users)
                self.channels.forget_where(lambda c: not users.isdisjoint(c.member_ids))
        elif kind == "channel_access":
            self.channels.forget([event["channelId"]])
        elif kind == "message_replaced":
            self.messages.forget(event["messageId"])
        elif kind == "message_changed":
            for message_id in event["messageIds"]:
                self.messages.forget(message_id)
        elif kind == "agent_deleted":
            agent_id = event["agentId"]
            self.channels.forget_where(lambda c: agent_id in c.agent_ids)
