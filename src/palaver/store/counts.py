"""Counting what the database is asked, for the tests that guard the hot paths' cost.

Installed only when `PALAVER_DEBUG_HOOKS=1`, so production pays nothing: SQL statements as
SQLAlchemy sends them, and on SQLite the round trips to the database's threads: aiosqlite's
(each statement costs several: open a cursor, execute, fetch, close) and the units' (one per
unit of work, or per group commit).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import aiosqlite
from sqlalchemy import event

from palaver.store.db import Database


@dataclass
class DbCounts:
    statements: int = 0
    round_trips: int = 0
    retries: int = 0
    """PostgreSQL write units run again after losing a race."""

    def as_json(self) -> dict[str, int]:
        return {
            "statements": self.statements,
            "roundTrips": self.round_trips,
            "retries": self.retries,
        }


def install(db: Database) -> DbCounts:
    counts = DbCounts()

    def on_statement(*_: Any) -> None:
        counts.statements += 1
        if not db.is_sqlite:
            counts.round_trips += 1

    def on_hop() -> None:
        counts.round_trips += 1

    def on_retry() -> None:
        counts.retries += 1

    for engine in db.engines:
        event.listen(engine, "before_cursor_execute", on_statement)
    db.on_retry = on_retry
    if db.is_sqlite:
        _count_thread_hops(counts)
        db.on_hop = on_hop
    return counts


def _count_thread_hops(counts: DbCounts) -> None:
    original: Any = aiosqlite.Connection._execute

    @functools.wraps(original)
    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        counts.round_trips += 1
        return await original(self, fn, *args, **kwargs)

    aiosqlite.Connection._execute = counted  # type: ignore[method-assign]
