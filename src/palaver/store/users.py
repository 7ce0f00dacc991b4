"""Users: the owner and the guests, and the sessions that log them in."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import User
from palaver.store.tables.core import meta, sessions, users


def _user(row: Any) -> User:
    return User(id=row.id, name=row.name, role=row.role, created_at=row.created_at)


async def get(conn: AsyncConnection, user_id: str) -> User | None:
    row = (await conn.execute(select(users).where(users.c.id == user_id))).first()
    return _user(row) if row else None


async def owner(conn: AsyncConnection) -> User | None:
    row = (await conn.execute(select(users).where(users.c.role == "owner"))).first()
    return _user(row) if row else None


async def by_key_hash(conn: AsyncConnection, key_hash: str) -> tuple[User, str] | None:
    row = (await conn.execute(select(users).where(users.c.key_hash == key_hash))).first()
    return (_user(row), row.key_hash) if row else None


async def guests(conn: AsyncConnection) -> list[User]:
    rows = await conn.execute(
        select(users).where(users.c.role == "guest").order_by(users.c.created_at, users.c.id)
    )
    return [_user(r) for r in rows]


async def existing_ids(conn: AsyncConnection, ids: list[str]) -> set[str]:
    if not ids:
        return set()
    rows = await conn.execute(select(users.c.id).where(users.c.id.in_(ids)))
    return {r.id for r in rows}


async def create(conn: AsyncConnection, user: User, key_hash: str | None) -> None:
    await conn.execute(
        insert(users).values(
            id=user.id,
            name=user.name,
            role=user.role,
            key_hash=key_hash,
            created_at=user.created_at,
        )
    )


async def delete_user(conn: AsyncConnection, user_id: str) -> list[str]:
    """Delete a user; answers the hashes of the sessions that died with it."""
    hashes = [
        r.token_hash
        for r in await conn.execute(
            select(sessions.c.token_hash).where(sessions.c.user_id == user_id)
        )
    ]
    await conn.execute(delete(sessions).where(sessions.c.user_id == user_id))
    await conn.execute(delete(users).where(users.c.id == user_id))
    return hashes


async def get_meta(conn: AsyncConnection, key: str) -> str | None:
    row = (await conn.execute(select(meta.c.value).where(meta.c.key == key))).first()
    return row.value if row else None


async def set_meta(conn: AsyncConnection, key: str, value: str) -> None:
    found = await conn.execute(update(meta).where(meta.c.key == key).values(value=value))
    if found.rowcount == 0:
        await conn.execute(insert(meta).values(key=key, value=value))


async def create_session(
    conn: AsyncConnection, token_hash: str, user_id: str, owner_key_tag: str | None, now: datetime
) -> None:
    await conn.execute(
        insert(sessions).values(
            token_hash=token_hash,
            user_id=user_id,
            owner_key_tag=owner_key_tag,
            created_at=now,
            last_used_at=now,
        )
    )


async def session(conn: AsyncConnection, token_hash: str) -> Any | None:
    return (await conn.execute(select(sessions).where(sessions.c.token_hash == token_hash))).first()


async def touch_session(conn: AsyncConnection, token_hash: str, now: datetime) -> None:
    await conn.execute(
        update(sessions).where(sessions.c.token_hash == token_hash).values(last_used_at=now)
    )


async def delete_session(conn: AsyncConnection, token_hash: str) -> None:
    await conn.execute(delete(sessions).where(sessions.c.token_hash == token_hash))


async def delete_owner_sessions_not_tagged(conn: AsyncConnection, tag: str) -> None:
    await conn.execute(
        delete(sessions).where(
            sessions.c.owner_key_tag.is_not(None), sessions.c.owner_key_tag != tag
        )
    )


async def delete_idle_sessions(conn: AsyncConnection, older_than: datetime) -> None:
    await conn.execute(delete(sessions).where(sessions.c.last_used_at < older_than))


async def get_many(conn: AsyncConnection, ids: list[str]) -> list[User]:
    if not ids:
        return []
    return [_user(r) for r in await conn.execute(select(users).where(users.c.id.in_(ids)))]
