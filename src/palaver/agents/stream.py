"""The live side of a reply: text slices coalesced into chunks, and periodic crash checkpoints.

A model may emit a token every millisecond; sending each as its own event would cost every
client a frame per token. Slices are merged so that chunks leave at most every `interval`,
and none waits longer than that. Nothing is written to the database per chunk: the text so far
is checkpointed every `checkpoint_every` seconds while it changes, for recovery after a crash.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from palaver.store.faults import log_failure

log = logging.getLogger(__name__)


class ChunkStream:
    def __init__(
        self,
        send: Callable[[str, int], Awaitable[None]],
        checkpoint: Callable[[str], Awaitable[None]],
        interval: float = 0.02,
        checkpoint_every: float = 2.0,
    ) -> None:
        self._send = send
        self._checkpoint = checkpoint
        self._interval = interval
        self._checkpoint_every = checkpoint_every
        self._pending: list[str] = []
        self._parts: list[str] = []
        self.length = 0
        """Characters so far, kept as they arrive: joining `text` per delta would be quadratic."""
        self._seq = 0
        self._last_sent = 0.0
        self._timer: asyncio.Task[None] | None = None
        self._saver: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def text(self) -> str:
        return "".join(self._parts)

    async def add(self, text: str) -> None:
        if not text:
            return
        self._pending.append(text)
        self._parts.append(text)
        self.length += len(text)
        if self._saver is None:
            self._saver = asyncio.create_task(self._save_periodically())
        wait = self._last_sent + self._interval - time.monotonic()
        if wait <= 0:
            await self.flush()
        elif self._timer is None:
            self._timer = asyncio.create_task(self._flush_after(wait))

    async def _flush_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self._timer = None
        await self.flush()

    async def _save_periodically(self) -> None:
        saved = 0
        while True:
            await asyncio.sleep(self._checkpoint_every)
            if len(self._parts) != saved:
                saved = len(self._parts)
                try:
                    await self._checkpoint(self.text)
                except Exception as exc:
                    log_failure(log, exc, "could not checkpoint a reply; it goes on")

    async def flush(self) -> None:
        async with self._lock:
            if not self._pending:
                return
            text = "".join(self._pending)
            self._pending.clear()
            self._seq += 1
            self._last_sent = time.monotonic()
            await self._send(text, self._seq)

    async def close(self) -> None:
        """Send whatever is pending; a timer already due is let finish so no chunk is cut."""
        if self._saver is not None:
            self._saver.cancel()
            await asyncio.gather(self._saver, return_exceptions=True)
        if self._timer is not None:
            await self._timer
        await self.flush()
