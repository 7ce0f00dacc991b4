"""Loading the local embedding model before the first memory or knowledge call needs it.

Loading takes seconds (importing torch, reading the weights); a person whose first message
waits for it unannounced thinks the service hangs. When any agent will embed, the model loads
in a worker thread at start-up, and the log says when it is ready.
"""

from __future__ import annotations

import logging
import time

import anyio
from sqlalchemy import select

from palaver.domain import Agent
from palaver.knowledge.embed import CurrentEmbedder, LocalEmbedder, TracedEmbedder
from palaver.store import agents as agents_store
from palaver.store.db import Database
from palaver.store.tables.knowledge import documents

log = logging.getLogger(__name__)

EMBEDDING_TOOLS = frozenset({"memory_write", "memory_search", "rag_query"})


def embeds(agent: Agent) -> bool:
    return agent.auto_inject_memory or not EMBEDDING_TOOLS.isdisjoint(agent.tools)


async def anyone_embeds(db: Database) -> bool:
    async with db.read() as conn:
        if any(embeds(agent) for agent in await agents_store.list_all(conn)):
            return True
        return (await conn.execute(select(documents.c.id).limit(1))).first() is not None


async def warm_up(db: Database, embedder: CurrentEmbedder) -> None:
    """Load the local model now if any agent will need it; a remote embedder needs nothing."""
    current = embedder()
    if isinstance(current, TracedEmbedder):
        current = current.inner
    if not isinstance(current, LocalEmbedder):
        return
    try:
        if not await anyone_embeds(db):
            return
        log.info("loading the embedding model in the background for memory and knowledge")
        started = time.monotonic()
        await anyio.to_thread.run_sync(current.load)
    except Exception:
        log.exception("the embedding model could not be loaded; it will be tried on first use")
        return
    log.info("the embedding model is ready (loaded in %.1f s)", time.monotonic() - started)
