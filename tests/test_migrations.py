"""Schema changes go through migrations that keep every row an older version wrote."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from alembic.script import ScriptDirectory

from palaver.store import migrate
from tests.support import Server

STAMP = "2024-05-01 12:00:00.000000"
CORE_ROWS = {
    "users": [
        ("user_01OWNER", "Owner", "owner", None, STAMP),
        ("user_01GUEST", "Gus", "guest", "h" * 64, STAMP),
    ],
    "sessions": [("t" * 64, "user_01GUEST", None, STAMP, STAMP)],
    "meta": [("owner_key_salt", "00" * 16)],
    "settings": [(1, '{"sessionIdleDays": 7}', STAMP)],
    "agents": [
        (
            "agent_01OLD",
            "Old Timer",
            "old timer",
            "🦉",
            "from an older version",
            "builtin/echo",
            '["web_search"]',
            "# Soul",
            1,
            STAMP,
            STAMP,
        )
    ],
    "channels": [("ch_01OLD", "archive", "group", STAMP, STAMP)],
    "channel_agents": [("ch_01OLD", "agent_01OLD", 0)],
    "channel_members": [("ch_01OLD", "user_01OWNER", 0), ("ch_01OLD", "user_01GUEST", 1)],
    "messages": [
        ("msg_01OLD", "ch_01OLD", None, "user_01GUEST", "kept", "text", '{"a": 1}', STAMP)
    ],
}


def _url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def _head() -> str:
    head = ScriptDirectory(str(migrate.MIGRATIONS)).get_current_head()
    assert head is not None
    return head


def _version(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return str(db.execute("SELECT version_num FROM alembic_version").fetchone()[0])


def _fill(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        for table, rows in CORE_ROWS.items():
            marks = ", ".join("?" * len(rows[0]))
            db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)


def _core(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with closing(sqlite3.connect(path)) as db:
        return {table: sorted(db.execute(f"SELECT * FROM {table}")) for table in CORE_ROWS}


def test_a_database_made_by_the_first_revision_keeps_its_data_after_upgrade(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    migrate.upgrade(_url(db), "0001_core")
    _fill(db)
    migrate.upgrade(_url(db))
    assert _version(db) == _head()
    assert _core(db) == {table: sorted(rows) for table, rows in CORE_ROWS.items()}


def test_every_migration_can_be_undone_and_redone_without_losing_core_data(
    tmp_path: Path,
) -> None:
    db = tmp_path / "round-trip.db"
    migrate.upgrade(_url(db), "0001_core")
    _fill(db)
    migrate.upgrade(_url(db))
    migrate.downgrade(_url(db), "0001_core")
    assert _version(db) == "0001_core"
    migrate.upgrade(_url(db))
    assert _version(db) == _head()
    assert _core(db) == {table: sorted(rows) for table, rows in CORE_ROWS.items()}


def test_start_up_runs_the_migrations(fresh_server: Server) -> None:
    fresh_server.data_dir.mkdir(parents=True)
    migrate.upgrade(_url(fresh_server.db_path), "0001_core")
    _fill(fresh_server.db_path)
    fresh_server.start()
    assert _version(fresh_server.db_path) == _head()
    with fresh_server.login() as owner:
        agents = owner.ok("GET", "/api/agents")["agents"]
        assert [a["name"] for a in agents] == ["Old Timer"]
        messages = owner.ok("GET", "/api/messages", params={"channelId": "ch_01OLD"})["messages"]
        assert [m["content"] for m in messages] == ["kept"]
        assert owner.ok("GET", "/api/settings")["settings"]["sessionIdleDays"] == 7
        assert owner.ok("GET", "/api/me")["user"]["id"] == "user_01OWNER"
