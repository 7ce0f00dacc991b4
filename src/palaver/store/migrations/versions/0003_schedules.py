"""Schedules: agents' scheduled prompts and the record of each due run.

Revision ID: 0003_schedules
Revises: 0002_knowledge
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import UtcDateTime

revision = "0003_schedules"
down_revision = "0002_knowledge"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "agent_id",
            sa.String(40),
            sa.ForeignKey("agents.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "channel_id",
            sa.String(40),
            sa.ForeignKey("channels.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created_by", sa.String(40), nullable=True),
        sa.Column("cron", sa.String(120), nullable=True),
        sa.Column("at", UtcDateTime, nullable=True),
        sa.Column("prompt", sa.Text, nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("next_run_at", UtcDateTime, nullable=True),
        sa.Column("last_run_at", UtcDateTime, nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
    )
    op.create_index("ix_schedules_active_next_run_at", "schedules", ["active", "next_run_at"])
    op.create_index("ix_schedules_agent_id", "schedules", ["agent_id"])
    op.create_table(
        "schedule_runs",
        sa.Column(
            "schedule_id",
            sa.String(40),
            sa.ForeignKey("schedules.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("due_at", UtcDateTime, primary_key=True),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("reason", sa.String(32), nullable=True),
        sa.Column("message_id", sa.String(40), nullable=True),
        sa.Column("claimed_by", sa.String(128), nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("schedule_runs")
    op.drop_table("schedules")
