"""The migrations make the knowledge schema the table definitions describe, FTS5 included,
and its downgrade removes all of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, inspect

from palaver.store import migrate
from tests.knowledge.helpers import KNOWLEDGE_TABLES, create_knowledge_schema

NAMES = [t.name for t in KNOWLEDGE_TABLES]
FTS_OBJECTS = {
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
            schema["fts"] = {row[0] for row in rows} & FTS_OBJECTS
        return schema
    finally:
        engine.dispose()


def test_the_migration_matches_the_table_definitions(tmp_path: Path) -> None:
    migrated, defined = tmp_path / "migrated.db", tmp_path / "defined.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{migrated}")
    create_knowledge_schema(f"sqlite:///{defined}")
    schema = describe(migrated)
    assert schema == describe(defined)
    assert set(schema) == {*NAMES, "fts"} and schema["fts"] == FTS_OBJECTS


def test_the_downgrade_removes_the_knowledge_schema(tmp_path: Path) -> None:
    path = tmp_path / "palaver.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}", "0002_knowledge")
    migrate.downgrade(f"sqlite+aiosqlite:///{path}", "0001_core")
    assert describe(path) == {"fts": set()}
