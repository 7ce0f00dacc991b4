"""Guests: people the owner invites with a key of their own."""

from __future__ import annotations

from palaver.auth.secrets import hash_token, new_guest_key
from palaver.bus.base import CONTROL
from palaver.domain import User
from palaver.errors import Invalid, NotFound
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import schedules, users
from palaver.store.audit import CHANGED, Actor
from palaver.store.tables.base import utcnow


async def create(svc: Services, name: str, by: Actor) -> tuple[User, str]:
    """Answer the guest and its key; the key is shown this once and kept only as a hash."""
    name = name.strip()
    if not name or len(name) > 128:
        raise Invalid("A guest's name must be 1 to 128 characters.")
    key = new_guest_key()
    guest = User(id=new_id("user"), name=name, role="guest", created_at=utcnow())
    async with svc.db.write() as tx:
        await users.create(tx.conn, guest, key_hash=hash_token(key))
        await by.add(tx.conn, "guest.create", guest.id, {"name": guest.name, "key": CHANGED})
    return guest, key


async def list_guests(svc: Services) -> list[User]:
    async with svc.db.read() as conn:
        return await users.guests(conn)


async def delete(svc: Services, guest_id: str, by: Actor) -> None:
    """The guest goes with its sessions and the schedules agents made in answer to it; its
    messages stay."""
    async with svc.db.write() as tx:
        guest = await users.get(tx.conn, guest_id)
        if guest is None or guest.role != "guest":
            raise NotFound(f"No guest has the id '{guest_id}'.")
        await schedules.delete_created_by(tx.conn, guest_id)
        hashes = await users.delete_user(tx.conn, guest_id)
        await by.add(tx.conn, "guest.delete", guest_id, {"name": guest.name})
        tx.on_commit(
            lambda: svc.bus.publish(
                CONTROL, {"type": "revoke", "tokenHashes": hashes, "userIds": [guest_id]}
            )
        )
