"""What an agent recalls before it answers (SPEC 1, steps 6 and 7): its relevant memories,
when `autoInjectMemory` is on, and the passages of its documents that bear on the message.

Recall improves a reply but is never a reason for it to fail: when the embedding endpoint
fails, the agent answers without the section (and the failure is logged).
"""

from __future__ import annotations

import logging

from palaver.domain import Agent, Channel, Message
from palaver.knowledge.rerank import ModelReranker, Reranker
from palaver.knowledge.service import KnowledgeBase
from palaver.llm.base import ProviderError
from palaver.llm.registry import ProviderRegistry
from palaver.memory import MemoryStore
from palaver.store import agents as agents_store
from palaver.store.db import Database
from palaver.tools.memory import privacy_scope

log = logging.getLogger(__name__)

INJECTED_CHUNKS = 5


class Rerankers:
    """Each agent's passages are re-scored by the agent's own language model."""

    def __init__(self, db: Database, providers: ProviderRegistry) -> None:
        self._db = db
        self._providers = providers

    async def for_agent(self, agent: Agent) -> Reranker | None:
        try:
            provider, model = await self._providers.resolve(agent.model)
        except ProviderError:
            return None
        return ModelReranker(provider, model)

    async def for_agent_id(self, agent_id: str) -> Reranker | None:
        async with self._db.read() as conn:
            agent = await agents_store.get(conn, agent_id)
        return await self.for_agent(agent) if agent is not None else None


class MemorySection:
    def __init__(self, db: Database, memories: MemoryStore) -> None:
        self._db = db
        self._memories = memories

    async def __call__(self, agent: Agent, channel: Channel, message: Message) -> str | None:
        if not agent.auto_inject_memory:
            return None
        scope = await privacy_scope(self._db, channel.id)
        try:
            found = await self._memories.relevant(agent.id, message.content, only_channel=scope)
        except ProviderError as exc:
            log.warning("agent %s answers without its memories: %s", agent.id, exc.detail)
            return None
        if not found:
            return None
        lines = "\n".join(f"- ({m.memory.type}) {m.memory.content}" for m in found)
        return f"## What you remember that may matter here\n{lines}"


class KnowledgeSection:
    """In a channel with guests, only passages of documents shared with members."""

    def __init__(self, db: Database, knowledge: KnowledgeBase, rerankers: Rerankers) -> None:
        self._db = db
        self._knowledge = knowledge
        self._rerankers = rerankers

    async def __call__(self, agent: Agent, channel: Channel, message: Message) -> str | None:
        reranker = await self._rerankers.for_agent(agent)
        members_only = await privacy_scope(self._db, channel.id) is not None
        try:
            found = await self._knowledge.relevant_chunks(
                agent.id, message.content, INJECTED_CHUNKS, reranker, members_only=members_only
            )
        except ProviderError as exc:
            log.warning("agent %s answers without its documents: %s", agent.id, exc.detail)
            return None
        if not found:
            return None
        parts = []
        for i, chunk in enumerate(found, 1):
            where = [chunk.document_name]
            if chunk.page is not None:
                where.append(f"page {chunk.page}")
            if chunk.heading_path:
                where.append(" > ".join(chunk.heading_path))
            parts.append(f"[{i}] {', '.join(where)}\n{chunk.content}")
        body = "\n\n".join(parts)
        return f"## From your documents (cite them by name and page)\n{body}"
