"""What happens to a message after it is posted: edits (with the versions they replace),
deletion, reactions, and the summary a thread's root carries.

Plain functions over a sync connection, run inside the write unit of the change, so that the
summaries kept on the message's row (reactions, a root's thread) never disagree with the rows
they summarize; a history page then reads them with the message itself.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Text, cast, delete, func, insert, or_, select, update

from palaver.domain import Message, Reaction
from palaver.errors import Invalid, NotFound
from palaver.store.messages import from_row, get
from palaver.store.tables.core import message_reactions, message_versions, messages, reply_drafts
from palaver.store.tables.uploads import upload_references, uploads
from palaver.store.uploads import referring_text, upload_paths

MAX_DISTINCT_REACTIONS = 50
TOOL_RECORDS = ("tool_call", "tool_result")
"""Records of an agent's tool use, stored beside its reply: part of it, not replies."""


def existing(conn: Connection, message_id: str) -> Message:
    """The message, unless it does not exist or was deleted."""
    message = get(conn, message_id)
    if message is None or message.deleted:
        raise NotFound(f"No message has the id '{message_id}'.")
    return message


def _locked(conn: Connection, message_id: str) -> Message:
    """`existing`, its row locked first on PostgreSQL: of two changes to one message at once
    on two nodes, the second waits, then loses its serializable race and runs again on the
    first's result (rather than tripping on a key the first just inserted). SQLite's single
    writer needs no lock."""
    row = conn.execute(
        select(messages).where(messages.c.id == message_id).with_for_update()
    ).first()
    if row is None or row.deleted_at is not None:
        raise NotFound(f"No message has the id '{message_id}'.")
    return from_row(row)


def edit(
    conn: Connection,
    message_id: str,
    content: str,
    now: datetime,
    metadata: dict[str, Any] | None = None,
) -> tuple[Message, str]:
    """Keep the current content as a version and put `content` (and `metadata`, when given) in
    its place; answers the edited message and the content it had."""
    before = _locked(conn, message_id)
    count = conn.execute(
        select(func.count()).where(message_versions.c.message_id == message_id)
    ).scalar_one()
    conn.execute(
        insert(message_versions).values(
            message_id=message_id,
            version=count,
            content=before.content,
            edited_at=before.edited_at,
        )
    )
    values: dict[str, Any] = {"content": content, "edited_at": now}
    if metadata is not None:
        values["metadata"] = metadata
    conn.execute(update(messages).where(messages.c.id == message_id).values(values))
    after = get(conn, message_id)
    assert after is not None
    return after, before.content


def versions(conn: Connection, message_id: str) -> list[dict[str, Any]]:
    """Every content the message has had, oldest first, the current one last."""
    current = existing(conn, message_id)
    rows = conn.execute(
        select(message_versions.c.content, message_versions.c.edited_at)
        .where(message_versions.c.message_id == message_id)
        .order_by(message_versions.c.version)
    )
    earlier = [(r.content, r.edited_at) for r in rows]
    return [
        {"content": content, "editedAt": edited_at}
        for content, edited_at in [*earlier, (current.content, current.edited_at)]
    ]


def erase(
    conn: Connection, message_id: str, now: datetime
) -> tuple[Message, Message | None, list[str]]:
    """Empty the message and drop its versions and reactions. Its row stays, without its text,
    so that paging `before` it still works and a thread keeps its head; history shows it only
    while it heads replies. Answers the message as it was, its thread's root as it is now (None
    outside a thread), and the uploads it alone named, whose records are gone (their files are
    the caller's to remove after the commit)."""
    message = _locked(conn, message_id)
    texts = [referring_text(message)]
    texts += conn.execute(
        select(message_versions.c.content).where(message_versions.c.message_id == message_id)
    ).scalars()
    orphans = sorted(
        path
        for path in set().union(*(upload_paths(t) for t in texts if "/uploads/" in t))
        if not _named_elsewhere(conn, path, message_id)
    )
    if orphans:
        conn.execute(delete(upload_references).where(upload_references.c.path.in_(orphans)))
        conn.execute(delete(uploads).where(uploads.c.path.in_(orphans)))
    conn.execute(delete(message_versions).where(message_versions.c.message_id == message_id))
    conn.execute(delete(message_reactions).where(message_reactions.c.message_id == message_id))
    conn.execute(
        update(messages)
        .where(messages.c.id == message_id)
        .values(content="", metadata={}, reactions=None, edited_at=None, deleted_at=now)
    )
    root = None
    if message.thread_id is not None:
        root = resummarize_thread(conn, message.thread_id)
    return message, root, orphans


def _named_elsewhere(conn: Connection, path: str, message_id: str) -> bool:
    """Whether another message (or an earlier version of one, or a reply being written) may
    name the upload. Its URL is matched by the longest run of characters a URL never encodes,
    so a doubt keeps the file."""
    month, _, name = path.partition("/")
    fragment = max(re.findall(r"[A-Za-z0-9._~-]+", name) or [""], key=len)
    if not fragment:
        return True
    pattern = f"%/uploads/{month}/%{fragment}%"
    other = conn.execute(
        select(upload_references.c.path)
        .where(upload_references.c.path == path, upload_references.c.message_id != message_id)
        .limit(1)
    ).first()
    if other is not None:
        return True
    for table in (messages, reply_drafts):
        found = conn.execute(
            select(table.c.content)
            .where(
                or_(table.c.content.like(pattern), cast(table.c.metadata, Text).like(pattern)),
                *([messages.c.id != message_id] if table is messages else []),
            )
            .limit(1)
        ).first()
        if found is not None:
            return True
    return (
        conn.execute(
            select(message_versions.c.message_id)
            .where(
                message_versions.c.content.like(pattern),
                message_versions.c.message_id != message_id,
            )
            .limit(1)
        ).first()
        is not None
    )


def resummarize_thread(conn: Connection, root_id: str) -> Message | None:
    """Recompute a root's summary from its replies still there."""
    rows = conn.execute(
        select(messages.c.user_id, messages.c.agent_id, messages.c.created_at)
        .where(
            messages.c.thread_id == root_id,
            messages.c.deleted_at.is_(None),
            messages.c.type.not_in(TOOL_RECORDS),
        )
        .order_by(messages.c.id)
    ).all()
    participants: list[str] = []
    for row in rows:
        who = row.user_id or row.agent_id
        if who is not None and who not in participants:
            participants.append(who)
    conn.execute(
        update(messages)
        .where(messages.c.id == root_id)
        .values(
            reply_count=len(rows),
            last_reply_at=rows[-1].created_at if rows else None,
            participant_ids=participants or None,
        )
    )
    return get(conn, root_id)


def thread_root(conn: Connection, channel_id: str, thread_id: str) -> Message:
    """The root a reply to `thread_id` attaches to (a reply to a reply goes to its root)."""
    target = get(conn, thread_id)
    if target is None or target.channel_id != channel_id:
        raise Invalid("The threadId must be the id of a message in the same channel.")
    if target.thread_id is not None:
        root = get(conn, target.thread_id)
        assert root is not None
        target = root
    if target.deleted and not target.reply_count:
        raise Invalid("That message was deleted: a thread cannot start under it.")
    return target


def count_reply(conn: Connection, root: Message, reply: Message) -> Message:
    """Add a new reply to its root's summary: one update, in the post's own unit; answers the
    root as it now is."""
    who = reply.user_id or reply.agent_id
    participants = list(root.participant_ids)
    if who is not None and who not in participants:
        participants.append(who)
    conn.execute(
        update(messages)
        .where(messages.c.id == root.id)
        .values(
            reply_count=messages.c.reply_count + 1,
            last_reply_at=reply.created_at,
            participant_ids=participants,
        )
    )
    return replace(
        root,
        reply_count=root.reply_count + 1,
        last_reply_at=reply.created_at,
        participant_ids=tuple(participants),
    )


def react(
    conn: Connection, message_id: str, user_id: str, emoji: str, now: datetime
) -> Message | None:
    """Add a reaction; answers the message with it, or None if it was there already."""
    message = _locked(conn, message_id)
    if any(user_id in r.user_ids for r in message.reactions if r.emoji == emoji):
        return None
    known = {r.emoji for r in message.reactions}
    if emoji not in known and len(known) >= MAX_DISTINCT_REACTIONS:
        raise Invalid(
            f"A message holds at most {MAX_DISTINCT_REACTIONS} different emoji.", field="emoji"
        )
    conn.execute(
        insert(message_reactions).values(
            message_id=message_id, user_id=user_id, emoji=emoji, created_at=now
        )
    )
    return _resummarize_reactions(conn, message_id, message.reactions)


def unreact(conn: Connection, message_id: str, user_id: str, emoji: str) -> Message | None:
    """Remove a reaction; answers the message without it, or None if it was not there."""
    message = _locked(conn, message_id)
    gone = conn.execute(
        delete(message_reactions).where(
            message_reactions.c.message_id == message_id,
            message_reactions.c.user_id == user_id,
            message_reactions.c.emoji == emoji,
        )
    )
    if not gone.rowcount:
        return None
    return _resummarize_reactions(conn, message_id, message.reactions)


def _resummarize_reactions(
    conn: Connection, message_id: str, before: tuple[Reaction, ...]
) -> Message:
    rows = conn.execute(
        select(message_reactions.c.emoji, message_reactions.c.user_id)
        .where(message_reactions.c.message_id == message_id)
        .order_by(message_reactions.c.created_at, message_reactions.c.user_id)
    )
    # An emoji keeps its place while anyone still reacts with it, so chips do not jump.
    summary: dict[str, list[str]] = {r.emoji: [] for r in before}
    for row in rows:
        summary.setdefault(row.emoji, []).append(row.user_id)
    conn.execute(
        update(messages)
        .where(messages.c.id == message_id)
        .values(reactions=[{"emoji": e, "userIds": u} for e, u in summary.items() if u] or None)
    )
    message = get(conn, message_id)
    assert message is not None
    return message
