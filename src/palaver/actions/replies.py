"""Controlling replies in flight."""

from __future__ import annotations

from palaver.actions.channels import visible
from palaver.bus.base import CONTROL
from palaver.domain import User
from palaver.errors import Conflict, NotFound
from palaver.services import Services
from palaver.store import messages


async def cancel(svc: Services, user: User, message_id: str) -> None:
    """Stop a streaming reply wherever it runs; its partial text is kept, marked cancelled."""
    async with svc.db.read() as conn:
        channel_id = await messages.draft_channel(conn, message_id)
        stored = await messages.get(conn, message_id) if channel_id is None else None
    if channel_id is None:
        if stored is not None:
            await visible(svc, user, stored.channel_id)
            raise Conflict("This reply is not streaming any more.")
        raise NotFound(f"No reply has the id '{message_id}'.")
    await visible(svc, user, channel_id)
    await svc.bus.publish(CONTROL, {"type": "cancel_reply", "messageId": message_id})
