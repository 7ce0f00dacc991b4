"""Message search (issue 23). SQLite: `messages_fts`, an external-content FTS5 table over
`messages.content` (keyed by the messages' rowid), kept in step by triggers, so that a post,
an edit and an erase change the index in their own transaction without a statement more from
the application. PostgreSQL: a text search configuration `palaver_search` (English Snowball
stemming without stop words, so that "the" or "it" is found as on SQLite) and a generated
`messages.search_tsv` column with a GIN index. Only what people read is indexed (text, image
and file messages; not tool records). Existing messages are indexed on upgrade.

A later migration that rebuilds `messages` on SQLite (Alembic's batch mode copies the table)
loses these triggers and renumbers rowids: it must create the triggers again and end with
`INSERT INTO messages_fts(messages_fts) VALUES('rebuild')`.

Revision ID: 0012_message_search
Revises: 0011_message_lifecycle
"""

from alembic import op

revision = "0012_message_search"
down_revision = "0011_message_lifecycle"
branch_labels = None
depends_on = None

SQLITE_UP = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages "
    "WHEN new.type IN ('text', 'image', 'file') "
    "BEGIN INSERT INTO messages_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages "
    "WHEN old.type IN ('text', 'image', 'file') BEGIN "
    "INSERT INTO messages_fts(messages_fts, rowid, content) "
    "VALUES ('delete', old.rowid, old.content); "
    "INSERT INTO messages_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages "
    "WHEN old.type IN ('text', 'image', 'file') "
    "BEGIN INSERT INTO messages_fts(messages_fts, rowid, content) "
    "VALUES ('delete', old.rowid, old.content); END",
    "INSERT INTO messages_fts(rowid, content) SELECT rowid, content FROM messages "
    "WHERE type IN ('text', 'image', 'file')",
)
SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS messages_fts_delete",
    "DROP TRIGGER IF EXISTS messages_fts_update",
    "DROP TRIGGER IF EXISTS messages_fts_insert",
    "DROP TABLE IF EXISTS messages_fts",
)
POSTGRESQL_UP = (
    "CREATE TEXT SEARCH DICTIONARY palaver_english_stem (TEMPLATE = snowball, Language = english)",
    "CREATE TEXT SEARCH CONFIGURATION palaver_search (COPY = english)",
    "ALTER TEXT SEARCH CONFIGURATION palaver_search "
    "ALTER MAPPING REPLACE english_stem WITH palaver_english_stem",
    "ALTER TABLE messages ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS ("
    "CASE WHEN type IN ('text', 'image', 'file') "
    "THEN to_tsvector('palaver_search'::regconfig, content) END"
    ") STORED",
    "CREATE INDEX ix_messages_search_tsv ON messages USING gin (search_tsv)",
)
POSTGRESQL_DOWN = (
    "DROP INDEX IF EXISTS ix_messages_search_tsv",
    "ALTER TABLE messages DROP COLUMN IF EXISTS search_tsv",
    "DROP TEXT SEARCH CONFIGURATION IF EXISTS palaver_search",
    "DROP TEXT SEARCH DICTIONARY IF EXISTS palaver_english_stem",
)


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in SQLITE_UP if sqlite else POSTGRESQL_UP:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in SQLITE_DOWN if sqlite else POSTGRESQL_DOWN:
        op.execute(statement)
