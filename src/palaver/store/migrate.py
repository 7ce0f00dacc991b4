"""Bring the schema up to date at start-up, keeping every row an older version wrote.

Migrations run on a plain synchronous connection in a worker thread: Alembic reads its
scripts with blocking I/O, which must stay off the event loop. Alembic's own INFO lines (two
of context, then one of several lines per migration) are held back; one line says where the
database stands.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine

from palaver.store.schema_version import quiet_alembic
from palaver.store.urls import sync_url

MIGRATIONS = Path(__file__).parent / "migrations"

log = logging.getLogger(__name__)


def _alembic(connection: Connection) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    _run(url, lambda cfg: command.upgrade(cfg, revision), "applied")


def upgrade_on(connection: Connection, revision: str = "head") -> None:
    """Bring the database of `connection` to `revision` inside the transaction it is in, which
    the caller commits or rolls back (`palaver restore` on PostgreSQL: schema and rows in one
    transaction)."""
    with quiet_alembic():
        command.upgrade(_alembic(connection), revision)


def revision_of(connection: Connection) -> str | None:
    """The revision the database of `connection` is at; None when it has no schema."""
    return MigrationContext.configure(connection).get_current_revision()


def is_known(revision: str) -> bool:
    """Whether this version of Palaver has the migration `revision` (an older or the same
    version made it), not a later one."""
    script = ScriptDirectory(str(MIGRATIONS))
    return any(found.revision == revision for found in script.walk_revisions())


def downgrade(url: str, revision: str) -> None:
    _run(url, lambda cfg: command.downgrade(cfg, revision), "reverted")


def _run(url: str, move: Callable[[AlembicConfig], None], verb: str) -> None:
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as conn, quiet_alembic():
            cfg = _alembic(conn)
            before = MigrationContext.configure(conn).get_current_revision()
            move(cfg)
            after = MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
    log.info("%s", _summary(before, after, verb))


def _summary(before: str | None, after: str | None, verb: str) -> str:
    """ "database at revision 0010, 10 migrations applied", or without the count if none ran."""
    if after is None:
        where = "database has no schema"
    else:
        where = f"database at revision {after.partition('_')[0]}"
    if before == after:
        return where
    script = ScriptDirectory(str(MIGRATIONS))
    upper, lower = (after, before) if verb == "applied" else (before, after)
    steps = sum(1 for _ in script.iterate_revisions(upper or "base", lower or "base"))
    return f"{where}, {steps} migration{'' if steps == 1 else 's'} {verb}"
