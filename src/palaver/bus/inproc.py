"""One-process bus: publishing hands the event straight to the listeners, in order."""

from __future__ import annotations

import logging

from palaver.bus.base import Event, Listener

log = logging.getLogger(__name__)


class InProcessBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    async def publish(self, topic: str, event: Event) -> None:
        for listener in self._listeners:
            try:
                listener(topic, event)
            except Exception:
                log.exception("event listener failed on %s", topic)

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        self._listeners.clear()
