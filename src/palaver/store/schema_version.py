"""Where the schema stands, read without Alembic.

A start on a database already at this version's newest migration needs only one read of
`alembic_version`; Alembic (a third of a second of imports, and the scripts' own) is loaded
only when there is something to apply (`palaver.store.migrate`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, text

VERSIONS = Path(__file__).parent / "migrations" / "versions"
_REVISION = re.compile(r'^revision(?:\s*:[^=\n]+)?\s*=\s*"([^"]+)"', re.MULTILINE)
_DOWN = re.compile(r"^down_revision(?:\s*:[^=\n]+)?\s*=\s*(.+)$", re.MULTILINE)


def head() -> str | None:
    """The one revision that no migration follows, from the scripts' `revision` and
    `down_revision` lines; None when they do not name exactly one (then Alembic decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in VERSIONS.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        found = _REVISION.search(source)
        if found is None:
            continue
        revisions.add(found.group(1))
        down = _DOWN.search(source)
        if down is not None:
            parents.update(re.findall(r"[\"']([^\"']+)[\"']", down.group(1)))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def current(conn: Connection) -> str | None:
    """The revision the database is at; None without a schema (or with several heads)."""
    if not conn.dialect.has_table(conn, "alembic_version"):
        return None
    rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return str(rows[0]) if len(rows) == 1 else None


@contextmanager
def quiet_alembic() -> Iterator[None]:
    """Alembic's INFO lines off while it is imported or runs (its plugins, its context, each
    migration); its warnings and errors still go through."""
    logger = logging.getLogger("alembic")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)
