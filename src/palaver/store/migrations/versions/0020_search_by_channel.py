"""Message search by channel on SQLite (issue 23): `messages_fts` indexes each message's
`channel_id` in a second column, so that a search narrowed to a few channels (a guest's, or
`in:#channel`) asks FTS5 for those channels' matches, which it finds by merging the channels'
doclists with the words'. Narrowed afterwards in SQL, a guest reading 5 channels of 200 had FTS5
hand over every match of the word in all 200 to find a page in its own.

The table is made again with both columns and filled from `messages` as 0012 filled it; the
triggers carry the channel. Words are matched in the `content` column only
(`palaver.search.sqlite`), and BM25 weighs the channel column 0 (its two tokens a row still
count in the rows' lengths that BM25 normalises by, a small shift for short messages).
Freed pages of the old index are zeroed (`secure_delete`), as every erase's are.
PostgreSQL: nothing (its search filters `messages.channel_id` through its own indexes).

Revision ID: 0020_search_by_channel
Revises: 0019_usage_rollup
"""

from alembic import op

revision = "0020_search_by_channel"
down_revision = "0019_usage_rollup"
branch_labels = None
depends_on = None

INDEXED = "WHEN {row}.type IN ('text', 'image', 'file')"
DROP = (
    "DROP TRIGGER IF EXISTS messages_fts_delete",
    "DROP TRIGGER IF EXISTS messages_fts_update",
    "DROP TRIGGER IF EXISTS messages_fts_insert",
    "DROP TABLE IF EXISTS messages_fts",
)


def _make(columns: tuple[str, ...]) -> tuple[str, ...]:
    """The index over `columns` of `messages`, its triggers, and its first fill (the names
    are this module's own, never input)."""
    names = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    target = f"INSERT INTO messages_fts(messages_fts, rowid, {names})"
    insert = f"INSERT INTO messages_fts(rowid, {names}) VALUES (new.rowid, {new});"  # noqa: S608
    delete = f"{target} VALUES ('delete', old.rowid, {old});"
    fill = f"SELECT rowid, {names} FROM messages"  # noqa: S608
    return (
        f"CREATE VIRTUAL TABLE messages_fts USING fts5({names}, content='messages', "
        "tokenize='porter unicode61 remove_diacritics 2')",
        f"CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages {INDEXED.format(row='new')} "
        f"BEGIN {insert} END",
        f"CREATE TRIGGER messages_fts_update AFTER UPDATE OF {names} ON messages "
        f"{INDEXED.format(row='old')} BEGIN {delete} {insert} END",
        f"CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages {INDEXED.format(row='old')} "
        f"BEGIN {delete} END",
        f"INSERT INTO messages_fts(rowid, {names}) {fill} WHERE type IN ('text', 'image', 'file')",
    )


def _remake(columns: tuple[str, ...]) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("PRAGMA secure_delete = ON")
    for statement in (*DROP, *_make(columns)):
        op.execute(statement)


def upgrade() -> None:
    _remake(("content", "channel_id"))


def downgrade() -> None:
    _remake(("content",))
