"""The optional parts of the install a configuration needs, asked for before anything starts.

PostgreSQL's drivers and the Redis client are extras (`palaver[postgres]`, `palaver[redis]`):
a plain install runs on SQLite alone. A `DATABASE_URL` or `REDIS_URL` that needs an extra
which is not installed is refused in one line naming it, instead of a traceback at start-up.
"""

from __future__ import annotations

import importlib

from palaver.store.urls import backend

POSTGRES_APP = ("asyncpg", "psycopg")
"""What `palaver serve` and `reindex` use on PostgreSQL: asyncpg for the app, psycopg for the
migrations."""
POSTGRES_SYNC = ("psycopg",)
"""What `palaver migrate-db` writes with: psycopg alone."""


def missing_for_database(
    url: str | None, given_as: str = "DATABASE_URL", modules: tuple[str, ...] = POSTGRES_APP
) -> str | None:
    """Why `url` (named `given_as` in the answer) cannot be used by this install, or None:
    SQLite, no URL, or an unreadable one, which the URL's own check reports."""
    if not url:
        return None
    try:
        kind = backend(url)
    except ValueError:
        return None
    if kind != "postgresql":
        return None
    absent = [name for name in modules if not _importable(name)]
    if not absent:
        return None
    return (
        f"{given_as} names PostgreSQL, whose driver ({', '.join(absent)}) is not installed: "
        "pip install 'palaver[postgres]'"
    )


def missing_for_redis(url: str | None) -> str | None:
    """Why `REDIS_URL` cannot be used by this install, or None."""
    if not url or _importable("redis"):
        return None
    return "REDIS_URL is set, but the Redis client is not installed: pip install 'palaver[redis]'"


def _importable(name: str) -> bool:
    """Imported, not just found: a driver present but broken is as missing as an absent one."""
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
