"""Tables of agents' knowledge: documents and their chunks, memories and their versions, vectors.

`chunks` carries an integer `seq` primary key besides its public `id` because the SQLite
full-text index reads chunk text by rowid, and only an INTEGER PRIMARY KEY keeps rowids
stable across VACUUM. The FTS5 table and its triggers cannot be made by `create_all`;
`FTS_DDL` holds them for the migration and the tests.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from palaver.store.tables.base import JsonValue, UtcDateTime, metadata

documents = Table(
    "documents",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("agent_id", String(40), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(255), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("bytes", Integer, nullable=False),
    Column("pages", Integer, nullable=True),
    Column("chunks", Integer, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("visibility", String(8), nullable=False, server_default="owner"),
    Column("status", String(8), nullable=False, server_default="ready"),
    Column("error", Text, nullable=True),
    UniqueConstraint("agent_id", "content_hash", name="uq_documents_agent_id_content_hash"),
)
"""`visibility` is `owner` (the default: only the owner's conversations may draw on it) or
`members` (also channels with guests). `status` is `indexing` from the moment the parsed
document is recorded until its chunks are embedded (`ready`), or `failed` with `error`."""

chunks = Table(
    "chunks",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(40), nullable=False, unique=True),
    Column("agent_id", String(40), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    Column(
        "document_id", String(40), ForeignKey("documents.id", ondelete="CASCADE"), nullable=False
    ),
    Column("ordinal", Integer, nullable=False),
    Column("heading_path", JsonValue, nullable=False),
    Column("page", Integer, nullable=True),
    Column("tokens", Integer, nullable=False),
    Column("content", Text, nullable=False),
    Index("ix_chunks_agent_id", "agent_id"),
    Index("ix_chunks_document_id_ordinal", "document_id", "ordinal"),
)

memories = Table(
    "memories",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("agent_id", String(40), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    Column("type", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("channel_id", String(40), nullable=True),
    Column("source_message_id", String(40), nullable=True),
    Column("version", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index("ix_memories_agent_id_id", "agent_id", "id"),
)

memory_versions = Table(
    "memory_versions",
    metadata,
    Column(
        "memory_id",
        String(40),
        ForeignKey("memories.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("version", Integer, primary_key=True),
    Column("content", Text, nullable=False),
    Column("type", String(16), nullable=False),
    Column("channel_id", String(40), nullable=True),
    Column("source_message_id", String(40), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
)

vectors = Table(
    "vectors",
    metadata,
    Column("item_id", String(40), primary_key=True),
    Column("agent_id", String(40), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(8), nullable=False),
    Column("channel_id", String(40), nullable=True),
    Column("type", String(16), nullable=True),
    Column("embedder", String(200), nullable=False),
    Column("dim", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Index("ix_vectors_agent_id_kind", "agent_id", "kind"),
)
"""One float32 vector per chunk or memory. `channel_id` and `type` copy the memory's own (for
a chunk, `type` holds its document's visibility) so that filtered search needs no join;
`embedder` and `dim` tell current vectors from stale ones."""

FTS_DDL: tuple[str, ...] = (
    "CREATE VIRTUAL TABLE chunks_fts USING fts5("
    "heading_path, content, content='chunks', content_rowid='seq', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN "
    "INSERT INTO chunks_fts(rowid, heading_path, content) "
    "VALUES (new.seq, new.heading_path, new.content); END",
    "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content) "
    "VALUES ('delete', old.seq, old.heading_path, old.content); END",
    "CREATE TRIGGER chunks_fts_update AFTER UPDATE OF heading_path, content ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content) "
    "VALUES ('delete', old.seq, old.heading_path, old.content); "
    "INSERT INTO chunks_fts(rowid, heading_path, content) "
    "VALUES (new.seq, new.heading_path, new.content); END",
)
"""SQLite only: an external-content FTS5 index over `chunks`, kept in step by triggers, which
also fire on the cascades from deleting a document or an agent."""

FTS_DROP: tuple[str, ...] = (
    "DROP TRIGGER IF EXISTS chunks_fts_update",
    "DROP TRIGGER IF EXISTS chunks_fts_delete",
    "DROP TRIGGER IF EXISTS chunks_fts_insert",
    "DROP TABLE IF EXISTS chunks_fts",
)
