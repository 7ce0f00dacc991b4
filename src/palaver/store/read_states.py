"""What each person has read of each channel, and the counts of what came after.

A message counts as unread for a person when it is newer than their marker, is text, an image
or a file, was not written by them and is not deleted, and is either on the channel's main
timeline or in a thread they take part in: they wrote its root or an earlier reply still
there, or the message mentions them. The counts are kept on the person's row: moved by each
new message in its own transaction (one statement, whatever the number of members), and
recounted from the messages when the marker moves or a message goes. Plain functions over a
sync connection, so that a post stays one unit of work.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    case,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)

from palaver.domain import Message
from palaver.store.precompiled import Precompiled
from palaver.store.tables.core import messages
from palaver.store.tables.reading import message_mentions, read_states

UNREAD_TYPES = ("text", "image", "file")
"""What a person reads as a message: tool calls and their results fold into replies."""


_BUMP = update(read_states).values(unread_count=read_states.c.unread_count + 1)
_BUMP_OTHERS = Precompiled(
    _BUMP.where(
        read_states.c.channel_id == bindparam("channel"),
        read_states.c.user_id != bindparam("author"),
    )
)
_BUMP_ALL = Precompiled(_BUMP.where(read_states.c.channel_id == bindparam("channel")))
"""A post on the main timeline that mentions no one, the common case, built and compiled
once: building the statement for each post (its expressions and their cache key) cost more
CPU than running it (issue 26)."""


@dataclass(frozen=True)
class ReadState:
    last_read_id: str | None
    unread_count: int
    mention_count: int

    def as_json(self) -> dict[str, Any]:
        return {
            "lastReadId": self.last_read_id,
            "unreadCount": self.unread_count,
            "mentionCount": self.mention_count,
        }


NOTHING_READ = ReadState(None, 0, 0)


def mentioned_people(message: Message) -> list[str]:
    """The people a message's metadata says it mentions (`mentions.userIds`, which the server
    sets), its author left out."""
    listed = message.metadata.get("mentions")
    if not isinstance(listed, dict):
        return []
    return [u for u in listed.get("userIds", ()) if isinstance(u, str) and u != message.user_id]


def thread_people(conn: Connection, thread_id: str) -> set[str]:
    """Who takes part in a thread before its next reply: the root's author and the authors of
    the replies still there (the root's summary)."""
    row = conn.execute(
        select(messages.c.user_id, messages.c.agent_id, messages.c.participant_ids).where(
            messages.c.id == thread_id
        )
    ).first()
    if row is None:
        return set()
    people = set(row.participant_ids or ())
    people.update(who for who in (row.user_id, row.agent_id) if who)
    return people


def count_new(conn: Connection, message: Message, thread_people: set[str] | None) -> None:
    """A new message moves its readers' counts: everyone's with a row in the channel but its
    author's, or, for a reply in a thread (`thread_people` not None), only those who take part;
    and records the people its metadata says it mentions (found among the members)."""
    channel_id, message_id, kind = message.channel_id, message.id, message.type
    author_id = message.user_id
    mentioned = mentioned_people(message)
    if mentioned:
        conn.execute(
            insert(message_mentions),
            [{"message_id": message_id, "user_id": u, "channel_id": channel_id} for u in mentioned],
        )
    if kind not in UNREAD_TYPES:
        return
    if thread_people is None and not mentioned:
        if author_id is None:
            _BUMP_ALL.run(conn, {"channel": channel_id})
        else:
            _BUMP_OTHERS.run(conn, {"channel": channel_id, "author": author_id})
        return
    readers: list[ColumnElement[bool]] = [read_states.c.channel_id == channel_id]
    if author_id is not None:
        readers.append(read_states.c.user_id != author_id)
    if thread_people is not None:
        readers.append(read_states.c.user_id.in_(sorted({*thread_people, *mentioned})))
    bump: dict[str, Any] = {"unread_count": read_states.c.unread_count + 1}
    if mentioned:
        bump["mention_count"] = read_states.c.mention_count + case(
            (read_states.c.user_id.in_(sorted(mentioned)), 1), else_=0
        )
    conn.execute(update(read_states).where(*readers).values(bump))


def _counted_for(user_id: str) -> ColumnElement[bool]:
    """The messages of `messages` that count as unread for the person (marker aside)."""
    earlier = messages.alias("earlier")
    takes_part = exists().where(
        or_(
            and_(earlier.c.id == messages.c.thread_id, earlier.c.user_id == user_id),
            and_(
                earlier.c.thread_id == messages.c.thread_id,
                earlier.c.id < messages.c.id,
                earlier.c.user_id == user_id,
                earlier.c.deleted_at.is_(None),
            ),
        )
    )
    mentioned = exists().where(
        message_mentions.c.message_id == messages.c.id, message_mentions.c.user_id == user_id
    )
    return and_(
        messages.c.type.in_(UNREAD_TYPES),
        messages.c.deleted_at.is_(None),
        or_(messages.c.user_id.is_(None), messages.c.user_id != user_id),
        or_(messages.c.thread_id.is_(None), takes_part, mentioned),
    )


def recount(conn: Connection, channel_id: str, user_ids: Iterable[str]) -> dict[str, ReadState]:
    """Count again, from the messages, what the people's markers leave unread; answers their
    new states (people without a row in the channel are left out)."""
    states: dict[str, ReadState] = {}
    for user_id in user_ids:
        marker = conn.execute(
            select(read_states.c.last_read_id).where(
                read_states.c.user_id == user_id, read_states.c.channel_id == channel_id
            )
        ).first()
        if marker is None:
            continue
        after = [messages.c.channel_id == channel_id]
        if marker.last_read_id is not None:
            after.append(messages.c.id > marker.last_read_id)
        unread = conn.execute(
            select(func.count()).select_from(messages).where(*after, _counted_for(user_id))
        ).scalar_one()
        mentions = conn.execute(
            select(func.count())
            .select_from(message_mentions)
            .join(messages, messages.c.id == message_mentions.c.message_id)
            .where(
                message_mentions.c.user_id == user_id,
                message_mentions.c.channel_id == channel_id,
                *after,
                messages.c.deleted_at.is_(None),
            )
        ).scalar_one()
        conn.execute(
            update(read_states)
            .where(read_states.c.user_id == user_id, read_states.c.channel_id == channel_id)
            .values(unread_count=unread, mention_count=mentions)
        )
        states[user_id] = ReadState(marker.last_read_id, unread, mentions)
    return states


def state_of(conn: Connection, user_id: str, channel_id: str) -> ReadState:
    row = conn.execute(
        select(
            read_states.c.last_read_id, read_states.c.unread_count, read_states.c.mention_count
        ).where(read_states.c.user_id == user_id, read_states.c.channel_id == channel_id)
    ).first()
    return ReadState(*row) if row else NOTHING_READ


def mark_read(
    conn: Connection, user_id: str, channel_id: str, message_id: str
) -> tuple[ReadState, bool]:
    """Move the person's marker forward to `message_id` and recount; answers the state and
    whether it moved (a marker never moves back: an older id changes nothing)."""
    moved = conn.execute(
        update(read_states)
        .where(
            read_states.c.user_id == user_id,
            read_states.c.channel_id == channel_id,
            or_(read_states.c.last_read_id.is_(None), read_states.c.last_read_id < message_id),
        )
        .values(last_read_id=message_id)
    ).rowcount
    if not moved:
        return state_of(conn, user_id, channel_id), False
    newer = conn.execute(
        select(messages.c.id)
        .where(messages.c.channel_id == channel_id, messages.c.id > message_id)
        .limit(1)
    ).first()
    if newer is None:
        conn.execute(
            update(read_states)
            .where(read_states.c.user_id == user_id, read_states.c.channel_id == channel_id)
            .values(unread_count=0, mention_count=0)
        )
        return ReadState(message_id, 0, 0), True
    return recount(conn, channel_id, [user_id])[user_id], True


def start_reading(conn: Connection, channel_id: str, user_ids: Collection[str]) -> str | None:
    """Rows for people who can now read the channel: what is there already counts as read
    (joining a channel does not make its whole history unread). Answers their marker."""
    if not user_ids:
        return None
    have = set(
        conn.execute(
            select(read_states.c.user_id).where(
                read_states.c.channel_id == channel_id, read_states.c.user_id.in_(user_ids)
            )
        ).scalars()
    )
    newest: str | None = conn.execute(
        select(func.max(messages.c.id)).where(messages.c.channel_id == channel_id)
    ).scalar_one_or_none()
    joining = sorted(set(user_ids) - have)
    if not joining:
        return newest
    conn.execute(
        insert(read_states),
        [{"user_id": u, "channel_id": channel_id, "last_read_id": newest} for u in joining],
    )
    return newest


def stop_reading(conn: Connection, channel_id: str, user_ids: Collection[str]) -> None:
    if user_ids:
        conn.execute(
            delete(read_states).where(
                read_states.c.channel_id == channel_id, read_states.c.user_id.in_(user_ids)
            )
        )


def behind(conn: Connection, channel_id: str, message_id: str) -> list[str]:
    """The people whose marker is before `message_id`: those whose counts it may be in."""
    rows = conn.execute(
        select(read_states.c.user_id).where(
            read_states.c.channel_id == channel_id,
            or_(read_states.c.last_read_id.is_(None), read_states.c.last_read_id < message_id),
        )
    )
    return list(rows.scalars())


def remention(conn: Connection, message: Message, before: Collection[str]) -> dict[str, ReadState]:
    """An edit changed whom `message` mentions (`before`: the people it named until now): its
    mention rows follow, and the counts of those gained or lost are counted again; answers
    their new states."""
    after = set(mentioned_people(message))
    gained, lost = after - set(before), set(before) - after
    if not gained and not lost:
        return {}
    if lost:
        conn.execute(
            delete(message_mentions).where(
                message_mentions.c.message_id == message.id,
                message_mentions.c.user_id.in_(sorted(lost)),
            )
        )
    if gained:
        conn.execute(
            insert(message_mentions),
            [
                {"message_id": message.id, "user_id": u, "channel_id": message.channel_id}
                for u in sorted(gained)
            ],
        )
    concerned = set(behind(conn, message.channel_id, message.id)) & (gained | lost)
    return recount(conn, message.channel_id, sorted(concerned))


def forget_mentions(conn: Connection, message_id: str) -> list[str]:
    """Drop a message's mentions (it was deleted or edited); answers who was mentioned."""
    who = list(
        conn.execute(
            select(message_mentions.c.user_id).where(message_mentions.c.message_id == message_id)
        ).scalars()
    )
    if who:
        conn.execute(delete(message_mentions).where(message_mentions.c.message_id == message_id))
    return who
