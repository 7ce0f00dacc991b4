"""The PostgreSQL search index: each chunk's `tsvector` with a GIN index, and each vector as a
pgvector `vector` (of no fixed size: embedders differ) with a partial HNSW index per common
dimension. SQLite keeps its FTS5 tables and float32 bytes, so there it does nothing.

Revision ID: 0009_postgres_search
Revises: 0008_keep_float_embedder
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_postgres_search"
down_revision = "0008_keep_float_embedder"
branch_labels = None
depends_on = None

_BATCH = 1000
HNSW_DIMS = (384, 768, 1024, 1536)
"""As `palaver.knowledge.index.postgres.HNSW_DIMS`, frozen: the local models, the common
open ones, and OpenAI's small model. pgvector's HNSW takes at most 2,000 dimensions."""
_FILL_TEXT = (
    "UPDATE chunks SET tsv = to_tsvector('english', context) || to_tsvector('english', content)"
)
"""As what `palaver.knowledge.index.postgres` writes (`TSV`), frozen."""


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("ALTER TABLE chunks ADD COLUMN tsv tsvector")
    op.execute(_FILL_TEXT)
    op.execute("CREATE INDEX ix_chunks_tsv ON chunks USING gin (tsv)")
    op.execute("ALTER TABLE vectors ADD COLUMN embedding vector")
    rows = conn.execute(sa.text("SELECT item_id, data FROM vectors ORDER BY item_id")).all()
    for start in range(0, len(rows), _BATCH):
        conn.execute(
            sa.text(
                "UPDATE vectors SET embedding = CAST(CAST(:embedding AS text) AS vector) "
                "WHERE item_id = :item_id"
            ),
            [
                {"item_id": item_id, "embedding": _literal(data)}
                for item_id, data in rows[start : start + _BATCH]
            ],
        )
    for dim in HNSW_DIMS:
        op.execute(
            f"CREATE INDEX ix_vectors_hnsw_{dim} ON vectors "
            f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE dim = {dim}"
        )


def downgrade() -> None:
    """The extension stays: other objects of the database may use it."""
    if op.get_bind().dialect.name == "sqlite":
        return
    for dim in HNSW_DIMS:
        op.execute(f"DROP INDEX IF EXISTS ix_vectors_hnsw_{dim}")
    op.execute("ALTER TABLE vectors DROP COLUMN IF EXISTS embedding")
    op.execute("DROP INDEX IF EXISTS ix_chunks_tsv")
    op.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS tsv")


def _literal(data: bytes) -> str:
    import numpy as np  # only for PostgreSQL's older vectors: a first start on SQLite skips it

    return "[" + ",".join(map(str, np.frombuffer(data, dtype=np.float32).tolist())) + "]"
