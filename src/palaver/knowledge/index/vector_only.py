"""The SearchIndex on PostgreSQL until its own adapter (tsvector and pgvector) exists.

It keeps the SQLite adapter's vectors (rows of `vectors`, exact cosine in numpy, which any
database can hold) but has no full-text index: `add_text` stores nothing and `text_search`
finds nothing, so hybrid search is vector search alone. Memories and documents are stored,
de-duplicated and searched by meaning; nothing in the rest of the API depends on text search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.knowledge.index.base import Entry, Hit, Kind, Space
from palaver.knowledge.index.matrix import VectorMatrix
from palaver.knowledge.index.sqlite import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_IDLE_SECONDS,
    SqliteSearchIndex,
)
from palaver.store.db import Database, Tx
from palaver.store.tables.knowledge import vectors as vector_rows

if TYPE_CHECKING:
    from numpy.typing import NDArray

_BATCH = 500


class VectorOnlySearchIndex(SqliteSearchIndex):
    async def put(
        self,
        tx: Tx,
        agent_id: str,
        kind: Kind,
        entries: Sequence[Entry],
        vectors: NDArray[np.float32],
        space: Space,
    ) -> None:
        if vectors.shape != (len(entries), space.dim):
            raise ValueError(f"expected {len(entries)} vectors of {space.dim}, got {vectors.shape}")
        if not entries:
            return
        rows = np.ascontiguousarray(vectors, dtype=np.float32)
        values = [
            {
                "item_id": entry.id,
                "agent_id": agent_id,
                "kind": kind,
                "channel_id": entry.channel_id,
                "type": entry.type,
                "embedder": space.embedder,
                "dim": space.dim,
                "data": row.tobytes(),
            }
            for entry, row in zip(entries, rows, strict=True)
        ]
        statement = pg_insert(vector_rows)
        statement = statement.on_conflict_do_update(
            index_elements=[vector_rows.c.item_id],
            set_={
                c: statement.excluded[c] for c in ("channel_id", "type", "embedder", "dim", "data")
            },
        )
        for start in range(0, len(values), _BATCH):
            await tx.conn.execute(statement, values[start : start + _BATCH])
        entries = list(entries)
        rows = rows.copy()

        def change(matrix: VectorMatrix) -> None:
            if matrix.space == space:
                matrix.upsert(entries, rows)
            else:
                matrix.remove(e.id for e in entries)

        self._after_commit(tx, agent_id, kind, change)

    async def add_text(self, tx: Tx, agent_id: str, document_ids: Sequence[str]) -> None:
        """No full-text index here yet: chunks are found by their vectors alone."""

    async def drop_agent(self, tx: Tx, agent_id: str) -> None:
        await tx.conn.execute(delete(vector_rows).where(vector_rows.c.agent_id == agent_id))

        async def forget() -> None:
            self.forget(agent_id)

        tx.on_commit(forget)

    async def text_search(
        self, agent_id: str, query: str, limit: int, *, visibility: str | None = None
    ) -> list[Hit]:
        return []

    async def _has_text(
        self, conn: AsyncConnection, agent_id: str, *, remember: bool = True
    ) -> bool:
        return False


def search_index(
    db: Database,
    *,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
) -> SqliteSearchIndex:
    """The index for `db`'s database: FTS5 and vectors on SQLite, vectors alone elsewhere."""
    kind = SqliteSearchIndex if db.is_sqlite else VectorOnlySearchIndex
    return kind(db, cache_bytes=cache_bytes, idle_seconds=idle_seconds)
