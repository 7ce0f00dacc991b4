"""The database handle promises the same on SQLite and PostgreSQL: a write sees no other write
between its reads and its own, and `on_commit` callbacks run after the commit and only then."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, String, Table, func, insert, select

from palaver.store.db import Database

metadata = MetaData()
rows = Table("rows", metadata, Column("n", Integer, primary_key=True), Column("tag", String))


@pytest.fixture(params=["sqlite", "postgresql"])
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    else:
        url = request.getfixturevalue("pg").new_database()
    database = Database(url)
    async with database.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    yield database
    await database.dispose()


def _next_number(conn: Connection) -> int:
    """Read the highest number, then store the next: wrong if another write slips between."""
    n = int(conn.execute(select(func.coalesce(func.max(rows.c.n), 0))).scalar_one()) + 1
    conn.execute(insert(rows).values(n=n, tag="unit"))
    return n


async def _numbers(db: Database) -> list[int]:
    return sorted(await db.read_unit(lambda c: list(c.execute(select(rows.c.n)).scalars())))


async def test_concurrent_write_units_that_read_then_write_never_collide(db: Database) -> None:
    answers = await asyncio.gather(*(db.write_unit(_next_number) for _ in range(40)))
    assert sorted(answers) == list(range(1, 41))
    assert await _numbers(db) == list(range(1, 41))


async def test_concurrent_write_transactions_that_check_a_limit_never_pass_it(
    db: Database,
) -> None:
    async def insert_below_five(n: int) -> bool:
        async with db.write() as tx:
            count = (await tx.conn.execute(select(func.count()).select_from(rows))).scalar_one()
            if count >= 5:
                return False
            await asyncio.sleep(0.001)  # what a slower check would give a racing writer
            await tx.conn.execute(insert(rows).values(n=n, tag="tx"))
            return True

    admitted = await asyncio.gather(*(insert_below_five(n) for n in range(1, 21)))
    assert sum(admitted) == 5
    assert len(await _numbers(db)) == 5


async def test_on_commit_callbacks_run_in_order_after_the_commit_and_never_after_a_rollback(
    db: Database,
) -> None:
    seen: list[tuple[str, list[int]]] = []

    def note(label: str) -> Callable[[], Awaitable[None]]:
        async def callback() -> None:
            seen.append((label, await _numbers(db)))

        return callback

    async with db.write() as tx:
        await tx.conn.execute(insert(rows).values(n=1, tag="kept"))
        tx.on_commit(note("first"))
        tx.on_commit(note("second"))
        assert seen == []
    assert seen == [("first", [1]), ("second", [1])]

    with pytest.raises(RuntimeError):
        async with db.write() as tx:
            await tx.conn.execute(insert(rows).values(n=2, tag="lost"))
            tx.on_commit(note("never"))
            raise RuntimeError("the body failed")
    assert [label for label, _ in seen] == ["first", "second"]
    assert await _numbers(db) == [1]
