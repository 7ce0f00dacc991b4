"""What agents cost: the ledger (one row per model call, written in the reply's own final
write) and its daily rollup (kept in the same write), which the usage report and the budgets
read: a year of calls is at most one row per day, agent, person, channel and model there."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Date,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    text,
)

from palaver.store.tables.base import UtcDateTime, metadata

usage_ledger = Table(
    "usage_ledger",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UtcDateTime, nullable=False),
    Column("agent_id", String(40), nullable=False),
    # The person whose message (or schedule, or call between agents) caused the call; '' for
    # none. `message_id`: the reply the call was made for.
    Column("user_id", String(40), nullable=False),
    Column("channel_id", String(40), nullable=False),
    Column("message_id", String(40), nullable=False),
    Column("provider", String(64), nullable=False),
    Column("model", String(256), nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("cached_tokens", Integer, nullable=False),
    # `priced` is false when the price table had no entry for the model (its cost counts as
    # nothing); `estimated` true when the provider reported no token counts.
    Column("cost", Float, nullable=False),
    Column("priced", Boolean, nullable=False),
    Column("estimated", Boolean, nullable=False),
    Index("ix_usage_ledger_at", "at"),
)

usage_daily = Table(
    "usage_daily",
    metadata,
    Column("day", Date, nullable=False),
    Column("agent_id", String(40), nullable=False),
    Column("user_id", String(40), nullable=False),
    Column("channel_id", String(40), nullable=False),
    Column("model", String(256), nullable=False),
    Column("input_tokens", Integer, nullable=False, server_default=text("0")),
    Column("output_tokens", Integer, nullable=False, server_default=text("0")),
    Column("cached_tokens", Integer, nullable=False, server_default=text("0")),
    Column("cost", Float, nullable=False, server_default=text("0")),
    Column("calls", Integer, nullable=False, server_default=text("0")),
    Column("unpriced_calls", Integer, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("day", "agent_id", "user_id", "channel_id", "model"),
    Index("ix_usage_daily_agent_id_day", "agent_id", "day"),
    Index("ix_usage_daily_user_id_day", "user_id", "day"),
)
