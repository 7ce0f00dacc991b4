"""Collaboration chains and their steps."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, String, Table, Text

from palaver.store.tables.base import UtcDateTime, metadata

chains = Table(
    "chains",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("channel_id", String(40), ForeignKey("channels.id", ondelete="CASCADE"), nullable=False),
    Column("trigger_message_id", String(40), nullable=False),
    Column("status", String(16), nullable=False),
    Column("reason", Text, nullable=True),
    Column("requested", String(16), nullable=True),
    Column("handoffs", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # The node driving a running chain (its lease); null once it stops running.
    Column("node_id", String(40), nullable=True),
    # The workflow's span (`traceparent`), which the node resuming the chain continues.
    Column("trace_context", String(64), nullable=True),
    Index("ix_chains_channel_id", "channel_id"),
    Index("ix_chains_node_id", "node_id"),
)

chain_steps = Table(
    "chain_steps",
    metadata,
    Column("chain_id", String(40), ForeignKey("chains.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("agent_id", String(40), nullable=False),
    Column("source", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("message_id", String(40), nullable=True),
)
