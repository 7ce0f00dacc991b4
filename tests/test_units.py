"""Units of work on SQLite's own threads: one hop per unit, concurrent writes committed
together in the order they came, and one that fails leaves the others whole."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, String, Table, insert, select

from palaver.store.db import Database

metadata = MetaData()
rows = Table("rows", metadata, Column("n", Integer, primary_key=True), Column("tag", String))


@pytest.fixture
async def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'units.db'}")
    async with database.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    return database


def _insert(n: int) -> Callable[[Connection], int]:
    def unit(conn: Connection) -> int:
        if n == 13:
            raise ValueError("thirteen is refused")
        conn.execute(insert(rows).values(n=n, tag="x"))
        return n

    return unit


async def test_concurrent_writes_share_commits_and_a_failing_one_fails_alone(
    db: Database,
) -> None:
    hops = 0

    def count() -> None:
        nonlocal hops
        hops += 1

    db.on_hop = count
    results = await asyncio.gather(
        *(db.write_unit(_insert(n)) for n in range(200)),
        return_exceptions=True,
    )
    failed = [r for r in results if isinstance(r, Exception)]
    assert [str(f) for f in failed] == ["thirteen is refused"]
    assert [r for r in results if not isinstance(r, Exception)] == [
        n for n in range(200) if n != 13
    ]
    stored = await db.read_unit(lambda c: list(c.execute(select(rows.c.n)).scalars()))
    assert sorted(stored) == [n for n in range(200) if n != 13]
    assert hops < 20, "200 concurrent writes should have shared a few commits"
    await db.dispose()


async def test_writes_commit_in_the_order_they_were_asked(db: Database) -> None:
    order: list[int] = []

    def unit(n: int) -> Callable[[Connection], None]:
        def run(conn: Connection) -> None:
            order.append(n)
            conn.execute(insert(rows).values(n=n, tag="y"))

        return run

    await asyncio.gather(*(db.write_unit(unit(n)) for n in range(100)))
    assert order == list(range(100))
    await db.dispose()


async def test_a_write_unit_answers_only_after_its_commit(db: Database, tmp_path: Path) -> None:
    await db.write_unit(_insert(7))
    other = Database(f"sqlite+aiosqlite:///{tmp_path / 'units.db'}")
    seen = await other.read_unit(lambda c: c.execute(select(rows.c.n)).scalars().all())
    assert list(seen) == [7]
    await other.dispose()
    await db.dispose()


async def test_a_read_unit_raising_leaves_the_database_usable(db: Database) -> None:
    def boom(conn: Connection) -> None:
        raise LookupError("nothing here")

    with pytest.raises(LookupError):
        await db.read_unit(boom)
    assert await db.read_unit(lambda c: c.execute(select(rows.c.n)).first()) is None
    await db.dispose()
