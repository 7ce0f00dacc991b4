"""Message search on SQLite indexes new messages in batches (`palaver.store.search_backlog`):
`messages_fts_upto` holds the highest rowid of `messages` that `messages_fts` has seen, set here
to the newest row (0020's triggers indexed every row so far). The triggers index, change or
remove only rows at or below it; the rows above it are the backlog, which the server indexes
a batch at a time and before every search. Downgrading indexes the backlog first.
PostgreSQL: nothing (its search column is generated with each row).

Revision ID: 0021_search_backlog
Revises: 0020_search_by_channel
"""

from alembic import op

revision = "0021_search_backlog"
down_revision = "0020_search_by_channel"
branch_labels = None
depends_on = None

TYPES = "('text', 'image', 'file')"
COLUMNS = "content, channel_id"
INSERT = (
    "INSERT INTO messages_fts(rowid, content, channel_id) "
    "VALUES (new.rowid, new.content, new.channel_id);"
)
DELETE = (
    "INSERT INTO messages_fts(messages_fts, rowid, content, channel_id) "
    "VALUES ('delete', old.rowid, old.content, old.channel_id);"
)
SEEN = "{row}.rowid <= (SELECT upto FROM messages_fts_upto)"
DROP = (
    "DROP TRIGGER IF EXISTS messages_fts_delete",
    "DROP TRIGGER IF EXISTS messages_fts_update",
    "DROP TRIGGER IF EXISTS messages_fts_insert",
)


def _triggers(when: str) -> tuple[str, ...]:
    """0020's triggers, each also held to the rows that `when` (over `new` or `old`) takes."""
    new, old = when.format(row="new"), when.format(row="old")
    return (
        f"CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages "
        f"WHEN new.type IN {TYPES}{new} BEGIN {INSERT} END",
        f"CREATE TRIGGER messages_fts_update AFTER UPDATE OF {COLUMNS} ON messages "
        f"WHEN old.type IN {TYPES}{old} BEGIN {DELETE} {INSERT} END",
        f"CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages "
        f"WHEN old.type IN {TYPES}{old} BEGIN {DELETE} END",
    )


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE TABLE messages_fts_upto (upto INTEGER NOT NULL)")
    op.execute("INSERT INTO messages_fts_upto SELECT coalesce(max(rowid), 0) FROM messages")
    for statement in (*DROP, *_triggers(" AND " + SEEN)):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(
        "INSERT INTO messages_fts(rowid, content, channel_id) "
        "SELECT rowid, content, channel_id FROM messages "
        "WHERE rowid > (SELECT upto FROM messages_fts_upto) AND type IN ('text', 'image', 'file')"
    )
    for statement in (*DROP, *_triggers(""), "DROP TABLE messages_fts_upto"):
        op.execute(statement)
