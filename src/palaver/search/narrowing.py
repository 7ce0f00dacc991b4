"""What every engine's search shares: the operators and visibility as SQL conditions on
`messages`, and the read of a page's messages with their channels."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Select, and_, func, null, or_, select

from palaver.domain import Message
from palaver.search.base import Viewer
from palaver.search.query import Query
from palaver.store.messages import from_row
from palaver.store.tables.core import agents, channel_members, channels, messages, users

INDEXED_TYPES = ("text", "image", "file")
"""What people read as messages; tool records fold into replies and are not searched."""
IMAGE_EXTENSIONS = ("png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "bmp")


@dataclass(frozen=True)
class Narrowing:
    conditions: list[ColumnElement[bool]]
    channels: list[str] | None
    """The channels the search is held to (the viewer's, `in:`), or None for every channel:
    an engine may narrow its text index by them too, beside the conditions."""


def narrowing(
    conn: Connection, query: Query, viewer: Viewer, member_of: Sequence[str] | None = None
) -> Narrowing:
    """The conditions every search holds to: not deleted, a kind people read, a channel the
    viewer reads (filtered in the query itself), and the query's operators.

    Names (`from:`, `in:`) and the viewer's channels are read first, in the search's own
    transaction, and go into the search as lists of ids: a planner then weighs them by the
    columns' statistics. As subqueries, PostgreSQL took `from:@Name word` for a common author
    and walked the whole table backwards when the word was rare (0.4 s at 1,000,000).
    `member_of`: the viewer's channels, when the caller read them in this transaction."""
    m = messages.c
    conditions: list[ColumnElement[bool]] = [m.deleted_at.is_(None), m.type.in_(INDEXED_TYPES)]
    scope: set[str] | None = None
    if not viewer.reads_everything:
        if member_of is None:
            members = select(channel_members.c.channel_id).where(
                channel_members.c.user_id == viewer.user_id
            )
            member_of = list(conn.execute(members).scalars())
        scope = set(member_of)
    if query.channels:
        names = [name.lower() for name in query.channels]
        named = select(channels.c.id).where(func.lower(channels.c.name).in_(names))
        found = set(conn.execute(named).scalars())
        scope = found if scope is None else scope & found
    if scope is not None:
        conditions.append(m.channel_id.in_(sorted(scope)))
    if query.authors:
        names = [name.lower() for name in query.authors]
        people = select(users.c.id).where(func.lower(users.c.name).in_(names))
        bots = select(agents.c.id).where(func.lower(agents.c.name).in_(names))
        conditions.append(
            or_(
                m.user_id.in_(list(conn.execute(people).scalars())),
                m.agent_id.in_(list(conn.execute(bots).scalars())),
            )
        )
    uploads = m.content.like("%/uploads/%")
    if "file" in query.has:
        conditions.append(or_(m.type.in_(("file", "image")), uploads))
    if "image" in query.has:
        images = or_(*(func.lower(m.content).like(f"%.{ext}%") for ext in IMAGE_EXTENSIONS))
        conditions.append(or_(m.type == "image", and_(uploads, images)))
    if "link" in query.has:
        conditions.append(or_(m.content.like("%http://%"), m.content.like("%https://%")))
    if query.in_thread:
        conditions.append(m.thread_id.is_not(None))
    if query.after is not None:
        conditions.append(m.created_at >= datetime.combine(query.after, time(), UTC))
    if query.before is not None:
        conditions.append(m.created_at < datetime.combine(query.before, time(), UTC))
    return Narrowing(conditions, None if scope is None else sorted(scope))


Loaded = dict[str, tuple[Message, str, str, str | None]]
"""A page's messages by id, each with its channel's name and type and its snippet (or None)."""


def page_statement(
    among: ColumnElement[bool], snippet: ColumnElement[str] | None = None
) -> Select[Any]:
    """The messages `among` picks with their channel's name and type, and `snippet` of each
    when given."""
    extra = snippet if snippet is not None else null()
    return (
        select(
            messages,
            channels.c.name.label("channel_name"),
            channels.c.type.label("kind"),
            extra.label("snippet"),
        )
        .join(channels, channels.c.id == messages.c.channel_id)
        .where(among)
    )


def loaded(rows: Iterable[Row[Any]]) -> Loaded:
    """`page_statement`'s rows as a page's messages."""
    return {row.id: (from_row(row), row.channel_name, row.kind, row.snippet) for row in rows}


def with_channels(conn: Connection, ids: list[str]) -> Loaded:
    """The messages of `ids` with their channel's name and type, in one read."""
    if not ids:
        return {}
    return loaded(conn.execute(page_statement(messages.c.id.in_(ids))))
