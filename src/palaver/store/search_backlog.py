"""SQLite's message search index, written a batch of messages at a time rather than by each post.

FTS5 turns each transaction that adds to `messages_fts` into a segment of its own and merges
segments as they pile up, so a group commit of a few posts paid for the segment, its merges and
the pages they put through the write-ahead log: a third of a post's CPU in `bench_hot_paths`
(0.39 against 0.26 ms with no index at all), where issue 23 allows a tenth. So a post leaves
its row to be indexed later (migration 0021): `messages_fts_upto` holds the highest rowid of
`messages` that the index has seen, and the rows above it are the backlog.

- The backlog is indexed `STEP` rows at a time, each step a transaction of its own: after
  every `BATCH` write units of a process (once their posts are answered), after an import, and
  by a search that finds rows waiting in its snapshot, up to the newest row of that snapshot,
  so that a message is findable as soon as its post has returned (`Database.read_indexed`).
- An edit or a deletion of a row in the backlog leaves the index alone: it holds nothing of
  the row, and the row is indexed as it then is, or not at all.
- SQLite gives a new row a rowid at or below the mark when the highest rows were deleted; the
  insert trigger indexes such a row at once.

Plain functions over a sync connection in a write transaction (`waiting` and
`newest_waiting` read only).
"""

from __future__ import annotations

from sqlalchemy import Connection

MARK_TABLE = "messages_fts_upto"
"""Part of the index, not of the data: a backup leaves it out with the FTS5 tables."""
BATCH = 256
"""Write units of a process after which it indexes a step of the backlog: FTS5 costs a row
some 35 µs in commits of ten, 18 in commits of 64 and 13 in commits of 256 or more."""
STEP = 256
"""Rows indexed at most by one transaction, so that posts wait on it for a few ms (up to a
quarter of a second for rows of the longest messages); a restore or an import of many
messages is indexed over several steps."""

_WAITING = "SELECT coalesce((SELECT max(rowid) FROM messages), 0) - upto FROM messages_fts_upto"
_BEHIND = "SELECT (SELECT max(rowid) FROM messages), upto FROM messages_fts_upto"
_LAST_OF_STEP = "SELECT rowid FROM messages WHERE rowid > ? ORDER BY rowid LIMIT 1 OFFSET ?"
_INDEX = (
    "INSERT INTO messages_fts(rowid, content, channel_id) "
    "SELECT rowid, content, channel_id FROM messages "
    "WHERE rowid > ? AND rowid <= ? AND type IN ('text', 'image', 'file') ORDER BY rowid"
)


def waiting(conn: Connection) -> int:
    """At most how many rows wait to be indexed (rowids above the mark; some may be gone)."""
    return max(0, int(conn.exec_driver_sql(_WAITING).scalar_one()))


def newest_waiting(conn: Connection) -> int | None:
    """The newest rowid of `messages` when rows wait above the mark, else None."""
    newest, upto = conn.exec_driver_sql(_BEHIND).one()
    return None if newest is None or newest <= upto else int(newest)


def index_step(conn: Connection, at_most: int = STEP, until: int | None = None) -> bool:
    """Index up to `at_most` rows of the backlog, oldest first (none past rowid `until`), and
    move the mark past them; answers whether rows (up to `until`) are left."""
    found, upto = conn.exec_driver_sql(_BEHIND).one()
    newest = upto if found is None else int(found)
    if until is not None:
        newest = min(newest, until)
    if newest <= upto:
        return False
    last = conn.exec_driver_sql(_LAST_OF_STEP, (upto, at_most - 1)).scalar()
    end = newest if last is None else min(int(last), newest)
    conn.exec_driver_sql(_INDEX, (upto, end))
    conn.exec_driver_sql("UPDATE messages_fts_upto SET upto = ?", (end,))
    return end < newest


def index_all(conn: Connection) -> None:
    """The whole backlog, in this transaction (a restore's, before it commits)."""
    while index_step(conn):
        pass
