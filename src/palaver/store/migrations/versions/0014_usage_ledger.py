"""The usage ledger (issue 24): `usage_ledger`, one row per model call, and `usage_daily`, its
rollup per day, agent, person, channel and model, both written in the reply's final write.

Revision ID: 0014_usage_ledger
Revises: 0013_read_state
"""

import sqlalchemy as sa
from alembic import op

from palaver.store.tables.base import UtcDateTime

revision = "0014_usage_ledger"
down_revision = "0013_read_state"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "usage_ledger",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", UtcDateTime, nullable=False),
        sa.Column("agent_id", sa.String(40), nullable=False),
        sa.Column("user_id", sa.String(40), nullable=False),
        sa.Column("channel_id", sa.String(40), nullable=False),
        sa.Column("message_id", sa.String(40), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
        sa.Column("cached_tokens", sa.Integer, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
        sa.Column("priced", sa.Boolean, nullable=False),
        sa.Column("estimated", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_ledger"),
    )
    op.create_index("ix_usage_ledger_at", "usage_ledger", ["at"])
    op.create_table(
        "usage_daily",
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("agent_id", sa.String(40), nullable=False),
        sa.Column("user_id", sa.String(40), nullable=False),
        sa.Column("channel_id", sa.String(40), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("output_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("cached_tokens", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("cost", sa.Float, nullable=False, server_default=sa.text("0")),
        sa.Column("calls", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("unpriced_calls", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint(
            "day", "agent_id", "user_id", "channel_id", "model", name="pk_usage_daily"
        ),
    )
    op.create_index("ix_usage_daily_agent_id_day", "usage_daily", ["agent_id", "day"])
    op.create_index("ix_usage_daily_user_id_day", "usage_daily", ["user_id", "day"])


def downgrade() -> None:
    op.drop_index("ix_usage_daily_user_id_day", "usage_daily")
    op.drop_index("ix_usage_daily_agent_id_day", "usage_daily")
    op.drop_table("usage_daily")
    op.drop_index("ix_usage_ledger_at", "usage_ledger")
    op.drop_table("usage_ledger")
