"""What every node must hear after a stored message changed: its JSON is forgotten (through a
control event on the bus), and its channel is told (`message_updated`, `message_deleted`).
Shared by the actions that change messages and by the agents whose replies extend a thread."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from palaver.bus.base import CONTROL, channel_topic
from palaver.domain import Message
from palaver.services import Services
from palaver.store import message_changes
from palaver.store.tables.base import utcnow


async def changed(svc: Services, message: Message, deleted: bool = False) -> None:
    """After the commit of a change to a stored message: every node forgets its JSON (this
    one at once), then its channel hears `message_updated`, or `message_deleted`."""
    await forget_everywhere(svc, message.id, deleted)
    if deleted:
        data = {"id": message.id, "channelId": message.channel_id, "threadId": message.thread_id}
        event: dict[str, Any] = {"type": "message_deleted", "data": data}
    else:
        event = {"type": "message_updated", "data": message.as_json()}
    await svc.bus.publish(channel_topic(message.channel_id), event)


async def forget_everywhere(svc: Services, message_id: str, deleted: bool = False) -> None:
    """Every node forgets the message's JSON (this one at once); with `deleted`, every node
    also stops the replies being written to it."""
    svc.caches.messages.forget(message_id)
    control: dict[str, Any] = {"type": "message_changed", "messageIds": [message_id]}
    if deleted:
        control["deleted"] = True
    await svc.bus.publish(CONTROL, control)


async def react_as(svc: Services, message: Message, who: str, emoji: str, add: bool) -> None:
    """The reaction of `who` (a person or an agent) on a message known to be visible to them:
    one write unit, then every node forgets the message's JSON and its channel hears
    `reaction_added` or `reaction_removed`; nothing when nothing changed."""
    now = utcnow()

    def write(conn: Connection) -> Message | None:
        if add:
            return message_changes.react(conn, message.id, who, emoji, now)
        return message_changes.unreact(conn, message.id, who, emoji)

    after = await svc.db.write_unit(write)
    if after is None:
        return
    await forget_everywhere(svc, message.id)
    data = {"messageId": message.id, "channelId": message.channel_id, "emoji": emoji, "userId": who}
    kind = "reaction_added" if add else "reaction_removed"
    await svc.bus.publish(channel_topic(message.channel_id), {"type": kind, "data": data})
