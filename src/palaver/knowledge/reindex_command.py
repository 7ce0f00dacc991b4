"""`palaver reindex`: re-embed agents' memories and documents from the command line.

Meant for a stopped service (after changing `settings.embedding`); while the service runs,
`POST /api/agents/:id/reindex` does the same and keeps its caches current.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

from palaver.knowledge.embed import CurrentEmbedder
from palaver.knowledge.index.pick import search_index
from palaver.knowledge.reindex import Reembeddable, reindex_agent
from palaver.knowledge.service import KnowledgeBase
from palaver.memory import MemoryStore
from palaver.store import agents as agents_store
from palaver.store import settings_store
from palaver.store.db import Database

BAR = 30


def progress_bar(label: str) -> Callable[[int, int], Awaitable[None]]:
    async def show(done: int, total: int) -> None:
        filled = BAR if total == 0 else BAR * done // total
        sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (BAR - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


async def reindex(db_url: str, agent_ids: list[str]) -> int:
    """Re-embed the stale vectors of the given agents (all when none is given)."""
    db = Database(db_url)
    try:
        async with db.read() as conn:
            settings = await settings_store.load(conn)
            agents = await agents_store.list_all(conn)
        chosen = [a for a in agents if not agent_ids or a.id in agent_ids]
        missing = set(agent_ids) - {a.id for a in chosen}
        if missing:
            print(f"palaver: no agent has the id {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
        embedder = CurrentEmbedder(lambda: settings)
        index = search_index(db)
        stores: list[Reembeddable] = [
            KnowledgeBase(db, index, embedder),
            MemoryStore(db, index, embedder, lambda: settings.memory),
        ]
        for agent in chosen:
            await reindex_agent(agent.id, stores, progress_bar(agent.name))
        await embedder.aclose()
        return 0
    finally:
        await db.dispose()
