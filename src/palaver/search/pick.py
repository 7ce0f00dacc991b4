"""Which `MessageSearch` adapter serves a database: FTS5 on SQLite, tsvector on PostgreSQL."""

from __future__ import annotations

from palaver.search.base import MessageSearch
from palaver.search.postgres import PostgresMessageSearch
from palaver.search.sqlite import SqliteMessageSearch
from palaver.store.db import Database


def message_search(db: Database) -> MessageSearch:
    return SqliteMessageSearch() if db.is_sqlite else PostgresMessageSearch()
