"""Reading a channel out, front to back, a page at a time: its main timeline in id order with
each thread's replies after their root, who is named in it, and the uploads its messages name.

Plain functions over a sync connection, each one read unit: an export of any length holds one
page in memory, never the channel."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Connection, Text, and_, cast, or_, select

from palaver.domain import Message
from palaver.store.messages import SHOWN, from_row
from palaver.store.tables.core import agents, message_reactions, messages, users
from palaver.store.uploads import referring_text, upload_paths

ROOTS_PAGE = 200
REPLIES_PAGE = 500


def roots_after(conn: Connection, channel_id: str, after: str | None) -> list[Message]:
    """The next page of the main timeline (what history shows of it), oldest first."""
    query = select(messages).where(
        messages.c.channel_id == channel_id, messages.c.thread_id.is_(None), SHOWN
    )
    if after is not None:
        query = query.where(messages.c.id > after)
    return [from_row(r) for r in conn.execute(query.order_by(messages.c.id).limit(ROOTS_PAGE))]


def replies_after(
    conn: Connection, channel_id: str, root_ids: list[str], after: tuple[str, str] | None
) -> list[Message]:
    """The next page of the replies to `root_ids`, by thread then id (the roots' own order, as
    a root's id is its thread's), from after `(thread, id)`."""
    query = select(messages).where(
        messages.c.channel_id == channel_id, messages.c.thread_id.in_(root_ids), SHOWN
    )
    if after is not None:
        thread, last = after
        query = query.where(
            or_(
                messages.c.thread_id > thread,
                and_(messages.c.thread_id == thread, messages.c.id > last),
            )
        )
    rows = conn.execute(query.order_by(messages.c.thread_id, messages.c.id).limit(REPLIES_PAGE))
    return [from_row(r) for r in rows]


def named_ids(conn: Connection, channel_id: str) -> set[str]:
    """The people and agents the channel's shown messages were written or reacted by."""
    shown = and_(messages.c.channel_id == channel_id, SHOWN)
    found: set[str] = set()
    for column in (messages.c.user_id, messages.c.agent_id):
        found.update(
            conn.execute(select(column).where(shown, column.is_not(None)).distinct()).scalars()
        )
    reactors = (
        select(message_reactions.c.user_id)
        .join(messages, messages.c.id == message_reactions.c.message_id)
        .where(shown)
        .distinct()
    )
    found.update(conn.execute(reactors).scalars())
    return found


def names(
    conn: Connection,
    ids: Collection[str],
    people: Collection[str] | None,
    agent_ids: Collection[str] | None,
) -> dict[str, tuple[str, str | None]]:
    """Per id: its kind (`person` or `agent`) and its name where the reader may know it: only
    the people in `people` and the agents in `agent_ids` (None: all of them)."""
    wanted = sorted(ids)
    known: dict[str, tuple[str, str | None]] = {}
    for row in conn.execute(select(users.c.id, users.c.name).where(users.c.id.in_(wanted))):
        known[row.id] = ("person", row.name if people is None or row.id in people else None)
    for row in conn.execute(select(agents.c.id, agents.c.name).where(agents.c.id.in_(wanted))):
        known[row.id] = ("agent", row.name if agent_ids is None or row.id in agent_ids else None)
    for missing in set(wanted) - set(known):
        known[missing] = ("agent" if missing.startswith("agent_") else "person", None)
    return known


def upload_paths_after(
    conn: Connection, channel_id: str, after: str | None
) -> tuple[set[str], str | None]:
    """The uploads named by the next page of the channel's shown messages that may name one;
    answers them and where the page ended (None past the last)."""
    pattern = "%/uploads/%"
    query = select(messages.c.id, messages.c.content, messages.c.metadata).where(
        messages.c.channel_id == channel_id,
        SHOWN,
        or_(
            messages.c.content.like(pattern),
            cast(messages.c.metadata, Text).like(pattern),
        ),
    )
    if after is not None:
        query = query.where(messages.c.id > after)
    rows = conn.execute(query.order_by(messages.c.id).limit(REPLIES_PAGE)).all()
    found: set[str] = set()
    for row in rows:
        message = Message(
            id=row.id,
            channel_id=channel_id,
            agent_id=None,
            user_id=None,
            content=row.content,
            type="text",
            metadata=dict(row.metadata or {}),
        )
        found |= upload_paths(referring_text(message))
    return found, (rows[-1].id if len(rows) == REPLIES_PAGE else None)
