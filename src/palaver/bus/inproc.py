"""One-process bus: publishing hands the event straight to the listeners, in order."""

from __future__ import annotations

import asyncio

from palaver.bus.base import Event, Listener, deliver, done


class InProcessBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    async def publish(self, topic: str, event: Event) -> None:
        deliver(self._listeners, topic, event)

    async def enqueue(self, topic: str, event: Event) -> asyncio.Future[None]:
        deliver(self._listeners, topic, event)
        return done()

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        self._listeners.clear()
