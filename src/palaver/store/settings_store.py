"""The one settings row."""

from __future__ import annotations

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.settings import Settings
from palaver.store.tables.base import utcnow
from palaver.store.tables.core import settings as settings_table


async def load(conn: AsyncConnection) -> Settings:
    row = (
        await conn.execute(select(settings_table.c.data).where(settings_table.c.id == 1))
    ).first()
    return Settings.model_validate(row.data) if row else Settings()


async def save(conn: AsyncConnection, value: Settings) -> None:
    data = value.model_dump(mode="json")
    found = await conn.execute(
        update(settings_table)
        .where(settings_table.c.id == 1)
        .values(data=data, updated_at=utcnow())
    )
    if found.rowcount == 0:
        await conn.execute(insert(settings_table).values(id=1, data=data, updated_at=utcnow()))
