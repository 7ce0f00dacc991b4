"""A person's read marker in a channel, moved from any of their devices and told to all."""

from __future__ import annotations

from sqlalchemy import Connection

from palaver.actions.channels import visible
from palaver.bus.base import user_topic
from palaver.domain import User
from palaver.errors import NotFound
from palaver.services import Services
from palaver.store import messages, read_states
from palaver.store.read_states import ReadState


async def mark_read(svc: Services, user: User, channel_id: str, message_id: str) -> ReadState:
    """Move the marker forward to `message_id` (a message of this channel, deleted or not);
    when it moved, every socket of the person hears `read_updated`, so that another device's
    badge clears at once."""
    await visible(svc, user, channel_id)

    def write(conn: Connection) -> tuple[ReadState, bool]:
        if messages.channel_of(conn, message_id) != channel_id:
            raise NotFound(f"No message has the id '{message_id}' in this channel.")
        return read_states.mark_read(conn, user.id, channel_id, message_id)

    state, moved = await svc.db.write_unit(write)
    if moved:
        await tell_read_states(svc, channel_id, {user.id: state})
    return state


async def tell_read_states(svc: Services, channel_id: str, states: dict[str, ReadState]) -> None:
    """Each person's sockets hear `read_updated` with their state in the channel: after their
    marker moved, or after a deletion counted their unread messages again."""
    for user_id, state in states.items():
        data = {"channelId": channel_id, **state.as_json()}
        await svc.bus.publish(user_topic(user_id), {"type": "read_updated", "data": data})
