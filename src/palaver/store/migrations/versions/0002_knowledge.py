"""Knowledge: documents, chunks (with SQLite FTS5), memories and their versions, vectors.

Revision ID: 0002_knowledge
Revises: 0001_core
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import JsonValue, UtcDateTime

revision = "0002_knowledge"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def _agent_fk() -> sa.Column[str]:
    return sa.Column(
        "agent_id", sa.String(40), sa.ForeignKey("agents.id", ondelete="CASCADE"), nullable=False
    )


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
"""SQLite only: one external-content FTS5 index over all of `chunks`, kept in step by
triggers (as this revision made it; revision 0007 replaced it by one table per agent)."""

FTS_DROP: tuple[str, ...] = (
    "DROP TRIGGER IF EXISTS chunks_fts_update",
    "DROP TRIGGER IF EXISTS chunks_fts_delete",
    "DROP TRIGGER IF EXISTS chunks_fts_insert",
    "DROP TABLE IF EXISTS chunks_fts",
)


def upgrade() -> None:
    op.create_table(
        "documents",
        sa.Column("id", sa.String(40), primary_key=True),
        _agent_fk(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("bytes", sa.Integer, nullable=False),
        sa.Column("pages", sa.Integer, nullable=True),
        sa.Column("chunks", sa.Integer, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.UniqueConstraint("agent_id", "content_hash", name="uq_documents_agent_id_content_hash"),
    )
    op.create_table(
        "chunks",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(40), nullable=False, unique=True),
        _agent_fk(),
        sa.Column(
            "document_id",
            sa.String(40),
            sa.ForeignKey("documents.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("heading_path", JsonValue, nullable=False),
        sa.Column("page", sa.Integer, nullable=True),
        sa.Column("tokens", sa.Integer, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
    )
    op.create_index("ix_chunks_agent_id", "chunks", ["agent_id"])
    op.create_index("ix_chunks_document_id_ordinal", "chunks", ["document_id", "ordinal"])
    op.create_table(
        "memories",
        sa.Column("id", sa.String(40), primary_key=True),
        _agent_fk(),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("channel_id", sa.String(40), nullable=True),
        sa.Column("source_message_id", sa.String(40), nullable=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
    )
    op.create_index("ix_memories_agent_id_id", "memories", ["agent_id", "id"])
    op.create_table(
        "memory_versions",
        sa.Column(
            "memory_id",
            sa.String(40),
            sa.ForeignKey("memories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("version", sa.Integer, primary_key=True),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("channel_id", sa.String(40), nullable=True),
        sa.Column("source_message_id", sa.String(40), nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
    )
    op.create_table(
        "vectors",
        sa.Column("item_id", sa.String(40), primary_key=True),
        _agent_fk(),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("channel_id", sa.String(40), nullable=True),
        sa.Column("type", sa.String(16), nullable=True),
        sa.Column("embedder", sa.String(200), nullable=False),
        sa.Column("dim", sa.Integer, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_vectors_agent_id_kind", "vectors", ["agent_id", "kind"])
    if op.get_bind().dialect.name == "sqlite":
        for statement in FTS_DDL:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in FTS_DROP:
            op.execute(statement)
    for table in ("vectors", "memory_versions", "memories", "chunks", "documents"):
        op.drop_table(table)
