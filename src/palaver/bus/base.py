"""The EventBus port.

Topics name who should hear an event: `channel:<id>` for everyone subscribed to a channel,
`user:<id>` for one person's connections, and `control` for instructions to every node's hub
(a session was revoked, settings changed).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

Event = dict[str, Any]
Listener = Callable[[str, Event], None]

log = logging.getLogger(__name__)


def channel_topic(channel_id: str) -> str:
    return f"channel:{channel_id}"


def user_topic(user_id: str) -> str:
    return f"user:{user_id}"


CONTROL = "control"


def events_missed(since: float) -> Event:
    """On `CONTROL`: this node may have missed events (its Redis subscription was lost, or events
    were not sent while Redis was away) from `since` (Unix time) on. Whatever a node keeps from
    events is then unsure: its caches are dropped, and its sockets are closed so that their
    clients reconnect and catch up from history, back to `since`. docs/FAULTS.md says why."""
    return {"type": "events_missed", "since": since}


class EventBus(Protocol):
    async def publish(self, topic: str, event: Event) -> None:
        """Returns once this node's own listeners have had the event."""
        ...

    async def enqueue(self, topic: str, event: Event) -> asyncio.Future[None]:
        """Put the event in line, behind every event this node published or enqueued before it;
        the future is done when `publish` would have returned. For a writer that must keep
        its events in order without holding its lock while they travel."""
        ...

    def listen(self, listener: Listener) -> None:
        """Register a listener for every event; it must not block (it only enqueues)."""
        ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


def done() -> asyncio.Future[None]:
    """A future already done, for an event that needs no waiting for."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    future.set_result(None)
    return future


def deliver(listeners: Iterable[Listener], topic: str, event: Event) -> None:
    """Hand `event` to every listener; one that fails is logged and does not stop the rest."""
    for listener in listeners:
        try:
            listener(topic, event)
        except Exception:
            log.exception("event listener failed on %s", topic)
