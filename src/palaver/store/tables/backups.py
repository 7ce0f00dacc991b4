"""The scheduled backups (issue 25): one row per backup the schedule began, on whichever node.

`follows` names the run before it (`first` for the first): unique, so that of the nodes that
find the same backup due, one claims it and the others fail on the key, and each period has
one backup however many nodes look."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from palaver.store.tables.base import UtcDateTime, metadata

backup_runs = Table(
    "backup_runs",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("follows", String(40), nullable=False, unique=True),
    # The node making it: its lease (a run whose node is dead is stored as interrupted).
    Column("node_id", String(40), nullable=True),
    Column("started_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime, nullable=True),
    # running, ok, failed or interrupted (its node stopped or died before it ended).
    Column("status", String(16), nullable=False),
    Column("file", Text, nullable=True),
    Column("bytes", BigInteger, nullable=True),
    Column("error", Text, nullable=True),
    Column("duration_ms", Integer, nullable=True),
    Index("ix_backup_runs_started_at", "started_at"),
)
