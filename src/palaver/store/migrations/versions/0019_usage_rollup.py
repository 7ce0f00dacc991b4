"""The usage rollup by dimension (issue 24): `usage_rollup`, one row per day and agent, person,
channel, model or the whole install, replaces `usage_daily`, one row per day and combination of
all four, which a busy install fills with nearly a row per call (a month by agent read a million
rows). Filled from `usage_daily`, which then goes; a downgrade rebuilds it from the ledger.

Revision ID: 0019_usage_rollup
Revises: 0018_backup_runs
"""

import sqlalchemy as sa
from alembic import op

revision = "0019_usage_rollup"
down_revision = "0018_backup_runs"
branch_labels = None
depends_on = None

SUMS = ("input_tokens", "output_tokens", "cached_tokens", "cost", "calls", "unpriced_calls")
KEYS = {"agent": "agent_id", "person": "user_id", "channel": "channel_id", "model": "model"}
daily = sa.table("usage_daily", *(sa.column(n) for n in ("day", *KEYS.values(), *SUMS)))
rollup = sa.table("usage_rollup", *(sa.column(n) for n in ("day", "dimension", "key", *SUMS)))
ledger = sa.table(
    "usage_ledger",
    *(sa.column(n) for n in ("at", *KEYS.values(), *SUMS[:4], "priced")),
)


def upgrade() -> None:
    counts = [
        sa.Column(name, sa.BigInteger, nullable=False, server_default=sa.text("0"))
        for name in ("input_tokens", "output_tokens", "cached_tokens")
    ]
    op.create_table(
        "usage_rollup",
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("dimension", sa.String(8), nullable=False),
        sa.Column("key", sa.String(256), nullable=False),
        *counts,
        sa.Column("cost", sa.Float, nullable=False, server_default=sa.text("0")),
        sa.Column("calls", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("unpriced_calls", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("dimension", "key", "day", name="pk_usage_rollup"),
    )
    op.create_index("ix_usage_rollup_dimension_day", "usage_rollup", ["dimension", "day"])
    summed = [sa.func.sum(daily.c[name]) for name in SUMS]
    into = ["day", "dimension", "key", *SUMS]
    for dimension, column in KEYS.items():
        key = daily.c[column]
        picked = sa.select(daily.c.day, sa.literal(dimension), key, *summed)
        op.execute(rollup.insert().from_select(into, picked.group_by(daily.c.day, key)))
    picked = sa.select(daily.c.day, sa.literal("total"), sa.literal(""), *summed)
    op.execute(rollup.insert().from_select(into, picked.group_by(daily.c.day)))
    op.drop_index("ix_usage_daily_user_id_day", "usage_daily")
    op.drop_index("ix_usage_daily_agent_id_day", "usage_daily")
    op.drop_table("usage_daily")


def downgrade() -> None:
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
    # The day in UTC: SQLite keeps the time as UTC text; PostgreSQL's own date() would take the
    # session's time zone.
    at = ledger.c.at
    utc = at if op.get_bind().dialect.name == "sqlite" else sa.func.timezone("UTC", at)
    day = sa.func.date(utc)
    keys = [ledger.c[column] for column in KEYS.values()]
    picked = sa.select(
        day,
        *keys,
        *(sa.func.sum(ledger.c[name]) for name in SUMS[:4]),
        sa.func.count(),
        sa.func.sum(sa.case((ledger.c.priced, 0), else_=1)),
    ).group_by(day, *keys)
    op.execute(daily.insert().from_select(["day", *KEYS.values(), *SUMS], picked))
    op.drop_index("ix_usage_rollup_dimension_day", "usage_rollup")
    op.drop_table("usage_rollup")
