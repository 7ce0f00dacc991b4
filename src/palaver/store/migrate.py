"""Bring the schema up to date at start-up, keeping every row an older version wrote."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Connection

from palaver.store.db import Database

MIGRATIONS = Path(__file__).parent / "migrations"


def _alembic(connection: Connection) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


async def upgrade(db: Database, revision: str = "head") -> None:
    async with db.engine.connect() as conn:
        await conn.run_sync(lambda c: command.upgrade(_alembic(c), revision))
        await conn.commit()


async def downgrade(db: Database, revision: str) -> None:
    async with db.engine.connect() as conn:
        await conn.run_sync(lambda c: command.downgrade(_alembic(c), revision))
        await conn.commit()
