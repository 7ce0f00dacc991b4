"""Collaboration chains and their steps.

Revision ID: 0004_chains
Revises: 0003_schedules
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import UtcDateTime

revision = "0004_chains"
down_revision = "0003_schedules"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chains",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "channel_id",
            sa.String(40),
            sa.ForeignKey("channels.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("trigger_message_id", sa.String(40), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("requested", sa.String(16), nullable=True),
        sa.Column("handoffs", sa.Integer, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
    )
    op.create_index("ix_chains_channel_id", "chains", ["channel_id"])
    op.create_table(
        "chain_steps",
        sa.Column(
            "chain_id",
            sa.String(40),
            sa.ForeignKey("chains.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("agent_id", sa.String(40), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message_id", sa.String(40), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("chain_steps")
    op.drop_table("chains")
