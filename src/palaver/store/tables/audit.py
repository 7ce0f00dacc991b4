"""The audit log (issue 24): one row per action that changes the install, written in the
action's own transaction and never changed afterwards (the migration adds triggers that refuse
an UPDATE or a DELETE). Plain strings, no foreign keys: a row outlives the person, agent or
channel it names."""

from __future__ import annotations

from sqlalchemy import Column, Index, String, Table, Text

from palaver.store.tables.base import JsonValue, UtcDateTime, metadata

audit_log = Table(
    "audit_log",
    metadata,
    # `audit_` + a monotonic ULID: newest first is id order, and `before` a plain range.
    Column("id", String(40), primary_key=True),
    Column("at", UtcDateTime, nullable=False),
    # The person who acted; null for a failed login (nobody is known).
    Column("actor_id", String(40), nullable=True),
    Column("action", String(64), nullable=False),
    # The part of `action` before its dot, for the `resource.` filter on an index.
    Column("resource", String(32), nullable=False),
    Column("target", Text, nullable=True),
    Column("changes", JsonValue, nullable=False),
    Column("node", String(40), nullable=False),
    Column("address", String(64), nullable=True),
    Index("ix_audit_log_actor_id_id", "actor_id", "id"),
    Index("ix_audit_log_action_id", "action", "id"),
    Index("ix_audit_log_resource_id", "resource", "id"),
)
