"""Tables of scheduled work: agents' schedules and the record of each due run.

`schedule_runs` has one row per (schedule, due time); inserting it in the transaction that
advances the schedule is the claim that makes each run happen once, however many schedulers
share the database.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, ForeignKey, Index, String, Table, Text

from palaver.store.tables.base import UtcDateTime, metadata

schedules = Table(
    "schedules",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("agent_id", String(40), ForeignKey("agents.id", ondelete="CASCADE"), nullable=False),
    Column("channel_id", String(40), ForeignKey("channels.id", ondelete="CASCADE"), nullable=False),
    Column("created_by", String(40), nullable=True),
    Column("cron", String(120), nullable=True),
    Column("at", UtcDateTime, nullable=True),
    Column("prompt", Text, nullable=False),
    Column("active", Boolean, nullable=False),
    Column("next_run_at", UtcDateTime, nullable=True),
    Column("last_run_at", UtcDateTime, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Index("ix_schedules_active_next_run_at", "active", "next_run_at"),
    Index("ix_schedules_agent_id", "agent_id"),
    Index("ix_schedules_created_by", "created_by"),
)
"""Exactly one of `cron` (UTC) and `at` is set. `next_run_at` is the next due time, null once
a one-shot has run. `created_by` is the person the agent was answering: a guest's schedules
count against that guest's limit, not the agent's."""

schedule_runs = Table(
    "schedule_runs",
    metadata,
    Column(
        "schedule_id",
        String(40),
        ForeignKey("schedules.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("due_at", UtcDateTime, primary_key=True),
    Column("status", String(8), nullable=False),
    Column("reason", String(32), nullable=True),
    Column("message_id", String(40), nullable=True),
    Column("claimed_by", String(128), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)
"""`status` is `fired` or `skipped`. A skipped run says why in `reason`: `missed` (passed over
for a later due time, so that a schedule catching up runs once), `late` (an hour or more late),
or `not_in_channel` (the agent has left the schedule's channel)."""
