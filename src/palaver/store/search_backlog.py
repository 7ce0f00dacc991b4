"""SQLite's message search index, written a batch of messages at a time rather than by each post.

FTS5 turns each transaction that adds to `messages_fts` into a segment of its own and merges
segments as they pile up, so a group commit of a few posts paid for the segment, its merges and
the pages they put through the write-ahead log: a third of a post's CPU in `bench_hot_paths`
(0.39 against 0.26 ms with no index at all), where issue 23 allows a tenth. So a post leaves
its row to be indexed later (migration 0021): `messages_fts_upto` holds the highest rowid of
`messages` that the index has seen, and the rows above it are the backlog.

- The backlog is indexed `STEP` rows at a time, in a transaction of its own: after a group
  commit that finds `BATCH` rows or more waiting, and before a search, until none waits, so
  that a message is findable as soon as its post has returned (`Database.read_indexed`).
- An edit or a deletion of a row in the backlog leaves the index alone: it holds nothing of
  the row, and the row is indexed as it then is, or not at all.
- SQLite gives a new row a rowid at or below the mark when the highest rows were deleted; the
  insert trigger indexes such a row at once.

Plain functions over a sync connection in a write transaction (`waiting` reads only).
"""

from __future__ import annotations

from sqlalchemy import Connection

MARK_TABLE = "messages_fts_upto"
"""Part of the index, not of the data: a backup leaves it out with the FTS5 tables."""
BATCH = 256
"""Rows waiting that make a group commit index them: FTS5 costs a row some 35 µs in commits
of ten, 18 in commits of 64 and 13 in commits of 256 or more."""
STEP = 1024
"""Rows indexed at most by one transaction, so that posts wait on it for a few ms at most
(a restore or an import of many messages is indexed over several steps)."""

_WAITING = "SELECT coalesce((SELECT max(rowid) FROM messages), 0) - upto FROM messages_fts_upto"
_LAST_OF_STEP = "SELECT rowid FROM messages WHERE rowid > ? ORDER BY rowid LIMIT 1 OFFSET ?"
_INDEX = (
    "INSERT INTO messages_fts(rowid, content, channel_id) "
    "SELECT rowid, content, channel_id FROM messages "
    "WHERE rowid > ? AND rowid <= ? AND type IN ('text', 'image', 'file') ORDER BY rowid"
)


def waiting(conn: Connection) -> int:
    """At most how many rows wait to be indexed (rowids above the mark; some may be gone)."""
    return max(0, int(conn.exec_driver_sql(_WAITING).scalar_one()))


def index_step(conn: Connection, at_most: int = STEP) -> bool:
    """Index up to `at_most` rows of the backlog, oldest first, and move the mark past them;
    answers whether rows are left."""
    upto = int(conn.exec_driver_sql("SELECT upto FROM messages_fts_upto").scalar_one())
    last = conn.exec_driver_sql(_LAST_OF_STEP, (upto, at_most - 1)).scalar()
    found = conn.exec_driver_sql("SELECT max(rowid) FROM messages").scalar()
    newest = upto if found is None else int(found)
    if newest <= upto:
        return False
    end = newest if last is None else int(last)
    conn.exec_driver_sql(_INDEX, (upto, end))
    conn.exec_driver_sql("UPDATE messages_fts_upto SET upto = ?", (end,))
    return end < newest


def index_all(conn: Connection) -> None:
    """The whole backlog, in this transaction (a restore's, before it commits)."""
    while index_step(conn):
        pass
