"""Which SearchIndex adapter serves a database: FTS5 and cached matrices on SQLite, tsvector
and pgvector on PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from palaver.knowledge.index.sqlite import (
    DEFAULT_CACHE_BYTES,
    DEFAULT_IDLE_SECONDS,
    SqliteSearchIndex,
)

if TYPE_CHECKING:
    from palaver.bus.base import EventBus
    from palaver.knowledge.index.base import SearchIndex
    from palaver.store.db import Database


def search_index(
    db: Database,
    *,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    idle_seconds: float = DEFAULT_IDLE_SECONDS,
    shared_bus: EventBus | None = None,
) -> SearchIndex:
    """The index for `db`. `cache_bytes` bounds the SQLite adapter's matrices and text parts,
    and the PostgreSQL one's text parts (it keeps no vectors in the process); `shared_bus` is
    the bus of nodes that share a SQLite file, on which its matrices' changes are announced."""
    if db.is_sqlite:
        return SqliteSearchIndex(
            db, cache_bytes=cache_bytes, idle_seconds=idle_seconds, bus=shared_bus
        )
    from palaver.knowledge.index.postgres import PostgresSearchIndex

    return PostgresSearchIndex(db, cache_bytes=cache_bytes)
