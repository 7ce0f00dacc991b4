"""The database handle: concurrent reads, serialized writes, and events only after commit.

On SQLite every write goes through one connection opened with `BEGIN IMMEDIATE`, so writers
queue in-process instead of failing with "database is locked"; reads use their own pool and
see a consistent snapshot thanks to WAL. On PostgreSQL both roles share one pool.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

log = logging.getLogger(__name__)

AfterCommit = Callable[[], Awaitable[None]]


@dataclass
class Tx:
    """A write transaction; `on_commit` callbacks run once the data is durable."""

    conn: AsyncConnection
    _after: list[AfterCommit] = field(default_factory=list)

    def on_commit(self, callback: AfterCommit) -> None:
        self._after.append(callback)


def _configure_sqlite(engine: AsyncEngine, begin: str) -> None:
    """WAL for concurrent readers; transactions begun by us, so writers can take the lock first."""

    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        for pragma in (
            "journal_mode=WAL",
            "synchronous=NORMAL",
            "foreign_keys=ON",
            "busy_timeout=10000",
        ):
            cur.execute(f"PRAGMA {pragma}")
        cur.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            self._writer = create_async_engine(url, pool_size=1, max_overflow=0)
            self._reader = create_async_engine(url, pool_size=8, max_overflow=8)
            _configure_sqlite(self._writer, "BEGIN IMMEDIATE")
            _configure_sqlite(self._reader, "BEGIN")
        else:
            self._writer = create_async_engine(url, pool_size=10, max_overflow=10)
            self._reader = self._writer
        self._write_lock = asyncio.Lock() if self.is_sqlite else None

    @property
    def engine(self) -> AsyncEngine:
        return self._writer

    @property
    def engines(self) -> list[AsyncEngine]:
        return [self._writer] if self._reader is self._writer else [self._writer, self._reader]

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self._reader.connect() as conn:
            yield conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        """One transaction; on success its `on_commit` callbacks run, in order, after commit."""
        if self._write_lock is not None:
            await self._write_lock.acquire()
        try:
            async with self._writer.begin() as conn:
                tx = Tx(conn)
                yield tx
        finally:
            if self._write_lock is not None:
                self._write_lock.release()
        for callback in tx._after:
            await callback()

    async def dispose(self) -> None:
        await self._writer.dispose()
        if self._reader is not self._writer:
            await self._reader.dispose()
