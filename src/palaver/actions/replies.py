"""Controlling replies in flight."""

from __future__ import annotations

from palaver.actions.channels import can_see
from palaver.bus.base import CONTROL
from palaver.domain import User
from palaver.errors import Conflict, NotFound
from palaver.services import Services
from palaver.store import channels, messages


async def cancel(svc: Services, user: User, message_id: str) -> None:
    """Stop a streaming reply wherever it runs; its partial text is kept, marked cancelled.

    A reply in a channel the caller cannot see answers as an unknown one does, so the answer
    tells nothing of the channel, nor whether the reply exists or still streams."""
    async with svc.db.read() as conn:
        channel_id = await messages.draft_channel(conn, message_id)
        stored = await conn.run_sync(messages.get, message_id) if channel_id is None else None
        where = channel_id or (stored.channel_id if stored is not None else None)
        channel = await channels.get(conn, where) if where is not None else None
    if channel is None or not can_see(user, channel):
        raise NotFound(f"No reply has the id '{message_id}'.")
    if channel_id is None:
        raise Conflict("This reply is not streaming any more.")
    await svc.bus.publish(CONTROL, {"type": "cancel_reply", "messageId": message_id})
