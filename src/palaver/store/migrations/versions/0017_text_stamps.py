"""Kept text parts on PostgreSQL (issue 25): `text_stamps`, a counter per agent moved with every
change to its chunks' words, so that each node may keep the words' ranking parts it fetched and
know, in the same read, whether they still hold.

Revision ID: 0017_text_stamps
Revises: 0016_trace_context
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_text_stamps"
down_revision = "0016_trace_context"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "text_stamps",
        sa.Column(
            "agent_id",
            sa.String(40),
            sa.ForeignKey("agents.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("stamp", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("text_stamps")
