"""What agents cost: the ledger (one row per model call, written in the reply's own final
write) and its rollup per day and dimension (kept in the same write), which the usage report
and the budgets read: a day holds one row per agent, person, channel and model that was used
that day, and one for the install, however the calls combine them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
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

usage_rollup = Table(
    "usage_rollup",
    metadata,
    Column("day", Date, nullable=False),
    # What `key` names: an agent's id, a person's id ('' for nobody), a channel's id, a model,
    # or '' for the whole install (`total`). A call moves one row of each.
    Column("dimension", String(8), nullable=False),
    Column("key", String(256), nullable=False),
    Column("input_tokens", BigInteger, nullable=False, server_default=text("0")),
    Column("output_tokens", BigInteger, nullable=False, server_default=text("0")),
    Column("cached_tokens", BigInteger, nullable=False, server_default=text("0")),
    Column("cost", Float, nullable=False, server_default=text("0")),
    Column("calls", BigInteger, nullable=False, server_default=text("0")),
    Column("unpriced_calls", BigInteger, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("dimension", "key", "day"),
    Index("ix_usage_rollup_dimension_day", "dimension", "day"),
)
