"""Full-text search over messages: one query grammar (`query`), compiled to each engine."""

SQLITE_TABLES = "messages_fts"
"""The prefix of SQLite's message search tables (FTS5's and its shadow tables), made by
migration 0012 outside the table definitions."""
POSTGRESQL_COLUMNS = frozenset({("messages", "search_tsv")})
POSTGRESQL_INDEXES = frozenset({"ix_messages_search_tsv", "ix_messages_id_brin"})
"""What migrations 0012 and 0022 add on PostgreSQL alone, outside the table definitions."""
