"""Messages, idempotency keys, and drafts of replies still being written.

The functions of the hot paths (insert, page, get, idempotency) are plain functions over a
sync connection, so that a post or a history page runs whole as one unit of work
(`Database.write_unit`, `read_unit`); async callers reach them through `conn.run_sync`.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Connection,
    Integer,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import Message, Reaction
from palaver.store.precompiled import Precompiled
from palaver.store.read_states import count_new, thread_people
from palaver.store.tables.core import idempotency_keys, messages, reply_drafts
from palaver.store.uploads import record_references


def from_row(row: Any) -> Message:
    return Message(
        id=row.id,
        channel_id=row.channel_id,
        agent_id=row.agent_id,
        user_id=row.user_id,
        content=row.content,
        type=row.type,
        metadata=dict(row.metadata or {}),
        created_at=row.created_at,
        thread_id=row.thread_id,
        edited_at=row.edited_at,
        deleted=row.deleted_at is not None,
        reply_count=row.reply_count or 0,
        last_reply_at=row.last_reply_at,
        participant_ids=tuple(row.participant_ids or ()),
        reactions=tuple(
            Reaction(emoji=r["emoji"], user_ids=tuple(r["userIds"])) for r in row.reactions or ()
        ),
    )


SHOWN = or_(messages.c.deleted_at.is_(None), messages.c.reply_count > 0)
"""What history shows: every message but the deleted ones, whose emptied rows stay (so that
paging `before` one still works) and show only as a thread's head."""


def _timeline(
    channel_id: str | BindParameter[str], thread_id: str | BindParameter[str] | None
) -> ColumnElement[bool]:
    """A channel's main timeline (no thread replies), or one thread: its root, then replies."""
    if thread_id is None:
        return and_(messages.c.channel_id == channel_id, messages.c.thread_id.is_(None), SHOWN)
    return and_(
        messages.c.channel_id == channel_id,
        or_(messages.c.id == thread_id, messages.c.thread_id == thread_id),
        SHOWN,
    )


async def insert_message(conn: AsyncConnection, message: Message) -> None:
    """Every message but a person's post goes through here, so every upload URL a channel sees
    is recorded and its readers' counts move (see `read_states`)."""
    await conn.run_sync(insert_row, message)
    await conn.run_sync(_count_new, message)
    await record_references(conn, message)


def _count_new(conn: Connection, message: Message) -> None:
    people = None if message.thread_id is None else thread_people(conn, message.thread_id)
    count_new(conn, message, people)


_INSERTED = (
    "id",
    "channel_id",
    "agent_id",
    "user_id",
    "content",
    "type",
    "metadata",
    "created_at",
    "thread_id",
)
_INSERT = Precompiled(insert(messages).values({name: bindparam(name) for name in _INSERTED}))


def insert_row(conn: Connection, message: Message) -> None:
    """The message's row alone: for messages that name no upload (see `names_uploads`)."""
    _INSERT.run(
        conn,
        {
            "id": message.id,
            "channel_id": message.channel_id,
            "agent_id": message.agent_id,
            "user_id": message.user_id,
            "content": message.content,
            "type": message.type,
            "metadata": message.metadata,
            "created_at": message.created_at,
            "thread_id": message.thread_id,
        },
    )


def get(conn: Connection, message_id: str) -> Message | None:
    row = conn.execute(select(messages).where(messages.c.id == message_id)).first()
    return from_row(row) if row else None


def page(
    conn: Connection,
    channel_id: str,
    limit: int,
    before: str | None = None,
    thread_id: str | None = None,
) -> list[Message]:
    """The `limit` newest messages older than `before`, oldest first; ids sort by creation."""
    query = select(messages).where(_timeline(channel_id, thread_id))
    if before is not None:
        query = query.where(messages.c.id < before)
    rows = conn.execute(query.order_by(messages.c.id.desc()).limit(limit))
    return [from_row(r) for r in reversed(list(rows))]


def page_ids(
    conn: Connection,
    channel_id: str,
    limit: int,
    before: str | None,
    thread_id: str | None = None,
    after: str | None = None,
) -> list[str]:
    """The ids of `page`, from the index alone; with `after`, the `limit` oldest messages newer
    than it instead (and older than `before` if given too: a gap filled from its start),
    oldest first all the same."""
    values: dict[str, Any] = {"channel_id": channel_id, "limit": limit}
    for name, value in (("thread_id", thread_id), ("before", before), ("after", after)):
        if value is not None:
            values[name] = value
    query = _page_ids_query(thread_id is not None, before is not None, after is not None)
    ids = query.column(conn, values)
    return ids if after is not None else ids[::-1]


@functools.cache
def _page_ids_query(thread: bool, before: bool, after: bool) -> Precompiled:
    """`page_ids`' statement for one shape, built once and run with its values bound: building
    it (and its cache key) for every page cost more than running it (docs/NOTES.md, "Hot
    paths and caches")."""
    query = select(messages.c.id).where(
        _timeline(bindparam("channel_id"), bindparam("thread_id") if thread else None)
    )
    if before:
        query = query.where(messages.c.id < bindparam("before"))
    if after:
        query = query.where(messages.c.id > bindparam("after")).order_by(messages.c.id.asc())
    else:
        query = query.order_by(messages.c.id.desc())
    return Precompiled(query.limit(bindparam("limit", type_=Integer)))


UNREAD_TYPES = ("text", "image", "file")
"""What a person reads as a message: tool calls and their results fold into replies."""


def unread(
    conn: Connection, after: dict[str, str | None], reader_id: str, cap: int
) -> dict[str, tuple[int, str | None]]:
    """Per channel: how many messages of its main timeline newer than `after[channel]` others
    wrote and did not delete (counted up to `cap`; none when `after` is None), and the newest
    such message's id. Thread replies are read in their thread."""
    counted: dict[str, tuple[int, str | None]] = {}
    shown = (messages.c.thread_id.is_(None), messages.c.deleted_at.is_(None))
    for channel_id, since in after.items():
        newest = conn.execute(
            select(func.max(messages.c.id)).where(messages.c.channel_id == channel_id, *shown)
        ).scalar_one_or_none()
        count = 0
        if since is not None and newest is not None and newest > since:
            newer = (
                select(messages.c.id)
                .where(
                    messages.c.channel_id == channel_id,
                    messages.c.id > since,
                    messages.c.type.in_(UNREAD_TYPES),
                    or_(messages.c.user_id.is_(None), messages.c.user_id != reader_id),
                    *shown,
                )
                .limit(cap)
                .subquery()
            )
            count = conn.execute(select(func.count()).select_from(newer)).scalar_one()
        counted[channel_id] = (count, newest)
    return counted


_BY_IDS = select(messages).where(messages.c.id.in_(bindparam("ids", expanding=True)))
_CHANNEL_OF = select(messages.c.channel_id).where(messages.c.id == bindparam("id"))


def by_ids(conn: Connection, ids: list[str]) -> list[Message]:
    return [from_row(r) for r in conn.execute(_BY_IDS, {"ids": ids})]


def channel_of(conn: Connection, message_id: str) -> str | None:
    return conn.execute(_CHANNEL_OF, {"id": message_id}).scalar_one_or_none()


def idempotent_message_id(conn: Connection, user_id: str, key: str, since: datetime) -> str | None:
    row = conn.execute(
        select(idempotency_keys.c.message_id).where(
            idempotency_keys.c.user_id == user_id,
            idempotency_keys.c.key == key,
            idempotency_keys.c.created_at >= since,
        )
    ).first()
    return row.message_id if row else None


def remember_idempotency_key(
    conn: Connection, user_id: str, key: str, message_id: str, now: datetime
) -> None:
    """Bind a key to a message, replacing an expired binding of the same key."""
    conn.execute(
        delete(idempotency_keys).where(
            idempotency_keys.c.user_id == user_id, idempotency_keys.c.key == key
        )
    )
    conn.execute(
        insert(idempotency_keys).values(
            user_id=user_id, key=key, message_id=message_id, created_at=now
        )
    )


async def forget_idempotency_keys_before(conn: AsyncConnection, cutoff: datetime) -> None:
    await conn.execute(delete(idempotency_keys).where(idempotency_keys.c.created_at < cutoff))


async def create_draft(
    conn: AsyncConnection,
    message: Message,
    now: datetime,
    node_id: str,
    trace_context: str | None = None,
) -> None:
    """The reply's first checkpoint, leased to the node that runs it, with its span's
    `traceparent` for the node that may store it as interrupted."""
    await conn.execute(
        insert(reply_drafts).values(
            message_id=message.id,
            channel_id=message.channel_id,
            agent_id=message.agent_id,
            content=message.content,
            metadata=message.metadata,
            started_at=message.created_at or now,
            updated_at=now,
            node_id=node_id,
            thread_id=message.thread_id,
            trace_context=trace_context,
        )
    )


async def checkpoint_draft(
    conn: AsyncConnection, message: Message, now: datetime, node_id: str
) -> bool:
    """Refresh the checkpoint of a reply in flight, so a crash loses little; answers False if
    the draft is no longer this node's (another node took it over as interrupted)."""
    found = await conn.execute(
        update(reply_drafts)
        .where(reply_drafts.c.message_id == message.id, reply_drafts.c.node_id == node_id)
        .values(content=message.content, metadata=message.metadata, updated_at=now)
    )
    return bool(found.rowcount)


async def delete_draft(conn: AsyncConnection, message_id: str) -> bool:
    """Answers whether there was a draft to delete."""
    found = await conn.execute(delete(reply_drafts).where(reply_drafts.c.message_id == message_id))
    return bool(found.rowcount)


async def take_drafts(
    conn: AsyncConnection, which: ColumnElement[bool] | None = None
) -> list[tuple[Message, str | None]]:
    """Delete the drafts `which` selects (all if None) and answer them as messages, each with
    the `traceparent` of the reply's span."""
    query = select(reply_drafts).order_by(reply_drafts.c.message_id)
    if which is not None:
        query = query.where(which)
    rows = list(await conn.execute(query))
    if rows:
        ids = [r.message_id for r in rows]
        await conn.execute(delete(reply_drafts).where(reply_drafts.c.message_id.in_(ids)))
    return [
        (
            Message(
                id=r.message_id,
                channel_id=r.channel_id,
                agent_id=r.agent_id,
                user_id=None,
                content=r.content,
                type="text",
                metadata=dict(r.metadata or {}),
                created_at=r.started_at,
                thread_id=r.thread_id,
            ),
            r.trace_context,
        )
        for r in rows
    ]


async def replace_message(conn: AsyncConnection, message: Message) -> None:
    """Overwrite a stored message's text and metadata (a reply stored as interrupted by
    another node, finished after all by its own)."""
    await conn.execute(
        update(messages)
        .where(messages.c.id == message.id)
        .values(content=message.content, metadata=message.metadata)
    )
    await record_references(conn, message)


async def draft_channel(conn: AsyncConnection, message_id: str) -> str | None:
    """The channel of a reply still being written, or None if it is not in flight."""
    row = (
        await conn.execute(
            select(reply_drafts.c.channel_id).where(reply_drafts.c.message_id == message_id)
        )
    ).first()
    return row.channel_id if row else None


async def get_many(conn: AsyncConnection, ids: list[str]) -> dict[str, Message]:
    if not ids:
        return {}
    rows = await conn.execute(select(messages).where(messages.c.id.in_(ids)))
    return {r.id: from_row(r) for r in rows}
