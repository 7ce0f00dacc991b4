"""The people of a channel, so that a reader can put a name on each message."""

from __future__ import annotations

from palaver.actions.channels import visible
from palaver.domain import User
from palaver.services import Services
from palaver.store import users


async def of_channel(svc: Services, user: User, channel_id: str) -> list[User]:
    """Its human members (names and roles only travel; keys never leave the store)."""
    channel = await visible(svc, user, channel_id)
    async with svc.db.read() as conn:
        return await users.get_many(conn, channel.member_ids)
