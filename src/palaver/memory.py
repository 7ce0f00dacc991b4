"""Agents' memories and the rules for writing them (SPEC 8, item 4).

A write is compared with the agent's memories by cosine similarity: above the duplicate
threshold it is skipped, above the update threshold the closest memory takes the new content,
otherwise it is inserted. Similarity measures topic, not agreement, so an update never
destroys: the previous content stays as a numbered version that can be restored.

Across nodes: the comparison runs inside the write transaction, after a lock per agent that
every node takes (on PostgreSQL an advisory lock; SQLite's writer is one for the whole file),
and sees what any node committed before it; so concurrent writes of one fact on several nodes
store it once. The similarity the thresholds judge is recomputed from the stored float32
vectors of the index's nearest few, as one correctly rounded number (`exact_similarity`): the
index's own scores (numpy's float32 product on SQLite, pgvector's distance on PostgreSQL) differ
in their last digits by engine and CPU, and a write must be judged alike on every node.

Privacy: a caller answering in a channel that has guests passes `only_channel`, and then
only memories learned in that channel are compared, searched or injected, so nothing told to
the agent elsewhere can reach those guests, nor be overwritten from there.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import insert, select, update
from sqlalchemy import text as sql
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver import tracing
from palaver.domain import iso
from palaver.errors import Invalid, NotFound
from palaver.ids import new_id
from palaver.knowledge.documents import agent_exists
from palaver.knowledge.embed import Embedder, current_space
from palaver.knowledge.index.base import Entry, SearchIndex, Space
from palaver.settings import MemoryConfig
from palaver.store.audit import Actor, text_size
from palaver.store.db import Database, Tx
from palaver.store.tables.base import utcnow
from palaver.store.tables.knowledge import memories, memory_versions, vectors

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MEMORY_TYPES: tuple[str, ...] = ("semantic", "episodic", "procedural")
MAX_CONTENT_CHARS = 10_000
MAX_TOP_K = 50
WriteAction = Literal["inserted", "updated", "skipped"]
JUDGED_CANDIDATES = 4
"""The index's nearest memories whose similarity the write rule recomputes exactly: enough for
two engines that order near-ties differently to judge the same closest one."""
_AGENT_LOCK = sql("SELECT pg_advisory_xact_lock(7703, hashtext(:agent))")
"""Taken by the write rule on PostgreSQL. `Database.write` already serialises every such
transaction (7701), but the rule must not depend on that staying so wide."""


@dataclass(frozen=True)
class Memory:
    id: str
    agent_id: str
    type: str
    content: str
    channel_id: str | None
    """Where the current content was learned."""
    source_message_id: str | None
    version: int
    """The current version's number; earlier ones are listed by `MemoryStore.versions`."""
    created_at: datetime
    updated_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agentId": self.agent_id,
            "type": self.type,
            "content": self.content,
            "channelId": self.channel_id,
            "sourceMessageId": self.source_message_id,
            "version": self.version,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
        }


@dataclass(frozen=True)
class MemoryVersion:
    memory_id: str
    version: int
    content: str
    type: str
    channel_id: str | None
    source_message_id: str | None
    created_at: datetime
    """When this content was written (it was current until the next version)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "memoryId": self.memory_id,
            "version": self.version,
            "content": self.content,
            "type": self.type,
            "channelId": self.channel_id,
            "sourceMessageId": self.source_message_id,
            "createdAt": iso(self.created_at),
        }


@dataclass(frozen=True)
class WriteResult:
    action: WriteAction
    memory: Memory
    """The new memory, the updated one, or for "skipped" the one the text duplicates."""
    similarity: float | None
    """Cosine similarity to the closest existing memory, None when there was none."""
    previous_content: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "memory": self.memory.as_json(),
            "similarity": self.similarity,
            "duplicateOf": self.memory.id if self.action == "skipped" else None,
            "previousContent": self.previous_content,
        }


@dataclass(frozen=True)
class MemoryMatch:
    memory: Memory
    similarity: float

    def as_json(self) -> dict[str, Any]:
        return {**self.memory.as_json(), "similarity": self.similarity}


def _memory(row: Any) -> Memory:
    return Memory(**row._mapping)


def _clean(content: str) -> str:
    text = content.strip()
    if not text:
        raise Invalid("A memory cannot be empty.")
    if len(text) > MAX_CONTENT_CHARS:
        raise Invalid(f"A memory is at most {MAX_CONTENT_CHARS} characters.")
    return text


def _check_type(type: str) -> str:
    if type not in MEMORY_TYPES:
        raise Invalid(f"A memory's type is one of {', '.join(MEMORY_TYPES)}; got '{type}'.")
    return type


async def _fetch(conn: AsyncConnection, agent_id: str, memory_id: str) -> Memory | None:
    query = select(memories).where(memories.c.id == memory_id, memories.c.agent_id == agent_id)
    row = (await conn.execute(query)).first()
    return _memory(row) if row else None


class MemoryStore:
    def __init__(
        self,
        db: Database,
        index: SearchIndex,
        embedder: Callable[[], Embedder],
        config: Callable[[], MemoryConfig],
    ) -> None:
        """`embedder` and `config` return the current settings' choices on every call."""
        self._db = db
        self._index = index
        self._embedder = embedder
        self._config = config
        self._locks: dict[str, asyncio.Lock] = {}

    async def write(
        self,
        agent_id: str,
        content: str,
        type: str = "semantic",
        *,
        channel_id: str | None = None,
        source_message_id: str | None = None,
        only_channel: str | None = None,
        by: Actor | None = None,
    ) -> WriteResult:
        """Apply the write rule (in an `upsert_memory` span with its decision and similarity);
        comparisons are limited to `only_channel` when it is set. With `by` (the owner writing
        one by hand), an insert or update is audited in its own transaction (`memory.create`,
        `memory.update`), the content by its length only."""
        attributes = {
            "gen_ai.operation.name": "upsert_memory",
            "gen_ai.memory.store.id": agent_id,
            "gen_ai.memory.record.count": 1,
            "gen_ai.conversation.id": channel_id,
        }
        with tracing.span("upsert_memory", attributes) as span:
            result = await self._write(
                agent_id, content, type, channel_id, source_message_id, only_channel, by
            )
            if span.is_recording():
                span.set_attribute("gen_ai.memory.record.id", result.memory.id)
                span.set_attribute("palaver.memory.decision", result.action)
                if result.similarity is not None:
                    span.set_attribute("palaver.memory.similarity", result.similarity)
                records = tracing.content([{"id": result.memory.id, "content": content}])
                if records is not None:
                    span.set_attribute("gen_ai.memory.records", records)
            return result

    async def _write(
        self,
        agent_id: str,
        content: str,
        type: str,
        channel_id: str | None,
        source_message_id: str | None,
        only_channel: str | None,
        by: Actor | None,
    ) -> WriteResult:
        text, type = _clean(content), _check_type(type)
        vector, space = await self._embed(text)
        config = self._config()
        # The process's lock spans the commit and the index's update after it, so that the next
        # write of this agent on this node compares with an index that has this one.
        async with self._locks.setdefault(agent_id, asyncio.Lock()), self._db.write() as tx:
            if not self._db.is_sqlite:
                await tx.conn.execute(_AGENT_LOCK, {"agent": agent_id})
            if not await agent_exists(tx.conn, agent_id):
                raise NotFound(f"There is no agent '{agent_id}'.")
            hits = await self._index.vector_search(
                agent_id, "memory", vector, space, JUDGED_CANDIDATES, channel_id=only_channel, tx=tx
            )
            nearest = await _nearest_exactly(tx.conn, vector, [h.id for h in hits])
            closest = await _fetch(tx.conn, agent_id, nearest[0]) if nearest else None
            similarity = nearest[1] if nearest else None
            if closest and similarity is not None:
                if similarity > config.duplicateThreshold:
                    return WriteResult("skipped", closest, similarity)
                if similarity > config.updateThreshold:
                    change = _Change(text, type, channel_id, source_message_id)
                    updated = await self._replace(tx, closest, change, vector, space, by)
                    return WriteResult("updated", updated, similarity, closest.content)
            now = utcnow()
            memory = Memory(
                new_id("mem"), agent_id, type, text, channel_id, source_message_id, 1, now, now
            )
            await tx.conn.execute(insert(memories).values(**asdict(memory)))
            await self._put(tx, memory, vector, space)
            if by is not None:
                changes = {
                    "agentId": agent_id,
                    "type": type,
                    "content": text_size(text),
                    "channelId": channel_id,
                }
                await by.add(tx.conn, "memory.create", memory.id, changes)
        return WriteResult("inserted", memory, similarity)

    async def search(
        self,
        agent_id: str,
        query: str,
        top_k: int = 5,
        *,
        type: str | None = None,
        only_channel: str | None = None,
    ) -> list[MemoryMatch]:
        """The memories most similar to `query`, most similar first."""
        if not 1 <= top_k <= MAX_TOP_K:
            raise Invalid(f"topK must be between 1 and {MAX_TOP_K}.")
        if type is not None:
            _check_type(type)
        async with self._db.read() as conn:
            if not await agent_exists(conn, agent_id):
                raise NotFound(f"There is no agent '{agent_id}'.")
        if not query.strip():
            return []
        return await self._similar(agent_id, query, top_k, type, only_channel)

    async def relevant(
        self,
        agent_id: str,
        text: str,
        *,
        k: int | None = None,
        floor: float | None = None,
        only_channel: str | None = None,
    ) -> list[MemoryMatch]:
        """For injection: the top `k` at or above `floor` (both from settings by default)."""
        config = self._config()
        k = config.injectTopK if k is None else k
        floor = config.injectFloor if floor is None else floor
        if k <= 0 or not text.strip():
            return []
        async with self._db.read() as conn:
            query = select(memories.c.id).where(memories.c.agent_id == agent_id).limit(1)
            if (await conn.execute(query)).first() is None:
                return []
        matches = await self._similar(agent_id, text, k, None, only_channel)
        return [m for m in matches if m.similarity >= floor]

    async def list_memories(self, agent_id: str, *, type: str | None = None) -> list[Memory]:
        """Most recently changed first."""
        query = select(memories).where(memories.c.agent_id == agent_id)
        if type is not None:
            query = query.where(memories.c.type == _check_type(type))
        query = query.order_by(memories.c.updated_at.desc(), memories.c.id.desc())
        async with self._db.read() as conn:
            if not await agent_exists(conn, agent_id):
                raise NotFound(f"There is no agent '{agent_id}'.")
            return [_memory(row) for row in await conn.execute(query)]

    async def get(self, agent_id: str, memory_id: str) -> Memory:
        async with self._db.read() as conn:
            found = await _fetch(conn, agent_id, memory_id)
        if found is None:
            raise NotFound(f"There is no memory '{memory_id}'.")
        return found

    async def update(
        self,
        agent_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        type: str | None = None,
        by: Actor | None = None,
    ) -> Memory:
        """An owner's correction; the replaced content becomes a version."""
        text = None if content is None else _clean(content)
        if type is not None:
            _check_type(type)
        current = await self.get(agent_id, memory_id)
        text, type = text or current.content, type or current.type
        if (text, type) == (current.content, current.type):
            return current
        change = _Change(text, type, current.channel_id, current.source_message_id)
        return await self._apply(agent_id, memory_id, change, by)

    async def delete(self, agent_id: str, memory_id: str, by: Actor | None = None) -> Memory:
        """Deletes the memory with its versions; audited (`memory.delete`) with `by`."""
        async with self._db.write() as tx:
            found = await _fetch(tx.conn, agent_id, memory_id)
            if found is None:
                raise NotFound(f"There is no memory '{memory_id}'.")
            await self._index.delete(tx, agent_id, "memory", [memory_id])
            await tx.conn.execute(memories.delete().where(memories.c.id == memory_id))
            if by is not None:
                await by.add(tx.conn, "memory.delete", memory_id, {"agentId": agent_id})
        return found

    async def versions(self, agent_id: str, memory_id: str) -> list[MemoryVersion]:
        """Earlier contents, oldest first; the current one is the memory itself."""
        await self.get(agent_id, memory_id)
        query = (
            select(memory_versions)
            .where(memory_versions.c.memory_id == memory_id)
            .order_by(memory_versions.c.version)
        )
        async with self._db.read() as conn:
            return [MemoryVersion(**row._mapping) for row in await conn.execute(query)]

    async def restore(
        self, agent_id: str, memory_id: str, version: int, by: Actor | None = None
    ) -> Memory:
        """Makes an earlier version current again, as a new version: nothing is lost."""
        current = await self.get(agent_id, memory_id)
        if version == current.version:
            return current
        earlier = await self.versions(agent_id, memory_id)
        chosen = next((v for v in earlier if v.version == version), None)
        if chosen is None:
            raise NotFound(f"Memory '{memory_id}' has no version {version}.")
        change = _Change(chosen.content, chosen.type, chosen.channel_id, chosen.source_message_id)
        return await self._apply(agent_id, memory_id, change, by, version)

    async def stale(self, agent_id: str) -> list[str]:
        """Memories whose vectors another embedder made (see `reindex.reindex_agent`)."""
        space = await current_space(self._embedder())
        return await self._index.stale_ids(agent_id, "memory", space)

    async def reembed(self, agent_id: str, ids: Sequence[str]) -> None:
        """A memory deleted while its text is embedded (deleting does not wait for the agent's
        lock) gets no vector back: an orphan vector would hide a real match from `write`. One
        changed meanwhile (on another node, which this lock does not hold back) keeps the
        vector of its new content."""
        embedder = self._embedder()
        async with self._locks.setdefault(agent_id, asyncio.Lock()):
            query = select(memories).where(
                memories.c.agent_id == agent_id, memories.c.id.in_(list(ids))
            )
            async with self._db.read() as conn:
                found = [_memory(row) for row in await conn.execute(query)]
            if not found:
                return
            vectors = await embedder.embed([m.content for m in found])
            space = Space(embedder.name, int(vectors.shape[1]))
            import numpy as np  # loaded by the embedder already; not at start

            async with self._db.write() as tx:
                query = select(memories.c.id, memories.c.version).where(
                    memories.c.id.in_([m.id for m in found])
                )
                still = {(row.id, row.version) for row in await tx.conn.execute(query)}
                keep = [i for i, m in enumerate(found) if (m.id, m.version) in still]
                entries = [Entry(found[i].id, found[i].channel_id, found[i].type) for i in keep]
                await self._index.put(
                    tx, agent_id, "memory", entries, vectors[np.array(keep, int)], space
                )

    async def _similar(
        self, agent_id: str, text: str, k: int, type: str | None, only_channel: str | None
    ) -> list[MemoryMatch]:
        attributes = {
            "gen_ai.operation.name": "search_memory",
            "gen_ai.memory.store.id": agent_id,
            "gen_ai.request.top_k": k,
            "gen_ai.memory.query.text": tracing.content(text),
        }
        with tracing.span("search_memory", attributes) as span:
            found = await self._nearest(agent_id, text, k, type, only_channel)
            if span.is_recording():
                span.set_attribute("gen_ai.memory.record.count", len(found))
                if found:
                    span.set_attribute("palaver.memory.best_similarity", found[0].similarity)
            return found

    async def _nearest(
        self, agent_id: str, text: str, k: int, type: str | None, only_channel: str | None
    ) -> list[MemoryMatch]:
        embedder = self._embedder()
        vector = await embedder.embed_query(text)
        space = Space(embedder.name, int(vector.shape[0]))
        hits = await self._index.vector_search(
            agent_id, "memory", vector, space, k, channel_id=only_channel, type=type
        )
        if not hits:
            return []
        query = select(memories).where(memories.c.id.in_([h.id for h in hits]))
        async with self._db.read() as conn:
            found = {row.id: _memory(row) for row in await conn.execute(query)}
        return [MemoryMatch(found[h.id], h.score) for h in hits if h.id in found]

    async def _apply(
        self,
        agent_id: str,
        memory_id: str,
        change: _Change,
        by: Actor | None,
        restored: int | None = None,
    ) -> Memory:
        """`restored`: the version made current again, for the audit log's `memory.restore`."""
        vector, space = await self._embed(change.content)
        async with self._locks.setdefault(agent_id, asyncio.Lock()), self._db.write() as tx:
            current = await _fetch(tx.conn, agent_id, memory_id)
            if current is None:
                raise NotFound(f"There is no memory '{memory_id}'.")
            return await self._replace(tx, current, change, vector, space, by, restored)

    async def _replace(
        self,
        tx: Tx,
        current: Memory,
        change: _Change,
        vector: NDArray[np.float32],
        space: Space,
        by: Actor | None = None,
        restored: int | None = None,
    ) -> Memory:
        version = MemoryVersion(
            current.id,
            current.version,
            current.content,
            current.type,
            current.channel_id,
            current.source_message_id,
            current.updated_at,
        )
        await tx.conn.execute(insert(memory_versions).values(**asdict(version)))
        updated = replace(
            current, **asdict(change), version=current.version + 1, updated_at=utcnow()
        )
        await tx.conn.execute(
            update(memories)
            .where(memories.c.id == current.id)
            .values(**asdict(change), version=updated.version, updated_at=updated.updated_at)
        )
        await self._put(tx, updated, vector, space)
        if by is not None:
            changes: dict[str, Any] = {"agentId": current.agent_id}
            if restored is not None:
                changes["version"] = restored
            if change.type != current.type:
                changes["type"] = change.type
            if change.content != current.content:
                changes["content"] = text_size(change.content)
            action = "memory.update" if restored is None else "memory.restore"
            await by.add(tx.conn, action, current.id, changes)
        return updated

    async def _put(self, tx: Tx, memory: Memory, vector: NDArray[np.float32], space: Space) -> None:
        entry = Entry(memory.id, memory.channel_id, memory.type)
        await self._index.put(tx, memory.agent_id, "memory", [entry], vector[None, :], space)

    async def _embed(self, text: str) -> tuple[NDArray[np.float32], Space]:
        embedder = self._embedder()
        vector = (await embedder.embed([text]))[0]
        return vector, Space(embedder.name, int(vector.shape[0]))


def exact_similarity(query: NDArray[np.float32], stored: bytes) -> float:
    """The dot product of two float32 vectors rounded once: every product of two float32
    values is exact in float64 and `math.fsum` rounds their sum correctly, so the value does not
    depend on the CPU, the engine or the order of the additions."""
    import numpy as np

    row = np.frombuffer(stored, dtype=np.float32).astype(np.float64)
    return math.fsum((np.asarray(query, dtype=np.float64) * row).tolist())


async def _nearest_exactly(
    conn: AsyncConnection, query: NDArray[np.float32], ids: list[str]
) -> tuple[str, float] | None:
    """Of the memories `ids`, the one most similar to `query` by `exact_similarity` (ties go to
    the smaller id), with that similarity."""
    if not ids:
        return None
    rows = await conn.execute(
        select(vectors.c.item_id, vectors.c.data).where(vectors.c.item_id.in_(ids))
    )
    judged = [(-exact_similarity(query, row.data), row.item_id) for row in rows]
    if not judged:
        return None
    negated, item_id = min(judged)
    return item_id, -negated


@dataclass(frozen=True)
class _Change:
    content: str
    type: str
    channel_id: str | None
    source_message_id: str | None
