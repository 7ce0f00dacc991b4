"""`store/precompiled.py` writes and reads what `Connection.execute` of the same Core statement
does, types processed alike (UTC times, JSON), on a real SQLite file; the suite's PostgreSQL
pass runs it through every post and history page."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    Column,
    Connection,
    Integer,
    MetaData,
    Table,
    Text,
    bindparam,
    cast,
    create_engine,
    event,
    func,
    insert,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine

from palaver.store.precompiled import Precompiled
from palaver.store.tables.base import metadata
from palaver.store.tables.core import channels, messages
from palaver.store.urls import app_url, asyncpg_connect_args
from tests.pg_server import PgServer

ROW = {
    "channel_id": "ch_1",
    "agent_id": None,
    "user_id": "usr_1",
    "content": "ünïcode and 'quotes'",
    "type": "text",
    "metadata": {"mentions": ["usr_2"], "n": 1.5},
    "created_at": datetime(2026, 11, 27, 8, 30, 1, 123456, tzinfo=UTC),
    "thread_id": None,
}


def _write_both_ways_and_read(conn: Connection) -> None:
    names = ["id", *ROW]
    precompiled = Precompiled(insert(messages).values({n: bindparam(n) for n in names}))
    newer = Precompiled(
        select(messages.c.id)
        .where(messages.c.channel_id == bindparam("channel"), messages.c.reply_count >= 0)
        .order_by(messages.c.id.desc())
        .limit(bindparam("limit"))
    )
    metadata.create_all(conn, tables=[channels, messages])
    when = ROW["created_at"]
    conn.execute(
        insert(channels),
        {"id": "ch_1", "name": "c", "type": "group", "created_at": when, "updated_at": when},
    )
    precompiled.run(conn, {"id": "msg_1", **ROW})
    conn.execute(insert(messages), {"id": "msg_2", **ROW})
    as_stored = select(*(cast(c, Text) for c in messages.c)).order_by(messages.c.id)
    raw = conn.execute(as_stored).all()
    typed = conn.execute(select(messages).order_by(messages.c.id)).all()
    ids = newer.column(conn, {"channel": "ch_1", "limit": 1})
    assert raw[0][1:] == raw[1][1:]
    assert typed[0][1:] == typed[1][1:]
    assert typed[0].metadata == ROW["metadata"] and typed[0].created_at == ROW["created_at"]
    assert ids == ["msg_2"]


def test_a_row_written_and_read_through_it_is_the_one_core_writes_on_sqlite(
    tmp_path: Path,
) -> None:
    with create_engine(f"sqlite:///{tmp_path / 'p.db'}").begin() as conn:
        _write_both_ways_and_read(conn)


def test_a_row_written_and_read_through_it_is_the_one_core_writes_on_postgresql(
    pg: PgServer,
) -> None:
    url = pg.new_database()

    async def run() -> None:
        engine = create_async_engine(app_url(url), connect_args=asyncpg_connect_args(url))
        async with engine.begin() as conn:
            await conn.run_sync(_write_both_ways_and_read)
        await engine.dispose()

    asyncio.run(run())


def test_what_it_cannot_send_as_given_is_refused_when_first_run(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'p.db'}")
    metadata.create_all(engine, tables=[channels, messages])
    defaulted = Table(
        "defaulted", MetaData(), Column("id", Integer), Column("n", Integer, default=1)
    )
    defaulted.create(engine)
    refused = {
        "plain binds": select(messages.c.id).where(messages.c.id.in_(bindparam("ids"))),
        "a default": select(messages.c.id).limit(bindparam("limit", 10)),
        "Python-side default": insert(defaulted).values(id=bindparam("id")),
    }
    with engine.connect() as conn:
        for why, statement in refused.items():
            with pytest.raises(ValueError, match=why):
                Precompiled(statement).run(conn, {"ids": ["msg_1"], "limit": 1, "id": 1})


def test_on_sqlite_it_skips_the_engine_unless_something_listens_and_errors_stay_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unobserved, the values go straight to the driver's cursor; a listener on the engine's
    statements (the debug counts, the traces' spans) sees every statement all the same, and a
    broken constraint is SQLAlchemy's `IntegrityError` either way, the row not written twice."""
    engine = create_engine(f"sqlite:///{tmp_path / 'p.db'}")
    metadata.create_all(engine, tables=[channels, messages])
    when = ROW["created_at"]
    with engine.begin() as conn:
        conn.execute(
            insert(channels),
            {"id": "ch_1", "name": "c", "type": "group", "created_at": when, "updated_at": when},
        )
    row = Precompiled(insert(messages).values({n: bindparam(n) for n in ["id", *ROW]}))
    ids = Precompiled(select(messages.c.id).where(messages.c.channel_id == bindparam("channel")))
    through_engine: list[str] = []
    original = Connection.exec_driver_sql

    def spied(self: Connection, statement: str, *args: Any, **kwargs: Any) -> Any:
        through_engine.append(statement)
        return original(self, statement, *args, **kwargs)

    monkeypatch.setattr(Connection, "exec_driver_sql", spied)
    with engine.begin() as conn:
        row.run(conn, {"id": "msg_1", **ROW})
        assert ids.column(conn, {"channel": "ch_1"}) == ["msg_1"]
        with pytest.raises(IntegrityError):
            row.run(conn, {"id": "msg_1", **ROW})
    assert through_engine == []

    heard: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda _c, _cur, sql, *_: heard.append(sql))
    with engine.begin() as conn:
        row.run(conn, {"id": "msg_2", **ROW})
        with pytest.raises(IntegrityError):
            row.run(conn, {"id": "msg_2", **ROW})
        assert ids.column(conn, {"channel": "ch_1"}) == ["msg_1", "msg_2"]
    assert len(through_engine) == len(heard) == 3
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(messages)).scalar_one() == 2

    logged = create_engine(f"sqlite:///{tmp_path / 'p.db'}", echo=True)
    with logged.begin() as conn:
        assert ids.column(conn, {"channel": "ch_1"}) == ["msg_1", "msg_2"]
    assert len(through_engine) == 4, "a statement logged by the engine goes through it"
    logged.dispose()
