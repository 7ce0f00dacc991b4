"""Writing an imported channel: its row and members, its messages with their reactions and
threads' summaries, its files' records, and its reader's marker, all in the caller's one
transaction, so that a failure (or a crash) leaves nothing of it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import Connection, insert, select

from palaver.domain import Channel
from palaver.store import read_states
from palaver.store.audit import Actor
from palaver.store.message_changes import resummarize_thread
from palaver.store.tables.core import (
    channel_agents,
    channel_members,
    channels,
    message_reactions,
    messages,
)
from palaver.store.tables.uploads import upload_references, uploads

BATCH = 1000
T = TypeVar("T")


@dataclass
class ImportRows:
    """Rows ready to insert: `messages` as the table's columns, oldest first."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    thread_roots: list[str] = field(default_factory=list)
    uploads: list[dict[str, Any]] = field(default_factory=list)
    references: list[dict[str, Any]] = field(default_factory=list)


def write(conn: Connection, channel: Channel, rows: ImportRows, by: Actor) -> str | None:
    """Answers the marker its members start reading from (the newest message: nothing of an
    imported history is unread). The `channel.import` audit row is written with it."""
    by.record(
        conn,
        "channel.import",
        channel.id,
        {"name": channel.name, "agentIds": channel.agent_ids, "messages": len(rows.messages)},
    )
    conn.execute(
        insert(channels).values(
            id=channel.id,
            name=channel.name,
            type=channel.type,
            created_at=channel.created_at,
            updated_at=channel.updated_at,
        )
    )
    if channel.agent_ids:
        conn.execute(
            insert(channel_agents),
            [
                {"channel_id": channel.id, "agent_id": a, "position": i}
                for i, a in enumerate(channel.agent_ids)
            ],
        )
    conn.execute(
        insert(channel_members),
        [
            {"channel_id": channel.id, "user_id": u, "position": i}
            for i, u in enumerate(channel.member_ids)
        ],
    )
    for batch in _batches(rows.messages):
        conn.execute(insert(messages), batch)
    for batch in _batches(rows.reactions):
        conn.execute(insert(message_reactions), batch)
    for root in rows.thread_roots:
        resummarize_thread(conn, root)
    if rows.uploads:
        conn.execute(insert(uploads), rows.uploads)
    if rows.references:
        conn.execute(insert(upload_references), rows.references)
    return read_states.start_reading(conn, channel.id, channel.member_ids)


def recorded_uploads(conn: Connection, paths: Sequence[str]) -> set[str]:
    """Which of `paths` have an upload record (the rest are files a crash left unrecorded)."""
    if not paths:
        return set()
    found = conn.execute(select(uploads.c.path).where(uploads.c.path.in_(list(paths))))
    return set(found.scalars())


def _batches(rows: list[T]) -> Iterator[list[T]]:
    for start in range(0, len(rows), BATCH):
        yield rows[start : start + BATCH]


def reaction_time(created_at: datetime, order: int) -> datetime:
    """Reactions keep their order (a message's summary lists emoji in the order first used)."""
    return created_at + timedelta(microseconds=order)
