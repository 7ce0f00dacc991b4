"""Schema changes go through migrations that keep every row an older version wrote."""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from palaver import search
from palaver.knowledge.index.postgres import SEARCH_COLUMNS, SEARCH_INDEXES
from palaver.store import migrate
from palaver.store.tables import metadata
from palaver.store.urls import sync_url
from tests import pg_server
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
            True,
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


class Store:
    """An empty database of either kind, and an operator's shell on it."""

    def __init__(self, url: str, path: Path | None = None) -> None:
        self.url = url
        self.path = path

    def rows(self, statement: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        if self.path is not None:
            with closing(sqlite3.connect(self.path)) as db:
                return db.execute(statement, params).fetchall()
        with pg_server.connect(self.url) as conn:
            return conn.execute(statement.encode(), params).fetchall()

    def insert(self, table: str, rows: Sequence[Sequence[object]]) -> None:
        if self.path is not None:
            marks = ", ".join("?" * len(rows[0]))
            with closing(sqlite3.connect(self.path)) as db, db:
                db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
            return
        marks = ", ".join(["%s"] * len(rows[0]))
        with pg_server.connect(self.url) as conn:
            conn.cursor().executemany(f"INSERT INTO {table} VALUES ({marks})".encode(), rows)

    def fill(self) -> None:
        for table, rows in CORE_ROWS.items():
            self.insert(table, rows)

    def version(self) -> str:
        return str(self.rows("SELECT version_num FROM alembic_version")[0][0])

    def core(self) -> dict[str, list[tuple[object, ...]]]:
        """The columns CORE_ROWS fills: those the later migrations add hold their defaults."""
        return {
            table: sorted(
                pg_server.as_sqlite(row[: len(rows[0])])
                for row in self.rows(f"SELECT * FROM {table}")
            )
            for table, rows in CORE_ROWS.items()
        }


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "sqlite":
        path = tmp_path / "palaver.db"
        return Store(f"sqlite+aiosqlite:///{path}", path)
    return Store(request.getfixturevalue("pg").new_database())


def _head() -> str:
    head = ScriptDirectory(str(migrate.MIGRATIONS)).get_current_head()
    assert head is not None
    return head


def _expected() -> dict[str, list[tuple[object, ...]]]:
    return {table: sorted(map(pg_server.as_sqlite, rows)) for table, rows in CORE_ROWS.items()}


def test_a_database_made_by_the_first_revision_keeps_its_data_after_upgrade(store: Store) -> None:
    migrate.upgrade(store.url, "0001_core")
    store.fill()
    migrate.upgrade(store.url)
    assert store.version() == _head()
    assert store.core() == _expected()


def test_every_migration_can_be_undone_and_redone_without_losing_core_data(store: Store) -> None:
    migrate.upgrade(store.url, "0001_core")
    store.fill()
    migrate.upgrade(store.url)
    migrate.downgrade(store.url, "0001_core")
    assert store.version() == "0001_core"
    migrate.upgrade(store.url)
    assert store.version() == _head()
    assert store.core() == _expected()


def test_every_migration_steps_up_and_down_one_at_a_time(store: Store) -> None:
    revisions = [
        script.revision
        for script in reversed(list(ScriptDirectory(str(migrate.MIGRATIONS)).walk_revisions()))
    ]
    for revision in revisions:
        migrate.upgrade(store.url, revision)
        assert store.version() == revision
    for older in reversed(revisions[:-1]):
        migrate.downgrade(store.url, older)
        assert store.version() == older
    migrate.downgrade(store.url, "base")
    assert store.rows("SELECT version_num FROM alembic_version") == []


def test_messages_and_chunks_of_older_versions_fill_the_columns_added_since(
    store: Store,
) -> None:
    """0005 records the uploads that older messages link to (in their text or their JSON
    metadata); 0007 gives older chunks their context (document title and heading path)."""
    migrate.upgrade(store.url, "0004_chains")
    store.fill()
    metadata = '{"files": ["/uploads/2024-05/plan%20b.pdf"]}'
    content = "see /uploads/2024-05/notes.txt"
    store.insert(
        "messages",
        [("msg_02UP", "ch_01OLD", None, "user_01GUEST", content, "text", metadata, STAMP)],
    )
    migrate.upgrade(store.url, "0006_document_status")
    document = ("doc_01", "agent_01OLD", "garden_notes.md", "markdown", 10, None, 1, "c" * 64)
    store.insert("documents", [(*document, STAMP, "owner", "ready", None)])
    heading = '["Soil", "Compost"]'
    store.insert("chunks", [(1, "chk_01", "agent_01OLD", "doc_01", 0, heading, None, 5, "weekly")])
    migrate.upgrade(store.url)
    assert sorted(store.rows("SELECT path, channel_id, message_id FROM upload_references")) == [
        ("2024-05/notes.txt", "ch_01OLD", "msg_02UP"),
        ("2024-05/plan b.pdf", "ch_01OLD", "msg_02UP"),
    ]
    assert store.rows("SELECT context FROM chunks") == [("garden notes > Soil > Compost",)]


def test_chunks_and_vectors_of_older_versions_are_searchable_on_postgresql(
    pg: pg_server.PgServer,
) -> None:
    """0009 gives PostgreSQL's older chunks their words and older vectors their pgvector
    column, read from the float32 bytes the earlier versions stored (on SQLite it does
    nothing, which the tests above cover)."""
    store = Store(pg.new_database())
    migrate.upgrade(store.url, "0008_keep_float_embedder")
    store.fill()
    document = ("doc_01", "agent_01OLD", "garden.md", "markdown", 10, None, 1, "c" * 64)
    store.insert("documents", [(*document, STAMP, "owner", "ready", None)])
    chunk = (1, "chk_01", "agent_01OLD", "doc_01", 0, "[]", None, 5, "Turn the compost", "Soil")
    store.insert("chunks", [chunk])
    vector = np.array([0.6, 0.8, 0.0], dtype=np.float32).tobytes()
    store.insert(
        "vectors", [("chk_01", "agent_01OLD", "chunk", None, "owner", "test/e", 3, vector)]
    )
    migrate.upgrade(store.url)
    found = "SELECT id FROM chunks WHERE tsv @@ plainto_tsquery('english', %s)"
    assert store.rows(found, ("composting soil",)) == [("chk_01",)]
    assert store.rows("SELECT embedding::text FROM vectors") == [("[0.6,0.8,0]",)]
    migrate.downgrade(store.url, "0008_keep_float_embedder")
    assert store.rows("SELECT count(*) FROM vectors") == [(1,)]


def _not_search_only(
    item: object, name: str | None, kind: str, reflected: bool, other: object
) -> bool:
    """Leaves out what migrations 0009 (knowledge), 0012 and 0022 (messages) add for their search
    indexes outside the table definitions: PostgreSQL's columns and indexes, SQLite's FTS5
    tables."""
    table = getattr(getattr(item, "table", None), "name", None)
    if kind == "table":
        return not (name or "").startswith(search.SQLITE_TABLES)
    if kind == "column":
        return (table, name) not in SEARCH_COLUMNS | search.POSTGRESQL_COLUMNS
    return not (kind == "index" and name in SEARCH_INDEXES | search.POSTGRESQL_INDEXES)


def test_the_migrations_make_the_schema_the_tables_describe(store: Store) -> None:
    migrate.upgrade(store.url)
    engine = create_engine(sync_url(store.url))
    try:
        with engine.connect() as conn, warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Did not recognize type 'vector'")
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "include_object": _not_search_only}
            )
            assert compare_metadata(context, metadata) == []
    finally:
        engine.dispose()


def test_start_up_runs_the_migrations(store: Store, tmp_path: Path) -> None:
    migrate.upgrade(store.url, "0001_core")
    store.fill()
    env = {} if store.path is not None else {"DATABASE_URL": store.url}
    server = Server(tmp_path, env=env)
    try:
        server.start()
        assert store.version() == _head()
        with server.login() as owner:
            agents = owner.ok("GET", "/api/agents")["agents"]
            assert [a["name"] for a in agents] == ["Old Timer"]
            messages = owner.ok("GET", "/api/messages", params={"channelId": "ch_01OLD"})
            assert [m["content"] for m in messages["messages"]] == ["kept"]
            assert owner.ok("GET", "/api/settings")["settings"]["sessionIdleDays"] == 7
            assert owner.ok("GET", "/api/me")["user"]["id"] == "user_01OWNER"
    finally:
        server.stop()


def test_messages_of_older_versions_are_searchable_after_upgrade_and_downgrade_leaves_none(
    store: Store,
) -> None:
    """0012 indexes the messages already there (and only those people read), and its
    downgrade leaves neither FTS5 tables nor triggers nor the tsvector column behind."""
    migrate.upgrade(store.url, "0010_node_leases")
    store.fill()
    migrate.upgrade(store.url, "0011_message_lifecycle")
    extra = [
        ("msg_02TXT", "ch_01OLD", None, "user_01GUEST", "composting the soil", "text"),
        ("msg_02TOOL", "ch_01OLD", "agent_01OLD", None, "composting tool", "tool_call"),
    ]
    store.insert(
        "messages", [(*row, "{}", STAMP, None, None, None, 0, None, None, None) for row in extra]
    )
    migrate.upgrade(store.url)
    if store.path is not None:
        found = "SELECT m.id FROM messages_fts f JOIN messages m ON m.rowid = f.rowid "
        found += "WHERE messages_fts MATCH ?"
        triggers = "SELECT name FROM sqlite_master WHERE name LIKE 'messages_fts%'"
    else:
        found = "SELECT id FROM messages WHERE search_tsv @@ plainto_tsquery('palaver_search', %s)"
        triggers = (
            "SELECT column_name FROM information_schema.columns WHERE column_name = 'search_tsv'"
        )
    assert store.rows(found, ("composted",)) == [("msg_02TXT",)]
    assert store.rows(found, ("the",)) == [("msg_02TXT",)]
    migrate.downgrade(store.url, "0011_message_lifecycle")
    assert store.rows(triggers) == []
    assert store.core() == _expected() | {"messages": store.core()["messages"]}
    migrate.upgrade(store.url)
    assert store.rows(found, ("soil",)) == [("msg_02TXT",)]


def test_people_of_older_versions_start_with_everything_read(store: Store) -> None:
    """0013 gives each member of a channel, and the owner in every channel, a marker at the
    channel's newest message and no unread: an upgrade does not light up every badge."""
    migrate.upgrade(store.url, "0010_node_leases")
    store.fill()
    migrate.upgrade(store.url, "0012_message_search")
    store.insert("channels", [("ch_02EMPTY", "quiet", "group", STAMP, STAMP)])
    newer = ("msg_02NEWER", "ch_01OLD", None, "user_01OWNER", "newer", "text", "{}", STAMP)
    store.insert("messages", [(*newer, None, None, None, 0, None, None, None)])
    migrate.upgrade(store.url)
    states = store.rows(
        "SELECT user_id, channel_id, last_read_id, unread_count, mention_count "
        "FROM read_states ORDER BY user_id, channel_id"
    )
    assert states == [
        ("user_01GUEST", "ch_01OLD", "msg_02NEWER", 0, 0),
        ("user_01OWNER", "ch_01OLD", "msg_02NEWER", 0, 0),
        ("user_01OWNER", "ch_02EMPTY", None, 0, 0),
    ]
    migrate.downgrade(store.url, "0012_message_search")
    kept = store.core()
    assert kept == _expected() | {k: kept[k] for k in ("messages", "channels")}
    assert store.rows("SELECT id FROM messages ORDER BY id") == [("msg_01OLD",), ("msg_02NEWER",)]


def test_an_upgraded_database_gets_an_append_only_audit_log(store: Store) -> None:
    """0015 adds the audit log to a database in use, empty; a row once written can be neither
    changed nor deleted (the triggers say why), and its downgrade leaves nothing behind."""
    migrate.upgrade(store.url, "0001_core")
    store.fill()
    migrate.upgrade(store.url, "0014_usage_ledger")
    migrate.upgrade(store.url)
    assert store.rows("SELECT count(*) FROM audit_log") == [(0,)]
    change = '{"name": "New Timer"}'
    row = ("audit_01OLD", STAMP, "user_01OWNER", "agent.update", "agent", "agent_01OLD", change)
    store.insert("audit_log", [(*row, "node_01", "127.0.0.1")])
    for statement in ("UPDATE audit_log SET action = 'agent.delete'", "DELETE FROM audit_log"):
        with pytest.raises(Exception, match="append-only"):
            store.rows(statement)
    assert store.rows("SELECT action, target FROM audit_log") == [("agent.update", "agent_01OLD")]
    assert store.core() == _expected()
    migrate.downgrade(store.url, "0014_usage_ledger")
    if store.path is not None:
        left = "SELECT name FROM sqlite_master WHERE name LIKE '%audit_log%'"
    else:
        left = (
            "SELECT relname FROM pg_class WHERE relname LIKE '%%audit_log%%' "
            "UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE '%%audit_log%%'"
        )
    assert store.rows(left) == []
    assert store.core() == _expected()


def test_the_usage_rollup_is_filled_from_the_daily_one_and_rebuilt_from_the_ledger(
    store: Store,
) -> None:
    """0019 sums `usage_daily` (a row per day and combination) into `usage_rollup` (a row per
    day and agent, person, channel, model or install); its downgrade rebuilds `usage_daily`
    from the ledger, with days in UTC."""
    migrate.upgrade(store.url, "0018_backup_runs")
    late = "2024-05-01 23:30:00.000000"
    ledger = [
        (1, STAMP, "agent_A", "user_P", "ch_1", "msg_1", "oai", "oai/m1", 100, 10, 5, 0.5, 1, 0),
        (2, STAMP, "agent_A", "user_Q", "ch_2", "msg_2", "oai", "oai/m2", 200, 20, 0, 0.0, 0, 0),
        (3, late, "agent_B", "user_P", "ch_1", "msg_3", "oai", "oai/m1", 300, 30, 0, 1.5, 1, 1),
    ]
    if store.path is None:
        ledger = [(*row[:12], bool(row[12]), bool(row[13])) for row in ledger]
    store.insert("usage_ledger", ledger)
    store.insert(
        "usage_daily",
        [
            ("2024-05-01", "agent_A", "user_P", "ch_1", "oai/m1", 100, 10, 5, 0.5, 1, 0),
            ("2024-05-01", "agent_A", "user_Q", "ch_2", "oai/m2", 200, 20, 0, 0.0, 1, 1),
            ("2024-05-01", "agent_B", "user_P", "ch_1", "oai/m1", 300, 30, 0, 1.5, 1, 0),
        ],
    )
    migrate.upgrade(store.url)
    got = store.rows(
        "SELECT dimension, key, CAST(day AS TEXT), input_tokens, output_tokens, cached_tokens,"
        " cost, calls, unpriced_calls FROM usage_rollup ORDER BY dimension, key"
    )
    day = "2024-05-01"
    assert got == [
        ("agent", "agent_A", day, 300, 30, 5, 0.5, 2, 1),
        ("agent", "agent_B", day, 300, 30, 0, 1.5, 1, 0),
        ("channel", "ch_1", day, 400, 40, 5, 2.0, 2, 0),
        ("channel", "ch_2", day, 200, 20, 0, 0.0, 1, 1),
        ("model", "oai/m1", day, 400, 40, 5, 2.0, 2, 0),
        ("model", "oai/m2", day, 200, 20, 0, 0.0, 1, 1),
        ("person", "user_P", day, 400, 40, 5, 2.0, 2, 0),
        ("person", "user_Q", day, 200, 20, 0, 0.0, 1, 1),
        ("total", "", day, 600, 60, 5, 2.0, 3, 1),
    ]
    migrate.downgrade(store.url, "0018_backup_runs")
    rebuilt = store.rows(
        "SELECT CAST(day AS TEXT), agent_id, user_id, model, input_tokens, calls, unpriced_calls"
        " FROM usage_daily ORDER BY agent_id, user_id"
    )
    assert rebuilt == [
        (day, "agent_A", "user_P", "oai/m1", 100, 1, 0),
        (day, "agent_A", "user_Q", "oai/m2", 200, 1, 1),
        (day, "agent_B", "user_P", "oai/m1", 300, 1, 0),
    ]


def test_messages_of_older_versions_are_found_by_channel_after_0020(store: Store) -> None:
    """0020 indexes each message's channel beside its text on SQLite (PostgreSQL: nothing
    changes): the messages already there are found by their words, held to their channel, and
    a downgrade leaves the index of 0012, which finds them by their words as before."""
    migrate.upgrade(store.url, "0010_node_leases")
    store.fill()
    migrate.upgrade(store.url, "0019_usage_rollup")
    store.insert("channels", [("ch_02OTHER", "other", "group", STAMP, STAMP)])
    extra = [
        ("msg_02A", "ch_01OLD", None, "user_01GUEST", "composting the soil", "text"),
        ("msg_02B", "ch_02OTHER", None, "user_01OWNER", "composting elsewhere", "text"),
        ("msg_02T", "ch_01OLD", "agent_01OLD", None, "composting tool", "tool_call"),
    ]
    store.insert(
        "messages",
        [(*row, "{}", STAMP, None, None, None, 0, None, None, None) for row in extra],
    )
    migrate.upgrade(store.url, "0020_search_by_channel")
    if store.path is None:
        found = "SELECT id FROM messages WHERE search_tsv @@ plainto_tsquery('palaver_search', %s)"
        assert sorted(store.rows(found, ("compost",))) == [("msg_02A",), ("msg_02B",)]
        return
    found = "SELECT m.id FROM messages_fts f JOIN messages m ON m.rowid = f.rowid "
    found += "WHERE messages_fts MATCH ? ORDER BY m.id"
    assert store.rows(found, ('content : ("compost")',)) == [("msg_02A",), ("msg_02B",)]
    held = 'content : ("compost") AND channel_id : ("02OTHER")'
    assert store.rows(found, (held,)) == [("msg_02B",)]
    assert store.rows(found, ('content : ("02OTHER")',)) == []
    store.insert(
        "messages",
        [
            (
                "msg_03N",
                "ch_02OTHER",
                None,
                "user_01OWNER",
                "newer compost",
                "text",
                "{}",
                STAMP,
                None,
                None,
                None,
                0,
                None,
                None,
                None,
            )
        ],
    )
    assert store.rows(found, (held,)) == [("msg_02B",), ("msg_03N",)]
    migrate.downgrade(store.url, "0019_usage_rollup")
    assert store.rows(found, ("compost",)) == [("msg_02A",), ("msg_02B",), ("msg_03N",)]
    columns = "SELECT name FROM pragma_table_info('messages_fts')"
    assert store.rows(columns) == [("content",)]


def test_0021_leaves_new_messages_to_the_search_backlog_and_a_downgrade_indexes_them(
    store: Store,
) -> None:
    """0021 marks every message already there as indexed (0020's triggers indexed them); a
    message written after it waits for the server's batches, and a downgrade to 0020, whose
    triggers index at once, indexes what waited."""
    migrate.upgrade(store.url, "0010_node_leases")
    store.fill()
    migrate.upgrade(store.url, "0020_search_by_channel")
    row = ("ch_01OLD", None, "user_01OWNER", "{}", STAMP, None, None, None, 0, None, None, None)
    store.insert("messages", [("msg_04A", *row[:3], "gardening before", "text", *row[3:])])
    migrate.upgrade(store.url, "0021_search_backlog")
    if store.path is None:
        assert store.rows("SELECT to_regclass('messages_fts_upto')") == [(None,)]
        return
    newest = store.rows("SELECT max(rowid) FROM messages")
    assert store.rows("SELECT upto FROM messages_fts_upto") == newest
    store.insert("messages", [("msg_04B", *row[:3], "gardening after", "text", *row[3:])])
    found = "SELECT m.id FROM messages_fts f JOIN messages m ON m.rowid = f.rowid "
    found += "WHERE messages_fts MATCH ? ORDER BY m.id"
    assert store.rows(found, ("garden",)) == [("msg_04A",)]
    migrate.downgrade(store.url, "0020_search_by_channel")
    assert store.rows(found, ("garden",)) == [("msg_04A",), ("msg_04B",)]
    assert store.rows("SELECT name FROM sqlite_master WHERE name = 'messages_fts_upto'") == []


def test_0022_gives_postgresql_block_ranges_of_the_ids_and_a_downgrade_drops_them(
    store: Store,
) -> None:
    """0022 adds a BRIN index of the messages' ids on PostgreSQL (its search reads a common
    word's newest matches through it), of `id || ''` so that no other statement's plan takes
    it, over the messages already there; SQLite gets nothing."""
    migrate.upgrade(store.url, "0010_node_leases")
    store.fill()
    migrate.upgrade(store.url, "0022_id_block_ranges")
    if store.path is not None:
        assert store.rows("SELECT name FROM sqlite_master WHERE name LIKE '%brin%'") == []
        migrate.downgrade(store.url, "0021_search_backlog")
        return
    method = (
        "SELECT a.amname, pg_get_indexdef(i.oid) FROM pg_class i "
        "JOIN pg_am a ON a.oid = i.relam WHERE i.relname = 'ix_messages_id_brin'"
    )
    [(kind, made)] = store.rows(method)
    assert kind == "brin"
    assert "(((id)::text || ''::text))" in str(made)
    migrate.downgrade(store.url, "0021_search_backlog")
    assert store.rows(method) == []
