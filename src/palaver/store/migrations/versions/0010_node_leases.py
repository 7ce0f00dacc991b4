"""Node leases: the `nodes` registry with heartbeats, and the node that runs each reply draft,
running chain and document being indexed, so that a live node's work is never taken and a
dead node's is.

Revision ID: 0010_node_leases
Revises: 0009_postgres_search
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import UtcDateTime

revision = "0010_node_leases"
down_revision = "0009_postgres_search"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "nodes",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("started_at", UtcDateTime, nullable=False),
        sa.Column("heartbeat_at", UtcDateTime, nullable=False),
    )
    with op.batch_alter_table("reply_drafts") as batch:
        batch.add_column(sa.Column("node_id", sa.String(40), nullable=True))
    with op.batch_alter_table("chains") as batch:
        batch.add_column(sa.Column("node_id", sa.String(40), nullable=True))
        batch.create_index("ix_chains_node_id", ["node_id"])
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("node_id", sa.String(40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("node_id")
    with op.batch_alter_table("chains") as batch:
        batch.drop_index("ix_chains_node_id")
        batch.drop_column("node_id")
    with op.batch_alter_table("reply_drafts") as batch:
        batch.drop_column("node_id")
    op.drop_table("nodes")
