"""Tables of agents' knowledge: documents and their chunks, memories and their versions, vectors.

`chunks` carries an integer `seq` primary key besides its public `id` because the SQLite
full-text index reads chunk text by rowid, and only an INTEGER PRIMARY KEY keeps rowids
stable across VACUUM. Each agent has its own FTS5 table (`fts_ddl`), made with its first
document, so that one agent's query neither walks nor scores another agent's postings and its
BM25 statistics are its own; the index adapter writes it in the transaction that stores chunks.
"""

from __future__ import annotations

import hashlib
import re

from sqlalchemy import (
    BigInteger,
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
    Column("node_id", String(40), nullable=True),
    UniqueConstraint("agent_id", "content_hash", name="uq_documents_agent_id_content_hash"),
)
"""`visibility` is `owner` (the default: only the owner's conversations may draw on it) or
`members` (also channels with guests). `status` is `indexing` from the moment the parsed
document is recorded until its chunks are embedded (`ready`), or `failed` with `error`.
`node_id` is the node embedding it (its lease: see docs/SCALING.md)."""

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
    Column("context", Text, nullable=False, server_default=""),
    Index("ix_chunks_agent_id", "agent_id"),
    Index("ix_chunks_document_id_ordinal", "document_id", "ordinal"),
)
"""`context` is the document's title and the chunk's heading path: embedded and indexed with
the content so that a passage deep in a document keeps the words that say what it is about,
but not shown to the agent, which gets the document name and heading path as fields."""

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


text_stamps = Table(
    "text_stamps",
    metadata,
    Column("agent_id", String(40), ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True),
    Column("stamp", BigInteger, nullable=False),
)
"""PostgreSQL: a counter per agent, moved in the transaction of every change to its chunks'
words, under which each node keeps the BM25-like parts of the words it was searched for (the
SQLite index reads FTS5's own structure record for the same purpose and leaves this empty)."""


FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
"""How the agents' full-text tables cut and fold words (`knowledge.index.fts_terms` asks the
same tokenizer what a query word becomes)."""


def fts_table(agent_id: str) -> str:
    """The name of the agent's own full-text table, never needing quotes: the id itself when it
    is lower-case word characters (SQLite names ignore case), else a hash of it."""
    if re.fullmatch(r"[a-z0-9_]{1,80}", agent_id):
        return f"chunks_fts_a_{agent_id}"
    return f"chunks_fts_h_{hashlib.sha256(agent_id.encode()).hexdigest()[:32]}"


def fts_ddl(agent_id: str) -> tuple[str, ...]:
    """SQLite only: the agent's external-content FTS5 index over its rows of `chunks` (context
    and content), a vocabulary table that gives each term's document count in one lookup, and
    one that lists a term's instances (row by row) without scoring them."""
    table = fts_table(agent_id)
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        "context, content, content='chunks', content_rowid='seq', "
        f"tokenize='{FTS_TOKENIZE}')",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_vocab USING fts5vocab({table}, 'row')",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_instances "
        f"USING fts5vocab({table}, 'instance')",
    )


def fts_drop(agent_id: str) -> tuple[str, ...]:
    table = fts_table(agent_id)
    return (
        f"DROP TABLE IF EXISTS {table}_instances",
        f"DROP TABLE IF EXISTS {table}_vocab",
        f"DROP TABLE IF EXISTS {table}",
    )
