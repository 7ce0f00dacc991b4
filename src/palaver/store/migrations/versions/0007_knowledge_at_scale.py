"""Knowledge at scale: each chunk's context (document title and heading path) as a column, and
on SQLite one FTS5 table per agent, over context and content, instead of one for all agents.

Revision ID: 0007_knowledge_at_scale
Revises: 0005_guest_boundary
"""

import hashlib
import json
import re
from pathlib import PurePosixPath

import sqlalchemy as sa
from alembic import op

revision = "0007_knowledge_at_scale"
down_revision = "0006_document_status"
branch_labels = None
depends_on = None

_BATCH = 1000
_NAME_SEPARATORS = re.compile(r"[_\-.]+")

_OLD_FTS = (
    "CREATE VIRTUAL TABLE chunks_fts USING fts5("
    "heading_path, content, content='chunks', content_rowid='seq', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN "
    "INSERT INTO chunks_fts(rowid, heading_path, content) "
    "VALUES (new.seq, new.heading_path, new.content); END",
    "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content) "
    "VALUES ('delete', old.seq, old.heading_path, old.content); END",
    "CREATE TRIGGER chunks_fts_update AFTER UPDATE OF heading_path, content ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content) "
    "VALUES ('delete', old.seq, old.heading_path, old.content); "
    "INSERT INTO chunks_fts(rowid, heading_path, content) "
    "VALUES (new.seq, new.heading_path, new.content); END",
    "INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')",
)
_OLD_FTS_DROP = (
    "DROP TRIGGER IF EXISTS chunks_fts_update",
    "DROP TRIGGER IF EXISTS chunks_fts_delete",
    "DROP TRIGGER IF EXISTS chunks_fts_insert",
    "DROP TABLE IF EXISTS chunks_fts",
)


def _title(name: str) -> str:
    """As `palaver.knowledge.chunk.document_title`, frozen here as this revision knew it."""
    stem = PurePosixPath(name).stem if "." in name.strip(".") else name
    return " ".join(_NAME_SEPARATORS.sub(" ", stem).split()) or name


def _fts_table(agent_id: str) -> str:
    """As `palaver.store.tables.knowledge.fts_table`, frozen."""
    if re.fullmatch(r"[a-z0-9_]{1,80}", agent_id):
        return f"chunks_fts_a_{agent_id}"
    return f"chunks_fts_h_{hashlib.sha256(agent_id.encode()).hexdigest()[:32]}"


def _fill_context(conn: sa.Connection) -> None:
    rows = conn.execute(
        sa.text(
            "SELECT c.seq, c.heading_path, d.name FROM chunks AS c "
            "JOIN documents AS d ON d.id = c.document_id"
        )
    ).all()
    updates = []
    for seq, heading_path, name in rows:
        path = json.loads(heading_path) if isinstance(heading_path, str) else heading_path
        parts = [_title(name), *(path or [])]
        updates.append({"seq": seq, "context": " > ".join(p for p in parts if p)})
    statement = sa.text("UPDATE chunks SET context = :context WHERE seq = :seq")
    for start in range(0, len(updates), _BATCH):
        conn.execute(statement, updates[start : start + _BATCH])


def upgrade() -> None:
    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("context", sa.Text, nullable=False, server_default=""))
    conn = op.get_bind()
    _fill_context(conn)
    if conn.dialect.name != "sqlite":
        return
    for statement in _OLD_FTS_DROP:
        op.execute(statement)
    agents = conn.execute(sa.text("SELECT DISTINCT agent_id FROM chunks")).scalars().all()
    for agent_id in agents:
        table = _fts_table(agent_id)
        op.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5("
            "context, content, content='chunks', content_rowid='seq', "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        op.execute(f"CREATE VIRTUAL TABLE {table}_vocab USING fts5vocab({table}, 'row')")
        fill = "INSERT INTO {}(rowid, context, content) SELECT seq, context, content FROM chunks "
        conn.execute(sa.text(fill.format(table) + "WHERE agent_id = :agent"), {"agent": agent_id})


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        tables = conn.execute(
            sa.text(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND (name LIKE 'chunks\\_fts\\_a\\_%' ESCAPE '\\' "
                "OR name LIKE 'chunks\\_fts\\_h\\_%' ESCAPE '\\') AND sql LIKE 'CREATE VIRTUAL%'"
            )
        ).scalars()
        for table in sorted(tables, key=lambda name: not name.endswith(("_vocab", "_instances"))):
            op.execute(f"DROP TABLE IF EXISTS {table}")
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("context")
    if conn.dialect.name == "sqlite":
        for statement in _OLD_FTS:
            op.execute(statement)
