"""SQLite's search index takes new messages in batches (`palaver.store.search_backlog`): the
backlog's rows are indexed oldest first, edits and deletions of rows still in it leave the
index alone, a reused rowid is indexed at once, group commits index the backlog every batch of
posts, and a search finds every post, edit and deletion that returned before it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, create_engine

from palaver.store import migrate, search_backlog
from tests.support import Server, new_channel, post, sql, unique, wait_until

pytestmark = pytest.mark.sqlite_only
"""PostgreSQL's search column is generated with each row: it has no backlog."""

STAMP = "2026-11-27 12:00:00.000000"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    path = tmp_path / "palaver.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}", "head")
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO channels (id, name, type, created_at, updated_at) "
            "VALUES ('ch_1', 'c', 'group', ?, ?)",
            (STAMP, STAMP),
        )
    yield engine
    engine.dispose()


def _write(conn: Connection, message_id: str, content: str) -> None:
    conn.exec_driver_sql(
        "INSERT INTO messages (id, channel_id, user_id, content, type, metadata, created_at, "
        "reply_count) VALUES (?, 'ch_1', 'usr_1', ?, 'text', '{}', ?, 0)",
        (message_id, content, STAMP),
    )


def _found(conn: Connection, words: str) -> list[str]:
    return list(
        conn.exec_driver_sql(
            "SELECT m.id FROM messages_fts f JOIN messages m ON m.rowid = f.rowid "
            "WHERE messages_fts MATCH ? ORDER BY m.id",
            (f'content : ("{words}")',),
        ).scalars()
    )


def _consistent(conn: Connection) -> None:
    """FTS5's own check of the index against `messages`, once no row waits (a waiting row is
    one the index lacks, which the check reports as corruption)."""
    conn.exec_driver_sql(
        "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)"
    )


def test_new_rows_wait_and_each_step_indexes_the_oldest_up_to_its_size(engine: Engine) -> None:
    with engine.begin() as conn:
        for n in range(10):
            _write(conn, f"msg_{n:02d}", f"waiting row {n}")
        assert search_backlog.waiting(conn) == 10
        assert _found(conn, "waiting") == []
        assert search_backlog.index_step(conn, at_most=4)
        assert _found(conn, "waiting") == [f"msg_{n:02d}" for n in range(4)]
        assert search_backlog.index_step(conn, at_most=4)
        assert not search_backlog.index_step(conn, at_most=4)
        assert _found(conn, "waiting") == [f"msg_{n:02d}" for n in range(10)]
        assert search_backlog.waiting(conn) == 0
        assert not search_backlog.index_step(conn)
        _consistent(conn)


def test_a_search_indexes_no_further_than_the_newest_row_its_snapshot_saw(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        for n in range(5):
            _write(conn, f"msg_{n}", f"seen {n}")
        newest = search_backlog.newest_waiting(conn)
        assert newest is not None
        for n in range(5, 8):
            _write(conn, f"msg_{n}", f"later {n}")
        assert not search_backlog.index_step(conn, until=newest)
        assert _found(conn, "seen") == [f"msg_{n}" for n in range(5)]
        assert _found(conn, "later") == []
        assert search_backlog.waiting(conn) == 3
        search_backlog.index_all(conn)
        assert search_backlog.newest_waiting(conn) is None
        _consistent(conn)


def test_an_edit_or_a_deletion_in_the_backlog_leaves_the_index_alone(engine: Engine) -> None:
    with engine.begin() as conn:
        _write(conn, "msg_a", "first draft")
        _write(conn, "msg_b", "soon removed")
        conn.exec_driver_sql("UPDATE messages SET content = 'second thought' WHERE id = 'msg_a'")
        conn.exec_driver_sql("DELETE FROM messages WHERE id = 'msg_b'")
        search_backlog.index_all(conn)
        assert _found(conn, "draft") == []
        assert _found(conn, "thought") == ["msg_a"]
        assert _found(conn, "removed") == []
        conn.exec_driver_sql("UPDATE messages SET content = 'third time' WHERE id = 'msg_a'")
        assert _found(conn, "thought") == []
        assert _found(conn, "third") == ["msg_a"]
        _consistent(conn)


def test_a_row_given_a_rowid_the_index_has_seen_is_indexed_at_once(engine: Engine) -> None:
    """SQLite hands the rowid of a deleted newest row to the next row: the mark is past it."""
    with engine.begin() as conn:
        for n in range(3):
            _write(conn, f"msg_{n}", f"row {n}")
        search_backlog.index_all(conn)
        conn.exec_driver_sql("DELETE FROM messages WHERE id = 'msg_2'")
        _write(conn, "msg_3", "reused rowid")
        reused = conn.exec_driver_sql("SELECT rowid FROM messages WHERE id = 'msg_3'").scalar()
        assert reused == conn.exec_driver_sql("SELECT upto FROM messages_fts_upto").scalar()
        assert search_backlog.waiting(conn) == 0
        assert _found(conn, "reused") == ["msg_3"]
        assert _found(conn, "row") == ["msg_0", "msg_1"]
        _consistent(conn)


def test_posts_are_indexed_every_batch_without_a_search_and_a_search_finds_the_rest(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path / "data")
    server.start()
    try:
        with server.login() as owner:
            limits = {"messagesPerMinute": 100_000, "messageBurst": 100_000}
            owner.ok("PUT", "/api/settings", json={"limits": limits})
            channel = new_channel(owner)["id"]
            word = unique("batched")
            posted = [post(owner, channel, f"{word} {n}") for n in range(search_backlog.BATCH)]
            # The step follows the batch's answers: it is done soon after the last post.
            wait_until(
                lambda: sql(server, search_backlog._WAITING)[0][0] < search_backlog.BATCH,
                what="a step of the backlog after a batch of posts",
            )
            old, new, gone = unique("old"), unique("new"), unique("gone")
            edited = post(owner, channel, f"first {old}")
            deleted = post(owner, channel, f"doomed {gone}")
            owner.ok("PATCH", f"/api/messages/{edited}", json={"content": f"then {new}"})
            owner.ok("DELETE", f"/api/messages/{deleted}")
            assert sql(server, search_backlog._WAITING)[0][0] > 0

            def search(q: str) -> list[str]:
                params = {"q": q, "limit": 100, "sort": "recent"}
                body = owner.ok("GET", "/api/search", params=params)
                return [r["message"]["id"] for r in body["results"]]

            assert search(old) == []
            assert search(new) == [edited]
            assert search(gone) == []
            assert sql(server, search_backlog._WAITING) == [(0,)]
            assert search(word) == posted[::-1][:100]

            # An import's messages are indexed before its answer, not by the first search.
            exported = owner.get(f"/api/channels/{channel}/export", params={"format": "json"})
            assert exported.status_code == 200, exported.text
            files = {"file": ("export.json", exported.content, "application/json")}
            report = owner.ok("POST", "/api/channels/import", files=files)
            assert report["imported"] >= search_backlog.BATCH
            assert sql(server, search_backlog._WAITING) == [(0,)]
        with sqlite3.connect(server.db_path) as db:
            db.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        server.stop()
