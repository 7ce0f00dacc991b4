"""Re-embed what an embedder change left stale, with progress for the WebSocket and the CLI."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

Progress = Callable[[int, int], Awaitable[None]]
"""Called with (done, total) items, first with done = 0."""

BATCH = 64


class Reembeddable(Protocol):
    """A store whose items carry vectors: the knowledge base (chunks) and the memory store."""

    async def stale(self, agent_id: str) -> list[str]: ...

    async def reembed(self, agent_id: str, ids: Sequence[str]) -> None: ...


async def reindex_agent(
    agent_id: str,
    stores: Sequence[Reembeddable],
    progress: Progress | None = None,
    batch: int = BATCH,
) -> int:
    """Re-embeds the agent's stale items with the current embedder, one batch per write so
    that searches and other writes go on meanwhile; returns how many items were stale."""
    plans = [(store, await store.stale(agent_id)) for store in stores]
    total = sum(len(ids) for _, ids in plans)
    done = 0
    if progress is not None:
        await progress(done, total)
    for store, ids in plans:
        for start in range(0, len(ids), batch):
            part = ids[start : start + batch]
            await store.reembed(agent_id, part)
            done += len(part)
            if progress is not None:
                await progress(done, total)
    return total
