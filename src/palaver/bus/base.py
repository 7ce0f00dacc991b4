"""The EventBus port.

Topics name who should hear an event: `channel:<id>` for everyone subscribed to a channel,
`user:<id>` for one person's connections, and `control` for instructions to every node's hub
(a session was revoked, settings changed).
"""

from __future__ import annotations

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


class EventBus(Protocol):
    async def publish(self, topic: str, event: Event) -> None: ...

    def listen(self, listener: Listener) -> None:
        """Register a listener for every event; it must not block (it only enqueues)."""
        ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


def deliver(listeners: Iterable[Listener], topic: str, event: Event) -> None:
    """Hand `event` to every listener; one that fails is logged and does not stop the rest."""
    for listener in listeners:
        try:
            listener(topic, event)
        except Exception:
            log.exception("event listener failed on %s", topic)
