"""Changing a stored message: editing it, deleting it, reacting to it.

Each change is one write unit, then (after the commit) an event on its channel and a control
event that makes every node forget the message's JSON (`message_events.changed`)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from palaver.actions.channels import visible
from palaver.actions.erasing import erase_soon, remove_upload_files
from palaver.actions.messages import check_content
from palaver.actions.reading import tell_read_states
from palaver.domain import Channel, Message, User
from palaver.emoji_rule import one_emoji
from palaver.errors import Forbidden, Invalid, NotFound
from palaver.mention_events import MENTIONS, tell_mentioned, with_mentions
from palaver.message_events import changed, react_as
from palaver.services import Services
from palaver.store import message_changes, messages, read_states
from palaver.store.audit import Actor
from palaver.store.read_states import ReadState, mentioned_people
from palaver.store.tables.base import utcnow

log = logging.getLogger(__name__)


async def _readable(svc: Services, user: User, message_id: str) -> tuple[Message, Channel]:
    """The message and its channel, or NotFound: a hidden message answers as a missing one."""
    found = await svc.db.read_unit(lambda conn: messages.get(conn, message_id))
    missing = NotFound(f"No message has the id '{message_id}'.")
    if found is None or found.deleted:
        raise missing
    try:
        channel = await visible(svc, user, found.channel_id)
    except NotFound:
        raise missing from None
    return found, channel


def _is_authors(user: User, message: Message) -> bool:
    return message.agent_id is None and message.user_id == user.id


async def edit(svc: Services, user: User, message_id: str, content: str) -> Message:
    """A person's own text message gets new content; the old one is kept as a version. An
    agent the edit newly mentions is handed the message as if it were new."""
    message, channel = await _readable(svc, user, message_id)
    if not _is_authors(user, message) or message.type != "text":
        raise Forbidden("Only the author of a text message may edit it.")
    check_content(svc, content, "text", None)
    if "@" in content:
        async with svc.db.read() as conn:
            metadata = await with_mentions(conn, channel, message.metadata, content)
    else:
        metadata = {k: v for k, v in message.metadata.items() if k != MENTIONS}
    now = utcnow()

    def write(conn: Connection) -> tuple[Message, str, dict[str, ReadState]]:
        edited, before = message_changes.edit(conn, message_id, content, now, metadata)
        return edited, before, read_states.remention(conn, edited, mentioned_people(message))

    edited, before, states = await svc.db.write_unit(write)
    await changed(svc, edited)
    named_before = set(mentioned_people(message))
    await tell_mentioned(
        svc, edited, [u for u in mentioned_people(edited) if u not in named_before]
    )
    await tell_read_states(svc, channel.id, states)
    await svc.dispatcher.on_edited(edited, channel, before)
    return edited


async def versions(svc: Services, user: User, message_id: str) -> list[dict[str, Any]]:
    await _readable(svc, user, message_id)
    return await svc.db.read_unit(lambda conn: message_changes.versions(conn, message_id))


async def delete(svc: Services, user: User, message_id: str, by: Actor) -> None:
    """The author deletes their own message, the owner any; the text is erased (see
    `Database.erase_freed`), an upload only it named is removed from disk, and every node
    stops the replies being written to it (on the control event, which this node hears too).
    The owner deleting someone else's message (an agent's reply included) is audited, in the
    erasure's own unit: where it was and whose it was, never its text."""
    message, _ = await _readable(svc, user, message_id)
    if not (user.is_owner or _is_authors(user, message)):
        raise Forbidden("Only the author of a message, or the owner, may delete it.")
    now = utcnow()
    audited = None if _is_authors(user, message) else by

    def write(conn: Connection) -> tuple[Message, Message | None, list[str], dict[str, ReadState]]:
        erased = _erase(conn, message_id, now)
        if audited is not None:
            author = message.agent_id or message.user_id
            changes = {"channelId": message.channel_id, "authorId": author}
            audited.record(conn, "message.delete", message_id, changes)
        return erased

    erased, root, orphans, states = await svc.db.write_unit(write)
    await changed(svc, erased, deleted=True)
    if root is not None:
        await changed(svc, root)
    await tell_read_states(svc, erased.channel_id, states)
    await remove_upload_files(svc, orphans)
    erase_soon(svc)


def _erase(
    conn: Connection, message_id: str, now: datetime
) -> tuple[Message, Message | None, list[str], dict[str, ReadState]]:
    """The erasure, and the new counts of the people who had not read the message yet."""
    erased, root, orphans = message_changes.erase(conn, message_id, now)
    read_states.forget_mentions(conn, message_id)
    behind = read_states.behind(conn, erased.channel_id, message_id)
    return erased, root, orphans, read_states.recount(conn, erased.channel_id, behind)


async def react(svc: Services, user: User, message_id: str, emoji: str, add: bool) -> None:
    """Add (or with `add` False remove) the caller's reaction; doing it twice changes nothing."""
    if not one_emoji(emoji):
        raise Invalid("The emoji must be a single emoji.", field="emoji")
    message, _ = await _readable(svc, user, message_id)
    await react_as(svc, message, user.id, emoji, add)
