"""Bring the schema up to date at start-up, keeping every row an older version wrote.

Migrations run on a plain synchronous connection in a worker thread: Alembic reads its
scripts with blocking I/O, which must stay off the event loop.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Connection, create_engine

from palaver.store.urls import sync_url

MIGRATIONS = Path(__file__).parent / "migrations"


def _alembic(connection: Connection) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as conn:
            command.upgrade(_alembic(conn), revision)
    finally:
        engine.dispose()


def downgrade(url: str, revision: str) -> None:
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as conn:
            command.downgrade(_alembic(conn), revision)
    finally:
        engine.dispose()
