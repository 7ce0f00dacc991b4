"""The default local embedder became the int8 model; a deployment that already holds vectors of
the float model keeps it, by naming it in its settings, so that upgrading re-indexes nothing.

Revision ID: 0008_keep_float_embedder
Revises: 0007_knowledge_at_scale
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0008_keep_float_embedder"
down_revision = "0007_knowledge_at_scale"
branch_labels = None
depends_on = None

FLOAT = {"provider": "local", "model": "all-MiniLM-L6-v2"}
settings = sa.table(
    "settings",
    sa.column("id", sa.Integer),
    sa.column("data", sa.JSON),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    conn = op.get_bind()
    floats = sa.text("SELECT 1 FROM vectors WHERE embedder = 'local/all-MiniLM-L6-v2' LIMIT 1")
    if conn.execute(floats).first() is None:
        return
    row = conn.execute(sa.select(settings.c.data).where(settings.c.id == 1)).first()
    now = datetime.now(UTC)
    if row is None:
        op.execute(settings.insert().values(id=1, data={"embedding": FLOAT}, updated_at=now))
    elif "embedding" not in (row.data or {}):
        data = {**(row.data or {}), "embedding": FLOAT}
        op.execute(settings.update().where(settings.c.id == 1).values(data=data, updated_at=now))


def downgrade() -> None:
    """Nothing to undo: naming the float model is what the older version did by default."""
