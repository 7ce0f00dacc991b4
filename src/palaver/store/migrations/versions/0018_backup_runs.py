"""Scheduled backups (issue 25): `backup_runs`, one row per backup the schedule began, claimed
by one node through the unique `follows` (the run before it).

Revision ID: 0018_backup_runs
Revises: 0017_text_stamps
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import UtcDateTime

revision = "0018_backup_runs"
down_revision = "0017_text_stamps"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "backup_runs",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("follows", sa.String(40), nullable=False),
        sa.Column("node_id", sa.String(40), nullable=True),
        sa.Column("started_at", UtcDateTime, nullable=False),
        sa.Column("finished_at", UtcDateTime, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("file", sa.Text, nullable=True),
        sa.Column("bytes", sa.BigInteger, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("duration_ms", sa.Integer, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_backup_runs"),
        sa.UniqueConstraint("follows", name="uq_backup_runs_follows"),
    )
    op.create_index("ix_backup_runs_started_at", "backup_runs", ["started_at"])


def downgrade() -> None:
    op.drop_index("ix_backup_runs_started_at", "backup_runs")
    op.drop_table("backup_runs")
