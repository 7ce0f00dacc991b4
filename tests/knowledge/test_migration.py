"""The migrations make the knowledge schema the table definitions describe, its downgrade
removes all of it, and revision 0007 moves existing chunks into per-agent FTS5 tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, inspect

from palaver.settings import Settings
from palaver.store import migrate
from palaver.store.tables.knowledge import fts_table
from tests.knowledge.helpers import KNOWLEDGE_TABLES, create_knowledge_schema

NAMES = [t.name for t in KNOWLEDGE_TABLES]
OLD_FTS_OBJECTS = {
    "chunks_fts",
    "chunks_fts_insert",
    "chunks_fts_delete",
    "chunks_fts_update",
}


def describe(path: Path) -> dict[str, Any]:
    engine = create_engine(f"sqlite:///{path}")
    try:
        inspector = inspect(engine)
        tables = set(inspector.get_table_names())
        schema: dict[str, Any] = {}
        for name in NAMES:
            if name not in tables:
                continue
            schema[name] = {
                "columns": [
                    (c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(name)
                ],
                "pk": inspector.get_pk_constraint(name)["constrained_columns"],
                "fks": sorted(
                    (
                        tuple(f["constrained_columns"]),
                        f["referred_table"],
                        f["options"].get("ondelete"),
                    )
                    for f in inspector.get_foreign_keys(name)
                ),
                "indexes": sorted(
                    (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                    for i in inspector.get_indexes(name)
                ),
                "unique": sorted(
                    tuple(u["column_names"]) for u in inspector.get_unique_constraints(name)
                ),
            }
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE name LIKE 'chunks_fts%'"
            )
            schema["fts"] = {row[0] for row in rows} & OLD_FTS_OBJECTS
        return schema
    finally:
        engine.dispose()


def test_the_migration_matches_the_table_definitions(tmp_path: Path) -> None:
    migrated, defined = tmp_path / "migrated.db", tmp_path / "defined.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{migrated}")
    create_knowledge_schema(f"sqlite:///{defined}")
    schema = describe(migrated)
    assert schema == describe(defined)
    assert set(schema) == {*NAMES, "fts"} and schema["fts"] == set()


def test_the_downgrade_removes_the_knowledge_schema(tmp_path: Path) -> None:
    path = tmp_path / "palaver.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}", "0002_knowledge")
    migrate.downgrade(f"sqlite+aiosqlite:///{path}", "0001_core")
    assert describe(path) == {"fts": set()}


def test_0007_moves_chunks_into_per_agent_text_tables_with_their_titles(tmp_path: Path) -> None:
    path = tmp_path / "palaver.db"
    url = f"sqlite+aiosqlite:///{path}"
    migrate.upgrade(url, "0005_guest_boundary")
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO agents (id, name, name_key, avatar, description, model, tools, "
                "soul, auto_inject_memory, created_at, updated_at) VALUES ('agent_x', 'x', "
                "'x', 'a', '', 'builtin/echo', '[]', '', 0, '2026-01-01', '2026-01-01')"
            )
            conn.exec_driver_sql(
                "INSERT INTO documents (id, agent_id, name, kind, bytes, chunks, content_hash, "
                "created_at) VALUES ('doc_1', 'agent_x', 'kettle-guide.md', 'markdown', 1, 1, "
                "'h', '2026-01-01')"
            )
            conn.exec_driver_sql(
                "INSERT INTO chunks (id, agent_id, document_id, ordinal, heading_path, tokens, "
                "content) VALUES ('chunk_1', 'agent_x', 'doc_1', 0, '[\"Care\"]', 3, "
                "'Descale it monthly.')"
            )
        migrate.upgrade(url)
        with engine.connect() as conn:
            context = conn.exec_driver_sql("SELECT context FROM chunks").scalar()
            found = conn.exec_driver_sql(
                f"SELECT rowid FROM {fts_table('agent_x')} WHERE {fts_table('agent_x')} "
                "MATCH 'kettle AND descale'"
            ).all()
        assert context == "kettle guide > Care"
        assert len(found) == 1
        migrate.downgrade(url, "0005_guest_boundary")
        with engine.connect() as conn:
            old = conn.exec_driver_sql(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'descale'"
            ).scalar()
        assert old == 1
        assert describe(path)["fts"] == OLD_FTS_OBJECTS
    finally:
        engine.dispose()


def _settings_after_0008(tmp_path: Path, embedder: str | None) -> Any:
    path = tmp_path / "palaver.db"
    url = f"sqlite+aiosqlite:///{path}"
    migrate.upgrade(url, "0007_knowledge_at_scale")
    engine = create_engine(f"sqlite:///{path}")
    try:
        if embedder is not None:
            with engine.begin() as conn:
                conn.exec_driver_sql(
                    "INSERT INTO agents (id, name, name_key, avatar, description, model, tools, "
                    "soul, auto_inject_memory, created_at, updated_at) VALUES ('agent_x', 'x', "
                    "'x', 'a', '', 'builtin/echo', '[]', '', 0, '2026-01-01', '2026-01-01')"
                )
                conn.exec_driver_sql(
                    "INSERT INTO vectors (item_id, agent_id, kind, embedder, dim, data) "
                    f"VALUES ('chunk_1', 'agent_x', 'chunk', '{embedder}', 1, x'00000000')"
                )
        migrate.upgrade(url)
        with engine.connect() as conn:
            return conn.exec_driver_sql("SELECT data FROM settings").scalar()
    finally:
        engine.dispose()


def test_a_deployment_holding_float_vectors_keeps_the_float_embedder(tmp_path: Path) -> None:
    """The default became the int8 model; vectors already made by the float one stay current."""

    data = _settings_after_0008(tmp_path, "local/all-MiniLM-L6-v2")
    assert json.loads(data)["embedding"] == {"provider": "local", "model": "all-MiniLM-L6-v2"}


def test_a_new_deployment_takes_the_int8_default(tmp_path: Path) -> None:
    assert _settings_after_0008(tmp_path, None) is None
    assert Settings().embedding.model == "all-MiniLM-L6-v2-int8"
