"""The database handle: concurrent reads, serialized writes, and events only after commit.

On SQLite every write goes through one connection opened with `BEGIN IMMEDIATE`, so writers
queue in-process instead of failing with "database is locked"; reads use their own pool and
see a consistent snapshot thanks to WAL. On PostgreSQL both roles share one pool.

The hot paths (a post, a history page) run as *units*: one plain function over a sync
connection, executed whole in one hop. On SQLite that hop goes to a dedicated thread (a
statement through aiosqlite costs four hops and a GIL hand-over each), and concurrent write
units share one transaction and one commit (group commit). On
PostgreSQL the same function runs through `AsyncConnection.run_sync`, with the same promise
kept by other means: see `write`, `write_unit` and docs/SCALING.md.
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from palaver.store import search_backlog
from palaver.store.faults import log_failure, report_unreachable
from palaver.store.urls import app_url, asyncpg_connect_args

log = logging.getLogger(__name__)

AfterCommit = Callable[[], Awaitable[None]]
T = TypeVar("T")
Unit = Callable[[Connection], T]
"""A whole read or write, as one plain function over a sync connection."""

READ_THREADS = 4
SERIAL_ATTEMPTS = 8
"""Runs of a PostgreSQL write unit that keeps losing races, before its error stands."""
_RETRY_STATES = frozenset({"40001", "40P01"})
"""serialization_failure and deadlock_detected: the transaction may simply run again."""
_ONE_WRITER = text("SELECT pg_advisory_xact_lock(7701, 0)")
"""The PostgreSQL lock `Database.write` transactions take; (7701, n) keys are this module's."""
_ONE_RETRIER = text("SELECT pg_advisory_xact_lock(7701, 1)")
"""Held by a write unit that runs again after losing a race, for the length of that run."""
_ORDERED = text("SELECT pg_advisory_xact_lock(7702, hashtext(:key))")
"""Held while a write unit or `Database.write` given an `order` key commits (a channel's posts)."""
_ORDERED_NOW = text("SELECT pg_try_advisory_xact_lock(7702, hashtext(:key))")
CONTENDED_SECONDS = 2.0
"""How long after an order lock was found held by another node a unit of that order waits for
it first, instead of trying it inside its transaction and starting again when it is held."""
CONTENDED_KEYS = 1024
"""Order keys remembered as contended at most (they are forgotten all at once past this)."""
ORDERED_AT_ONCE = 6
"""Ordered write units in flight at once in one process on PostgreSQL: each holds two of the
pool's 20 connections (its order's lock, its transaction), and units that had taken every
connection for their locks would wait on each other for ever."""
GROUP_COMMIT_MAX = 64
"""Write units sharing one transaction at most, so that one commit never waits on too many."""
SEARCH_MERGE_PAGES = 64
"""Pages one step of the search index's merge writes (about 20 ms at 100,000 messages): what a
post waits for at most when it comes during an erasure."""


@dataclass
class Tx:
    """A write transaction; `on_commit` callbacks run once the data is durable."""

    conn: AsyncConnection
    _after: list[AfterCommit] = field(default_factory=list)

    def on_commit(self, callback: AfterCommit) -> None:
        self._after.append(callback)


def _configure_sqlite(engine: Engine, begin: str | None) -> None:
    """WAL for concurrent readers; transactions begun by us, so writers can take the lock first
    (by `begin` on SQLAlchemy's `begin` event, or, where None, by the caller)."""

    @event.listens_for(engine, "connect")
    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        for pragma in (
            "journal_mode=WAL",
            "synchronous=NORMAL",
            "foreign_keys=ON",
            # A deleted message's text must not stay in freed pages (see `erase_freed`).
            "secure_delete=ON",
            "busy_timeout=10000",
        ):
            cur.execute(f"PRAGMA {pragma}")
        cur.close()

    if begin is None:
        return

    @event.listens_for(engine, "begin")
    def on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)


class Database:
    def __init__(self, url: str) -> None:
        url = app_url(url)
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self._in_order: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._units: _SqliteUnits | None = None
        if self.is_sqlite:
            self._writer = create_async_engine(url, pool_size=1, max_overflow=0)
            self._reader = create_async_engine(url, pool_size=8, max_overflow=8)
            _configure_sqlite(self._writer.sync_engine, "BEGIN IMMEDIATE")
            _configure_sqlite(self._reader.sync_engine, "BEGIN")
            self._units = _SqliteUnits(url)
        else:
            # No `pool_pre_ping` (a round trip per checkout, docs/FAULTS.md): the first
            # statement that meets a connection the restart ended fails (503) and invalidates
            # the whole pool, so every later checkout connects afresh.
            self._writer = create_async_engine(
                url, pool_size=10, max_overflow=10, connect_args=asyncpg_connect_args(url)
            )
            report_unreachable(self._writer.sync_engine)
            self._reader = self._writer
        self._write_lock = asyncio.Lock()
        """Taken before a write transaction's connection, so that on PostgreSQL only one of
        this process's connections waits on the cluster's writer lock at a time, and a body
        that reads on another connection always finds one in the pool."""
        self._retry_lock = asyncio.Lock()
        """One retrying unit per process waits on the cluster's retriers' lock at a time."""
        self._ordering = asyncio.Semaphore(ORDERED_AT_ONCE)
        """Taken by a unit waiting for its order's lock on a connection of its own."""
        self._contended: dict[str, float] = {}
        """When each order key was last found held by another node (the loop's time)."""
        self._pending: list[tuple[Unit[Any], asyncio.Future[Any], float]] = []
        """Write units waiting for their batch, each with the loop's time when it came."""
        self._committer: asyncio.Task[None] | None = None
        self.on_hop: Callable[[], None] | None = None
        """Called for each hop to a unit's thread; the cost tests count them."""
        self.on_retry: Callable[[], None] | None = None
        """Called each time a PostgreSQL write unit runs again after losing a race (tests)."""
        self.on_batch: Callable[[int, list[float]], None] | None = None
        """Told each SQLite write batch's size and how long each of its units waited (metrics)."""
        self._erasing: asyncio.Task[bool] | None = None
        self._erase_again = False
        self._search_catch_up: asyncio.Task[None] | None = None
        self._search_indexed_to = 0
        """The newest rowid this process has indexed the search backlog up to."""

    @property
    def engine(self) -> AsyncEngine:
        return self._writer

    @property
    def engines(self) -> list[Engine]:
        """Every engine that sends statements, as the sync engines events listen on."""
        engines = [self._writer.sync_engine]
        if self._reader is not self._writer:
            engines.append(self._reader.sync_engine)
        if self._units is not None:
            engines += [self._units.writer, self._units.reader]
        return engines

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self._reader.connect() as conn:
            yield conn

    @asynccontextmanager
    async def write(self, order: str | None = None) -> AsyncIterator[Tx]:
        """One transaction; on success its `on_commit` callbacks run, in order, after commit.

        These transactions run one at a time, as on SQLite's single writer: their bodies check,
        then write (a limit, then an insert), and cannot be run again after losing a race. On
        PostgreSQL a transaction-level advisory lock does it, for every node at once; each
        statement after it sees what the transaction before it committed (READ COMMITTED).
        `order` is as for `write_unit`; its lock comes second, before anything else."""
        await self._write_lock.acquire()
        try:
            async with self._writer.begin() as conn:
                if not self.is_sqlite:
                    await conn.execute(_ONE_WRITER)
                    if order is not None:
                        await conn.execute(_ORDERED, {"key": order})
                tx = Tx(conn)
                yield tx
        finally:
            self._write_lock.release()
        for callback in tx._after:
            await callback()

    async def read_unit(self, unit: Unit[T]) -> T:
        """Run `unit` in one read transaction, in one hop; it sees one snapshot throughout
        (WAL on SQLite, REPEATABLE READ on PostgreSQL)."""
        if self._units is None:
            async with self._reader.connect() as conn:
                snapshot = await conn.execution_options(isolation_level="REPEATABLE READ")
                async with snapshot.begin():
                    return await snapshot.run_sync(unit)
        if self.on_hop is not None:
            self.on_hop()
        return await asyncio.get_running_loop().run_in_executor(
            self._units.read_threads, self._units.read, unit
        )

    async def read_indexed(self, unit: Unit[T]) -> T:
        """`read_unit` for a search: on SQLite its snapshot finds in the search index every
        message committed before the call (see `palaver.store.search_backlog`): a backlog found
        in the first read is indexed, then `unit` runs again on a new snapshot."""
        if self._units is None:
            return await self.read_unit(unit)

        def unless_behind(conn: Connection) -> tuple[int | None, list[T]]:
            newest = search_backlog.newest_waiting(conn)
            return newest, [] if newest is not None else [unit(conn)]

        newest, found = await self.read_unit(unless_behind)
        if newest is None:
            return found[0]
        try:
            await self._index_search_up_to(newest)
        except DBAPIError as exc:
            # A full disk, a lock held too long: the search answers from what the index holds.
            log_failure(log, exc, "indexing new messages for a search failed")
        return await self.read_unit(unit)

    async def index_search_backlog(self) -> None:
        """Index every message committed so far (SQLite; after an import of many). One that
        fails is logged and left to the next search: what was written stays written."""
        if self._units is None:
            return
        try:
            newest = await self.read_unit(search_backlog.newest_waiting)
            if newest is not None:
                await self._index_search_up_to(newest)
        except DBAPIError as exc:
            log_failure(log, exc, "indexing new messages for search failed")

    async def _index_search_up_to(self, newest: int) -> None:
        """Index the backlog up to rowid `newest`, a step at a time on the writer thread
        (posts go between the steps); searches at the same time share one catch-up."""
        while self._search_indexed_to < newest:
            task = self._search_catch_up
            if task is None or task.done():
                task = self._search_catch_up = asyncio.create_task(self._catch_up(newest))
            await asyncio.shield(task)

    async def _catch_up(self, newest: int) -> None:
        assert self._units is not None
        units = self._units
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(units.write_thread, units.index_search_step, newest):
            pass
        self._search_indexed_to = max(self._search_indexed_to, newest)

    async def erase_freed(self, within: float) -> bool:
        """Make what was just deleted leave the files: on SQLite, the search index is merged
        (see `_SqliteUnits.merge_search_index`), freed pages are zeroed (`secure_delete`) and
        their earlier images leave the write-ahead log when it is checkpointed and truncated,
        which a reader's open snapshot can hold back, so it is tried again for up to `within`
        seconds. PostgreSQL needs a VACUUM of the table for the same (docs/SCALING.md,
        "Erasing deleted messages"). Deletions close together share one erasure: one that
        comes while an erasure runs makes it go round again. Answers whether it is done."""
        if self._units is None:
            return True
        self._erase_again = True
        if self._erasing is None or self._erasing.done():
            self._erasing = asyncio.get_running_loop().create_task(self._erase(within))
        return await asyncio.shield(self._erasing)

    async def _erase(self, within: float) -> bool:
        """`_erase_steps`; one that fails (a checkpoint or a merge on a full disk) is logged and
        leaves the erasure to the next deletion's, or to SQLite's own checkpoints."""
        try:
            return await self._erase_steps(within)
        except Exception as exc:
            log_failure(log, exc, "erasing what a deletion freed failed")
            return False

    async def _erase_steps(self, within: float) -> bool:
        assert self._units is not None
        units = self._units
        loop = asyncio.get_running_loop()
        done = False
        while self._erase_again:
            self._erase_again = False
            pages = await loop.run_in_executor(units.write_thread, units.search_index_pages)
            # Enough steps to rewrite the index as it was once (twice, to spare): the merge
            # that meets the deletion's marker is done by then, though posts meanwhile keep
            # adding segments, which would keep a merge-until-one-segment going for ever.
            for _ in range(2 * pages // SEARCH_MERGE_PAGES + 4):
                if not await loop.run_in_executor(units.write_thread, units.merge_search_index):
                    break
            deadline = loop.time() + within
            while True:
                done = await loop.run_in_executor(units.write_thread, units.checkpoint)
                if done or loop.time() > deadline:
                    break
                await asyncio.sleep(0.1)
        if not done:
            log.warning("the write-ahead log could not be emptied after a deletion")
        return done

    @asynccontextmanager
    async def in_order(self, key: str) -> AsyncIterator[None]:
        """Writes under one `key` and what follows them (their events) one at a time in this
        process. SQLite's group commit already answers them in commit order; on PostgreSQL
        each write is its own round trip, and an earlier commit's answer may come back after a
        later one's, so its event would go out second. Across nodes a write's `order` still
        orders the commits."""
        if self.is_sqlite:
            yield
            return
        lock = self._in_order.get(key)
        if lock is None:
            lock = self._in_order[key] = asyncio.Lock()
        async with lock:
            yield

    async def write_unit(self, unit: Unit[T], order: str | None = None) -> T:
        """Run `unit` in a write transaction; returns once its data is committed.

        On SQLite the units waiting at the same time commit together, in the order they came;
        should one raise, the others are run again alone (see `_SqliteUnits.write`). On
        PostgreSQL each runs SERIALIZABLE, again from the start when it lost a race (see
        `_serializable`): either way a unit sees no other write between its reads and its own.

        Units given the same `order` key commit one at a time, on every node, as SQLite's single
        writer commits every write: a post takes its id and time inside its unit, so that in a
        channel id order is commit order. On PostgreSQL the unit's first statement takes the
        key's advisory lock if it is free (in one process `in_order` sees to it that it mostly
        is). If another node holds it, the unit waits for it in a transaction of its own and
        then begins again: waiting inside the unit, it would wait after its snapshot (the first
        statement takes it) and not see the commit it waited for, so it lost the race to it
        every time, ran again, and with enough posts at once ran out of attempts (a 500). For
        `CONTENDED_SECONDS` after that, units of the key wait first without trying."""
        if self._units is None:
            if order is None:
                return await self._serializable(unit)
            loop = asyncio.get_running_loop()
            if loop.time() - self._contended.get(order, -CONTENDED_SECONDS) >= CONTENDED_SECONDS:
                try:
                    return await self._serializable(_first_in_line(unit, order))
                except _Taken:
                    if len(self._contended) >= CONTENDED_KEYS:
                        self._contended.clear()
                    self._contended[order] = loop.time()
            async with self._ordering, self._writer.begin() as holder:
                await holder.execute(_ORDERED, {"key": order})
                return await self._serializable(unit)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._pending.append((unit, done, loop.time()))
        if self._committer is None:
            self._committer = asyncio.create_task(self._commit_pending())
        return await done

    async def _serializable(self, unit: Unit[T]) -> T:
        """Run `unit` as if no other write ran at the same time, as SQLite's single writer
        does: PostgreSQL aborts a SERIALIZABLE transaction that raced another (two retries of
        a post checking the same idempotency key), and the unit runs again, seeing the
        other's data. Units are written to be safe to run twice (see `_SqliteUnits.write`).

        A unit that lost once runs again only while it holds the retriers' lock, one at a time
        across every node, taken on a connection of its own before its transaction starts (so
        that its snapshot follows the previous holder's commit): many units racing for the same
        rows would otherwise keep aborting each other until their attempts ran out."""
        try:
            return await self._run_serializable(unit)
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) not in _RETRY_STATES:
                raise
        attempt = 2
        while True:
            if self.on_retry is not None:
                self.on_retry()
            try:
                async with self._retry_lock, self._writer.begin() as lock_conn:
                    await lock_conn.execute(_ONE_RETRIER)
                    return await self._run_serializable(unit)
            except DBAPIError as exc:
                lost_race = getattr(exc.orig, "sqlstate", None) in _RETRY_STATES
                if not lost_race or attempt == SERIAL_ATTEMPTS:
                    raise
            await asyncio.sleep(random.uniform(0, 0.005 * 2**attempt))  # noqa: S311
            attempt += 1

    async def _run_serializable(self, unit: Unit[T]) -> T:
        async with self._writer.connect() as conn:
            serial = await conn.execution_options(isolation_level="SERIALIZABLE")
            async with serial.begin():
                return await serial.run_sync(unit)

    async def _commit_pending(self) -> None:
        assert self._units is not None
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                async with self._write_lock:
                    batch = self._pending[:GROUP_COMMIT_MAX]
                    del self._pending[:GROUP_COMMIT_MAX]
                    if self.on_hop is not None:
                        self.on_hop()
                    if self.on_batch is not None:
                        now = loop.time()
                        self.on_batch(len(batch), [now - came for _, _, came in batch])
                    try:
                        outcomes = await loop.run_in_executor(
                            self._units.write_thread,
                            self._units.write,
                            [unit for unit, _, _ in batch],
                        )
                    except BaseException as exc:
                        for _, done, _ in batch:
                            if not done.done():
                                done.set_exception(exc)
                        if not isinstance(exc, Exception):
                            raise
                        continue
                for (_, done, _), (ok, value) in zip(batch, outcomes, strict=True):
                    if done.done():
                        continue
                    if ok:
                        done.set_result(value)
                    else:
                        done.set_exception(value)
                if self._units.backlog_due:
                    self._units.backlog_due = False
                    await self._index_step_after_batch()
        finally:
            self._committer = None

    async def _index_step_after_batch(self) -> None:
        """One step of the search backlog, once a batch is answered; one that fails (a full
        disk) is logged and left to the next step or the next search."""
        assert self._units is not None
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._units.write_thread, self._units.index_search_step)
        except Exception as exc:
            log_failure(log, exc, "indexing new messages for search failed")

    async def dispose(self) -> None:
        await self._writer.dispose()
        if self._reader is not self._writer:
            await self._reader.dispose()
        if self._units is not None:
            await asyncio.to_thread(self._units.close)


class _Taken(Exception):
    """Another transaction holds the unit's order lock."""


def _first_in_line(unit: Unit[T], key: str) -> Unit[T]:
    """`unit`, run only once it holds the order lock of `key`, which must be free."""

    def run(conn: Connection) -> T:
        if not conn.execute(_ORDERED_NOW, {"key": key}).scalar():
            raise _Taken
        return unit(conn)

    return run


@contextmanager
def _begun(engine: Engine, begin: str) -> Iterator[Connection]:
    """A connection in a transaction that `begin` opened, committed at the end (rolled back on
    an exception). Sent here rather than by a listener of SQLAlchemy's `begin` event: any such
    listener makes every statement on the engine dispatch events, which cost a history page
    more than its query did."""
    with engine.connect() as conn, conn.begin():
        conn.exec_driver_sql(begin)
        yield conn


class _SqliteUnits:
    """Sync connections on threads of their own: one writer thread, a few reader threads."""

    def __init__(self, url: str) -> None:
        sync_url = url.replace("sqlite+aiosqlite", "sqlite", 1)
        args = {"check_same_thread": False}
        self.writer = create_engine(sync_url, pool_size=1, max_overflow=0, connect_args=args)
        self.reader = create_engine(
            sync_url, pool_size=READ_THREADS, max_overflow=0, connect_args=args
        )
        _configure_sqlite(self.writer, None)
        _configure_sqlite(self.reader, None)
        self.write_thread = ThreadPoolExecutor(1, thread_name_prefix="palaver-db-write")
        self._since_indexed = 0
        """Write units run since the search backlog was last indexed (on the write thread)."""
        self.backlog_due = False
        """Set once `search_backlog.BATCH` units ran: `Database` then indexes a step, after
        answering their batch."""
        self.read_threads = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="palaver-db-read")

    def read(self, unit: Unit[T]) -> T:
        with _begun(self.reader, "BEGIN") as conn:
            return unit(conn)

    def write(self, units: list[Unit[Any]]) -> list[tuple[bool, Any]]:
        """All units in one transaction. If one raises, the transaction is rolled back and the
        others run again one transaction each, so a unit must be safe to run twice (nothing it
        did in the rolled-back transaction is kept). Every `search_backlog.BATCH` units it sets
        `backlog_due`."""
        self._since_indexed += len(units)
        if self._since_indexed >= search_backlog.BATCH:
            self._since_indexed = 0
            self.backlog_due = True
        return self._write(units)

    def index_search_step(self, until: int | None = None) -> bool:
        """One step of `search_backlog.index_step`; answers whether rows are left."""
        with _begun(self.writer, "BEGIN IMMEDIATE") as conn:
            return search_backlog.index_step(conn, until=until)

    def _write(self, units: list[Unit[Any]]) -> list[tuple[bool, Any]]:
        try:
            with _begun(self.writer, "BEGIN IMMEDIATE") as conn:
                return [(True, unit(conn)) for unit in units]
        except Exception as exc:
            if len(units) == 1:
                return [(False, exc)]
        outcomes: list[tuple[bool, Any]] = []
        for unit in units:
            try:
                with _begun(self.writer, "BEGIN IMMEDIATE") as conn:
                    outcomes.append((True, unit(conn)))
            except Exception as exc:
                outcomes.append((False, exc))
        return outcomes

    def search_index_pages(self) -> int:
        with _begun(self.reader, "BEGIN") as conn:
            return int(conn.exec_driver_sql("SELECT count(*) FROM messages_fts_data").scalar_one())

    def merge_search_index(self) -> bool:
        """One step of merging the message search index (`messages_fts`) into one segment,
        which drops the words of deleted text: FTS5 keeps them (and the delete marker, which
        repeats them) in its segments until a merge meets both. A step writes at most
        `SEARCH_MERGE_PAGES` pages, so posts wait for one step, not for the whole index to be
        rewritten. Answers whether there was work (FTS5 counts two changes or more then).
        SQLite 3.42's `secure-delete` option would remove the words at the delete itself;
        the SQLite Python ships here may be older."""
        with _begun(self.writer, "BEGIN IMMEDIATE") as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            before: int = raw.total_changes
            conn.exec_driver_sql(
                "INSERT INTO messages_fts(messages_fts, rank) VALUES ('merge', ?)",
                (-SEARCH_MERGE_PAGES,),
            )
            after: int = raw.total_changes
            return after - before >= 2

    def checkpoint(self) -> bool:
        """Copy the write-ahead log into the database and truncate it; False while a reader
        keeps part of it in use."""
        raw = self.writer.raw_connection()
        try:
            cursor = raw.cursor()
            busy, _, _ = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            cursor.close()
        finally:
            raw.close()
        return not busy

    def close(self) -> None:
        self.write_thread.shutdown(wait=True)
        self.read_threads.shutdown(wait=True)
        self.writer.dispose()
        self.reader.dispose()
