"""Documents waiting to be embedded and stored, taken in batches across uploads.

Each upload is parsed and chunked on its own, then queued. One drain task (alive only while
anything waits) takes everything queued, up to `MAX_BATCH_CHUNKS` chunks, and hands the
batch on: its chunks are embedded in one call, sorted by length, and its documents stored in
one transaction. While a batch is embedded the next one fills, so many small uploads share
the embedding model's batches and the transactions, with no timer to wait for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

MAX_BATCH_CHUNKS = 256
"""Chunks per batch: enough to fill the embedder's batches, few enough that an upload's answer
does not wait for a long queue behind it (about 10 s of embedding on two cores)."""

Job = TypeVar("Job")
Result = TypeVar("Result")


@dataclass
class _Waiting(Generic[Job, Result]):
    job: Job
    size: int
    done: asyncio.Future[Result]


class BatchQueue(Generic[Job, Result]):
    def __init__(
        self,
        run: Callable[[Sequence[Job]], Awaitable[Sequence[Result | BaseException]]],
        max_size: int = MAX_BATCH_CHUNKS,
    ) -> None:
        """`run` takes a batch and returns one result, or the exception to raise, per job."""
        self._run = run
        self._max_size = max_size
        self._waiting: list[_Waiting[Job, Result]] = []
        self._drain: asyncio.Task[None] | None = None
        self.jobs = 0
        """Jobs submitted and not yet answered (waiting, or in the batch being run)."""
        self.size = 0
        """Their sizes, summed."""

    async def submit(self, job: Job, size: int) -> Result:
        """Queue `job` (`size` chunks) and wait for its result. A caller that gives up waiting
        leaves the job to finish, as a single upload would have."""
        done: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieve)
        done.add_done_callback(lambda _: self._answered(size))
        self.jobs += 1
        self.size += size
        self._waiting.append(_Waiting(job, size, done))
        if self._drain is None or self._drain.done():
            self._drain = asyncio.create_task(self._drain_all())
        return await asyncio.shield(done)

    async def aclose(self) -> None:
        """Wait for the batches in progress (for shutdown)."""
        if self._drain is not None:
            await self._drain

    async def _drain_all(self) -> None:
        while self._waiting:
            batch = self._take()
            try:
                results = await self._run([w.job for w in batch])
            except Exception as exc:  # one failure (the embedder's) answers the whole batch
                results = [exc] * len(batch)
            for waiting, result in zip(batch, results, strict=True):
                if waiting.done.done():
                    continue
                if isinstance(result, BaseException):
                    waiting.done.set_exception(result)
                else:
                    waiting.done.set_result(result)

    def _answered(self, size: int) -> None:
        self.jobs -= 1
        self.size -= size

    def _take(self) -> list[_Waiting[Job, Result]]:
        taken, total = 0, 0
        for waiting in self._waiting:
            if taken and total + waiting.size > self._max_size:
                break
            taken += 1
            total += waiting.size
        batch, self._waiting = self._waiting[:taken], self._waiting[taken:]
        return batch


def _retrieve(done: asyncio.Future[Any]) -> None:
    """Mark an exception as seen, so that one whose caller stopped waiting is not logged."""
    if not done.cancelled():
        done.exception()
